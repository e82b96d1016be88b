"""`chaoskube explore` and `chaoskube replay`, run as a user would: separate processes,
exit codes, one-line errors, the files they leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.campaign import MAX_SEEDS, SeedsError, parse_seeds, replay_target
from chaoskube.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]


def command(*args, tmp=None):
    environment = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    if tmp is not None:
        environment["TMPDIR"] = str(tmp)  # replay's temporary directory lands in the test's
    return [sys.executable, "-m", "chaoskube.experiments.cli", *args], environment


def chaoskube(*args, tmp=None):
    argv, environment = command(*args, tmp=tmp)
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=environment, timeout=300)


def one_line_error(result):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


# -- --seeds ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("1..3", [1, 2, 3]), ("5", [5]), ("0..0", [0]), ("1..3,7,2", [1, 2, 3, 7]), (" 4 .. 6 ", [4, 5, 6]), ("9,1..2", [1, 2, 9])],
)
def test_seed_ranges(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "1-3", "3..1", "a..b", "-1", "1..", "..3", "1...3", "1..2,,3", f"1..{MAX_SEEDS + 1}"])
def test_bad_seed_ranges(text):
    with pytest.raises(SeedsError) as error:
        parse_seeds(text)
    assert "\n" not in str(error.value) and "--seeds" in str(error.value)


# -- explore ------------------------------------------------------------------------------------


def test_explore_three_seeds_two_jobs_writes_the_summary_and_matches_single_runs(tmp_path):
    out = tmp_path / "campaign"
    result = chaoskube("explore", "etcd-leader-kill", "--seeds", "1..3", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "etcd-leader-kill" in result.stdout and "3 of 3 runs as expected" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["planned_runs"], summary["finished_runs"], summary["as_expected"], summary["unexpected"], summary["interrupted"]) == (3, 3, 3, 0, False)
    (experiment,) = summary["experiments"]
    assert experiment["seeds"] == [1, 2, 3]
    assert experiment["verdicts"]["raft-safety"] == {"pass": 3, "fail": 0, "unknown": 0}
    assert experiment["metrics"]["elections"]["n"] == 3 and experiment["availability"]["ok_fraction"]["max"] <= 1.0
    (kill,) = summary["fault_effects"]
    assert (kill["experiment"], kill["kind"], kill["faults"]) == ("etcd-leader-kill", "kill", 6)
    assert kill["leader_changes"]["min"] >= 1  # every leader kill was followed by an election in its window
    assert "etcd-leader-kill" in (out / "summary.md").read_text()
    assert 'id="experiments"' in (out / "summary.html").read_text()
    suites = ET.parse(out / "junit.xml").getroot().findall("testsuite")
    assert [suite.get("name") for suite in suites] == [f"etcd-leader-kill seed {seed}" for seed in (1, 2, 3)]
    # Each run is an ordinary run directory, and parallel runs are the runs `chaoskube run` makes.
    for run in summary["runs"]:
        recorded = json.loads((Path(run["out_dir"]) / "result.json").read_text())
        assert recorded["journal_sha256"] == run["journal_sha256"]
        assert (Path(run["out_dir"]) / "report.html").is_file()
    single = run_experiment(registry.find("etcd-leader-kill"), 2, tmp_path / "single")
    assert summary["runs"][1]["journal_sha256"] == single.journal_sha256


def test_explore_exits_1_and_names_the_replay_when_a_run_misses_its_expected_outcome(tmp_path):
    wrong = tmp_path / "wrong.yaml"
    text = (ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text()
    wrong.write_text(text.replace("outcome: pass", "outcome: fail\n  failing: [steady-state]"))
    out = tmp_path / "campaign"
    result = chaoskube("explore", str(wrong), "--seeds", "1..2", "--jobs", "2", "--out", str(out))
    assert result.returncode == 1, result.stderr + result.stdout
    assert f"chaoskube run {wrong} --seed 1" in result.stdout and f"chaoskube run {wrong} --seed 2" in result.stdout
    assert "steady-state passed, expected to fail" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unexpected"] == 2 and summary["all_as_expected"] is False
    assert [item["seed"] for item in summary["unexpected_runs"]] == [1, 2]


@pytest.fixture
def in_process(capsys):
    """`chaoskube ARGS` in this process (the bad-input cases end before any run starts):
    exit code and captured output. main() replaces loguru's handlers: put them back."""
    from loguru import logger

    from chaoskube.experiments.cli import main

    def call(*args):
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        logger.remove()
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, exited.value.code, captured.out, captured.err)

    return call


def test_explore_bad_input_is_one_line_and_exit_2(tmp_path, in_process):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cases = [
        (["explore", "mesh-partition", "--seeds", "1-3"], "--seeds '1-3'"),
        (["explore", "mesh-partition", "--seeds", "3..1"], "is empty"),
        (["explore", "mesh-partition"], "--seeds"),
        (["explore", "mesh-partition", "--seeds", "1", "--jobs", "0"], "--jobs"),
        (["explore", "--seeds", "1..2"], "--all"),
        (["explore", "mesh-partition", "--all", "--seeds", "1"], "--all"),
        (["explore", "mesh-partitio", "--seeds", "1"], "unknown experiment"),
        (["explore", "real-etcd-pause", "--seeds", "1"], "real time"),
        (["explore", "mesh-partition", "--seeds", "1", "--out", str(blocker / "sub")], "cannot write"),
    ]
    for args, message in cases:
        assert message in one_line_error(in_process(*args)), args
    # The same, once, as a user would: a separate process.
    assert "--seeds '1-3'" in one_line_error(chaoskube("explore", "mesh-partition", "--seeds", "1-3"))


def test_ctrl_c_keeps_finished_runs_writes_the_summary_and_exits_130(tmp_path):
    out = tmp_path / "campaign"
    argv, environment = command("explore", "etcd-leader-kill", "mesh-partition", "--seeds", "1..30", "--jobs", "2", "--out", str(out))
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment)
    deadline = time.monotonic() + 120
    # junit.xml is a run's last file; the parent has its record a moment later.
    while len(list(out.glob("*/junit.xml"))) < 2 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    interrupted_at = time.monotonic()
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - interrupted_at < 20  # it stops; it does not finish the campaign
    assert "Traceback" not in stderr and "interrupted" in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["all_as_expected"] is False
    assert 1 <= summary["finished_runs"] < summary["planned_runs"] == 60
    for run in summary["runs"]:  # what finished is kept whole
        assert (Path(run["out_dir"]) / "result.json").is_file()


# -- replay -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "mesh-partition-seed4"
    return run_experiment(registry.find("mesh-partition"), 4, out)


def test_replay_of_a_recorded_run_matches(recorded_run, tmp_path):
    result = chaoskube("replay", str(recorded_run.out_dir), tmp=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == f"recorded: {recorded_run.journal_sha256}"
    assert lines[1] == f"replayed: {recorded_run.journal_sha256}"
    assert "match" in lines[2]
    assert list(tmp_path.iterdir()) == []  # the temporary run is gone on a match


def test_replay_mismatch_exits_1_and_keeps_the_replayed_run(recorded_run, tmp_path):
    changed = tmp_path / "changed"
    changed.mkdir()
    payload = json.loads((recorded_run.out_dir / "result.json").read_text())
    payload["seed"] = 5  # the journal beside it is seed 4's
    (changed / "result.json").write_text(json.dumps(payload))
    (changed / "journal.jsonl").write_bytes((recorded_run.out_dir / "journal.jsonl").read_bytes())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = chaoskube("replay", str(changed), tmp=scratch)
    assert result.returncode == 1, result.stderr + result.stdout
    assert f"recorded: {recorded_run.journal_sha256}" in result.stdout
    assert "MISMATCH (first different journal line: " in result.stdout
    (kept,) = scratch.iterdir()
    assert (kept / "journal.jsonl").is_file() and str(kept) in result.stdout


def test_replay_of_something_that_is_not_a_run_is_exit_2(tmp_path, in_process):
    empty = tmp_path / "empty"
    empty.mkdir()
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "result.json").write_text("{not json")
    real = tmp_path / "real"
    real.mkdir()
    (real / "result.json").write_text(json.dumps({"experiment": "real-etcd-pause", "seed": 1, "journal_sha256": "0" * 64, "mode": "real-time"}))
    assert "no result.json" in one_line_error(chaoskube("replay", str(empty)))
    assert "cannot read it as JSON" in one_line_error(in_process("replay", str(garbage)))
    assert "not reproducible" in one_line_error(in_process("replay", str(real)))
    assert "not a directory" in one_line_error(in_process("replay", str(tmp_path / "missing")))


def test_replay_target_prefers_the_recorded_file_over_the_name():
    assert replay_target({"experiment": "x", "replay": "chaoskube run /some/dir/x.yaml --seed 3 --out 'a b'"}) == "/some/dir/x.yaml"
    assert replay_target({"experiment": "x", "replay": "chaoskube run x --seed 3"}) == "x"
    assert replay_target({"experiment": "x", "replay": "garbled 'quote"}) == "x"


def test_boot_seed_seed_gives_each_job_its_own_boot(tmp_path):
    """``explore --boot-seed seed``: each run boots with its run seed, so no two jobs share
    a boot (docs/campaigns.md: bugs that need a particular boot state)."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.campaign import boot_groups, plan_jobs

    experiment = registry.find("etcd-leader-kill")
    jobs = plan_jobs([("etcd-leader-kill", experiment)], [1, 2, 3], tmp_path, boot_seed="seed", max_wall_s=9.0)
    assert [(job.seed, job.boot_seed, job.max_wall_s) for job in jobs] == [(1, 1, 9.0), (2, 2, 9.0), (3, 3, 9.0)]
    assert "--boot-seed 2" in jobs[1].replay
    assert len(boot_groups(jobs)) == 3
    shared = plan_jobs([("etcd-leader-kill", experiment)], [1, 2, 3], tmp_path)
    assert len(boot_groups(shared)) == 1 and {job.reference_cache for job in shared} == {tmp_path / "references"}

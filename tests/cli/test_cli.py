"""The command line, run as a user would: separate processes, exit codes, one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def chaoskube(*args, cwd=None):
    environment = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "chaoskube.experiments.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=environment,
        timeout=300,
    )


def run_fingerprint(tmp_path, seed, name):
    out = tmp_path / name
    result = chaoskube("run", "mesh-partition", "--seed", str(seed), "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    payload = json.loads((out / "result.json").read_text())
    for key in ("experiment", "seed", "verdicts", "journal_sha256", "simulated_seconds", "wall_seconds", "replay"):
        assert key in payload
    import hashlib

    assert hashlib.sha256((out / "journal.jsonl").read_bytes()).hexdigest() == payload["journal_sha256"]
    return payload["journal_sha256"]


def test_same_seed_in_two_processes_gives_the_same_fingerprint_different_seeds_differ(tmp_path):
    first = run_fingerprint(tmp_path, 3, "a")
    second = run_fingerprint(tmp_path, 3, "b")
    assert first == second
    assert len({first, run_fingerprint(tmp_path, 4, "c"), run_fingerprint(tmp_path, 5, "d")}) == 3


def test_result_json_and_replay_command(tmp_path):
    out = tmp_path / "r"
    result = chaoskube("run", "mesh-partition", "--seed", "9", "--out", str(out))
    assert result.returncode == 0
    payload = json.loads((out / "result.json").read_text())
    assert payload["experiment"] == "mesh-partition" and payload["seed"] == 9
    assert payload["verdicts"]["network-integrity"]["valid"] == "true"
    assert payload["replay"] == f"chaoskube run mesh-partition --seed 9 --out {out}"
    assert payload["as_expected"] is True
    assert (out / "report.md").read_text().startswith("# mesh-partition — seed 9")


def test_version_list_describe_and_dry_run():
    assert chaoskube("--version").stdout.strip() == "chaoskube, version 0.1.0"
    listing = chaoskube("list").stdout.splitlines()
    assert any(line.startswith("mesh-partition  ") for line in listing)
    assert all(len(line.split(None, 1)) == 2 for line in listing)
    described = chaoskube("describe", "mesh-partition")
    assert described.returncode == 0 and "Fault schedule" in described.stdout
    dry = chaoskube("run", "mesh-partition", "--dry-run")
    assert dry.returncode == 0 and "isolate random:node" in dry.stdout


def one_line_error(result):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_unknown_experiment():
    line = one_line_error(chaoskube("run", "etcd-leader-kil"))
    assert "unknown experiment 'etcd-leader-kil'" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "mesh-partition", "--seed", "minus-one"], "--seed"),
        (["run", "mesh-partition", "--seed", "-5"], "--seed"),
        (["run", "mesh-partition", "--bogus"], "--bogus"),
        (["frobnicate"], "frobnicate"),
    ],
)
def test_bad_flags(args, message):
    assert message in one_line_error(chaoskube(*args))


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    line = one_line_error(chaoskube("run", "mesh-partition", "--out", str(blocker / "sub")))
    assert "--out" in line and "cannot write" in line


GOOD = (ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("nodes: 5", "nodes: five"), "cluster.nodes"),
        (lambda text: text.replace("at_s: 12", "at_s: twelve"), "schedule[2].at_s"),
        (lambda text: text.replace("kind: kill", "kind: explode"), "unknown fault kind 'explode'"),
        (lambda text: text.replace("random:node\", duration_s: 3", "nowhere\", duration_s: 3"), "bad target 'nowhere'"),
        (lambda text: text.replace("steady-state]", "steady-state, psychic]"), "unknown checker 'psychic'"),
        (lambda text: text.replace("system: mesh", "system: mesh\ncolour: blue"), "colour"),
        (lambda text: text.replace("title:", "titel:"), "field `titel`: unknown field"),
        (lambda text: text.replace("source:", "# source:"), "field `source`: missing"),
        (lambda text: text + "  - [unclosed\n", "not valid YAML"),
        (lambda text: text.replace("at_s: 16", "at_s: 60"), "falls after the fault phase"),
        (lambda text: text.replace("at_s: 16", "at_s: .nan"), "at_s`: nan is not a JSON number"),
        (lambda text: text.replace("duration_s: 3}", "duration_s: .inf}"), "duration_s`: inf is not a JSON number"),
        (lambda text: text.replace("faults_s: 20", "faults_s: .inf"), "field `phases.faults_s`: inf is not a JSON number"),
        (lambda text: text.replace("{leader_in: any}", "{leader_in: sideways}"), "leader_in' must be one of"),
        (lambda text: text.replace("target: \"random:node\", duration_s: 3", "target: \"name:node-9\", duration_s: 3"), "no process named 'node-9'"),
        (lambda text: text.replace("checkers: [network-integrity, probes-respect-partitions, steady-state]", "checkers: []"), "name at least one checker"),
        (lambda text: text.replace("outcome: pass", "outcome: pass\n  failing: [steady-state]"), "it says pass but"),
    ],
)
def test_malformed_experiment_file_names_file_and_field(tmp_path, edit, message):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(GOOD))
    line = one_line_error(chaoskube("run", str(path)))
    assert str(path) in line
    assert message in line


def test_missing_experiment_file(tmp_path):
    line = one_line_error(chaoskube("run", str(tmp_path / "nope.yaml")))
    assert "cannot read" in line


ETCD = (ROOT / "experiments" / "catalog" / "etcd-leader-kill.yaml").read_text()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("cluster: {members: 3}", "cluster: {members: 3, heartbeat_ms: 0}"), "heartbeat_ms"),
        (lambda text: text.replace("cluster: {members: 3}", "cluster: {members: 3, snapshot_count: 0}"), "snapshot_count"),
        (lambda text: text.replace("rate_per_s: 50", "rate_per_s: .inf"), "rate_per_s"),
        (lambda text: text.replace("rate_per_s: 50", "rate_per_s: 50, timeout_s: 0"), "timeout_s"),
        (lambda text: text.replace("rate_per_s: 50", "rate_per_s: 50, read: .nan"), "field `workload.read`: nan is not a JSON number"),
        (lambda text: text.replace("cluster: {members: 3}", "cluster: {members: 4}"), "members"),
    ],
)
def test_malformed_etcd_options_name_the_field(tmp_path, edit, message):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(ETCD))
    line = one_line_error(chaoskube("run", str(path)))
    assert str(path) in line and message in line

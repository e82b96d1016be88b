"""No green run that tested nothing, and campaigns that say what they found.

- Targets are resolved against the processes the experiment builds before anything runs
  (``validate``, ``run --dry-run``, ``run``); a fault that outlasts its phase is refused unless
  ``clip_to_phase`` accepts the cut, which is then shown; a fault skipped at run time makes
  the run inconclusive (exit 4), printed on the terminal, in result.json, report.md and
  junit.xml.
- A campaign's end line, exit code, summary.{md,json,html} and junit.xml agree, and name
  every seed where a checker answered false, with the checker, its reason and the report.
- ``--keep all|failed|none``; plain progress lines without a terminal.
- A progress callback (a terminal's progress bar) does not change the journal.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from chaoskube.experiments import registry
from chaoskube.experiments.runner import run_experiment
from tests.cli.test_cli import chaoskube

SKIPPING = {
    "name": "skip-demo",
    "title": "A kill of the etcd leader while no member runs",
    "description": "d",
    "source": "s",
    "system": "etcd",
    "cluster": {"members": 3},
    "workload": {"clients": 2, "keys": 2, "rate_per_s": 20},
    "phases": {"warmup_s": 1, "faults_s": 10, "recovery_s": 20, "settle_s": 1},
    "schedule": [
        {"at_s": 1, "kind": "kill", "target": "role:etcd", "duration_s": 5},
        {"at_s": 2, "kind": "kill", "target": "leader:etcd", "duration_s": 2},  # no member runs, so no leader
    ],
    "checkers": ["raft-safety", "steady-state"],
}


def write(tmp_path: Path, document: dict, name: str = "experiment.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


# =========================================================================== item 1
def test_a_fault_skipped_at_run_time_makes_the_run_inconclusive_everywhere(tmp_path):
    experiment = write(tmp_path, SKIPPING)
    out = tmp_path / "run"
    result = chaoskube("run", str(experiment), "--out", str(out))
    assert result.returncode == 4, result.stdout + result.stderr
    assert "skipped fault: kill leader:etcd: no process matches 'leader:etcd' now" in result.stdout
    assert "outcome: INCONCLUSIVE (expected pass)" in result.stdout
    payload = json.loads((out / "result.json").read_text())
    assert (payload["outcome"], payload["inconclusive"], payload["as_expected"], payload["checkers_as_expected"]) == ("inconclusive", True, False, True)
    assert payload["skipped_faults"] == ["kill leader:etcd: no process matches 'leader:etcd' now"]
    assert "- Outcome: **INCONCLUSIVE**" in (out / "report.md").read_text()
    assert 'id="inconclusive"' in (out / "report.html").read_text()
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    (faults,) = [case for case in suite.findall("testcase") if case.get("name") == "faults"]
    assert faults.find("error").get("type") == "chaoskube.run.inconclusive" and suite.get("errors") == "1"


def test_a_campaign_of_inconclusive_runs_exits_4_and_says_so(tmp_path):
    experiment = write(tmp_path, SKIPPING)
    out = tmp_path / "campaign"
    result = chaoskube("explore", str(experiment), "--seeds", "1..2", "--jobs", "1", "--out", str(out))
    assert result.returncode == 4, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["outcome"], summary["inconclusive"], summary["failed"]) == ("inconclusive", 2, 0)
    assert "inconclusive: 0 of 2 runs as expected; 2 inconclusive (2 planned)" in result.stdout
    assert "INCONCLUSIVE (a fault was not applied)" in result.stderr  # the plain progress lines
    assert "2 inconclusive" in (out / "summary.md").read_text()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("zone:zone-x", "no zone 'zone-x' in this experiment (zones: zone-a, zone-b, zone-c)"),
        ("role:kube-apiservers", "no process has role 'kube-apiservers'"),
        ("name:node-7", "no process named 'node-7'"),
        ("leader:node", "role 'node' elects no leader"),
    ],
)
def test_targets_are_resolved_against_the_cluster_the_experiment_builds(tmp_path, target, message):
    document = yaml.safe_load((Path(registry.CATALOG) / "node-failure.yaml").read_text())
    document["schedule"][0]["target"] = target
    path = write(tmp_path, document)
    for command in (["validate", str(path)], ["run", str(path), "--dry-run"], ["run", str(path), "--out", str(tmp_path / "out")]):
        completed = chaoskube(*command)
        assert completed.returncode == 2, (command, completed.stdout, completed.stderr)
        assert message in completed.stdout + completed.stderr, (command, completed.stdout, completed.stderr)
    assert not (tmp_path / "out").exists()


def test_a_fault_outlasting_its_phase_is_refused_unless_clipped_and_then_shown(tmp_path):
    document = yaml.safe_load((Path(registry.CATALOG) / "etcd-leader-kill.yaml").read_text())
    document["schedule"] = [{"at_s": 10, "kind": "kill", "target": "leader:etcd", "duration_s": 60}]
    path = write(tmp_path, document)
    refused = chaoskube("run", str(path), "--dry-run")
    assert refused.returncode == 2 and "outlasts the fault phase: at_s 10 + 60 > phases.faults_s = 30, so the heal would cut it to 20 s" in refused.stderr
    document["schedule"][0]["clip_to_phase"] = True
    path = write(tmp_path, document)
    dry = chaoskube("run", str(path), "--dry-run")
    assert dry.returncode == 0 and "at 10 s: kill leader:etcd -> the leader among etcd-1, etcd-2, etcd-3, when it fires for 60 s, clipped to 20 s by the heal (clip_to_phase)" in dry.stdout
    assert "processes (10): etcd-1, etcd-2, etcd-3, probe, client-1" in dry.stdout
    result = run_experiment(registry.load_experiment(path), 1, tmp_path / "run")
    assert result.clipped_faults() == ["schedule[0] kill leader:etcd: duration_s 60 clipped to 20 s by the heal (clip_to_phase)"]
    assert "- clipped: schedule[0] kill leader:etcd" in (tmp_path / "run" / "report.md").read_text()
    assert json.loads((tmp_path / "run" / "result.json").read_text())["clipped_faults"] == result.clipped_faults()


def test_every_catalogue_fault_fits_its_phase_and_hits_a_process():
    for experiment in registry.load_all():  # load_experiment refuses either
        assert all(entry.clipped_s(experiment.phases.faults_s) is None for entry in experiment.schedule), experiment.name


def test_a_progress_callback_does_not_change_the_journal(tmp_path):
    experiment = registry.find("mesh-partition")
    calls: list[float] = []
    plain = run_experiment(experiment, 4, tmp_path / "plain")
    watched = run_experiment(experiment, 4, tmp_path / "watched", progress=lambda now, planned: calls.append(now))
    assert calls and plain.journal_sha256 == watched.journal_sha256


def test_planned_processes_are_the_processes_a_cluster_starts():
    from chaoskube.cluster import ClusterSpec, NodeGroup, WebhookSpec, open_cluster, planned_processes
    from chaoskube.sim import World

    spec = ClusterSpec(etcd_members=3, api_servers=2, controller_managers=2, schedulers=1, node_groups=[NodeGroup(count=4, zones=["a", "b"]), NodeGroup(prefix="gpu", count=1, zones=["c"])], webhooks=[WebhookSpec(name="deny.example.com")])
    started: list[tuple[str, str | None, str | None]] = []

    async def main(world: World) -> None:
        open_cluster(world, spec)
        started.extend((process.name, process.role, process.zone) for process in world.processes.values())

    World(1).run(main)
    assert started == planned_processes(spec)


# =========================================================================== item 2
def test_a_campaign_with_expected_failures_is_green_and_names_each_seed_and_checker(tmp_path):
    out = tmp_path / "campaign"
    result = chaoskube("explore", "etcd-lost-fsync", "--seeds", "1..2", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcome"] == "as-expected" and summary["failed"] == 0
    raft = [item for item in summary["violations"] if item["checker"] == "raft-safety"]
    assert [item["seed"] for item in raft] == [1, 2] and {item["kind"] for item in raft} == {"expected"}
    assert all(item["report"] == f"etcd-lost-fsync-seed{item['seed']}/report.html" and (out / item["report"]).is_file() for item in raft)
    root = ET.parse(out / "junit.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0", "CI stays green exactly when the CLI does"
    assert "etcd-lost-fsync seed 1: raft-safety false (expected)" in result.stdout
    assert "as-expected: 2 of 2 runs as expected" in result.stdout
    assert "| etcd-lost-fsync | 1 | raft-safety | expected |" in (out / "summary.md").read_text()
    assert 'id="violations"' in (out / "summary.html").read_text()


def test_a_violation_in_an_experiment_expected_to_pass_fails_the_campaign_everywhere(tmp_path):
    document = yaml.safe_load((Path(registry.CATALOG) / "etcd-lost-fsync.yaml").read_text())
    document |= {"name": "lost-fsync-said-to-pass", "checkers": ["raft-safety", "steady-state"], "expected": {"outcome": "pass"}}
    path = write(tmp_path, document)
    out = tmp_path / "campaign"
    result = chaoskube("explore", str(path), "--seeds", "1..2", "--jobs", "2", "--keep", "failed", "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcome"] == "not-as-expected" and summary["failed"] == 2
    violations = [item for item in summary["violations"] if item["kind"] == "violation"]
    assert [(item["seed"], item["checker"]) for item in violations] == [(1, "raft-safety"), (2, "raft-safety")]
    assert all(item["reason"].startswith("durability: acknowledged") for item in violations)
    root = ET.parse(out / "junit.xml").getroot()
    assert int(root.get("failures")) == 2
    assert "not-as-expected: 0 of 2 runs as expected; 2 not as expected; 2 violation(s)" in result.stdout
    assert "lost-fsync-said-to-pass seed 2: raft-safety false (violation): durability: acknowledged" in result.stdout
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == ["lost-fsync-said-to-pass-seed1", "lost-fsync-said-to-pass-seed2"], "--keep failed keeps them"


@pytest.mark.parametrize(("keep", "kept"), [("all", 2), ("failed", 0), ("none", 0)])
def test_keep_decides_which_run_directories_stay(tmp_path, keep, kept):
    out = tmp_path / "campaign"
    result = chaoskube("explore", "mesh-partition", "--seeds", "1..2", "--jobs", "1", "--keep", keep, "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert len([path for path in out.iterdir() if path.is_dir()]) == kept
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kept"] == kept and all(run["kept"] == (keep == "all") for run in summary["runs"])
    assert (out / "summary.md").is_file() and (out / "junit.xml").is_file()


@pytest.mark.parametrize("engine", [["--no-fork"], ["--dask", "local:1"]], ids=["unforked", "dask"])
def test_keep_names_and_progress_hold_for_every_engine(tmp_path, engine):
    """The forked campaign is the default (tests above); unforked and Dask campaigns keep
    the same directories, name the same seeds and print the same plain progress lines.
    On Dask, a dropped directory is never shipped back."""
    if engine[0] == "--dask":
        pytest.importorskip("distributed")
    document = yaml.safe_load((Path(registry.CATALOG) / "etcd-lost-fsync.yaml").read_text())
    document |= {"name": "lost-fsync-said-to-pass", "checkers": ["raft-safety", "steady-state"], "expected": {"outcome": "pass"}}
    path = write(tmp_path, document)
    out = tmp_path / "campaign"
    result = chaoskube("explore", str(path), "mesh-partition", "--seeds", "1..2", "--jobs", "1", "--keep", "failed", *engine, "--out", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert sorted(item.name for item in out.iterdir() if item.is_dir() and not item.name.startswith(".")) == ["lost-fsync-said-to-pass-seed1", "lost-fsync-said-to-pass-seed2"]
    summary = json.loads((out / "summary.json").read_text())
    assert [(item["seed"], item["checker"]) for item in summary["violations"] if item["kind"] == "violation"] == [(1, "raft-safety"), (2, "raft-safety")]
    assert summary["kept"] == 2 and all(run["kept"] == run["experiment"].startswith("lost-fsync") for run in summary["runs"])
    assert "not-as-expected: 2 of 4 runs as expected; 2 not as expected; 2 violation(s)" in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert sorted(line.split("]")[0] for line in lines) == ["[1/4", "[2/4", "[3/4", "[4/4"]


def test_without_a_terminal_explore_prints_a_line_per_finished_run(tmp_path):
    result = chaoskube("explore", "mesh-partition", "--seeds", "1..3", "--jobs", "2", "--keep", "none", "--out", str(tmp_path / "c"))
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert sorted(line.split("]")[0] for line in lines) == ["[1/3", "[2/3", "[3/3"]
    assert all("mesh-partition seed " in line and ": as expected (" in line for line in lines)

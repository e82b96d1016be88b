"""The pytest plugin on a failing ClusterMachine example: the seed, the shrunk steps and the
fingerprint, plus a saved experiment file and a failure-mode report replayed from it; the
``gallery`` marker patches a broken variant in; ``cluster_spec`` takes a spec file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[2]

USER_TESTS = '''
import pytest
from chaoskube.testing import ClusterMachine


class Evictions(ClusterMachine):
    kill = restart = pause = clock_jump = partition_node = heal_all = None
    raft_is_safe = leader_election_holds = bindings_fit = None


STEPS = [("boot", {"seed": 5}), ("create_deployment", {"name": "web", "replicas": 2}),
         ("create_pdb", {"name": "web", "max_unavailable": 0}), ("wait", {"seconds": 15.0}),
         ("evict_pod", {"name": "web", "index": 0})]


@pytest.mark.gallery("eviction-skips-pdb")
def test_the_broken_eviction_is_caught():
    Evictions.replay(STEPS)


def test_the_real_eviction_holds():
    Evictions.replay(STEPS)


@pytest.mark.cluster_spec("two-nodes.yaml")
def test_a_spec_file(cluster):
    nodes = cluster.run(cluster.client.list, "nodes")
    assert sorted(node.metadata.name for node in nodes.items) == ["worker-1", "worker-2"]
'''

SPEC = """
etcdMembers: 3
apiServers: 1
controllerManagers: 1
schedulers: 1
nodeGroups:
  - prefix: worker
    count: 2
"""


def _pytest(directory: Path, *options: str) -> str:
    registered = any(point.value == "chaoskube.testing.plugin" for point in entry_points(group="pytest11"))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *options, str(directory)]
    if not registered:
        command[3:3] = ["-p", "chaoskube.testing.plugin"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=directory, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    return result.stdout


def test_a_failing_example_is_saved_with_a_failure_mode_report_and_the_marker_applies_the_variant(tmp_path):
    (tmp_path / "test_user_machine.py").write_text(textwrap.dedent(USER_TESTS))
    (tmp_path / "two-nodes.yaml").write_text(SPEC)
    failures = tmp_path / "failures"
    out = _pytest(tmp_path, f"--chaoskube-failures={failures}")
    assert "1 failed, 2 passed" in out, out[-4000:]  # the variant applied to one test only
    assert "- chaoskube -" in out and "seed: 5" in out and "5. evict_pod(name='web', index=0)" in out, out[-4000:]
    directory = failures / "test_user_machine.py-test_the_broken_eviction_is_caught"
    saved = directory / "test_the_broken_eviction_is_caught.yaml"
    assert f"saved experiment: {saved}" in out, out[-4000:]
    assert f"failure-mode report: {directory / 'run' / 'report.md'}" in out, out[-4000:]
    assert "replay verdicts: failing pdb-eviction; as expected" in out, out[-4000:]
    assert "replay fingerprint: the same journal sha256 as the example" in out or "differs from the example's" in out, out[-4000:]  # the machine's boot race (see the report)
    for name in ("report.md", "report.html", "result.json", "junit.xml", "journal.jsonl"):
        assert (directory / "run" / name).is_file(), name
    document = msgspec.yaml.decode(saved.read_bytes())
    assert document["system"] == "hypothesis" and document["seed"] == 5
    assert document["broken"] == ["eviction-skips-pdb"]
    assert document["workload"]["machine"] == "test_user_machine:Evictions"
    assert document["expected"]["outcome"] == "fail" and document["expected"]["failing"] == ["pdb-eviction"]
    assert document["checkers"] == ["pdb-eviction", "steps"]
    assert f"replay it with: chaoskube run {saved} --out {directory / 'run'}" in out


def test_off_saves_nothing(tmp_path):
    (tmp_path / "test_user_machine.py").write_text(textwrap.dedent(USER_TESTS))
    (tmp_path / "two-nodes.yaml").write_text(SPEC)
    out = _pytest(tmp_path, "--chaoskube-failures=off", "-k", "broken")
    assert "1 failed" in out and "seed: 5" in out, out[-3000:]
    assert "saved experiment" not in out and not (tmp_path / ".chaoskube").exists()

"""Shrunk examples as experiments: ``save_experiment`` writes a ClusterMachine example as an
experiment file that ``load_experiment`` accepts, and the ``hypothesis`` system replays it in
a fresh process to the example's own journal fingerprint and verdict; bad files fail in one
line naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule, run_state_machine_as_test

from chaoskube import gallery
from chaoskube.cluster import ClusterSpec, NodeGroup
from chaoskube.experiments.model import ExperimentError
from chaoskube.experiments.registry import SYSTEMS, load_experiment
from chaoskube.experiments.replay_example import main
from chaoskube.experiments.systems.hypothesis import HypothesisSystem, run_hypothesis_experiment
from chaoskube.sim.journal import journal_sha256
from chaoskube.testing import ClusterMachine, InvariantViolation, RunSummary
from chaoskube.testing.experiment import checkers_judged, failing_checkers, machine_path, save_experiment
from chaoskube.testing.machine import NAMESPACE, focus
from chaoskube.workload import actions

ROOT = Path(__file__).resolve().parents[2]

CLEAN_STEPS = [("boot", {"seed": 3}), ("create_deployment", {"name": "web", "replicas": 2}), ("kill", {"who": "leader:etcd", "duration_s": None}), ("wait", {"seconds": 5.0}), ("heal_all", {})]
#: One etcd member, two nodes: what a PDB story needs (no quorum to lose).
EVICTION_SPEC = ClusterSpec(etcd_members=1, api_servers=1, controller_managers=1, schedulers=1, node_groups=[NodeGroup(count=2, zones=["zone-a"])])
EVICTION_STEPS = [("boot", {"seed": 5}), ("create_deployment", {"name": "web", "replicas": 2}), ("create_pdb", {"name": "web", "max_unavailable": 0}), ("wait", {"seconds": 15.0}), ("evict_pod", {"name": "web", "index": 0})]


@pytest.fixture(autouse=True)
def hypothesis_system_registered(monkeypatch):
    """Until experiments/systems/__init__.py lists the system (the lead's file)."""
    if "hypothesis" not in SYSTEMS:
        monkeypatch.setitem(SYSTEMS, "hypothesis", HypothesisSystem)


class EvictionOnly(focus(ClusterMachine, "_EvictionOnlyBase", rules=["evict_pod"], invariants=["evictions_respect_pdbs"], spec=EVICTION_SPEC, convergence_deadline_s=120.0)):
    """The Eviction API and the PDB invariant only (module-level: importable by name), focused
    so that one eviction breaks the PDB. ``boot`` also creates the Deployment ``web`` (two
    replicas) and its PDB with ``maxUnavailable: 0`` (a replay of ``boot`` does the same), so
    an example needs two rules: ``wait`` (15 or 30 s, long enough for the pods to become
    Ready: an eviction of a pod that is not Ready takes nothing from the PDB) and then
    ``evict_pod``. Hypothesis's stateful search enables a random subset of the rules in each
    example (swarm testing), so every further rule the bug needs makes a hit rarer: with
    ``create_deployment`` and ``create_pdb`` as rules too, a derandomized search of 60
    examples found the bug when run alone and missed it after the whole suite's collection
    (Hypothesis also draws constants from loaded local modules' source, so the draws depend
    on what was imported); probing Hypothesis seeds 1-6 found it at examples 4 to 44. One
    etcd member and two nodes, so each example the shrinker replays boots a cheaper cluster,
    and the World seed drawn from 0..63 (as tests/testing/test_gallery_machine.py's
    SmallSeeds: the shrinker spends far fewer live clusters on a small integer). Each rule is
    the machine's own step, journaled and replayed under its own name."""

    @initialize(seed=st.integers(min_value=0, max_value=63))
    def boot(self, seed: int) -> None:
        super().boot(seed)
        self.act(actions.create_workload, "Deployment", NAMESPACE, "web", 2)
        self.act(actions.create_pdb, NAMESPACE, "web", "maxUnavailable=0")

    @rule(name=st.just("web"), index=st.integers(0, 7))
    def evict_pod(self, name: str, index: int) -> None:
        ClusterMachine.evict_pod(self, name=name, index=index)

    @rule(seconds=st.sampled_from((15.0, 30.0)))
    def wait(self, seconds: float) -> None:
        ClusterMachine.wait(self, seconds=seconds)


def _failing_example() -> InvariantViolation:
    with gallery.applied(["eviction-skips-pdb"]):
        with pytest.raises(InvariantViolation) as caught:
            ClusterMachine.replay(EVICTION_STEPS)
    return caught.value


def _run_in_a_fresh_process(path: Path, out: Path, *extra: str) -> tuple[int, dict, str]:
    command = [sys.executable, "-m", "chaoskube.experiments.replay_example", str(path), "--out", str(out), *extra]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    lines = completed.stdout.strip().splitlines()
    return completed.returncode, json.loads(lines[-1]) if lines and completed.returncode in (0, 1) else {}, completed.stderr


PLAIN_REPLAY = """
import json, sys
from chaoskube import gallery
from chaoskube.testing.experiment import resolve_machine
machine = resolve_machine(sys.argv[1])
with gallery.applied(json.loads(sys.argv[3])):
    try:
        summary = machine.replay([tuple(step) for step in json.loads(sys.argv[2])])
    except Exception as error:
        summary = error.chaoskube_run
print(summary.fingerprint)
"""


def assert_replayed(summary: RunSummary, fingerprint: str, path: Path, machine: str = "chaoskube.testing.machine:ClusterMachine", broken: tuple[str, ...] = ()) -> None:
    """The hypothesis system's run of the file at ``path`` has the example's fingerprint.

    ClusterMachine's boot races its thread hand-over (reported: under load, about one
    replay in five diverged in the order of the first tasks at t=0, for a plain
    ``ClusterMachine.replay`` too). So on a mismatch, the file is replayed again in fresh
    processes: one match shows the system reproduces the example; if none matches and
    plain replays of the same steps disagree among themselves, the machine is to blame
    (xfail, with the evidence); otherwise the system is."""
    if fingerprint == summary.fingerprint:
        return
    again = []
    for attempt in range(3):
        code, result, stderr = _run_in_a_fresh_process(path, path.parent / f"again-{attempt}")
        assert code in (0, 1), stderr[-2000:]
        again.append(result["fingerprint"])
        if result["fingerprint"] == summary.fingerprint:
            return
    steps = json.dumps([list(step) for step in summary.steps if step[0] != "teardown"])
    plain = []
    for _ in range(3):
        completed = subprocess.run([sys.executable, "-c", PLAIN_REPLAY, machine, steps, json.dumps(list(broken))], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
        assert completed.returncode == 0, completed.stderr[-2000:]
        plain.append(completed.stdout.strip().splitlines()[-1])
    evidence = f"example {summary.fingerprint[:12]}, hypothesis system {[fingerprint[:12], *(other[:12] for other in again)]}, plain replays {[other[:12] for other in plain]}"
    if len(set(plain)) > 1 or summary.fingerprint not in plain:
        pytest.xfail(f"ClusterMachine.replay itself does not reproduce runs reliably: {evidence}")
    raise AssertionError(f"the hypothesis system never reproduced the example that plain replays reproduce: {evidence}")


def test_a_clean_example_is_saved_loaded_and_replayed_in_a_fresh_process_to_its_fingerprint(tmp_path):
    summary = ClusterMachine.replay(CLEAN_STEPS)
    path = save_experiment(summary, tmp_path / "clean-example.yaml")
    experiment = load_experiment(path)
    assert experiment.system == "hypothesis" and experiment.seed == 3 and experiment.name == "clean-example"
    assert experiment.expected.outcome == "pass" and experiment.broken == []
    assert experiment.workload["machine"] == "chaoskube.testing.machine:ClusterMachine"
    assert [step for step, _ in experiment.workload["steps"]] == ["create_deployment", "kill", "wait", "heal_all"]  # no boot, no teardown
    # Issue 32: only the checkers the example judged (no PDB here, no acknowledged etcd
    # write: pdb-eviction and raft-safety answered unknown), so its replay is as expected.
    assert summary.unknown == ("PDB-aware eviction", "raft safety")
    assert experiment.checkers == ["leader-election", "scheduling", "convergence", "steps"]
    assert msgspec.convert(experiment.cluster, type=dict) == msgspec.to_builtins(ClusterMachine.spec)

    code, result, stderr = _run_in_a_fresh_process(path, tmp_path / "run")
    assert code == 0, stderr[-2000:]
    assert result["failing"] == [] and result["unknown"] == [] and result["as_expected"] is True
    payload = json.loads((tmp_path / "run" / "result.json").read_text())
    assert payload["journal_sha256"] == result["fingerprint"]
    assert payload["verdicts"]["convergence"]["valid"] == "true" and payload["verdicts"]["steps"]["valid"] == "true"
    for name in ("journal.jsonl", "report.md", "report.html", "junit.xml"):
        assert (tmp_path / "run" / name).is_file(), name
    assert journal_sha256(tmp_path / "run" / "journal.jsonl") == result["fingerprint"]  # the file is the whole journal
    assert "kill" in (tmp_path / "run" / "report.md").read_text()  # the fault step is listed
    assert_replayed(summary, result["fingerprint"], path)


def test_a_failing_example_with_a_gallery_bug_replays_in_a_fresh_process_and_fails_the_same_checker(tmp_path):
    error = _failing_example()
    summary: RunSummary = error.chaoskube_run
    assert failing_checkers(error) == ["pdb-eviction"]
    path = save_experiment(summary, tmp_path / "pdb.yaml", failing=failing_checkers(error), failure_mode="eviction ignores the PDB", broken=["eviction-skips-pdb"])
    experiment = load_experiment(path)
    assert experiment.broken == ["eviction-skips-pdb"]
    assert experiment.expected.outcome == "fail" and experiment.expected.failing == ["pdb-eviction"]
    assert "convergence" not in experiment.checkers  # the example stopped before teardown

    code, result, stderr = _run_in_a_fresh_process(path, tmp_path / "run", "--judged-only")
    assert code == 0, stderr[-2000:]  # as expected: it fails, with pdb-eviction
    assert result["failing"] == ["pdb-eviction"]
    assert set(load_experiment(path).checkers) == set(result["checkers"]) >= {"pdb-eviction", "steps"}
    payload = json.loads((tmp_path / "run" / "result.json").read_text())
    assert payload["broken"] == ["eviction-skips-pdb"] and payload["as_expected"] is True
    assert payload["verdicts"]["steps"]["valid"] == "true"  # the failure is pdb-eviction's, not another
    assert "PodDisruptionBudget" in (tmp_path / "run" / "report.md").read_text() or "pdb" in (tmp_path / "run" / "report.md").read_text().lower()

    # Without the gallery variant the same steps pass: the file is a regression experiment.
    document = msgspec.yaml.decode(path.read_bytes())
    (tmp_path / "fixed.yaml").write_bytes(msgspec.yaml.encode({**document, "broken": []}))
    result_fixed = run_hypothesis_experiment(load_experiment(tmp_path / "fixed.yaml"), summary.seed, tmp_path / "fixed")
    assert result_fixed.failing == [] and not result_fixed.as_expected  # it still says fail: flip it to pass
    assert_replayed(summary, result["fingerprint"], path, broken=("eviction-skips-pdb",))


def test_the_runs_seed_is_the_world_seed(tmp_path):
    summary = ClusterMachine.replay(CLEAN_STEPS)
    experiment = load_experiment(save_experiment(summary, tmp_path / "clean.yaml"))
    same = run_hypothesis_experiment(experiment, 3, tmp_path / "same")
    other = run_hypothesis_experiment(experiment, 4, tmp_path / "other")
    assert other.journal_sha256 != same.journal_sha256
    assert "--seed 4" in other.replay
    assert_replayed(summary, same.journal_sha256, tmp_path / "clean.yaml")


def test_judged_only_drops_the_checkers_that_had_nothing_to_judge(tmp_path):
    summary = ClusterMachine.replay(CLEAN_STEPS)
    path = save_experiment(summary, tmp_path / "clean.yaml", checkers=["raft-safety", "leader-election", "pdb-eviction", "scheduling", "convergence", "steps"])
    code, result, stderr = _run_in_a_fresh_process(path, tmp_path / "run", "--judged-only")
    assert code == 0, stderr[-2000:]
    experiment = load_experiment(path)
    assert "pdb-eviction" not in experiment.checkers and "convergence" in experiment.checkers
    assert result["checkers"] == experiment.checkers
    assert json.loads((tmp_path / "run" / "result.json").read_text())["as_expected"] is True


@pytest.mark.slow  # ~30 s measured: Hypothesis finds and shrinks the bug through live clusters (EvictionOnly says why the search is shaped so)
def test_a_shrunk_hypothesis_example_saved_and_replayed_gives_the_examples_fingerprint(tmp_path):
    with gallery.applied(["eviction-skips-pdb"]):
        with pytest.raises(InvariantViolation) as caught:
            run_state_machine_as_test(EvictionOnly, settings=settings(max_examples=60, stateful_step_count=12, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)))
    summary: RunSummary = caught.value.chaoskube_run
    assert len(summary.steps) <= 10, summary.describe()
    assert "chaoskube run" in "\n".join(caught.value.__notes__)  # the failure says how to replay it
    assert checkers_judged(EvictionOnly, summary.steps) == ["pdb-eviction", "steps"]
    path = save_experiment(summary, tmp_path / "found.yaml", machine=EvictionOnly, failing=failing_checkers(caught.value), broken=["eviction-skips-pdb"])
    assert load_experiment(path).workload["machine"] == "tests.testing.test_save_experiment:EvictionOnly"
    code, result, stderr = _run_in_a_fresh_process(path, tmp_path / "run", "--judged-only")
    assert code == 0, stderr[-2000:]
    assert result["failing"] == ["pdb-eviction"]
    assert_replayed(summary, result["fingerprint"], path, machine="tests.testing.test_save_experiment:EvictionOnly", broken=("eviction-skips-pdb",))


# ---------------------------------------------------------------------------- bad input
def _write(tmp_path: Path, **changes) -> Path:
    document = {
        "name": "bad", "title": "t", "description": "d", "source": "s", "system": "hypothesis", "seed": 1,
        "workload": {"machine": "chaoskube.testing.machine:ClusterMachine", "steps": [["wait", {"seconds": 1.0}]]},
        "checkers": ["steps"],
    }
    for key, value in changes.items():
        if key.startswith("workload_"):
            document["workload"] = {**document["workload"], key.removeprefix("workload_"): value}
        else:
            document[key] = value
    path = tmp_path / "bad.yaml"
    path.write_bytes(msgspec.yaml.encode(document))
    return path


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"workload_machine": "no.such.module:Machine"}, "field `workload.machine`: cannot import module 'no.such.module'"),
        ({"workload_machine": "chaoskube.testing.machine:NoSuchMachine"}, "field `workload.machine`: module 'chaoskube.testing.machine' has no 'NoSuchMachine'"),
        ({"workload_machine": "chaoskube.testing.machine:LiveCluster"}, "field `workload.machine`: chaoskube.testing.machine:LiveCluster is not a ClusterMachine subclass"),
        ({"workload_machine": "ClusterMachine"}, "field `workload.machine`: 'ClusterMachine' is not of the form 'module:QualName'"),
        ({"workload_steps": [["fly", {}]]}, "field `workload.steps[0]`: ClusterMachine has no rule 'fly'; its rules: "),
        ({"workload_steps": [["wait", {"seconds": 1.0}], ["boot", {"seed": 2}]]}, "field `workload.steps[1]`: 'boot' is not a step here"),
        ({"workload_steps": [["wait", {"minutes": 1}]]}, "field `workload.steps[0]`: bad arguments for wait: "),
        ({"workload_steps": [["create_deployment", {"name": "web"}]]}, "field `workload.steps[0]`: bad arguments for create_deployment: missing a required argument: 'replicas'"),
        ({"workload_steps": [["create_deployment", {"name": "web", "replicas": "two"}]]}, "field `workload.steps[0].replicas`: bad value 'two' for create_deployment"),
        ({"workload_steps": [["wait"]]}, "field `workload.steps[0]`"),
        ({"workload_extra": 1}, "field `workload.extra`: unknown field"),
        ({"cluster": {"etcdMembers": "three"}}, "field `cluster.etcdMembers`"),
        ({"checkers": ["linearizability"]}, "field `checkers[0]`: unknown checker 'linearizability' for system 'hypothesis'"),
    ],
)
def test_bad_fields_fail_in_one_line_naming_the_field(tmp_path, changes, expected):
    path = _write(tmp_path, **changes)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    assert expected in message, message


def test_a_schedule_is_refused_and_the_command_line_exits_2(tmp_path, capsys):
    path = _write(tmp_path, schedule=[{"at_s": 1.0, "kind": "kill", "target": "role:etcd"}])
    # Refused when the file loads (registry: the system's FAULT_KINDS), before any run.
    with pytest.raises(ExperimentError, match=r"field `schedule\[0\]\.kind`: 'kill' cannot be applied in a 'hypothesis' run \(kinds: none: its faults are steps of `workload.steps`\)"):
        load_experiment(path)
    assert main([str(_write(tmp_path, workload_machine="nope:Nope")), "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "field `workload.machine`" in error and "\n" not in error


def test_save_experiment_refuses_what_a_file_cannot_name(tmp_path):
    summary = RunSummary(1, (("boot", {"seed": 1}), ("wait", {"seconds": 1.0})), "0" * 64)

    class Local(ClusterMachine):
        pass

    with pytest.raises(ValueError, match="cannot be imported by name"):
        save_experiment(summary, tmp_path / "x.yaml", machine=Local)
    with pytest.raises(ValueError, match="failing: 'convergence' is not one of the checkers"):
        save_experiment(summary, tmp_path / "x.yaml", failing=["convergence"])  # never reached teardown
    with pytest.raises(ValueError, match="do not start with boot"):
        save_experiment(RunSummary(1, (("wait", {"seconds": 1.0}),), "0" * 64), tmp_path / "x.yaml")
    assert machine_path(EvictionOnly) == "tests.testing.test_save_experiment:EvictionOnly"


def test_a_saved_example_replays_inside_a_project_with_its_own_faults_and_experiments_packages(tmp_path):
    """Issue 18: chaoskube's own packages are ``chaoskube.faults`` and ``chaoskube.experiments``,
    so a user's project with top-level ``faults`` / ``experiments`` packages (first on the
    path, as when run from the project's root) cannot shadow them."""
    project = tmp_path / "project"
    for package in ("faults", "experiments", "tests/faults"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f'raise ImportError("the user\'s own {package} package was imported")\n')
    summary = ClusterMachine.replay(CLEAN_STEPS)
    path = save_experiment(summary, project / "examples" / "clean-example.yaml")
    environment = dict(__import__("os").environ, PYTHONPATH=str(project))
    completed = subprocess.run(
        [sys.executable, "-m", "chaoskube.experiments.cli", "run", str(path), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, cwd=project, env=environment, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode in (0, 1), completed.stderr[-2000:] + completed.stdout[-2000:]
    assert "the user's own" not in completed.stderr + completed.stdout
    payload = json.loads((tmp_path / "run" / "result.json").read_text())
    assert payload["verdicts"]["convergence"]["valid"] == "true" and payload["verdicts"]["steps"]["valid"] == "true"
    assert_replayed(summary, payload["journal_sha256"], path)

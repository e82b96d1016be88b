"""ClusterMachine: Hypothesis stateful testing of a live simulated cluster, and the pytest
plugin. Examples replay to the same journal fingerprint in fresh processes; a user's
subclass adds a rule and an invariant, and Hypothesis shrinks to them. (A gallery entry, an
eviction path that skips the PDB, found, shrunk, saved and replayed in a fresh process:
tests/testing/test_save_experiment.py.)"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule, run_state_machine_as_test

from chaoskube.cluster import ClusterSpec, NodeGroup
from chaoskube.faults.kinds import KINDS
from chaoskube.testing import EXCLUDED_KINDS, FAULT_KINDS, FAULT_RULES, ClusterMachine, RunSummary, focus, step

ROOT = Path(__file__).resolve().parents[2]


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def _run_failing(machine: type[ClusterMachine], examples: int, steps: int) -> BaseException:
    with pytest.raises(BaseException) as caught:
        run_state_machine_as_test(machine, settings=_settings(examples, steps))
    return caught.value


WORKLOAD_RULES = ("create_deployment", "scale_deployment", "update_deployment", "delete_deployment", "create_pdb", "delete_pod", "evict_pod", "cordon", "uncordon", "drain")

#: The workload rules and wait: no fault rules (a gallery bug needs no fault).
WorkloadOnly = focus(ClusterMachine, "WorkloadOnly", rules=WORKLOAD_RULES)

class SmallSeeds(ClusterMachine):
    """Draws the World seed from 0-63: any seed explores a task order, and the shrinker
    spends far fewer live clusters on minimising a small integer."""

    @initialize(seed=st.integers(min_value=0, max_value=63))
    def boot(self, seed: int) -> None:
        super().boot(seed)


def small_spec(nodes: int = 2, **fields: object) -> ClusterSpec:
    """One etcd member (the stories that are not about Raft need no quorum: a cheaper cluster)."""
    return ClusterSpec(**{"etcd_members": 1, "api_servers": 1, "controller_managers": 1, "schedulers": 1, "node_groups": [NodeGroup(count=nodes, zones=["zone-a"])], **fields})


#: Deployments, PDBs, evictions, drains and waits: the rules that reach the eviction path,
#: and only the PDB invariant (faster shrinking), on one etcd member and two nodes (the
#: story is not about Raft: a cheaper cluster per example).
EvictionStories = focus(
    SmallSeeds, "EvictionStories", rules=("create_deployment", "create_pdb", "evict_pod", "drain"),
    invariants=("evictions_respect_pdbs",), convergence_deadline_s=120.0,
    spec=small_spec(),
)


def test_the_machine_runs_clean_on_the_real_components():
    summaries: list[RunSummary] = []

    class Recorded(ClusterMachine):
        def teardown(self) -> None:
            super().teardown()
            if self.live is not None:
                summaries.append(self.summary())

    run_state_machine_as_test(Recorded, settings=_settings(6, 10))
    assert len(summaries) >= 6
    assert max(len(summary.steps) for summary in summaries) >= 8  # boot, steps, teardown
    names = {name for summary in summaries for name, _ in summary.steps}
    assert len(names & set(FAULT_RULES.values())) >= 5, names  # faults of several kinds were drawn
    assert len({summary.seed for summary in summaries}) >= 3  # the seed is explored


REPLAY_SCRIPT = """
import json, sys
from chaoskube.testing.machine import ClusterMachine, InvariantViolation
steps = [tuple(step) for step in json.loads(sys.argv[1])]
machine = ClusterMachine
violation = None
try:
    summary = machine.replay(steps)
except InvariantViolation as error:
    summary, violation = error.chaoskube_run, error.name
print(json.dumps({"fingerprint": summary.fingerprint, "steps": [name for name, _ in summary.steps], "violation": violation}))
"""


def _replay_in_a_fresh_process(steps):
    completed = subprocess.run([sys.executable, "-c", REPLAY_SCRIPT, json.dumps(steps)], capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


CLEAN_STEPS = [
    ["boot", {"seed": 11}],
    ["create_deployment", {"name": "web", "replicas": 2}],
    ["kill", {"who": "leader:etcd", "duration_s": None}],
    ["wait", {"seconds": 15.0}],
    ["heal_all", {}],
    ["update_deployment", {"name": "web", "change": "restart"}],
    ["pause", {"who": "random:node", "duration_s": 10.0}],
    ["wait", {"seconds": 15.0}],
]
OTHER_STEPS = [
    ["boot", {"seed": 12}],
    ["create_deployment", {"name": "api", "replicas": 3}],
    ["split", {"who": "leader:etcd", "duration_s": 10.0, "leader_in": "minority"}],
    ["control_plane_partition", {"who": "random:node", "duration_s": None, "from_roles": "control-plane"}],
    ["wait", {"seconds": 30.0}],
]


def test_replaying_a_clean_run_gives_the_same_fingerprint_and_a_different_seed_does_not():
    """Each replay in its own process, as a user replays a finding later."""
    first = _replay_in_a_fresh_process(CLEAN_STEPS)
    second = _replay_in_a_fresh_process(CLEAN_STEPS)
    other = _replay_in_a_fresh_process([["boot", {"seed": 12}], *CLEAN_STEPS[1:]])
    assert first["fingerprint"] == second["fingerprint"]
    assert other["fingerprint"] != first["fingerprint"]
    assert first["steps"] == [name for name, _ in CLEAN_STEPS] + ["teardown"]


def test_replays_in_one_busy_process_are_exact():
    """The same example three times in this process, interleaved with another example and
    with garbage left between them, gives one fingerprint, and the one a fresh process
    gives. (A process's first run used to differ: the stepper reported ready before the
    World's start-up tasks had run, so the first step joined their scheduling batch or
    not, as the threads' timing fell.)"""
    fingerprints, others = [], []
    for round_ in range(3):
        fingerprints.append(ClusterMachine.replay([tuple(step) for step in CLEAN_STEPS]).fingerprint)
        others.append(ClusterMachine.replay([tuple(step) for step in OTHER_STEPS]).fingerprint)
        garbage = [[index, {}] for index in range(20_000 * (round_ + 1))]  # allocations between runs
        for item in garbage:
            item[1]["self"] = item  # cycles for the collector
        del garbage
    assert len(set(fingerprints)) == 1, fingerprints
    assert len(set(others)) == 1, others
    assert fingerprints[0] != others[0]
    assert _replay_in_a_fresh_process(CLEAN_STEPS)["fingerprint"] == fingerprints[0]


def test_examples_found_by_hypothesis_replay_exactly_in_the_same_process():
    """Every example Hypothesis ran (faults of many kinds, 20 steps) replays to its
    fingerprint right after, in the same process."""
    summaries: list[RunSummary] = []

    class Recorded(ClusterMachine):
        def teardown(self) -> None:
            super().teardown()
            if self.live is not None:
                summaries.append(self.summary())

    run_state_machine_as_test(Recorded, settings=_settings(8, 20))
    complete = [summary for summary in summaries if summary.steps[-1][0] == "teardown"]
    assert len(complete) >= 8
    for summary in complete:
        assert ClusterMachine.replay(summary.steps).fingerprint == summary.fingerprint, summary.describe()


def test_every_fault_kind_is_a_rule_or_excluded_with_a_reason():
    rules = {rule.function.__name__ for rule in ClusterMachine.setup_state().rules}
    for kind in KINDS:
        if kind in EXCLUDED_KINDS:
            assert len(EXCLUDED_KINDS[kind]) > 40 and kind not in FAULT_KINDS, kind
        else:
            assert kind in FAULT_KINDS and FAULT_RULES[kind] in rules, kind
    assert FAULT_RULES["drain"] == "drain_fault" and "drain" in rules  # the workload drain keeps its name
    assert set(EXCLUDED_KINDS) <= set(KINDS)


def test_fault_rules_go_through_the_injector_and_heal_by_timer_or_heal_all(tmp_path):
    """Faults are planned and journaled by faults/ (``fault`` apply / heal events): a timed
    one heals by itself, an open one at heal_all; ``journal_path`` writes the journal."""

    class ToFile(ClusterMachine):
        journal_path = tmp_path / "journal.jsonl"

    steps = [
        ("boot", {"seed": 3}),
        ("clock_jump", {"who": "leader:kube-scheduler", "duration_s": 10.0, "seconds": 60.0}),
        ("isolate", {"who": "name:etcd-2", "duration_s": None, "scope": "peers"}),
        ("webhook_delay", {"who": "random:webhook", "duration_s": None, "delay_ms": 6000.0}),
        ("wait", {"seconds": 15.0}),
        ("heal_all", {}),
    ]
    summary = ToFile.replay(steps)
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    faults = [event for event in events if event["type"] == "fault"]
    applied = {event["kind"]: event for event in faults if event["event"] == "apply"}
    assert set(applied) == {"clock-jump", "isolate"}, faults
    assert applied["clock-jump"]["targets"] == ["kube-scheduler-1"]
    assert applied["isolate"]["targets"] == ["etcd-2"] and applied["isolate"]["grudge"]
    skipped = [event for event in faults if event["event"] == "skip"]
    assert [event["kind"] for event in skipped] == ["webhook-delay"]  # the spec has no webhook
    heals = {event["id"]: event["t"] for event in faults if event["event"] == "heal"}
    assert heals[applied["clock-jump"]["id"]] == pytest.approx(applied["clock-jump"]["t"] + 10.0)
    heal_all_at = next(event["t"] for event in events if event["type"] == "hypothesis-step" and event["step"] == "heal_all")
    assert heals[applied["isolate"]["id"]] == heal_all_at
    assert hashlib.sha256((tmp_path / "journal.jsonl").read_bytes()).hexdigest() == summary.fingerprint


def test_update_deployment_rolls_out_a_new_replicaset():
    summaries: list[RunSummary] = []

    class Recorded(ClusterMachine):
        def teardown(self) -> None:
            super().teardown()
            summaries.append(self.summary())

    machine = Recorded()
    machine.boot(seed=5)
    try:
        machine.create_deployment(name="web", replicas=2)
        machine.wait(seconds=30.0)
        machine.update_deployment(name="web", change="restart")
        machine.update_deployment(name="web", change="image")
        machine.wait(seconds=60.0)

        async def look():
            deployment = await machine.client.get("deployments", "default", "web")
            sets = await machine.client.list("replicasets", "default")
            return deployment, sets.items

        deployment, replica_sets = machine.run(look)
    finally:
        machine.teardown()
    template = deployment.spec.template
    from chaoskube.api.protocol import timestamp

    # stamped with virtual time in the API's epoch, as the kubernetes system's rollout step stamps it
    assert template.metadata.annotations["kubectl.kubernetes.io/restartedAt"].startswith(timestamp(0)[: len("YYYY-MM-DDT00:00:")])
    assert template.spec.containers[0].image == "nginx:1.28"
    assert len(replica_sets) >= 2  # a new ReplicaSet per template change (old ones scaled down)
    assert sum(rs.spec.replicas for rs in replica_sets if rs.spec.template.spec.containers[0].image == "nginx:1.28") == 2


class AtMostOneDeployment(EvictionStories):
    """A user's extension: a journaled rule of their own and an invariant of their own."""

    @rule(seconds=st.sampled_from([2.0, 4.0]))
    @step
    def nap(self, seconds: float) -> None:
        self.run(self.world.sleep, seconds)

    @precondition(lambda self: self.live is not None)
    @invariant()
    def at_most_one_deployment(self) -> None:
        async def count() -> int:
            listed = await self._api("list deployments", self.client.list, "deployments", "default")
            return len(listed.items) if listed else 0

        assert self.run(count) <= 1, "two Deployments exist"


@pytest.mark.slow  # ~1 min of shrinking
def test_a_subclass_adds_rules_and_invariants_and_hypothesis_shrinks_to_them():
    searching = type("AtMostOneDeployment", (AtMostOneDeployment,), {"liveness": False, "__module__": __name__})  # safety only while searching
    error = _run_failing(searching, 30, 10)
    assert isinstance(error, AssertionError) and "two Deployments exist" in str(error), repr(error)
    names = [name for name, _ in error.chaoskube_run.steps]
    assert names == ["boot", "create_deployment", "create_deployment"], names


PLUGIN_TESTS = '''
import pytest
from chaoskube.testing import ClusterMachine


@pytest.mark.sim_seed(7)
@pytest.mark.cluster_spec(api_servers=1, controller_managers=1, schedulers=1)
def test_cluster_fixture_boots(cluster, journal, sim_world):
    nodes = cluster.run(cluster.client.list, "nodes")
    assert len(nodes.items) == 3 and sim_world.seed == 7 and journal is sim_world.journal


@pytest.mark.sim_seed(7)
def test_fails_on_purpose(cluster):
    cluster.record_step("look", {})
    assert False, "on purpose"


def test_machine_failure_is_reported():
    machine = ClusterMachine()
    machine.boot(seed=5)
    try:
        machine.create_deployment(name="web", replicas=1)
        raise AssertionError("a failing rule")
    finally:
        machine.teardown()
'''


def test_the_plugin_gives_fixtures_and_prints_seed_steps_and_fingerprint_on_failure(tmp_path):
    (tmp_path / "test_plugin_use.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    registered = any(point.value == "chaoskube.testing.plugin" for point in entry_points(group="pytest11"))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(tmp_path)]
    if not registered:
        command[3:3] = ["-p", "chaoskube.testing.plugin"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    out = result.stdout
    assert "2 failed, 1 passed" in out, out[-3000:]
    assert out.count("- chaoskube -") == 2, out[-3000:]
    assert "seed: 7" in out and "1. look()" in out
    assert "seed: 5" in out and "2. create_deployment(name='web', replicas=1)" in out
    assert out.count("journal sha256: ") >= 2


def test_the_generator_actions_are_rules_of_the_machine_and_teardown_untaints():
    """The workload generator's actions (chaoskube/workload/actions.py) are rules of the
    machine too, their arguments from the same table; a taint the user left is removed by
    the teardown like a cordon, so the liveness phase converges."""
    from chaoskube.testing import ACTION_RULES
    from chaoskube.workload.actions import ACTIONS, ARG_CHOICES, GENERATOR_TAINT_KEY

    assert set(ACTION_RULES) | {"create_pdb", "delete_pod", "evict_pod", "cordon", "uncordon", "drain"} == set(ACTIONS)
    summaries: list[RunSummary] = []

    class Recorded(ClusterMachine):
        def teardown(self) -> None:
            super().teardown()
            summaries.append(self.summary())

    machine = Recorded()
    machine.boot(seed=3)
    try:
        machine.create_namespace(extra_namespace="churn-a")
        machine.create_workload(kind="Deployment", namespace="churn-a", slot=0, replicas=2)
        machine.create_workload(kind="StatefulSet", namespace="default", slot=1, replicas=1)
        machine.wait(seconds=30.0)
        machine.update_workload(rollable_kind="Deployment", index=0, change="image")
        machine.wait(seconds=30.0)
        machine.undo_rollout(index=0)
        machine.taint_node(index=0, effect="NoSchedule")
        machine.delete_workload(kind="StatefulSet", index=0, propagation="Foreground")
        machine.wait(seconds=30.0)

        async def look():
            deployment = await machine.client.get("deployments", "churn-a", "deploy-0")
            sets = await machine.client.list("statefulsets", "default")
            node = await machine.client.get("nodes", "", "node-1")
            return deployment, sets.items, node

        deployment, stateful_sets, node = machine.run(look)
        assert deployment.spec.template.spec.containers[0].image == "nginx:1.27"  # rolled back
        assert not stateful_sets  # deleted in the foreground: its pods first, then itself
        assert any(taint.key == GENERATOR_TAINT_KEY for taint in node.spec.taints)
        machine.delete_namespace(extra_namespace="churn-a")
    finally:
        machine.teardown()
    (summary,) = summaries
    names = [name for name, _ in summary.steps]
    assert names[:3] == ["boot", "create_namespace", "create_workload"] and names[-1] == "teardown"
    for name, args in summary.steps[1:-1]:
        if name in ACTIONS:
            assert all(value in ARG_CHOICES[arg] for arg, value in args.items()), (name, args)

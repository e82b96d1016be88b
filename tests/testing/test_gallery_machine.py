"""The gallery of broken components under the state machine, in the style of Hypothesis'
own gallery of buggy machines (``hypothesis-python/tests/nocover/test_stateful.py``): for
each deliberately broken component of chaoskube/gallery.py — broken Raft, eviction without
the PDB check, leader election without expiry, a scheduler that ignores taints, the
example controller's unsynced cache — Hypothesis finds a failing example, the checker that
should catch it is the one that fails, and the shrunk example has at most 10 steps; the same
machine with the real component passes a short run. (``eviction-skips-pdb`` is found,
shrunk, saved and replayed in a fresh process by tests/testing/test_save_experiment.py: one
search for that variant, not three; this file runs tests/testing/test_machine.py's
EvictionStories short with the real eviction.)

Each machine is focused (rules that cannot reach the bug are shadowed with None, as
tests/testing/test_machine.py's EvictionStories does) so that finding and shrinking take
seconds, not minutes. Settings are derandomized: the examples are the same on every run.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from chaoskube import gallery
from chaoskube.cluster import NodeGroup, Taint
from chaoskube.examples import FixedPdbGuardMachine, PdbGuardStories
from chaoskube.testing import ClusterMachine, InvariantViolation, RunSummary, focus
from tests.testing import test_machine
from tests.testing.test_machine import EvictionStories, small_spec

MAX_SHRUNK_STEPS = 10


def _settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def _found(machine: type[ClusterMachine], variant: str, examples: int, steps: int) -> InvariantViolation:
    """Run ``machine`` with ``variant`` patched in, safety only (no liveness phase in the
    teardown); the failure Hypothesis shrank to."""
    searching = type(machine.__name__, (machine,), {"liveness": False, "__module__": machine.__module__})
    with gallery.applied([variant]), pytest.raises(InvariantViolation) as caught:
        run_state_machine_as_test(searching, settings=_settings(examples, steps))
    return caught.value


def _shrunk(error: InvariantViolation) -> list[str]:
    summary: RunSummary = error.chaoskube_run
    names = [name for name, _ in summary.steps]
    assert names[0] == "boot", summary.describe()
    assert len(summary.steps) <= MAX_SHRUNK_STEPS, summary.describe()
    return names


# ----------------------------------------------------------------------- focused machines
class SafetyOnlyWhileSearching(ClusterMachine):
    """With ``liveness`` off (ClusterMachine's flag; :func:`_found` sets it while searching
    for a safety violation) the teardown only stops the world: a passing example then costs
    no convergence phase, and the shrinker runs hundreds of them."""


class SmallSeeds(SafetyOnlyWhileSearching, test_machine.SmallSeeds):
    """The focused machines draw the World seed from a small range (test_machine.SmallSeeds)."""


class RaftStories(focus(SmallSeeds, "_RaftBase", rules=("kill", "heal_all"), invariants=("raft_is_safe",), convergence_deadline_s=120.0)):
    """Raft: etcd members die and come back while the control plane keeps writing (leases,
    node status); a member that missed entries must not win an election. The machine's own
    kill rule with its targets narrowed to etcd members, down until ``heal_all`` and followed
    by 15 s of writes, and waits of 15 or 30 s (a member
    healed on a timer is caught up by the leader within a heartbeat; one restarted by
    ``heal_all`` together with a dead leader races the up-to-date member for the vote).
    Journaled, and replayed, as the machine's ``kill``, ``heal_all`` and ``wait`` steps.

    Every rule weighs the same (``fault_share`` 1.0): the machine's default (faults a
    quarter of the draws) would weigh ``kill`` 1 against 2 for each of ``wait`` and
    ``heal_all``, and two members must die before a heal for one that missed entries to
    stand against a quorum that holds them. ``heal_all`` is followed by 15 s of writes, so
    the election it starts is judged at once."""

    fault_share = 1.0

    @rule(who=st.sampled_from(("follower:etcd", "leader:etcd")))
    def kill(self, who: str) -> None:
        ClusterMachine.kill(self, who=who, duration_s=None)
        ClusterMachine.wait(self, seconds=15.0)  # two journaled steps: kill, then wait

    @rule(seconds=st.sampled_from([15.0, 30.0]))
    def wait(self, seconds: float) -> None:
        """Long enough for an election (1-2 s timeouts) and for a dead member to miss writes."""
        ClusterMachine.wait(self, seconds=seconds)

    @rule()
    def heal_all(self) -> None:
        ClusterMachine.heal_all(self)
        ClusterMachine.wait(self, seconds=15.0)  # the restarted members' election, then writes


#: Leader election: two controller-managers and two schedulers, their leaders killed and
#: restarted. Pauses and clock jumps are left out on purpose: client-go does not fence, so
#: a paused leader that resumes *is* expected to overlap with its successor (machine.py's
#: non-guarantees); kills and restarts end the old leader's interval at once, and the
#: tolerance covers a few seconds of slack (2 s retry period), not a takeover.
ElectionStories = focus(
    SmallSeeds, "ElectionStories", rules=("kill", "restart", "heal_all"), invariants=("leader_election_holds",),
    spec=small_spec(1, controller_managers=2, schedulers=2), leader_overlap_tolerance_s=5.0, convergence_deadline_s=120.0, __module__=__name__,
)

#: Scheduling: one plain node and two tainted ones (NoSchedule); no pod tolerates the taint.
TaintStories = focus(
    SmallSeeds, "TaintStories", rules=("create_deployment", "scale_deployment"), invariants=("bindings_fit",),
    spec=small_spec(node_groups=[
        NodeGroup(prefix="plain", count=1, zones=["zone-a"]),
        NodeGroup(prefix="infra", count=2, zones=["zone-a"], taints=[Taint(key="dedicated", value="infra", effect="NoSchedule")]),
    ]),
    convergence_deadline_s=120.0, __module__=__name__,
)


class GuardStories(SafetyOnlyWhileSearching, PdbGuardStories):
    """The example controller with its class default (``PdbGuard.fixed``), which the gallery
    variant ``example-controller-unsynced-cache`` turns off."""

    guard_fixed = None


# ----------------------------------------------------------------------- the gallery
@pytest.mark.slow  # ~2 min of CPU (measured 123 s user time; 893 s wall at load 16 on 2 cores): Raft needs a lagging member to stand for election
def test_broken_raft_is_found_by_raft_safety_and_shrunk():
    error = _found(RaftStories, "broken-raft", examples=250, steps=10)
    assert error.name == "raft safety", error
    names = _shrunk(error)
    assert "kill" in names, names  # a member missed entries, then stood for election


@pytest.mark.slow  # ~1 min of shrinking
def test_leader_election_without_expiry_is_found_and_shrunk():
    error = _found(ElectionStories, "leader-election-no-expiry", examples=20, steps=8)
    assert error.name == "leader election", error
    _shrunk(error)


@pytest.mark.slow  # ~1.5 min of shrinking
def test_a_scheduler_ignoring_taints_is_found_and_shrunk():
    error = _found(TaintStories, "scheduler-ignores-taints", examples=20, steps=6)
    assert error.name == "scheduling", error
    assert "taint" in str(error).lower(), error
    names = _shrunk(error)
    assert "create_deployment" in names, names


@pytest.mark.slow  # ~1 min of shrinking
def test_the_example_controller_is_found_and_shrunk():
    error = _found(GuardStories, "example-controller-unsynced-cache", examples=40, steps=10)
    assert error.name == "pdb-guard promise", error
    names = _shrunk(error)
    assert "create_deployment" in names and "restart_guard" in names, names
    last_restart = len(names) - 1 - names[::-1].index("restart_guard")
    assert names.index("create_deployment") < last_restart, names  # a guard existed, then the controller restarted


# ----------------------------------------------------------------------- the real components pass
@pytest.mark.parametrize("machine", [RaftStories, EvictionStories, ElectionStories, TaintStories, FixedPdbGuardMachine], ids=lambda machine: machine.__name__)
def test_the_real_components_pass_a_short_run(machine):
    run_state_machine_as_test(machine, settings=_settings(4, 8))


def test_the_fixed_example_controller_passes_its_stories():
    class FixedGuardStories(PdbGuardStories):
        guard_fixed = True

    run_state_machine_as_test(FixedGuardStories, settings=_settings(10, 10))


def test_the_gallery_lists_the_variants_this_file_exercises():
    for name in ("broken-raft", "eviction-skips-pdb", "leader-election-no-expiry", "scheduler-ignores-taints", "example-controller-unsynced-cache"):
        assert name in gallery.VARIANTS, name

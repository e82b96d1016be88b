"""The scheduling queue's pure core: ordering, backoff, unschedulable pods and cluster
events, the moveRequestCycle rule, the nominator. Cases after upstream's
``backend/queue/scheduling_queue_test.go``."""

from __future__ import annotations

import random

import pytest

from chaoskube.scheduler.framework import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
    NominatingInfo,
    node_update_event,
)
from chaoskube.scheduler.plugins import default_plugins
from chaoskube.scheduler.queue import QueueFull, SchedulingQueue, backoff_duration, is_pod_updated
from chaoskube.api.objects import deep_copy
from chaoskube.scheduler.framework import Framework
from tests.scheduler import make_node, make_pod, pod_affinity

PLUGIN_EVENTS = Framework(default_plugins(None)).events_to_register()


def new_queue(**kwargs) -> SchedulingQueue:
    return SchedulingQueue(plugin_events=PLUGIN_EVENTS, **kwargs)


def fail(queue: SchedulingQueue, now: float, *plugins: str):
    """Pop the head and report it unschedulable by ``plugins`` at ``now``."""
    pinfo = queue.pop()
    assert pinfo is not None
    pinfo.unschedulable_plugins = frozenset(plugins)
    assert queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle, now)
    return pinfo


@pytest.mark.parametrize(("attempts", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (30, 10.0)])
def test_backoff_doubles_from_1s_to_10s(attempts, expected):
    """``calculateBackoffDuration`` with the defaults (``podInitialBackoffSeconds`` 1,
    ``podMaxBackoffSeconds`` 10)."""
    assert backoff_duration(attempts, 1.0, 10.0) == expected


def test_active_queue_orders_by_priority_then_timestamp():
    """PrioritySort: higher priority first; equal priority, earlier timestamp first."""
    queue = new_queue()
    queue.add(make_pod("late-low", priority=1), 3.0)
    queue.add(make_pod("early-low", priority=1), 1.0)
    queue.add(make_pod("high", priority=100), 5.0)
    queue.add(make_pod("none"), 0.0)
    order = [queue.pop().key for _ in range(4)]
    assert order == ["default/high", "default/early-low", "default/late-low", "default/none"]
    assert queue.pop() is None
    assert queue.scheduling_cycle == 4


def test_an_unschedulable_pod_waits_for_an_event_its_plugins_registered():
    """``podMatchesEvent``: a pod rejected by NodeResourcesFit moves on AssignedPodDelete
    and NodeAdd, not on a node label change; it goes to backoffQ while backing off."""
    queue = new_queue()
    queue.add(make_pod("p", cpu="1"), 0.0)
    fail(queue, 0.0, "NodeResourcesFit")
    assert queue.where("default/p") == "unschedulable"
    label_change = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    assert queue.move_all_to_active_or_backoff(label_change, 0.5) == 0
    assert queue.where("default/p") == "unschedulable"
    assert queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, 0.5) == 1
    assert queue.where("default/p") == "backoff"  # backoff of 1 s from t=0 not over
    assert queue.flush_backoff_completed(0.9) == 0
    assert queue.flush_backoff_completed(1.0) == 1
    assert queue.where("default/p") == "active"
    pinfo = queue.pop()
    assert pinfo.attempts == 2


def test_an_event_after_the_backoff_goes_straight_to_active():
    queue = new_queue()
    queue.add(make_pod("p"), 0.0)
    fail(queue, 0.0, "TaintToleration")
    assert queue.move_all_to_active_or_backoff(NODE_ADD, 5.0) == 1
    assert queue.where("default/p") == "active"


def test_a_pod_rejected_by_no_plugin_goes_to_backoff():
    """An Error (no rejecting plugin) is retried after the backoff, not parked."""
    queue = new_queue()
    queue.add(make_pod("p"), 0.0)
    fail(queue, 10.0)
    assert queue.where("default/p") == "backoff"
    assert queue.next_backoff_expiry() == 11.0
    assert queue.flush_backoff_completed(11.0) == 1


def test_move_request_during_the_cycle_sends_the_failed_pod_to_backoff():
    """The moveRequestCycle rule: an event of interest while the pod was in flight."""
    queue = new_queue()
    queue.add(make_pod("p"), 0.0)
    pinfo = queue.pop()
    cycle = queue.scheduling_cycle
    queue.move_all_to_active_or_backoff(NODE_ADD, 0.2)  # nothing to move, but recorded
    pinfo.unschedulable_plugins = frozenset({"NodeResourcesFit"})
    queue.add_unschedulable_if_not_present(pinfo, cycle, 0.3)
    assert queue.where("default/p") == "backoff"
    # Without a move request, the next failure parks it.
    queue.flush_backoff_completed(100.0)
    fail(queue, 100.0, "NodeResourcesFit")
    assert queue.where("default/p") == "unschedulable"


def test_events_of_interest_and_move_requests():
    """An event some plugin registered (NodeName: any node update) but not the one that
    rejected the pod moves nothing, yet counts as a move request; an event no plugin
    registered is ignored altogether (``isEventOfInterest``)."""
    queue = new_queue()
    queue.add(make_pod("p"), 0.0)
    fail(queue, 0.0, "NodeResourcesFit")
    condition = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_CONDITION)
    assert queue.is_event_of_interest(condition)
    assert queue.move_all_to_active_or_backoff(condition, 50.0) == 0
    assert queue.where("default/p") == "unschedulable"
    assert queue.move_request_cycle == queue.scheduling_cycle
    nobody = ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL)
    assert not queue.is_event_of_interest(nobody)
    queue.move_request_cycle = -1
    assert queue.move_all_to_active_or_backoff(nobody, 50.0) == 0
    assert queue.move_request_cycle == -1


def test_unschedulable_pods_are_flushed_after_five_minutes():
    """``flushUnschedulablePodsLeftover``: more than ``podMaxInUnschedulablePodsDuration``."""
    queue = new_queue()
    queue.add(make_pod("p"), 0.0)
    fail(queue, 10.0, "NodeAffinity")
    assert queue.flush_unschedulable_leftover(310.0) == 0
    assert queue.flush_unschedulable_leftover(310.5) == 1
    assert queue.where("default/p") == "active"


def test_updates_of_an_unschedulable_pod():
    """A status-only update keeps it parked; a label change moves it."""
    queue = new_queue()
    pod = make_pod("p", labels={"v": "1"})
    queue.add(pod, 0.0)
    fail(queue, 0.0, "NodeAffinity")
    status_only = deep_copy(pod)
    status_only.status.message = "still pending"
    status_only.metadata.resource_version = "9"
    assert not is_pod_updated(pod, status_only)
    queue.update(pod, status_only, 0.5)
    assert queue.where("default/p") == "unschedulable"
    relabelled = deep_copy(status_only)
    relabelled.metadata.labels = {"v": "2"}
    queue.update(status_only, relabelled, 0.5)
    assert queue.where("default/p") == "backoff"
    assert queue.get("default/p").pod.metadata.labels == {"v": "2"}


def test_an_update_of_an_in_flight_pod_queues_it_again():
    """Upstream (without queueing hints) puts a pod that is in no sub-queue into activeQ;
    the later failure then finds it already queued."""
    queue = new_queue()
    pod = make_pod("p", labels={"v": "1"})
    queue.add(pod, 0.0)
    pinfo = queue.pop()
    newer = deep_copy(pod)
    newer.metadata.labels = {"v": "2"}
    queue.update(pod, newer, 0.1)
    assert queue.where("default/p") == "active"
    assert not queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle, 0.2)
    assert not queue.in_flight("default/p")


def test_delete_removes_the_pod_and_its_nomination():
    queue = new_queue()
    pod = make_pod("p", nominated="n1")
    queue.add(pod, 0.0)
    assert [p.metadata.name for p in queue.nominated_pods_for_node("n1")] == ["p"]
    fail(queue, 0.0, "NodeResourcesFit")
    queue.delete(pod)
    assert queue.where("default/p") == "" and queue.nominated_pods_for_node("n1") == []
    queue.check_invariants()


def test_assigned_pod_added_moves_pods_with_a_matching_affinity_term_or_spread():
    """``AssignedPodAdded`` -> ``getUnschedulablePodsWithCrossTopologyTerm``."""
    queue = new_queue()
    queue.add(make_pod("wants-db", affinity=pod_affinity({"app": "db"})), 0.0)
    queue.add(make_pod("spread"), 0.0)
    queue.add(make_pod("big", cpu="8"), 0.0)
    fail(queue, 0.0, "InterPodAffinity")
    fail(queue, 0.0, "PodTopologySpread")
    fail(queue, 0.0, "NodeResourcesFit")
    moved = queue.assigned_pod_added(make_pod("db", labels={"app": "db"}, node_name="n1"), 20.0)
    assert moved == 2
    assert queue.where("default/wants-db") == "active" and queue.where("default/spread") == "active"
    assert queue.where("default/big") == "unschedulable"
    # A pod of another namespace with the right label does not help "spread".
    fail(queue, 20.0, "PodTopologySpread")
    assert queue.assigned_pod_added(make_pod("x", namespace="other", node_name="n1"), 40.0) == 0


def test_node_update_events_name_what_changed():
    old = make_node("n", labels={"a": "1"})
    relabelled = make_node("n", labels={"a": "2"})
    tainted = make_node("n", labels={"a": "1"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    cordoned = make_node("n", labels={"a": "1"}, unschedulable=True)
    bigger = make_node("n", labels={"a": "1"}, cpu="8")
    assert node_update_event(old, relabelled).action == ActionType.UPDATE_NODE_LABEL
    assert node_update_event(old, tainted).action == ActionType.UPDATE_NODE_TAINT
    assert node_update_event(old, cordoned).action == ActionType.UPDATE_NODE_TAINT
    assert node_update_event(old, bigger).action == ActionType.UPDATE_NODE_ALLOCATABLE
    assert node_update_event(old, make_node("n", labels={"a": "1"})) is None


def test_nominator_override_clear_and_keep():
    """``AddNominatedPod`` / ``UpdateNominatedPod``."""
    queue = new_queue()
    pod = make_pod("p")
    queue.add(pod, 0.0)
    queue.add_nominated_pod(pod, NominatingInfo("n1", override=True))
    assert queue.nominated_node("default/p") == "n1"
    # An update whose status does not name a node yet keeps the in-memory nomination.
    queue.update_nominated_pod(pod, deep_copy(pod))
    assert queue.nominated_node("default/p") == "n1"
    queue.add_nominated_pod(pod, None)  # ModeNoop: the pod's status (none) decides
    assert queue.nominated_node("default/p") == ""
    queue.add_nominated_pod(pod, NominatingInfo("n2", override=True))
    queue.add_nominated_pod(pod, NominatingInfo("", override=True))  # cleared
    assert queue.nominated_pods_for_node("n2") == []
    queue.check_invariants()


def test_the_queue_is_bounded():
    queue = new_queue(capacity=2)
    queue.add(make_pod("a"), 0.0)
    queue.add(make_pod("b"), 0.0)
    with pytest.raises(QueueFull):
        queue.add(make_pod("c"), 0.0)
    queue.add(make_pod("a"), 1.0)  # known pods are fine


def test_random_operations_keep_the_invariants():
    """Seeded random walks over the queue's operations against its invariants and a
    simple oracle: every pod added and not deleted is somewhere."""
    rng = random.Random(42)
    events = [NODE_ADD, ASSIGNED_POD_DELETE, ASSIGNED_POD_ADD, ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)]
    plugins = ["NodeResourcesFit", "TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity"]
    for _walk in range(30):
        queue = new_queue()
        alive: set[str] = set()
        now = 0.0
        in_flight = []
        for _step in range(200):
            now += rng.random()
            action = rng.randrange(7)
            name = f"p{rng.randrange(12)}"
            if action == 0:
                queue.add(make_pod(name, priority=rng.randrange(3)), now)
                alive.add(f"default/{name}")
            elif action == 1 and queue.ready():
                in_flight.append((queue.pop(), queue.scheduling_cycle))
            elif action == 2 and in_flight:
                pinfo, cycle = in_flight.pop(rng.randrange(len(in_flight)))
                pinfo.unschedulable_plugins = frozenset(rng.sample(plugins, rng.randrange(3)))
                queue.add_unschedulable_if_not_present(pinfo, cycle, now)
            elif action == 3:
                queue.move_all_to_active_or_backoff(rng.choice(events), now)
            elif action == 4:
                queue.flush_backoff_completed(now)
                queue.flush_unschedulable_leftover(now)
            elif action == 5 and alive:
                key = sorted(alive)[rng.randrange(len(alive))]
                queue.delete(make_pod(key.split("/")[1]))
                alive.discard(key)
                in_flight = [(p, c) for p, c in in_flight if p.key != key]
            queue.check_invariants()
            flying = {p.key for p, _ in in_flight}
            for key in alive - flying:
                assert queue.where(key) in ("active", "backoff", "unschedulable", "in-flight"), key

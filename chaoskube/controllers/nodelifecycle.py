"""The node lifecycle controller and the NoExecute taint manager, as kube-controller-manager's.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` — ``monitorNodeHealth``,
  ``tryUpdateNodeHealth`` (the ``nodeHealthMap`` of locally observed probe times),
  ``processTaintBaseEviction``, ``doNoExecuteTaintingPass``, ``doNoScheduleTaintingPass``,
  ``processPod``, ``handleDisruption``, ``ComputeZoneState``, ``ReducedQPSFunc`` /
  ``HealthyQPSFunc``, ``classifyNodes``, ``markNodeForTainting`` / ``markNodeAsReachable``;
- ``pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go`` — the per-zone
  ``RateLimitedTimedQueue`` (``NodeEvictionPeriod`` 100 ms, ``EvictionRateLimiterBurst`` 1,
  ``SwapLimiter``) over ``flowcontrol.NewTokenBucketRateLimiter``;
- ``pkg/controller/util/node/controller_utils.go`` — ``MarkPodsNotReady``,
  ``SwapNodeControllerTaint``; ``pkg/controller/controller_utils.go`` —
  ``UpdateTaintBackoff`` (5 steps, 100 ms, jitter 1.0);
- ``pkg/controller/tainteviction/taint_eviction.go`` and ``timed_workers.go`` — the taint
  manager: ``processPodOnNode``, ``getMinTolerationTime``, ``addConditionAndDeletePod``
  (``retries`` 5, 10 ms apart); ``pkg/apis/core/v1/helper/helpers.go``
  ``GetMatchingTolerations`` and ``k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint``;
- ``k8s.io/component-helpers/node/topology`` ``GetZoneKey``.

Contract (the controller shape of STYLE.md). :class:`NodeLifecycleController` is built with
``(process, client, informers, config)``; its informer handlers only enqueue keys. ``await
run()`` waits for the nodes, leases (``kube-node-lease``) and pods informers to sync, then
runs: the health monitor every ``config.node_monitor_period_s``; the NoExecute tainting pass
every 100 ms while a zone queue holds a node; 8 NoSchedule workers and 4 pod workers; and,
as kube-controller-manager does without the ``SeparateTaintEvictionController`` gate, its
own :class:`TaintEvictionController` (``taint_eviction=False`` leaves that to a separate
instance). Decisions are pure functions of their inputs and ``now`` (:func:`node_health_step`,
:func:`compute_zone_state`, :func:`plan_disruption`, :func:`get_matching_tolerations`, ...).

Guarantees, as upstream's:

- a node's health is judged on *local* observation times: the probe time moves when the
  controller sees its Ready condition's ``lastHeartbeatTime`` or its Lease's ``renewTime``
  change, never on the times written in them by the kubelet's clock;
- a node not heard from for ``node_monitor_grace_period_s`` (``node_startup_grace_period_s``
  before its first Ready condition) gets Ready, MemoryPressure, DiskPressure and PIDPressure
  ``Unknown`` ("Kubelet stopped posting node status.") and its pods' Ready condition False;
- NoSchedule taints follow the node's conditions at once; the NoExecute taints
  ``node.kubernetes.io/unreachable`` (Ready Unknown) / ``not-ready`` (Ready False) are added
  through each zone's token bucket (``node_eviction_rate`` per second; a PartialDisruption
  zone gets ``secondary_node_eviction_rate`` above ``large_cluster_size_threshold`` nodes,
  else 0) and removed when the node is Ready again;
- when every zone is in FullDisruption, no NoExecute taint is added and every node loses
  them ("Entering master disruption mode"); on leaving it, every node's probe time is reset;
- the taint manager deletes a pod on a node with a NoExecute taint it does not tolerate at
  once, and one it tolerates for ``tolerationSeconds`` after that long (the shortest of the
  matching tolerations); a pod tolerating forever stays; a scheduled deletion is cancelled
  when the taints go.

Journal (sparse): ``node-health`` {node, ready, reason} when the Ready status the
controller sees for a node changes; ``node-taint`` {node, taint, effect, action:
added|removed}; ``zone-state`` {zone, state}; ``node-disruption-mode`` {event:
enter|exit}; ``taint-eviction`` {pod, node, after_s} when the taint manager deletes a pod.

Differences from upstream, on purpose: a taint swap is one update of the Node guarded by its
resourceVersion (upstream sends two strategic-merge patches, one to add and one to remove);
a taint already present with the same key and effect is kept as it is (upstream rewrites
its ``timeAdded``); the first attempt of a taint write uses the informer's copy instead of a
``resourceVersion=0`` read; when entering full disruption the zone limiters are stopped
*before* the taints are removed (upstream removes first, leaving a short race with the
tainting pass); nodes' health records are dropped when the node is deleted; zone states are
compared after dropping every zone without nodes (upstream's map walk may stop early);
DaemonSet pods and node label reconciliation are not modelled; Events: NodeNotReady on the
Node (Ready left True) and on each pod marked NotReady, TaintManagerEviction before a taint
eviction (``tainteviction/taint_eviction.go``); the taint manager
processes its updates with one worker (its work is synchronous) and deletes with 8.

Non-guarantees: like upstream, nothing here is fenced: two controller-managers that both
believe they lead (see :mod:`chaoskube.client.leaderelection`) both taint and delete.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import trio

from chaoskube.api.objects import Node, NodeCondition, ObjectReference, Pod, PodCondition, Taint, Toleration, deep_copy
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.api.workloads import toleration_tolerates_taint
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformer, SharedInformerFactory
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import QueueShutDown, RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.sim.process import Process

__all__ = [
    "DisruptionPlan",
    "HealthStep",
    "NodeHealth",
    "NodeLifecycleController",
    "RateLimitedTimedQueue",
    "RetryLater",
    "TaintEvictionController",
    "TimedValue",
    "TokenBucket",
    "add_node_name_index",
    "classify_nodes",
    "compute_zone_state",
    "condition_taints",
    "get_matching_tolerations",
    "has_taint",
    "limiter_qps",
    "min_toleration_time_s",
    "node_health_step",
    "plan_disruption",
    "pod_not_ready",
    "swap_taints",
    "taint_set_diff",
    "tolerates",
    "with_pod_condition",
    "zone_key",
    "zone_name",
]

NODE_LEASE_NAMESPACE = "kube-node-lease"
NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
#: ``NotReadyTaintTemplate`` / ``UnreachableTaintTemplate``.
NOT_READY_TAINT = Taint(key=TAINT_NOT_READY, effect=NO_EXECUTE)
UNREACHABLE_TAINT = Taint(key=TAINT_UNREACHABLE, effect=NO_EXECUTE)
#: ``nodeConditionToTaintKeyStatusMap``: condition type -> {status: taint key}.
NODE_CONDITION_TO_TAINT = {
    "Ready": {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE},
    "MemoryPressure": {"True": TAINT_MEMORY_PRESSURE},
    "DiskPressure": {"True": TAINT_DISK_PRESSURE},
    "NetworkUnavailable": {"True": TAINT_NETWORK_UNAVAILABLE},
    "PIDPressure": {"True": TAINT_PID_PRESSURE},
}
#: ``taintKeyToNodeConditionMap``.
TAINT_KEY_TO_CONDITION = {
    TAINT_NOT_READY: "Ready",
    TAINT_UNREACHABLE: "Ready",
    TAINT_NETWORK_UNAVAILABLE: "NetworkUnavailable",
    TAINT_MEMORY_PRESSURE: "MemoryPressure",
    TAINT_DISK_PRESSURE: "DiskPressure",
    TAINT_PID_PRESSURE: "PIDPressure",
}
#: The conditions ``tryUpdateNodeHealth`` sets Unknown (not NetworkUnavailable).
UNKNOWN_ON_SILENCE = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")

ZONE_INITIAL = "Initial"
ZONE_NORMAL = "Normal"
ZONE_FULL_DISRUPTION = "FullDisruption"
ZONE_PARTIAL_DISRUPTION = "PartialDisruption"

#: ``labelNodeDisruptionExclusion``.
LABEL_EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
LABEL_REGION_BETA = "failure-domain.beta.kubernetes.io/region"

RETRY_SLEEP_S = 0.02  # retrySleepTime
NODE_HEALTH_UPDATE_RETRY = 5  # scheduler.NodeHealthUpdateRetry
NODE_EVICTION_PERIOD_S = 0.1  # scheduler.NodeEvictionPeriod
EVICTION_RATE_LIMITER_BURST = 1  # scheduler.EvictionRateLimiterBurst
NODE_UPDATE_WORKER_SIZE = 8  # nodeUpdateWorkerSize
POD_UPDATE_WORKER_SIZE = 4  # podUpdateWorkerSize
UPDATE_TAINT_STEPS = 5  # controller.UpdateTaintBackoff
UPDATE_TAINT_DURATION_S = 0.1
TAINT_EVICTION_RETRIES = 5  # tainteviction retries
TAINT_EVICTION_RETRY_S = 0.01
TAINT_EVICTION_WORKERS = 8  # tainteviction.UpdateWorkerSize
NODE_NAME_INDEX = "spec.nodeName"  # nodeNameKeyIndex


# =========================================================================== small helpers
def _condition(conditions: Iterable[NodeCondition], kind: str) -> NodeCondition | None:
    """``GetNodeCondition``."""
    for condition in conditions:
        if condition.type == kind:
            return condition
    return None


def zone_key(node: Node) -> str:
    """``topology.GetZoneKey``: ``region + ":\\x00:" + zone`` from the beta labels, else the
    GA ones; "" when neither is set."""
    labels = node.metadata.labels
    zone = labels[LABEL_ZONE_BETA] if LABEL_ZONE_BETA in labels else labels.get(LABEL_ZONE, "")
    region = labels[LABEL_REGION_BETA] if LABEL_REGION_BETA in labels else labels.get(LABEL_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def zone_name(key: str) -> str:
    """A zone key as the journal shows it: ``region/zone``, or ``zone`` without a region."""
    region, _, zone = key.partition(":\x00:")
    return f"{region}/{zone}" if region else zone


def _node_name_index(pod: Any) -> list[str]:
    node = pod.spec.node_name
    return [node] if node else []


def add_node_name_index(informer: SharedInformer) -> None:
    """The pods informer's ``spec.nodeName`` index, unless a controller sharing it has it."""
    try:
        informer.indexer.add_indexers({NODE_NAME_INDEX: _node_name_index})
    except ValueError:
        pass


def _object_of(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


def _pod_key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _taint_matches(first: Taint, second: Taint) -> bool:
    """``Taint.MatchTaint``: same key and effect."""
    return first.key == second.key and first.effect == second.effect


def has_taint(taints: Iterable[Taint], template: Taint) -> bool:
    """``taintutils.TaintExists``."""
    return any(_taint_matches(taint, template) for taint in taints)


def swap_taints(taints: Sequence[Taint], add: Sequence[Taint], remove: Sequence[Taint]) -> list[Taint] | None:
    """The node's taints after adding ``add`` (kept if one with the same key and effect is
    there) and removing ``remove`` (by key and effect); None when nothing changes."""
    result = [taint for taint in taints if not any(_taint_matches(taint, gone) for gone in remove)]
    for taint in add:
        if not has_taint(result, taint):
            result.append(taint)
    return None if result == list(taints) else result


def condition_taints(node: Node) -> list[Taint]:
    """``doNoScheduleTaintingPass``: the NoSchedule taints the node's conditions (and
    ``spec.unschedulable``) call for."""
    taints = []
    for condition in node.status.conditions:
        key = NODE_CONDITION_TO_TAINT.get(condition.type, {}).get(condition.status)
        if key is not None:
            taints.append(Taint(key=key, effect=NO_SCHEDULE))
    if node.spec.unschedulable:
        taints.append(Taint(key=TAINT_UNSCHEDULABLE, effect=NO_SCHEDULE))
    return taints


def _controller_no_schedule_taints(node: Node) -> list[Taint]:
    """The NoSchedule taints this controller owns on ``node`` (``TaintSetFilter``)."""
    return [t for t in node.spec.taints if t.effect == NO_SCHEDULE and (t.key == TAINT_UNSCHEDULABLE or t.key in TAINT_KEY_TO_CONDITION)]


def taint_set_diff(wanted: Sequence[Taint], existing: Sequence[Taint]) -> tuple[list[Taint], list[Taint]]:
    """``taintutils.TaintSetDiff``: (to add, to remove), matched by key and effect."""
    to_add = [taint for taint in wanted if not has_taint(existing, taint)]
    to_remove = [taint for taint in existing if not has_taint(wanted, taint)]
    return to_add, to_remove


# =========================================================================== tolerations
def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: :func:`chaoskube.api.workloads.toleration_tolerates_taint`."""
    return toleration_tolerates_taint(toleration, taint)


def get_matching_tolerations(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> tuple[bool, list[Toleration]]:
    """``v1helper.GetMatchingTolerations``: (every taint tolerated, the first toleration
    that tolerates each taint)."""
    if not taints:
        return True, []
    used = []
    for taint in taints:
        match = next((toleration for toleration in tolerations if tolerates(toleration, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_time_s(tolerations: Sequence[Toleration]) -> float:
    """``getMinTolerationTime``: the shortest ``tolerationSeconds`` (0 if any is <= 0 or
    there are no tolerations), or -1 when every one tolerates forever."""
    if not tolerations:
        return 0.0
    shortest: int | None = None
    for toleration in tolerations:
        seconds = toleration.toleration_seconds
        if seconds is None:
            continue
        if seconds <= 0:
            return 0.0
        shortest = seconds if shortest is None else min(shortest, seconds)
    return -1.0 if shortest is None else float(shortest)


def _no_execute_taints(taints: Iterable[Taint]) -> list[Taint]:
    return [taint for taint in taints if taint.effect == NO_EXECUTE]


# =========================================================================== node health
@dataclass(frozen=True, slots=True)
class NodeHealth:
    """``nodeHealthData``: local times (this process's clock) of the last observed change,
    the Ready condition last saved and the Lease last seen renewed."""

    probe_timestamp: float
    ready_transition_timestamp: float
    ready: NodeCondition | None = None
    has_lease: bool = False
    lease_renew_time: str | None = None


@dataclass(frozen=True, slots=True)
class HealthStep:
    """What ``tryUpdateNodeHealth`` decided. Store ``health``; when ``status_update`` is
    set, post those conditions and, if that succeeds, store ``health_after_update``."""

    health: NodeHealth
    grace_period_s: float
    observed_ready: NodeCondition
    current_ready: NodeCondition | None
    status_update: list[NodeCondition] | None = None
    health_after_update: NodeHealth | None = None


def _renewed(saved: NodeHealth | None, lease_renew_time: str | None) -> bool:
    """``savedLease == nil || savedLease.Spec.RenewTime.Before(observedLease.Spec.RenewTime)``."""
    if saved is None or not saved.has_lease:
        return True
    if saved.lease_renew_time is None or lease_renew_time is None:
        return False  # MicroTime.Before with a nil side is false
    return parse_timestamp(saved.lease_renew_time) < parse_timestamp(lease_renew_time)


def node_health_step(
    saved: NodeHealth | None,
    node: Node,
    lease: Any | None,
    now: float,
    *,
    grace_period_s: float,
    startup_grace_period_s: float,
) -> HealthStep:
    """``tryUpdateNodeHealth`` without its API call: pure. ``lease`` is the node's Lease in
    ``kube-node-lease`` from the cache (None if absent); ``now`` is the local clock."""
    current = _condition(node.status.conditions, "Ready")
    created_text = node.metadata.creation_timestamp
    created = parse_timestamp(created_text) if created_text else now
    health = saved
    if current is None:
        # The kubelet never posted status: a fake Unknown condition, the startup grace.
        observed = NodeCondition(type="Ready", status="Unknown", last_heartbeat_time=created_text, last_transition_time=created_text)
        grace = startup_grace_period_s
        health = replace(health, ready=None) if health is not None else NodeHealth(created, created)
    else:
        observed = deep_copy(current)
        grace = grace_period_s
    saved_ready = health.ready if health is not None else None
    saved_for_lease = health
    if health is None:
        health = NodeHealth(now, now, deep_copy(current) if current is not None else None)
    elif saved_ready is None and current is not None:
        health = NodeHealth(now, now, deep_copy(current))
    elif saved_ready is not None and current is None:
        health = NodeHealth(now, now, None)
    elif saved_ready is not None and current is not None and saved_ready.last_heartbeat_time != current.last_heartbeat_time:
        transition = now if saved_ready.last_transition_time != current.last_transition_time else health.ready_transition_timestamp
        health = NodeHealth(now, transition, deep_copy(current))
    renew_time = lease.spec.renew_time if lease is not None else None
    if lease is not None and _renewed(saved_for_lease, renew_time):
        health = replace(health, has_lease=True, lease_renew_time=renew_time, probe_timestamp=now)
    if now > health.probe_timestamp + grace:
        conditions = _conditions_unknown(node.status.conditions, created_text, now)
        new_ready = _condition(conditions, "Ready")
        if new_ready != observed:
            after = NodeHealth(health.probe_timestamp, now, new_ready, lease is not None, renew_time)
            return HealthStep(health, grace, observed, new_ready, conditions, after)
    return HealthStep(health, grace, observed, current)


def _conditions_unknown(conditions: Sequence[NodeCondition], created: str | None, now: float) -> list[NodeCondition]:
    """Ready, MemoryPressure, DiskPressure and PIDPressure set Unknown (added with
    "NodeStatusNeverUpdated" when the kubelet never posted them)."""
    result = [deep_copy(condition) for condition in conditions]
    stamp = timestamp(now)
    for kind in UNKNOWN_ON_SILENCE:
        condition = _condition(result, kind)
        if condition is None:
            result.append(NodeCondition(type=kind, status="Unknown", reason="NodeStatusNeverUpdated", message="Kubelet never posted node status.", last_heartbeat_time=created, last_transition_time=stamp))
        elif condition.status != "Unknown":
            condition.status = "Unknown"
            condition.reason = "NodeStatusUnknown"
            condition.message = "Kubelet stopped posting node status."
            condition.last_transition_time = stamp
    return result


# =========================================================================== zones
def compute_zone_state(ready_statuses: Sequence[str | None], unhealthy_zone_threshold: float) -> tuple[int, str]:
    """``ComputeZoneState``: (not-ready nodes, state). No Ready node -> FullDisruption; more
    than 2 not ready and a share >= the threshold -> PartialDisruption; else Normal. A
    missing Ready condition (None) counts as not ready."""
    ready = sum(1 for status in ready_statuses if status == "True")
    not_ready = len(ready_statuses) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, ZONE_FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_zone_threshold:
        return not_ready, ZONE_PARTIAL_DISRUPTION
    return not_ready, ZONE_NORMAL


def limiter_qps(state: str, zone_size: int, config: ControllerManagerConfig) -> float | None:
    """``setLimiterInZone``: the zone's tainting rate in ``state`` (None: leave it)."""
    if state == ZONE_NORMAL:
        return config.node_eviction_rate
    if state == ZONE_PARTIAL_DISRUPTION:  # ReducedQPSFunc
        return config.secondary_node_eviction_rate if zone_size > config.large_cluster_size_threshold else 0.0
    if state == ZONE_FULL_DISRUPTION:  # HealthyQPSFunc
        return config.node_eviction_rate
    return None


@dataclass(frozen=True, slots=True)
class DisruptionPlan:
    """``handleDisruption``'s decision. ``mode``: "enter" (every zone fully disrupted:
    stop every limiter, remove every NoExecute taint), "exit" (reset every node's probe
    time, set limiters by state), "zones" (per-zone changes) or "none"."""

    mode: str
    states: dict[str, str]
    limiters: dict[str, float]
    changes: list[tuple[str, str]]


def plan_disruption(previous: dict[str, str], zone_ready: dict[str, list[str | None]], config: ControllerManagerConfig) -> DisruptionPlan:
    """``handleDisruption``: pure. ``previous`` is the zone states kept by the controller,
    ``zone_ready`` the Ready status of each zone's (non-excluded) nodes in this pass."""
    new_states = {zone: compute_zone_state(zone_ready[zone], config.unhealthy_zone_threshold)[1] for zone in sorted(zone_ready)}
    all_are_full = all(state == ZONE_FULL_DISRUPTION for state in new_states.values())
    states = {zone: previous.get(zone, ZONE_INITIAL) for zone in sorted(zone_ready)}  # zones without nodes are dropped
    all_were_full = all(state == ZONE_FULL_DISRUPTION for state in states.values())
    if all_are_full and all_were_full:
        return DisruptionPlan("none", states, {}, [])
    if all_are_full:
        changes = [(zone, ZONE_FULL_DISRUPTION) for zone in states if states[zone] != ZONE_FULL_DISRUPTION]
        return DisruptionPlan("enter", {zone: ZONE_FULL_DISRUPTION for zone in states}, {zone: 0.0 for zone in states}, changes)
    limiters: dict[str, float] = {}
    changes = []
    for zone in states:
        state = new_states[zone]
        if states[zone] == state and not all_were_full:
            continue
        qps = limiter_qps(state, len(zone_ready[zone]), config)
        if qps is not None:
            limiters[zone] = qps
        if states[zone] != state:
            changes.append((zone, state))
    return DisruptionPlan("exit" if all_were_full else "zones", dict(new_states), limiters, changes)


# =========================================================================== rate-limited queue
class TokenBucket:
    """``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` (golang.org/x/time/rate): starts
    full, refills at ``qps`` up to ``burst``; ``try_accept`` takes a token if there is one.
    ``qps`` <= 0 is ``NewFakeNeverRateLimiter``: it never accepts. Pure: ``now`` is passed."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        assert burst >= 1, "a bucket holds at least one token"
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst) if qps > 0 else 0.0
        self._last = now

    def _advance(self, now: float) -> None:
        if now > self._last and self.qps > 0:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = max(self._last, now)

    def try_accept(self, now: float) -> bool:
        if self.qps <= 0:
            return False
        self._advance(now)
        if self._tokens >= 1.0 - 1e-9:  # 0.1 qps * 10 s is one token despite rounding
            self._tokens -= 1.0
            return True
        return False


@dataclass(frozen=True, slots=True)
class TimedValue:
    """``scheduler.TimedValue``."""

    value: str
    uid: str
    added_at: float
    process_at: float


class RateLimitedTimedQueue:
    """``scheduler.RateLimitedTimedQueue``: a unique queue ordered by ``process_at`` behind a
    :class:`TokenBucket`. A value stays in the uniqueness set after it was processed
    (``RemoveFromQueue``) until :meth:`remove`, so it is processed once until then. Pure.
    Bounded by the nodes of its zone (one entry per node name)."""

    def __init__(self, qps: float, now: float) -> None:
        self.limiter = TokenBucket(qps, EVICTION_RATE_LIMITER_BURST, now)
        self._queue: list[tuple[float, int, TimedValue]] = []
        self._members: dict[str, None] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, value: str, uid: str, now: float) -> bool:
        """``Add``: False if the value was added before and not removed."""
        if value in self._members:
            return False
        self._members[value] = None
        self._push(TimedValue(value, uid, now, now))
        return True

    def _push(self, item: TimedValue) -> None:
        bisect.insort(self._queue, (item.process_at, next(self._sequence), item))

    def _drop(self, value: str) -> bool:
        for index, (_, _, item) in enumerate(self._queue):
            if item.value == value:
                del self._queue[index]
                return True
        return False

    def remove(self, value: str) -> bool:
        """``Remove``: forget the value, so it can be added again."""
        if value not in self._members:
            return False
        del self._members[value]
        self._drop(value)
        return True

    def head(self) -> TimedValue | None:
        return self._queue[0][2] if self._queue else None

    def next_due(self, now: float) -> TimedValue | None:
        """One step of ``Try``: the head, if the limiter grants a token (taken first, as
        upstream does) and the head is due; else None (stop for this pass)."""
        head = self.head()
        if head is None or not self.limiter.try_accept(now):
            return None
        return head if now >= head.process_at else None

    def finish(self, item: TimedValue, ok: bool, wait_s: float, now: float) -> None:
        """The rest of the ``Try`` step: done -> out of the queue (still a member); else
        retry after ``wait_s`` (+1 ns, as upstream)."""
        if not self._drop(item.value):
            return  # removed meanwhile
        if not ok:
            self._push(replace(item, process_at=now + wait_s + 1e-9))

    def swap_limiter(self, qps: float, now: float) -> None:
        """``SwapLimiter``: a new full bucket at ``qps`` (drained if the old one was empty),
        or a never-limiter for ``qps`` <= 0; nothing when the rate is the same."""
        if self.limiter.qps == qps:
            return
        old = self.limiter
        self.limiter = TokenBucket(qps, EVICTION_RATE_LIMITER_BURST, now)
        if qps > 0 and not old.try_accept(now):
            self.limiter.try_accept(now)


def classify_nodes(known: dict[str, Node], zone_states: dict[str, str], nodes: Sequence[Node]) -> tuple[list[Node], list[str], list[Node]]:
    """``classifyNodes``: (added, deleted names, known nodes of a zone without a state)."""
    added, new_zones = [], []
    for node in nodes:
        if node.metadata.name not in known:
            added.append(node)
        elif zone_key(node) not in zone_states:
            new_zones.append(node)
    present = {node.metadata.name for node in nodes}
    deleted = sorted(name for name in known if name not in present)
    return added, deleted, new_zones


# =========================================================================== pods
def _pod_ready_condition(pod: Pod) -> PodCondition | None:
    return next((condition for condition in pod.status.conditions if condition.type == "Ready"), None)


def pod_not_ready(pod: Pod, now: float) -> Pod | None:
    """``MarkPodsNotReady`` for one pod: a copy whose Ready condition is False (its
    transition time now), or None when it has no Ready condition or it is False already."""
    condition = _pod_ready_condition(pod)
    if condition is None or condition.status == "False":
        return None
    updated = deep_copy(pod)
    ready = _pod_ready_condition(updated)
    assert ready is not None
    ready.status = "False"
    ready.last_transition_time = timestamp(now)
    return updated


def with_pod_condition(pod: Pod, condition: PodCondition, now: float) -> Pod | None:
    """``UpdatePodCondition`` on a copy: the condition set (its transition time kept when
    the status does not change); None when nothing changes."""
    updated = deep_copy(pod)
    conditions = updated.status.conditions
    for index, existing in enumerate(conditions):
        if existing.type == condition.type:
            transition = existing.last_transition_time if existing.status == condition.status else timestamp(now)
            new = _replace_struct(condition, last_transition_time=transition)
            if new == existing:
                return None
            conditions[index] = new
            return updated
    conditions.append(_replace_struct(condition, last_transition_time=timestamp(now)))
    return updated


def _replace_struct(obj: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(obj, **changes)


class RetryLater(Exception):
    """A work item that failed in a way worth retrying (a pod's node missing from the cache,
    pods that could not be marked NotReady): requeued with rate limiting."""


async def _work(queue: RateLimitingQueue, sync: Any, retry: bool) -> None:
    """A worker: get, sync, forget on success; on :class:`ApiError` or :class:`RetryLater`
    requeue with rate limiting when ``retry`` (else drop it, as upstream's node workers
    do: "TODO: Add nodeName back to the queue"); always done."""
    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        try:
            await sync(key)
        except (ApiError, RetryLater):
            if retry:
                queue.add_rate_limited(key)
        else:
            queue.forget(key)
        finally:
            queue.done(key)


# =========================================================================== the controller
class NodeLifecycleController:
    """``nodelifecycle.Controller`` (see the module docstring)."""

    def __init__(
        self,
        process: Process,
        client: ApiClient,
        informers: SharedInformerFactory,
        config: ControllerManagerConfig,
        *,
        taint_eviction: bool = True,
    ) -> None:
        self.process = process
        self.client = client
        self.recorder = EventRecorder(client, "node-controller")
        self.config = config
        self.nodes = informers.informer("nodes")
        self.leases = informers.informer("leases", namespace=NODE_LEASE_NAMESPACE)
        self.pods = informers.informer("pods")
        add_node_name_index(self.pods)
        self.node_update_queue = RateLimitingQueue(process)
        self.pod_update_queue = RateLimitingQueue(process)
        self.known_nodes: dict[str, Node] = {}
        self.health: dict[str, NodeHealth] = {}
        self.zone_states: dict[str, str] = {}
        self.zone_tainters: dict[str, RateLimitedTimedQueue] = {}
        self.nodes_to_retry: dict[str, None] = {}
        self._seen_ready: dict[str, str] = {}
        self._tainting = trio.Event()
        self._random = process.random("nodelifecycle")
        self.taint_manager = TaintEvictionController(process, client, informers, config) if taint_eviction else None
        self.pods.add_event_handler(
            on_add=lambda pod: self._pod_updated(None, pod),
            on_update=self._pod_updated,
        )
        self.nodes.add_event_handler(
            on_add=lambda node: self.node_update_queue.add(node.metadata.name),
            on_update=lambda old, new: self.node_update_queue.add(new.metadata.name),
            on_delete=lambda node: self.nodes_to_retry.pop(_object_of(node).metadata.name, None),
        )

    def _pod_updated(self, old: Pod | None, new: Pod) -> None:
        """``podUpdated``: a pod newly bound to a node."""
        node = new.spec.node_name
        if node and (old is None or old.spec.node_name != node):
            self.pod_update_queue.add((new.metadata.namespace, new.metadata.name))

    # -- running ----------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.leases, self.nodes, self.pods):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            if self.taint_manager is not None:
                nursery.start_soon(self.taint_manager.run)
            for _ in range(NODE_UPDATE_WORKER_SIZE):
                nursery.start_soon(_work, self.node_update_queue, self._no_schedule_tainting_pass, False)
            for _ in range(POD_UPDATE_WORKER_SIZE):
                nursery.start_soon(_work, self.pod_update_queue, self._process_pod, True)
            nursery.start_soon(self._tainting_loop)
            while True:  # wait.UntilWithContext: the period runs after each pass
                await self.monitor_node_health()
                await self.process.sleep(self.config.node_monitor_period_s)

    def statistics(self) -> dict[str, Any]:
        return {
            "nodes": len(self.known_nodes),
            "zones": dict(sorted((zone_name(zone), state) for zone, state in self.zone_states.items())),
            "tainting": {zone_name(zone): len(queue) for zone, queue in sorted(self.zone_tainters.items())},
        }

    # -- NoSchedule taints --------------------------------------------------------------------
    async def _no_schedule_tainting_pass(self, name: str) -> None:
        """``doNoScheduleTaintingPass``."""
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return
        to_add, to_remove = taint_set_diff(condition_taints(node), _controller_no_schedule_taints(node))
        if to_add or to_remove:
            await self._swap_taints(node, to_add, to_remove)

    # -- pods ---------------------------------------------------------------------------------
    async def _process_pod(self, key: tuple[str, str]) -> None:
        """``processPod``: a pod bound to a node that is not Ready is marked NotReady."""
        namespace, name = key
        pod = self.pods.indexer.get_by_key(f"{namespace}/{name}")
        if pod is None:
            return
        node_name = pod.spec.node_name
        health = self.health.get(node_name)
        if health is None or health.ready is None:
            return
        if self.nodes.indexer.get_by_key(node_name) is None:
            raise RetryLater(f"node {node_name} of pod {namespace}/{name} is not in the cache")
        if health.ready.status != "True":
            if not await self._mark_pods_not_ready([pod], node_name):
                raise RetryLater(f"unable to mark pod {namespace}/{name} NotReady on node {node_name}")

    async def _mark_pods_not_ready(self, pods: Sequence[Pod], node_name: str) -> bool:
        """``MarkPodsNotReady``: True when every pod that needed it was updated."""
        ok = True
        for pod in pods:
            if pod.spec.node_name != node_name:
                continue
            updated = pod_not_ready(pod, self.process.now())
            if updated is None:
                continue
            try:
                await self.client.update_status(updated)
            except ApiError as error:
                if error.code != 404:
                    ok = False
            else:
                # util/node/controller_utils.go (MarkPodsNotReady)
                self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
        return ok

    def _pods_on(self, node_name: str) -> list[Pod]:
        return self.pods.indexer.by_index(NODE_NAME_INDEX, node_name)

    # -- health -------------------------------------------------------------------------------
    async def monitor_node_health(self) -> None:
        """``monitorNodeHealth``: one pass over every node in the cache."""
        nodes = self.nodes.indexer.list()
        added, deleted, new_zones = classify_nodes(self.known_nodes, self.zone_states, nodes)
        for node in new_zones:
            self._add_zone(node)
        for node in added:
            self.known_nodes[node.metadata.name] = node
            self._add_zone(node)
            await self._mark_node_as_reachable(node)
        for name in deleted:
            del self.known_nodes[name]
            self.health.pop(name, None)
            self._seen_ready.pop(name, None)
        ready: dict[str, str | None] = {}
        limiter = trio.CapacityLimiter(NODE_UPDATE_WORKER_SIZE)  # ParallelizeUntil
        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(self._monitor_node, node, ready, limiter)
        zone_ready: dict[str, list[str | None]] = {}
        for node in nodes:
            name = node.metadata.name
            if name in ready and LABEL_EXCLUDE_DISRUPTION not in node.metadata.labels:
                zone_ready.setdefault(zone_key(node), []).append(ready[name])
        await self._handle_disruption(zone_ready, nodes)

    def _add_zone(self, node: Node) -> None:
        """``addPodEvictorForNewZone``."""
        zone = zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = ZONE_INITIAL
            self.zone_tainters[zone] = RateLimitedTimedQueue(self.config.node_eviction_rate, self.process.now())

    async def _monitor_node(self, node: Node, ready: dict[str, str | None], limiter: trio.CapacityLimiter) -> None:
        async with limiter:
            # The informer's node itself, not a copy (upstream copies it up front): nothing
            # below changes it in place; every write copies it first (_update_node_health,
            # _swap_taints).
            result = await self._update_node_health(node)
            if result is None:
                return  # "Update health of Node from Controller error, Skipping - no pods will be evicted"
            step, node = result
            name = node.metadata.name
            current = step.current_ready
            ready[name] = current.status if current is not None else None
            self._note_ready(name, current)
            if current is not None:
                pods = self._pods_on(name)
                await self._process_taint_based_eviction(node, step.observed_ready)
                observed = step.observed_ready.status
                if (current.status != "True" and observed == "True") or (name in self.nodes_to_retry and observed != "True"):
                    if not await self._mark_pods_not_ready(pods, name):
                        self.nodes_to_retry[name] = None
                        return
            self.nodes_to_retry.pop(name, None)

    async def _update_node_health(self, node: Node) -> tuple[HealthStep, Node] | None:
        """``tryUpdateNodeHealth`` under ``wait.PollImmediate(20 ms, 100 ms)``: a failed
        status update re-reads the node and tries again."""
        name = node.metadata.name
        for attempt in range(NODE_HEALTH_UPDATE_RETRY + 1):
            lease = self.leases.indexer.get_by_key(f"{NODE_LEASE_NAMESPACE}/{name}")
            step = node_health_step(
                self.health.get(name), node, lease, self.process.now(),
                grace_period_s=self.config.node_monitor_grace_period_s, startup_grace_period_s=self.config.node_startup_grace_period_s,
            )
            self.health[name] = step.health
            if step.status_update is None:
                return step, node
            updated = deep_copy(node)
            updated.status.conditions = step.status_update
            try:
                await self.client.update_status(updated)
            except ApiError:
                try:
                    node = await self.client.get("nodes", "", name)
                except ApiError:
                    return None  # "Probably Node was deleted"
                if attempt < NODE_HEALTH_UPDATE_RETRY:
                    await self.process.sleep(RETRY_SLEEP_S)
                continue
            assert step.health_after_update is not None
            self.health[name] = step.health_after_update
            return step, updated
        return None

    def _note_ready(self, name: str, current: NodeCondition | None) -> None:
        status = current.status if current is not None else "None"
        if self._seen_ready.get(name) != status:
            if self._seen_ready.get(name) == "True":
                # monitorNodeHealth: Ready went from True to False/Unknown
                # (util/node/controller_utils.go RecordNodeStatusChange: the reference's uid
                # is the node's name, as upstream writes it)
                reference = ObjectReference(kind="Node", name=name, uid=name)
                self.recorder.event_about(reference, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            self._seen_ready[name] = status
            reason = current.reason if current is not None else ""
            self.process.world.record("node-health", node=name, ready=status, reason=reason)

    # -- NoExecute taints ---------------------------------------------------------------------
    async def _process_taint_based_eviction(self, node: Node, observed: NodeCondition) -> None:
        """``processTaintBaseEviction``."""
        if observed.status == "False":
            if has_taint(node.spec.taints, UNREACHABLE_TAINT):
                await self._swap_taints(node, [NOT_READY_TAINT], [UNREACHABLE_TAINT])
            else:
                self._mark_node_for_tainting(node, "False")
        elif observed.status == "Unknown":
            if has_taint(node.spec.taints, NOT_READY_TAINT):
                await self._swap_taints(node, [UNREACHABLE_TAINT], [NOT_READY_TAINT])
            else:
                self._mark_node_for_tainting(node, "Unknown")
        elif observed.status == "True":
            await self._mark_node_as_reachable(node)

    def _tainter(self, node: Node) -> RateLimitedTimedQueue:
        self._add_zone(node)
        return self.zone_tainters[zone_key(node)]

    def _mark_node_for_tainting(self, node: Node, status: str) -> bool:
        """``markNodeForTainting``."""
        tainter = self._tainter(node)
        name = node.metadata.name
        if status == "False" and not has_taint(node.spec.taints, NOT_READY_TAINT):
            tainter.remove(name)
        if status == "Unknown" and not has_taint(node.spec.taints, UNREACHABLE_TAINT):
            tainter.remove(name)
        added = tainter.add(name, node.metadata.uid, self.process.now())
        if added:
            self._tainting.set()
        return added

    async def _mark_node_as_reachable(self, node: Node) -> bool:
        """``markNodeAsReachable``: remove both NoExecute taints, forget the node in its
        zone's queue. Returns whether it was queued."""
        if has_taint(node.spec.taints, UNREACHABLE_TAINT) or has_taint(node.spec.taints, NOT_READY_TAINT):
            if not await self._swap_taints(node, [], [UNREACHABLE_TAINT, NOT_READY_TAINT]):
                return False
        return self._tainter(node).remove(node.metadata.name)

    async def _tainting_loop(self) -> None:
        """``doNoExecuteTaintingPass`` every 100 ms; idle while every zone queue is empty
        (a pass over empty queues does nothing)."""
        while True:
            if not any(len(queue) for queue in self.zone_tainters.values()):
                self._tainting = trio.Event()
                await self._tainting.wait()
            await self._no_execute_tainting_pass()
            await self.process.sleep(NODE_EVICTION_PERIOD_S)

    async def _no_execute_tainting_pass(self) -> None:
        for zone in sorted(self.zone_tainters):
            tainter = self.zone_tainters[zone]
            while (item := tainter.next_due(self.process.now())) is not None:
                started = self.process.now()
                ok, wait_s = await self._taint_node(item.value)
                tainter.finish(item, ok, wait_s, started)

    async def _taint_node(self, name: str) -> tuple[bool, float]:
        """The ``Try`` function of ``doNoExecuteTaintingPass``: taints mirror Ready."""
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return True, 0.0  # "Node no longer present in nodeLister"
        condition = _condition(node.status.conditions, "Ready")
        if condition is None:
            return False, 0.05
        if condition.status == "False":
            add, opposite = NOT_READY_TAINT, UNREACHABLE_TAINT
        elif condition.status == "Unknown":
            add, opposite = UNREACHABLE_TAINT, NOT_READY_TAINT
        else:
            return True, 0.0  # "Node was in a taint queue, but it's ready now"
        return await self._swap_taints(node, [add], [opposite]), 0.0

    async def _swap_taints(self, node: Node, add: Sequence[Taint], remove: Sequence[Taint]) -> bool:
        """``SwapNodeControllerTaint`` as one resourceVersion-guarded update, retried on
        conflict with a fresh read (``UpdateTaintBackoff``). False on failure."""
        stamp = timestamp(self.process.now())
        add = [_replace_struct(taint, time_added=stamp) for taint in add]
        name = node.metadata.name
        for attempt in range(UPDATE_TAINT_STEPS):
            if attempt:
                await self.process.sleep(UPDATE_TAINT_DURATION_S * (1.0 + self._random.random()))
                try:
                    node = await self.client.get("nodes", "", name)
                except ApiError:
                    return False
            taints = swap_taints(node.spec.taints, add, remove)
            if taints is None:
                return True
            updated = deep_copy(node)
            updated.spec.taints = taints
            try:
                await self.client.update(updated)
            except ApiError as error:
                if error.code == 409 and not error.ambiguous:
                    continue
                return False
            self._record_taints(name, node.spec.taints, taints)
            return True
        return False

    def _record_taints(self, name: str, before: Sequence[Taint], after: Sequence[Taint]) -> None:
        world = self.process.world
        for taint in after:
            if not has_taint(before, taint):
                world.record("node-taint", node=name, taint=taint.key, effect=taint.effect, action="added")
        for taint in before:
            if not has_taint(after, taint):
                world.record("node-taint", node=name, taint=taint.key, effect=taint.effect, action="removed")

    # -- disruption ---------------------------------------------------------------------------
    async def _handle_disruption(self, zone_ready: dict[str, list[str | None]], nodes: Sequence[Node]) -> None:
        """``handleDisruption`` (see :func:`plan_disruption`)."""
        plan = plan_disruption(self.zone_states, zone_ready, self.config)
        now = self.process.now()
        world = self.process.world
        for zone, qps in plan.limiters.items():
            self.zone_tainters[zone].swap_limiter(qps, now)
        for zone, state in plan.changes:
            world.record("zone-state", zone=zone_name(zone), state=state)
        self.zone_states = plan.states
        if plan.mode == "enter":
            world.record("node-disruption-mode", event="enter", reason="Controller detected that all Nodes are not-Ready. Entering master disruption mode")
            for node in nodes:
                await self._mark_node_as_reachable(node)
        elif plan.mode == "exit":
            world.record("node-disruption-mode", event="exit", reason="Controller detected that some Nodes are Ready. Exiting master disruption mode")
            for node in nodes:
                health = self.health.get(node.metadata.name)
                if health is not None:
                    self.health[node.metadata.name] = replace(health, probe_timestamp=now, ready_transition_timestamp=now)


# =========================================================================== taint manager
@dataclass(slots=True)
class _ScheduledEviction:
    """``TimedWorker``: ``running`` once fired (``GetWorkerUnsafe`` then answers None)."""

    created_at: float
    fire_at: float
    node: str
    token: int
    running: bool = False


class TaintEvictionController:
    """``tainteviction.Controller``, the NoExecute taint manager (module docstring)."""

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        self.process = process
        self.client = client
        self.recorder = EventRecorder(client, "taint-eviction-controller")
        self.config = config
        self.pods = informers.informer("pods")
        self.nodes = informers.informer("nodes")
        add_node_name_index(self.pods)
        self.update_queue = RateLimitingQueue(process)
        self.deletion_queue = RateLimitingQueue(process)
        self.tainted_nodes: dict[str, list[Taint]] = {}
        self.scheduled: dict[str, _ScheduledEviction] = {}
        self._tokens = itertools.count(1)
        self.pods.add_event_handler(
            on_add=lambda pod: self.pod_updated(None, pod),
            on_update=self.pod_updated,
            on_delete=lambda pod: self.pod_updated(_object_of(pod), None),
        )
        self.nodes.add_event_handler(
            on_add=lambda node: self.node_updated(None, node),
            on_update=self.node_updated,
            on_delete=lambda node: self.node_updated(_object_of(node), None),
        )

    # -- handlers (enqueue only) ----------------------------------------------------------------
    def pod_updated(self, old: Pod | None, new: Pod | None) -> None:
        """``PodUpdated``: only a change of tolerations or node matters."""
        if old is not None and new is not None and old.spec.tolerations == new.spec.tolerations and old.spec.node_name == new.spec.node_name:
            return
        pod = new if new is not None else old
        assert pod is not None
        self.update_queue.add(("pod", pod.metadata.namespace, pod.metadata.name, pod.spec.node_name))

    def node_updated(self, old: Node | None, new: Node | None) -> None:
        """``NodeUpdated``: only a change of NoExecute taints matters."""
        if old is not None and new is not None and _no_execute_taints(old.spec.taints) == _no_execute_taints(new.spec.taints):
            return
        node = new if new is not None else old
        assert node is not None
        self.update_queue.add(("node", node.metadata.name))

    # -- running ------------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.pods, self.nodes):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_work, self.update_queue, self._handle_update, False)
            for _ in range(TAINT_EVICTION_WORKERS):
                nursery.start_soon(_work, self.deletion_queue, self._delete_pod, False)

    async def _handle_update(self, item: tuple[str, ...]) -> None:
        if item[0] == "node":
            self.handle_node_update(item[1])
        else:
            self.handle_pod_update(item[1], item[2], item[3])

    def handle_node_update(self, name: str) -> None:
        """``handleNodeUpdate``."""
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            self.tainted_nodes.pop(name, None)
            return
        taints = _no_execute_taints(node.spec.taints)
        if taints:
            self.tainted_nodes[name] = taints
        else:
            self.tainted_nodes.pop(name, None)
        pods = self.pods.indexer.by_index(NODE_NAME_INDEX, name)
        if not taints:
            for pod in pods:
                self.cancel(_pod_key(pod))
            return
        now = self.process.now()
        for pod in pods:
            self.process_pod_on_node(_pod_key(pod), name, pod.spec.tolerations, taints, now)

    def handle_pod_update(self, namespace: str, name: str, node_name: str) -> None:
        """``handlePodUpdate``."""
        key = f"{namespace}/{name}"
        pod = self.pods.indexer.get_by_key(key)
        if pod is None:
            self.cancel(key)
            return
        if pod.spec.node_name != node_name or not node_name:
            return
        taints = self.tainted_nodes.get(node_name)
        if taints is None:
            return
        self.process_pod_on_node(key, node_name, pod.spec.tolerations, taints, self.process.now())

    def process_pod_on_node(self, key: str, node_name: str, tolerations: Sequence[Toleration], taints: Sequence[Taint], now: float) -> None:
        """``processPodOnNode``."""
        if not taints:
            self.cancel(key)
        tolerated, used = get_matching_tolerations(taints, tolerations)
        if not tolerated:
            self.cancel(key)
            self._add_work(key, node_name, now, now)
            return
        seconds = min_toleration_time_s(used)
        if seconds < 0:
            self.cancel(key)
            return
        start, trigger = now, now + seconds
        scheduled = self._worker(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + seconds < trigger:
                return
            self.cancel(key)
        self._add_work(key, node_name, start, trigger)

    # -- timed work (timed_workers.go) ----------------------------------------------------------
    def _worker(self, key: str) -> _ScheduledEviction | None:
        """``GetWorkerUnsafe``: None for a work that has fired."""
        entry = self.scheduled.get(key)
        return entry if entry is not None and not entry.running else None

    def _add_work(self, key: str, node_name: str, created_at: float, fire_at: float) -> None:
        """``AddWork``: nothing if a work exists for ``key``; fires after ``fire_at -
        created_at`` (at once when not positive)."""
        if key in self.scheduled:
            return
        entry = _ScheduledEviction(created_at, fire_at, node_name, next(self._tokens))
        self.scheduled[key] = entry
        delay = fire_at - created_at
        if delay <= 0:
            self._start(key, entry)
        else:
            self.process.call_later(delay, self._fire, (key, entry.token))

    def _fire(self, argument: tuple[str, int]) -> None:
        key, token = argument
        entry = self.scheduled.get(key)
        if entry is not None and entry.token == token and not entry.running:
            self._start(key, entry)

    def _start(self, key: str, entry: _ScheduledEviction) -> None:
        entry.running = True
        self.deletion_queue.add((key, entry.token))

    def cancel(self, key: str) -> bool:
        """``CancelWork``: True if a work was waiting (a fired one keeps running)."""
        entry = self.scheduled.pop(key, None)
        return entry is not None and not entry.running

    async def _delete_pod(self, item: tuple[str, int]) -> None:
        """``deletePodHandler``: ``addConditionAndDeletePod``, up to 5 times 10 ms apart."""
        key, token = item
        entry = self.scheduled.get(key)
        if entry is None or entry.token != token:
            return  # the work for this token was dropped meanwhile
        namespace, _, name = key.partition("/")
        try:
            for attempt in range(TAINT_EVICTION_RETRIES):
                if attempt:
                    await self.process.sleep(TAINT_EVICTION_RETRY_S)
                deleted = await self._add_condition_and_delete(namespace, name)
                if deleted:
                    self.process.world.record("taint-eviction", pod=key, node=entry.node, after_s=round(entry.fire_at - entry.created_at, 6))
                if deleted is not False:
                    return
        finally:
            if self.scheduled.get(key) is entry:
                del self.scheduled[key]

    async def _add_condition_and_delete(self, namespace: str, name: str) -> bool | None:
        """``addConditionAndDeletePod``: DisruptionTarget=True, then delete. True when this
        call deleted the pod, None when it was already gone (someone else deleted it: not
        journaled as a taint eviction), False to retry."""
        try:
            pod = await self.client.get("pods", namespace, name)
            assert isinstance(pod, Pod)
            condition = PodCondition(type="DisruptionTarget", status="True", reason="DeletionByTaintManager", message="Taint manager: deleting due to NoExecute taint")
            updated = with_pod_condition(pod, condition, self.process.now())
            # tainteviction/taint_eviction.go (emitPodDeletionEvent), before the delete
            self.recorder.event_about(ObjectReference(kind="Pod", api_version="v1", namespace=namespace, name=name), "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}")
            if updated is not None:
                await self.client.update_status(updated)
            await self.client.delete("pods", namespace, name)
        except ApiError as error:
            return None if error.code == 404 and not error.ambiguous else False
        return True

    def statistics(self) -> dict[str, Any]:
        return {"tainted_nodes": len(self.tainted_nodes), "scheduled": len(self.scheduled)}

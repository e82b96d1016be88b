"""The scheduling queue of kube-scheduler, as a pure state machine.

Upstream: ``pkg/scheduler/backend/queue/scheduling_queue.go`` (formerly
``internal/queue``; ``PriorityQueue``) in its behaviour without queueing hints
(``addUnschedulableWithoutQueueingHint``, the ``moveRequestCycle`` rule,
``podMatchesEvent``), ``nominator.go`` and the PrioritySort plugin
(``queuesort/priority_sort.go``). Defaults from ``SchedulerConfig``
(``apis/config/v1/defaults.go``): backoff 1 s doubling to 10 s, 5 min in unschedulablePods.

Three sub-queues hold every pending pod the scheduler is responsible for, each pod in at
most one of them, or "in flight" (popped, not yet done):

- **activeQ** — ordered by PrioritySort: higher ``spec.priority`` first, then the earlier
  queue timestamp (then insertion order, so ties never depend on hashing).
- **backoffQ** — pods waiting out their backoff: ``initial * 2**(attempts-1)``, capped at
  ``max``, counted from the time the pod was last put back (``calculateBackoffDuration``).
  :meth:`SchedulingQueue.flush_backoff_completed` (every 1 s upstream) moves the ones
  whose backoff ended to activeQ.
- **unschedulablePods** — pods a plugin rejected. A cluster event moves a pod back (to
  backoffQ if it is still backing off, else activeQ) only if one of the plugins that
  rejected it registered a matching event (``EventsToRegister``); a pod rejected by no
  plugin (an Error) moves on any event. :meth:`flush_unschedulable_leftover` (every 30 s
  upstream) moves pods that stayed longer than ``max_in_unschedulable_s``.

The ``moveRequestCycle`` rule: when a move request (any event of interest) arrives while a
pod is being scheduled, that pod goes to backoffQ rather than unschedulablePods when it
fails, because the event may have made it schedulable.

Contract: pure — every method takes ``now`` where time matters; no clock, no randomness;
iteration in insertion order. Bounded: at most ``capacity`` pods are tracked;
:meth:`add` of one more raises :class:`QueueFull` (upstream is unbounded; the bound only
stops a runaway test). The Trio shell (waiting in ``pop``, the flush timers) is in
:mod:`chaoskube.scheduler.scheduler`.

Non-guarantees: no queueing hints (``SchedulerQueueingHints``), no PreEnqueue plugins or
scheduling gates, no ``Activate``; the nominator does not re-check the informer before
nominating (the scheduler removes nominations when a pod is deleted or bound).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.objects import Pod
from chaoskube.scheduler.framework import (
    ASSIGNED_POD_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    NominatingInfo,
    PodInfo,
    pod_key,
    pod_priority,
)

__all__ = [
    "DEFAULT_QUEUE_CAPACITY",
    "QueueFull",
    "QueuedPodInfo",
    "SchedulingQueue",
    "backoff_duration",
    "is_pod_updated",
]

DEFAULT_QUEUE_CAPACITY = 100_000
#: ``PriorityQueue.Run``: backoffQ is flushed every second, unschedulablePods every 30 s.
BACKOFF_FLUSH_PERIOD_S = 1.0
UNSCHEDULABLE_FLUSH_PERIOD_S = 30.0


class QueueFull(Exception):
    """The queue tracks ``capacity`` pods already and the pod is new."""


@dataclass(slots=True)
class QueuedPodInfo:
    """``framework.QueuedPodInfo``."""

    info: PodInfo
    #: When the pod was (last) added to the queue: the PrioritySort tie break and the
    #: start of its backoff and of its time in unschedulablePods.
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    #: The plugins that rejected it in its last attempt (empty after an Error).
    unschedulable_plugins: frozenset[str] = frozenset()

    @property
    def pod(self) -> Pod:
        return self.info.pod

    @property
    def key(self) -> str:
        return self.info.key

    def update(self, pod: Pod) -> None:
        self.info = PodInfo(pod)


def backoff_duration(attempts: int, initial_s: float, max_s: float) -> float:
    """``calculateBackoffDuration``: ``initial`` doubled for every attempt after the
    first, never above ``max``."""
    duration = initial_s
    for _ in range(1, attempts):
        if duration > max_s - duration:
            return max_s
        duration += duration
    return duration


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """``isPodUpdated``: anything changed but status, resourceVersion, generation,
    managedFields and finalizers."""

    def strip(pod: Pod) -> tuple[Any, ...]:
        meta = pod.metadata
        return (meta.name, meta.namespace, meta.uid, meta.labels, meta.annotations, meta.owner_references,
                meta.deletion_timestamp, pod.spec)

    return strip(old) != strip(new)


@dataclass(order=True, slots=True)
class _ActiveEntry:
    negative_priority: int
    timestamp: float
    sequence: int
    key: str = field(compare=False)


class SchedulingQueue:
    """See the module docstring. ``plugin_events`` maps each plugin to the events it
    registered (``Framework.events_to_register``)."""

    def __init__(
        self,
        *,
        initial_backoff_s: float = 1.0,
        max_backoff_s: float = 10.0,
        max_in_unschedulable_s: float = 300.0,
        plugin_events: Mapping[str, tuple[ClusterEvent, ...]] | None = None,
        capacity: int = DEFAULT_QUEUE_CAPACITY,
    ) -> None:
        assert 0 < initial_backoff_s <= max_backoff_s, "backoff must be positive and initial <= max"
        assert max_in_unschedulable_s > 0 and capacity > 0
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_in_unschedulable_s = max_in_unschedulable_s
        self.plugin_events = dict(plugin_events or {})
        self.capacity = capacity
        # activeQ: the infos by key and a heap with stale rows skipped on pop
        self._active: dict[str, QueuedPodInfo] = {}
        self._active_heap: list[_ActiveEntry] = []
        self._active_rows: dict[str, _ActiveEntry] = {}
        # backoffQ: infos by key, heap of (expiry, sequence, key) with stale rows
        self._backoff: dict[str, QueuedPodInfo] = {}
        self._backoff_heap: list[tuple[float, int, str]] = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._sequence = 0
        self.scheduling_cycle = 0
        self.move_request_cycle = -1
        # nominator: pod key -> node; node -> [pod keys] (insertion order); the pods
        self._nominated_node: dict[str, str] = {}
        self._nominated_on: dict[str, list[str]] = {}
        self._nominated_pods: dict[str, Pod] = {}
        self.moves = 0

    # -- bookkeeping ------------------------------------------------------------------------
    def _tracked(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable) + len(self._in_flight)

    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def where(self, key: str) -> str:
        """"active", "backoff", "unschedulable", "in-flight" or "" (not tracked)."""
        for name, table in (("active", self._active), ("backoff", self._backoff), ("unschedulable", self._unschedulable), ("in-flight", self._in_flight)):
            if key in table:
                return name
        return ""

    def get(self, key: str) -> QueuedPodInfo | None:
        for table in (self._active, self._backoff, self._unschedulable, self._in_flight):
            if key in table:
                return table[key]
        return None

    # -- activeQ ------------------------------------------------------------------------------
    def _push_active(self, pinfo: QueuedPodInfo, now: float) -> None:
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = now
        row = _ActiveEntry(-pod_priority(pinfo.pod), pinfo.timestamp, self._next_sequence(), pinfo.key)
        self._active[pinfo.key] = pinfo
        self._active_rows[pinfo.key] = row
        heapq.heappush(self._active_heap, row)

    def _remove_active(self, key: str) -> QueuedPodInfo | None:
        self._active_rows.pop(key, None)  # the heap row becomes stale
        return self._active.pop(key, None)

    def _move_to_active(self, pinfo: QueuedPodInfo, now: float) -> None:
        """``moveToActiveQ``: out of backoffQ and unschedulablePods, into activeQ."""
        self._unschedulable.pop(pinfo.key, None)
        self._backoff.pop(pinfo.key, None)
        self._remove_active(pinfo.key)
        self._push_active(pinfo, now)

    def active_len(self) -> int:
        return len(self._active)

    def ready(self) -> bool:
        return bool(self._active)

    def pop(self) -> QueuedPodInfo | None:
        """``Pop``: the head of activeQ, now in flight; its attempts and the scheduling
        cycle go up by one. None when activeQ is empty (the shell waits)."""
        while self._active_heap:
            row = heapq.heappop(self._active_heap)
            if self._active_rows.get(row.key) is not row:
                continue  # stale
            del self._active_rows[row.key]
            pinfo = self._active.pop(row.key)
            pinfo.attempts += 1
            self.scheduling_cycle += 1
            self._in_flight[pinfo.key] = pinfo
            return pinfo
        return None

    def done(self, key: str) -> None:
        """``Done``: the pod is no longer in flight (scheduled, requeued or dropped)."""
        self._in_flight.pop(key, None)

    def in_flight(self, key: str) -> bool:
        return key in self._in_flight

    # -- backoffQ -----------------------------------------------------------------------------
    def backoff_expiry(self, pinfo: QueuedPodInfo) -> float:
        """``getBackoffTime``."""
        return pinfo.timestamp + backoff_duration(pinfo.attempts, self.initial_backoff_s, self.max_backoff_s)

    def is_backing_off(self, pinfo: QueuedPodInfo, now: float) -> bool:
        return self.backoff_expiry(pinfo) > now

    def _push_backoff(self, pinfo: QueuedPodInfo) -> None:
        self._unschedulable.pop(pinfo.key, None)
        self._remove_active(pinfo.key)
        self._backoff[pinfo.key] = pinfo
        heapq.heappush(self._backoff_heap, (self.backoff_expiry(pinfo), self._next_sequence(), pinfo.key))

    def flush_backoff_completed(self, now: float) -> int:
        """``flushBackoffQCompleted``: every pod whose backoff ended goes to activeQ, in
        backoff-expiry order. Returns how many moved."""
        moved = 0
        heap = self._backoff_heap
        while heap:
            expiry, _, key = heap[0]
            pinfo = self._backoff.get(key)
            if pinfo is None or self.backoff_expiry(pinfo) != expiry:
                heapq.heappop(heap)  # stale row
                continue
            if expiry > now:
                break
            heapq.heappop(heap)
            self._move_to_active(pinfo, now)
            moved += 1
        return moved

    def next_backoff_expiry(self) -> float | None:
        heap = self._backoff_heap
        while heap:
            expiry, _, key = heap[0]
            pinfo = self._backoff.get(key)
            if pinfo is not None and self.backoff_expiry(pinfo) == expiry:
                return expiry
            heapq.heappop(heap)
        return None

    # -- adding, updating, deleting ------------------------------------------------------------
    def add(self, pod: Pod, now: float) -> None:
        """``Add``: a new pending pod goes to activeQ (and its nomination, if its status
        has one, is recorded)."""
        key = pod_key(pod)
        if self.get(key) is None and self._tracked() >= self.capacity:
            raise QueueFull(f"scheduling queue at its bound of {self.capacity} pods; {key} refused")
        existing = self._unschedulable.get(key) or self._backoff.get(key) or self._active.get(key)
        pinfo = existing or QueuedPodInfo(PodInfo(pod), now)
        pinfo.update(pod)
        self._move_to_active(pinfo, now)
        self.add_nominated_pod(pod, None)

    def update(self, old: Pod | None, new: Pod, now: float) -> None:
        """``Update``: in activeQ or backoffQ, replace the pod; in unschedulablePods, a
        real update (:func:`is_pod_updated`) moves it to backoffQ or activeQ; a pod in no
        sub-queue (in flight, or unknown) is added to activeQ."""
        key = pod_key(new)
        for table in (self._active, self._backoff):
            pinfo = table.get(key)
            if pinfo is not None:
                pinfo.update(new)
                if table is self._active:
                    self._move_to_active(pinfo, now)  # its priority may have changed
                self.update_nominated_pod(old, new)
                return
        pinfo = self._unschedulable.get(key)
        if pinfo is not None:
            pinfo.update(new)
            self.update_nominated_pod(old, new)
            if old is not None and is_pod_updated(old, new):
                if self.is_backing_off(pinfo, now):
                    self._push_backoff(pinfo)
                else:
                    self._move_to_active(pinfo, now)
            return
        if self._tracked() >= self.capacity:
            raise QueueFull(f"scheduling queue at its bound of {self.capacity} pods; {key} refused")
        pinfo = QueuedPodInfo(PodInfo(new), now)
        self._move_to_active(pinfo, now)
        self.add_nominated_pod(new, None)

    def delete(self, pod: Pod) -> None:
        """``Delete``: out of every sub-queue, nomination dropped (an in-flight pod stays
        in flight until ``done``)."""
        key = pod_key(pod)
        self.delete_nominated_pod(pod)
        self._remove_active(key)
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, pod_scheduling_cycle: int, now: float) -> bool:
        """``AddUnschedulableIfNotPresent`` (without queueing hints): the pod failed; it
        goes to backoffQ when a move request came during or after its cycle or when no
        plugin rejected it, else to unschedulablePods. Its timestamp is refreshed.
        Returns False (and changes nothing but ``done``) when the pod is already queued."""
        self.done(pinfo.key)
        if pinfo.key in self._unschedulable or pinfo.key in self._active or pinfo.key in self._backoff:
            return False
        pinfo.timestamp = now
        if self.move_request_cycle >= pod_scheduling_cycle or not pinfo.unschedulable_plugins:
            self._push_backoff(pinfo)
        else:
            self._unschedulable[pinfo.key] = pinfo
        return True

    # -- cluster events ------------------------------------------------------------------------
    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        if event.is_wildcard():
            return True
        return any(registered.matches(event) for events in self.plugin_events.values() for registered in events)

    def pod_matches_event(self, pinfo: QueuedPodInfo, event: ClusterEvent) -> bool:
        """``podMatchesEvent``: a wildcard, no rejecting plugin, or a rejecting plugin
        that registered a matching event."""
        if event.is_wildcard() or not pinfo.unschedulable_plugins:
            return True
        return any(
            registered.matches(event)
            for plugin in sorted(pinfo.unschedulable_plugins)
            for registered in self.plugin_events.get(plugin, ())
        )

    def move_all_to_active_or_backoff(self, event: ClusterEvent, now: float, pre_check: Callable[[Pod], bool] | None = None) -> int:
        """``MoveAllToActiveOrBackoffQueue``. Returns how many pods moved."""
        if not self.is_event_of_interest(event):
            return 0
        candidates = [p for p in self._unschedulable.values() if pre_check is None or pre_check(p.pod)]
        return self._move_pods(candidates, event, now)

    def _move_pods(self, pinfos: list[QueuedPodInfo], event: ClusterEvent, now: float) -> int:
        """``movePodsToActiveOrBackoffQueue``."""
        if not self.is_event_of_interest(event):
            return 0
        moved = 0
        for pinfo in pinfos:
            if pinfo.key not in self._unschedulable or not self.pod_matches_event(pinfo, event):
                continue
            if self.is_backing_off(pinfo, now):
                self._push_backoff(pinfo)
            else:
                self._move_to_active(pinfo, now)
            moved += 1
        self.move_request_cycle = self.scheduling_cycle
        self.moves += moved
        return moved

    def assigned_pod_added(self, pod: Pod, now: float, namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> int:
        """``AssignedPodAdded``: pods with an affinity term matching the new pod, or
        rejected by PodTopologySpread in its namespace, may now fit."""
        return self._move_pods(self._with_cross_topology_term(pod, namespace_labels or {}), ASSIGNED_POD_ADD, now)

    def assigned_pod_updated(self, old: Pod, new: Pod, event: ClusterEvent, now: float, namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> int:
        """``AssignedPodUpdated``: a scale-down may help any pod; other updates only
        pods with a cross-topology term."""
        if event.action & ActionType.UPDATE_POD_SCALE_DOWN:
            return self.move_all_to_active_or_backoff(event, now)
        return self._move_pods(self._with_cross_topology_term(new, namespace_labels or {}), event, now)

    def _with_cross_topology_term(self, pod: Pod, namespace_labels: Mapping[str, Mapping[str, str]]) -> list[QueuedPodInfo]:
        """``getUnschedulablePodsWithCrossTopologyTerm``."""
        result = []
        for pinfo in self._unschedulable.values():
            if "PodTopologySpread" in pinfo.unschedulable_plugins and pod.metadata.namespace == pinfo.pod.metadata.namespace:
                result.append(pinfo)
            elif any(term.matches(pod, namespace_labels) for term in pinfo.info.required_affinity_terms):
                result.append(pinfo)
        return result

    def flush_unschedulable_leftover(self, now: float) -> int:
        """``flushUnschedulablePodsLeftover``: pods unschedulable for longer than
        ``max_in_unschedulable_s`` move (the UnschedulableTimeout wildcard event)."""
        stale = [p for p in self._unschedulable.values() if now - p.timestamp > self.max_in_unschedulable_s]
        if not stale:
            return 0
        return self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, now)

    # -- nominator ------------------------------------------------------------------------------
    def add_nominated_pod(self, pod: Pod, nominating: NominatingInfo | None) -> None:
        """``AddNominatedPod``: override mode takes the given node ("" clears); otherwise
        the pod's ``status.nominatedNodeName``, if any."""
        self.delete_nominated_pod(pod)
        if nominating is not None and nominating.override:
            node = nominating.node_name
        else:
            node = pod.status.nominated_node_name
        if not node or pod.spec.node_name:
            return
        key = pod_key(pod)
        self._nominated_node[key] = node
        self._nominated_on.setdefault(node, []).append(key)
        self._nominated_pods[key] = pod

    def update_nominated_pod(self, old: Pod | None, new: Pod) -> None:
        """``UpdateNominatedPod``: keep a nomination made in memory when neither the old
        nor the new status names a node (the status update may not have arrived yet)."""
        nominating = None
        old_nnn = old.status.nominated_node_name if old is not None else ""
        if not old_nnn and not new.status.nominated_node_name:
            node = self._nominated_node.get(pod_key(new))
            if node:
                nominating = NominatingInfo(node, override=True)
        self.add_nominated_pod(new, nominating)

    def delete_nominated_pod(self, pod: Pod) -> None:
        key = pod_key(pod)
        node = self._nominated_node.pop(key, None)
        self._nominated_pods.pop(key, None)
        if node is not None:
            keys = self._nominated_on[node]
            keys.remove(key)
            if not keys:
                del self._nominated_on[node]

    def nominated_node(self, key: str) -> str:
        return self._nominated_node.get(key, "")

    def nominated_pods_for_node(self, node: str) -> list[Pod]:
        """``NominatedPodsForNode``, in nomination order."""
        return [self._nominated_pods[key] for key in self._nominated_on.get(node, ())]

    # -- inspection ---------------------------------------------------------------------------
    def pending_pods(self) -> Iterator[QueuedPodInfo]:
        yield from self._active.values()
        yield from self._backoff.values()
        yield from self._unschedulable.values()

    def statistics(self) -> dict[str, int]:
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable),
            "in_flight": len(self._in_flight),
            "nominated": len(self._nominated_node),
            "scheduling_cycle": self.scheduling_cycle,
            "moves": self.moves,
        }

    def check_invariants(self) -> None:
        tables = [set(self._active), set(self._backoff), set(self._unschedulable)]
        for index, table in enumerate(tables):
            for other in tables[index + 1:]:
                assert not table & other, f"a pod is in two sub-queues: {sorted(table & other)}"
        assert set(self._active_rows) == set(self._active), "activeQ rows and infos disagree"
        for node, keys in self._nominated_on.items():
            assert all(self._nominated_node.get(key) == node for key in keys), "nominator tables disagree"
        assert self._tracked() <= self.capacity, "over capacity"

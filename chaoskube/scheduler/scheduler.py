"""kube-scheduler as a component of a simulated process: informers feed the cache and the
scheduling queue; one pod at a time goes through the scheduling cycle; bindings run as
tasks, as upstream's binding cycle runs in a goroutine.

Upstream: ``pkg/scheduler/scheduler.go`` (the pod informer with field selector
``status.phase!=Succeeded,status.phase!=Failed``), ``eventhandlers.go`` (which events
reach the cache and which the queue), ``schedule_one.go`` (``scheduleOne``,
``schedulingCycle``, ``bindingCycle``, ``handleBindingCycleError``,
``handleSchedulingFailure``, ``updatePod``).

``Scheduler(process, client, informers, config)`` asks the factory for the nodes, pods,
PodDisruptionBudgets and namespaces informers and registers handlers that only update the
cache and the queue. ``await scheduler.run()`` waits for those informers to sync (the
factory is started by whoever owns it), starts the queue's flush timers (backoffQ every
1 s, unschedulablePods every 30 s) and loops over ``schedule_one``:

1. pop the highest-priority pod (waiting while activeQ is empty); skip it if it is being
   deleted or already assumed;
2. ``schedule_pod`` on a fresh snapshot (PreFilter, Filter with nominated pods, Score);
3. on a FitError, run PostFilter (DefaultPreemption); if it chose victims, mark and delete
   them (``prepare_candidate``) within the cycle; then the failure handler requeues the
   pod (``AddUnschedulableIfNotPresent``), records the nomination, journals
   ``scheduler-event`` FailedScheduling with Kubernetes' message, and patches the pod's
   status: condition PodScheduled=False, reason Unschedulable (SchedulerError for an
   error), that message, and ``nominatedNodeName`` when preemption set or cleared it;
4. on success, assume the pod on the chosen node in the cache and run Reserve, then start
   the binding cycle as a task: Bind (``pods/<name>/binding``); on failure Unreserve,
   forget the assumed pod (moving pods that its resources blocked, as an
   AssignedPodDelete), and requeue it with backoff; on success journal ``scheduled``.

Journal: ``scheduled`` {pod, node, attempts, scheduler}; ``scheduler-event`` {pod, reason,
message, event_type, scheduler} (the Events a real scheduler writes — the Event kind is
not modelled, so they are journaled); ``preempted`` {pod, preemptor, node, scheduler}.

Time only through ``process.now()``; tie breaks and the preemption offset from the
process's seeded generators. A killed scheduler loses its queue and cache; a restarted
one relists (informers) and starts over, as the real one does.

Non-guarantees: status updates and preemption API calls are made synchronously in the
scheduling cycle (no ``SchedulerAsyncAPICalls``); the status of a pod that vanished
before its failure was handled is not patched (upstream tries and gets a 404); no leader
election here (the process that runs the scheduler owns it); one profile only.
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from chaoskube.api.objects import LabelSelector, Pod, PodCondition, deep_copy
from chaoskube.api.protocol import timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import NAMESPACE_INDEX, DeletedFinalStateUnknown, SharedInformerFactory
from chaoskube.client.record import EventRecorder
from chaoskube.config import SchedulerConfig
from chaoskube.scheduler.framework import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    CacheError,
    ClusterEvent,
    Code,
    Cursor,
    CycleState,
    EventResource,
    FitError,
    Framework,
    FrameworkError,
    NominatingInfo,
    NoNodesAvailable,
    SchedulerCache,
    Snapshot,
    Status,
    assigned_pod_update_event,
    node_update_event,
    pod_key,
    pod_priority,
    schedule_pod,
)
from chaoskube.scheduler.plugins import default_plugins
from chaoskube.scheduler.preemption import conditions_with, prepare_candidate
from chaoskube.scheduler.queue import BACKOFF_FLUSH_PERIOD_S, UNSCHEDULABLE_FLUSH_PERIOD_S, QueuedPodInfo, SchedulingQueue
from chaoskube.sim.buggify import maybe_sleep
from chaoskube.sim.process import Process

__all__ = ["POD_FIELD_SELECTOR", "Scheduler"]

#: ``scheduler.go`` ``newPodInformer``: terminal pods are not the scheduler's business.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
#: ``truncateMessage``: event messages are cut to 1024 characters.
MAX_EVENT_MESSAGE = 1024
#: ``clearNominatedNode``.
CLEAR_NOMINATED_NODE = NominatingInfo("", override=True)


def _truncate(message: str) -> str:
    if len(message) <= MAX_EVENT_MESSAGE:
        return message
    return message[: MAX_EVENT_MESSAGE - 3] + "..."


class Scheduler:
    """See the module docstring. ``plugins`` replaces the default profile (tests)."""

    def __init__(
        self,
        process: Process,
        client: ApiClient,
        informers: SharedInformerFactory,
        config: SchedulerConfig | None = None,
        *,
        plugins: list[tuple[Any, int]] | None = None,
    ) -> None:
        self.process = process
        self.client = client
        self.config = config or SchedulerConfig()
        # The profile's scheduler name is the Events' source (schedule_one.go records
        # through the framework's recorder of the "default-scheduler" profile).
        self.recorder = EventRecorder(client, "default-scheduler")
        self.cache = SchedulerCache()
        self._select_random = process.random("scheduler/select-host")
        self._preemption_random = process.random("scheduler/preemption")
        self.framework = Framework(plugins if plugins is not None else default_plugins(client), handle=self)
        self.queue = SchedulingQueue(
            initial_backoff_s=self.config.pod_initial_backoff_s,
            max_backoff_s=self.config.pod_max_backoff_s,
            max_in_unschedulable_s=self.config.pod_max_in_unschedulable_s,
            plugin_events=self.framework.events_to_register(),
        )
        self.cursor = Cursor()
        self._lot = trio.lowlevel.ParkingLot()
        self._snapshot = Snapshot([])
        self._nursery: trio.Nursery | None = None
        self._counters = {"attempts": 0, "scheduled": 0, "failed": 0, "bind_errors": 0, "preemptions": 0, "victims": 0}
        self.nodes = informers.informer("nodes")
        self.pods = informers.informer("pods", field_selector=POD_FIELD_SELECTOR)
        self.pdbs = informers.informer("poddisruptionbudgets")
        self.namespaces = informers.informer("namespaces")
        self.claims = informers.informer("persistentvolumeclaims")
        self.volumes = informers.informer("persistentvolumes")
        self.storage_classes = informers.informer("storageclasses")
        # PodTopologySpread's system default constraints select by what selects the pod
        self.services = informers.informer("services")
        self.replica_sets = informers.informer("replicasets")
        self.replication_controllers = informers.informer("replicationcontrollers")
        self.stateful_sets = informers.informer("statefulsets")
        for informer, resource in ((self.claims, EventResource.PVC), (self.volumes, EventResource.PV), (self.storage_classes, EventResource.STORAGE_CLASS)):
            informer.add_event_handler(
                on_add=lambda obj, r=resource: self._on_storage_event(r, ActionType.ADD),
                on_update=lambda old, new, r=resource: self._on_storage_event(r, ActionType.update()),
            )
        self.nodes.add_event_handler(on_add=self._on_node_add, on_update=self._on_node_update, on_delete=self._on_node_delete)
        self.pods.add_event_handler(on_add=self._on_pod_add, on_update=self._on_pod_update, on_delete=self._on_pod_delete)

    # -- the framework's handle -----------------------------------------------------------
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.queue.nominated_pods_for_node(node_name)

    def pod_disruption_budgets(self) -> list[Any]:
        return self.pdbs.indexer.list()

    def get_pod(self, key: str) -> Pod | None:
        return self.pods.indexer.get_by_key(key)

    def now(self) -> float:
        return self.process.now()

    def random(self) -> Any:
        return self._preemption_random

    def _namespace_labels(self) -> dict[str, dict[str, str]]:
        return {ns.metadata.name: ns.metadata.labels for ns in self.namespaces.indexer.list()}

    # -- event handlers (eventhandlers.go): only the cache and the queue -------------------------
    def _responsible(self, pod: Pod) -> bool:
        return pod.spec.scheduler_name == self.config.scheduler_name

    def _wake(self) -> None:
        if self.queue.ready() and self._lot:
            self._lot.unpark_all()

    def _on_storage_event(self, resource: EventResource, action: ActionType) -> None:
        """A claim, volume or storage class changed: pods the VolumeBinding plugin refused
        may fit now (its ``EventsToRegister``)."""
        self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, action), self.process.now())
        self._wake()

    # -- PodTopologySpread's default selector -------------------------------------------------
    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """``helper.DefaultSelector``: the selectors of the pod's Services merged, and the
        selector of its controlling ReplicationController, ReplicaSet or StatefulSet added;
        None when that selects everything (no constraint then)."""
        namespace = pod.metadata.namespace
        labels = pod.metadata.labels
        match_labels: dict[str, str] = {}
        for service in self.services.indexer.by_index(NAMESPACE_INDEX, namespace):
            selector = service.spec.selector
            if selector and all(labels.get(key) == value for key, value in selector.items()):
                match_labels.update(selector)
        expressions: list[Any] = []
        owner = next((reference for reference in pod.metadata.owner_references if reference.controller), None)
        if owner is not None:
            group = owner.api_version.partition("/")[0] if "/" in owner.api_version else ""
            if owner.kind == "ReplicationController" and group == "":
                controller = self.replication_controllers.indexer.get_by_key(f"{namespace}/{owner.name}")
                if controller is not None and controller.spec.selector:
                    match_labels.update(controller.spec.selector)
            elif owner.kind in ("ReplicaSet", "StatefulSet") and group == "apps":
                informer = self.replica_sets if owner.kind == "ReplicaSet" else self.stateful_sets
                controller = informer.indexer.get_by_key(f"{namespace}/{owner.name}")
                if controller is not None and controller.spec.selector is not None:
                    match_labels.update(controller.spec.selector.match_labels)
                    expressions.extend(controller.spec.selector.match_expressions)
        if not match_labels and not expressions:
            return None
        return LabelSelector(match_labels=match_labels, match_expressions=expressions)

    # -- the VolumeBinding plugin's listers ---------------------------------------------------
    def claim(self, namespace: str, name: str) -> Any:
        return self.claims.indexer.get_by_key(f"{namespace}/{name}")

    def volume(self, name: str) -> Any:
        return self.volumes.indexer.get_by_key(name)

    def storage_class(self, name: str) -> Any:
        return self.storage_classes.indexer.get_by_key(name)

    def all_volumes(self) -> list[Any]:
        return self.volumes.indexer.list()

    def _on_node_add(self, node: Any) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(NODE_ADD, self.process.now())
        self._wake()

    def _on_node_update(self, old: Any, new: Any) -> None:
        self.cache.update_node(new)
        event = node_update_event(old, new)
        if event is not None:
            self.queue.move_all_to_active_or_backoff(event, self.process.now())
            self._wake()

    def _on_node_delete(self, obj: Any) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.cache.remove_node(node.metadata.name)

    def _on_pod_add(self, pod: Pod) -> None:
        if pod.spec.node_name:
            self._add_assigned(pod)
        elif self._responsible(pod):
            self.queue.add(pod, self.process.now())
            self._wake()

    def _on_pod_update(self, old: Pod, new: Pod) -> None:
        """Two filtered handlers, as upstream: assigned pods -> cache; unassigned pods of
        this scheduler -> queue. An object that starts (stops) passing a filter is an add
        (a delete) for that handler (``FilteringResourceEventHandler``)."""
        old_assigned, new_assigned = bool(old.spec.node_name), bool(new.spec.node_name)
        if old_assigned and new_assigned:
            self.cache.update_pod(new)
            event = assigned_pod_update_event(old, new)
            self.queue.assigned_pod_updated(old, new, event, self.process.now(), self._namespace_labels())
        elif new_assigned:
            self._add_assigned(new)
        elif old_assigned:
            self._delete_assigned(old)
        old_pending = not old_assigned and self._responsible(old)
        new_pending = not new_assigned and self._responsible(new)
        if old_pending and new_pending:
            # updatePodInSchedulingQueue: skip identical objects and assumed pods.
            if old.metadata.resource_version != new.metadata.resource_version and not self.cache.is_assumed(new):
                self.queue.update(old, new, self.process.now())
        elif new_pending:
            self.queue.add(new, self.process.now())
        elif old_pending:
            self.queue.delete(old)
        self._wake()

    def _on_pod_delete(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if pod.spec.node_name:
            self._delete_assigned(pod)
        elif self._responsible(pod):
            self.queue.delete(pod)
        self._wake()

    def _add_assigned(self, pod: Pod) -> None:
        self.cache.add_pod(pod)
        self.queue.delete(pod)  # bound: no longer pending, nomination dropped
        self.queue.assigned_pod_added(pod, self.process.now(), self._namespace_labels())
        self._wake()

    def _delete_assigned(self, pod: Pod) -> None:
        self.cache.remove_pod(pod)
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, self.process.now())
        self._wake()

    # -- running -------------------------------------------------------------------------------
    async def wait_for_sync(self) -> None:
        for informer in (
            self.nodes, self.pods, self.pdbs, self.namespaces, self.claims, self.volumes, self.storage_classes,
            self.services, self.replica_sets, self.replication_controllers, self.stateful_sets,
        ):
            await informer.wait_for_sync()

    async def run(self) -> None:
        """Wait for the informers, then schedule forever (cancel the caller to stop)."""
        await self.wait_for_sync()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._flush_backoff_loop)
            nursery.start_soon(self._flush_unschedulable_loop)
            while True:
                await self.schedule_one()

    async def _flush_backoff_loop(self) -> None:
        while True:
            await self.process.sleep(BACKOFF_FLUSH_PERIOD_S)
            if self.queue.flush_backoff_completed(self.process.now()):
                self._wake()

    async def _flush_unschedulable_loop(self) -> None:
        while True:
            await self.process.sleep(UNSCHEDULABLE_FLUSH_PERIOD_S)
            if self.queue.flush_unschedulable_leftover(self.process.now()):
                self._wake()

    async def _pop(self) -> QueuedPodInfo:
        while True:
            pinfo = self.queue.pop()
            if pinfo is not None:
                return pinfo
            await self._lot.park()

    # -- the scheduling cycle ---------------------------------------------------------------
    def _skip(self, pod: Pod) -> bool:
        """``skipPodSchedule``: being deleted, or assumed (a stale copy came back)."""
        return pod.metadata.deletion_timestamp is not None or self.cache.is_assumed(pod)

    async def schedule_one(self) -> None:
        pinfo = await self._pop()
        pod = pinfo.pod
        if self._skip(pod):
            self.queue.done(pinfo.key)
            return
        self._counters["attempts"] += 1
        cycle = self.queue.scheduling_cycle
        state = CycleState()
        self._snapshot = self.cache.snapshot(self._namespace_labels())
        try:
            result = schedule_pod(
                self.framework, state, pod, self._snapshot, self._select_random,
                percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score, cursor=self.cursor,
            )
        except FitError as fit_error:
            nominating = await self._post_filter(state, pinfo, fit_error)
            pinfo.unschedulable_plugins = frozenset(fit_error.diagnosis.unschedulable_plugins)
            await self._handle_failure(pinfo, Status(Code.UNSCHEDULABLE, (fit_error.message(),)), nominating, cycle)
            return
        except NoNodesAvailable as error:
            pinfo.unschedulable_plugins = frozenset()
            await self._handle_failure(pinfo, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(error),)), CLEAR_NOMINATED_NODE, cycle)
            return
        except FrameworkError as error:
            pinfo.unschedulable_plugins = frozenset()
            await self._handle_failure(pinfo, Status.error(str(error)), CLEAR_NOMINATED_NODE, cycle)
            return
        await self._assume_and_bind(state, pinfo, result.suggested_host, cycle)

    async def _post_filter(self, state: CycleState, pinfo: QueuedPodInfo, fit_error: FitError) -> NominatingInfo | None:
        """Run PostFilter; carry out a preemption it decided. Sets the FitError's
        PostFilterMsg; returns the nomination to record (None: keep the pod's)."""
        if not self.framework.post_filter:
            return None
        potential = fit_error.diagnosis.node_to_status.nodes_for_code(self._snapshot, Code.UNSCHEDULABLE) if self._snapshot is not None else []
        recorded = _preemption_snapshot(pinfo.pod, potential, self.framework.handle, self.queue) if potential else None
        result, status = self.framework.run_post_filter_plugins(state, pinfo.pod, fit_error.diagnosis.node_to_status)
        nominating = result.nominating if result is not None else None
        if recorded is not None:
            chosen = {"node": result.nominating.node_name, "victims": sorted(pod_key(victim) for victim in result.victims)} if result is not None and result.victims and status.is_success() else None
            self.process.world.record("preemption-decision", scheduler=self.process.name, **recorded, chosen=chosen)
        if result is not None and result.victims and status.is_success():
            self._counters["preemptions"] += 1
            node = result.nominating.node_name
            nominated = [p for p in self.queue.nominated_pods_for_node(node) if pod_priority(p) < pod_priority(pinfo.pod)]
            prepared = await prepare_candidate(
                self.client, pinfo.pod, node, result.victims, nominated,
                scheduler_name=self.config.scheduler_name, now=self.process.now(),
                record=lambda victim, where: self._record_preempted(victim, pinfo.pod, where),
            )
            if not prepared.is_success():
                status, nominating = Status(prepared.code, (f"preemption: {prepared.message}",)), None
        fit_error.diagnosis.post_filter_msg = status.message
        return nominating

    def _record_preempted(self, victim: Pod, preemptor: Pod, node: str) -> None:
        self._counters["victims"] += 1
        self.process.world.record("preempted", pod=pod_key(victim), preemptor=pod_key(preemptor), node=node, scheduler=self.process.name)
        # framework/preemption/preemption.go: the victim's Event
        self.recorder.event(victim, "Normal", "Preempted", f"Preempted by pod {preemptor.metadata.uid} on node {node}")

    async def _assume_and_bind(self, state: CycleState, pinfo: QueuedPodInfo, host: str, cycle: int) -> None:
        assumed = deep_copy(pinfo.pod)
        assumed.spec.node_name = host
        try:
            self.cache.assume_pod(assumed)
        except CacheError as error:
            await self._handle_failure(pinfo, Status.error(str(error)), CLEAR_NOMINATED_NODE, cycle)
            return
        self.queue.delete_nominated_pod(assumed)
        status = self.framework.run_reserve_plugins_reserve(state, assumed, host)
        if not status.is_success():
            self.framework.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            await self._handle_failure(pinfo, status, CLEAR_NOMINATED_NODE, cycle)
            return
        assert self._nursery is not None, "schedule_one runs inside run()"
        self._nursery.start_soon(self._binding_cycle, state, pinfo, assumed, host)

    async def _binding_cycle(self, state: CycleState, pinfo: QueuedPodInfo, assumed: Pod, host: str) -> None:
        if self.process.world.buggify.enabled:  # BUGGIFY: the binding goroutine runs late
            await maybe_sleep(self.process, "scheduler.bind")
        status = await self.framework.run_pre_bind_plugins(state, assumed, host)
        if status.is_success():
            status = await self.framework.run_bind_plugins(state, assumed, host)
        if not status.is_success():
            await self._handle_binding_error(state, pinfo, assumed, host, status)
            return
        self.cache.finish_binding(assumed)
        self.queue.done(pinfo.key)
        self._counters["scheduled"] += 1
        self.process.world.record("scheduled", pod=pinfo.key, node=host, attempts=pinfo.attempts, scheduler=self.process.name)
        # schedule_one.go (bindingCycle): "Successfully assigned %v/%v to %v"
        self.recorder.event(assumed, "Normal", "Scheduled", f"Successfully assigned {assumed.metadata.namespace}/{assumed.metadata.name} to {host}")

    async def _handle_binding_error(self, state: CycleState, pinfo: QueuedPodInfo, assumed: Pod, host: str, status: Status) -> None:
        """``handleBindingCycleError``: Unreserve, forget the assumed pod (its room is
        free again: an AssignedPodDelete for every other pod), requeue it with backoff."""
        self._counters["bind_errors"] += 1
        self.framework.run_reserve_plugins_unreserve(state, assumed, host)
        forgotten = True
        try:
            self.cache.forget_pod(assumed)
        except CacheError:
            forgotten = False  # the informer already saw it bound: nothing to give back
        pinfo.unschedulable_plugins = frozenset()
        await self._handle_failure(pinfo, status, CLEAR_NOMINATED_NODE, self.queue.scheduling_cycle)
        if forgotten:
            key = pinfo.key
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, self.process.now(), lambda pod: pod_key(pod) != key)
            self._wake()

    # -- failures --------------------------------------------------------------------------------
    async def _handle_failure(self, pinfo: QueuedPodInfo, status: Status, nominating: NominatingInfo | None, cycle: int) -> None:
        """``handleSchedulingFailure``; ``cycle`` is the scheduling cycle the queue is at
        (``SchedulingCycle()``), for the moveRequestCycle rule."""
        self._counters["failed"] += 1
        key = pinfo.key
        cached = self.pods.indexer.get_by_key(key)
        if cached is None or cached.spec.node_name:
            self.queue.done(key)  # deleted, or bound meanwhile: do not requeue
        else:
            pinfo.update(cached)
            self.queue.add_unschedulable_if_not_present(pinfo, cycle, self.process.now())
        self.queue.add_nominated_pod(pinfo.pod, nominating)
        self._wake()
        message = status.message
        reason = "Unschedulable" if status.is_rejected() else "SchedulerError"
        self.process.world.record(
            "scheduler-event", pod=key, reason="FailedScheduling", message=_truncate(message),
            event_type="Warning", scheduler=self.process.name,
        )
        if cached is None:
            return
        # schedule_one.go (handleSchedulingFailure): the FailedScheduling Event, Warning
        self.recorder.event(cached, "Warning", "FailedScheduling", _truncate(message))
        condition = PodCondition(type="PodScheduled", status="False", reason=reason, message=message)
        await self._update_pod_status(cached, condition, nominating)

    async def _update_pod_status(self, pod: Pod, condition: PodCondition, nominating: NominatingInfo | None) -> None:
        """``updatePod``: patch the PodScheduled condition (``UpdatePodCondition`` keeps the
        transition time unless the status flips) and ``nominatedNodeName`` (override mode,
        when it differs) — only when something changed."""
        old = next((c for c in pod.status.conditions if c.type == condition.type), None)
        now_text = timestamp(self.process.now())
        transition = old.last_transition_time if old is not None and old.status == condition.status else now_text
        condition = PodCondition(
            type=condition.type, status=condition.status, reason=condition.reason, message=condition.message,
            last_transition_time=transition, last_probe_time=old.last_probe_time if old is not None else None,
        )
        changed = old is None or (old.status, old.reason, old.message, old.last_transition_time) != (
            condition.status, condition.reason, condition.message, condition.last_transition_time
        )
        nnn_needs_update = nominating is not None and nominating.override and pod.status.nominated_node_name != nominating.node_name
        if not changed and not nnn_needs_update:
            return
        status: dict[str, Any] = {}
        if changed:
            status["conditions"] = conditions_with(pod, condition)
        if nnn_needs_update:
            assert nominating is not None
            status["nominatedNodeName"] = nominating.node_name or None
        try:
            await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, {"status": status}, subresource="status")
        except ApiError:
            pass  # upstream logs "Error updating pod" and goes on

    # -- inspection ------------------------------------------------------------------------------
    def statistics(self) -> dict[str, Any]:
        return {**self._counters, "queue": self.queue.statistics(), "nodes": self.cache.node_count(), "pods": self.cache.pod_count()}


def _preemption_snapshot(pod: Pod, potential: list[Any], handle: Any, queue: Any) -> dict[str, Any]:
    """What DefaultPreemption decides from, for the ``preemption-decision`` journal event
    (issue 19): the preemptor, every node whose filters failed only on what preemption can
    free, with its allocatable and its pods (priority, start, containers' requests, labels),
    the pods nominated to it, and the PodDisruptionBudgets -- enough for the ``scheduling``
    checker to recompute upstream's victim choice independently."""

    def pod_record(candidate: Pod) -> dict[str, Any]:
        return {
            "key": pod_key(candidate), "namespace": candidate.metadata.namespace, "priority": pod_priority(candidate),
            "start": candidate.status.start_time or "", "labels": dict(candidate.metadata.labels),
            "requests": [{name: str(value) for name, value in {**c.resources.limits, **c.resources.requests}.items()} for c in candidate.spec.containers],
        }

    nodes = []
    for info in potential:
        node = info.node
        allocatable = dict(node.status.allocatable) if node is not None else {}
        nominated = [pod_record(other) for other in queue.nominated_pods_for_node(info.name) if pod_key(other) != pod_key(pod)]
        nodes.append({"name": info.name, "allocatable": allocatable, "pods": [pod_record(entry.pod) for entry in info.pods], "nominated": nominated})
    pdbs = [
        {"namespace": pdb.metadata.namespace, "selector": msgspec.to_builtins(pdb.spec.selector) if pdb.spec.selector is not None else None,
         "disruptions_allowed": pdb.status.disruptions_allowed, "disrupted_pods": sorted(pdb.status.disrupted_pods)}
        for pdb in handle.pod_disruption_budgets()
    ]
    return {"preemptor": pod_record(pod), "nodes": nodes, "pdbs": pdbs}


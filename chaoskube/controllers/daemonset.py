"""The DaemonSet controller, as kube-controller-manager's ``pkg/controller/daemon``.

Upstream sources followed (kubernetes/kubernetes ``pkg/controller/daemon/``):

- ``daemon_controller.go`` — ``NodeShouldRunDaemonPod``: a node runs the daemon pod when
  the pod's ``nodeName`` (if set) is the node, its node selector and required node
  affinity match, and no NoSchedule/NoExecute taint goes untolerated; it keeps running
  one unless a NoExecute taint goes untolerated. ``podsShouldBeOnNode`` / ``manage``:
  create the pod where it should run and is missing; on nodes where it may keep running,
  delete failed pods (with a back-off per node, 1 s doubling to 15 min) and succeeded
  ones, and all but the oldest when there are several (without surge); delete every pod
  where it may not keep running. ``syncNodes``: creates in slow-start batches, with
  expectations as the ReplicaSet controller's;
- ``util/daemonset_util.go`` — the pods: the template with the daemon tolerations added
  (not-ready and unreachable NoExecute without tolerationSeconds; disk-, memory-,
  pid-pressure and unschedulable NoSchedule; network-unavailable for hostNetwork), the node
  pinned by required node affinity on ``metadata.name``
  (``ReplaceDaemonSetPodNodeNameNodeAffinity``; the default scheduler binds them), labels
  ``controller-revision-hash`` and ``pod-template-generation``;
- ``update.go`` — ``rollingUpdate``: without surge, delete old pods that are unavailable
  and as many available ones as ``maxUnavailable`` leaves room for (the manage loop then
  creates the new ones); with ``maxSurge``, create the new pod beside the old one on up to
  ``maxSurge`` nodes (at once where the old one is unavailable) and delete the old one once
  the new one is available. ``maxSurge`` and ``maxUnavailable`` scale against the nodes that
  should run the pod, rounding up; both zero makes ``maxUnavailable`` 1. ``constructHistory``:
  the template's ControllerRevision (created if new, renumbered above the others on a
  rollback); ``cleanupHistory``: old revisions beyond ``revisionHistoryLimit`` deleted,
  oldest first, unless a pod still carries their hash.
- ``updateDaemonSetStatus`` — desired / current / misscheduled / ready / updated /
  available / unavailable counts.

Pure decision: :func:`plan_daemon_set` (the set, nodes, pods by node, hash, ``now``) ->
(status, nodes to create on, pods to delete). Journal: ``daemonset-pod`` {daemonset, node,
pod, action, reason}.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.objects import (
    Affinity,
    DaemonSet,
    DaemonSetStatus,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    deep_copy,
    matches,
    scaled_value,
)
from chaoskube.api.protocol import parse_timestamp
from chaoskube.api.workloads import daemon_pod_node, daemon_tolerations, node_should_run_daemon_pod
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import NAMESPACE_INDEX, DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key, split_meta_namespace_key
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.history import CONTROLLER_REVISION_HASH_LABEL, new_revision, old_histories_to_clean, plan_current_history, revision_data
from chaoskube.controllers.replicaset import (
    POD_CONTROLLER_UID_INDEX,
    CONTROLLER_UID_INDEX,
    SLOW_START_INITIAL_BATCH_SIZE,
    Claim,
    ControllerExpectations,
    add_index,
    pod_controller_uid_index,
    pods_of,
    claim_decision,
    controller_ref,
    controller_uid_index,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    owner_references_patch,
    pod_key,
    slow_start_batch,
    work_loop,
)

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "DaemonSetController",
    "DaemonSetPlan",
    "daemon_pod",
    "daemon_tolerations",
    "node_should_run",
    "plan_daemon_set",
]

TEMPLATE_GENERATION_LABEL = "pod-template-generation"
#: ``failedPodsBackoff``: 1 s doubling to 15 min (``NewFailedPodsBackoff``).
FAILED_POD_BACKOFF_INITIAL_S = 1.0
FAILED_POD_BACKOFF_MAX_S = 900.0
#: ``BurstReplicas`` of the DaemonSet controller.
BURST_REPLICAS = 250

def daemon_pod(ds: DaemonSet, node: str, hash_value: str) -> Pod:
    """``NewPod`` for ``node``: the template, daemon tolerations, the node affinity pin,
    the revision labels."""
    template = ds.spec.template
    spec = deep_copy(template.spec)
    spec.tolerations = daemon_tolerations(spec.tolerations, spec.host_network)
    term = NodeSelectorTerm(match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=[node])])
    affinity = spec.affinity or Affinity()
    if affinity.node_affinity is None:
        affinity.node_affinity = NodeAffinity()
    affinity.node_affinity.required_during_scheduling_ignored_during_execution = NodeSelector(node_selector_terms=[term])
    spec.affinity = affinity
    labels = {**template.metadata.labels, CONTROLLER_REVISION_HASH_LABEL: hash_value, TEMPLATE_GENERATION_LABEL: str(ds.metadata.generation)}
    meta = ObjectMeta(
        generate_name=f"{ds.metadata.name}-", namespace=ds.metadata.namespace, labels=labels, annotations=dict(template.metadata.annotations),
        finalizers=list(template.metadata.finalizers), owner_references=[new_controller_ref(ds)],
    )
    return Pod(metadata=meta, spec=spec)


def node_should_run(node: Any, ds: DaemonSet) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod`` (:func:`chaoskube.api.workloads.node_should_run_daemon_pod`)."""
    return node_should_run_daemon_pod(node, ds)


@dataclass
class DaemonSetPlan:
    status: DaemonSetStatus
    create_on: list[str] = field(default_factory=list)
    delete: list[tuple[Pod, str]] = field(default_factory=list)  # (pod, reason)
    backoff: dict[str, float] = field(default_factory=dict)  # node -> retry after this time


def _created(pod: Pod) -> float:
    return parse_timestamp(pod.metadata.creation_timestamp) if pod.metadata.creation_timestamp else 0.0


def _oldest_first(first: Pod, second: Pod) -> int:
    """``podByCreationTimestampAndPhase``: running before others, then oldest, then name."""
    rank = (first.status.phase != "Running", _created(first), first.metadata.name)
    other = (second.status.phase != "Running", _created(second), second.metadata.name)
    return -1 if rank < other else 1 if rank > other else 0


def _updated_pods(pods: Sequence[Pod], hash_value: str) -> tuple[Pod | None, Pod | None, bool]:
    """``findUpdatedPodsOnNode``: (new pod, old pod, at most one of each)."""
    new = old = None
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        if pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_value:
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def plan_daemon_set(
    ds: DaemonSet, nodes: Sequence[Any], pods_by_node: Mapping[str, Sequence[Pod]], hash_value: str, now: float,
    failed_backoff: Mapping[str, tuple[float, float]] | None = None,
) -> DaemonSetPlan:
    """``manage`` + ``rollingUpdate`` + the status (module docstring), as a pure decision.
    ``failed_backoff``: node -> (back-off seconds, last failure time) of failed pods."""
    failed_backoff = failed_backoff or {}
    status = DaemonSetStatus(observed_generation=ds.metadata.generation, collision_count=ds.status.collision_count, conditions=list(ds.status.conditions))
    plan = DaemonSetPlan(status)
    should: dict[str, tuple[bool, bool]] = {}
    surge_allowed = ds.spec.update_strategy.type in ("RollingUpdate", "") and ds.spec.update_strategy.rolling_update is not None and _nonzero(ds.spec.update_strategy.rolling_update.max_surge)
    for node in sorted(nodes, key=lambda node: node.metadata.name):
        name = node.metadata.name
        run, keep = node_should_run(node, ds)
        should[name] = (run, keep)
        daemon_pods = list(pods_by_node.get(name, ()))
        if run and not daemon_pods:
            plan.create_on.append(name)
        elif keep:
            running = []
            for pod in daemon_pods:
                if pod.metadata.deletion_timestamp is not None:
                    continue
                if pod.status.phase == "Failed":
                    backoff_s, last = failed_backoff.get(name, (0.0, -1e18))
                    if now < last + backoff_s:
                        plan.backoff[name] = last + backoff_s
                        continue
                    plan.delete.append((pod, "failed"))
                elif pod.status.phase == "Succeeded":
                    plan.delete.append((pod, "succeeded"))
                else:
                    running.append(pod)
            if len(running) > 1 and not surge_allowed:
                running.sort(key=functools.cmp_to_key(_oldest_first))
                plan.delete.extend((pod, "duplicate") for pod in running[1:])
        elif not keep and daemon_pods:
            plan.delete.extend((pod, "should not run on this node") for pod in daemon_pods if pod.metadata.deletion_timestamp is None)
    _status(ds, plan, nodes, should, pods_by_node, hash_value, now)
    if ds.spec.update_strategy.type in ("RollingUpdate", "") and ds.metadata.deletion_timestamp is None:
        _rolling_update(ds, plan, nodes, should, pods_by_node, hash_value, now)
    return plan


def _nonzero(value: int | str | None) -> bool:
    return value is not None and value not in (0, "0%")


def _status(ds: DaemonSet, plan: DaemonSetPlan, nodes: Sequence[Any], should: Mapping[str, tuple[bool, bool]], pods_by_node: Mapping[str, Sequence[Pod]], hash_value: str, now: float) -> None:
    status = plan.status
    for node in nodes:
        name = node.metadata.name
        run, _ = should[name]
        pods = [pod for pod in pods_by_node.get(name, ()) if pod.metadata.deletion_timestamp is None]
        if run:
            status.desired_number_scheduled += 1
            if pods:
                status.current_number_scheduled += 1
                pods.sort(key=functools.cmp_to_key(_oldest_first))
                pod = pods[0]
                if is_pod_ready(pod):
                    status.number_ready += 1
                    if is_pod_available(pod, ds.spec.min_ready_seconds, now):
                        status.number_available += 1
                if pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_value:
                    status.updated_number_scheduled += 1
        elif pods:
            status.number_misscheduled += 1
    status.number_unavailable = max(0, status.desired_number_scheduled - status.number_available)


def _rolling_update(ds: DaemonSet, plan: DaemonSetPlan, nodes: Sequence[Any], should: Mapping[str, tuple[bool, bool]], pods_by_node: Mapping[str, Sequence[Pod]], hash_value: str, now: float) -> None:
    rolling = ds.spec.update_strategy.rolling_update
    desired = plan.status.desired_number_scheduled
    max_unavailable = scaled_value(rolling.max_unavailable if rolling is not None and rolling.max_unavailable is not None else 1, desired, round_up=True)
    max_surge = scaled_value(rolling.max_surge if rolling is not None and rolling.max_surge is not None else 0, desired, round_up=True)
    if max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    deleting = {pod_key(pod) for pod, _ in plan.delete}
    names = sorted(name for name in pods_by_node if name in should)
    min_ready = ds.spec.min_ready_seconds
    if max_surge == 0:
        unavailable = 0
        replace: list[Pod] = []
        candidates: list[Pod] = []
        for name in names:
            new, old, ok = _updated_pods(pods_by_node[name], hash_value)
            if not ok or (old is None and new is None) or (old is not None and new is not None):
                unavailable += 1
            elif new is not None:
                if not is_pod_available(new, min_ready, now):
                    unavailable += 1
            else:
                assert old is not None
                if not is_pod_available(old, min_ready, now):
                    replace.append(old)
                elif unavailable >= max_unavailable:
                    continue
                else:
                    candidates.append(old)
        room = max(0, min(max_unavailable - unavailable, len(candidates)))
        for pod in [*replace, *candidates[:room]]:
            if pod_key(pod) not in deleting:
                plan.delete.append((pod, f"rolling update to {hash_value}"))
        return
    surge = 0
    delete_old: list[Pod] = []
    allowed: list[str] = []
    candidate_nodes: list[str] = []
    for name in names:
        new, old, ok = _updated_pods(pods_by_node[name], hash_value)
        if not ok:
            surge += 1
            continue
        if old is None:
            continue
        if new is None:
            if not is_pod_available(old, min_ready, now):
                if not should[name][0]:
                    delete_old.append(old)
                    continue
                allowed.append(name)
            elif surge >= max_surge:
                continue
            else:
                candidate_nodes.append(name)
        else:
            if not is_pod_available(new, min_ready, now):
                surge += 1
                continue
            delete_old.append(old)
    room = max(0, min(max_surge - surge, len(candidate_nodes)))
    for pod in delete_old:
        if pod_key(pod) not in deleting:
            plan.delete.append((pod, f"rolling update to {hash_value}"))
    for name in [*allowed, *candidate_nodes[:room]]:
        if name not in plan.create_on:
            plan.create_on.append(name)


class DaemonSetController:
    """``DaemonSetsController`` (see the module docstring); ``--concurrent-daemonset-syncs`` workers."""

    KIND = "DaemonSet"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "daemonset-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.recorder = EventRecorder(client, name)
        self.queue = RateLimitingQueue(process)
        self.expectations = ControllerExpectations()
        self._failed_backoff: dict[tuple[str, str], tuple[float, float]] = {}
        self.sets = informers.informer("daemonsets")
        self.pods = informers.informer("pods")
        add_index(self.pods, POD_CONTROLLER_UID_INDEX, pod_controller_uid_index)
        self.nodes = informers.informer("nodes")
        self.revisions = informers.informer("controllerrevisions")
        add_index(self.revisions, CONTROLLER_UID_INDEX, controller_uid_index)
        self.sets.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._set_deleted)
        self.pods.add_event_handler(on_add=self._pod_added, on_update=lambda old, new: self._pod_changed(new), on_delete=self._pod_deleted)
        self.nodes.add_event_handler(on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new), on_delete=self._node_changed)

    # -- handlers ---------------------------------------------------------------------------
    def _enqueue(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.queue.add(meta_namespace_key(obj))

    def _set_deleted(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.expectations.delete(meta_namespace_key(obj))
        self.queue.add(meta_namespace_key(obj))

    def _owner_key(self, pod: Pod) -> str | None:
        reference = controller_ref(pod)
        if reference is None or reference.kind != self.KIND:
            return None
        ds = self.sets.indexer.get_by_key(f"{pod.metadata.namespace}/{reference.name}")
        if ds is None or ds.metadata.uid != reference.uid:
            return None
        return f"{pod.metadata.namespace}/{reference.name}"

    def _pod_added(self, pod: Pod) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        else:
            self._pod_changed(pod)

    def _pod_changed(self, pod: Pod) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.queue.add(key)
            return
        if controller_ref(pod) is None:
            for ds in self.sets.indexer.by_index(NAMESPACE_INDEX, pod.metadata.namespace):
                if matches(ds.spec.selector, pod.metadata.labels):
                    self._enqueue(ds)

    def _pod_deleted(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, pod_key(pod))
            self.queue.add(key)

    def _node_changed(self, node: Any) -> None:
        for ds in self.sets.indexer.list():
            self._enqueue(ds)

    # -- running ----------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.sets, self.pods, self.nodes, self.revisions):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_daemonset_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        ds = self.sets.indexer.get_by_key(key)
        if ds is None:
            self.expectations.delete(key)
            return
        now = self.process.now()
        hash_value = await self._current_hash(ds)
        pods_by_node = await self._pods_by_node(ds)
        backoff = {node: value for (set_key, node), value in self._failed_backoff.items() if set_key == key}
        plan = plan_daemon_set(ds, self.nodes.indexer.list(), pods_by_node, hash_value, now, backoff)
        if self.expectations.satisfied(key, now) and ds.metadata.deletion_timestamp is None:
            await self._sync_nodes(key, ds, plan, hash_value, now)
            await self._cleanup_history(ds, pods_by_node)
        for node, retry_at in plan.backoff.items():
            self.queue.add_after(key, max(0.0, retry_at - now) + 0.001)
        await self._update_status(ds, plan.status)
        if ds.spec.min_ready_seconds > 0 and plan.status.number_available < plan.status.number_ready:
            self.queue.add_after(key, float(ds.spec.min_ready_seconds) + 1.0)

    async def _current_hash(self, ds: DaemonSet) -> str:
        """``constructHistory``: the revision of the current template (created if new), its
        number raised above every other revision's when it is an earlier one (a rollback:
        "Update revision number if necessary", one plain update, an error fails the sync).
        ``dedupCurHistories``' deletion of duplicates is not modelled: this controller never
        bumps ``collisionCount``, so it never makes two revisions of one template."""
        revisions = self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, ds.metadata.uid)
        data = revision_data(ds)
        current, number = plan_current_history(revisions, data)
        if current is not None:
            if current.revision < number:
                renumbered = deep_copy(current)
                renumbered.revision = number
                await self.client.update(renumbered)
            return current.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL, current.metadata.name.rpartition("-")[2])
        revision = new_revision(ds, data, number, ds.status.collision_count, dict(ds.spec.template.metadata.labels), new_controller_ref(ds))
        try:
            await self.client.create(revision)
        except ApiError as error:
            if error.code != 409:
                raise
        return revision.metadata.labels[CONTROLLER_REVISION_HASH_LABEL]

    async def _cleanup_history(self, ds: DaemonSet, pods_by_node: Mapping[str, Sequence[Pod]]) -> None:
        """``cleanupHistory`` (after ``manage`` and ``rollingUpdate`` in ``updateDaemonSet``):
        old revisions beyond ``revisionHistoryLimit`` deleted, oldest first, but none a pod
        of the set still carries the hash of; an error (a 404 too) fails the sync."""
        revisions = self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, ds.metadata.uid)
        live = {pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL, "") for pods in pods_by_node.values() for pod in pods} - {""}
        limit = 10 if ds.spec.revision_history_limit is None else ds.spec.revision_history_limit
        for revision in old_histories_to_clean(revisions, revision_data(ds), live, limit):
            await self.client.delete("controllerrevisions", revision.metadata.namespace, revision.metadata.name)

    async def _pods_by_node(self, ds: DaemonSet) -> dict[str, list[Pod]]:
        """``getNodesToDaemonPods`` after ``ClaimPods``: the set's pods by their node (the
        node the pod is bound to, else the node its affinity pins). Its own pods and the
        namespace's orphans, by the controller-uid index (others' pods are never claimed)."""
        out: dict[str, list[Pod]] = {}
        for pod in pods_of(self.pods, ds, orphans=True):
            decision = claim_decision(ds, pod, matches(ds.spec.selector, pod.metadata.labels))
            if decision is Claim.ADOPT:
                try:
                    await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, owner_references_patch(pod, [*pod.metadata.owner_references, new_controller_ref(ds)]))
                except ApiError as error:
                    if error.code != 404:
                        raise
                    continue
            elif decision is not Claim.OWN:
                continue
            node = pod.spec.node_name or _pinned_node(pod)
            if node:
                out.setdefault(node, []).append(pod)
        return out

    async def _sync_nodes(self, key: str, ds: DaemonSet, plan: DaemonSetPlan, hash_value: str, now: float) -> None:
        creates = plan.create_on[:BURST_REPLICAS]
        deletes = plan.delete[: max(0, BURST_REPLICAS - len(creates))]
        self.expectations.set(key, len(creates), 0, now)
        if deletes:
            self.expectations.expect_deletions(key, [pod_key(pod) for pod, _ in deletes], now)
            self.expectations.lower(key, -len(creates), 0)
        for pod, reason in deletes:
            if reason == "failed":
                previous, _ = self._failed_backoff.get((key, pod.spec.node_name), (0.0, 0.0))
                self._failed_backoff[(key, pod.spec.node_name)] = (min(FAILED_POD_BACKOFF_MAX_S, max(FAILED_POD_BACKOFF_INITIAL_S, previous * 2)), now)
            try:
                await self.client.delete("pods", pod.metadata.namespace, pod.metadata.name)
            except ApiError as error:
                self.expectations.deletion_observed(key, pod_key(pod))
                if error.code != 404:
                    self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {error.status.message}")
                    raise
            else:
                self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")  # controller_utils.go
            self._record(ds, pod.spec.node_name or _pinned_node(pod), pod.metadata.name, "delete", reason)
        pending = list(creates)

        async def create() -> None:
            node = pending.pop(0)
            try:
                created = await self.client.create(daemon_pod(ds, node, hash_value))
            except ApiError as error:
                self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {error.status.message}")
                raise
            self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created.metadata.name}")  # controller_utils.go
            self._record(ds, node, "", "create", "should run")

        successes, error = await slow_start_batch(len(creates), SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(len(creates) - successes):
            self.expectations.creation_observed(key)
        if error is not None:
            raise error

    async def _update_status(self, ds: DaemonSet, status: DaemonSetStatus) -> None:
        if msgspec.json.encode(status) == msgspec.json.encode(ds.status):
            return
        updated = deep_copy(ds)
        updated.status = status
        try:
            await self.client.update_status(updated)
        except ApiError as error:
            if error.code not in (404, 409):
                raise

    def _record(self, ds: DaemonSet, node: str, pod: str, action: str, reason: str) -> None:
        self.process.world.record("daemonset-pod", daemonset=meta_namespace_key(ds), node=node, pod=pod, action=action, reason=reason, controller=self.name)


def _pinned_node(pod: Pod) -> str:
    """The node a daemon pod's required affinity pins (``metadata.name In [node]``)."""
    return daemon_pod_node(pod) if not pod.spec.node_name else pod.spec.node_name

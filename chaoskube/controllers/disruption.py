"""The disruption controller: the status of every PodDisruptionBudget, as kube-controller-manager's.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/disruption/disruption.go`` — ``sync`` / ``trySync``, ``getPodsForPdb``,
  ``getExpectedPodCount``, ``getExpectedScale`` and the controller finders
  (``getPodReplicaSet``, ``getPodDeployment``, ``verifyGroupKind``),
  ``buildDisruptedPodMap`` (``DeletionTimeout`` 2 min), ``countHealthyPods``,
  ``updatePdbStatus``, ``failSafe``, the recheck queue, the pod and PDB event handlers;
- ``staging/src/k8s.io/component-helpers/apps/poddisruptionbudget/helpers.go`` —
  ``UpdateDisruptionAllowedCondition`` and ``ConditionsAreUpToDate``;
- ``staging/src/k8s.io/apimachinery/pkg/api/meta/conditions.go`` — ``SetStatusCondition``;
- ``staging/src/k8s.io/apimachinery/pkg/util/intstr`` ``GetScaledValueFromIntOrPercent``
  (both minAvailable and maxUnavailable percentages round *up*).

Contract (the controller shape of STYLE.md). :class:`DisruptionController` is built with
``(process, client, informers, config)``; its pod and PDB handlers only enqueue PDB keys.
``await run()`` waits for the pods, poddisruptionbudgets, replicasets and deployments
informers to sync and runs ``config.concurrent_disruption_syncs`` workers and the recheck
worker. A worker computes the status with the pure helpers below (they take ``now``) and
writes it with ``update_status`` (guarded by the cached resourceVersion) only when it
changed.

The arithmetic, for a PDB and the pods its selector picks in its namespace (a missing
selector picks none, an empty one every pod):

- ``expectedPods``: with an integer ``minAvailable``, the number of pods; otherwise the sum
  of the scales (``spec.replicas``) of the pods' controllers — a ReplicaSet, or the
  Deployment owning the ReplicaSet; pods without a controller are *not* counted (upstream
  only warns: "UnmanagedPods"); a pod whose controller cannot be found fails the sync;
- ``desiredHealthy``: ``minAvailable`` (an integer, or a percentage of expected rounded
  up), or ``expected - maxUnavailable`` (a percentage rounded up), at least 0;
- ``currentHealthy``: pods Ready, not being deleted, and not in ``disruptedPods``;
- ``disruptedPods``: the API server's eviction entries for pods not yet being deleted,
  dropped 2 minutes after the eviction (the PDB is rechecked then);
- ``disruptionsAllowed = currentHealthy - desiredHealthy``, 0 when negative or when
  ``expectedPods`` is 0;
- ``observedGeneration`` and the ``DisruptionAllowed`` condition (SufficientPods /
  InsufficientPods).

Fail safe: any error but a write conflict (a controller that cannot be found, an API error)
sets ``disruptionsAllowed`` to 0 with the condition reason ``SyncFailed`` and the error as
its message, so the eviction subresource refuses while the controller cannot tell; the PDB
is retried with rate limiting. A write conflict is only retried.

Journal (sparse): ``pdb-status`` {pdb, disruptions_allowed, current_healthy,
desired_healthy, expected_pods, reason} for each status written.

Differences from upstream, on purpose: a pod event enqueues every PDB that selects the pod
(upstream picks one arbitrarily and warns); ReplicationControllers, StatefulSets and the
scale subresource of other kinds are not modelled, so their pods fail the sync safe; the
stale ``DisruptionTarget`` pod condition cleanup and events are not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import trio

from chaoskube.api.objects import (
    Condition,
    OwnerReference,
    Pod,
    PodDisruptionBudget,
    PodDisruptionBudgetStatus,
    deep_copy,
    matches,
    scaled_value,
)
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import (
    LABEL_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    SharedInformerFactory,
    meta_namespace_key,
    namespace_label_index,
)
from chaoskube.client.workqueue import QueueShutDown, RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.sim.process import Process

__all__ = [
    "CONDITION_DISRUPTION_ALLOWED",
    "ControllerNotFound",
    "DELETION_TIMEOUT_S",
    "DisruptionController",
    "build_disrupted_pod_map",
    "conditions_up_to_date",
    "count_healthy_pods",
    "expected_pod_count",
    "fail_safe_status",
    "find_controller_scale",
    "pdb_selects",
    "pdb_status",
    "set_status_condition",
]

#: ``DeletionTimeout``: an eviction not followed by the pod's deletion within this long is
#: forgotten.
DELETION_TIMEOUT_S = 120.0
CONDITION_DISRUPTION_ALLOWED = "DisruptionAllowed"
REASON_SUFFICIENT_PODS = "SufficientPods"
REASON_INSUFFICIENT_PODS = "InsufficientPods"
REASON_SYNC_FAILED = "SyncFailed"

#: ``(resource, namespace, name) -> object or None``: the informer caches the finders read.
Lookup = Callable[[str, str, str], Any]


class ControllerNotFound(Exception):
    """A selected pod's controller cannot be found (or is of a kind without a known scale):
    the PDB's status cannot be computed and fails safe."""


# =========================================================================== pods
def is_pod_ready(pod: Pod) -> bool:
    """``podutil.IsPodReady``."""
    return any(condition.type == "Ready" and condition.status == "True" for condition in pod.status.conditions)


def pdb_selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    """``getPodsForPdb`` for one pod: same namespace and ``LabelSelectorAsSelector``
    (a missing selector selects nothing, an empty one everything)."""
    return pod.metadata.namespace == pdb.metadata.namespace and matches(pdb.spec.selector, pod.metadata.labels)


def _controller_ref(obj: Any) -> OwnerReference | None:
    """``metav1.GetControllerOf``."""
    return next((reference for reference in obj.metadata.owner_references if reference.controller), None)


def _group_kind_is(reference: OwnerReference, kind: str, groups: Iterable[str]) -> bool:
    """``verifyGroupKind``: the reference's kind and the group of its apiVersion."""
    group = reference.api_version.rpartition("/")[0] if "/" in reference.api_version else ""
    return reference.kind == kind and group in groups


# =========================================================================== scale
def find_controller_scale(reference: OwnerReference, namespace: str, lookup: Lookup) -> tuple[str, int] | None:
    """The finders in upstream's order: (controller uid, scale) of the Deployment that owns
    the referenced ReplicaSet, else of the ReplicaSet itself (when no Deployment controls
    it); None when neither is found or their uids differ from the references'."""
    if _group_kind_is(reference, "ReplicationController", ("",)):  # getPodReplicationController
        controller = lookup("replicationcontrollers", namespace, reference.name)
        if controller is None or controller.metadata.uid != reference.uid:
            return None
        return controller.metadata.uid, _replicas(controller.spec.replicas)
    if _group_kind_is(reference, "StatefulSet", ("apps",)):  # getPodStatefulSet
        stateful_set = lookup("statefulsets", namespace, reference.name)
        if stateful_set is None or stateful_set.metadata.uid != reference.uid:
            return None
        return stateful_set.metadata.uid, _replicas(stateful_set.spec.replicas)
    if not _group_kind_is(reference, "ReplicaSet", ("apps", "extensions")):
        return None
    replica_set = lookup("replicasets", namespace, reference.name)
    if replica_set is None or replica_set.metadata.uid != reference.uid:
        return None
    owner = _controller_ref(replica_set)
    if owner is not None and _group_kind_is(owner, "Deployment", ("apps", "extensions")):  # getPodDeployment
        deployment = lookup("deployments", namespace, owner.name)
        if deployment is None or deployment.metadata.uid != owner.uid:
            return None
        return deployment.metadata.uid, _replicas(deployment.spec.replicas)
    if owner is not None and owner.kind == "Deployment":
        return None  # "Skip RS if it's controlled by a Deployment."
    return replica_set.metadata.uid, _replicas(replica_set.spec.replicas)  # getPodReplicaSet


def _replicas(replicas: int | None) -> int:
    return 1 if replicas is None else replicas  # the API server defaults spec.replicas to 1


def expected_scale(pods: Sequence[Pod], lookup: Lookup) -> tuple[int, list[str]]:
    """``getExpectedScale``: (sum of the scales of the pods' controllers, unmanaged pod
    names). Raises :class:`ControllerNotFound`."""
    scales: dict[str, int] = {}
    unmanaged = []
    for pod in pods:
        reference = _controller_ref(pod)
        if reference is None:
            unmanaged.append(pod.metadata.name)
            continue
        if reference.uid in scales:
            continue
        found = find_controller_scale(reference, pod.metadata.namespace, lookup)
        if found is None:
            raise ControllerNotFound(f'found no controllers for pod "{pod.metadata.name}"')
        scales[found[0]] = found[1]
    return sum(scales.values()), unmanaged


def expected_pod_count(pdb: PodDisruptionBudget, pods: Sequence[Pod], lookup: Lookup) -> tuple[int, int, list[str]]:
    """``getExpectedPodCount``: (expectedCount, desiredHealthy, unmanaged pod names)."""
    spec = pdb.spec
    if spec.max_unavailable is not None:
        expected, unmanaged = expected_scale(pods, lookup)
        max_unavailable = scaled_value(spec.max_unavailable, expected, round_up=True)
        return expected, max(0, expected - max_unavailable), unmanaged
    if spec.min_available is not None:
        if isinstance(spec.min_available, int):
            return len(pods), spec.min_available, []
        expected, unmanaged = expected_scale(pods, lookup)
        return expected, scaled_value(spec.min_available, expected, round_up=True), unmanaged
    return 0, 0, []


# =========================================================================== disrupted pods
def build_disrupted_pod_map(pods: Sequence[Pod], disrupted: Mapping[str, str], now: float) -> tuple[dict[str, str], float | None]:
    """``buildDisruptedPodMap``: the entries of pods that exist and are not being deleted,
    younger than :data:`DELETION_TIMEOUT_S` (kept as written), and when to look again."""
    result: dict[str, str] = {}
    recheck_at: float | None = None
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        written = disrupted.get(pod.metadata.name)
        if written is None:
            continue
        expected_deletion = parse_timestamp(written) + DELETION_TIMEOUT_S
        if expected_deletion < now:
            continue  # "pod was expected to be deleted but it wasn't"
        result[pod.metadata.name] = written
        recheck_at = expected_deletion if recheck_at is None else min(recheck_at, expected_deletion)
    return result, recheck_at


def count_healthy_pods(pods: Sequence[Pod], disrupted: Mapping[str, str], now: float) -> int:
    """``countHealthyPods``: Ready, not being deleted, not recently evicted."""
    healthy = 0
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None:
            continue
        written = disrupted.get(pod.metadata.name)
        if written is not None and parse_timestamp(written) + DELETION_TIMEOUT_S > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


# =========================================================================== status
def set_status_condition(conditions: Sequence[Condition], new: Condition, now: float) -> list[Condition]:
    """``meta.SetStatusCondition`` on a copy: the transition time moves only when the
    status changes (now, unless ``new`` carries one)."""
    result = [deep_copy(condition) for condition in conditions]
    for index, existing in enumerate(result):
        if existing.type != new.type:
            continue
        transition = existing.last_transition_time
        if existing.status != new.status:
            transition = new.last_transition_time or timestamp(now)
        result[index] = Condition(
            type=new.type, status=new.status, observed_generation=new.observed_generation,
            last_transition_time=transition, reason=new.reason, message=new.message,
        )
        return result
    result.append(Condition(
        type=new.type, status=new.status, observed_generation=new.observed_generation,
        last_transition_time=new.last_transition_time or timestamp(now), reason=new.reason, message=new.message,
    ))
    return result


def _allowed_condition(status: PodDisruptionBudgetStatus) -> Condition:
    """``UpdateDisruptionAllowedCondition``'s condition."""
    if status.disruptions_allowed > 0:
        return Condition(type=CONDITION_DISRUPTION_ALLOWED, status="True", reason=REASON_SUFFICIENT_PODS, observed_generation=status.observed_generation)
    return Condition(type=CONDITION_DISRUPTION_ALLOWED, status="False", reason=REASON_INSUFFICIENT_PODS, observed_generation=status.observed_generation)


def conditions_up_to_date(pdb: PodDisruptionBudget) -> bool:
    """``ConditionsAreUpToDate``."""
    condition = next((c for c in pdb.status.conditions if c.type == CONDITION_DISRUPTION_ALLOWED), None)
    if condition is None or pdb.status.observed_generation != pdb.metadata.generation:
        return False
    if pdb.status.disruptions_allowed > 0:
        return condition.status == "True" and condition.reason == REASON_SUFFICIENT_PODS
    return condition.status == "False" and condition.reason == REASON_INSUFFICIENT_PODS


def pdb_status(
    pdb: PodDisruptionBudget, current_healthy: int, desired_healthy: int, expected_pods: int, disrupted: Mapping[str, str], now: float
) -> PodDisruptionBudgetStatus | None:
    """``updatePdbStatus``: the new status, or None when the stored one is up to date."""
    allowed = current_healthy - desired_healthy
    if expected_pods <= 0 or allowed <= 0:
        allowed = 0
    old = pdb.status
    if (
        old.current_healthy == current_healthy
        and old.desired_healthy == desired_healthy
        and old.expected_pods == expected_pods
        and old.disruptions_allowed == allowed
        and dict(old.disrupted_pods) == dict(disrupted)
        and old.observed_generation == pdb.metadata.generation
        and conditions_up_to_date(pdb)
    ):
        return None
    status = PodDisruptionBudgetStatus(
        observed_generation=pdb.metadata.generation,
        disrupted_pods=dict(disrupted),
        disruptions_allowed=allowed,
        current_healthy=current_healthy,
        desired_healthy=desired_healthy,
        expected_pods=expected_pods,
        conditions=[deep_copy(condition) for condition in old.conditions],
    )
    status.conditions = set_status_condition(status.conditions, _allowed_condition(status), now)
    return status


def fail_safe_status(pdb: PodDisruptionBudget, message: str, now: float) -> PodDisruptionBudgetStatus:
    """``failSafe``: the stored status with ``disruptionsAllowed`` 0 and the condition
    False / SyncFailed carrying ``message`` (``observedGeneration`` is left alone)."""
    status = deep_copy(pdb.status)
    status.disruptions_allowed = 0
    condition = Condition(type=CONDITION_DISRUPTION_ALLOWED, status="False", reason=REASON_SYNC_FAILED, message=message, observed_generation=status.observed_generation)
    status.conditions = set_status_condition(status.conditions, condition, now)
    return status


# =========================================================================== the controller
class DisruptionController:
    """``DisruptionController`` (see the module docstring)."""

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        self.process = process
        self.client = client
        self.config = config
        self.pods = informers.informer("pods")
        self.pods.indexer.ensure_indexers({LABEL_INDEX: namespace_label_index})
        self.pdbs = informers.informer("poddisruptionbudgets")
        self.replica_sets = informers.informer("replicasets")
        self.deployments = informers.informer("deployments")
        self.replication_controllers = informers.informer("replicationcontrollers")
        self.stateful_sets = informers.informer("statefulsets")
        self._lookups = {
            "replicasets": self.replica_sets, "deployments": self.deployments,
            "replicationcontrollers": self.replication_controllers, "statefulsets": self.stateful_sets,
        }
        self.queue = RateLimitingQueue(process)
        self.recheck_queue = RateLimitingQueue(process)
        self.pods.add_event_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new), on_delete=self._pod_changed)
        self.pdbs.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._enqueue)

    # -- handlers (enqueue only) ------------------------------------------------------------------
    def _enqueue(self, pdb: Any) -> None:
        self.queue.add(meta_namespace_key(pdb))

    def _pod_changed(self, pod: Any) -> None:
        """``addPod`` / ``updatePod`` / ``deletePod``: the PDBs that select the pod."""
        if isinstance(pod, DeletedFinalStateUnknown):
            pod = pod.obj
        for pdb in self.pdbs.indexer.by_index(NAMESPACE_INDEX, pod.metadata.namespace):
            if pdb_selects(pdb, pod):
                self.queue.add(meta_namespace_key(pdb))

    # -- running ----------------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.pods, self.pdbs, self.replica_sets, self.deployments, self.replication_controllers, self.stateful_sets):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(max(1, self.config.concurrent_disruption_syncs)):
                nursery.start_soon(self._worker)
            nursery.start_soon(self._recheck_worker)

    async def _worker(self) -> None:
        """``processNextWorkItem``: requeue with rate limiting on any sync error."""
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.sync(key)
            except (ApiError, ControllerNotFound):
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    async def _recheck_worker(self) -> None:
        """``processNextRecheckWorkItem``: a delayed recheck goes to the main queue."""
        while True:
            try:
                key = await self.recheck_queue.get()
            except QueueShutDown:
                return
            self.queue.add_rate_limited(key)
            self.recheck_queue.done(key)

    def _lookup(self, resource: str, namespace: str, name: str) -> Any:
        return self._lookups[resource].indexer.get_by_key(f"{namespace}/{name}")

    def pods_for(self, pdb: PodDisruptionBudget) -> list[Pod]:
        """``getPodsForPdb``, from the cache, in key order."""
        selector = pdb.spec.selector
        if selector is None:
            return []  # a missing selector selects nothing
        return [pod for pod in self.pods.indexer.by_labels(pdb.metadata.namespace, selector.match_labels) if pdb_selects(pdb, pod)]

    async def sync(self, key: str) -> None:
        """``sync``: a conflict is only retried; any other failure fails safe, then retried."""
        pdb = self.pdbs.indexer.get_by_key(key)
        if pdb is None:
            return
        try:
            await self._try_sync(pdb)
        except ApiError as error:
            if error.code == 409 and not error.ambiguous:
                raise
            await self._fail_safe(pdb, str(error))
            raise
        except ControllerNotFound as error:
            await self._fail_safe(pdb, str(error))
            raise

    async def _try_sync(self, pdb: PodDisruptionBudget) -> None:
        """``trySync``."""
        pods = self.pods_for(pdb)
        expected, desired, _unmanaged = expected_pod_count(pdb, pods, self._lookup)
        now = self.process.now()
        disrupted, recheck_at = build_disrupted_pod_map(pods, pdb.status.disrupted_pods, now)
        healthy = count_healthy_pods(pods, disrupted, now)
        status = pdb_status(pdb, healthy, desired, expected, disrupted, now)
        if status is not None:
            await self._write(pdb, status)
        if recheck_at is not None:
            self.recheck_queue.add_after(meta_namespace_key(pdb), max(0.0, recheck_at - now))

    async def _fail_safe(self, pdb: PodDisruptionBudget, message: str) -> None:
        """``failSafe``: a failed write here is left to the retry."""
        try:
            await self._write(pdb, fail_safe_status(pdb, message, self.process.now()))
        except ApiError:
            pass

    async def _write(self, pdb: PodDisruptionBudget, status: PodDisruptionBudgetStatus) -> None:
        """``writePdbStatus``: ``UpdateStatus`` with the cached resourceVersion."""
        updated = deep_copy(pdb)
        updated.status = status
        await self.client.update_status(updated)
        condition = next((c for c in status.conditions if c.type == CONDITION_DISRUPTION_ALLOWED), None)
        self.process.world.record(
            "pdb-status", pdb=meta_namespace_key(pdb), disruptions_allowed=status.disruptions_allowed, current_healthy=status.current_healthy,
            desired_healthy=status.desired_healthy, expected_pods=status.expected_pods, reason=condition.reason if condition is not None else "",
        )

    def statistics(self) -> dict[str, Any]:
        return {"pdbs": len(self.pdbs.indexer), "queued": len(self.queue)}

"""The ReplicaSet controller, as kube-controller-manager's ``pkg/controller/replicaset``.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/replicaset/replica_set.go`` — event handlers, ``syncReplicaSet``,
  ``manageReplicas`` (``BurstReplicas`` 500, ``slowStartBatch``), ``getPodsToDelete``,
  ``getPodsRankedByRelatedPodsOnSameNode``, ``claimPods``;
- ``pkg/controller/replicaset/replica_set_utils.go`` — ``calculateStatus``,
  ``updateReplicaSetStatus`` (one GET/PUT retry, ``statusUpdateRetries`` = 1);
- ``pkg/controller/controller_utils.go`` — ``ControllerExpectations`` /
  ``UIDTrackingControllerExpectations`` (``ExpectationsTimeout`` 5 min),
  ``SlowStartInitialBatchSize`` 1, ``ActivePodsWithRanks.Less``, ``FilterActivePods``,
  ``GetPodFromTemplate``;
- ``pkg/controller/controller_ref_manager.go`` — ``ClaimObject``: adopt orphans that match
  the selector (after a quorum re-read of the owner, ``RecheckDeletionTimestamp``), release
  owned objects that no longer match;
- ``pkg/api/v1/pod/util.go`` — ``IsPodReady``, ``IsPodAvailable``.

Contract (the controller shape of STYLE.md): :class:`ReplicaSetController` is built with
``(process, client, informers, config)``; its informer handlers only enqueue keys (and count
observed creations/deletions into the expectations, as upstream's handlers do);
``await run()`` waits for the pods and replicasets informers to sync and runs
``config.concurrent_replicaset_syncs`` workers. A worker reads the caches, decides with the
pure helpers below (they take ``now``; no clock reads, no I/O), writes through the client
only when something must change, and requeues with rate limiting on error.

Guarantees, as upstream's:

- after creating or deleting N pods for a ReplicaSet, the controller does not act on its
  pods again until its informer has observed those N events or
  :data:`EXPECTATIONS_TIMEOUT_S` has passed: a slow watch does not cause over-creation;
- pods are created in slow-start batches of 1, 2, 4, ...; the first failure stops the
  rest (they are retried on a later sync); at most :data:`BURST_REPLICAS` per sync;
- surplus pods are chosen by :func:`get_pods_to_delete` (unassigned, pending, not ready,
  low deletion cost, doubled-up, recently ready, restarting, young first);
- status is written only when it changed (``replicas``, ``fullyLabeledReplicas``,
  ``readyReplicas``, ``availableReplicas`` with ``minReadySeconds``, ``observedGeneration``,
  the ``ReplicaFailure`` condition).

Journal (sparse): ``{"type": "replicaset-pods", "replicaset", "action": "create" |
"delete", "want", "done"}`` once per ``manageReplicas`` decision; a delete also names the
``pods`` it chose (``namespace/name``), so the workload-invariants checker can tell the
controller's own deletions from evictions and faults.

Events (``record.EventRecorder``, as ``RealPodControl``): SuccessfulCreate "Created pod: <name>",
SuccessfulDelete "Deleted pod: <name>", FailedCreate / FailedDelete "Error creating: ...".

Non-guarantees and simplifications: no metrics;
``status.terminatingReplicas`` (alpha feature gate) is not computed; adoption and release
use a JSON merge patch of the whole ``ownerReferences`` list guarded by the object's
resourceVersion (upstream sends a strategic merge patch keyed by uid, which this API server
does not implement); a namespace being terminated is recognised by its admission message
(the API server here sends no ``NamespaceTerminating`` status cause). The expectations
table is bounded by the ReplicaSets in the cache: an entry is removed when its ReplicaSet
is deleted (``DeleteExpectations``).

Also here, shared with the deployment controller and the garbage collector: owner
references (:func:`controller_ref`, :func:`new_controller_ref`), the controller-ref
manager's decision (:func:`claim_decision`) and the work loop every controller's workers
run (:func:`work_loop`).
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.objects import (
    LabelSelector,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodTemplateSpec,
    ReplicaSet,
    ReplicaSetCondition,
    ReplicaSetStatus,
    deep_copy,
    matches,
)
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    SharedInformer,
    SharedInformerFactory,
    meta_namespace_key,
    split_meta_namespace_key,
)
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import QueueShutDown, RateLimitingQueue
from chaoskube.config import ControllerManagerConfig

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "BURST_REPLICAS",
    "CONTROLLER_UID_INDEX",
    "Claim",
    "ControllerError",
    "ControllerExpectations",
    "EXPECTATIONS_TIMEOUT_S",
    "ORPHAN_POD_INDEX_KEY",
    "POD_CONTROLLER_UID_INDEX",
    "POD_DELETION_COST_ANNOTATION",
    "ReplicaSetController",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "add_index",
    "calculate_status",
    "claim_decision",
    "controller_ref",
    "controller_uid_index",
    "filter_active_pods",
    "get_pods_to_delete",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "namespace_terminating",
    "new_controller_ref",
    "orphan_pod_index_key",
    "owner_references_patch",
    "pod_controller_uid_index",
    "pod_from_template",
    "pod_key",
    "pod_ready_time",
    "pods_of",
    "pods_ranked_less",
    "selector_selects",
    "slow_start_batch",
    "slow_start_batch_sizes",
    "status_needs_update",
    "work_loop",
]

#: ``replicaset.BurstReplicas``: at most this many creates or deletes per sync.
BURST_REPLICAS = 500
#: ``controller.SlowStartInitialBatchSize``.
SLOW_START_INITIAL_BATCH_SIZE = 1
#: ``controller.ExpectationsTimeout``: unobserved expectations expire after 5 minutes.
EXPECTATIONS_TIMEOUT_S = 300.0
#: ``replicaset.statusUpdateRetries``: one GET + PUT after a failed status update.
STATUS_UPDATE_RETRIES = 1
#: ``core.PodDeletionCost`` (feature PodDeletionCost, on by default since 1.22).
POD_DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
#: ``replicaset.controllerUIDIndex``: ReplicaSets by their controller's uid.
CONTROLLER_UID_INDEX = "controllerUID"
#: ``controller.PodControllerUIDIndex``: pods by their controller's uid (orphans by namespace).
POD_CONTROLLER_UID_INDEX = "podControllerUID"
#: ``controller.OrphanPodIndexKey``: the index value of pods with no controller.
ORPHAN_POD_INDEX_KEY = "_ORPHAN_POD"
#: ``apps.ReplicaSetReplicaFailure``.
REPLICA_FAILURE = "ReplicaFailure"
#: ``v1.PodPending`` < ``v1.PodUnknown`` < ``v1.PodRunning`` (``podPhaseToOrdinal``).
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


class ControllerError(Exception):
    """A sync failed in a way that a later retry may fix (the key is requeued)."""


# =========================================================================== owner references
def controller_ref(obj: Any) -> OwnerReference | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``, if any."""
    for reference in obj.metadata.owner_references:
        if reference.controller:
            return reference
    return None


def new_controller_ref(owner: Any) -> OwnerReference:
    """``metav1.NewControllerRef``: controller and blockOwnerDeletion set."""
    meta = owner.metadata
    assert meta.uid, "an owner reference needs the owner's uid"
    return OwnerReference(
        api_version=owner.API_VERSION, kind=owner.KIND, name=meta.name, uid=meta.uid, controller=True, block_owner_deletion=True
    )


class Claim(enum.Enum):
    """What ``ControllerRefManager.ClaimObject`` does with one object."""

    OWN = "own"  # ours and it matches: claimed
    ADOPT = "adopt"  # an orphan that matches: adopt it (patch), then claimed
    RELEASE = "release"  # ours but no longer matches: release it (patch)
    IGNORE = "ignore"  # someone else's, or nothing to do


def claim_decision(owner: Any, obj: Any, selected: bool) -> Claim:
    """``ControllerRefManager.ClaimObject`` (``controller_ref_manager.go``) as a pure
    decision: ``selected`` says whether ``owner``'s selector matches ``obj``'s labels."""
    reference = controller_ref(obj)
    owner_meta = owner.metadata
    if reference is not None:
        if reference.uid != owner_meta.uid:
            return Claim.IGNORE  # owned by someone else
        if selected:
            return Claim.OWN  # claimed even while the owner is being deleted: no action
        if owner_meta.deletion_timestamp is not None:
            return Claim.IGNORE
        return Claim.RELEASE
    # an orphan
    if owner_meta.deletion_timestamp is not None or not selected:
        return Claim.IGNORE
    if obj.metadata.deletion_timestamp is not None:
        return Claim.IGNORE
    if owner_meta.namespace and owner_meta.namespace != obj.metadata.namespace:
        return Claim.IGNORE
    return Claim.ADOPT


def owner_references_patch(obj: Any, references: Sequence[OwnerReference]) -> dict[str, Any]:
    """A JSON merge patch that sets ``obj``'s owner references to ``references``, with
    ``uid`` and ``resourceVersion`` preconditions (the list is replaced whole, so the
    resourceVersion guards against a concurrent change; see the module docstring)."""
    return {
        "metadata": {
            "ownerReferences": [msgspec.to_builtins(reference) for reference in references],
            "uid": obj.metadata.uid,
            "resourceVersion": obj.metadata.resource_version,
        }
    }


def selector_selects(selector: LabelSelector | None, labels: dict[str, str]) -> bool:
    """A selector that is set and not empty matches ``labels`` (``GetPodReplicaSets``
    skips empty selectors: they would select everything)."""
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return False
    return matches(selector, labels)


def add_index(informer: SharedInformer, name: str, function: Callable[[Any], list[str]]) -> None:
    """Add a named index unless a controller sharing the informer already added it (the
    same name always means the same function here)."""
    try:
        informer.indexer.add_indexers({name: function})
    except ValueError:
        pass


def controller_uid_index(obj: Any) -> list[str]:
    """The ``controllerUID`` index function: the controller reference's uid."""
    reference = controller_ref(obj)
    return [reference.uid] if reference is not None else []


def orphan_pod_index_key(namespace: str) -> str:
    """The :data:`POD_CONTROLLER_UID_INDEX` value of the orphan pods of ``namespace``."""
    return f"{ORPHAN_POD_INDEX_KEY}/{namespace}"


def pod_controller_uid_index(pod: Any) -> list[str]:
    """``AddPodControllerUIDIndexer`` (``pkg/controller/controller_utils.go``): a pod is
    filed under its controller's uid, an orphan under its namespace's orphan key, so a
    controller reads its own pods and the orphans it may adopt without scanning every pod
    of the namespace (``replica_set.go`` ``getRSPods``: "Iterate over two keys: the UID of
    the RS ... and the OrphanPodIndexKey")."""
    reference = controller_ref(pod)
    return [reference.uid] if reference is not None else [orphan_pod_index_key(pod.metadata.namespace)]


def pods_of(informer: SharedInformer, owner: Any, *, orphans: bool) -> list[Pod]:
    """The pods ``owner`` controls (and, with ``orphans``, the orphans of its namespace),
    sorted by key as a namespace list is: its pods are the same in the same order, since
    a pod controlled by anyone else is never claimed."""
    index = informer.indexer
    keys = index.index_keys(POD_CONTROLLER_UID_INDEX, owner.metadata.uid)
    if orphans:
        keys = sorted(keys + index.index_keys(POD_CONTROLLER_UID_INDEX, orphan_pod_index_key(owner.metadata.namespace)))
    pods = []
    for key in keys:
        pod = index.get_by_key(key)
        if pod.metadata.namespace == owner.metadata.namespace:
            pods.append(pod)
    return pods


# =========================================================================== pods
def pod_key(pod: Pod) -> str:
    """``controller.PodKey``: ``<namespace>/<name>``."""
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def is_pod_ready(pod: Pod) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    return any(condition.type == "Ready" and condition.status == "True" for condition in pod.status.conditions)


def pod_ready_time(pod: Pod) -> float | None:
    """The Ready condition's lastTransitionTime (virtual seconds) if the pod is ready."""
    for condition in pod.status.conditions:
        if condition.type == "Ready" and condition.status == "True":
            return parse_timestamp(condition.last_transition_time) if condition.last_transition_time else None
    return None


def is_pod_available(pod: Pod, min_ready_seconds: int, now: float) -> bool:
    """``podutil.IsPodAvailable``: ready, and ready for more than ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    ready_at = pod_ready_time(pod)
    return ready_at is not None and ready_at + min_ready_seconds < now


def is_pod_active(pod: Pod) -> bool:
    """``controller.IsPodActive``: not terminal and not being deleted."""
    return pod.status.phase not in ("Succeeded", "Failed") and pod.metadata.deletion_timestamp is None


def filter_active_pods(pods: Iterable[Pod]) -> list[Pod]:
    """``controller.FilterActivePods``."""
    return [pod for pod in pods if is_pod_active(pod)]


def pod_from_template(template: PodTemplateSpec, owner: Any, reference: OwnerReference | None) -> Pod:
    """``controller.GetPodFromTemplate``: labels, annotations and finalizers of the
    template, ``generateName`` "<owner>-", the controller reference, the template's spec."""
    meta = ObjectMeta(
        generate_name=f"{owner.metadata.name}-",
        namespace=owner.metadata.namespace,
        labels=dict(template.metadata.labels),
        annotations=dict(template.metadata.annotations),
        finalizers=list(template.metadata.finalizers),
        owner_references=[reference] if reference is not None else [],
    )
    return Pod(metadata=meta, spec=deep_copy(template.spec))


def namespace_terminating(error: ApiError) -> bool:
    """A create refused because the namespace is being deleted (upstream:
    ``apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause)``)."""
    return error.code == 403 and "because it is being terminated" in error.message


# =========================================================================== ranking
def _deletion_cost(pod: Pod) -> int:
    """``helper.GetDeletionCostFromPodAnnotations``: 0 when absent or not an int32."""
    text = pod.metadata.annotations.get(POD_DELETION_COST_ANNOTATION)
    if text is None:
        return 0
    try:
        value = int(text)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def _max_container_restarts(pod: Pod) -> int:
    return max((status.restart_count for status in pod.status.container_statuses), default=0)


def _after_or_zero(first: float | None, second: float | None) -> bool:
    """``afterOrZero``: a zero time sorts first; else the later one first."""
    if first is None or second is None:
        return first is None
    return first > second


def _logarithmic_rank(moment: float, now: float) -> int:
    """``logarithmicRankDiff``'s rank: floor(log2 of the age in nanoseconds), -1 if not past."""
    age_ns = (now - moment) * 1e9
    return int(math.log2(age_ns)) if age_ns > 0 else -1


def _compare_times(first: float | None, second: float | None, uid_first: str, uid_second: str, now: float | None) -> bool:
    """Rules 6 and 8 with ``LogarithmicScaleDown`` (on by default since 1.22): times in the
    same power-of-two age bucket are ordered by uid, a pseudorandom but stable order."""
    if now is None or first is None or second is None:
        return _after_or_zero(first, second)
    difference = _logarithmic_rank(first, now) - _logarithmic_rank(second, now)
    if difference == 0:
        return uid_first < uid_second
    return difference < 0


def pods_ranked_less(first: Pod, second: Pod, rank_first: int, rank_second: int, now: float | None) -> bool:
    """``ActivePodsWithRanks.Less``: True when ``first`` should be deleted before
    ``second``. ``rank_*`` is the number of related active pods on the pod's node."""
    node_first, node_second = first.spec.node_name, second.spec.node_name
    # 1. unassigned < assigned
    if node_first != node_second and (not node_first or not node_second):
        return not node_first
    # 2. Pending < Unknown < Running
    phase_first, phase_second = _PHASE_ORDINAL.get(first.status.phase, 0), _PHASE_ORDINAL.get(second.status.phase, 0)
    if phase_first != phase_second:
        return phase_first < phase_second
    # 3. not ready < ready
    ready_first, ready_second = is_pod_ready(first), is_pod_ready(second)
    if ready_first != ready_second:
        return not ready_first
    # 4. lower pod-deletion-cost < higher
    cost_first, cost_second = _deletion_cost(first), _deletion_cost(second)
    if cost_first != cost_second:
        return cost_first < cost_second
    # 5. doubled up < not doubled up
    if rank_first != rank_second:
        return rank_first > rank_second
    # 6. been ready for less time < more time
    if ready_first and ready_second:
        time_first, time_second = pod_ready_time(first), pod_ready_time(second)
        if time_first != time_second:
            return _compare_times(time_first, time_second, first.metadata.uid, second.metadata.uid, now)
    # 7. more container restarts < fewer
    restarts_first, restarts_second = _max_container_restarts(first), _max_container_restarts(second)
    if restarts_first != restarts_second:
        return restarts_first > restarts_second
    # 8. newer < older
    created_first = parse_timestamp(first.metadata.creation_timestamp) if first.metadata.creation_timestamp else None
    created_second = parse_timestamp(second.metadata.creation_timestamp) if second.metadata.creation_timestamp else None
    if created_first != created_second:
        return _compare_times(created_first, created_second, first.metadata.uid, second.metadata.uid, now)
    return False


def get_pods_to_delete(filtered: Sequence[Pod], related: Sequence[Pod], diff: int, now: float | None) -> list[Pod]:
    """``getPodsToDelete``: the ``diff`` pods of ``filtered`` to delete first, ranked with
    ``getPodsRankedByRelatedPodsOnSameNode`` (rank = active ``related`` pods on the node)."""
    assert 0 <= diff <= len(filtered), (diff, len(filtered))
    if diff == len(filtered):
        return list(filtered)
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            on_node[pod.spec.node_name] = on_node.get(pod.spec.node_name, 0) + 1
    ranked = [(pod, on_node.get(pod.spec.node_name, 0)) for pod in filtered]

    def compare(a: tuple[Pod, int], b: tuple[Pod, int]) -> int:
        if pods_ranked_less(a[0], b[0], a[1], b[1], now):
            return -1
        if pods_ranked_less(b[0], a[0], b[1], a[1], now):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked[:diff]]


# =========================================================================== slow start
def slow_start_batch_sizes(count: int, initial: int = SLOW_START_INITIAL_BATCH_SIZE) -> list[int]:
    """The batch sizes ``slowStartBatch`` uses when every call succeeds: ``initial``,
    doubling, the last one what is left (5 -> [1, 2, 2])."""
    assert count >= 0 and initial >= 1
    sizes, remaining, size = [], count, min(count, initial)
    while size > 0:
        sizes.append(size)
        remaining -= size
        size = min(2 * size, remaining)
    return sizes


async def slow_start_batch(count: int, initial: int, call: Callable[[], Awaitable[None]]) -> tuple[int, ApiError | ControllerError | None]:
    """``slowStartBatch``: run ``call`` ``count`` times in batches of growing size, the
    calls of a batch concurrently; after a batch with a failure, stop. Returns (successes,
    the first error). ``call`` raises :class:`ApiError` or :class:`ControllerError` to fail."""
    successes, remaining = 0, count
    size = min(remaining, initial)
    while size > 0:
        errors: list[ApiError | ControllerError] = []

        async def one() -> None:
            try:
                await call()
            except (ApiError, ControllerError) as error:
                errors.append(error)

        async with trio.open_nursery() as nursery:
            for _ in range(size):
                nursery.start_soon(one)
        successes += size - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= size
        size = min(2 * size, remaining)
    return successes, None


# =========================================================================== expectations
@dataclass(slots=True)
class _Expectation:
    add: int
    delete: int
    timestamp: float


@dataclass(slots=True)
class ControllerExpectations:
    """``UIDTrackingControllerExpectations`` over ``ControllerExpectations``
    (``controller_utils.go``), pure: time is passed in.

    ``expect_creations`` / ``expect_deletions`` replace a controller's expectations;
    ``creation_observed`` / ``deletion_observed`` lower them as the informer sees the
    events (a deletion counts once per expected pod key, so a graceful delete seen first as
    a deletionTimestamp and then as a DELETED event counts once); ``satisfied`` is True when
    nothing is expected, everything expected was observed, or the expectations are older
    than ``timeout_s``."""

    timeout_s: float = EXPECTATIONS_TIMEOUT_S
    _entries: dict[str, _Expectation] = field(default_factory=dict)
    _deletions: dict[str, set[str]] = field(default_factory=dict)  # membership only

    def get(self, key: str) -> tuple[int, int] | None:
        entry = self._entries.get(key)
        return None if entry is None else (entry.add, entry.delete)

    def satisfied(self, key: str, now: float) -> bool:
        """``SatisfiedExpectations``."""
        entry = self._entries.get(key)
        if entry is None:
            return True  # never set, or deleted
        if entry.add <= 0 and entry.delete <= 0:
            return True
        return now - entry.timestamp > self.timeout_s

    def set(self, key: str, add: int, delete: int, now: float) -> None:
        self._entries[key] = _Expectation(add, delete, now)

    def expect_creations(self, key: str, adds: int, now: float) -> None:
        self.set(key, adds, 0, now)

    def expect_deletions(self, key: str, pod_keys: Iterable[str], now: float) -> None:
        expected = set(pod_keys)
        self._deletions[key] = expected
        self.set(key, 0, len(expected), now)

    def lower(self, key: str, add: int, delete: int) -> None:
        entry = self._entries.get(key)
        if entry is not None:
            entry.add -= add
            entry.delete -= delete

    def creation_observed(self, key: str) -> None:
        self.lower(key, 1, 0)

    def deletion_observed(self, key: str, deleted_pod_key: str) -> None:
        expected = self._deletions.get(key)
        if expected is not None and deleted_pod_key in expected:
            expected.discard(deleted_pod_key)
            self.lower(key, 0, 1)

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)
        self._deletions.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


# =========================================================================== status
def _set_condition(conditions: list[ReplicaSetCondition], condition: ReplicaSetCondition) -> list[ReplicaSetCondition]:
    """``SetCondition``: replace the condition of that type unless status and reason match."""
    for current in conditions:
        if current.type == condition.type and current.status == condition.status and current.reason == condition.reason:
            return conditions
    return [c for c in conditions if c.type != condition.type] + [condition]


def calculate_status(rs: ReplicaSet, filtered_pods: Sequence[Pod], manage_error: str | None, now: float) -> ReplicaSetStatus:
    """``calculateStatus``: counts over the claimed active pods, and the ReplicaFailure
    condition set (FailedCreate / FailedDelete) or removed after ``manageReplicas``.
    ``observedGeneration`` is set by :func:`status_needs_update`'s caller."""
    status = deep_copy(rs.status)
    template_labels = rs.spec.template.metadata.labels
    fully_labeled = ready = available = 0
    for pod in filtered_pods:
        if all(pod.metadata.labels.get(key) == value for key, value in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, rs.spec.min_ready_seconds, now):
                available += 1
    failure = next((c for c in rs.status.conditions if c.type == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(filtered_pods) - (rs.spec.replicas or 0)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        condition = ReplicaSetCondition(type=REPLICA_FAILURE, status="True", reason=reason, message=manage_error, last_transition_time=timestamp(now))
        status.conditions = _set_condition(list(status.conditions), condition)
    elif manage_error is None and failure is not None:
        status.conditions = [c for c in status.conditions if c.type != REPLICA_FAILURE]
    status.replicas = len(filtered_pods)
    status.fully_labeled_replicas = fully_labeled
    status.ready_replicas = ready
    status.available_replicas = available
    return status


def status_needs_update(rs: ReplicaSet, status: ReplicaSetStatus) -> bool:
    """``updateReplicaSetStatus``'s steady-state check: anything counted changed, or the
    generation is not yet observed."""
    current = rs.status
    return not (
        current.replicas == status.replicas
        and current.fully_labeled_replicas == status.fully_labeled_replicas
        and current.ready_replicas == status.ready_replicas
        and current.available_replicas == status.available_replicas
        and rs.metadata.generation == current.observed_generation
        and current.conditions == status.conditions
    )


# =========================================================================== the work loop
async def work_loop(
    queue: RateLimitingQueue,
    sync: Callable[[Any], Awaitable[None]],
    *,
    max_retries: int | None = None,
    on_drop: Callable[[Hashable, BaseException], None] | None = None,
) -> None:
    """One worker (``processNextWorkItem`` of every controller): get a key, sync it, then
    ``forget`` on success, ``add_rate_limited`` on :class:`ApiError` /
    :class:`ControllerError` (or, past ``max_retries`` requeues, forget and drop it, as the
    deployment controller's ``handleErr`` does), and always ``done``. Returns when the
    queue shuts down; any other exception is a bug and propagates."""
    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        try:
            await sync(key)
        except (ApiError, ControllerError) as error:
            if max_retries is None or queue.num_requeues(key) < max_retries:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
                if on_drop is not None:
                    on_drop(key, error)
        else:
            queue.forget(key)
        finally:
            queue.done(key)


# =========================================================================== the controller
class ReplicaSetController:
    """``ReplicaSetController`` (see the module docstring)."""

    KIND = "ReplicaSet"
    RESOURCE = "replicasets"

    @staticmethod
    def selector_of(rs: Any) -> LabelSelector | None:
        """The owner's label selector (a ReplicationController's map as matchLabels)."""
        return rs.spec.selector

    def __init__(
        self,
        process: Process,
        client: ApiClient,
        informers: SharedInformerFactory,
        config: ControllerManagerConfig,
        *,
        burst_replicas: int = BURST_REPLICAS,
        name: str = "replicaset-controller",
    ) -> None:
        assert burst_replicas > 0
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.recorder = EventRecorder(client, name)
        self.burst_replicas = burst_replicas
        self.expectations = ControllerExpectations()
        self.queue = RateLimitingQueue(process)
        self.rs_informer = informers.informer(self.RESOURCE)
        self.pod_informer = informers.informer("pods")
        add_index(self.rs_informer, CONTROLLER_UID_INDEX, controller_uid_index)
        add_index(self.pod_informer, POD_CONTROLLER_UID_INDEX, pod_controller_uid_index)
        self.rs_informer.add_event_handler(self._add_rs, self._update_rs, self._delete_rs)
        self.pod_informer.add_event_handler(self._add_pod, self._update_pod, self._delete_pod)

    # -- cache reads --------------------------------------------------------------------
    def _rs(self, namespace: str, name: str) -> ReplicaSet | None:
        return self.rs_informer.indexer.get_by_key(f"{namespace}/{name}")

    def _resolve_controller_ref(self, namespace: str, reference: OwnerReference) -> ReplicaSet | None:
        """``resolveControllerRef``: by name, then the uid must match."""
        if reference.kind != self.KIND:
            return None
        rs = self._rs(namespace, reference.name)
        if rs is None or rs.metadata.uid != reference.uid:
            return None
        return rs

    def _pod_replica_sets(self, pod: Pod) -> list[ReplicaSet]:
        """``GetPodReplicaSets``: ReplicaSets of the pod's namespace whose selector matches."""
        return [
            rs for rs in self.rs_informer.indexer.by_index(NAMESPACE_INDEX, pod.metadata.namespace)
            if selector_selects(self.selector_of(rs), pod.metadata.labels)
        ]

    # -- handlers (enqueue only; count observations into the expectations) --------------
    def _enqueue(self, rs: ReplicaSet) -> None:
        self.queue.add(meta_namespace_key(rs))

    def _add_rs(self, rs: ReplicaSet) -> None:
        self._enqueue(rs)

    def _update_rs(self, old: ReplicaSet, new: ReplicaSet) -> None:
        if old.metadata.uid != new.metadata.uid:
            self._delete_rs(DeletedFinalStateUnknown(meta_namespace_key(old), old))
        # Sync on every update, resyncs included (see upstream's comment in updateRS).
        self._enqueue(new)

    def _delete_rs(self, obj: Any) -> None:
        rs = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if getattr(rs, "KIND", None) != self.KIND:
            return
        key = meta_namespace_key(rs)
        self.expectations.delete(key)
        self.queue.add(key)

    def _add_pod(self, pod: Pod) -> None:
        if pod.metadata.deletion_timestamp is not None:
            self._delete_pod(pod)  # a restarted controller sees a pod already being deleted
            return
        reference = controller_ref(pod)
        if reference is not None:
            rs = self._resolve_controller_ref(pod.metadata.namespace, reference)
            if rs is None:
                return
            key = meta_namespace_key(rs)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        for rs in self._pod_replica_sets(pod):  # an orphan: who wants to adopt it?
            self._enqueue(rs)

    def _update_pod(self, old: Pod, new: Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return  # a resync: nothing changed
        labels_changed = old.metadata.labels != new.metadata.labels
        if new.metadata.deletion_timestamp is not None:
            # a graceful delete: act now rather than when the kubelet removes it
            self._delete_pod(new)
            if labels_changed:
                self._delete_pod(old)
            return
        new_ref, old_ref = controller_ref(new), controller_ref(old)
        ref_changed = new_ref != old_ref
        if ref_changed and old_ref is not None:
            previous = self._resolve_controller_ref(old.metadata.namespace, old_ref)
            if previous is not None:
                self._enqueue(previous)
        if new_ref is not None:
            rs = self._resolve_controller_ref(new.metadata.namespace, new_ref)
            if rs is None:
                return
            self._enqueue(rs)
            if not is_pod_ready(old) and is_pod_ready(new) and rs.spec.min_ready_seconds > 0:
                # check availability once minReadySeconds have passed (+1 s against skew)
                self.queue.add_after(meta_namespace_key(rs), rs.spec.min_ready_seconds + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self._pod_replica_sets(new):
                self._enqueue(rs)

    def _delete_pod(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, Pod):
            return
        reference = controller_ref(pod)
        if reference is None:
            return
        rs = self._resolve_controller_ref(pod.metadata.namespace, reference)
        if rs is None:
            return
        key = meta_namespace_key(rs)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- running --------------------------------------------------------------------------
    async def run(self) -> None:
        """Wait for the caches, then run the workers (never returns)."""
        await self.pod_informer.wait_for_sync()
        await self.rs_informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_replicaset_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    # -- sync -----------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        """``syncReplicaSet``: raises ApiError / ControllerError to be retried."""
        namespace, name = split_meta_namespace_key(key)
        cached = self._rs(namespace, name)
        if cached is None:
            self.expectations.delete(key)
            return
        now = self.process.now()
        needs_sync = self.expectations.satisfied(key, now)
        # Its own pods and the namespace's orphans (getRSPods): any other pod of the
        # namespace is someone else's, which claiming would ignore.
        all_pods = pods_of(self.pod_informer, cached, orphans=True)
        filtered = await self._claim_pods(cached, filter_active_pods(all_pods))
        manage_error: ApiError | ControllerError | None = None
        if needs_sync and cached.metadata.deletion_timestamp is None:
            try:
                await self._manage_replicas(key, filtered, cached)
            except (ApiError, ControllerError) as error:
                manage_error = error
        rs = deep_copy(cached)
        status = calculate_status(rs, filtered, str(manage_error) if manage_error is not None else None, self.process.now())
        updated = await self._update_status(rs, status)
        spec_replicas = updated.spec.replicas or 0
        if (
            manage_error is None
            and updated.spec.min_ready_seconds > 0
            and updated.status.ready_replicas == spec_replicas
            and updated.status.available_replicas != spec_replicas
        ):
            # the last line of defence against clock skew, as upstream
            self.queue.add_after(key, float(updated.spec.min_ready_seconds))
        if manage_error is not None:
            raise manage_error

    async def _claim_pods(self, rs: ReplicaSet, pods: list[Pod]) -> list[Pod]:
        """``claimPods`` / ``ClaimPods``: the pods this ReplicaSet owns after adopting and
        releasing. Raises ControllerError if an adoption or release failed."""
        claimed: list[Pod] = []
        failures: list[str] = []
        can_adopt: list[bool] = []  # the quorum re-read, done at most once per sync
        for pod in pods:
            decision = claim_decision(rs, pod, matches(self.selector_of(rs), pod.metadata.labels))
            if decision is Claim.OWN:
                claimed.append(pod)
            elif decision is Claim.ADOPT:
                try:
                    if not can_adopt:
                        can_adopt.append(await self._can_adopt(rs))
                    if not can_adopt[0]:
                        raise ControllerError(f"can't adopt Pod {pod_key(pod)}: {rs.metadata.namespace}/{rs.metadata.name} has just been deleted")
                    references = [*pod.metadata.owner_references, new_controller_ref(rs)]
                    await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, owner_references_patch(pod, references))
                    claimed.append(pod)
                except ApiError as error:
                    if error.code != 404:
                        failures.append(str(error))
                except ControllerError as error:
                    failures.append(str(error))
            elif decision is Claim.RELEASE:
                references = [r for r in pod.metadata.owner_references if r.uid != rs.metadata.uid]
                try:
                    await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, owner_references_patch(pod, references))
                except ApiError as error:
                    if error.code not in (404, 422):  # gone, or no longer ours
                        failures.append(str(error))
        if failures:
            raise ControllerError("; ".join(failures))
        return claimed

    async def _can_adopt(self, rs: ReplicaSet) -> bool:
        """``RecheckDeletionTimestamp``: a quorum GET; False when it is being deleted.
        Raises ControllerError when it is gone or replaced by another with the same name."""
        try:
            fresh = await self.client.get(self.RESOURCE, rs.metadata.namespace, rs.metadata.name)
        except ApiError as error:
            raise ControllerError(f"can't recheck {rs.metadata.namespace}/{rs.metadata.name}: {error}") from error
        if fresh.metadata.uid != rs.metadata.uid:
            raise ControllerError(f"original ReplicaSet {rs.metadata.namespace}/{rs.metadata.name} is gone: got uid {fresh.metadata.uid}, wanted {rs.metadata.uid}")
        return fresh.metadata.deletion_timestamp is None

    async def _manage_replicas(self, key: str, filtered: list[Pod], rs: ReplicaSet) -> None:
        """``manageReplicas``: create or delete pods to reach ``spec.replicas``."""
        diff = len(filtered) - (rs.spec.replicas or 0)
        now = self.process.now()
        if diff < 0:
            wanted = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, wanted, now)
            reference = new_controller_ref(rs)

            async def create() -> None:
                pod = pod_from_template(rs.spec.template, rs, reference)
                # controller_utils.go (RealPodControl.createPods): the owner's Events
                try:
                    created = await self.client.create(pod)
                except ApiError as error:
                    if not namespace_terminating(error):
                        self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {error.status.message}")
                        raise
                    return
                self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {created.metadata.name}")

            successes, error = await slow_start_batch(wanted, SLOW_START_INITIAL_BATCH_SIZE, create)
            for _ in range(wanted - successes):
                self.expectations.creation_observed(key)  # never to be observed
            self._record(key, "create", wanted, successes)
            if error is not None:
                raise error
        elif diff > 0:
            wanted = min(diff, self.burst_replicas)
            related = self._indirectly_related_pods(rs)
            doomed = get_pods_to_delete(filtered, related, wanted, now)
            self.expectations.expect_deletions(key, [pod_key(pod) for pod in doomed], now)
            errors: list[ApiError] = []

            async def delete(pod: Pod) -> None:
                try:
                    await self.client.delete("pods", pod.metadata.namespace, pod.metadata.name)
                except ApiError as error:
                    self.expectations.deletion_observed(key, pod_key(pod))
                    if error.code != 404:
                        self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {error.status.message}")
                        errors.append(error)
                    return
                self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")

            async with trio.open_nursery() as nursery:
                for pod in doomed:
                    nursery.start_soon(delete, pod)
            self._record(key, "delete", wanted, wanted - len(errors), pods=[pod_key(pod) for pod in doomed])
            if errors:
                raise errors[0]

    def _indirectly_related_pods(self, rs: ReplicaSet) -> list[Pod]:
        """``getIndirectlyRelatedPods``: pods of every ReplicaSet with the same controller."""
        reference = controller_ref(rs)
        if reference is None:
            return []  # upstream: "ReplicaSet has no controller", no related pods
        siblings = self.rs_informer.indexer.by_index(CONTROLLER_UID_INDEX, reference.uid)
        seen: set[str] = set()  # membership only
        related: list[Pod] = []
        for sibling in siblings:
            for pod in self.pod_informer.indexer.by_index(NAMESPACE_INDEX, sibling.metadata.namespace):
                if pod.metadata.uid in seen or not matches(self.selector_of(sibling), pod.metadata.labels):
                    continue
                seen.add(pod.metadata.uid)
                related.append(pod)
        return related

    async def _update_status(self, rs: ReplicaSet, status: ReplicaSetStatus) -> ReplicaSet:
        """``updateReplicaSetStatus``: write only on change, one GET + retry on failure."""
        if not status_needs_update(rs, status):
            return rs
        status.observed_generation = rs.metadata.generation
        current = rs
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            current.status = status
            try:
                return await self.client.update_status(current)
            except ApiError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            current = await self.client.get(self.RESOURCE, rs.metadata.namespace, rs.metadata.name)
        raise AssertionError("unreachable")

    def _record(self, key: str, action: str, want: int, done: int, **fields: object) -> None:
        self.process.world.record("replicaset-pods", replicaset=key, action=action, want=want, done=done, controller=self.name, **fields)


class ReplicationControllerManager(ReplicaSetController):
    """``pkg/controller/replication``: upstream runs the ReplicaSet controller's code on
    ReplicationControllers (converted to ReplicaSets and back); so does this: the same
    expectations, slow start, ranking and status, with the equality-based selector map
    read as ``matchLabels`` (``--concurrent-rc-syncs`` 5)."""

    KIND = "ReplicationController"
    RESOURCE = "replicationcontrollers"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        super().__init__(process, client, informers, config, name="replication-controller")

    @staticmethod
    def selector_of(rc: Any) -> LabelSelector | None:
        selector = rc.spec.selector or (rc.spec.template.metadata.labels if rc.spec.template is not None else {})
        return LabelSelector(match_labels=dict(selector)) if selector else None

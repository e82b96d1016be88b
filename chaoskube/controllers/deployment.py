"""The Deployment controller, as kube-controller-manager's ``pkg/controller/deployment``.

Upstream sources followed (kubernetes/kubernetes ``pkg/controller/deployment/``):

- ``deployment_controller.go`` — event handlers, ``syncDeployment`` (selecting-all guard,
  claim ReplicaSets, deletion -> status only, paused, scaling event, strategy), ``handleErr``
  (``maxRetries`` 15), ``getReplicaSetsForDeployment``, ``getPodMapForDeployment``;
- ``sync.go`` — ``sync``, ``checkPausedConditions``, ``getAllReplicaSetsAndSyncRevision``,
  ``getNewReplicaSet`` (name ``<deployment>-<pod-template-hash>``, collision count),
  ``scale`` (proportional scaling), ``scaleReplicaSet``, ``cleanupDeployment``
  (``revisionHistoryLimit``, default 10), ``calculateStatus``, ``isScalingEvent``;
- ``rolling.go`` — ``rolloutRolling``, ``reconcileNewReplicaSet``,
  ``reconcileOldReplicaSets``, ``cleanupUnhealthyReplicas``,
  ``scaleDownOldReplicaSetsForRollingUpdate``;
- ``recreate.go`` — ``rolloutRecreate``, ``oldPodsRunning``;
- ``progress.go`` — ``syncRolloutStatus`` (Progressing / Available conditions,
  ``progressDeadlineSeconds``), ``requeueStuckDeployment``;
- ``util/deployment_util.go`` — annotations (revision, revision-history, desired-replicas,
  max-replicas), ``ResolveFenceposts``, ``MaxSurge``, ``MaxUnavailable``,
  ``NewRSNewReplicas``, ``GetProportion``, ``getReplicaSetFraction``, ``IsSaturated``,
  ``FindNewReplicaSet`` / ``EqualIgnoreHash``, ``DeploymentComplete``,
  ``DeploymentProgressing``, ``DeploymentTimedOut``;
- ``pkg/controller/controller_utils.go`` — ``ComputeHash`` and the ReplicaSet orderings
  (``ReplicaSetsByCreationTimestamp``, ``ReplicaSetsBySizeOlder`` / ``Newer``).

The pod-template hash: upstream hashes the template with FNV-32a over Go's
``DeepHashObject`` (a spew dump), adds the collision count, and encodes the decimal value
with ``rand.SafeEncodeString``. Go's dump format cannot be reproduced here, so
:func:`compute_hash` takes the first 32 bits of the SHA-256 of the template's canonical
JSON (keys sorted, defaults omitted), adds the collision count the same way (8 bytes,
little-endian), and encodes the decimal value with the same alphabet. Hashes therefore
differ from a real cluster's, but keep the properties the controller relies on: stable
across runs and processes, equal templates give equal hashes, a collision count changes it.

Contract: as :mod:`chaoskube.controllers.replicaset` (handlers only enqueue; workers read
the caches, decide with pure helpers that take ``now``, write on change, requeue on error;
a Deployment failing 15 times in a row is dropped until its next event).

Journal: every change of a ReplicaSet's size is recorded as ``{"type":
"deployment-scale", "deployment", "rs", "from", "to", "reason"}`` with reason one of
``new-replica-set`` (created with that size), ``rolling-new``, ``rolling-old-unhealthy``,
``rolling-old``, ``recreate-old``, ``recreate-new``, ``scale`` (the only active or the
latest ReplicaSet takes the deployment's size), ``saturated`` (old ones to 0 once the new
one is saturated), ``proportional`` (a scaling event during a rollout). Drops are recorded
as ``{"type": "deployment-dropped", "deployment", "error"}``.

Non-guarantees and simplifications: like upstream, the controller acts on cached
ReplicaSet statuses and so does not guarantee ``replicas - maxUnavailable`` available pods
when pods fail (it guarantees what upstream does: it never scales old ReplicaSets down
past that bound *by its own count*). Events: ScalingReplicaSet "Scaled up replica set <rs>
from 0 to 3" (``sync.go``); no rollback (the deprecated
``rollbackTo``); no ``kubectl.kubernetes.io/last-applied-configuration`` skipping beyond
the annotation list; no ``status.terminatingReplicas``. The deployment's revision
annotation is written with a merge patch of the main resource, because this API server's
status subresource keeps metadata (upstream's ``deploymentStatusStrategy`` lets a status
update change annotations). Adoption and release of ReplicaSets use a resourceVersion-
guarded merge patch (see :mod:`chaoskube.controllers.replicaset`). The Recreate strategy's
"no old pods running" check reads the pods cache; the deletion handler that wakes it reads
the cache too (upstream lists ReplicaSets through the API there).
"""

from __future__ import annotations

import functools
import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.objects import (
    Deployment,
    DeploymentCondition,
    DeploymentStatus,
    LabelSelector,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodTemplateSpec,
    ReplicaSet,
    ReplicaSetSpec,
    deep_copy,
    matches,
    resolve_fenceposts,
    scaled_value,
)
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    SharedInformerFactory,
    meta_namespace_key,
    split_meta_namespace_key,
)
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import (
    CONTROLLER_UID_INDEX,
    POD_CONTROLLER_UID_INDEX,
    Claim,
    ControllerError,
    add_index,
    claim_decision,
    controller_ref,
    controller_uid_index,
    pod_controller_uid_index,
    pods_of,
    namespace_terminating,
    new_controller_ref,
    owner_references_patch,
    selector_selects,
    work_loop,
)

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "DEFAULT_REVISION_HISTORY_LIMIT",
    "DESIRED_REPLICAS_ANNOTATION",
    "DeploymentController",
    "MAX_REPLICAS_ANNOTATION",
    "MAX_RETRIES",
    "POD_TEMPLATE_HASH_LABEL",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "ScaleStep",
    "calculate_status",
    "cleanup_candidates",
    "cleanup_unhealthy_plan",
    "compute_hash",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "equal_ignore_hash",
    "filter_active_replica_sets",
    "find_active_or_latest",
    "find_new_replica_set",
    "find_old_replica_sets",
    "get_proportion",
    "is_saturated",
    "max_revision",
    "max_scaled_down",
    "max_surge",
    "max_unavailable",
    "new_rs_new_replicas",
    "old_pods_running",
    "old_scale_down_plan",
    "reconcile_new_size",
    "replica_set_fraction",
    "replicas_of",
    "revision",
    "rollout_status",
    "safe_encode_string",
    "scale_down_old_plan",
    "scale_plan",
    "set_deployment_condition",
    "set_new_replica_set_annotations",
    "set_replicas_annotations",
    "sorted_by_creation",
    "stuck_requeue_after",
]

#: ``deploymentutil.RevisionAnnotation`` and friends.
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
#: ``apps.DefaultDeploymentUniqueLabelKey``.
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
#: ``annotationsToSkip``: not copied from the Deployment to its ReplicaSets.
ANNOTATIONS_TO_SKIP = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    "deprecated.deployment.rollback.to",
})
#: ``deployment_controller.go`` ``maxRetries``: requeues before a Deployment is dropped.
MAX_RETRIES = 15
#: ``sync.go`` ``maxRevHistoryLengthInChars``.
MAX_REVISION_HISTORY_LENGTH_IN_CHARS = 2000
#: ``SetDefaults_Deployment``: revisionHistoryLimit 10.
DEFAULT_REVISION_HISTORY_LIMIT = 10
#: ``math.MaxInt32``: "no deadline" / "keep every revision".
MAX_INT32 = 2**31 - 1
#: ``rand.SafeEncodeString``'s alphabet (``k8s.io/apimachinery/pkg/util/rand``).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"

# Condition types and reasons (``deploymentutil``).
PROGRESSING, AVAILABLE, REPLICA_FAILURE = "Progressing", "Available", "ReplicaFailure"
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"


# =========================================================================== small helpers
def replicas_of(obj: Deployment | ReplicaSet) -> int:
    """``*spec.replicas`` (the API server defaults it to 1)."""
    return 1 if obj.spec.replicas is None else obj.spec.replicas


def _created(rs: ReplicaSet) -> float:
    return parse_timestamp(rs.metadata.creation_timestamp) if rs.metadata.creation_timestamp else -math.inf


def sorted_by_creation(rss: Sequence[ReplicaSet], *, newest_first: bool = False) -> list[ReplicaSet]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, ties by name."""
    ordered = sorted(rss, key=lambda rs: (_created(rs), rs.metadata.name))
    return ordered[::-1] if newest_first else ordered


def _sorted_by_size(rss: Sequence[ReplicaSet], *, newer_first_on_ties: bool) -> list[ReplicaSet]:
    """``ReplicaSetsBySizeNewer`` / ``ReplicaSetsBySizeOlder``: larger first; ties newer
    (or older) first."""
    by_age = sorted_by_creation(rss, newest_first=newer_first_on_ties)
    rank = {id(rs): position for position, rs in enumerate(by_age)}
    return sorted(rss, key=lambda rs: (-replicas_of(rs), rank[id(rs)]))


def filter_active_replica_sets(rss: Sequence[ReplicaSet | None]) -> list[ReplicaSet]:
    """``controller.FilterActiveReplicaSets``: those with ``spec.replicas`` > 0."""
    return [rs for rs in rss if rs is not None and replicas_of(rs) > 0]


def _spec_sum(rss: Sequence[ReplicaSet | None]) -> int:
    """``GetReplicaCountForReplicaSets``."""
    return sum(replicas_of(rs) for rs in rss if rs is not None)


def _available_sum(rss: Sequence[ReplicaSet | None]) -> int:
    """``GetAvailableReplicaCountForReplicaSets``."""
    return sum(rs.status.available_replicas for rs in rss if rs is not None)


def _int_annotation(rs: ReplicaSet, key: str) -> int | None:
    text = rs.metadata.annotations.get(key)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _round_half_away(value: float) -> int:
    """``integer.RoundToInt32``."""
    return int(value - 0.5) if value < 0 else int(value + 0.5)


# =========================================================================== hash and templates
def safe_encode_string(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped into a vowel-free alphabet."""
    return "".join(_ALPHANUMS[ord(character) % len(_ALPHANUMS)] for character in text)


def compute_hash(template: PodTemplateSpec, collision_count: int | None) -> str:
    """``controller.ComputeHash`` in spirit (module docstring): a stable 32-bit hash of the
    template (and collision count), as the decimal string encoded by SafeEncodeString."""
    digest = hashlib.sha256(msgspec.json.encode(template, order="sorted"))
    if collision_count is not None:
        digest.update(struct.pack("<I", collision_count & 0xFFFFFFFF) + b"\x00" * 4)
    return safe_encode_string(str(int.from_bytes(digest.digest()[:4], "big")))


def _without_hash(template: PodTemplateSpec) -> PodTemplateSpec:
    copy = deep_copy(template)
    copy.metadata.labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return copy


def equal_ignore_hash(first: PodTemplateSpec, second: PodTemplateSpec) -> bool:
    """``EqualIgnoreHash``: equal templates once the pod-template-hash label is removed."""
    return _without_hash(first) == _without_hash(second)


def revision(obj: Any) -> int:
    """``deploymentutil.Revision``: the revision annotation, 0 when absent. Raises
    ValueError when it is not an integer."""
    text = obj.metadata.annotations.get(REVISION_ANNOTATION)
    return 0 if text is None else int(text)


def max_revision(rss: Sequence[ReplicaSet]) -> int:
    """``MaxRevision``: unparsable revisions are skipped."""
    best = 0
    for rs in rss:
        try:
            best = max(best, revision(rs))
        except ValueError:
            continue
    return best


def find_new_replica_set(d: Deployment, rss: Sequence[ReplicaSet]) -> ReplicaSet | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet whose template equals the Deployment's."""
    for rs in sorted_by_creation(rss):
        if equal_ignore_hash(rs.spec.template, d.spec.template):
            return rs
    return None


def find_old_replica_sets(d: Deployment, rss: Sequence[ReplicaSet]) -> tuple[list[ReplicaSet], list[ReplicaSet]]:
    """``FindOldReplicaSets``: (old ones with replicas, every old one)."""
    new = find_new_replica_set(d, rss)
    every = [rs for rs in rss if new is None or rs.metadata.uid != new.metadata.uid]
    return [rs for rs in every if replicas_of(rs) != 0], every


# =========================================================================== arithmetic
def _is_rolling_update(d: Deployment) -> bool:
    return d.spec.strategy.type == "RollingUpdate"


def _fenceposts(d: Deployment) -> tuple[int, int]:
    rolling = d.spec.strategy.rolling_update
    return resolve_fenceposts(
        rolling.max_surge if rolling is not None else None, rolling.max_unavailable if rolling is not None else None, replicas_of(d)
    )


def max_surge(d: Deployment) -> int:
    """``MaxSurge``: 0 unless RollingUpdate."""
    return _fenceposts(d)[0] if _is_rolling_update(d) else 0


def max_unavailable(d: Deployment) -> int:
    """``MaxUnavailable``: 0 unless RollingUpdate with replicas; at most ``replicas``."""
    if not _is_rolling_update(d) or replicas_of(d) == 0:
        return 0
    return min(_fenceposts(d)[1], replicas_of(d))


def new_rs_new_replicas(d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet) -> int:
    """``NewRSNewReplicas``: how large the new ReplicaSet may be now."""
    if _is_rolling_update(d):
        rolling = d.spec.strategy.rolling_update
        surge = scaled_value(rolling.max_surge if rolling is not None and rolling.max_surge is not None else "25%", replicas_of(d), round_up=True)
        current = _spec_sum(all_rss)
        ceiling = replicas_of(d) + surge
        if current >= ceiling:
            return replicas_of(new_rs)
        return replicas_of(new_rs) + min(ceiling - current, replicas_of(d) - replicas_of(new_rs))
    if d.spec.strategy.type == "Recreate":
        return replicas_of(d)
    raise ControllerError(f"deployment type {d.spec.strategy.type} isn't supported")


def is_saturated(d: Deployment, rs: ReplicaSet | None) -> bool:
    """``IsSaturated``: the ReplicaSet, its desired-replicas annotation and its available
    pods all equal the Deployment's size."""
    if rs is None:
        return False
    desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
    if desired is None:
        return False
    return replicas_of(rs) == replicas_of(d) and desired == replicas_of(d) and rs.status.available_replicas == replicas_of(d)


def find_active_or_latest(new_rs: ReplicaSet | None, old_rss: Sequence[ReplicaSet]) -> ReplicaSet | None:
    """``FindActiveOrLatest``: the only active ReplicaSet, or the newest if none is
    active; None when several are active."""
    if new_rs is None and not old_rss:
        return None
    old_newest_first = sorted_by_creation(old_rss, newest_first=True)
    active = filter_active_replica_sets([*old_newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else old_newest_first[0]
    return active[0] if len(active) == 1 else None


def replica_set_fraction(rs: ReplicaSet, d: Deployment) -> int:
    """``getReplicaSetFraction``: the change of ``rs``'s size in proportion to the
    deployment's new size over the size annotated on ``rs`` (max-replicas). A zero
    annotated size (which upstream never expects) gives 0."""
    if replicas_of(d) == 0:
        return -replicas_of(rs)
    deployment_replicas = replicas_of(d) + max_surge(d)
    annotated = _int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if annotated is None:
        annotated = d.status.replicas
    if annotated <= 0:
        return 0
    return _round_half_away(replicas_of(rs) * deployment_replicas / annotated) - replicas_of(rs)


def get_proportion(rs: ReplicaSet | None, d: Deployment, to_add: int, added: int) -> int:
    """``GetProportion``: ``rs``'s share of ``to_add``, within what is left of it."""
    if rs is None or replicas_of(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


@dataclass(frozen=True, slots=True)
class ScaleStep:
    """Scale ``rs`` to ``size``. ``always``: write even when the size is unchanged if the
    replicas annotations are stale (``scaleReplicaSet``); otherwise skip an unchanged size
    (``scaleReplicaSetAndRecordEvent``)."""

    rs: ReplicaSet
    size: int
    reason: str
    always: bool = False


def scale_plan(d: Deployment, new_rs: ReplicaSet | None, old_rss: Sequence[ReplicaSet]) -> list[ScaleStep]:
    """``scale``: what a scaling event (or a paused deployment's sync) does."""
    only = find_active_or_latest(new_rs, old_rss)
    if only is not None:
        return [] if replicas_of(only) == replicas_of(d) else [ScaleStep(only, replicas_of(d), "scale")]
    if is_saturated(d, new_rs):
        return [ScaleStep(old, 0, "saturated") for old in filter_active_replica_sets(old_rss)]
    if not _is_rolling_update(d):
        return []
    active = filter_active_replica_sets([*old_rss, new_rs])
    allowed = replicas_of(d) + max_surge(d) if replicas_of(d) > 0 else 0
    to_add = allowed - _spec_sum(active)
    if to_add > 0:
        active = _sorted_by_size(active, newer_first_on_ties=True)
    elif to_add < 0:
        active = _sorted_by_size(active, newer_first_on_ties=False)
    sizes: list[int] = []
    added = 0
    for rs in active:
        proportion = get_proportion(rs, d, to_add, added) if to_add != 0 else 0
        sizes.append(replicas_of(rs) + proportion)
        added += proportion
    if active and to_add != 0:
        sizes[0] = max(0, sizes[0] + to_add - added)  # leftovers to the largest
    return [ScaleStep(rs, size, "proportional", always=True) for rs, size in zip(active, sizes)]


def max_scaled_down(all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet, d: Deployment) -> int:
    """``reconcileOldReplicaSets``' bound: ``allPods - minAvailable - newUnavailable``."""
    min_available = replicas_of(d) - max_unavailable(d)
    new_unavailable = replicas_of(new_rs) - new_rs.status.available_replicas
    return _spec_sum(all_rss) - min_available - new_unavailable


def cleanup_unhealthy_plan(old_rss: Sequence[ReplicaSet], max_cleanup: int) -> tuple[list[ScaleStep], str | None]:
    """``cleanupUnhealthyReplicas``: scale old ReplicaSets (oldest first) down by their
    unavailable replicas, at most ``max_cleanup`` in all. Returns the steps and, if a
    ReplicaSet's status shows more available pods than its spec (a stale status), the
    error upstream stops at (the steps before it are still taken)."""
    steps: list[ScaleStep] = []
    total = 0
    for rs in sorted_by_creation(old_rss):
        if total >= max_cleanup:
            break
        size = replicas_of(rs)
        if size == 0 or size == rs.status.available_replicas:
            continue
        count = min(max_cleanup - total, size - rs.status.available_replicas)
        if size - count > size:
            return steps, f"when cleaning up unhealthy replicas, got invalid request to scale down {rs.metadata.namespace}/{rs.metadata.name} {size} -> {size - count}"
        steps.append(ScaleStep(rs, size - count, "rolling-old-unhealthy"))
        total += count
    return steps, None


def scale_down_old_plan(all_rss: Sequence[ReplicaSet | None], old_rss: Sequence[ReplicaSet], d: Deployment) -> list[ScaleStep]:
    """``scaleDownOldReplicaSetsForRollingUpdate``: scale old ReplicaSets (oldest first)
    down by the available pods above ``replicas - maxUnavailable``."""
    min_available = replicas_of(d) - max_unavailable(d)
    available = _available_sum(all_rss)
    if available <= min_available:
        return []
    steps: list[ScaleStep] = []
    wanted, total = available - min_available, 0
    for rs in sorted_by_creation(old_rss):
        if total >= wanted:
            break
        if replicas_of(rs) == 0:
            continue
        count = min(replicas_of(rs), wanted - total)
        steps.append(ScaleStep(rs, replicas_of(rs) - count, "rolling-old"))
        total += count
    return steps


def reconcile_new_size(all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet, d: Deployment) -> int | None:
    """``reconcileNewReplicaSet``: the new ReplicaSet's next size, or None if it stays."""
    if replicas_of(new_rs) == replicas_of(d):
        return None
    if replicas_of(new_rs) > replicas_of(d):
        return replicas_of(d)
    size = new_rs_new_replicas(d, all_rss, new_rs)
    return None if size == replicas_of(new_rs) else size


def _resized(rs: ReplicaSet, size: int) -> ReplicaSet:
    copy = deep_copy(rs)
    copy.spec.replicas = size
    return copy


def old_scale_down_plan(all_rss: Sequence[ReplicaSet | None], old_rss: Sequence[ReplicaSet], new_rs: ReplicaSet, d: Deployment) -> tuple[list[ScaleStep], bool]:
    """``reconcileOldReplicaSets`` as a plan: the cleanup steps, then the scale-down steps
    computed on the ReplicaSets as the cleanup leaves them. The flag is False when
    upstream would report "not scaled" whatever the steps (its cleanup stopped at a stale
    status); the steps before that point are still taken, as upstream takes them."""
    if _spec_sum(old_rss) == 0:
        return [], True
    bound = max_scaled_down(all_rss, new_rs, d)
    if bound <= 0:
        return [], True
    cleanup, problem = cleanup_unhealthy_plan(old_rss, bound)
    if problem is not None:
        return cleanup, False
    resized = {step.rs.metadata.uid: step.size for step in cleanup}
    old_after = [_resized(rs, resized[rs.metadata.uid]) if rs.metadata.uid in resized else rs for rs in old_rss]
    return cleanup + scale_down_old_plan([*old_after, new_rs], old_after, d), True


def old_pods_running(new_rs: ReplicaSet | None, old_rss: Sequence[ReplicaSet], pod_map: dict[str, list[Pod]]) -> bool:
    """``oldPodsRunning`` (recreate.go): an old ReplicaSet still counts pods, or a pod of
    an old ReplicaSet is not terminal (Unknown counts as running)."""
    if sum(rs.status.replicas for rs in old_rss) > 0:
        return True
    for uid in sorted(pod_map):
        if new_rs is not None and new_rs.metadata.uid == uid:
            continue
        if any(pod.status.phase not in ("Failed", "Succeeded") for pod in pod_map[uid]):
            return True
    return False


def _has_revision_history_limit(d: Deployment) -> bool:
    limit = d.spec.revision_history_limit
    return limit is not None and limit != MAX_INT32


def _has_progress_deadline(d: Deployment) -> bool:
    """``HasProgressDeadline``."""
    return d.spec.progress_deadline_seconds is not None and d.spec.progress_deadline_seconds != MAX_INT32


def _by_revision(rss: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """``ReplicaSetsByRevision``: by revision, ties (or unparsable ones) by creation."""
    def compare(a: ReplicaSet, b: ReplicaSet) -> int:
        try:
            first, second = revision(a), revision(b)
        except ValueError:
            first = second = 0
        if first == second:
            key_a, key_b = (_created(a), a.metadata.name), (_created(b), b.metadata.name)
            return -1 if key_a < key_b else 1 if key_a > key_b else 0
        return -1 if first < second else 1

    return sorted(rss, key=functools.cmp_to_key(compare))


def cleanup_candidates(old_rss: Sequence[ReplicaSet], d: Deployment) -> list[ReplicaSet]:
    """``cleanupDeployment``: the old ReplicaSets beyond ``revisionHistoryLimit``, lowest
    revisions first, that are scaled to zero, hold no pods and are observed."""
    if not _has_revision_history_limit(d):
        return []
    alive = [rs for rs in old_rss if rs.metadata.deletion_timestamp is None]
    assert d.spec.revision_history_limit is not None
    diff = len(alive) - d.spec.revision_history_limit
    if diff <= 0:
        return []
    doomed = []
    for rs in _by_revision(alive)[:diff]:
        if rs.status.replicas != 0 or replicas_of(rs) != 0 or rs.metadata.generation > rs.status.observed_generation:
            continue
        doomed.append(rs)
    return doomed


# =========================================================================== annotations
def set_replicas_annotations(rs: ReplicaSet, desired: int, maximum: int) -> bool:
    """``SetReplicasAnnotations`` on ``rs`` (mutated); True if something changed."""
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(maximum))):
        if rs.metadata.annotations.get(key) != value:
            rs.metadata.annotations[key] = value
            changed = True
    return changed


def _replicas_annotations_need_update(rs: ReplicaSet, desired: int, maximum: int) -> bool:
    return rs.metadata.annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or rs.metadata.annotations.get(MAX_REPLICAS_ANNOTATION) != str(maximum)


def set_new_replica_set_annotations(d: Deployment, rs: ReplicaSet, new_revision: str, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations`` on ``rs`` (mutated): copy the Deployment's
    annotations (but ``ANNOTATIONS_TO_SKIP``), raise the revision (remembering the old
    one in revision-history, at most 2000 characters), and for a new ReplicaSet the
    replicas annotations. True if something changed."""
    annotations = rs.metadata.annotations
    changed = False
    for key in sorted(d.metadata.annotations):
        value = d.metadata.annotations[key]
        if key in ANNOTATIONS_TO_SKIP or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old_text = annotations.get(REVISION_ANNOTATION)
    try:
        old = int(old_text) if old_text else 0
    except ValueError:
        return False
    new = int(new_revision)
    if old < new:
        annotations[REVISION_ANNOTATION] = new_revision
        changed = True
        if old_text is not None:
            history = annotations.get(REVISION_HISTORY_ANNOTATION, "")
            revisions = history.split(",") if history else []
            total = len(history) + len(old_text) + 1
            start = 0
            while total > MAX_REVISION_HISTORY_LENGTH_IN_CHARS and start < len(revisions):
                total -= len(revisions[start]) + 1
                start += 1
            if total <= MAX_REVISION_HISTORY_LENGTH_IN_CHARS:
                annotations[REVISION_HISTORY_ANNOTATION] = ",".join([*revisions[start:], old_text])
    if not exists and set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + max_surge(d)):
        changed = True
    return changed


# =========================================================================== status
def _condition(kind: str, status: str, reason: str, message: str, now: float) -> DeploymentCondition:
    """``NewDeploymentCondition``: both times now."""
    moment = timestamp(now)
    return DeploymentCondition(type=kind, status=status, reason=reason, message=message, last_update_time=moment, last_transition_time=moment)


def _get_condition(status: DeploymentStatus, kind: str) -> DeploymentCondition | None:
    return next((c for c in status.conditions if c.type == kind), None)


def set_deployment_condition(status: DeploymentStatus, condition: DeploymentCondition) -> None:
    """``SetDeploymentCondition``: no change when status and reason are the same; keep
    the transition time when only the reason changes."""
    current = _get_condition(status, condition.type)
    if current is not None and current.status == condition.status and current.reason == condition.reason:
        return
    if current is not None and current.status == condition.status:
        condition = msgspec.structs.replace(condition, last_transition_time=current.last_transition_time)
    status.conditions = [c for c in status.conditions if c.type != condition.type] + [condition]


def _remove_condition(status: DeploymentStatus, kind: str) -> None:
    status.conditions = [c for c in status.conditions if c.type != kind]


def calculate_status(all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None, d: Deployment, now: float) -> DeploymentStatus:
    """``calculateStatus`` (sync.go), with the Available condition."""
    available = _available_sum(all_rss)
    status = DeploymentStatus(
        observed_generation=d.metadata.generation,
        replicas=sum(rs.status.replicas for rs in all_rss if rs is not None),
        updated_replicas=new_rs.status.replicas if new_rs is not None else 0,
        ready_replicas=sum(rs.status.ready_replicas for rs in all_rss if rs is not None),
        available_replicas=available,
        unavailable_replicas=max(0, _spec_sum(all_rss) - available),
        collision_count=d.status.collision_count,
        conditions=list(d.status.conditions),
    )
    if available >= replicas_of(d) - max_unavailable(d):
        set_deployment_condition(status, _condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE, "Deployment has minimum availability.", now))
    else:
        set_deployment_condition(status, _condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE, "Deployment does not have minimum availability.", now))
    return status


def deployment_complete(d: Deployment, status: DeploymentStatus) -> bool:
    """``DeploymentComplete``: every replica updated and available, none old, observed."""
    replicas = replicas_of(d)
    return (
        status.updated_replicas == replicas
        and status.replicas == replicas
        and status.available_replicas == replicas
        and status.observed_generation >= d.metadata.generation
    )


def deployment_progressing(d: Deployment, status: DeploymentStatus) -> bool:
    """``DeploymentProgressing``: more updated, fewer old, more ready or more available."""
    old = d.status
    return (
        status.updated_replicas > old.updated_replicas
        or status.replicas - status.updated_replicas < old.replicas - old.updated_replicas
        or status.ready_replicas > old.ready_replicas
        or status.available_replicas > old.available_replicas
    )


def deployment_timed_out(d: Deployment, status: DeploymentStatus, now: float) -> bool:
    """``DeploymentTimedOut``: the Progressing condition was last updated more than
    ``progressDeadlineSeconds`` ago (or already says so)."""
    if not _has_progress_deadline(d):
        return False
    condition = _get_condition(status, PROGRESSING)
    if condition is None or condition.reason == NEW_RS_AVAILABLE:
        return False
    if condition.reason == TIMED_OUT:
        return True
    assert d.spec.progress_deadline_seconds is not None
    since = parse_timestamp(condition.last_update_time) if condition.last_update_time else -math.inf
    return since + d.spec.progress_deadline_seconds < now


def _replica_failures(all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None) -> list[DeploymentCondition]:
    """``getReplicaFailures``: the new ReplicaSet's ReplicaFailure first, else any old one."""
    def of(rss: Sequence[ReplicaSet | None]) -> list[DeploymentCondition]:
        return [
            DeploymentCondition(type=c.type, status=c.status, reason=c.reason, message=c.message, last_update_time=c.last_transition_time, last_transition_time=c.last_transition_time)
            for rs in rss if rs is not None for c in rs.status.conditions if c.type == REPLICA_FAILURE
        ]

    return of([new_rs]) or of(all_rss)


def rollout_status(all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None, d: Deployment, now: float) -> DeploymentStatus:
    """``syncRolloutStatus``' computation: the status with Progressing (complete,
    progressing, timed out) and ReplicaFailure conditions."""
    status = calculate_status(all_rss, new_rs, d, now)
    if not _has_progress_deadline(d):
        _remove_condition(status, PROGRESSING)
    current = _get_condition(d.status, PROGRESSING)
    complete_already = status.replicas == status.updated_replicas and current is not None and current.reason == NEW_RS_AVAILABLE
    if _has_progress_deadline(d) and not complete_already:
        subject = f'ReplicaSet "{new_rs.metadata.name}"' if new_rs is not None else f'Deployment "{d.metadata.name}"'
        if deployment_complete(d, status):
            set_deployment_condition(status, _condition(PROGRESSING, "True", NEW_RS_AVAILABLE, f"{subject} has successfully progressed.", now))
        elif deployment_progressing(d, status):
            condition = _condition(PROGRESSING, "True", REPLICA_SET_UPDATED, f"{subject} is progressing.", now)
            if current is not None:
                if current.status == "True":
                    condition = msgspec.structs.replace(condition, last_transition_time=current.last_transition_time)
                _remove_condition(status, PROGRESSING)
            set_deployment_condition(status, condition)
        elif deployment_timed_out(d, status, now):
            set_deployment_condition(status, _condition(PROGRESSING, "False", TIMED_OUT, f"{subject} has timed out progressing.", now))
    failures = _replica_failures(all_rss, new_rs)
    if failures:
        set_deployment_condition(status, failures[0])
    else:
        _remove_condition(status, REPLICA_FAILURE)
    return status


def stuck_requeue_after(d: Deployment, status: DeploymentStatus, now: float) -> float | None:
    """``requeueStuckDeployment``: seconds until a progress check is due (+1 s), 0 for
    "now, rate limited", None when no check is needed."""
    current = _get_condition(d.status, PROGRESSING)
    if not _has_progress_deadline(d) or current is None:
        return None
    if deployment_complete(d, status) or current.reason == TIMED_OUT:
        return None
    assert d.spec.progress_deadline_seconds is not None
    updated = parse_timestamp(current.last_update_time) if current.last_update_time else now
    after = updated + d.spec.progress_deadline_seconds - now
    return 0.0 if after < 1.0 else after + 1.0


def _paused_condition(d: Deployment, now: float) -> DeploymentCondition | None:
    """``checkPausedConditions``: the condition to set when pausing or resuming, if any."""
    if not _has_progress_deadline(d):
        return None
    current = _get_condition(d.status, PROGRESSING)
    if current is not None and current.reason == TIMED_OUT:
        return None
    paused_recorded = current is not None and current.reason == PAUSED
    if d.spec.paused and not paused_recorded:
        return _condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now)
    if not d.spec.paused and paused_recorded:
        return _condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now)
    return None


def _selector_with_hash(selector: LabelSelector | None, value: str) -> LabelSelector:
    """``CloneSelectorAndAddLabel``."""
    copy = deep_copy(selector) if selector is not None else LabelSelector()
    copy.match_labels[POD_TEMPLATE_HASH_LABEL] = value
    return copy


# =========================================================================== the controller
class DeploymentController:
    """``DeploymentController`` (see the module docstring)."""

    KIND = "Deployment"

    def __init__(
        self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "deployment-controller"
    ) -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.recorder = EventRecorder(client, name)
        self.queue = RateLimitingQueue(process)
        self.d_informer = informers.informer("deployments")
        self.rs_informer = informers.informer("replicasets")
        self.pod_informer = informers.informer("pods")
        add_index(self.rs_informer, CONTROLLER_UID_INDEX, controller_uid_index)
        add_index(self.pod_informer, POD_CONTROLLER_UID_INDEX, pod_controller_uid_index)
        self.d_informer.add_event_handler(self._add_deployment, self._update_deployment, self._delete_deployment)
        self.rs_informer.add_event_handler(self._add_rs, self._update_rs, self._delete_rs)
        self.pod_informer.add_event_handler(on_delete=self._delete_pod)

    # -- cache reads --------------------------------------------------------------------
    def _deployment(self, namespace: str, name: str) -> Deployment | None:
        return self.d_informer.indexer.get_by_key(f"{namespace}/{name}")

    def _resolve_controller_ref(self, namespace: str, reference: OwnerReference) -> Deployment | None:
        if reference.kind != self.KIND:
            return None
        d = self._deployment(namespace, reference.name)
        return d if d is not None and d.metadata.uid == reference.uid else None

    def _deployments_for_rs(self, rs: ReplicaSet) -> list[Deployment]:
        """``GetDeploymentsForReplicaSet``: Deployments whose selector matches its labels."""
        return [
            d for d in self.d_informer.indexer.by_index(NAMESPACE_INDEX, rs.metadata.namespace)
            if selector_selects(d.spec.selector, rs.metadata.labels)
        ]

    def _deployment_for_pod(self, pod: Pod) -> Deployment | None:
        """``getDeploymentForPod``: pod -> its ReplicaSet -> that one's Deployment."""
        reference = controller_ref(pod)
        if reference is None or reference.kind != "ReplicaSet":
            return None
        rs = self.rs_informer.indexer.get_by_key(f"{pod.metadata.namespace}/{reference.name}")
        if rs is None or rs.metadata.uid != reference.uid:
            return None
        owner = controller_ref(rs)
        return self._resolve_controller_ref(rs.metadata.namespace, owner) if owner is not None else None

    # -- handlers (enqueue only) ----------------------------------------------------------
    def _enqueue(self, d: Deployment) -> None:
        self.queue.add(meta_namespace_key(d))

    def _add_deployment(self, d: Deployment) -> None:
        self._enqueue(d)

    def _update_deployment(self, old: Deployment, new: Deployment) -> None:
        self._enqueue(new)

    def _delete_deployment(self, obj: Any) -> None:
        d = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(d, Deployment):
            self._enqueue(d)

    def _add_rs(self, rs: ReplicaSet) -> None:
        if rs.metadata.deletion_timestamp is not None:
            self._delete_rs(rs)
            return
        reference = controller_ref(rs)
        if reference is not None:
            d = self._resolve_controller_ref(rs.metadata.namespace, reference)
            if d is not None:
                self._enqueue(d)
            return
        for d in self._deployments_for_rs(rs):
            self._enqueue(d)

    def _update_rs(self, old: ReplicaSet, new: ReplicaSet) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        new_ref, old_ref = controller_ref(new), controller_ref(old)
        ref_changed = new_ref != old_ref
        if ref_changed and old_ref is not None:
            d = self._resolve_controller_ref(old.metadata.namespace, old_ref)
            if d is not None:
                self._enqueue(d)
        if new_ref is not None:
            d = self._resolve_controller_ref(new.metadata.namespace, new_ref)
            if d is not None:
                self._enqueue(d)
            return
        if ref_changed or old.metadata.labels != new.metadata.labels:
            for d in self._deployments_for_rs(new):
                self._enqueue(d)

    def _delete_rs(self, obj: Any) -> None:
        rs = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(rs, ReplicaSet):
            return
        reference = controller_ref(rs)
        if reference is None:
            return
        d = self._resolve_controller_ref(rs.metadata.namespace, reference)
        if d is not None:
            self._enqueue(d)

    def _delete_pod(self, obj: Any) -> None:
        """Only Recreate cares: sync once the Deployment has no pods left."""
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(pod, Pod):
            return
        d = self._deployment_for_pod(pod)
        if d is None or d.spec.strategy.type != "Recreate":
            return
        owned = [rs for rs in self.rs_informer.indexer.by_index(NAMESPACE_INDEX, d.metadata.namespace) if _controlled_by(rs, d)]
        if not any(self._pod_map(d, owned).values()):
            self._enqueue(d)

    # -- running --------------------------------------------------------------------------
    async def run(self) -> None:
        await self.d_informer.wait_for_sync()
        await self.rs_informer.wait_for_sync()
        await self.pod_informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_deployment_syncs):
                nursery.start_soon(functools.partial(work_loop, self.queue, self.sync, max_retries=MAX_RETRIES, on_drop=self._dropped))

    def _dropped(self, key: Any, error: BaseException) -> None:
        self.process.world.record("deployment-dropped", deployment=key, error=str(error))

    # -- sync -----------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        """``syncDeployment``; as ``handleErr``, a failure because the namespace is being
        deleted is not retried."""
        try:
            await self._sync(key)
        except ApiError as error:
            if not namespace_terminating(error):
                raise

    async def _sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cached = self._deployment(namespace, name)
        if cached is None:
            return
        d = deep_copy(cached)
        selector = d.spec.selector
        if selector is None or (not selector.match_labels and not selector.match_expressions):
            # "This deployment is selecting all pods. A non-empty selector is required."
            if d.status.observed_generation < d.metadata.generation:
                d.status.observed_generation = d.metadata.generation
                await self.client.update_status(d)
            return
        rs_list = await self._claim_replica_sets(d)
        pod_map = self._pod_map(d, rs_list)
        if d.metadata.deletion_timestamp is not None:
            await self._sync_status_only(d, rs_list)
            return
        d = await self._check_paused_conditions(d)
        if d.spec.paused:
            await self._sync_scale(d, rs_list)
            return
        if await self._is_scaling_event(d, rs_list):
            await self._sync_scale(d, rs_list)
            return
        if d.spec.strategy.type == "Recreate":
            await self._rollout_recreate(d, rs_list, pod_map)
        elif d.spec.strategy.type == "RollingUpdate":
            await self._rollout_rolling(d, rs_list)
        else:
            raise ControllerError(f"unexpected deployment strategy type: {d.spec.strategy.type}")

    async def _claim_replica_sets(self, d: Deployment) -> list[ReplicaSet]:
        """``getReplicaSetsForDeployment``: adopt and release by selector; the claimed ones
        (as cached, or as patched)."""
        claimed: list[ReplicaSet] = []
        failures: list[str] = []
        can_adopt: list[bool] = []
        for rs in self.rs_informer.indexer.by_index(NAMESPACE_INDEX, d.metadata.namespace):
            decision = claim_decision(d, rs, matches(d.spec.selector, rs.metadata.labels))
            try:
                if decision is Claim.OWN:
                    claimed.append(rs)
                elif decision is Claim.ADOPT:
                    if not can_adopt:
                        can_adopt.append(await self._can_adopt(d))
                    if not can_adopt[0]:
                        raise ControllerError(f"can't adopt ReplicaSet {rs.metadata.name}: {d.metadata.namespace}/{d.metadata.name} has just been deleted")
                    references = [*rs.metadata.owner_references, new_controller_ref(d)]
                    claimed.append(await self.client.patch("replicasets", rs.metadata.namespace, rs.metadata.name, owner_references_patch(rs, references)))
                elif decision is Claim.RELEASE:
                    references = [r for r in rs.metadata.owner_references if r.uid != d.metadata.uid]
                    await self.client.patch("replicasets", rs.metadata.namespace, rs.metadata.name, owner_references_patch(rs, references))
            except ApiError as error:
                if error.code not in (404, 422):
                    failures.append(str(error))
            except ControllerError as error:
                failures.append(str(error))
        if failures:
            raise ControllerError("; ".join(failures))
        return claimed

    async def _can_adopt(self, d: Deployment) -> bool:
        try:
            fresh = await self.client.get("deployments", d.metadata.namespace, d.metadata.name)
        except ApiError as error:
            raise ControllerError(f"can't recheck {d.metadata.namespace}/{d.metadata.name}: {error}") from error
        if fresh.metadata.uid != d.metadata.uid:
            raise ControllerError(f"original Deployment {d.metadata.namespace}/{d.metadata.name} is gone: got uid {fresh.metadata.uid}, wanted {d.metadata.uid}")
        return fresh.metadata.deletion_timestamp is None

    def _pod_map(self, d: Deployment, rs_list: Sequence[ReplicaSet]) -> dict[str, list[Pod]]:
        """``getPodMapForDeployment``: the Deployment's pods by their ReplicaSet's uid."""
        # Upstream lists the namespace's pods by the selector and keeps those whose
        # controller is one of ``rs_list``; reading each ReplicaSet's pods from the
        # podControllerUID index gives the same lists without the scan.
        pod_map: dict[str, list[Pod]] = {rs.metadata.uid: [] for rs in rs_list}
        for rs in rs_list:
            if rs.metadata.namespace != d.metadata.namespace:
                continue
            pod_map[rs.metadata.uid] = [pod for pod in pods_of(self.pod_informer, rs, orphans=False) if matches(d.spec.selector, pod.metadata.labels)]
        return pod_map

    async def _check_paused_conditions(self, d: Deployment) -> Deployment:
        condition = _paused_condition(d, self.process.now())
        if condition is None:
            return d
        set_deployment_condition(d.status, condition)
        return await self.client.update_status(d)

    async def _all_replica_sets(self, d: Deployment, rs_list: list[ReplicaSet], create: bool) -> tuple[ReplicaSet | None, list[ReplicaSet], Deployment]:
        """``getAllReplicaSetsAndSyncRevision``: (new, every old one, the Deployment as
        written so far)."""
        _, old_rss = find_old_replica_sets(d, rs_list)
        new_rs, d = await self._new_replica_set(d, rs_list, old_rss, create)
        return new_rs, old_rss, d

    async def _write_revision(self, d: Deployment, new_revision: str) -> Deployment:
        """``SetDeploymentRevision``, written with a merge patch (module docstring)."""
        if d.metadata.annotations.get(REVISION_ANNOTATION) == new_revision:
            return d
        patched = await self.client.patch("deployments", d.metadata.namespace, d.metadata.name, {"metadata": {"annotations": {REVISION_ANNOTATION: new_revision}}})
        d.metadata.annotations[REVISION_ANNOTATION] = new_revision
        # The patch's answer carries a newer resourceVersion. Take it only when nothing but
        # our patch changed since the informer's copy (same generation, same status):
        # otherwise a status written next on this copy, with that resourceVersion as its
        # precondition, would overwrite a newer status with a stale one (the observed
        # generation going back; found by the swarm experiment). Upstream writes the
        # annotation and the status from the cached copy in one UpdateStatus, which answers
        # Conflict on a stale copy: keeping the copy's resourceVersion does the same.
        if patched.metadata.generation == d.metadata.generation and patched.status == d.status:
            d.metadata.resource_version = patched.metadata.resource_version
        return d

    async def _write_status(self, d: Deployment) -> Deployment:
        written = await self.client.update_status(d)
        d.metadata.resource_version = written.metadata.resource_version
        return d

    async def _new_replica_set(self, d: Deployment, rs_list: list[ReplicaSet], old_rss: list[ReplicaSet], create: bool) -> tuple[ReplicaSet | None, Deployment]:
        """``getNewReplicaSet``."""
        now = self.process.now()
        existing = find_new_replica_set(d, rs_list)
        new_revision = str(max_revision(old_rss) + 1)
        if existing is not None:
            copy = deep_copy(existing)
            annotations_changed = set_new_replica_set_annotations(d, copy, new_revision, True)
            if annotations_changed or copy.spec.min_ready_seconds != d.spec.min_ready_seconds:
                copy.spec.min_ready_seconds = d.spec.min_ready_seconds
                return await self.client.update(copy), d
            d = await self._write_revision(d, copy.metadata.annotations.get(REVISION_ANNOTATION, ""))
            if _has_progress_deadline(d) and _get_condition(d.status, PROGRESSING) is None:
                set_deployment_condition(d.status, _condition(PROGRESSING, "True", FOUND_NEW_RS, f'Found new replica set "{copy.metadata.name}"', now))
                d = await self._write_status(d)
            return copy, d
        if not create:
            return None, d
        template = deep_copy(d.spec.template)
        pod_template_hash = compute_hash(template, d.status.collision_count)
        template.metadata.labels[POD_TEMPLATE_HASH_LABEL] = pod_template_hash
        new_rs = ReplicaSet(
            metadata=ObjectMeta(
                name=f"{d.metadata.name}-{pod_template_hash}", namespace=d.metadata.namespace,
                owner_references=[new_controller_ref(d)], labels=dict(template.metadata.labels),
            ),
            spec=ReplicaSetSpec(replicas=0, min_ready_seconds=d.spec.min_ready_seconds, selector=_selector_with_hash(d.spec.selector, pod_template_hash), template=template),
        )
        new_rs.spec.replicas = new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        set_new_replica_set_annotations(d, new_rs, new_revision, False)
        already_exists = False
        try:
            created = await self.client.create(new_rs)
        except ApiError as error:
            if error.code == 409 and error.reason == "AlreadyExists":
                already_exists = True
                cached = self.rs_informer.indexer.get_by_key(f"{d.metadata.namespace}/{new_rs.metadata.name}")
                if cached is None:
                    raise ControllerError(f"replica set {new_rs.metadata.name} exists but is not in the cache yet") from error
                reference = controller_ref(cached)
                if reference is not None and reference.uid == d.metadata.uid and equal_ignore_hash(d.spec.template, cached.spec.template):
                    created = cached
                else:
                    # a hash collision: bump collisionCount and try again next sync
                    d.status.collision_count = (d.status.collision_count or 0) + 1
                    try:
                        await self.client.update_status(d)
                    except ApiError:
                        pass
                    raise
            elif namespace_terminating(error):
                raise
            else:
                if _has_progress_deadline(d):
                    message = f'Failed to create new replica set "{new_rs.metadata.name}": {error}'
                    set_deployment_condition(d.status, _condition(PROGRESSING, "False", FAILED_RS_CREATE, message, now))
                    try:
                        await self.client.update_status(d)
                    except ApiError:
                        pass
                raise
        if not already_exists and replicas_of(new_rs) > 0:
            self._record(d, created, 0, replicas_of(new_rs), "new-replica-set")
        d = await self._write_revision(d, new_revision)
        if not already_exists and _has_progress_deadline(d):
            set_deployment_condition(d.status, _condition(PROGRESSING, "True", NEW_REPLICA_SET, f'Created new replica set "{created.metadata.name}"', now))
            d = await self._write_status(d)
        return created, d

    async def _is_scaling_event(self, d: Deployment, rs_list: list[ReplicaSet]) -> bool:
        """``isScalingEvent``: an active ReplicaSet's desired-replicas annotation differs."""
        new_rs, old_rss, _ = await self._all_replica_sets(d, rs_list, False)
        for rs in filter_active_replica_sets([*old_rss, new_rs]):
            desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != replicas_of(d):
                return True
        return False

    async def _scale(self, rs: ReplicaSet, size: int, d: Deployment, reason: str, *, always: bool = False) -> tuple[bool, ReplicaSet]:
        """``scaleReplicaSetAndRecordEvent`` (or ``scaleReplicaSet`` with ``always``):
        write the size and the replicas annotations; (size changed, the ReplicaSet)."""
        if replicas_of(rs) == size and not always:
            return False, rs
        maximum = replicas_of(d) + max_surge(d)
        size_changed = replicas_of(rs) != size
        if not size_changed and not _replicas_annotations_need_update(rs, replicas_of(d), maximum):
            return False, rs
        copy = deep_copy(rs)
        copy.spec.replicas = size
        set_replicas_annotations(copy, replicas_of(d), maximum)
        written = await self.client.update(copy)
        if size_changed:
            self._record(d, written, replicas_of(rs), size, reason)
        return size_changed, written

    async def _apply(self, steps: Sequence[ScaleStep], d: Deployment) -> tuple[int, list[ReplicaSet]]:
        """Apply scale steps in order (stops at the first API error, which propagates);
        (how many replicas were removed, the ReplicaSets as written)."""
        removed = 0
        written: list[ReplicaSet] = []
        for step in steps:
            changed, rs = await self._scale(step.rs, step.size, d, step.reason, always=step.always)
            if changed:
                removed += replicas_of(step.rs) - step.size
            written.append(rs)
        return removed, written

    async def _sync_scale(self, d: Deployment, rs_list: list[ReplicaSet]) -> None:
        """``sync``: scale (proportionally), clean up a paused one, write the status."""
        new_rs, old_rss, d = await self._all_replica_sets(d, rs_list, False)
        await self._apply(scale_plan(d, new_rs, old_rss), d)
        if d.spec.paused:
            await self._cleanup(old_rss, d)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _sync_status_only(self, d: Deployment, rs_list: list[ReplicaSet]) -> None:
        new_rs, old_rss, d = await self._all_replica_sets(d, rs_list, False)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _sync_status(self, d: Deployment, all_rss: list[ReplicaSet | None], new_rs: ReplicaSet | None) -> None:
        """``syncDeploymentStatus``: write the status if it changed."""
        status = calculate_status(all_rss, new_rs, d, self.process.now())
        if status != d.status:
            d.status = status
            await self.client.update_status(d)

    async def _sync_rollout_status(self, d: Deployment, all_rss: list[ReplicaSet | None], new_rs: ReplicaSet | None) -> None:
        """``syncRolloutStatus``, with ``requeueStuckDeployment`` when nothing changed."""
        now = self.process.now()
        status = rollout_status(all_rss, new_rs, d, now)
        if status == d.status:
            after = stuck_requeue_after(d, status, now)
            if after == 0.0:
                self.queue.add_rate_limited(meta_namespace_key(d))
            elif after is not None:
                self.queue.add_after(meta_namespace_key(d), after)
            return
        d.status = status
        await self.client.update_status(d)

    async def _cleanup(self, old_rss: list[ReplicaSet], d: Deployment) -> None:
        """``cleanupDeployment``: delete what :func:`cleanup_candidates` chooses."""
        for rs in cleanup_candidates(old_rss, d):
            try:
                await self.client.delete("replicasets", rs.metadata.namespace, rs.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    raise

    async def _rollout_rolling(self, d: Deployment, rs_list: list[ReplicaSet]) -> None:
        """``rolloutRolling``."""
        new_rs, old_rss, d = await self._all_replica_sets(d, rs_list, True)
        assert new_rs is not None
        all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
        size = reconcile_new_size(all_rss, new_rs, d)
        if size is not None:
            scaled_up, _ = await self._scale(new_rs, size, d, "rolling-new")
            if scaled_up:
                await self._sync_rollout_status(d, all_rss, new_rs)
                return
        if await self._reconcile_old(all_rss, filter_active_replica_sets(old_rss), new_rs, d):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if deployment_complete(d, d.status):
            await self._cleanup(old_rss, d)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _reconcile_old(self, all_rss: list[ReplicaSet | None], old_rss: list[ReplicaSet], new_rs: ReplicaSet, d: Deployment) -> bool:
        """``reconcileOldReplicaSets``: apply :func:`old_scale_down_plan`; its API errors
        are swallowed (not scaled), as upstream's."""
        steps, counts = old_scale_down_plan(all_rss, old_rss, new_rs, d)
        try:
            removed, _ = await self._apply(steps, d)
        except ApiError:
            return False
        return counts and removed > 0

    async def _rollout_recreate(self, d: Deployment, rs_list: list[ReplicaSet], pod_map: dict[str, list[Pod]]) -> None:
        """``rolloutRecreate``: old ReplicaSets to zero, wait for their pods to go, then
        create / scale up the new one."""
        new_rs, old_rss, d = await self._all_replica_sets(d, rs_list, False)
        all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
        scaled_down = False
        for rs in filter_active_replica_sets(old_rss):
            changed, _ = await self._scale(rs, 0, d, "recreate-old")
            scaled_down = scaled_down or changed
        if scaled_down:
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if old_pods_running(new_rs, old_rss, pod_map):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old_rss, d = await self._all_replica_sets(d, rs_list, True)
            all_rss = [*old_rss, new_rs]
        assert new_rs is not None
        await self._scale(new_rs, replicas_of(d), d, "recreate-new")
        if deployment_complete(d, d.status):
            await self._cleanup(old_rss, d)
        await self._sync_rollout_status(d, all_rss, new_rs)

    def _record(self, d: Deployment, rs: ReplicaSet, before: int, after: int, reason: str) -> None:
        self.process.world.record(
            "deployment-scale", deployment=meta_namespace_key(d), rs=rs.metadata.name, reason=reason, controller=self.name, **{"from": before, "to": after}
        )
        # sync.go (scaleReplicaSet, getNewReplicaSet): "Scaled %s replica set %s from %d to %d"
        self.recorder.event(d, "Normal", "ScalingReplicaSet", f"Scaled {'up' if after > before else 'down'} replica set {rs.metadata.name} from {before} to {after}")


def _controlled_by(rs: ReplicaSet, d: Deployment) -> bool:
    reference = controller_ref(rs)
    return reference is not None and reference.uid == d.metadata.uid

"""The StatefulSet controller, as kube-controller-manager's ``pkg/controller/statefulset``.

Upstream sources followed (kubernetes/kubernetes ``pkg/controller/statefulset/``):

- ``stateful_set_utils.go`` — names and identity: pod ``<set>-<ordinal>`` (ordinals from
  ``spec.ordinals.start``), labels ``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``, ``hostname`` = the pod's
  name and ``subdomain`` = ``serviceName``; a claim per ``volumeClaimTemplates`` entry named
  ``<template>-<set>-<ordinal>`` (labelled with the selector's ``matchLabels``), mounted in
  place of the template's volume of that name; ``newVersionedStatefulSetPod`` (ordinals
  below the partition keep the current revision); ``isRunningAndReady``, ``isHealthy``,
  ``completeRollingUpdate``;
- ``stateful_set_control.go`` — ``updateStatefulSet``: count status, fill the missing
  ordinals, then process replicas in ordinal order: a failed or succeeded pod is deleted
  (to be recreated), a missing one is created with its claims; with ``OrderedReady`` the
  controller stops at the first pod it created, the first terminating one and the first
  not running-and-ready (or not available for ``minReadySeconds``); ``Parallel`` does not
  wait. Then the condemned (ordinals past ``replicas``) are deleted from the highest, one
  at a time with OrderedReady (and only once the others are healthy, unless it is the
  first unhealthy pod). Then the rolling update: from the highest ordinal down to the
  partition, delete the first pod not at the update revision, and stop at the first
  unhealthy one; ``OnDelete`` leaves pods alone;
- ``controller_history.go`` (in :mod:`chaoskube.controllers.history`) — the revisions;
  ``getStatefulSetRevisions``: the template's revision reused if it is the latest, renumbered
  to max+1 (``UpdateControllerRevision``) if it is an earlier one (a rollback), else created;
- ``stateful_pod_control.go`` / ``stateful_set_utils.go`` (feature StatefulSetAutoDeletePVC,
  on by default since 1.27) — ``persistentVolumeClaimRetentionPolicy``: every sync gives the
  existing claims of each pod the owner references the policy asks for
  (``isClaimOwnerUpToDate`` / ``updateClaimOwnerRefForSetAndPod``: a controller reference to
  the set for whenDeleted=Delete, to the pod for whenScaled=Delete once its ordinal is
  condemned, before the condemned pod is deleted; a claim another controller owns, or with
  a stale reference, is left alone), right after creating a pod too; the garbage collector
  then deletes the claims with their owner. ``createPersistentVolumeClaims``: a claim being
  deleted blocks creating its pod (retried); a Pending pod gets its missing claims made
  again (``createMissingPersistentVolumeClaims``, kubernetes/kubernetes#74374); ``PodClaimIsStale``: a claim still owned
  by the scaled-down pod of the same name blocks creating the pod (retried until the
  collector removed it).

The decision is a pure function, :func:`plan_stateful_set` (the set, its pods, the two
revisions' templates, ``now``) -> (status, actions); the worker executes the actions in
order and writes the status when it changed (the controller shape of STYLE.md) -- also when
an action failed (``performUpdate`` writes the status before it returns the error).

Journal: ``statefulset-pod`` {statefulset, pod, action: create | delete, reason} per action;
``statefulset-claim`` {statefulset, claim, pod, owners} per claim whose owner references it
rewrote for the retention policy.

Non-guarantees: ``maxUnavailable`` for rolling updates (alpha, MaxUnavailableStatefulSet)
is not modelled (one pod at a time); the claims of every live pod are brought to the
retention policy each sync (upstream: of the replicas its ordered pass reaches, and of all
condemned); a stale-claim or deleting-claim wait is a rate-limited retry (upstream: the
next sync); a pod whose identity drifted gets its labels back, not its hostname (immutable
fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.objects import (
    ControllerRevision,
    OwnerReference,
    ObjectMeta,
    PersistentVolumeClaim,
    Pod,
    PodTemplateSpec,
    StatefulSet,
    StatefulSetStatus,
    deep_copy,
    matches,
)
from chaoskube.api.workloads import stateful_claim_name, stateful_pod_ordinal
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import NAMESPACE_INDEX, DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key, split_meta_namespace_key
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    new_revision,
    plan_update_revision,
    revision_data,
    revisions_to_truncate,
)
from chaoskube.controllers.replicaset import (
    POD_CONTROLLER_UID_INDEX,
    CONTROLLER_UID_INDEX,
    Claim,
    ControllerError,
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
    work_loop,
)

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "Action",
    "StatefulSetController",
    "claim_name",
    "new_stateful_pod",
    "parse_ordinal",
    "plan_stateful_set",
    "template_of_revision",
]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
#: client-go ``retry.DefaultBackoff`` (util/retry/util.go): 5 steps, 10 ms apart (factor 1.0).
RENUMBER_RETRY_STEPS = 5
RENUMBER_RETRY_INTERVAL_S = 0.010
#: kube-controller-manager's ``StatefulSetAutoDeletePVC`` feature gate (beta, on by default since 1.27).
STATEFUL_SET_AUTO_DELETE_PVC = True


def parse_ordinal(set_name: str, pod_name: str) -> int | None:
    """``getParentNameAndOrdinal`` (:func:`chaoskube.api.workloads.stateful_pod_ordinal`)."""
    return stateful_pod_ordinal(set_name, pod_name)


def claim_name(template: str, set_name: str, ordinal: int) -> str:
    """``getPersistentVolumeClaimName`` (:func:`chaoskube.api.workloads.stateful_claim_name`)."""
    return stateful_claim_name(template, set_name, ordinal)


def template_of_revision(revision: ControllerRevision | None, fallback: PodTemplateSpec) -> PodTemplateSpec:
    """``ApplyRevision``: the pod template a revision's data holds."""
    if revision is None or not isinstance(revision.data, dict):
        return fallback
    template = dict(((revision.data.get("spec") or {}).get("template")) or {})
    template.pop("$patch", None)
    try:
        return msgspec.convert(template, PodTemplateSpec)
    except (msgspec.ValidationError, ValueError):
        return fallback


def new_stateful_pod(sts: StatefulSet, template: PodTemplateSpec, ordinal: int, revision: str) -> Pod:
    """``newStatefulSetPod`` + ``setPodRevision``: identity, storage and the revision label."""
    name = f"{sts.metadata.name}-{ordinal}"
    labels = {**template.metadata.labels, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), CONTROLLER_REVISION_HASH_LABEL: revision}
    meta = ObjectMeta(
        name=name, namespace=sts.metadata.namespace, labels=labels, annotations=dict(template.metadata.annotations),
        finalizers=list(template.metadata.finalizers), owner_references=[new_controller_ref(sts)],
    )
    spec = deep_copy(template.spec)
    spec.hostname = name
    spec.subdomain = sts.spec.service_name
    claims = {claim.metadata.name for claim in sts.spec.volume_claim_templates}
    volumes = [volume for volume in spec.volumes if volume.get("name") not in claims]
    for claim in sts.spec.volume_claim_templates:
        volumes.append({"name": claim.metadata.name, "persistentVolumeClaim": {"claimName": claim_name(claim.metadata.name, sts.metadata.name, ordinal)}})
    spec.volumes = volumes
    return Pod(metadata=meta, spec=spec)


def new_claims(sts: StatefulSet, ordinal: int) -> list[PersistentVolumeClaim]:
    """``getPersistentVolumeClaims``: one claim per template, labelled with the selector's
    matchLabels (retention policy Retain: no owner reference)."""
    selector_labels = dict(sts.spec.selector.match_labels) if sts.spec.selector is not None else {}
    claims = []
    for template in sts.spec.volume_claim_templates:
        meta = ObjectMeta(
            name=claim_name(template.metadata.name, sts.metadata.name, ordinal), namespace=sts.metadata.namespace,
            labels={**template.metadata.labels, **selector_labels}, annotations=dict(template.metadata.annotations),
        )
        claims.append(PersistentVolumeClaim(metadata=meta, spec=deep_copy(template.spec)))
    return claims


# =========================================================================== claim retention
# stateful_set_utils.go (StatefulSetAutoDeletePVC): the claims' owner references carry
# ``persistentVolumeClaimRetentionPolicy`` -- a controller reference to the set for
# whenDeleted=Delete, to the pod for whenScaled=Delete once its ordinal is condemned -- and
# the garbage collector deletes a claim whose owner is gone.


def retention_policy(sts: StatefulSet) -> tuple[str, str]:
    """``getPersistentVolumeClaimRetentionPolicy``: (whenDeleted, whenScaled), Retain unset."""
    policy = sts.spec.persistent_volume_claim_retention_policy
    if policy is None:
        return "Retain", "Retain"
    return policy.when_deleted or "Retain", policy.when_scaled or "Retain"


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def _matches_ref(ref: OwnerReference, owner: Any) -> bool:
    """``matchesRef``: same name, kind and API group."""
    return ref.name == owner.metadata.name and ref.kind == owner.KIND and _group(ref.api_version) == _group(owner.API_VERSION)


def _has_owner_ref(claim: PersistentVolumeClaim, owner: Any) -> bool:
    return any(ref.uid == owner.metadata.uid for ref in claim.metadata.owner_references)


def _has_stale_owner_ref(claim: PersistentVolumeClaim, owner: Any) -> bool:
    """``hasStaleOwnerRef``: the first reference naming ``owner`` has another uid (an owner
    not created yet, uid "", makes any such reference stale)."""
    for ref in claim.metadata.owner_references:
        if _matches_ref(ref, owner):
            return ref.uid != owner.metadata.uid
    return False


def _has_unexpected_controller(claim: PersistentVolumeClaim, sts: StatefulSet, pod: Pod) -> bool:
    for ref in claim.metadata.owner_references:
        if not ref.controller:
            continue
        if _matches_ref(ref, sts):
            if ref.uid != sts.metadata.uid:
                return True
        elif _matches_ref(ref, pod):
            if ref.uid != pod.metadata.uid:
                return True
        else:
            return True
    return False


def _has_non_controller_owner(claim: PersistentVolumeClaim, sts: StatefulSet, pod: Pod) -> bool:
    return any(ref.uid in (sts.metadata.uid, pod.metadata.uid) and not ref.controller for ref in claim.metadata.owner_references)


def _pod_in_ordinal_range(pod: Pod, sts: StatefulSet) -> bool:
    """``podInOrdinalRange``."""
    ordinal = parse_ordinal(sts.metadata.name, pod.metadata.name)
    start = sts.spec.ordinals.start if sts.spec.ordinals is not None else 0
    count = 1 if sts.spec.replicas is None else sts.spec.replicas
    return ordinal is not None and start <= ordinal < start + count


def claim_owner_up_to_date(claim: PersistentVolumeClaim, sts: StatefulSet, pod: Pod) -> bool:
    """``isClaimOwnerUpToDate``: no set or pod reference for Retain/Retain; the set's only
    for Retain on scaling and Delete on deletion; the pod's only for a condemned pod with
    Delete on scaling; the set's while in range and the pod's once condemned for
    Delete/Delete. A stale reference or another controller: left alone (up to date)."""
    if _has_stale_owner_ref(claim, sts) or _has_stale_owner_ref(claim, pod):
        return True
    if _has_unexpected_controller(claim, sts, pod):
        return not (_has_owner_ref(claim, sts) or _has_owner_ref(claim, pod))
    if _has_non_controller_owner(claim, sts, pod):
        return False
    when_deleted, when_scaled = retention_policy(sts)
    set_ref, pod_ref = _has_owner_ref(claim, sts), _has_owner_ref(claim, pod)
    scaled_down = not _pod_in_ordinal_range(pod, sts)
    if when_scaled == "Delete" and when_deleted == "Delete":
        return scaled_down != set_ref and scaled_down == pod_ref
    if when_scaled == "Delete":
        return not set_ref and scaled_down == pod_ref
    if when_deleted == "Delete":
        return set_ref and not pod_ref
    return not set_ref and not pod_ref


def claim_owner_refs_for_set_and_pod(claim: PersistentVolumeClaim, sts: StatefulSet, pod: Pod) -> list[OwnerReference]:
    """``updateClaimOwnerRefForSetAndPod``: the claim's references with the set's and the
    pod's scrubbed, then the policy's added as controller references (none if another
    controller owns the claim)."""
    unexpected = _has_unexpected_controller(claim, sts, pod)
    refs = [ref for ref in claim.metadata.owner_references if not (_matches_ref(ref, sts) or _matches_ref(ref, pod))]
    if unexpected:
        return refs
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not _pod_in_ordinal_range(pod, sts)
    if when_scaled == "Delete" and scaled_down:
        refs.append(new_controller_ref(pod))
    elif when_deleted == "Delete" and (when_scaled == "Retain" or not scaled_down):
        refs.append(new_controller_ref(sts))
    return refs


def pod_claim_is_stale(sts: StatefulSet, pod: Pod, claims: Sequence[PersistentVolumeClaim | None]) -> bool:
    """``PodClaimIsStale``: with whenScaled=Delete, a claim of the pod's identity that a
    reference ties to another pod of that name (the one scaled down, whose claim the
    garbage collector is deleting) blocks creating the pod."""
    if retention_policy(sts)[1] == "Retain":
        return False
    return any(claim is not None and _has_stale_owner_ref(claim, pod) for claim in claims)


def _running_and_ready(pod: Pod) -> bool:
    return pod.status.phase == "Running" and is_pod_ready(pod)


def _terminating(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is not None


def _healthy(pod: Pod) -> bool:
    return _running_and_ready(pod) and not _terminating(pod)


def _identity_matches(sts: StatefulSet, pod: Pod, ordinal: int) -> bool:
    """``identityMatches`` (the labels part): the pod-name and pod-index labels."""
    return pod.metadata.labels.get(POD_NAME_LABEL) == pod.metadata.name and pod.metadata.labels.get(POD_INDEX_LABEL) == str(ordinal)


def versioned_revision(sts: StatefulSet, ordinal: int, current_revision: str, update_revision: str) -> str:
    """``newVersionedStatefulSetPod``'s choice: a RollingUpdate set (re)creates ordinals
    below ``start + partition`` (without ``rollingUpdate``: below ``start +
    status.currentReplicas``) at the current revision, the others at the update revision
    ("even if they are deleted, they will be recreated at the previous version")."""
    strategy = sts.spec.update_strategy
    start = sts.spec.ordinals.start if sts.spec.ordinals is not None else 0
    partition = strategy.rolling_update.partition if strategy.rolling_update is not None and strategy.rolling_update.partition is not None else None
    keep_current = strategy.type in ("RollingUpdate", "") and (
        (partition is None and ordinal - start < sts.status.current_replicas) or (partition is not None and ordinal < start + partition)
    )
    return current_revision if keep_current else update_revision


@dataclass(frozen=True, slots=True)
class Action:
    """One step of the plan: ``create`` (pod ``ordinal`` at ``revision``, its claims first),
    ``delete`` (``pod``), ``relabel`` (``pod``'s identity labels)."""

    kind: str
    ordinal: int
    revision: str = ""
    pod: Pod | None = None
    reason: str = ""


@dataclass
class Plan:
    status: StatefulSetStatus
    actions: list[Action] = field(default_factory=list)


def plan_stateful_set(
    sts: StatefulSet, pods: Sequence[Pod], current_revision: str, update_revision: str, current_template: PodTemplateSpec, now: float
) -> Plan:
    """``updateStatefulSet`` as a pure decision (module docstring): the status the pods
    show, and the actions to take now, in order."""
    spec = sts.spec
    count = 1 if spec.replicas is None else spec.replicas
    start = spec.ordinals.start if spec.ordinals is not None else 0
    status = StatefulSetStatus(
        observed_generation=sts.metadata.generation, current_revision=current_revision, update_revision=update_revision,
        collision_count=sts.status.collision_count,
    )
    replicas: dict[int, Pod] = {}
    condemned: list[tuple[int, Pod]] = []
    for pod in pods:
        ordinal = parse_ordinal(sts.metadata.name, pod.metadata.name)
        if ordinal is None:
            continue
        status.replicas += 1
        if _running_and_ready(pod):
            status.ready_replicas += 1
            if is_pod_available(pod, spec.min_ready_seconds, now):
                status.available_replicas += 1
        if not _terminating(pod):
            revision = pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
            if revision == current_revision:
                status.current_replicas += 1
            if revision == update_revision:
                status.updated_replicas += 1
        if start <= ordinal < start + count:
            replicas[ordinal] = pod
        elif ordinal >= 0:
            condemned.append((ordinal, pod))
    condemned.sort(key=lambda item: -item[0])
    plan = Plan(status)
    if sts.metadata.deletion_timestamp is not None:
        return plan
    monotonic = spec.pod_management_policy != "Parallel"
    strategy = spec.update_strategy
    partition = strategy.rolling_update.partition if strategy.rolling_update is not None and strategy.rolling_update.partition is not None else None
    first_unhealthy: Pod | None = None
    for ordinal in range(start, start + count):
        pod = replicas.get(ordinal)
        if pod is not None and not _healthy(pod) and first_unhealthy is None:
            first_unhealthy = pod
    if first_unhealthy is None:
        for _, pod in reversed(condemned):
            if not _healthy(pod):
                first_unhealthy = pod
                break
    for ordinal in range(start, start + count):
        pod = replicas.get(ordinal)
        if pod is None:
            plan.actions.append(Action("create", ordinal, versioned_revision(sts, ordinal, current_revision, update_revision), reason="missing"))
            if monotonic:
                return plan
            continue
        if pod.status.phase in ("Failed", "Succeeded"):
            plan.actions.append(Action("delete", ordinal, pod=pod, reason=f"pod {pod.status.phase.lower()}: recreate it"))
            if monotonic:
                return plan
            continue
        if pod.status.phase == "Pending" and spec.volume_claim_templates:
            # processReplica: "If the Pod is in pending state then trigger PVC creation to
            # create missing PVCs" (createMissingPersistentVolumeClaims).
            plan.actions.append(Action("claims", ordinal, pod=pod, reason="pending pod"))
        if _terminating(pod):
            if monotonic:
                return plan
            continue
        if not _running_and_ready(pod):
            if monotonic:
                return plan
            continue
        if not is_pod_available(pod, spec.min_ready_seconds, now) and monotonic:
            return plan
        if not _identity_matches(sts, pod, ordinal):
            plan.actions.append(Action("relabel", ordinal, pod=pod, reason="identity"))
    for ordinal, pod in condemned:
        if _terminating(pod):
            if monotonic:
                return plan
            continue
        if monotonic and not _running_and_ready(pod) and pod is not first_unhealthy:
            return plan
        plan.actions.append(Action("delete", ordinal, pod=pod, reason="scale down"))
        if monotonic:
            return plan
    if strategy.type == "OnDelete":
        return plan
    minimum = start + partition if partition is not None else start  # updateMin: replicas[partition], ordinal start + partition
    for ordinal in range(start + count - 1, minimum - 1, -1):
        pod = replicas.get(ordinal)
        if pod is None:
            # Being created in this sync (upstream puts the new pod in ``replicas`` before the
            # update loop): not healthy yet, so the update waits for it, as with Parallel.
            return plan
        if pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) != update_revision and not _terminating(pod):
            plan.actions.append(Action("delete", ordinal, pod=pod, reason=f"rolling update to {update_revision}"))
            return plan
        if not _healthy(pod):
            return plan
    return plan


def complete_rolling_update(sts: StatefulSet, status: StatefulSetStatus) -> None:
    """``completeRollingUpdate``: every replica updated and ready makes the update revision current."""
    if sts.spec.update_strategy.type in ("RollingUpdate", "") and status.updated_replicas == status.replicas and status.ready_replicas == status.replicas:
        status.current_replicas = status.updated_replicas
        status.current_revision = status.update_revision


class StatefulSetController:
    """``StatefulSetController`` (see the module docstring); ``--concurrent-statefulset-syncs`` workers."""

    KIND = "StatefulSet"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "statefulset-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.recorder = EventRecorder(client, name)
        self.queue = RateLimitingQueue(process)
        self.sets = informers.informer("statefulsets")
        self.pods = informers.informer("pods")
        add_index(self.pods, POD_CONTROLLER_UID_INDEX, pod_controller_uid_index)
        self.claims = informers.informer("persistentvolumeclaims")
        self.revisions = informers.informer("controllerrevisions")
        add_index(self.revisions, CONTROLLER_UID_INDEX, controller_uid_index)
        self.sets.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._enqueue)
        self.pods.add_event_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new, old), on_delete=self._pod_changed)

    # -- handlers (enqueue only) ---------------------------------------------------------
    def _enqueue(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.queue.add(meta_namespace_key(obj))

    def _pod_changed(self, pod: Any, old: Any = None) -> None:
        pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
        reference = controller_ref(pod)
        if reference is not None:
            if reference.kind == self.KIND:
                self.queue.add(f"{pod.metadata.namespace}/{reference.name}")
            return
        for sts in self.sets.indexer.by_index(NAMESPACE_INDEX, pod.metadata.namespace):
            if matches(sts.spec.selector, pod.metadata.labels):
                self._enqueue(sts)

    # -- running -------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.sets, self.pods, self.claims, self.revisions):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_statefulset_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    # -- sync ----------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        sts = self.sets.indexer.get_by_key(key)
        if sts is None:
            return
        pods = await self._claim_pods(sts)
        revisions = [revision for revision in self.revisions.indexer.by_index(CONTROLLER_UID_INDEX, sts.metadata.uid)]
        current, update, collision_count = await self._revisions(sts, revisions)
        current_template = template_of_revision(next((r for r in revisions if r.metadata.name == current), None), sts.spec.template)
        now = self.process.now()
        plan = plan_stateful_set(sts, pods, current, update, current_template, now)
        plan.status.collision_count = collision_count
        update_template = sts.spec.template
        if STATEFUL_SET_AUTO_DELETE_PVC and sts.metadata.deletion_timestamp is None and sts.spec.volume_claim_templates:
            # processReplica (UpdateStatefulPod) for the replicas, and "Fix pod claims for
            # condemned pods" before processCondemned deletes them.
            for pod in pods:
                await self._fix_claims(sts, pod)
        try:
            for action in plan.actions:
                await self._act(sts, action, current_template if action.revision == current else update_template)
        except (ApiError, ControllerError):
            # performUpdate (stateful_set_control.go): "make sure to update the latest status
            # even if there is an error with non-nil currentStatus" -- updateStatefulSet
            # returns its status with a processReplica error, so a sync whose pod create
            # failed still records the revisions it computed; the status write's own error is
            # only logged ("Could not update status") and the action's error is returned.
            complete_rolling_update(sts, plan.status)
            try:
                await self._update_status(sts, plan.status)
            except ApiError:
                pass
            raise
        complete_rolling_update(sts, plan.status)
        await self._update_status(sts, plan.status)
        await self._truncate_history(sts, revisions, pods, {plan.status.current_revision, plan.status.update_revision})
        if sts.spec.min_ready_seconds > 0 and plan.status.available_replicas < plan.status.ready_replicas:
            self.queue.add_after(key, float(sts.spec.min_ready_seconds) + 1.0)

    async def _claim_pods(self, sts: StatefulSet) -> list[Pod]:
        """``ClaimPods`` with ``isMemberOf``: adopt orphans named like the set's pods. Reads
        its own pods and the namespace's orphans by the controller-uid index (a pod another
        controller owns is never claimed), as the ReplicaSet controller does."""
        claimed = []
        for pod in pods_of(self.pods, sts, orphans=True):
            if parse_ordinal(sts.metadata.name, pod.metadata.name) is None:
                continue
            decision = claim_decision(sts, pod, matches(sts.spec.selector, pod.metadata.labels))
            if decision is Claim.OWN:
                claimed.append(pod)
            elif decision is Claim.ADOPT:
                references = [*pod.metadata.owner_references, new_controller_ref(sts)]
                try:
                    await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, owner_references_patch(pod, references))
                except ApiError as error:
                    if error.code != 404:
                        raise
                    continue
                claimed.append(pod)
        return sorted(claimed, key=lambda pod: parse_ordinal(sts.metadata.name, pod.metadata.name) or 0)

    async def _revisions(self, sts: StatefulSet, revisions: list[ControllerRevision]) -> tuple[str, str, int | None]:
        """``getStatefulSetRevisions``: the update revision (an equal one reused, else a new
        one, its hash probed with the collision count), and the current one (the status's,
        if it still exists, else the update revision)."""
        data = revision_data(sts)
        collision_count = sts.status.collision_count
        equal, number = plan_update_revision(revisions, data)
        if equal is not None:
            # "if the equivalent revision is not immediately prior we will roll back by
            # incrementing the Revision of the equivalent revision"
            if equal.revision != number:
                await self._renumber(equal, number)
            update = equal.metadata.name
        else:
            selector_labels = dict(sts.spec.template.metadata.labels)
            revision = new_revision(sts, data, number, collision_count, selector_labels, new_controller_ref(sts))
            try:
                await self.client.create(revision)
            except ApiError as error:
                if error.code != 409:
                    raise
            update = revision.metadata.name
            revisions.append(revision)
        names = {revision.metadata.name for revision in revisions}
        current = sts.status.current_revision if sts.status.current_revision in names else update
        return current, update, collision_count

    async def _renumber(self, revision: ControllerRevision, number: int) -> None:
        """``UpdateControllerRevision`` (controller_history.go): set ``revision`` to
        ``number`` under ``retry.RetryOnConflict(retry.DefaultBackoff, ...)`` -- on a conflict
        take the lister's copy and try again (5 steps, 10 ms apart; the 10 % jitter is not
        modelled), done as soon as the copy already has the number. Another error, or
        conflicts on every step, fail the sync (requeued with rate limiting)."""
        clone = deep_copy(revision)
        for step in range(RENUMBER_RETRY_STEPS):
            if clone.revision == number:
                return
            clone.revision = number
            try:
                await self.client.update(clone)
                return
            except ApiError as error:
                if error.code != 409 or step == RENUMBER_RETRY_STEPS - 1:
                    raise
            cached = self.revisions.indexer.get_by_key(f"{revision.metadata.namespace}/{revision.metadata.name}")
            if cached is None:
                raise ControllerError(f"controllerrevision {revision.metadata.name} is gone")
            clone = deep_copy(cached)
            await self.process.sleep(RENUMBER_RETRY_INTERVAL_S)

    def _claims_of(self, sts: StatefulSet, ordinal: int) -> list[PersistentVolumeClaim | None]:
        return [self.claims.indexer.get_by_key(f"{claim.metadata.namespace}/{claim.metadata.name}") for claim in new_claims(sts, ordinal)]

    async def _fix_claims(self, sts: StatefulSet, pod: Pod) -> None:
        """``ClaimsMatchRetentionPolicy`` / ``UpdatePodClaimForRetentionPolicy``: every
        existing claim of the pod's identity gets the owner references the policy asks for."""
        ordinal = parse_ordinal(sts.metadata.name, pod.metadata.name)
        if ordinal is None or not pod.metadata.uid:
            return
        for claim in self._claims_of(sts, ordinal):
            if claim is None or claim_owner_up_to_date(claim, sts, pod):
                continue
            updated = deep_copy(claim)
            updated.metadata.owner_references = claim_owner_refs_for_set_and_pod(claim, sts, pod)
            try:
                await self.client.update(updated)
            except ApiError as error:
                if error.code != 404:
                    raise
                continue
            self.process.world.record("statefulset-claim", statefulset=meta_namespace_key(sts), claim=claim.metadata.name, pod=pod.metadata.name,
                                      owners=[f"{ref.kind}/{ref.name}" for ref in updated.metadata.owner_references], controller=self.name)

    async def _create_claims(self, sts: StatefulSet, ordinal: int) -> None:
        """``createPersistentVolumeClaims``: create the claims not in the cache; one being
        deleted is an error ("pvc ... is being deleted": no pod is created on it, the sync
        is retried until it is gone and can be made again)."""
        for claim in new_claims(sts, ordinal):
            cached = self.claims.indexer.get_by_key(f"{claim.metadata.namespace}/{claim.metadata.name}")
            if cached is not None:
                if cached.metadata.deletion_timestamp is not None:
                    raise ControllerError(f"pvc {claim.metadata.name} is being deleted")
                continue
            try:
                await self.client.create(claim)
            except ApiError as error:
                if error.code != 409:
                    self.recorder.event(sts, "Warning", "FailedCreate", f"create Claim {claim.metadata.name} for Pod {sts.metadata.name}-{ordinal} in StatefulSet {sts.metadata.name} failed error: {error.status.message}")
                    raise
            else:
                self.recorder.event(sts, "Normal", "SuccessfulCreate", f"create Claim {claim.metadata.name} Pod {sts.metadata.name}-{ordinal} in StatefulSet {sts.metadata.name} success")

    async def _act(self, sts: StatefulSet, action: Action, template: PodTemplateSpec) -> None:
        if action.kind == "create":
            pod = new_stateful_pod(sts, template, action.ordinal, action.revision)
            if STATEFUL_SET_AUTO_DELETE_PVC and pod_claim_is_stale(sts, pod, self._claims_of(sts, action.ordinal)):
                # processReplica: a stale claim (its scaled-down pod's, being collected) blocks
                # the pod; retried (rate-limited) until the garbage collector removed it.
                raise ControllerError(f"pod {pod.metadata.name} has a stale claim")
            await self._create_claims(sts, action.ordinal)
            # stateful_pod_control.go (recordPodEvent): "create Pod web-0 in StatefulSet web successful"
            try:
                created = await self.client.create(pod)
            except ApiError as error:
                if error.code != 409:
                    self.recorder.event(sts, "Warning", "FailedCreate", f"create Pod {pod.metadata.name} in StatefulSet {sts.metadata.name} failed error: {error.status.message}")
                    raise
            else:
                self.recorder.event(sts, "Normal", "SuccessfulCreate", f"create Pod {pod.metadata.name} in StatefulSet {sts.metadata.name} successful")
                if STATEFUL_SET_AUTO_DELETE_PVC and isinstance(created, Pod):
                    await self._fix_claims(sts, created)  # CreateStatefulPod: "Set PVC policy as much as is possible at this point"
            self._record(sts, pod.metadata.name, "create", action.reason)
        elif action.kind == "claims":
            assert action.pod is not None
            await self._create_claims(sts, action.ordinal)
            await self._fix_claims(sts, action.pod)
        elif action.kind == "delete":
            assert action.pod is not None
            try:
                await self.client.delete("pods", action.pod.metadata.namespace, action.pod.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    self.recorder.event(sts, "Warning", "FailedDelete", f"delete Pod {action.pod.metadata.name} in StatefulSet {sts.metadata.name} failed error: {error.status.message}")
                    raise
            else:
                self.recorder.event(sts, "Normal", "SuccessfulDelete", f"delete Pod {action.pod.metadata.name} in StatefulSet {sts.metadata.name} successful")
            self._record(sts, action.pod.metadata.name, "delete", action.reason)
        elif action.kind == "relabel":
            assert action.pod is not None
            labels = {POD_NAME_LABEL: action.pod.metadata.name, POD_INDEX_LABEL: str(action.ordinal)}
            await self.client.patch("pods", action.pod.metadata.namespace, action.pod.metadata.name, {"metadata": {"labels": labels}})

    async def _update_status(self, sts: StatefulSet, status: StatefulSetStatus) -> None:
        """``updateStatefulSetStatus``: write only on change."""
        status.conditions = list(sts.status.conditions)
        if msgspec.json.encode(status) == msgspec.json.encode(sts.status):
            return
        updated = deep_copy(sts)
        updated.status = status
        try:
            await self.client.update_status(updated)
        except ApiError as error:
            if error.code not in (404, 409):
                raise
            if error.code == 409:
                self.queue.add_rate_limited(meta_namespace_key(sts))

    async def _truncate_history(self, sts: StatefulSet, revisions: list[ControllerRevision], pods: list[Pod], live: set[str]) -> None:
        used = live | {pod.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL, "") for pod in pods}
        limit = 10 if sts.spec.revision_history_limit is None else sts.spec.revision_history_limit
        for revision in revisions_to_truncate(revisions, used, limit):
            try:
                await self.client.delete("controllerrevisions", revision.metadata.namespace, revision.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    raise

    def _record(self, sts: StatefulSet, pod: str, action: str, reason: str) -> None:
        self.process.world.record("statefulset-pod", statefulset=meta_namespace_key(sts), pod=pod, action=action, reason=reason, controller=self.name)


__all__ += ["Plan", "complete_rolling_update", "new_claims", "versioned_revision"]

"""The persistent volume controller (binder) and a dynamic provisioner, as
kube-controller-manager's ``pkg/controller/volume/persistentvolume`` and an external CSI
provisioner (``kubernetes-csi/external-provisioner``) would run them.

Upstream behaviour followed (``pv_controller.go``, ``index.go``; the docs' "Persistent
Volumes" page, https://kubernetes.io/docs/concepts/storage/persistent-volumes/):

- **Binding** (``syncUnboundClaim``): a claim without ``volumeName`` is matched to the
  smallest Available volume of its storage class whose capacity covers the request, whose
  access modes include the claim's and whose labels its selector selects
  (``findBestMatchForClaim``); a volume pre-bound to it by ``claimRef`` wins. Both sides
  are written: the volume's ``claimRef`` and phase Bound (``bindVolumeToClaim``), then the
  claim's ``volumeName``, the ``pv.kubernetes.io/bind-completed`` and
  ``bound-by-controller`` annotations, phase Bound, ``capacity`` and ``accessModes``.
  A claim whose class has ``volumeBindingMode: WaitForFirstConsumer`` waits until the
  scheduler names a node (``volume.kubernetes.io/selected-node``).
- **Provisioning** (``provisionClaim`` + the external provisioner): when no volume
  matches and the class has a provisioner, the claim is annotated
  ``volume.kubernetes.io/storage-provisioner`` and a volume ``pvc-<claim uid>`` is made
  with the class's reclaim policy, the claim's request and access modes, a CSI source of
  the class's provisioner and, for a WaitForFirstConsumer class, node affinity to the zone
  of the selected node (a zonal disk: a pod that uses it can only run in that zone, as
  with GCE PD, EBS or Azure Disk). A claim without a class, and no default class, stays
  Pending (``no persistent volumes available for this claim and no storage class is set``).
- **Release** (``syncVolume``): a Bound volume whose claim is gone becomes Released;
  reclaim policy Delete deletes it, Retain keeps it Released. A volume whose claim is bound
  to another volume (a binding that lost a race) is deleted if it was provisioned for it
  with policy Delete, else unbound (``unbindVolume``) and Available again.

Journal: ``volume`` {claim, volume, event: bound | provisioned | released | deleted | unbound | waiting}.
Non-guarantees: ``Recycle``, volume expansion, snapshots and data sources, and access-mode
enforcement at attach time are not modelled; the provisioner is in this process (a real
one runs beside the cluster and can fail independently).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from chaoskube.api.objects import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    VolumeNodeAffinity,
    deep_copy,
    matches,
    parse_quantity,
)
from chaoskube.api.workloads import node_selector_matches
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "BIND_COMPLETED",
    "BOUND_BY_CONTROLLER",
    "DEFAULT_CLASS_ANNOTATION",
    "SELECTED_NODE",
    "STORAGE_PROVISIONER",
    "PersistentVolumeController",
    "best_match",
    "provisioned_volume",
]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
ZONE_LABEL = "topology.kubernetes.io/zone"


def _modes_cover(volume_modes: list[str], claim_modes: list[str]) -> bool:
    return all(mode in volume_modes for mode in claim_modes)


def best_match(claim: PersistentVolumeClaim, volumes: list[PersistentVolume], *, delayed: bool = False, node: Any = None) -> PersistentVolume | None:
    """``findBestMatchForClaim``: a volume pre-bound to the claim, else the smallest
    available one of the same class that covers the request, modes and selector. A claim
    whose binding waits for its first consumer (``delayed``) matches only a pre-bound
    volume until the scheduler selected a node, then only volumes whose node affinity
    accepts ``node`` (upstream ``FindMatchingVolume`` with ``delayBinding``: the scheduler's
    VolumeBinding plugin picks such a volume for the node; here the binder does)."""
    want = parse_quantity(claim.spec.resources.requests.get("storage", "0"))
    klass = claim.spec.storage_class_name or ""
    candidates = []
    for volume in volumes:
        reference = volume.spec.claim_ref
        if reference is not None and reference.name == claim.metadata.name and reference.namespace == claim.metadata.namespace and (not reference.uid or reference.uid == claim.metadata.uid):
            return volume
        if reference is not None or volume.status.phase not in ("Available", "Pending", ""):
            continue
        if delayed and (node is None or not node_selector_matches(volume.spec.node_affinity.required if volume.spec.node_affinity is not None else None, node.metadata.name, node.metadata.labels)):
            continue
        if volume.metadata.deletion_timestamp is not None:
            continue
        if (volume.spec.storage_class_name or "") != klass:
            continue
        if not _modes_cover(volume.spec.access_modes, claim.spec.access_modes):
            continue
        if claim.spec.selector is not None and not matches(claim.spec.selector, volume.metadata.labels):
            continue
        size = parse_quantity(volume.spec.capacity.get("storage", "0"))
        if size < want:
            continue
        candidates.append((size, volume.metadata.name, volume))
    return min(candidates)[2] if candidates else None


def provisioned_volume(claim: PersistentVolumeClaim, storage_class: Any, zone: str | None) -> PersistentVolume:
    """What the provisioner makes for ``claim``: ``pvc-<uid>``, pre-bound to it."""
    name = f"pvc-{claim.metadata.uid}"
    affinity = None
    if zone:
        term = NodeSelectorTerm(match_expressions=[NodeSelectorRequirement(key=ZONE_LABEL, operator="In", values=[zone])])
        affinity = VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[term]))
    spec = PersistentVolumeSpec(
        capacity={"storage": claim.spec.resources.requests.get("storage", "0")},
        access_modes=list(claim.spec.access_modes),
        claim_ref=ObjectReference(kind="PersistentVolumeClaim", namespace=claim.metadata.namespace, name=claim.metadata.name, uid=claim.metadata.uid, api_version="v1", resource_version=claim.metadata.resource_version),
        persistent_volume_reclaim_policy=storage_class.reclaim_policy or "Delete",
        storage_class_name=storage_class.metadata.name,
        volume_mode=claim.spec.volume_mode or "Filesystem",
        node_affinity=affinity,
        csi={"driver": storage_class.provisioner, "volumeHandle": name, "fsType": "ext4"},
    )
    meta = ObjectMeta(name=name, annotations={PROVISIONED_BY: storage_class.provisioner}, labels={ZONE_LABEL: zone} if zone else {})
    return PersistentVolume(metadata=meta, spec=spec)


class PersistentVolumeController:
    """``PersistentVolumeController`` + the provisioner (see the module docstring)."""

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "persistentvolume-binder") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.queue = RateLimitingQueue(process)
        self._last: dict[str, tuple[str, str]] = {}
        self.claims = informers.informer("persistentvolumeclaims")
        self.volumes = informers.informer("persistentvolumes")
        self.classes = informers.informer("storageclasses")
        self.nodes = informers.informer("nodes")
        self.claims.add_event_handler(on_add=self._claim, on_update=lambda old, new: self._claim(new), on_delete=self._claim_deleted)
        self.volumes.add_event_handler(on_add=self._volume, on_update=lambda old, new: self._volume(new), on_delete=self._volume)

    def _claim(self, claim: Any) -> None:
        claim = claim.obj if isinstance(claim, DeletedFinalStateUnknown) else claim
        self.queue.add(("claim", meta_namespace_key(claim)))

    def _claim_deleted(self, claim: Any) -> None:
        claim = claim.obj if isinstance(claim, DeletedFinalStateUnknown) else claim
        if claim.spec.volume_name:
            self.queue.add(("volume", claim.spec.volume_name))

    def _volume(self, volume: Any) -> None:
        volume = volume.obj if isinstance(volume, DeletedFinalStateUnknown) else volume
        self.queue.add(("volume", volume.metadata.name))
        reference = volume.spec.claim_ref
        if reference is not None:
            self.queue.add(("claim", f"{reference.namespace}/{reference.name}"))

    async def run(self) -> None:
        for informer in (self.claims, self.volumes, self.classes, self.nodes):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._resync)
            for _ in range(2):
                nursery.start_soon(work_loop, self.queue, self.sync)

    async def _resync(self) -> None:
        """``--pvclaimbinder-sync-period``: every claim and volume again."""
        while True:
            await self.process.sleep(self.config.pvclaimbinder_sync_period_s)
            for claim in self.claims.indexer.list():
                self._claim(claim)
            for volume in self.volumes.indexer.list():
                self.queue.add(("volume", volume.metadata.name))

    async def sync(self, item: tuple[str, str]) -> None:
        kind, key = item
        if kind == "claim":
            claim = self.claims.indexer.get_by_key(key)
            if claim is not None:
                await self._sync_claim(claim)
        else:
            volume = self.volumes.indexer.get_by_key(key)
            if volume is not None:
                await self._sync_volume(volume)

    def _default_class(self) -> Any | None:
        defaults = [sc for sc in self.classes.indexer.list() if sc.metadata.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"]
        return max(defaults, key=lambda sc: (sc.metadata.creation_timestamp or "", sc.metadata.name)) if defaults else None

    async def _sync_claim(self, claim: PersistentVolumeClaim) -> None:
        if claim.metadata.deletion_timestamp is not None:
            return
        if claim.spec.volume_name:
            volume = self.volumes.indexer.get_by_key(claim.spec.volume_name)
            if volume is not None and claim.status.phase != "Bound" and volume.spec.claim_ref is not None and volume.spec.claim_ref.uid == claim.metadata.uid:
                await self._mark_claim_bound(claim, volume)
            return
        klass = self.classes.indexer.get_by_key(claim.spec.storage_class_name) if claim.spec.storage_class_name else None
        delayed = klass is not None and (klass.volume_binding_mode or "Immediate") == "WaitForFirstConsumer"
        selected = claim.metadata.annotations.get(SELECTED_NODE) if delayed else None
        volume = best_match(claim, self.volumes.indexer.list(), delayed=delayed, node=self.nodes.indexer.get_by_key(selected) if selected else None)
        if volume is not None:
            await self._bind(claim, volume)
            return
        if klass is None or not klass.provisioner:
            self._record(claim, "", "waiting", "no persistent volumes available for this claim and no storage class is set" if not claim.spec.storage_class_name else f'storageclass.storage.k8s.io "{claim.spec.storage_class_name}" not found')
            return
        zone = None
        if (klass.volume_binding_mode or "Immediate") == "WaitForFirstConsumer":
            node_name = claim.metadata.annotations.get(SELECTED_NODE)
            if not node_name:
                self._record(claim, "", "waiting", "waiting for first consumer to be created before binding")
                return
            zone = self._provisioning_zone(self.nodes.indexer.get_by_key(node_name))
        if claim.metadata.annotations.get(STORAGE_PROVISIONER) != klass.provisioner:
            annotated = deep_copy(claim)
            annotated.metadata.annotations = {**claim.metadata.annotations, STORAGE_PROVISIONER: klass.provisioner, BETA_STORAGE_PROVISIONER: klass.provisioner}
            claim = await self.client.update(annotated)
        volume = provisioned_volume(claim, klass, zone)
        try:
            volume = await self.client.create(volume)
        except ApiError as error:
            if error.code != 409:
                raise
            volume = await self.client.get("persistentvolumes", "", volume.metadata.name)
        self._record(claim, volume.metadata.name, "provisioned", f"zone {zone}" if zone else "any zone")
        await self._bind(claim, volume)

    def _provisioning_zone(self, node: Any | None) -> str | None:
        """The zone a WaitForFirstConsumer claim's disk is made in: the selected node's
        (the provisioner's ``accessibility_requirements`` from the node's topology,
        kubernetes-csi/external-provisioner ``GenerateAccessibilityRequirements``)."""
        return node.metadata.labels.get(ZONE_LABEL) if node is not None else None

    async def _bind(self, claim: PersistentVolumeClaim, volume: PersistentVolume) -> None:
        """``bind``: the volume first (claimRef, Bound), then the claim."""
        if volume.spec.claim_ref is None or volume.spec.claim_ref.uid != claim.metadata.uid or volume.status.phase != "Bound":
            bound = deep_copy(volume)
            bound.spec.claim_ref = ObjectReference(kind="PersistentVolumeClaim", namespace=claim.metadata.namespace, name=claim.metadata.name, uid=claim.metadata.uid, api_version="v1", resource_version=claim.metadata.resource_version)
            bound.metadata.annotations = {**volume.metadata.annotations, BOUND_BY_CONTROLLER: "yes"}
            volume = await self.client.update(bound)
            if volume.status.phase != "Bound":
                status = deep_copy(volume)
                status.status.phase = "Bound"
                volume = await self.client.update_status(status)
        await self._mark_claim_bound(claim, volume)

    async def _mark_claim_bound(self, claim: PersistentVolumeClaim, volume: PersistentVolume) -> None:
        bound = deep_copy(claim)
        bound.spec.volume_name = volume.metadata.name
        bound.metadata.annotations = {**claim.metadata.annotations, BIND_COMPLETED: "yes", BOUND_BY_CONTROLLER: "yes"}
        if bound.spec != claim.spec or bound.metadata.annotations != claim.metadata.annotations:
            claim = await self.client.update(bound)
        if claim.status.phase != "Bound":
            status = deep_copy(claim)
            status.status.phase = "Bound"
            status.status.capacity = dict(volume.spec.capacity)
            status.status.access_modes = list(volume.spec.access_modes)
            await self.client.update_status(status)
            self._record(claim, volume.metadata.name, "bound", "")

    async def _sync_volume(self, volume: PersistentVolume) -> None:
        if volume.metadata.deletion_timestamp is not None:
            return
        reference = volume.spec.claim_ref
        if reference is None:
            if volume.status.phase in ("", "Pending"):
                status = deep_copy(volume)
                status.status.phase = "Available"
                await self.client.update_status(status)
            return
        claim = self.claims.indexer.get_by_key(f"{reference.namespace}/{reference.name}")
        if claim is not None and (not reference.uid or claim.metadata.uid == reference.uid):
            if claim.spec.volume_name and claim.spec.volume_name != volume.metadata.name:
                await self._bound_elsewhere(volume, claim)
            return
        if claim is None:
            try:  # the cache may lag: a quorum read before releasing (upstream does the same)
                claim = await self.client.get("persistentvolumeclaims", reference.namespace, reference.name)
                if not reference.uid or claim.metadata.uid == reference.uid:
                    return
            except ApiError as error:
                if error.code != 404:
                    raise
        if volume.status.phase != "Released":
            released = deep_copy(volume)
            released.status.phase = "Released"
            volume = await self.client.update_status(released)
            self._record_volume(volume, reference, "released")
        if volume.spec.persistent_volume_reclaim_policy == "Delete":
            try:
                await self.client.delete("persistentvolumes", "", volume.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    raise
            self._record_volume(volume, reference, "deleted")

    async def _bound_elsewhere(self, volume: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        """``syncVolume``, "volume is bound to a claim, but the claim is bound elsewhere" (a
        binding that lost a race with another, from a stale cache: kubernetes PR #25881): a
        volume provisioned for the claim with reclaim policy Delete is deleted; one the
        controller bound is unbound (``unbindVolume``: claimRef and bound-by-controller
        removed); one a user pre-bound is left bound and set Available."""
        reference = volume.spec.claim_ref
        assert reference is not None
        if PROVISIONED_BY in volume.metadata.annotations and volume.spec.persistent_volume_reclaim_policy == "Delete":
            try:
                await self.client.delete("persistentvolumes", "", volume.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    raise
            self._record_volume(volume, reference, "deleted")
            return
        if BOUND_BY_CONTROLLER in volume.metadata.annotations:
            unbound = deep_copy(volume)
            unbound.spec.claim_ref = None
            unbound.metadata.annotations = {key: value for key, value in volume.metadata.annotations.items() if key != BOUND_BY_CONTROLLER}
            volume = await self.client.update(unbound)
        if volume.status.phase != "Available":
            status = deep_copy(volume)
            status.status.phase = "Available"
            await self.client.update_status(status)
        self._record_volume(volume, reference, "unbound")

    def _record(self, claim: PersistentVolumeClaim, volume: str, event: str, detail: str) -> None:
        key = meta_namespace_key(claim)
        if self._last.get(key) == (event, detail):
            return  # a resync of a claim still waiting for the same reason
        self._last[key] = (event, detail)
        self.process.world.record("volume", claim=meta_namespace_key(claim), volume=volume, event=event, detail=detail, controller=self.name)

    def _record_volume(self, volume: PersistentVolume, reference: ObjectReference, event: str) -> None:
        self.process.world.record("volume", claim=f"{reference.namespace}/{reference.name}", volume=volume.metadata.name, event=event, detail="", controller=self.name)

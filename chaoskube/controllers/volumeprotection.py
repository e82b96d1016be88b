"""The storage-object-in-use protection controllers of kube-controller-manager: a claim a pod
uses, and a volume bound to a claim, are not removed from the store while in use.

The StorageObjectInUseProtection admission plugin
(:class:`chaoskube.apiserver.admission.StorageObjectInUseProtectionPlugin`) puts the
finalizer ``kubernetes.io/pvc-protection`` on every new PersistentVolumeClaim and
``kubernetes.io/pv-protection`` on every new PersistentVolume, so a delete only marks them
(``deletionTimestamp``); these controllers remove the finalizer when it is safe, and the
API server then removes the object.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/volume/pvcprotection/pvc_protection_controller.go`` -- ``processPVC``: a
  claim being deleted with the finalizer (``IsDeletionCandidate``) loses it when no pod uses
  it (``isBeingUsed``: first the pod informer's cache, then a live list of the namespace's
  pods, so a pod the cache has not seen yet still counts: kubernetes/kubernetes#75980,
  #76703, PR #80492); a claim not being deleted without
  the finalizer (``NeedToAddFinalizer``; created before the plugin was on) gets it.
  ``podUsesPVC``: a pod uses a claim when it is scheduled (``spec.nodeName`` set: a kubelet
  never starts a pod whose claim is being deleted) and one of its volumes names it
  (``persistentVolumeClaim.claimName``) -- whatever its phase, as long as it is in the
  store. Pod events enqueue the claims of a pod deleted, terminated or not yet scheduled
  (``enqueuePVCs``).
- ``pkg/controller/volume/pvprotection/pv_protection_controller.go`` -- ``processPV``: a
  volume being deleted with the finalizer loses it when it is not ``Bound``
  (``isBeingUsed``: ``pv.Status.Phase == VolumeBound``); one without it gets it.
- ``pkg/volume/util/finalizer.go`` -- the finalizer names.

Journal: ``volume-protection`` {resource, namespace, name, action: remove-finalizer |
add-finalizer} per write.

Non-guarantees: generic ephemeral volumes (``volume.ephemeral``) are not modelled, so the
upstream ``podIsShutDown`` exception for them does not arise; the namespace-batched queue
(``pvcProcessingStore``) is one key per claim here (same decisions, fewer shared lists).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chaoskube.api.objects import PersistentVolume, PersistentVolumeClaim, Pod, deep_copy
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import add_index, work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "PVC_PROTECTION_FINALIZER",
    "PV_PROTECTION_FINALIZER",
    "PVCProtectionController",
    "PVProtectionController",
    "pod_uses_claim",
]

#: ``volumeutil.PVCProtectionFinalizer`` / ``PVProtectionFinalizer`` (pkg/volume/util/finalizer.go).
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

#: ``common.PodPVCIndex``: pods by ``namespace/claim`` of each claim volume.
POD_PVC_INDEX = "pod-pvc-index"


def _claim_names(pod: Pod) -> list[str]:
    return [str((volume.get("persistentVolumeClaim") or {}).get("claimName") or "") for volume in pod.spec.volumes if volume.get("persistentVolumeClaim")]


def pod_pvc_index(pod: Pod) -> list[str]:
    return [f"{pod.metadata.namespace}/{name}" for name in _claim_names(pod) if name]


def pod_uses_claim(pod: Pod, claim: PersistentVolumeClaim) -> bool:
    """``podUsesPVC``: scheduled, and a volume names the claim (module docstring)."""
    return bool(pod.spec.node_name) and pod.metadata.namespace == claim.metadata.namespace and claim.metadata.name in _claim_names(pod)


def _deletion_candidate(obj: Any, finalizer: str) -> bool:
    """``protectionutil.IsDeletionCandidate``."""
    return obj.metadata.deletion_timestamp is not None and finalizer in obj.metadata.finalizers


def _needs_finalizer(obj: Any, finalizer: str) -> bool:
    """``protectionutil.NeedToAddFinalizer``."""
    return obj.metadata.deletion_timestamp is None and finalizer not in obj.metadata.finalizers


class _Protection:
    finalizer = ""
    resource = ""

    def __init__(self, process: Process, client: ApiClient) -> None:
        self.process = process
        self.client = client
        self.queue = RateLimitingQueue(process)

    def _enqueue_object(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if _needs_finalizer(obj, self.finalizer) or _deletion_candidate(obj, self.finalizer):
            self.queue.add(meta_namespace_key(obj))

    async def _set_finalizer(self, obj: Any, present: bool) -> None:
        updated = deep_copy(obj)
        if present:
            updated.metadata.finalizers = [*updated.metadata.finalizers, self.finalizer]
        else:
            updated.metadata.finalizers = [f for f in updated.metadata.finalizers if f != self.finalizer]
        try:
            await self.client.update(updated)
        except ApiError as error:
            if error.code == 404:
                return
            raise
        self.process.world.record("volume-protection", resource=self.resource, namespace=obj.metadata.namespace, name=obj.metadata.name,
                                  action="add-finalizer" if present else "remove-finalizer")


class PVCProtectionController(_Protection):
    """``pvcprotection.Controller`` (module docstring)."""

    finalizer = PVC_PROTECTION_FINALIZER
    resource = "persistentvolumeclaims"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        super().__init__(process, client)
        self.claims = informers.informer("persistentvolumeclaims")
        self.pods = informers.informer("pods")
        add_index(self.pods, POD_PVC_INDEX, pod_pvc_index)
        self.claims.add_event_handler(on_add=self._enqueue_object, on_update=lambda old, new: self._enqueue_object(new))
        self.pods.add_event_handler(on_add=lambda pod: self._pod_changed(None, pod, False), on_update=lambda old, new: self._pod_changed(old, new, False),
                                    on_delete=lambda pod: self._pod_changed(None, pod, True))

    def _pod_changed(self, old: Any, pod: Any, deleted: bool) -> None:
        """``podAddedDeletedUpdated`` / ``enqueuePVCs``."""
        pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
        self._enqueue_claims(pod, deleted)
        if old is not None and old.metadata.uid != pod.metadata.uid:
            self._enqueue_claims(old, True)

    def _enqueue_claims(self, pod: Pod, deleted: bool) -> None:
        if not deleted and pod.status.phase not in ("Succeeded", "Failed") and pod.spec.node_name:
            return
        for key in pod_pvc_index(pod):
            self.queue.add(key)

    async def run(self) -> None:
        await self.claims.wait_for_sync()
        await self.pods.wait_for_sync()
        await work_loop(self.queue, self.sync)

    async def sync(self, key: str) -> None:
        """``processPVC``."""
        claim = self.claims.indexer.get_by_key(key)
        if claim is None:
            return
        if _deletion_candidate(claim, self.finalizer):
            if not await self._used(claim):
                await self._set_finalizer(claim, False)
            return
        if _needs_finalizer(claim, self.finalizer):
            await self._set_finalizer(claim, True)

    async def _used(self, claim: PersistentVolumeClaim) -> bool:
        """``isBeingUsed``: the informer's cache, then a live list (``askAPIServer``)."""
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        if any(pod_uses_claim(pod, claim) for pod in self.pods.indexer.by_index(POD_PVC_INDEX, key)):
            return True
        pods = await self.client.list("pods", claim.metadata.namespace)
        return any(isinstance(pod, Pod) and pod_uses_claim(pod, claim) for pod in pods.items)


class PVProtectionController(_Protection):
    """``pvprotection.Controller`` (module docstring)."""

    finalizer = PV_PROTECTION_FINALIZER
    resource = "persistentvolumes"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        super().__init__(process, client)
        self.volumes = informers.informer("persistentvolumes")
        self.volumes.add_event_handler(on_add=self._enqueue_object, on_update=lambda old, new: self._enqueue_object(new))

    async def run(self) -> None:
        await self.volumes.wait_for_sync()
        await work_loop(self.queue, self.sync)

    async def sync(self, key: str) -> None:
        """``processPV``."""
        volume: PersistentVolume | None = self.volumes.indexer.get_by_key(key)
        if volume is None:
            return
        if _deletion_candidate(volume, self.finalizer):
            if volume.status.phase != "Bound":
                await self._set_finalizer(volume, False)
            return
        if _needs_finalizer(volume, self.finalizer):
            await self._set_finalizer(volume, True)


"""The resource quota controller, as kube-controller-manager's
``pkg/controller/resourcequota/resource_quota_controller.go``: every quota's
``status.hard`` follows its ``spec.hard`` and ``status.used`` is recomputed from the
objects of its namespace with the evaluators the admission plugin uses
(:func:`chaoskube.api.quota.recalculate`), when a quota is added or its ``spec.hard``
changes (a status-only update -- the admission plugin's charge -- enqueues nothing, as
upstream's quota informer ``UpdateFunc``), when an object it counts is deleted or a pod
turns terminal (``replenishment``), and every ``--resource-quota-sync-period`` (5 min).
Usage is read from this controller's informers and written with the resourceVersion of the
quota it read (a stale quota is a 409, retried); informers that lag the store make the
recalculation count fewer objects than are stored, the open upstream race
kubernetes/kubernetes#123434 (judged as a bound by ``quota-invariants``). The admission plugin charges usage
as objects are created; this controller gives back what deletions free.

Journal: ``resourcequota`` {quota, used} when a status changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from chaoskube.api.objects import ResourceQuota, deep_copy
from chaoskube.api.quota import recalculate
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import NAMESPACE_INDEX, DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = ["QUOTA_RESOURCES", "ResourceQuotaController"]

#: The resources whose objects quotas count (the evaluators this simulation has).
QUOTA_RESOURCES = (
    "pods", "services", "configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas",
    "deployments", "replicasets", "statefulsets", "daemonsets", "jobs", "cronjobs",
)


class ResourceQuotaController:
    """``Controller`` of ``pkg/controller/resourcequota`` (see the module docstring)."""

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "resourcequota-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.queue = RateLimitingQueue(process)
        self.quotas = informers.informer("resourcequotas")
        self.informers = {resource: informers.informer(resource) for resource in QUOTA_RESOURCES}
        # upstream's UpdateFunc: "We are only interested in observing updates to quota.spec to
        # drive updates to quota.status. We ignore all updates to quota.Status" -- a status
        # write (the admission plugin's charge, this controller's own) enqueues nothing
        self.quotas.add_event_handler(on_add=self._enqueue, on_update=self._quota_updated, on_delete=self._enqueue)
        for resource in QUOTA_RESOURCES:
            if resource == "resourcequotas":
                continue
            self.informers[resource].add_event_handler(
                on_update=lambda old, new, r=resource: self._replenish(r, new, old),
                on_delete=lambda obj, r=resource: self._replenish(r, obj),
            )

    def _enqueue(self, quota: Any) -> None:
        quota = quota.obj if isinstance(quota, DeletedFinalStateUnknown) else quota
        self.queue.add(meta_namespace_key(quota))

    def _quota_updated(self, old: Any, new: Any) -> None:
        if dict(old.spec.hard) != dict(new.spec.hard):
            self._enqueue(new)

    def _replenish(self, resource: str, obj: Any, old: Any = None) -> None:
        """``replenishQuota``: a deletion, or a pod that turned terminal, frees usage."""
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if old is not None:
            if resource != "pods" or not (obj.status.phase in ("Succeeded", "Failed") and old.status.phase not in ("Succeeded", "Failed")):
                return
        for quota in self.quotas.indexer.by_index(NAMESPACE_INDEX, obj.metadata.namespace):
            self._enqueue(quota)

    async def run(self) -> None:
        for informer in (self.quotas, *self.informers.values()):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._resync)
            for _ in range(self.config.concurrent_resource_quota_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    async def _resync(self) -> None:
        while True:
            for quota in self.quotas.indexer.list():
                self._enqueue(quota)
            await self.process.sleep(self.config.resource_quota_sync_period_s)

    async def sync(self, key: str) -> None:
        quota: ResourceQuota | None = self.quotas.indexer.get_by_key(key)
        if quota is None:
            return
        namespace = quota.metadata.namespace
        objects = [(resource, obj) for resource, informer in self.informers.items() for obj in informer.indexer.by_index(NAMESPACE_INDEX, namespace)]
        used = recalculate(quota, objects)
        hard = dict(quota.spec.hard)
        if hard == quota.status.hard and used == quota.status.used:
            return
        updated = deep_copy(quota)
        updated.status.hard = hard
        updated.status.used = used
        try:
            await self.client.update_status(updated)
        except ApiError as error:
            if error.code not in (404, 409):
                raise
            if error.code == 409:
                self.queue.add_rate_limited(key)
                return
        self.process.world.record("resourcequota", quota=key, used=used, controller=self.name)

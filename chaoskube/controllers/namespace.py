"""The namespace controller, as kube-controller-manager's ``pkg/controller/namespace``
(``deletion/namespaced_resources_deleter.go``).

A namespace being deleted (``deletionTimestamp`` set, phase Terminating, the ``kubernetes``
finalizer in ``spec.finalizers``) has its content deleted — every namespaced resource, the
built-in ones and those of the cluster's CustomResourceDefinitions — then, once nothing is
left, its ``kubernetes`` finalizer is removed through the ``finalize`` subresource and the
API server deletes it. While content remains (pods terminating gracefully, objects held by
finalizers) the namespace's conditions say so (``NamespaceContentRemaining``: "Some
resources are remaining: pods. has 2 resource instances") and the controller looks again
(``estimate``: at least a second, at most the longest remaining grace period, as upstream
requeues after ``estimate`` seconds).

Journal: ``namespace-deletion`` {namespace, event: content-deleted | finalized, remaining}.
Non-guarantees: deletion goes one object at a time (upstream's ``deletecollection`` is not
served here); the order is the resources' names (upstream's is discovery's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from chaoskube.api.objects import KINDS, Namespace, deep_copy
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = ["NAMESPACED_RESOURCES", "NamespaceController", "remaining_message"]

#: The built-in namespaced resources whose objects a namespace's deletion removes.
NAMESPACED_RESOURCES = tuple(sorted(info.resource for info in KINDS.values() if info.namespaced))
FINALIZER = "kubernetes"


def remaining_message(counts: dict[str, int]) -> str:
    """``NamespaceContentRemaining``'s message."""
    return "Some resources are remaining: " + ", ".join(f"{resource} has {count} resource instances" for resource, count in sorted(counts.items()))


class NamespaceController:
    """``NamespaceController`` (see the module docstring); ``--concurrent-namespace-syncs`` workers."""

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "namespace-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.queue = RateLimitingQueue(process)
        self.namespaces = informers.informer("namespaces")
        self.crds = informers.informer("customresourcedefinitions")
        self.namespaces.add_event_handler(on_add=self._changed, on_update=lambda old, new: self._changed(new))

    def _changed(self, namespace: Any) -> None:
        namespace = namespace.obj if isinstance(namespace, DeletedFinalStateUnknown) else namespace
        if namespace.metadata.deletion_timestamp is not None:
            self.queue.add(namespace.metadata.name)

    async def run(self) -> None:
        await self.namespaces.wait_for_sync()
        await self.crds.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_namespace_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    def _resources(self) -> list[str]:
        custom = sorted(
            f"{crd.spec.names.plural}.{crd.spec.group}" for crd in self.crds.indexer.list()
            if crd.spec.scope == "Namespaced" and any(c.type == "Established" and c.status == "True" for c in crd.status.conditions)
        )
        return [*NAMESPACED_RESOURCES, *custom]

    async def sync(self, name: str) -> None:
        namespace = self.namespaces.indexer.get_by_key(name)
        if namespace is None or namespace.metadata.deletion_timestamp is None or FINALIZER not in namespace.spec.finalizers:
            return
        remaining: dict[str, int] = {}
        wait_s = 0.0
        now = self.process.now()
        for resource in self._resources():
            try:
                listed = (await self.client.list(resource, name)).items
            except ApiError as error:
                if error.code == 404:
                    continue  # a custom resource whose CRD went away meanwhile
                raise
            for obj in listed:
                if obj.metadata.deletion_timestamp is None:
                    try:
                        obj = await self.client.delete(resource, name, obj.metadata.name) or obj
                    except ApiError as error:
                        if error.code == 404:
                            continue
                        raise
                    if obj.metadata.deletion_timestamp is None:
                        continue  # gone at once
                remaining[resource] = remaining.get(resource, 0) + 1
                if obj.metadata.deletion_timestamp is not None:
                    wait_s = max(wait_s, parse_timestamp(obj.metadata.deletion_timestamp) - now)
        if remaining:
            await self._set_conditions(namespace, remaining)
            self.process.world.record("namespace-deletion", namespace=name, event="content-remaining", remaining=dict(sorted(remaining.items())), controller=self.name)
            self.queue.add_after(name, min(max(1.0, wait_s), 30.0))
            return
        finalized = deep_copy(namespace)
        finalized.spec.finalizers = [finalizer for finalizer in namespace.spec.finalizers if finalizer != FINALIZER]
        try:
            await self.client._put(finalized, "finalize", False)  # PUT namespaces/<name>/finalize
        except ApiError as error:
            if error.code != 404:
                raise
        self.process.world.record("namespace-deletion", namespace=name, event="finalized", controller=self.name)

    async def _set_conditions(self, namespace: Namespace, remaining: dict[str, int]) -> None:
        conditions = [c for c in namespace.status.conditions if c.get("type") != "NamespaceContentRemaining"]
        message = remaining_message(remaining)
        previous = next((c for c in namespace.status.conditions if c.get("type") == "NamespaceContentRemaining"), None)
        if previous is not None and previous.get("message") == message:
            return
        conditions.append({"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain", "message": message, "lastTransitionTime": timestamp(self.process.now())})
        updated = deep_copy(namespace)
        updated.status.conditions = conditions
        try:
            await self.client.update_status(updated)
        except ApiError as error:
            if error.code not in (404, 409):
                raise

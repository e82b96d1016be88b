"""pdb-guard: an example controller a user might write, with a real, subtle bug.

What it does. For every Deployment of one namespace, pdb-guard keeps a PodDisruptionBudget
``<deployment>-guard`` (``maxUnavailable: 1``, the Deployment's selector), so that a
``kubectl drain`` never takes down more than one of its pods at a time; when the
Deployment goes, it deletes the guard. The guard is labelled
``example.chaoskube.io/guard-for: <deployment>`` and annotated with the Deployment's uid
(``example.chaoskube.io/deployment-uid``), so a guard left over from an earlier Deployment
of the same name is recognised and replaced. (It could instead set an ownerReference and
let the garbage collector delete the guard; it cleans up itself so that the example
makes a destructive decision from its caches, as many real controllers do.)

Its promise — the safety property the example's state machine checks after every step
(:class:`chaoskube.examples.machine.PdbGuardMachine`): *a guard is never deleted while the
Deployment it guards still exists.* A Deployment left without its budget, even for a
moment, can be drained all at once.

The bug (``fixed=False``). The controller is shaped like the ones in
``chaoskube/controllers`` (the disruption controller's shape: handlers only enqueue keys;
a worker reads the caches, decides with the pure :func:`decide`, writes only when
something must change, requeues with rate limiting on error). Its ``run`` waits for the
PDB informer to sync before starting the worker — but not for the Deployment informer.
client-go's ``cache.WaitForCacheSync`` must be given *every* informer the worker reads
(sample-controller's ``Run``: "Wait for the caches to be synced before starting
workers", ``k8s.io/sample-controller/controller.go``); forgetting one is easy, because
nothing fails at once. After a restart both informers list; when the PDB list arrives
first (it depends on the order the two lists are sent and answered: the seed), the worker
sees every guard and an empty Deployment cache, concludes that every Deployment is gone
and deletes every guard. A moment later the Deployment list arrives and the guards are
created again: the cluster converges, so an end-state check passes; only a check after
every step sees the window.

The fix (``fixed=True``, the default): wait for both caches before starting the worker,
and before a destructive write confirm the cache's answer with a live read, as the
garbage collector does before deleting a dependent whose owner looks absent
(``pkg/controller/garbagecollector/garbagecollector.go``: ``attemptToDeleteItem`` calls
``isDangling``, which looks the owner up at the API server rather than trusting its
graph). The delete carries a uid precondition
(``metav1.Preconditions``), so it never removes a guard that was replaced meanwhile.

Guarantees (``fixed=True``): a guard is deleted only after a quorum read (the API
server's ``get`` without resourceVersion) answered that no Deployment with the guard's
uid exists; since uids are never reused, that Deployment is gone for good.

Non-guarantees: one replica, not leader-elected (two replicas would race on create,
harmlessly: the loser gets 409); no status, events or metrics; the guard is created once
and never updated (a Deployment whose selector changes keeps its old guard); it runs with
the admin credentials of the simulated cluster (a real one would have a ClusterRole for
deployments and poddisruptionbudgets).

Journal: ``{"type": "pdb-guard", "event": "create" | "delete" | "kept", "deployment",
"deployment_uid", "pdb"}`` for each write it makes (and each delete a live read vetoed).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from chaoskube.api.identity import admin_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import DeleteOptions
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory, split_meta_namespace_key
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.controllers.replicaset import ControllerError, work_loop
from chaoskube.sim import Process

__all__ = ["Action", "DEPLOYMENT_UID_ANNOTATION", "GUARD_FOR_LABEL", "GUARD_SUFFIX", "PdbGuard", "decide", "guard_for", "pdb_guard_main"]

GUARD_SUFFIX = "-guard"
GUARD_FOR_LABEL = "example.chaoskube.io/guard-for"
DEPLOYMENT_UID_ANNOTATION = "example.chaoskube.io/deployment-uid"


class Action(enum.Enum):
    NONE = "none"
    CREATE = "create"  # the Deployment has no guard
    DELETE = "delete"  # the guard's Deployment is gone (or was replaced by a namesake)


def decide(deployment: Any | None, guard: Any | None) -> Action:
    """What to do for one Deployment key, from what the caches hold (pure)."""
    if deployment is None or deployment.metadata.deletion_timestamp is not None:
        return Action.DELETE if guard is not None else Action.NONE
    if guard is None:
        return Action.CREATE
    if guard.metadata.annotations.get(DEPLOYMENT_UID_ANNOTATION) != deployment.metadata.uid:
        return Action.DELETE  # left by an earlier Deployment of this name; the next sync creates ours
    return Action.NONE


def guard_for(deployment: Any) -> Any:
    """The guard PodDisruptionBudget of ``deployment`` (pure)."""
    meta = deployment.metadata
    selector = deployment.spec.selector
    assert selector is not None, f"deployment {meta.namespace}/{meta.name} has no selector"
    return from_dict({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": meta.name + GUARD_SUFFIX,
            "namespace": meta.namespace,
            "labels": {GUARD_FOR_LABEL: meta.name},
            "annotations": {DEPLOYMENT_UID_ANNOTATION: meta.uid},
        },
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(selector.match_labels)}},
    })


class PdbGuard:
    """The controller (module docstring). ``fixed`` is the class default unless given."""

    fixed: bool = True

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, *, namespace: str = "default", fixed: bool | None = None) -> None:
        self.process = process
        self.client = client
        self.namespace = namespace
        if fixed is not None:
            self.fixed = fixed
        self.queue = RateLimitingQueue(process)
        self.deployments = informers.informer("deployments", namespace=namespace)
        self.pdbs = informers.informer("poddisruptionbudgets", namespace=namespace)
        self.deployments.add_event_handler(self._enqueue, lambda old, new: self._enqueue(new), self._enqueue)
        self.pdbs.add_event_handler(self._enqueue_guarded, lambda old, new: self._enqueue_guarded(new), self._enqueue_guarded)

    # -- handlers: only enqueue keys ----------------------------------------------------
    def _enqueue(self, deployment: Any) -> None:
        obj = deployment.obj if isinstance(deployment, DeletedFinalStateUnknown) else deployment
        self.queue.add(f"{obj.metadata.namespace}/{obj.metadata.name}")

    def _enqueue_guarded(self, pdb: Any) -> None:
        obj = pdb.obj if isinstance(pdb, DeletedFinalStateUnknown) else pdb
        guarded = obj.metadata.labels.get(GUARD_FOR_LABEL)
        if guarded is not None:
            self.queue.add(f"{obj.metadata.namespace}/{guarded}")

    # -- the worker -----------------------------------------------------------------------
    async def run(self) -> None:
        if self.fixed:
            await self.deployments.wait_for_sync()  # the fix: every cache the worker reads
        await self.pdbs.wait_for_sync()
        await work_loop(self.queue, self.sync)

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        deployment = self.deployments.indexer.get_by_key(key)
        guard = self.pdbs.indexer.get_by_key(f"{namespace}/{name}{GUARD_SUFFIX}")
        action = decide(deployment, guard)
        if action is Action.CREATE:
            await self._create(deployment)
        elif action is Action.DELETE:
            await self._delete(guard)

    async def _create(self, deployment: Any) -> None:
        pdb = guard_for(deployment)
        try:
            await self.client.create(pdb)
        except ApiError as error:
            if error.code != 409:  # already there: the PDB informer will show it
                raise
            return
        self._record("create", deployment.metadata.name, deployment.metadata.uid, pdb.metadata.name)

    async def _delete(self, guard: Any) -> None:
        meta = guard.metadata
        guarded, uid = meta.labels[GUARD_FOR_LABEL], meta.annotations.get(DEPLOYMENT_UID_ANNOTATION, "")
        if self.fixed and await self._still_there(guarded, uid):
            self._record("kept", guarded, uid, meta.name)
            raise ControllerError(f"the cache says deployment {meta.namespace}/{guarded} is gone, the API server does not")
        try:
            await self.client.delete("poddisruptionbudgets", meta.namespace, meta.name, options=DeleteOptions(preconditions_uid=meta.uid))
        except ApiError as error:
            if error.code != 404:  # 409: replaced meanwhile; requeued, the next sync decides again
                raise
            return
        self._record("delete", guarded, uid, meta.name)

    async def _still_there(self, name: str, uid: str) -> bool:
        """A live (quorum) read: does the Deployment with this uid still exist?"""
        try:
            live = await self.client.get("deployments", self.namespace, name)
        except ApiError as error:
            if error.code == 404:
                return False
            raise
        return live.metadata.uid == uid and live.metadata.deletion_timestamp is None

    def _record(self, event: str, deployment: str, uid: str, pdb: str) -> None:
        self.process.world.record("pdb-guard", event=event, deployment=deployment, deployment_uid=uid, pdb=pdb)


def pdb_guard_main(servers: Sequence[str], *, namespace: str = "default", fixed: bool | None = None) -> Callable[[Process], Awaitable[None]]:
    """The main of a pdb-guard process: a client of ``servers``, the two informers, the
    controller. Spawn it in a World next to a cluster::

        world.spawn("pdb-guard", pdb_guard_main(cluster.api_server_names), role="pdb-guard")

    A restarted process starts from nothing (informers list again), like a restarted pod."""

    async def main(process: Process) -> None:
        client = ApiClient(process, list(servers), admin_credentials(), name=f"{process.name}/pdb-guard")
        informers = SharedInformerFactory(client)
        guard = PdbGuard(process, client, informers, namespace=namespace, fixed=fixed)
        async with trio.open_nursery() as nursery:
            informers.start(nursery)
            nursery.start_soon(guard.run)

    return main

"""kube-controller-manager: leader-elected, several replicas, one acting.

``controller_manager_main(servers, config)`` is a process main. Each replica campaigns for
the Lease ``kube-system/kube-controller-manager`` (client-go leader election: 15 s lease,
10 s renew deadline, 2 s retry; :mod:`chaoskube.client.leaderelection`); the leader starts
its shared informers and every controller. When it loses the lease it stops acting, as
kube-controller-manager does — upstream it then exits (``klog.Fatalf("leaderelection
lost")``) and its static pod is restarted; here the replica drops all in-memory state (a
fresh informer factory and fresh controllers) and campaigns again, which is what the
restart amounts to.

The controllers (``cmd/kube-controller-manager/app/controllermanager.go``
``NewControllerDescriptors``), each in its own module: serviceaccount (here), replicaset,
replicationcontroller, deployment, statefulset, daemonset, job (with ttl-after-finished),
cronjob, garbagecollector, namespace, persistentvolume-binder (with a dynamic
provisioner), resourcequota, nodelifecycle (with taint-based eviction), disruption,
endpointslice, pvc-protection and pv-protection (:mod:`chaoskube.controllers.volumeprotection`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from chaoskube.api.identity import KUBE_CONTROLLER_MANAGER_USER, user_credentials
from chaoskube.api.objects import Namespace, ObjectMeta, ServiceAccount
from chaoskube.api.protocol import Credentials
from chaoskube.client.client import KUBE_CONTROLLER_MANAGER_RATE, ApiClient, ApiError, ApiLeaseLock, leader_election_client, own_rate_limit
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.client.leaderelection import LeaderElectionConfig, LeaderElector
from chaoskube.client.workqueue import RateLimitingQueue, default_controller_rate_limiter
from chaoskube.config import ControllerManagerConfig
from chaoskube.sim import Process

__all__ = ["CONTROLLERS", "ServiceAccountsController", "controller_manager_main", "run_leader_elected"]

#: Pause before campaigning again after leadership was lost (the restart of the process).
RESTART_DELAY_S = 1.0


def _identity(process: Process) -> str:
    """``hostname_<uuid>``, as kube-controller-manager and kube-scheduler name themselves."""
    return f"{process.name}_{uuid.UUID(int=process.random('identity').getrandbits(128), version=4)}"


async def run_leader_elected(
    process: Process,
    servers: Sequence[str],
    credentials: Credentials,
    lease: str,
    lead: Callable[[], Awaitable[Any]],
    *,
    config: LeaderElectionConfig | None = None,
    namespace: str = "kube-system",
) -> None:
    """Campaign for ``namespace/lease`` forever; while leading, run ``lead()``. Leadership
    lost ends ``lead`` (cancelled) and, after :data:`RESTART_DELAY_S`, campaigns again."""
    config = config or LeaderElectionConfig()
    identity = _identity(process)
    while True:
        client = leader_election_client(process, list(servers), credentials, renew_deadline_s=config.renew_deadline_s)
        elector = LeaderElector(process, ApiLeaseLock(client, namespace, lease), config, on_started_leading=lead, identity=identity)
        await elector.run()
        await process.sleep(RESTART_DELAY_S)


class ServiceAccountsController:
    """``pkg/controller/serviceaccount/serviceaccounts_controller.go``: every active
    namespace has a ServiceAccount named "default" (pods need it: the ServiceAccount
    admission plugin refuses them otherwise)."""

    name = "serviceaccount"
    ACCOUNT = "default"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig) -> None:
        self.process = process
        self.client = client
        self.namespaces = informers.informer("namespaces")
        self.accounts = informers.informer("serviceaccounts")
        self.queue = RateLimitingQueue(process, default_controller_rate_limiter())
        self.namespaces.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new))
        self.accounts.add_event_handler(on_delete=self._account_deleted)

    def _enqueue(self, namespace: Namespace) -> None:
        self.queue.add(namespace.metadata.name)

    def _account_deleted(self, account: Any) -> None:
        obj = getattr(account, "obj", account)  # a tombstone carries the last state
        if obj.metadata.name == self.ACCOUNT:
            self.queue.add(obj.metadata.namespace)

    async def run(self) -> None:
        await self.namespaces.wait_for_sync()
        await self.accounts.wait_for_sync()
        while True:
            key = await self.queue.get()
            try:
                await self._sync(key)
                self.queue.forget(key)
            except ApiError:
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    async def _sync(self, namespace: str) -> None:
        current = self.namespaces.indexer.get_by_key(namespace)
        if current is None or current.status.phase == "Terminating" or current.metadata.deletion_timestamp:
            return
        if self.accounts.indexer.get_by_key(f"{namespace}/{self.ACCOUNT}") is not None:
            return
        try:
            await self.client.create(ServiceAccount(metadata=ObjectMeta(name=self.ACCOUNT, namespace=namespace)))
        except ApiError as error:
            if error.code != 409:
                raise


def _controllers() -> dict[str, Callable[..., Any]]:
    """Name -> controller class, in kube-controller-manager's start order."""
    from chaoskube.controllers.cronjob import CronJobController
    from chaoskube.controllers.daemonset import DaemonSetController
    from chaoskube.controllers.deployment import DeploymentController
    from chaoskube.controllers.disruption import DisruptionController
    from chaoskube.controllers.endpointslice import EndpointSliceController
    from chaoskube.controllers.garbagecollector import GarbageCollector
    from chaoskube.controllers.job import JobController
    from chaoskube.controllers.namespace import NamespaceController
    from chaoskube.controllers.nodelifecycle import NodeLifecycleController
    from chaoskube.controllers.persistentvolume import PersistentVolumeController
    from chaoskube.controllers.replicaset import ReplicaSetController, ReplicationControllerManager
    from chaoskube.controllers.resourcequota import ResourceQuotaController
    from chaoskube.controllers.statefulset import StatefulSetController
    from chaoskube.controllers.volumeprotection import PVCProtectionController, PVProtectionController

    return {
        "serviceaccount": ServiceAccountsController,
        "replicaset": ReplicaSetController,
        "replicationcontroller": ReplicationControllerManager,
        "deployment": DeploymentController,
        "statefulset": StatefulSetController,
        "daemonset": DaemonSetController,
        "job": JobController,
        "cronjob": CronJobController,
        "garbagecollector": GarbageCollector,
        "namespace": NamespaceController,
        "persistentvolume-binder": PersistentVolumeController,
        "resourcequota": ResourceQuotaController,
        "nodelifecycle": NodeLifecycleController,
        "disruption": DisruptionController,
        "endpointslice": EndpointSliceController,
        "pvc-protection": PVCProtectionController,
        "pv-protection": PVProtectionController,
    }


CONTROLLERS = (
    "serviceaccount", "replicaset", "replicationcontroller", "deployment", "statefulset", "daemonset", "job", "cronjob",
    "garbagecollector", "namespace", "persistentvolume-binder", "resourcequota", "nodelifecycle", "disruption", "endpointslice",
    "pvc-protection", "pv-protection",
)


def controller_manager_main(
    servers: Sequence[str],
    config: ControllerManagerConfig | None = None,
    *,
    controllers: Sequence[str] = CONTROLLERS,
    election: LeaderElectionConfig | None = None,
) -> Callable[[Process], Awaitable[None]]:
    """The main of one kube-controller-manager replica (see the module docstring)."""
    config = config or ControllerManagerConfig()
    unknown = sorted(set(controllers) - set(CONTROLLERS))
    assert not unknown, f"unknown controllers {unknown}; known: {CONTROLLERS}"

    async def main(process: Process) -> None:
        credentials = user_credentials(KUBE_CONTROLLER_MANAGER_USER)

        async def lead() -> None:
            # The shared informers' clientset and each controller's own: one client (its
            # server and ids), a token bucket per clientset (``own_rate_limit``).
            client = ApiClient(process, list(servers), credentials, name=f"{process.name}/controllers", rate=KUBE_CONTROLLER_MANAGER_RATE)
            factory = SharedInformerFactory(client, resync_s=config.resync_s)
            available = _controllers()
            running = [available[name](process, client, factory, config) for name in controllers]
            process.world.record("controller-manager", process=process.name, event="started", controllers=list(controllers))

            async def run_controller(controller: Any) -> None:
                own_rate_limit(*KUBE_CONTROLLER_MANAGER_RATE)
                await controller.run()

            async with trio.open_nursery() as nursery:
                factory.start(nursery)
                for controller in running:
                    nursery.start_soon(run_controller, controller)

        await run_leader_elected(process, servers, credentials, "kube-controller-manager", lead, config=election)

    return main

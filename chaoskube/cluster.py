"""A whole simulated cluster from one spec.

``ClusterSpec`` (from Python, or a YAML/JSON mapping through :func:`load_cluster_spec`) says
how many etcd members, API server, controller-manager and scheduler replicas, which nodes
(zones, capacity, labels, taints) and which timings; :func:`open_cluster` starts every
process in the world and returns a :class:`Cluster` handle: process names by role, clients,
the current leaders, and helpers to apply manifests and wait for conditions.

Process names: ``etcd-1..``, ``kube-apiserver-1..``, ``kube-controller-manager-1..``,
``kube-scheduler-1..``, one ``<node>`` process per node running its kubelet and
kube-proxy. Roles: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio
import yaml

from chaoskube.api.identity import admin_credentials
from chaoskube.api.manifests import load_manifests
from chaoskube.api.objects import Object
from chaoskube.apiserver.server import ApiServerConfig, pod_cap, spawn_api_servers
from chaoskube.client.client import KUBE_PROXY_RATE, KUBE_SCHEDULER_RATE, KUBELET_RATE, ApiClient, ApiError
from chaoskube.config import ControllerManagerConfig, KubeletConfig, SchedulerConfig
from chaoskube.controllers.manager import controller_manager_main, run_leader_elected
from chaoskube.etcd.server import EtcdConfig, current_leader, spawn_cluster
from chaoskube.sim import Process, World

__all__ = ["Cluster", "ClusterSpec", "ClusterSpecError", "NodeGroup", "Timings", "WebhookSpec", "load_cluster_spec", "open_cluster", "planned_processes"]

ZONE_LABEL = "topology.kubernetes.io/zone"
MAX_NODES = 1024


class _Spec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, rename="camel"):
    pass


class Taint(_Spec):
    key: str
    effect: str
    value: str = ""


class NodeGroup(_Spec):
    """``count`` nodes named ``<prefix>-<n>``, spread round-robin over ``zones``; each with
    ``cpu``, ``memory``, ``pods`` (the kubelet's ``maxPods``, 110 by default),
    ``ephemeralStorage`` and ``extendedResources`` (device plugins' resources such as
    ``nvidia.com/gpu: 1``) in its capacity; the scheduler and the ``scheduling`` checker
    judge pods against the allocatable the kubelet derives from them."""

    prefix: str = "node"
    count: int = 3
    zones: list[str] = msgspec.field(default_factory=lambda: ["zone-a", "zone-b", "zone-c"])
    cpu: str = "4"
    memory: str = "16Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    extended_resources: dict[str, str] = {}
    labels: dict[str, str] = {}
    taints: list[Taint] = []

    def __post_init__(self) -> None:
        from chaoskube.api.objects import parse_quantity

        if self.count < 0:
            raise ValueError(f"`count` must not be negative, got {self.count}")
        if not self.zones:
            raise ValueError("`zones` must name at least one zone")
        if self.pods < 1:
            raise ValueError(f"`pods` must be at least 1, got {self.pods}")
        for field, value in (("cpu", self.cpu), ("memory", self.memory), ("ephemeralStorage", self.ephemeral_storage), *((f"extendedResources.{k}", v) for k, v in self.extended_resources.items())):
            try:
                if parse_quantity(value) < 0:
                    raise ValueError("must not be negative")
            except ValueError as error:
                raise ValueError(f"`{field}`: {error}") from None
        for name in self.extended_resources:
            if "/" not in name or name.startswith("kubernetes.io/") or name.startswith("requests."):
                raise ValueError(f"`extendedResources.{name}`: an extended resource is a domain-prefixed name outside kubernetes.io/ (such as nvidia.com/gpu)")

    def capacity(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "pods": str(self.pods), "ephemeral-storage": self.ephemeral_storage, **self.extended_resources}


class WebhookSpec(_Spec):
    """An admission webhook the cluster starts with: a process serving
    ``<name>.<namespace>.svc`` and its Mutating/ValidatingWebhookConfiguration."""

    name: str
    type: Literal["mutating", "validating"] = "validating"
    behaviour: Literal["allow", "deny", "label-injector"] = "allow"
    delay_s: float = 0.0
    failure_policy: Literal["Fail", "Ignore"] = "Fail"
    timeout_seconds: int = 10
    operations: list[str] = msgspec.field(default_factory=lambda: ["CREATE"])
    resources: list[str] = msgspec.field(default_factory=lambda: ["pods"])
    api_groups: list[str] = msgspec.field(default_factory=lambda: [""])
    namespace: str = "webhooks"
    label: str = "chaoskube.io/mutated=true"  # what label-injector sets
    message: str = "denied by policy"  # what deny answers

    def __post_init__(self) -> None:
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"`timeoutSeconds` must be between 1 and 30 seconds, got {self.timeout_seconds}")
        if self.delay_s < 0:
            raise ValueError(f"`delayS` must not be negative, got {self.delay_s}")
        if "=" not in self.label:
            raise ValueError(f"`label` must be key=value, got {self.label!r}")

    @property
    def service(self) -> str:
        return f"{self.name}.{self.namespace}.svc"

    def configuration(self) -> Object:
        from chaoskube.api.manifests import from_dict

        kind = "MutatingWebhookConfiguration" if self.type == "mutating" else "ValidatingWebhookConfiguration"
        hook = {
            "name": f"{self.name}.chaoskube.io",
            "clientConfig": {"service": {"namespace": self.namespace, "name": self.name, "path": "/"}},
            "rules": [{"operations": list(self.operations), "apiGroups": list(self.api_groups), "apiVersions": ["*"], "resources": list(self.resources)}],
            "failurePolicy": self.failure_policy,
            "timeoutSeconds": self.timeout_seconds,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }
        return from_dict({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": self.name}, "webhooks": [hook]})

    def handler(self) -> Any:
        from chaoskube.apiserver.webhooks import allow, deny, label_injector, slow

        if self.behaviour == "allow":
            handler = allow()
        elif self.behaviour == "deny":
            handler = deny(self.message)
        else:
            key, _, value = self.label.partition("=")
            handler = label_injector(key, value)
        return slow(handler, self.delay_s) if self.delay_s else handler


class Timings(_Spec):
    """The defaults are Kubernetes' and etcd's; see chaoskube/config.py."""

    etcd_heartbeat_ms: int = 100
    etcd_election_ms: int = 1000
    node_monitor_grace_period_s: float = 40.0
    node_monitor_period_s: float = 5.0
    node_lease_duration_s: float = 40.0
    node_status_update_frequency_s: float = 10.0
    pod_initial_backoff_s: float = 1.0
    pod_max_backoff_s: float = 10.0


#: The default StorageClass a cluster starts with (as kind, GKE or EKS clusters come with one):
#: zonal disks, provisioned where the first pod that mounts the claim is scheduled.
DEFAULT_STORAGE_CLASS = "standard"
DEFAULT_PROVISIONER = "chaoskube.io/zonal-disk"


class ClusterSpec(_Spec):
    etcd_members: int = 3
    api_servers: int = 2
    controller_managers: int = 2
    schedulers: int = 2
    node_groups: list[NodeGroup] = msgspec.field(default_factory=lambda: [NodeGroup()])
    webhooks: list[WebhookSpec] = []
    timings: Timings = msgspec.field(default_factory=Timings)
    #: Create the default StorageClass ``standard`` (provisioner ``chaoskube.io/zonal-disk``,
    #: WaitForFirstConsumer, reclaim Delete), so claims without a class are provisioned.
    default_storage_class: bool = True
    #: How each node's kubelet and kube-proxy reach the API servers (issue 16): ``rotate``
    #: (the default so far: a seeded random server, the next one after any network
    #: failure) or ``pinned``: node i's clients stay on ``kube-apiserver-(i mod n + 1)``
    #: and move only when that server refuses the connection (``ApiClient.rotate``), as a
    #: kubelet's connection stays on the API server it reached.
    api_client_topology: str = "rotate"

    def bootstrap_objects(self) -> list[Object]:
        """What the cluster's bootstrap applies once the API answers: the webhooks'
        configurations and the default StorageClass."""
        from chaoskube.api.manifests import from_dict

        objects = [hook.configuration() for hook in self.webhooks]
        if self.default_storage_class:
            objects.append(from_dict({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": DEFAULT_STORAGE_CLASS, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": DEFAULT_PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
            }))
        return objects

    def __post_init__(self) -> None:
        self.nodes()  # names and count checked now, with the spec's errors
        for name, field in (("etcd_members", "etcdMembers"), ("api_servers", "apiServers")):
            if getattr(self, name) < 1:
                raise ValueError(f"`{field}` must be at least 1, got {getattr(self, name)}")
        if self.api_client_topology not in ("rotate", "pinned"):
            raise ValueError(f"`apiClientTopology` must be rotate or pinned, got {self.api_client_topology!r}")
        for name, field in (("controller_managers", "controllerManagers"), ("schedulers", "schedulers")):
            if getattr(self, name) < 0:
                raise ValueError(f"`{field}` must not be negative, got {getattr(self, name)}")

    def nodes(self) -> list[tuple[str, str, NodeGroup]]:
        """(node name, zone, group) for every node, in a stable order."""
        out = []
        for group in self.node_groups:
            for index in range(1, group.count + 1):
                out.append((f"{group.prefix}-{index}", group.zones[(index - 1) % len(group.zones)], group))
        if len(out) > MAX_NODES:
            raise ValueError(f"at most {MAX_NODES} nodes (one /24 pod CIDR each in 10.244.0.0/14), got {len(out)}")
        names = [name for name, _, _ in out]
        if len(set(names)) != len(names):
            raise ValueError("node names collide: give the node groups different prefixes")
        return out


class ClusterSpecError(ValueError):
    """A cluster spec file that cannot be used; the message names the file and field."""


def load_cluster_spec(data: Any, source: str = "<spec>") -> ClusterSpec:
    """A ClusterSpec from a mapping (or YAML text), with one-line errors naming the field."""
    if isinstance(data, str):
        try:
            data = yaml.safe_load(data)
        except yaml.YAMLError as error:
            raise ClusterSpecError(f"{source}: not valid YAML: {str(error).splitlines()[0]}") from None
    try:
        return msgspec.convert(data or {}, type=ClusterSpec)
    except (msgspec.ValidationError, ValueError) as error:
        raise ClusterSpecError(f"{source}: {error}") from None


# ----------------------------------------------------------------------------- the handle
class Cluster:
    """What :func:`open_cluster` started (see the module docstring)."""

    def __init__(self, world: World, spec: ClusterSpec, etcd: dict[str, Any], api_servers: dict[str, Any], api_server_names: list[str]) -> None:
        self.world = world
        self.spec = spec
        self.etcd = etcd  # name -> live member, filled as members start
        self.api_servers = api_servers  # name -> live server, filled as servers start
        self.api_server_names = list(api_server_names)
        self.kubelets: dict[str, Any] = {}
        self.proxies: dict[str, Any] = {}

    def processes(self, role: str | None = None) -> list[str]:
        return sorted(name for name, process in self.world.processes.items() if role is None or process.role == role)

    def etcd_leader(self) -> str | None:
        return current_leader(self.world, self.etcd)

    def leader(self, lease: str) -> str | None:
        """The process acting as leader for ``lease`` ("kube-controller-manager",
        "kube-scheduler") by the journal's last start/stop events, or None. During an
        overlap (client-go does not fence) the one that started last."""
        acting: dict[str, float | None] = {}
        for event in self.world.journal.events:
            if event.get("type") == "leader" and event.get("lease") in (lease, f"kube-system/{lease}"):
                if event["event"] == "start":
                    acting[event["process"]] = event["t"]
                elif event["event"] == "stop":
                    acting[event["process"]] = None
        alive = [(started, name) for name, started in sorted(acting.items()) if started is not None and self.world.processes[name].alive]
        return max(alive)[1] if alive else None

    def client(self, process: Process, credentials: Any = None, **options: Any) -> ApiClient:
        return ApiClient(process, self.api_server_names, credentials or admin_credentials(), **options)

    async def apply(self, client: ApiClient, objects: Iterable[Object]) -> list[Object]:
        """Create each object (``kubectl create``); an existing one is left as it is."""
        created = []
        for obj in objects:
            try:
                created.append(await client.create(obj))
            except ApiError as error:
                if error.code != 409:
                    raise
        return created

    async def apply_manifests(self, client: ApiClient, path: str | Path) -> list[Object]:
        return await self.apply(client, load_manifests(path))

    async def wait_for(self, predicate: Callable[[], Awaitable[bool]], *, within_s: float, every_s: float = 1.0) -> bool:
        """Poll ``predicate`` every ``every_s`` of world time until it holds (True) or
        ``within_s`` passes (False)."""
        deadline = self.world.now + within_s
        while True:
            if await predicate():
                return True
            if self.world.now >= deadline:
                return False
            await self.world.sleep(every_s)


def _scheduler_main(servers: list[str], config: SchedulerConfig) -> Callable[[Process], Awaitable[None]]:
    async def main(process: Process) -> None:
        from chaoskube.api.identity import KUBE_SCHEDULER_USER, user_credentials
        from chaoskube.client.informer import SharedInformerFactory
        from chaoskube.scheduler.scheduler import Scheduler

        credentials = user_credentials(KUBE_SCHEDULER_USER)

        async def lead() -> None:
            client = ApiClient(process, servers, credentials, name=f"{process.name}/scheduler", rate=KUBE_SCHEDULER_RATE)
            factory = SharedInformerFactory(client)
            scheduler = Scheduler(process, client, factory, config)
            async with trio.open_nursery() as nursery:
                factory.start(nursery)
                nursery.start_soon(scheduler.run)

        await run_leader_elected(process, servers, credentials, "kube-scheduler", lead)

    return main


def _node_main(cluster: Cluster, index: int, name: str, zone: str, group: NodeGroup, servers: list[str], config: KubeletConfig) -> Callable[[Process], Awaitable[None]]:
    """One node: its kubelet (authenticated as ``system:node:<name>``) and its kube-proxy.
    Node ``index`` gets InternalIP 10.0.<i / 250>.<i % 250 + 1> and pod CIDR
    10.<244 + i / 256>.<i % 256>.0/24, so no two nodes share an address."""
    from chaoskube.api.identity import node_credentials
    from chaoskube.api.objects import Taint as NodeTaint
    from chaoskube.node.kubelet import Kubelet, KubeletNode
    from chaoskube.node.proxy import KubeProxy

    node = KubeletNode(
        name=name,
        zone=zone,
        capacity=group.capacity(),
        labels=dict(group.labels),
        taints=tuple(NodeTaint(key=taint.key, value=taint.value, effect=taint.effect) for taint in group.taints),
        address=f"10.0.{index // 250}.{index % 250 + 1}",
        pod_cidr=f"10.{244 + index // 256}.{index % 256}.0/24",
    )

    pinned_to = index % len(servers) if cluster.spec.api_client_topology == "pinned" else None

    async def main(process: Process) -> None:
        kubelet = Kubelet(process, ApiClient(process, servers, node_credentials(name), name=f"{name}/kubelet", pinned_to=pinned_to, rate=KUBELET_RATE), node, config)
        proxy = KubeProxy(process, ApiClient(process, servers, node_credentials(name), name=f"{name}/kube-proxy", pinned_to=pinned_to, rate=KUBE_PROXY_RATE), name)
        cluster.kubelets[name] = kubelet
        cluster.proxies[name] = proxy
        async with trio.open_nursery() as nursery:
            nursery.start_soon(kubelet.run)
            nursery.start_soon(proxy.run)

    return main


def _bootstrap_main(cluster: Cluster, objects: list[Object]) -> Callable[[Process], Awaitable[None]]:
    """Create the spec's objects (webhook configurations, the default StorageClass) once
    the API answers, as an administrator applying manifests would; then exit."""

    async def main(process: Process) -> None:
        client = cluster.client(process)
        remaining = list(objects)
        while remaining:
            try:
                await cluster.apply(client, remaining[:1])
                remaining.pop(0)
            except ApiError:
                await process.sleep(1.0)
        process.world.record("cluster", event="bootstrapped", objects=[obj.metadata.name for obj in objects])

    return main


def planned_processes(spec: ClusterSpec) -> list[tuple[str, str, str | None]]:
    """(name, role, zone) of every process :func:`open_cluster` starts for ``spec``, in the
    order it starts them, without starting anything: what fault targets (``name:``,
    ``role:``, ``zone:``) can match, checked before a run (``chaoskube validate``,
    ``run --dry-run``). ``tests/cluster`` compares it with a started cluster."""
    zones = sorted({zone for _, zone, _ in spec.nodes()}) or None

    def zone_of(index: int) -> str | None:  # the 0-based index-th process of a role
        return zones[index % len(zones)] if zones else None

    planned: list[tuple[str, str, str | None]] = []
    planned += [(name, "etcd", zone_of(index)) for index, name in enumerate(EtcdConfig(members=spec.etcd_members).names)]
    planned += [(f"kube-apiserver-{index}", "kube-apiserver", zone_of(index - 1)) for index in range(1, spec.api_servers + 1)]
    planned += [(f"kube-controller-manager-{index}", "kube-controller-manager", zone_of(index - 1)) for index in range(1, spec.controller_managers + 1)]
    planned += [(f"kube-scheduler-{index}", "kube-scheduler", zone_of(index - 1)) for index in range(1, spec.schedulers + 1)]
    planned += [(hook.service, "webhook", None) for hook in spec.webhooks]
    if spec.bootstrap_objects():  # the webhook configurations, the default StorageClass
        planned.append(("cluster-bootstrap", "bootstrap", None))
    planned += [(name, "node", zone) for name, zone, _ in spec.nodes()]
    return planned


def open_cluster(world: World, spec: ClusterSpec | None = None) -> Cluster:
    """Start every component of ``spec`` in ``world`` (inside ``world.run``)."""
    spec = spec or ClusterSpec()
    timings = spec.timings
    etcd_config = EtcdConfig(members=spec.etcd_members, heartbeat_ms=timings.etcd_heartbeat_ms, election_ms=timings.etcd_election_ms)
    zones = sorted({zone for _, zone, _ in spec.nodes()}) or None
    etcd = spawn_cluster(world, etcd_config, zones=zones)
    api_names = [f"kube-apiserver-{index}" for index in range(1, spec.api_servers + 1)]
    node_capacity = sum(group.count * group.pods for group in spec.node_groups)
    api_config = ApiServerConfig(etcd_endpoints=tuple(etcd_config.names), max_pods=pod_cap(node_capacity))
    api_servers = spawn_api_servers(world, api_config, api_names, zones=zones)
    cluster = Cluster(world, spec, etcd, api_servers, api_names)
    manager_config = ControllerManagerConfig(node_monitor_grace_period_s=timings.node_monitor_grace_period_s, node_monitor_period_s=timings.node_monitor_period_s)
    for index in range(1, spec.controller_managers + 1):
        world.spawn(f"kube-controller-manager-{index}", controller_manager_main(api_names, manager_config), role="kube-controller-manager", zone=zones[(index - 1) % len(zones)] if zones else None)
    scheduler_config = SchedulerConfig(pod_initial_backoff_s=timings.pod_initial_backoff_s, pod_max_backoff_s=timings.pod_max_backoff_s)
    for index in range(1, spec.schedulers + 1):
        world.spawn(f"kube-scheduler-{index}", _scheduler_main(api_names, scheduler_config), role="kube-scheduler", zone=zones[(index - 1) % len(zones)] if zones else None)
    kubelet_config = KubeletConfig(node_lease_duration_s=timings.node_lease_duration_s, node_status_update_frequency_s=timings.node_status_update_frequency_s)
    if spec.webhooks:
        from chaoskube.apiserver.webhooks import webhook_server

        for hook in spec.webhooks:
            world.spawn(hook.service, webhook_server(hook.handler()), role="webhook")
    bootstrap = spec.bootstrap_objects()
    if bootstrap:
        world.spawn("cluster-bootstrap", _bootstrap_main(cluster, bootstrap), role="bootstrap")
    for index, (name, zone, group) in enumerate(spec.nodes()):
        world.spawn(name, _node_main(cluster, index, name, zone, group, api_names, kubelet_config), role="node", zone=zone, labels={ZONE_LABEL: zone})
    return cluster


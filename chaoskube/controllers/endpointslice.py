"""The EndpointSlice controller: a Service's selected pods as EndpointSlices, as
kube-controller-manager's.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/endpointslice/endpointslice_controller.go`` — ``syncService``, the event
  handlers (``onEndpointSliceAdd/Update/Delete`` queue the Service after
  ``endpointSliceChangeMinSyncDelay`` 1 s), the queue's rate limiter (1 s .. 1000 s per
  item, 10 qps / 100 overall) and ``maxRetries`` 15;
- ``staging/src/k8s.io/endpointslice/reconciler.go`` — ``reconcileByAddressType``
  (the placeholder slice of a Service without endpoints), ``reconcileByPortMapping``
  (keep endpoints in place, fill the slices already changed, then the closest unchanged
  one, then new slices) and ``finalize`` (a create and a delete become an update);
- ``staging/src/k8s.io/endpointslice/utils.go`` — ``podToEndpoint`` (``ready`` =
  serving and not terminating, unless ``publishNotReadyAddresses``), ``getEndpointPorts`` /
  ``FindPort``, ``newEndpointSlice`` (``generateName`` "<service>-", the Service as
  controller owner), ``setEndpointSliceLabels``, ``getSliceToFill``;
- ``staging/src/k8s.io/endpointslice/util/`` — ``ShouldPodBeInEndpoints``,
  ``podEndpointsChanged``, ``EndpointsEqualBeyondHash``, ``hashEndpoint`` (an endpoint
  is its addresses, hostname and pod), the ``EndpointSliceTracker`` (stale informer cache
  detection).

Contract (the controller shape of STYLE.md). :class:`EndpointSliceController` is built with
``(process, client, informers, config)``; its handlers only enqueue Service keys. ``await
run()`` waits for the pods, services, nodes and endpointslices informers to sync and runs
``config.concurrent_endpointslice_syncs`` workers. A worker reconciles one Service with the
pure :func:`reconcile` and writes only the slices that change.

Guarantees, as upstream's: each Service with a selector (and not of type ExternalName) has
EndpointSlices labelled ``kubernetes.io/service-name`` and
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`` (plus the
Service's own labels), owned by the Service, of at most ``max_endpoints_per_slice`` (100)
endpoints each, grouped by the pods' resolved ports; one endpoint per pod that has an IP and
is not terminal, with ``ready`` (Ready and not terminating), ``serving`` (Ready),
``terminating`` (being deleted), ``nodeName``, ``zone`` (its node's
``topology.kubernetes.io/zone``) and a ``targetRef`` to the pod; a pod whose node is not in
the cache is left out and the Service retried; a Service without endpoints keeps one empty
placeholder slice; the controller does not act on a cache older than its own writes.

Journal (sparse): ``endpointslice-sync`` {service, created, updated, deleted} for each sync
that wrote something.

Differences from upstream, on purpose: the slices of a Service that is gone are deleted
here (``delete_orphaned_slices``, default on) — upstream leaves that to the garbage
collector's owner references; a Service with an empty selector is treated as one without a
selector (Go tells ``{}`` from nil, the object model here does not); the address type is
IPv4 unless ``ipFamilies`` says IPv6, and a Service is headless only when its ``clusterIP``
is "None" (the simulated API server allocates no ClusterIPs and defaults no ipFamilies,
which kube-apiserver always does); a pod's addresses are its ``podIPs``, or its ``podIP``
when that list is empty; the stale-cache tracker compares resourceVersions where upstream
compares generations (this API server does not bump an EndpointSlice's generation);
``PopAny`` and the unsorted sets are replaced by key order, so runs are deterministic.

Non-guarantees: no topology hints or traffic distribution, no
``endpoints.kubernetes.io/last-change-trigger-time`` annotation, no events, no batching of
pod updates (``--endpoint-updates-batch-period`` 0, its default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from chaoskube.api.objects import (
    Endpoint,
    EndpointConditions,
    EndpointPort,
    EndpointSlice,
    Node,
    ObjectMeta,
    ObjectReference,
    OwnerReference,
    Pod,
    Service,
    ServicePort,
    deep_copy,
)
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import (
    LABEL_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    SharedInformerFactory,
    meta_namespace_key,
    namespace_label_index,
)
from chaoskube.client.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
)
from chaoskube.config import ControllerManagerConfig
from chaoskube.sim.process import Process

__all__ = [
    "CONTROLLER_NAME",
    "EndpointSliceController",
    "EndpointSliceSyncError",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "MAX_ENDPOINTS_PER_SLICE",
    "SlicePlan",
    "SliceTracker",
    "endpoint_ports",
    "find_port",
    "pod_to_endpoint",
    "reconcile",
    "services_for_pod_change",
    "should_pod_be_in_endpoints",
]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
LABEL_HEADLESS = "service.kubernetes.io/headless"
LABEL_ZONE = "topology.kubernetes.io/zone"
#: ``controllerQualifiedName``.
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
#: ``--max-endpoints-per-slice`` default.
MAX_ENDPOINTS_PER_SLICE = 100
#: ``maxRetries``, ``endpointSliceChangeMinSyncDelay``, ``defaultSyncBackOff``, ``maxSyncBackOff``.
MAX_RETRIES = 15
SLICE_CHANGE_MIN_SYNC_DELAY_S = 1.0
SYNC_BACKOFF_S = 1.0
MAX_SYNC_BACKOFF_S = 1000.0
_RESERVED_LABELS = (LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS)
_DELETION_EXPECTED = -1


class EndpointSliceSyncError(Exception):
    """A sync that must be retried: a stale informer cache, or pods left out because their
    node is not in the cache."""


# =========================================================================== pods to endpoints
def is_pod_ready(pod: Pod) -> bool:
    """``IsPodReady``."""
    return any(condition.type == "Ready" and condition.status == "True" for condition in pod.status.conditions)


def _pod_ips(pod: Pod) -> list[str]:
    ips = [entry.get("ip", "") for entry in pod.status.pod_ips if entry.get("ip")]
    return ips or ([pod.status.pod_ip] if pod.status.pod_ip else [])


def should_pod_be_in_endpoints(pod: Pod) -> bool:
    """``ShouldPodBeInEndpoints(pod, includeTerminating=true)``: not Succeeded or Failed,
    and it has an IP."""
    return pod.status.phase not in ("Succeeded", "Failed") and bool(_pod_ips(pod))


def find_port(pod: Pod, port: ServicePort) -> int | None:
    """``FindPort``: a numeric targetPort as is; a named one is looked up among the pod's
    container ports of the same protocol (and restartable init containers'); None if absent."""
    target = port.target_port if port.target_port not in (None, 0, "") else port.port
    if isinstance(target, int):
        return target
    protocol = port.protocol or "TCP"
    containers = [*pod.spec.containers, *(c for c in pod.spec.init_containers if c.restart_policy == "Always")]
    for container in containers:
        for container_port in container.ports:
            if container_port.name == target and (container_port.protocol or "TCP") == protocol:
                return container_port.container_port
    return None


def endpoint_ports(service: Service, pod: Pod) -> list[EndpointPort]:
    """``getEndpointPorts``: the Service's ports resolved against the pod (unresolvable
    ones left out; a headless Service may have none)."""
    ports = []
    for port in service.spec.ports:
        number = find_port(pod, port)
        if number is None:
            continue
        ports.append(EndpointPort(name=port.name, port=number, protocol=port.protocol or "TCP", app_protocol=port.app_protocol))
    return ports


def _address_family(address: str) -> str:
    return "IPv6" if ":" in address else "IPv4"


def pod_to_endpoint(pod: Pod, node: Node | None, service: Service, address_type: str = "IPv4") -> Endpoint:
    """``podToEndpoint``."""
    serving = is_pod_ready(pod)
    terminating = pod.metadata.deletion_timestamp is not None
    ready = service.spec.publish_not_ready_addresses or (serving and not terminating)
    endpoint = Endpoint(
        addresses=[address for address in _pod_ips(pod) if _address_family(address) == address_type],
        conditions=EndpointConditions(ready=ready, serving=serving, terminating=terminating),
        target_ref=ObjectReference(kind="Pod", namespace=pod.metadata.namespace, name=pod.metadata.name, uid=pod.metadata.uid),
    )
    if pod.spec.node_name:
        endpoint.node_name = pod.spec.node_name
    if node is not None and node.metadata.labels.get(LABEL_ZONE):
        endpoint.zone = node.metadata.labels[LABEL_ZONE]
    if pod.spec.hostname and pod.spec.subdomain == service.metadata.name and pod.metadata.namespace == service.metadata.namespace:
        endpoint.hostname = pod.spec.hostname  # ShouldSetHostname
    return endpoint


def endpoint_key(endpoint: Endpoint) -> tuple[Any, ...]:
    """``hashEndpoint``: addresses (sorted), hostname and the pod."""
    ref = endpoint.target_ref
    return (tuple(sorted(endpoint.addresses)), endpoint.hostname or "", ref.namespace if ref else "", ref.name if ref else "")


def _equal_beyond_key(first: Endpoint, second: Endpoint) -> bool:
    """``EndpointsEqualBeyondHash``: node, zone, conditions and the pod reference (its
    resourceVersion aside)."""
    def ref(endpoint: Endpoint) -> Any:
        return None if endpoint.target_ref is None else (endpoint.target_ref.kind, endpoint.target_ref.namespace, endpoint.target_ref.name, endpoint.target_ref.uid)

    return (first.node_name, first.zone, first.conditions, ref(first)) == (second.node_name, second.zone, second.conditions, ref(second))


def ports_key(ports: Sequence[EndpointPort]) -> tuple[Any, ...]:
    """``NewPortMapKey``: the ports, in a canonical order."""
    return tuple(sorted((p.name or "", p.port or 0, p.protocol or "", p.app_protocol or "") for p in ports))


# =========================================================================== slices
def address_types(service: Service) -> list[str]:
    """``getAddressTypesForService`` (see the module docstring for the simplification)."""
    families = [family for family in ("IPv4", "IPv6") if family in service.spec.ip_families]
    if families:
        return families
    if service.spec.cluster_ip and service.spec.cluster_ip != "None":
        return [_address_family(service.spec.cluster_ip)]
    return ["IPv4"]


def owned_by(slice_: EndpointSlice, service: Service) -> bool:
    """``ownedBy``: an owner reference to this Service (by uid)."""
    return any(ref.uid == service.metadata.uid and ref.kind == "Service" and ref.api_version == "v1" for ref in slice_.metadata.owner_references)


def slice_labels(current: Mapping[str, str], service: Service) -> tuple[dict[str, str], bool]:
    """``setEndpointSliceLabels``: the Service's labels plus the reserved ones, and whether
    the non-reserved labels differ from the slice's."""
    mine = {key: value for key, value in current.items() if key not in _RESERVED_LABELS}
    theirs = {key: value for key, value in service.metadata.labels.items() if key not in _RESERVED_LABELS}
    changed = mine != theirs
    labels = dict(theirs)
    if service.spec.cluster_ip == "None":
        labels[LABEL_HEADLESS] = ""
    labels[LABEL_SERVICE_NAME] = service.metadata.name
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    return labels, changed


def new_endpoint_slice(service: Service, ports: Sequence[EndpointPort], address_type: str) -> EndpointSlice:
    """``newEndpointSlice``: ``generateName`` "<service>-", the Service as controller."""
    owner = OwnerReference(api_version="v1", kind="Service", name=service.metadata.name, uid=service.metadata.uid, controller=True, block_owner_deletion=True)
    meta = ObjectMeta(generate_name=f"{service.metadata.name}-", namespace=service.metadata.namespace, owner_references=[owner])
    meta.labels = slice_labels({}, service)[0]
    return EndpointSlice(metadata=meta, address_type=address_type, endpoints=[], ports=[deep_copy(port) for port in ports])


def _is_placeholder(slice_: EndpointSlice, placeholder: EndpointSlice) -> bool:
    """``placeholderSliceCompare``: namespace, labels, owners and an empty body."""
    return (
        slice_.metadata.namespace == placeholder.metadata.namespace
        and slice_.metadata.labels == placeholder.metadata.labels
        and slice_.metadata.owner_references == placeholder.metadata.owner_references
        and slice_.address_type == placeholder.address_type
        and not slice_.endpoints
        and not slice_.ports
    )


def _slice_to_fill(slices: Sequence[EndpointSlice], count: int, maximum: int) -> EndpointSlice | None:
    """``getSliceToFill``: the slice closest to full once ``count`` endpoints are added."""
    closest, best = None, maximum
    for candidate in slices:
        room = maximum - (count + len(candidate.endpoints))
        if 0 <= room < best:
            closest, best = candidate, room
            if room == 0:
                break
    return closest


@dataclass(slots=True)
class SlicePlan:
    """What one reconcile writes: slices to create, to update (by name) and to delete, and
    the pods left out because their node is not known."""

    create: list[EndpointSlice] = field(default_factory=list)
    update: list[EndpointSlice] = field(default_factory=list)
    delete: list[EndpointSlice] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)


def _by_port_mapping(
    service: Service, existing: Sequence[EndpointSlice], desired: dict[tuple[Any, ...], Endpoint], ports: Sequence[EndpointPort],
    address_type: str, maximum: int,
) -> tuple[list[EndpointSlice], list[EndpointSlice], list[EndpointSlice]]:
    """``reconcileByPortMapping``: (create, update, delete) for one set of ports."""
    slices: dict[str, EndpointSlice] = {}
    unchanged: dict[str, None] = {}
    to_update: dict[str, None] = {}
    to_delete: dict[str, None] = {}
    for current in sorted(existing, key=lambda s: s.metadata.name):
        name = current.metadata.name
        slices[name] = current
        kept, changed = [], False
        for endpoint in current.endpoints:
            wanted = desired.pop(endpoint_key(endpoint), None)
            if wanted is not None:
                kept.append(wanted)
                changed = changed or not _equal_beyond_key(wanted, endpoint)
        labels, labels_changed = slice_labels(current.metadata.labels, service)
        if changed or len(kept) != len(current.endpoints):
            if not kept:
                to_delete[name] = None
                continue
            copy = deep_copy(current)
            copy.endpoints, copy.metadata.labels = kept, labels
            slices[name] = copy
            to_update[name] = None
        elif labels_changed:
            copy = deep_copy(current)
            copy.metadata.labels = labels
            slices[name] = copy
            to_update[name] = None
        else:
            unchanged[name] = None
    remaining = [desired[key] for key in sorted(desired)]
    if remaining and to_update:  # 2. fill the slices already changing, fullest first
        for slice_ in sorted((slices[name] for name in to_update), key=lambda s: (-len(s.endpoints), s.metadata.name)):
            while remaining and len(slice_.endpoints) < maximum:
                slice_.endpoints.append(remaining.pop(0))
    to_create = []
    while remaining:  # 3. the closest unchanged slice, or new ones
        fill = None
        if len(remaining) < maximum and unchanged:
            fill = _slice_to_fill([slices[name] for name in unchanged], len(remaining), maximum)
        if fill is None:
            fill = new_endpoint_slice(service, ports, address_type)
        else:
            fill = deep_copy(fill)
            slices[fill.metadata.name] = fill
        while remaining and len(fill.endpoints) < maximum:
            fill.endpoints.append(remaining.pop(0))
        if fill.metadata.name:
            to_update[fill.metadata.name] = None
            unchanged.pop(fill.metadata.name, None)
        else:
            to_create.append(fill)
    return to_create, [slices[name] for name in to_update], [slices[name] for name in to_delete]


def _by_address_type(
    service: Service, pods: Sequence[Pod], nodes: Mapping[str, Node], existing: Sequence[EndpointSlice], address_type: str, maximum: int, plan: SlicePlan
) -> None:
    """``reconcileByAddressType`` then ``finalize``'s pairing, into ``plan``."""
    create: list[EndpointSlice] = []
    update: list[EndpointSlice] = []
    delete: list[EndpointSlice] = []
    existing_by_ports: dict[tuple[Any, ...], list[EndpointSlice]] = {}
    for current in existing:
        if owned_by(current, service):
            existing_by_ports.setdefault(ports_key(current.ports), []).append(current)
        else:
            delete.append(current)
    desired: dict[tuple[Any, ...], dict[tuple[Any, ...], Endpoint]] = {}
    desired_ports: dict[tuple[Any, ...], list[EndpointPort]] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod):
            continue
        ports = endpoint_ports(service, pod)
        key = ports_key(ports)
        desired.setdefault(key, {})
        desired_ports.setdefault(key, ports)
        node = nodes.get(pod.spec.node_name)
        if node is None and not service.spec.publish_not_ready_addresses:
            plan.skipped.append(f"{pod.metadata.namespace}/{pod.metadata.name}")
            continue
        endpoint = pod_to_endpoint(pod, node, service, address_type)
        if endpoint.addresses:
            desired[key][endpoint_key(endpoint)] = endpoint
    for key in sorted(desired):
        created, updated, deleted = _by_port_mapping(service, existing_by_ports.get(key, []), desired[key], desired_ports[key], address_type, maximum)
        create += created
        update += updated
        delete += deleted
    for key in sorted(existing_by_ports):
        if key not in desired:
            delete += existing_by_ports[key]
    if len(existing) == len(delete) and not create:
        placeholder = new_endpoint_slice(service, [], address_type)
        if len(delete) == 1 and _is_placeholder(delete[0], placeholder):
            delete = []
        else:
            create.append(placeholder)
    index = 0  # finalize: a create and a delete of an owned slice become one update
    while index < len(delete) and create:
        gone = delete[index]
        if gone.address_type == create[-1].address_type and owned_by(gone, service):
            reused = create.pop()
            reused.metadata.name = gone.metadata.name
            update.append(reused)
            del delete[index]
        else:
            index += 1
    plan.create += create
    plan.update += update
    plan.delete += delete


def reconcile(
    service: Service, pods: Iterable[Pod], nodes: Mapping[str, Node], existing: Sequence[EndpointSlice], max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE
) -> SlicePlan:
    """``Reconciler.Reconcile``: pure. ``pods`` are those the Service selects, ``existing``
    the slices labelled for it and managed by this controller (not being deleted)."""
    assert max_endpoints_per_slice > 0
    pods = sorted(pods, key=lambda pod: (pod.metadata.namespace, pod.metadata.name))
    plan = SlicePlan()
    types = address_types(service)
    by_type: dict[str, list[EndpointSlice]] = {}
    for current in sorted(existing, key=lambda s: s.metadata.name):
        if current.address_type in types:
            by_type.setdefault(current.address_type, []).append(current)
        else:
            plan.delete.append(current)  # an address type the Service no longer has
    for address_type in types:
        _by_address_type(service, pods, nodes, by_type.get(address_type, []), address_type, max_endpoints_per_slice, plan)
    if service.metadata.deletion_timestamp is not None:
        plan.create = []  # "Don't create new EndpointSlices if the Service is pending deletion."
    return plan


# =========================================================================== pod changes
def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A Service selector (non-empty) selects ``labels``."""
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def _pod_endpoints_changed(old: Pod, new: Pod) -> tuple[bool, bool]:
    """``podEndpointsChanged``: (the endpoint may differ, the memberships may differ)."""
    labels_changed = old.metadata.labels != new.metadata.labels or (old.spec.hostname, old.spec.subdomain) != (new.spec.hostname, new.spec.subdomain)
    if old.metadata.deletion_timestamp != new.metadata.deletion_timestamp or is_pod_ready(old) != is_pod_ready(new):
        return True, labels_changed
    return _pod_ips(old) != _pod_ips(new), labels_changed


def services_for_pod_change(services_of: Callable[[str, Mapping[str, str]], set[str]], old: Pod | None, new: Pod | None) -> set[str]:
    """``GetPodUpdateProjectionKey`` + ``GetServicesToUpdate``: the Service keys to sync.
    ``services_of(namespace, labels)`` answers the keys of the Services selecting labels."""
    if old is None or new is None:
        pod = new if new is not None else old
        assert pod is not None
        return services_of(pod.metadata.namespace, pod.metadata.labels)
    if old.metadata.resource_version == new.metadata.resource_version:
        return set()  # a resync: the services informer resyncs too
    pod_changed, labels_changed = _pod_endpoints_changed(old, new)
    if not pod_changed and not labels_changed:
        return set()
    current = services_of(new.metadata.namespace, new.metadata.labels)
    if not labels_changed:
        return current
    before = services_of(old.metadata.namespace, old.metadata.labels)
    return current | before if pod_changed else current ^ before


# =========================================================================== the tracker
def _version(slice_: EndpointSlice) -> int:
    return int(slice_.metadata.resource_version or 0)


def _service_key_of(slice_: EndpointSlice) -> str:
    return f"{slice_.metadata.namespace}/{slice_.metadata.labels.get(LABEL_SERVICE_NAME, '')}"


class SliceTracker:
    """``EndpointSliceTracker``: the version of each slice this controller last wrote, per
    Service (``-1``: a deletion it expects). Bounded by the slices of live Services: a
    Service's entries go with it (``DeleteService``)."""

    def __init__(self) -> None:
        self._versions: dict[str, dict[str, int]] = {}
        self._service_uids: dict[str, str] = {}

    def has(self, slice_: EndpointSlice) -> bool:
        return slice_.metadata.uid in self._versions.get(_service_key_of(slice_), {})

    def should_sync(self, slice_: EndpointSlice) -> bool:
        """Not written by us, or changed since we wrote it."""
        versions = self._versions.get(_service_key_of(slice_))
        if versions is None or slice_.metadata.uid not in versions:
            return True
        return _version(slice_) > versions[slice_.metadata.uid]

    def stale(self, service: Service, slices: Sequence[EndpointSlice]) -> bool:
        """``StaleSlices``: the cache lags behind our writes (a slice older than written,
        one we deleted still there, or one we wrote missing)."""
        key = meta_namespace_key(service)
        known = self._service_uids.get(key)
        if known and service.metadata.uid and known != service.metadata.uid:
            self._versions.pop(key, None)
        self._service_uids[key] = service.metadata.uid
        versions = self._versions.get(key)
        if versions is None:
            return False
        provided = set()
        for slice_ in slices:
            provided.add(slice_.metadata.uid)
            written = versions.get(slice_.metadata.uid)
            if written is not None and (written == _DELETION_EXPECTED or written > _version(slice_)):
                return True
        return any(version != _DELETION_EXPECTED and uid not in provided for uid, version in versions.items())

    def update(self, slice_: EndpointSlice) -> None:
        self._versions.setdefault(_service_key_of(slice_), {})[slice_.metadata.uid] = _version(slice_)

    def expect_deletion(self, slice_: EndpointSlice) -> None:
        self._versions.setdefault(_service_key_of(slice_), {})[slice_.metadata.uid] = _DELETION_EXPECTED

    def handle_deletion(self, slice_: EndpointSlice) -> bool:
        """Forget a deleted slice; False when we did not expect its deletion."""
        versions = self._versions.get(_service_key_of(slice_))
        if versions is None:
            return True
        written = versions.pop(slice_.metadata.uid, None)
        return written is None or written == _DELETION_EXPECTED

    def delete_service(self, key: str) -> None:
        self._versions.pop(key, None)
        self._service_uids.pop(key, None)


# =========================================================================== the controller
class EndpointSliceController:
    """``endpointslice.Controller`` (see the module docstring)."""

    def __init__(
        self,
        process: Process,
        client: ApiClient,
        informers: SharedInformerFactory,
        config: ControllerManagerConfig,
        *,
        max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
        delete_orphaned_slices: bool = True,
    ) -> None:
        assert max_endpoints_per_slice > 0
        self.process = process
        self.client = client
        self.config = config
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.delete_orphaned_slices = delete_orphaned_slices
        self.pods = informers.informer("pods")
        self.pods.indexer.ensure_indexers({LABEL_INDEX: namespace_label_index})
        self.services = informers.informer("services")
        self.nodes = informers.informer("nodes")
        self.slices = informers.informer("endpointslices")
        self.tracker = SliceTracker()
        limiter = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(SYNC_BACKOFF_S, MAX_SYNC_BACKOFF_S), BucketRateLimiter(10.0, 100))
        self.queue = RateLimitingQueue(process, limiter)
        self.services.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._enqueue)
        self.pods.add_event_handler(
            on_add=lambda pod: self._pod_changed(None, pod),
            on_update=self._pod_changed,
            on_delete=lambda pod: self._pod_changed(_object_of(pod), None),
        )
        self.slices.add_event_handler(on_add=self._slice_added, on_update=self._slice_updated, on_delete=self._slice_deleted)

    # -- handlers (enqueue only) ------------------------------------------------------------------
    def _enqueue(self, service: Any) -> None:
        self.queue.add(meta_namespace_key(service))

    def services_of(self, namespace: str, labels: Mapping[str, str]) -> set[str]:
        """``getServicesForPod``."""
        return {meta_namespace_key(s) for s in self.services.indexer.by_index(NAMESPACE_INDEX, namespace) if selects(s.spec.selector, labels)}

    def _pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        for key in sorted(services_for_pod_change(self.services_of, old, new)):
            self.queue.add(key)

    def _managed(self, slice_: EndpointSlice) -> bool:
        return slice_.metadata.labels.get(LABEL_MANAGED_BY) == CONTROLLER_NAME

    def _queue_for_slice(self, slice_: EndpointSlice) -> None:
        """``queueServiceForEndpointSlice``: after ``endpointSliceChangeMinSyncDelay``."""
        if slice_.metadata.labels.get(LABEL_SERVICE_NAME):
            self.queue.add_after(_service_key_of(slice_), SLICE_CHANGE_MIN_SYNC_DELAY_S)

    def _slice_added(self, slice_: EndpointSlice) -> None:
        if self._managed(slice_) and self.tracker.should_sync(slice_):
            self._queue_for_slice(slice_)

    def _slice_updated(self, old: EndpointSlice, new: EndpointSlice) -> None:
        if old.metadata.labels.get(LABEL_SERVICE_NAME) != new.metadata.labels.get(LABEL_SERVICE_NAME):
            self._queue_for_slice(new)
            self._queue_for_slice(old)
        elif self._managed(old) != self._managed(new) or (self._managed(new) and self.tracker.should_sync(new)):
            self._queue_for_slice(new)

    def _slice_deleted(self, obj: Any) -> None:
        slice_ = _object_of(obj)
        if self._managed(slice_) and self.tracker.has(slice_) and not self.tracker.handle_deletion(slice_):
            self._queue_for_slice(slice_)

    # -- running ----------------------------------------------------------------------------------
    async def run(self) -> None:
        for informer in (self.pods, self.services, self.slices, self.nodes):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(max(1, self.config.concurrent_endpointslice_syncs)):
                nursery.start_soon(self._worker)

    async def _worker(self) -> None:
        """``processNextServiceWorkItem`` + ``handleErr`` (dropped after 15 retries)."""
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.sync_service(key)
            except (ApiError, EndpointSliceSyncError) as error:
                if self.queue.num_requeues(key) < MAX_RETRIES:
                    self.queue.add_rate_limited(key)
                else:
                    self.queue.forget(key)
                    self.process.world.record("endpointslice-dropped", service=key, error=str(error))
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    def _slices_of(self, namespace: str, name: str) -> list[EndpointSlice]:
        return [
            s for s in self.slices.indexer.by_index(NAMESPACE_INDEX, namespace)
            if s.metadata.labels.get(LABEL_SERVICE_NAME) == name and self._managed(s)
        ]

    async def sync_service(self, key: str) -> None:
        """``syncService``."""
        namespace, _, name = key.rpartition("/")
        service = self.services.indexer.get_by_key(key)
        if service is None:
            self.tracker.delete_service(key)
            if self.delete_orphaned_slices:
                await self._delete_orphans(namespace, name)
            return
        if service.spec.type == "ExternalName" or not service.spec.selector:
            return
        pods = self.pods.indexer.by_labels(namespace, service.spec.selector)  # ``selects``: the selector is not empty
        slices = [s for s in self._slices_of(namespace, name) if s.metadata.deletion_timestamp is None]
        if self.tracker.stale(service, slices):
            raise EndpointSliceSyncError("EndpointSlice informer cache is out of date")
        nodes = {node.metadata.name: node for node in self.nodes.indexer.list()}
        plan = reconcile(service, pods, nodes, slices, self.max_endpoints_per_slice)
        await self._finalize(key, plan)
        if plan.skipped:
            raise EndpointSliceSyncError(f"skipping pods {', '.join(plan.skipped)} for Service {key}: their nodes are not known")

    async def _finalize(self, key: str, plan: SlicePlan) -> None:
        """``finalize``: creates, then updates, then deletes; the first failure stops it."""
        for slice_ in plan.create:
            self.tracker.update(await self.client.create(slice_))
        for slice_ in plan.update:
            self.tracker.update(await self.client.update(slice_))
        for slice_ in plan.delete:
            await self._delete(slice_)
        if not plan.empty():
            self.process.world.record("endpointslice-sync", service=key, created=len(plan.create), updated=len(plan.update), deleted=len(plan.delete))

    async def _delete(self, slice_: EndpointSlice, *, track: bool = True) -> None:
        """``deleteEndpointSlice``: a slice already gone is fine."""
        try:
            await self.client.delete("endpointslices", slice_.metadata.namespace, slice_.metadata.name)
        except ApiError as error:
            if error.code != 404 or error.ambiguous:
                raise
            return
        if track:
            self.tracker.expect_deletion(slice_)

    async def _delete_orphans(self, namespace: str, name: str) -> None:
        """The garbage collector's part (module docstring): slices of a Service that is gone."""
        orphans = self._slices_of(namespace, name)
        for slice_ in orphans:
            await self._delete(slice_, track=False)
        if orphans:
            self.process.world.record("endpointslice-sync", service=f"{namespace}/{name}", created=0, updated=0, deleted=len(orphans))

    def statistics(self) -> dict[str, Any]:
        return {"services": len(self.services.indexer), "slices": len(self.slices.indexer), "queued": len(self.queue)}


def _object_of(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj

"""kube-proxy (iptables mode semantics) and a traffic probe that measures a Service as its
users would see it.

The rule table is a pure function of the Services and EndpointSlices
(:func:`compute_rules`), after ``pkg/proxy``:

- EndpointSlices belong to the Service named by their ``kubernetes.io/service-name``
  label in their namespace (``endpointslicecache.go`` ``endpointSliceCacheKeys``); a
  slice port with no name or no port number is ignored, endpoints of the same address
  and port in several slices count once (``addEndpoints``); an endpoint's conditions
  read ``ready`` and ``serving`` as true and ``terminating`` as false when unset
  (``newEndpointSliceInfo``); endpoints are sorted by address (``byEndpoint``).
- For each Service port, the usable endpoints are ``CategorizeEndpoints``' (``topology.go``):
  the ready ones; if there are none, the serving and terminating ones (graceful
  termination, ``ProxyTerminatingEndpoints``). With ``internalTrafficPolicy: Local`` only
  this node's endpoints count, with the same fallback. Topology hints are not modelled.
- Headless Services (``clusterIP: None``) and ``ExternalName`` Services get no rules
  (``ShouldSkipService``). The API server allocates cluster IPs
  (:mod:`chaoskube.apiserver.ipallocator`); a probe may name its Service or send to a
  ClusterIP and port, routed by the rule whose address and port match (KUBE-SERVICES).

:class:`KubeProxy` keeps the table of one node up to date from informers on services and
endpointslices: handlers only mark the table dirty; a sync recomputes it at most once per
``min_sync_period_s`` (``--iptables-min-sync-period``, 1 s by default,
``pkg/proxy/apis/config/v1alpha1/defaults.go``), after both informers synced, and
journals each Service port whose list of endpoint addresses changed as ``proxy-rules``
(node, service, port, endpoints; None when the Service port is gone). The table lives in the object, as iptables rules live in the kernel:
when the kube-proxy process dies the last table stays in force.

:class:`TrafficProbe` sends, every ``every_s``, one request to a Service port through a
proxy's table, as a client on that node would: no usable endpoint is ``no-endpoints``
(iptables REJECTs: "has no endpoints"); otherwise an endpoint is picked as the iptables
chain picks it (endpoint ``i`` of ``n`` with probability ``1/(n-i)``, the last always:
``-m statistic --mode random``, ``pkg/proxy/iptables/proxier.go``), from a seeded
generator, and a :class:`~chaoskube.node.runtime.TrafficRequest` goes to the endpoint's
node process (``nodeName``; by default the process is named after the node). The
outcome is ``ok`` (answered), ``refused`` (the pod is not running, or its node process is
down), or ``timeout`` (no answer within ``timeout_s``: a hung process, an address the node
does not have, a partition, an endpoint without ``nodeName``). Each request is journaled
as ``traffic`` (node, service, port, outcome, latency_s, endpoint).

Non-guarantees: no session affinity, no NodePort / LoadBalancer / external IPs, no
topology-aware routing, no conntrack (an established flow is not kept on its endpoint),
no masquerading; a Service that does not exist answers ``no-endpoints`` (a real client
would time out on an unknown cluster IP).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import trio

from chaoskube.api.objects import EndpointSlice, Service
from chaoskube.client.client import ApiClient
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.node.runtime import TRAFFIC_PORT, TrafficRequest
from chaoskube.sim.outcomes import Failed, Ok
from chaoskube.sim.process import Process

__all__ = [
    "EndpointRule",
    "KubeProxy",
    "SERVICE_NAME_LABEL",
    "ServiceRule",
    "TrafficProbe",
    "compute_rules",
    "pick_endpoint",
    "usable_endpoints",
]

#: ``discovery.LabelServiceName``.
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
#: ``--iptables-min-sync-period`` default.
MIN_SYNC_PERIOD_S = 1.0


@dataclass(frozen=True, slots=True, order=True)
class EndpointRule:
    """One endpoint of a Service port (``BaseEndpointInfo``)."""

    ip: str
    port: int
    node: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True, slots=True)
class ServiceRule:
    """The rules of one Service port: its usable endpoints, in order."""

    service: str  # namespace/name
    port_name: str
    port: int
    protocol: str
    cluster_ip: str
    endpoints: tuple[EndpointRule, ...]


RuleTable = dict[tuple[str, str], ServiceRule]


# =========================================================================== the pure core
def usable_endpoints(endpoints: Iterable[EndpointRule], *, node: str, local_only: bool) -> tuple[EndpointRule, ...]:
    """``CategorizeEndpoints`` without topology: ready endpoints, else serving-terminating
    ones; only this node's with ``local_only`` (``internalTrafficPolicy: Local``)."""
    candidates = [endpoint for endpoint in endpoints if not local_only or endpoint.node == node]
    ready = tuple(endpoint for endpoint in candidates if endpoint.ready)
    if ready:
        return ready
    return tuple(endpoint for endpoint in candidates if endpoint.serving and endpoint.terminating)


def _slice_endpoints(slices: Iterable[EndpointSlice], port_name: str, protocol: str) -> list[EndpointRule]:
    """Every endpoint of the slices for the named port, deduplicated, sorted by address."""
    found: dict[str, EndpointRule] = {}
    for endpoint_slice in slices:
        if endpoint_slice.address_type not in ("IPv4", ""):
            continue
        for port in endpoint_slice.ports:
            if port.name is None or not port.port or port.name != port_name or (port.protocol or "TCP") != protocol:
                continue
            for endpoint in endpoint_slice.endpoints:
                if not endpoint.addresses:
                    continue
                conditions = endpoint.conditions
                rule = EndpointRule(
                    ip=endpoint.addresses[0],
                    port=port.port,
                    node=endpoint.node_name or "",
                    ready=conditions.ready is None or conditions.ready,
                    serving=conditions.serving is None or conditions.serving,
                    terminating=conditions.terminating is not None and conditions.terminating,
                )
                found.setdefault(rule.address, rule)
    return [found[address] for address in sorted(found)]


#: Endpoints of a tuple of EndpointSlice objects for one port, by the objects' identities
#: (the slices are kept in the entry, so an id cannot be reused while it is there). The
#: watch cache hands one copy of an event's object to every watcher
#: (:mod:`chaoskube.apiserver.watchcache`), so the kube-proxies of all nodes hold the same slice
#: objects and the endpoints of a change are worked out once, not once per node. A pure
#: memo (the value depends only on the slices' contents, which nobody changes: informer
#: objects are read-only): it cannot change a result, only skip recomputing one. Bounded:
#: emptied when it reaches _SLICE_MEMO_LIMIT entries.
_SLICE_MEMO: dict[tuple[Any, ...], tuple[tuple[EndpointSlice, ...], list[EndpointRule]]] = {}
_SLICE_MEMO_LIMIT = 1024


def _memo_slice_endpoints(slices: tuple[EndpointSlice, ...], port_name: str, protocol: str) -> list[EndpointRule]:
    key = (port_name, protocol, *map(id, slices))
    entry = _SLICE_MEMO.get(key)
    if entry is not None and all(a is b for a, b in zip(entry[0], slices)):
        return entry[1]
    endpoints = _slice_endpoints(slices, port_name, protocol)
    if len(_SLICE_MEMO) >= _SLICE_MEMO_LIMIT:
        _SLICE_MEMO.clear()
    _SLICE_MEMO[key] = (slices, endpoints)
    return endpoints


#: What :func:`compute_rules` remembers between calls, per Service key: the Service object,
#: its slices (in order) and the rules computed from them.
RuleMemo = dict[str, tuple[Service, tuple[EndpointSlice, ...], list[ServiceRule]]]


def compute_rules(services: Iterable[Service], slices: Iterable[EndpointSlice], node: str, *, memo: RuleMemo | None = None) -> RuleTable:
    """The rule table of ``node`` (module docstring). Pure; keys (service, port name) sorted.

    ``memo`` (a dict the caller keeps between calls, for one ``node``): the rules of a
    Service whose Service object and slices are the very same objects (``is``) as in the
    previous call are reused instead of recomputed. Informer stores replace an object on
    every change and never edit one in place, so identity means "unchanged"; the memo is
    rewritten to hold only this call's Services (it keeps the objects alive, so an
    identity cannot be reused by a new object)."""
    by_service: dict[str, list[EndpointSlice]] = {}
    for endpoint_slice in slices:
        service_name = endpoint_slice.metadata.labels.get(SERVICE_NAME_LABEL)
        if service_name:
            by_service.setdefault(f"{endpoint_slice.metadata.namespace}/{service_name}", []).append(endpoint_slice)
    table: RuleTable = {}
    previous = dict(memo) if memo is not None else {}
    if memo is not None:
        memo.clear()
    for service in services:
        spec = service.spec
        if spec.type == "ExternalName" or spec.cluster_ip == "None":
            continue
        key = f"{service.metadata.namespace}/{service.metadata.name}"
        mine = tuple(sorted(by_service.get(key, []), key=lambda s: s.metadata.name))
        entry = previous.get(key)
        if entry is not None and entry[0] is service and len(entry[1]) == len(mine) and all(a is b for a, b in zip(entry[1], mine)):
            rules = entry[2]
        else:
            local_only = spec.internal_traffic_policy == "Local"
            rules = []
            for port in spec.ports:
                protocol = port.protocol or "TCP"
                endpoints = usable_endpoints(_memo_slice_endpoints(mine, port.name, protocol), node=node, local_only=local_only)
                rules.append(ServiceRule(key, port.name, port.port, protocol, spec.cluster_ip, endpoints))
        if memo is not None:
            memo[key] = (service, mine, rules)
        for rule in rules:
            table[(key, rule.port_name)] = rule
    return {key: table[key] for key in sorted(table)}


def pick_endpoint(endpoints: tuple[EndpointRule, ...], draw: Callable[[], float]) -> EndpointRule:
    """The iptables statistic chain: endpoint ``i`` of ``n`` with probability
    ``1/(n-i)``, the last always (uniform overall). ``draw`` gives numbers in [0, 1)."""
    assert endpoints, "a Service with no endpoints has no chain to pick from"
    count = len(endpoints)
    for index, endpoint in enumerate(endpoints[:-1]):
        if draw() < 1.0 / (count - index):
            return endpoint
    return endpoints[-1]


def _addresses(rule: ServiceRule | None) -> list[str] | None:
    return None if rule is None else [endpoint.address for endpoint in rule.endpoints]


# =========================================================================== kube-proxy
class KubeProxy:
    """kube-proxy for ``node`` inside ``process`` (module docstring). ``informers``: a
    factory to share (its ``start`` is the caller's); by default the proxy makes one over
    ``client`` and starts it in :meth:`run`. ``await run()`` never returns."""

    def __init__(
        self,
        process: Process,
        client: ApiClient,
        node: str,
        *,
        informers: SharedInformerFactory | None = None,
        min_sync_period_s: float = MIN_SYNC_PERIOD_S,
    ) -> None:
        assert min_sync_period_s >= 0
        self.process = process
        self.client = client
        self.node = node
        self.min_sync_period_s = min_sync_period_s
        self._own_factory = informers is None
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        self.services = self.informers.informer("services")
        self.slices = self.informers.informer("endpointslices")
        for informer in (self.services, self.slices):
            informer.add_event_handler(on_add=self._changed, on_update=self._changed, on_delete=self._changed)
        self.rules: RuleTable = {}
        self._memo: RuleMemo = {}
        self.syncs = 0
        self._dirty = trio.Event()

    def _changed(self, *_: Any) -> None:
        self._dirty.set()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            if self._own_factory:
                self.informers.start(nursery)
            await self.services.wait_for_sync()
            await self.slices.wait_for_sync()
            while True:
                self._dirty = trio.Event()
                self.sync()
                await self.process.sleep(self.min_sync_period_s)
                await self._dirty.wait()

    def sync(self) -> list[str]:
        """Recompute the table; journal and answer the Service ports that changed."""
        new = compute_rules(self.services.indexer.list(), self.slices.indexer.list(), self.node, memo=self._memo)
        old = self.rules
        changed = [key for key in sorted(set(new) | set(old)) if new.get(key) is not old.get(key) and new.get(key) != old.get(key)]
        for key in changed:
            endpoints = _addresses(new.get(key))
            if endpoints != _addresses(old.get(key)):  # the chains differ, not only conditions
                self.process.world.record("proxy-rules", node=self.node, service=key[0], port=key[1], endpoints=endpoints)
        self.rules = new
        self.syncs += 1
        return [f"{service}:{port_name}" for service, port_name in changed]

    def rule(self, service: str, port: int | str) -> ServiceRule | None:
        """The rules of ``service`` ("namespace/name") for a port number or name."""
        for (name, port_name), rule in self.rules.items():
            if name == service and (port_name == port if isinstance(port, str) else rule.port == port):
                return rule
        return None

    def destination(self, cluster_ip: str, port: int) -> ServiceRule | None:
        """The rule a packet to ``cluster_ip:port`` meets (the KUBE-SERVICES chain's
        ``-d <clusterIP>/32 --dport <port>`` match), or None: nothing routes it."""
        for rule in self.rules.values():
            if rule.cluster_ip == cluster_ip and rule.port == port:
                return rule
        return None

    def statistics(self) -> dict[str, int]:
        return {
            "service_ports": len(self.rules),
            "endpoints": sum(len(rule.endpoints) for rule in self.rules.values()),
            "syncs": self.syncs,
        }


# =========================================================================== traffic probe
class TrafficProbe:
    """Requests to ``service`` ("namespace/name") port ``port`` (number or name) through
    ``proxy``'s table, from ``process``, every ``every_s`` (module docstring). ``await
    run()`` probes until cancelled; :meth:`probe_once` sends one request."""

    def __init__(
        self,
        process: Process,
        proxy: KubeProxy,
        service: str,
        port: int | str,
        *,
        every_s: float = 1.0,
        timeout_s: float = 1.0,
        node_process: Callable[[str], str] | None = None,
    ) -> None:
        assert every_s > 0 and timeout_s > 0
        assert "/" in service or isinstance(port, int), "a service is named namespace/name, or is a ClusterIP with a port number"
        self.process = process
        self.proxy = proxy
        self.service = service
        self.port = port
        self.every_s = every_s
        self.timeout_s = timeout_s
        self.node_process = node_process or (lambda node: node)
        self._rng = process.random(f"traffic/{proxy.node}/{service}/{port}")
        self.outcomes = {"ok": 0, "no-endpoints": 0, "refused": 0, "timeout": 0}

    async def run(self) -> None:
        while True:
            started = self.process.now()
            await self.probe_once()
            await self.process.sleep(max(0.0, started + self.every_s - self.process.now()))

    async def probe_once(self) -> str:
        started = self.process.now()
        if "/" not in self.service:
            # a ClusterIP: routed by the destination match; nothing answers an address no
            # Service has (the packet goes nowhere: the client times out)
            assert isinstance(self.port, int)
            rule = self.proxy.destination(self.service, self.port)
            if rule is None:
                await self.process.sleep(self.timeout_s)
                return self._record("timeout", self.timeout_s, "")
        else:
            rule = self.proxy.rule(self.service, self.port)
        if rule is None or not rule.endpoints:
            return self._record("no-endpoints", 0.0, "")
        endpoint = pick_endpoint(rule.endpoints, self._rng.random)
        if not endpoint.node:
            await self.process.sleep(self.timeout_s)
            return self._record("timeout", self.process.now() - started, endpoint.address)
        request = TrafficRequest(pod_ip=endpoint.ip, port=endpoint.port, service=self.service)
        outcome = await self.process.call(self.node_process(endpoint.node), request, port=TRAFFIC_PORT, timeout_s=self.timeout_s)
        if isinstance(outcome, Ok):
            result = "ok"
        elif isinstance(outcome, Failed):
            result = "refused"
        else:
            result = "timeout"
        return self._record(result, self.process.now() - started, endpoint.address)

    def _record(self, outcome: str, latency_s: float, endpoint: str) -> str:
        self.outcomes[outcome] += 1
        self.process.world.record(
            "traffic", node=self.proxy.node, service=self.service, port=str(self.port), outcome=outcome,
            latency_s=round(latency_s, 6), endpoint=endpoint,
        )
        return outcome

    def statistics(self) -> dict[str, int]:
        return dict(self.outcomes)

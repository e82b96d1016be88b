"""NodeResourcesFit with ephemeral-storage and extended resources, and the VolumeBinding
plugin (``pkg/scheduler/framework/plugins/volumebinding``): PreFilter and Filter against
claims, volumes and storage classes."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.scheduler.framework import Code, CycleState, Snapshot
from chaoskube.scheduler.plugins import NodeResourcesFit, default_plugins
from chaoskube.scheduler.volumebinding import ERR_NO_VOLUMES, ERR_NODE_CONFLICT, ERR_PV_NOT_EXIST, ERR_UNBOUND_IMMEDIATE, ERR_ZONE_CONFLICT, VolumeBinding, VolumeZone
from tests.scheduler import ZONE, make_node, make_pod


def _with(node: Any, **allocatable: str) -> Any:
    node.status.allocatable.update(allocatable)
    node.status.capacity.update(allocatable)
    return node


def _requesting(name: str, resources: dict[str, str], node_name: str = "") -> Any:
    pod = make_pod(name, node_name=node_name)
    pod.spec.containers[0].resources.requests.update(resources)
    return pod


def _fit(pod: Any, node: Any, running: list[Any] = ()) -> tuple[Code, tuple[str, ...]]:
    snapshot = Snapshot.of([node], list(running))
    plugin = NodeResourcesFit()
    state = CycleState(snapshot)
    if hasattr(plugin, "pre_filter"):
        assert plugin.pre_filter(state, pod, snapshot).is_success()
    status = plugin.filter(state, pod, snapshot.get(node.metadata.name))
    return status.code, tuple(status.reasons)


@pytest.mark.parametrize(("allocatable", "running", "wanted", "expected"), [
    ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}, (Code.SUCCESS, ())),
    ({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}, (Code.UNSCHEDULABLE, ("Insufficient nvidia.com/gpu",))),
    ({}, {}, {"nvidia.com/gpu": "1"}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient nvidia.com/gpu",))),  # the node has none at all
    ({"ephemeral-storage": "10Gi"}, {"ephemeral-storage": "8Gi"}, {"ephemeral-storage": "4Gi"}, (Code.UNSCHEDULABLE, ("Insufficient ephemeral-storage",))),
    ({"ephemeral-storage": "10Gi"}, {}, {"ephemeral-storage": "4Gi"}, (Code.SUCCESS, ())),
    ({"hugepages-2Mi": "64Mi"}, {}, {"hugepages-2Mi": "128Mi"}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient hugepages-2Mi",))),
])
def test_extended_and_ephemeral_resources_fit(allocatable: dict[str, str], running: dict[str, str], wanted: dict[str, str], expected: tuple) -> None:
    node = _with(make_node("node"), **allocatable)
    existing = [_requesting("running", running, node_name="node")] if running else []
    assert _fit(_requesting("pod", wanted), node, existing) == expected


# --------------------------------------------------------------------------- VolumeBinding


class _Handle:
    def __init__(self, claims: list[Any] = (), volumes: list[Any] = (), classes: list[Any] = ()) -> None:
        self.claims = {(c.metadata.namespace, c.metadata.name): c for c in claims}
        self.volumes = {v.metadata.name: v for v in volumes}
        self.classes = {c.metadata.name: c for c in classes}

    def claim(self, namespace: str, name: str) -> Any:
        return self.claims.get((namespace, name))

    def volume(self, name: str) -> Any:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> Any:
        return self.classes.get(name)

    def all_volumes(self) -> list[Any]:
        return list(self.volumes.values())


class _Framework:
    def __init__(self, handle: _Handle) -> None:
        self.handle = handle


def _claim(name: str, *, storage_class: str | None = "standard", volume: str = "", phase: str = "Pending", size: str = "1Gi") -> Any:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return from_dict({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}})


def _volume(name: str, zone: str | None = None, *, storage_class: str = "standard", size: str = "5Gi", claimed: bool = False) -> Any:
    spec: dict[str, Any] = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": storage_class, "hostPath": {"path": "/x"}}
    if zone:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}
    if claimed:
        spec["claimRef"] = {"namespace": "default", "name": "someone-else"}
    return from_dict({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec, "status": {"phase": "Bound" if claimed else "Available"}})


def _class(name: str = "standard", mode: str = "WaitForFirstConsumer", provisioner: str = "chaoskube.io/zonal-disk", zones: list[str] = ()) -> Any:
    body: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}
    if zones:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}]
    return from_dict(body)


def _pod_with(*claims: str) -> Any:
    pod = make_pod("web")
    pod.spec.volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}} for i, claim in enumerate(claims)]
    return pod


def _bind(handle: _Handle, pod: Any, nodes: list[Any]) -> tuple[Any, dict[str, Any]]:
    plugin = VolumeBinding()
    plugin.attach(_Framework(handle))
    snapshot = Snapshot.of(nodes)
    state = CycleState(snapshot)
    pre = plugin.pre_filter(state, pod, snapshot)
    if not pre.is_success():
        return pre, {}
    return pre, {node.metadata.name: plugin.filter(state, pod, snapshot.get(node.metadata.name)) for node in nodes}


NODES = [make_node("a1", zone="zone-a"), make_node("b1", zone="zone-b")]


def test_a_pod_without_claims_is_not_concerned() -> None:
    pre, filtered = _bind(_Handle(), make_pod("plain"), NODES)
    assert pre.is_success() and all(status.is_success() for status in filtered.values())


def test_prefilter_refusals_are_unresolvable() -> None:
    pre, _ = _bind(_Handle(), _pod_with("data"), NODES)
    assert (pre.code, pre.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "data" not found',))
    pre, _ = _bind(_Handle([_claim("data")], classes=[_class(mode="Immediate")]), _pod_with("data"), NODES)
    assert (pre.code, pre.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_UNBOUND_IMMEDIATE,))
    pre, _ = _bind(_Handle([_claim("data", storage_class=None)]), _pod_with("data"), NODES)
    assert pre.reasons == (ERR_UNBOUND_IMMEDIATE,)  # no class: Immediate


def test_a_bound_claim_follows_its_volume_to_its_zone() -> None:
    handle = _Handle([_claim("data", volume="pv-a", phase="Bound")], [_volume("pv-a", "zone-a")], [_class()])
    _, filtered = _bind(handle, _pod_with("data"), NODES)
    assert filtered["a1"].is_success()
    assert (filtered["b1"].code, filtered["b1"].reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_NODE_CONFLICT,))
    _, filtered = _bind(_Handle([_claim("data", volume="gone", phase="Bound")], classes=[_class()]), _pod_with("data"), NODES)
    assert filtered["a1"].reasons == (ERR_PV_NOT_EXIST,)


def test_a_waiting_claim_takes_a_matching_volume_or_a_class_that_provisions_there() -> None:
    static = _Handle([_claim("data")], [_volume("pv-b", "zone-b")], [_class(provisioner="kubernetes.io/no-provisioner")])
    _, filtered = _bind(static, _pod_with("data"), NODES)
    assert filtered["b1"].is_success() and filtered["a1"].reasons == (ERR_NO_VOLUMES,)
    too_small = _Handle([_claim("data", size="10Gi")], [_volume("pv-b", "zone-b", size="5Gi")], [_class(provisioner="")])
    _, filtered = _bind(too_small, _pod_with("data"), NODES)
    assert filtered["b1"].reasons == (ERR_NO_VOLUMES,)
    taken = _Handle([_claim("data")], [_volume("pv-b", "zone-b", claimed=True)], [_class(provisioner="")])
    assert _bind(taken, _pod_with("data"), NODES)[1]["b1"].reasons == (ERR_NO_VOLUMES,)
    zonal = _Handle([_claim("data")], classes=[_class(zones=["zone-a"])])
    _, filtered = _bind(zonal, _pod_with("data"), NODES)
    assert filtered["a1"].is_success() and filtered["b1"].reasons == (ERR_NO_VOLUMES,)  # allowedTopologies
    anywhere = _Handle([_claim("data")], classes=[_class()])
    assert all(status.is_success() for status in _bind(anywhere, _pod_with("data"), NODES)[1].values())


# --------------------------------------------------------------------------- system default spreading
from chaoskube.api.objects import LabelSelector  # noqa: E402
from chaoskube.scheduler.plugins import PodTopologySpread  # noqa: E402


class _SelectorHandle:
    def __init__(self, selector: LabelSelector | None) -> None:
        self.selector = selector

    def default_selector(self, pod: Any) -> LabelSelector | None:
        return self.selector


def _spread_scores(selector: LabelSelector | None, pod: Any, nodes: list[Any], running: list[Any]) -> dict[str, int] | None:
    plugin = PodTopologySpread()
    plugin.attach(_Framework(_SelectorHandle(selector)))  # type: ignore[arg-type]
    snapshot = Snapshot.of(nodes, running)
    state = CycleState(snapshot)
    infos = snapshot.list()
    if plugin.pre_score(state, pod, infos).is_skip():
        return None
    scores = {info.name: plugin.score(state, pod, info)[0] for info in infos}
    plugin.normalize_score(state, pod, scores)
    return scores


def test_system_default_constraints_spread_a_workload_over_hosts_and_zones() -> None:
    """``systemDefaultConstraints``: maxSkew 3 over hostnames, 5 over zones, ScheduleAnyway,
    selecting by what selects the pod (here a ReplicaSet's selector app=db)."""
    nodes = [make_node("a1", zone="zone-a"), make_node("a2", zone="zone-a"), make_node("b1", zone="zone-b"), make_node("c1", zone="zone-c")]
    running = [make_pod("db-1", labels={"app": "db"}, node_name="a1")]
    incoming = make_pod("db-2", labels={"app": "db"})
    scores = _spread_scores(LabelSelector(match_labels={"app": "db"}), incoming, nodes, running)
    assert scores is not None
    assert scores["b1"] == scores["c1"] == 100  # empty zones score best
    assert scores["a1"] < scores["a2"] < scores["b1"]  # the occupied host least, its zone next
    assert _spread_scores(None, incoming, nodes, running) is None  # nothing selects the pod: no constraint
    own = make_pod("own", labels={"app": "db"}, spread=[{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "db"}}}])
    assert _spread_scores(LabelSelector(match_labels={"app": "db"}), own, nodes, running) is None  # its own constraints replace the defaults


# --------------------------------------------------------------------------- VolumeZone
def _labelled(name: str, labels: dict[str, str]) -> Any:
    """A bound static volume that carries zone labels and no node affinity (as volumes made
    before CSI topology, or by hand, do): only VolumeZone keeps its pods in its zone."""
    volume = _volume(name)
    volume.metadata.labels.update(labels)
    return volume


def _zone(handle: _Handle, pod: Any, nodes: list[Any]) -> dict[str, Any]:
    plugin = VolumeZone()
    plugin.attach(_Framework(handle))
    snapshot = Snapshot.of(nodes)
    state = CycleState(snapshot)
    assert plugin.pre_filter(state, pod, snapshot).is_success()
    return {node.metadata.name: plugin.filter(state, pod, snapshot.get(node.metadata.name)) for node in nodes}


@pytest.mark.parametrize(("labels", "accepted"), [
    ({ZONE: "zone-a"}, {"a1"}),
    ({ZONE: "zone-b__zone-a"}, {"a1", "b1"}),  # LabelZonesToSet: several zones
    ({"failure-domain.beta.kubernetes.io/zone": "zone-b"}, {"b1"}),  # a beta label on the volume, the GA one on the node
    ({}, {"a1", "b1"}),  # no topology label: not constrained
])
def test_volume_zone_keeps_a_bound_volumes_pods_in_its_zones(labels: dict[str, str], accepted: set[str]) -> None:
    """volumezone/volume_zone.go Filter (issue 32: the scheduling checker models it too)."""
    handle = _Handle([_claim("data", volume="pv", phase="Bound")], [_labelled("pv", labels)], [_class()])
    filtered = _zone(handle, _pod_with("data"), NODES)
    assert {name for name, status in filtered.items() if status.is_success()} == accepted
    for name, status in filtered.items():
        if name not in accepted:
            assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_ZONE_CONFLICT,))


def test_volume_zone_leaves_waiting_claims_and_unlabelled_nodes_alone() -> None:
    waiting = _Handle([_claim("data")], classes=[_class()])
    assert all(status.is_success() for status in _zone(waiting, _pod_with("data"), NODES).values())
    bare = make_node("bare")
    bare.metadata.labels.pop(ZONE, None)
    handle = _Handle([_claim("data", volume="pv", phase="Bound")], [_labelled("pv", {ZONE: "zone-a"})], [_class()])
    assert _zone(handle, _pod_with("data"), [bare])["bare"].is_success()  # a node without topology labels


def test_volume_zone_is_in_the_default_profile_after_volume_binding() -> None:
    names = [type(plugin).__name__ for plugin, _ in default_plugins(None)]
    assert names.index("VolumeZone") == names.index("VolumeBinding") + 1

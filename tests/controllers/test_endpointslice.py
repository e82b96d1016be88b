"""The EndpointSlice controller (kubernetes ``pkg/controller/endpointslice`` and
``staging/src/k8s.io/endpointslice``).

Pure helpers first: endpoint conditions (ready / serving / terminating, with and without
``publishNotReadyAddresses``), which pods get endpoints, port resolution, the reconciler's
placement (in-place updates, 100 endpoints per slice, the placeholder, create+delete
becoming an update, slices of an older Service), which Services a pod change touches, and
the stale-cache tracker. Then a scenario against a real API server: the slice follows pod
readiness, termination and deletion, and goes with its Service.
"""

import pytest

from chaoskube.api.identity import admin_credentials, user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import (
    Container,
    ContainerPort,
    Node,
    ObjectMeta,
    Pod,
    PodCondition,
    PodSpec,
    Service,
    ServicePort,
    ServiceSpec,
    deep_copy,
)
from chaoskube.api.protocol import timestamp
from chaoskube.client.client import ApiClient
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.endpointslice import (
    CONTROLLER_NAME,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    EndpointSliceController,
    SliceTracker,
    endpoint_ports,
    find_port,
    pod_to_endpoint,
    reconcile,
    services_for_pod_change,
    should_pod_be_in_endpoints,
)
from tests.apiserver.apiserver_harness import run_api

SERVERS = ["kube-apiserver-1"]
SELECTOR = {"app": "web"}


# =========================================================================== helpers
def service(name="web", uid="svc-uid", ports=(ServicePort(port=80, target_port=8080, protocol="TCP"),), publish=False, labels=None):
    spec = ServiceSpec(selector=dict(SELECTOR), ports=list(ports), publish_not_ready_addresses=publish)
    return Service(metadata=ObjectMeta(name=name, namespace="default", uid=uid, labels=labels or {}), spec=spec)


def pod(name, ip="10.0.0.1", ready=True, node="n1", deleting=False, phase="Running", container_ports=()):
    spec = PodSpec(node_name=node, containers=[Container(name="c", image="app", ports=list(container_ports))])
    meta = ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", labels=dict(SELECTOR), resource_version="1")
    if deleting:
        meta.deletion_timestamp = timestamp(5.0)
    result = Pod(metadata=meta, spec=spec)
    result.status.phase = phase
    result.status.pod_ip = ip
    result.status.conditions = [PodCondition(type="Ready", status="True" if ready else "False")]
    return result


NODES = {"n1": Node(metadata=ObjectMeta(name="n1", labels={"topology.kubernetes.io/zone": "z1"})), "n2": Node(metadata=ObjectMeta(name="n2"))}


def stored(plan_slices, start=1):
    """Slices as the API server would store them: named, with uids and versions."""
    result = []
    for index, slice_ in enumerate(plan_slices, start):
        copy = deep_copy(slice_)
        copy.metadata.name = copy.metadata.name or f"web-{index}"
        copy.metadata.uid = copy.metadata.uid or f"slice-uid-{index}"
        copy.metadata.resource_version = copy.metadata.resource_version or str(index)
        result.append(copy)
    return result


def conditions_of(endpoint):
    c = endpoint.conditions
    return (c.ready, c.serving, c.terminating)


# =========================================================================== endpoints
@pytest.mark.parametrize(
    ("ready", "deleting", "publish", "expected"),
    [
        (True, False, False, (True, True, False)),
        (False, False, False, (False, False, False)),
        (True, True, False, (False, True, True)),  # terminating: never ready, still serving
        (False, True, False, (False, False, True)),
        (False, False, True, (True, False, False)),  # publishNotReadyAddresses: always ready
        (True, True, True, (True, True, True)),
    ],
)
def test_endpoint_conditions(ready, deleting, publish, expected):
    endpoint = pod_to_endpoint(pod("p", ready=ready, deleting=deleting), NODES["n1"], service(publish=publish))
    assert conditions_of(endpoint) == expected


def test_endpoint_fields_and_which_pods_get_one():
    endpoint = pod_to_endpoint(pod("p"), NODES["n1"], service())
    assert (endpoint.addresses, endpoint.node_name, endpoint.zone) == (["10.0.0.1"], "n1", "z1")
    assert (endpoint.target_ref.kind, endpoint.target_ref.name, endpoint.target_ref.uid) == ("Pod", "p", "uid-p")
    assert pod_to_endpoint(pod("p", node="n2"), NODES["n2"], service()).zone is None
    dual = pod("d")
    dual.status.pod_ips = [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]
    assert pod_to_endpoint(dual, NODES["n1"], service()).addresses == ["10.0.0.7"]
    assert pod_to_endpoint(dual, NODES["n1"], service(), "IPv6").addresses == ["fd00::7"]
    assert should_pod_be_in_endpoints(pod("p")) and should_pod_be_in_endpoints(pod("p", ready=False, deleting=True))
    assert not should_pod_be_in_endpoints(pod("p", ip=""))
    assert not should_pod_be_in_endpoints(pod("p", phase="Succeeded")) and not should_pod_be_in_endpoints(pod("p", phase="Failed"))


def test_ports_resolve_numbers_and_names_by_protocol():
    named = pod("p", container_ports=[ContainerPort(name="http", container_port=8081, protocol="TCP"), ContainerPort(name="dns", container_port=53, protocol="UDP")])
    assert find_port(named, ServicePort(port=80, target_port="http", protocol="TCP")) == 8081
    assert find_port(named, ServicePort(port=53, target_port="dns", protocol="TCP")) is None
    assert find_port(named, ServicePort(port=80)) == 80  # unset targetPort is the port
    svc = service(ports=[ServicePort(port=80, name="web", target_port="http", protocol="TCP"), ServicePort(port=9, name="missing", target_port="nope", protocol="TCP")])
    [port] = endpoint_ports(svc, named)
    assert (port.name, port.port, port.protocol) == ("web", 8081, "TCP")


# =========================================================================== reconcile
def test_a_new_service_gets_one_slice_owned_and_labelled():
    svc = service(labels={"team": "a", LABEL_SERVICE_NAME: "spoof"})
    plan = reconcile(svc, [pod("a"), pod("b", ready=False), pod("c", ip="")], NODES, [])
    assert (len(plan.create), plan.update, plan.delete, plan.skipped) == (1, [], [], [])
    [slice_] = plan.create
    assert slice_.metadata.generate_name == "web-" and slice_.metadata.namespace == "default" and slice_.address_type == "IPv4"
    assert slice_.metadata.labels == {"team": "a", LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: CONTROLLER_NAME}
    [owner] = slice_.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == ("Service", "web", "svc-uid", True, True)
    assert [(p.name, p.port, p.protocol) for p in slice_.ports] == [("", 8080, "TCP")]
    assert [(e.target_ref.name, conditions_of(e)) for e in slice_.endpoints] == [("a", (True, True, False)), ("b", (False, False, False))]


def test_a_service_without_endpoints_keeps_one_placeholder():
    plan = reconcile(service(), [], NODES, [])
    [placeholder] = plan.create
    assert placeholder.endpoints == [] and placeholder.ports == []
    assert reconcile(service(), [], NODES, stored(plan.create)).empty()  # kept, not recreated
    # Pods appearing reuse the placeholder's name (create + delete become an update).
    plan = reconcile(service(), [pod("a")], NODES, stored(plan.create))
    assert plan.create == [] and plan.delete == [] and [s.metadata.name for s in plan.update] == ["web-1"]
    assert len(plan.update[0].endpoints) == 1 and plan.update[0].ports


def test_at_most_100_endpoints_per_slice():
    pods = [pod(f"p{i:03}", ip=f"10.0.{i // 250}.{i % 250}") for i in range(250)]
    plan = reconcile(service(), pods, NODES, [])
    assert sorted(len(s.endpoints) for s in plan.create) == [50, 100, 100]
    again = reconcile(service(), pods, NODES, stored(plan.create))
    assert again.empty()
    grown = reconcile(service(), pods + [pod("q", ip="10.9.9.9")], NODES, stored(plan.create))
    assert grown.create == [] and [len(s.endpoints) for s in grown.update] == [51]  # the closest to full that fits
    assert reconcile(service(), pods[:3], NODES, [], max_endpoints_per_slice=2).create[1].endpoints[0].target_ref.name == "p002"


def test_changes_are_made_in_place_and_empty_slices_deleted():
    first = stored(reconcile(service(), [pod("a"), pod("b")], NODES, []).create)
    plan = reconcile(service(), [pod("a", ready=False), pod("b")], NODES, first)
    assert plan.create == [] and plan.delete == [] and [s.metadata.name for s in plan.update] == ["web-1"]
    assert [conditions_of(e) for e in plan.update[0].endpoints] == [(False, False, False), (True, True, False)]
    assert reconcile(service(), [pod("a"), pod("b")], NODES, first).empty()
    gone = reconcile(service(), [pod("a")], NODES, first)
    assert [len(s.endpoints) for s in gone.update] == [1]
    two = stored(reconcile(service(), [pod("a"), pod("b"), pod("c")], NODES, [], max_endpoints_per_slice=2).create)
    emptied = reconcile(service(), [pod("c")], NODES, two, max_endpoints_per_slice=2)
    assert [s.metadata.name for s in emptied.delete] == ["web-1"] and emptied.update == []


def test_labels_follow_the_service_and_slices_of_an_older_service_go():
    first = stored(reconcile(service(), [pod("a")], NODES, []).create)
    relabelled = reconcile(service(labels={"tier": "front"}), [pod("a")], NODES, first)
    assert [s.metadata.labels["tier"] for s in relabelled.update] == ["front"]
    recreated = reconcile(service(uid="new-uid"), [pod("a")], NODES, first)
    assert len(recreated.create) == 1 and [s.metadata.name for s in recreated.delete] == ["web-1"]  # not paired: not owned


def test_pods_on_unknown_nodes_are_left_out_and_reported_and_ports_split_slices():
    plan = reconcile(service(), [pod("a"), pod("lost", node="nowhere")], NODES, [])
    assert plan.skipped == ["default/lost"] and [e.target_ref.name for e in plan.create[0].endpoints] == ["a"]
    assert reconcile(service(publish=True), [pod("lost", node="nowhere")], NODES, []).skipped == []
    named = ServicePort(port=80, target_port="http", protocol="TCP")
    pods = [pod("a", container_ports=[ContainerPort(name="http", container_port=8080)]), pod("b", container_ports=[ContainerPort(name="http", container_port=9090)])]
    split = reconcile(service(ports=[named]), pods, NODES, [])
    assert sorted(s.ports[0].port for s in split.create) == [8080, 9090]


def test_a_pending_deletion_service_creates_nothing():
    svc = service()
    svc.metadata.deletion_timestamp = timestamp(1.0)
    assert reconcile(svc, [pod("a")], NODES, []).create == []


# =========================================================================== pod changes and the tracker
def test_which_services_a_pod_change_touches():
    def services_of(namespace, labels):
        return {name for name, selector in (("default/web", {"app": "web"}), ("default/all", {"tier": "x"})) if all(labels.get(k) == v for k, v in selector.items())}

    old, new = pod("a"), pod("a")
    new.metadata.resource_version = "2"
    assert services_for_pod_change(services_of, None, old) == {"default/web"}
    assert services_for_pod_change(services_of, old, pod("a")) == set()  # same version: a resync
    assert services_for_pod_change(services_of, old, new) == set()  # nothing an endpoint shows
    new.status.conditions[0].status = "False"
    assert services_for_pod_change(services_of, old, new) == {"default/web"}
    moved = pod("a")
    moved.metadata.resource_version = "3"
    moved.metadata.labels = {"tier": "x"}
    assert services_for_pod_change(services_of, old, moved) == {"default/web", "default/all"}


def test_the_tracker_detects_a_cache_older_than_our_writes():
    tracker = SliceTracker()
    svc = service()
    [written] = stored(reconcile(svc, [pod("a")], NODES, []).create)
    written.metadata.resource_version = "7"
    tracker.update(written)
    assert tracker.stale(svc, [])  # not seen yet
    older = stored([written])[0]
    older.metadata.resource_version = "6"
    assert tracker.stale(svc, [older]) and not tracker.stale(svc, [written])
    assert not tracker.should_sync(written)
    newer = stored([written])[0]
    newer.metadata.resource_version = "9"
    assert tracker.should_sync(newer)  # someone else changed it
    tracker.expect_deletion(written)
    assert tracker.stale(svc, [written]) and not tracker.stale(svc, [])
    assert tracker.handle_deletion(written) and not tracker.has(written)
    tracker.update(written)
    assert not tracker.handle_deletion(written)  # an unexpected deletion
    tracker.update(written)
    assert not tracker.stale(service(uid="recreated"), [])  # a new Service forgets the old writes


# =========================================================================== scenario
def controller(config=ControllerManagerConfig()):
    async def main(process):
        client = ApiClient(process, SERVERS, user_credentials("system:kube-controller-manager"))
        factory = SharedInformerFactory(client)
        endpoint_slices = EndpointSliceController(process, client, factory, config)
        factory.start()
        await endpoint_slices.run()

    return main


async def slices_when(world, client, predicate, within_s=10.0):
    deadline = world.now + within_s
    while True:
        items = [s for s in (await client.list("endpointslices", "default")).items if s.metadata.labels.get(LABEL_SERVICE_NAME) == "web"]
        if predicate(items) or world.now > deadline:
            assert predicate(items), items
            return items
        await world.sleep(0.2)


def by_pod(slices):
    return {e.target_ref.name: (conditions_of(e), e.node_name, e.zone) for s in slices for e in s.endpoints}


async def set_ready(client, name, ready):
    current = await client.get("pods", "default", name)
    current.status.phase = "Running"
    current.status.pod_ip = f"10.0.0.{ord(name[0])}"
    current.status.conditions = [PodCondition(type="Ready", status="True" if ready else "False")]
    await client.update_status(current)


def test_slices_follow_pod_readiness_termination_and_their_service():
    outcome = {}

    async def story(world, caller, registry):
        client = ApiClient(world.processes["client"], SERVERS, admin_credentials())
        await client.create(from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}}}))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": SELECTOR, "ports": [{"port": 80, "targetPort": 8080}]}}))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "external", "namespace": "default"}, "spec": {"ports": [{"port": 80}]}}))
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        outcome["placeholder"] = await slices_when(world, client, lambda s: len(s) == 1)
        for name, ready in (("a", True), ("b", False)):
            await client.create(from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": SELECTOR}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "app"}]}}))
            await set_ready(client, name, ready)
        outcome["two"] = by_pod(await slices_when(world, client, lambda s: len(by_pod(s)) == 2))
        await set_ready(client, "b", True)
        outcome["both_ready"] = by_pod(await slices_when(world, client, lambda s: all(c[0][0] for c in by_pod(s).values()) and len(by_pod(s)) == 2))
        await client.delete("pods", "default", "a")  # graceful: its kubelet would finish it
        outcome["terminating"] = by_pod(await slices_when(world, client, lambda s: by_pod(s).get("a", ((None,) * 3,))[0][2] is True))
        outcome["slice_names"] = sorted(s.metadata.name for s in await slices_when(world, client, lambda s: True))
        await client.delete("services", "default", "web")
        outcome["after_service"] = await slices_when(world, client, lambda s: s == [])
        outcome["all"] = [s.metadata.labels.get(LABEL_SERVICE_NAME) for s in (await client.list("endpointslices", "default")).items]

    world, _ = run_api(story, seed=6)
    [placeholder] = outcome["placeholder"]
    assert placeholder.endpoints == [] and placeholder.metadata.name.startswith("web-")
    assert outcome["two"] == {"a": ((True, True, False), "n1", "z1"), "b": ((False, False, False), "n1", "z1")}
    assert outcome["both_ready"]["b"][0] == (True, True, False)
    assert outcome["terminating"]["a"][0] == (False, True, True) and outcome["terminating"]["b"][0] == (True, True, False)
    assert outcome["slice_names"] == [placeholder.metadata.name]  # the placeholder's name was reused
    # no slices for the selector-less Service either; the one left is the API servers' own
    # (the default/kubernetes Service's, written by their endpoint reconciler)
    assert outcome["all"] == ["kubernetes"]
    syncs = world.journal.of_type("endpointslice-sync")
    assert syncs and syncs[-1]["deleted"] == 1

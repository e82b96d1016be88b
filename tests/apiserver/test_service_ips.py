"""Service ClusterIPs (the bitmap allocator in etcd, its repair loop) and the
``default/kubernetes`` Service with its Endpoints and EndpointSlice kept by the API
servers' lease endpoint reconciler."""

from __future__ import annotations

import random

import trio

from chaoskube.api import from_dict
from chaoskube.apiserver.ipallocator import Bitmap, pick, static_size
from tests.apiserver.apiserver_harness import run_api


def service(name: str, **spec) -> object:
    return from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"ports": [{"port": 80}], "selector": {"app": name}, **spec}})


def test_the_static_band_and_the_draw_as_upstream():
    # calculateRangeOffset (ipallocator.go): none below 16 addresses, size/16 clamped to [16, 256]
    assert [static_size(size) for size in (6, 15, 16, 254, 4094, 65534, 1048574)] == [0, 0, 16, 16, 255, 256, 256]
    bitmap = Bitmap("10.96.0.0/12")
    assert (bitmap.size, bitmap.ip(0), bitmap.offset("10.96.0.1"), bitmap.offset("10.96.0.0"), bitmap.offset("10.112.0.0")) == (1048574, "10.96.0.1", 0, None, None)
    rng = random.Random(7)
    drawn = [pick(bitmap, rng) for _ in range(50)]
    assert all(offset >= 256 for offset in drawn)  # the dynamic band first
    small = Bitmap("10.0.0.0/28")  # 14 addresses: no static band
    taken = []
    while (offset := pick(small, rng)) is not None:
        small.set(offset, True)
        taken.append(offset)
    assert sorted(taken) == list(range(14))
    assert Bitmap.decode(small.encode()).bits == small.bits


def test_cluster_ips_are_allocated_once_released_and_repaired():
    async def story(world, api, registry):
        first = await api.eventually("get", "services", lambda r: r.ok, namespace="default", name="kubernetes", within_s=30.0)
        answers = {}

        async def create(name: str, server: str, **spec) -> None:
            answers[name] = await api("create", "services", namespace="default", body=service(name, **spec), server=server)

        async with trio.open_nursery() as nursery:  # both replicas at once: one range, no twice-given address
            for index in range(10):
                nursery.start_soon(create, f"s{index}", f"kube-apiserver-{index % 2 + 1}")
        answers["asked"] = await api("create", "services", namespace="default", body=service("asked", clusterIP="10.96.0.20"))
        answers["taken"] = await api("create", "services", namespace="default", body=service("taken", clusterIP="10.96.0.20"))
        answers["outside"] = await api("create", "services", namespace="default", body=service("outside", clusterIP="10.0.0.1"))
        answers["headless"] = await api("create", "services", namespace="default", body=service("headless", clusterIP="None"))
        answers["external"] = await api("create", "services", namespace="default", body=from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "external"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}))
        changed = await api("get", "services", namespace="default", name="asked")
        changed.object.spec.cluster_ip = "10.96.0.21"
        changed.object.spec.cluster_ips = ["10.96.0.21"]
        answers["change"] = await api("update", "services", namespace="default", name="asked", body=changed.object)
        kept = await api("get", "services", namespace="default", name="asked")
        kept.object.spec.cluster_ip, kept.object.spec.cluster_ips = "", []
        answers["kept"] = await api("update", "services", namespace="default", name="asked", body=kept.object)
        await api("delete", "services", namespace="default", name="asked")
        answers["again"] = await api("create", "services", namespace="default", body=service("again", clusterIP="10.96.0.20"))
        # a leak: an address marked with no Service (a crash between the two writes) is
        # released by the third repair that sees it (3 minutes apart)
        allocator = registry["kube-apiserver-1"].service_ips
        leaked = await allocator.allocate("10.96.0.30", "ghost")
        await api.process.sleep(3 * 180 + 30)
        answers["after-repair"] = await api("create", "services", namespace="default", body=service("after", clusterIP=leaked))
        return first, answers

    world, (first, answers) = run_api(story, servers=2)
    assert first.object.spec.cluster_ip == "10.96.0.1" and first.object.spec.ports[0].port == 443
    ips = [answers[f"s{index}"].object.spec.cluster_ip for index in range(10)]
    assert all(answers[f"s{index}"].code == 201 for index in range(10))
    assert len(set(ips)) == 10 and all(ip.startswith("10.") for ip in ips)
    assert answers["asked"].object.spec.cluster_ips == ["10.96.0.20"] and answers["asked"].object.spec.ip_family_policy == "SingleStack"
    assert answers["taken"].code == 422 and "failed to allocate IP 10.96.0.20: provided IP is already allocated" in answers["taken"].status.message
    assert answers["outside"].code == 422 and "is not in the valid range. The range of valid IPs is 10.96.0.0/12" in answers["outside"].status.message
    assert answers["headless"].object.spec.cluster_ip == "None" and answers["headless"].object.spec.cluster_ips == ["None"]
    assert answers["external"].code == 201 and answers["external"].object.spec.cluster_ip == ""
    assert answers["change"].code == 422 and "may not change once set" in answers["change"].status.message
    assert answers["kept"].ok and answers["kept"].object.spec.cluster_ip == "10.96.0.20"
    assert answers["again"].code == 201  # the delete released it
    assert answers["after-repair"].code == 201, answers["after-repair"].status
    repairs = world.journal.of_type("service-ip-repair")
    assert any("10.96.0.30" in event["leaked"] for event in repairs) and any("10.96.0.30" in event["released"] for event in repairs)


def test_the_kubernetes_endpoints_follow_the_live_api_servers():
    async def story(world, api, registry):
        def addresses(response):
            return [endpoint.addresses[0] for endpoint in response.object.endpoints] if response.ok else None

        both = await api.eventually("get", "endpointslices", lambda r: addresses(r) == ["172.18.0.11", "172.18.0.12"], namespace="default", name="kubernetes", within_s=30.0)
        world.process("kube-apiserver-2").kill()
        one = await api.eventually("get", "endpointslices", lambda r: addresses(r) == ["172.18.0.11"], namespace="default", name="kubernetes", within_s=40.0)
        endpoints = await api("get", "endpoints", namespace="default", name="kubernetes")
        return addresses(both), addresses(one), endpoints.object

    _, (both, one, endpoints) = run_api(story, servers=2)
    assert both == ["172.18.0.11", "172.18.0.12"] and one == ["172.18.0.11"]
    assert endpoints.subsets[0].addresses == [{"ip": "172.18.0.11"}] and endpoints.subsets[0].ports == [{"name": "https", "port": 6443, "protocol": "TCP"}]

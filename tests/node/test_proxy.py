"""kube-proxy: the pure rule table (ready endpoints, the serving-terminating fallback,
internalTrafficPolicy Local, slices and ports as kube-proxy reads them), the iptables
pick, and a traffic probe through a live proxy against a kubelet's pod, with
EndpointSlices written by an administrator (the endpointslice controller is not here)."""

import random as stdlib_random
from collections import Counter

import pytest

from chaoskube.api.identity import node_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.client.client import ApiClient
from chaoskube.node.proxy import EndpointRule, KubeProxy, TrafficProbe, compute_rules, pick_endpoint, usable_endpoints
from tests.apiserver.apiserver_harness import run_api
from tests.node import API_SERVERS, admin, condition, events, kubelet_process, node_spec, pod_manifest

# -- the rule table ----------------------------------------------------------------------------


def service(name, *ports, namespace="default", **spec):
    return from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace}, "spec": {"ports": list(ports) or [{"port": 80}], **spec}})


def endpoint(ip, node="node-1", **conditions):
    return {"addresses": [ip], "nodeName": node, "conditions": conditions}


def endpoint_slice(name, service_name, endpoints, ports=None, namespace="default"):
    return from_dict({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kubernetes.io/service-name": service_name}},
        "endpoints": endpoints, "ports": ports if ports is not None else [{"name": "", "port": 8080, "protocol": "TCP"}],
    })


def addresses(table, key=("default/web", "")):
    return [e.address for e in table[key].endpoints]


def test_ready_endpoints_are_used_sorted_and_unset_conditions_mean_ready():
    slices = [endpoint_slice("web-a", "web", [endpoint("10.244.1.3", ready=True), endpoint("10.244.1.2"), endpoint("10.244.2.9", ready=False)])]
    table = compute_rules([service("web")], slices, "node-1")
    assert addresses(table) == ["10.244.1.2:8080", "10.244.1.3:8080"]
    rule = table[("default/web", "")]
    assert (rule.port, rule.protocol) == (80, "TCP")


@pytest.mark.parametrize(
    "conditions, expected",
    [
        ([{"ready": True}, {"ready": False, "serving": True, "terminating": True}], ["10.0.0.1:8080"]),  # ready ones win
        ([{"ready": False, "serving": True, "terminating": True}, {"ready": False, "serving": False, "terminating": True}], ["10.0.0.1:8080"]),  # fallback
        ([{"ready": False, "serving": True, "terminating": False}], []),  # serving but not terminating: not a fallback
        ([{"ready": False, "serving": False, "terminating": True}], []),
        ([], []),
    ],
)
def test_serving_terminating_endpoints_are_the_fallback_only_without_ready_ones(conditions, expected):
    slices = [endpoint_slice("web-a", "web", [endpoint(f"10.0.0.{i + 1}", **c) for i, c in enumerate(conditions)])]
    assert addresses(compute_rules([service("web")], slices, "node-1")) == expected


def test_local_traffic_policy_uses_only_this_nodes_endpoints_with_the_same_fallback():
    slices = [endpoint_slice("web-a", "web", [
        endpoint("10.0.0.1", node="node-1", ready=False, serving=True, terminating=True),
        endpoint("10.0.0.2", node="node-2", ready=True),
    ])]
    local = service("web", internalTrafficPolicy="Local")
    assert addresses(compute_rules([local], slices, "node-1")) == ["10.0.0.1:8080"]
    assert addresses(compute_rules([local], slices, "node-2")) == ["10.0.0.2:8080"]
    assert addresses(compute_rules([local], slices, "node-3")) == []
    assert addresses(compute_rules([service("web")], slices, "node-1")) == ["10.0.0.2:8080"]


def test_slices_are_matched_by_service_label_port_name_and_protocol_and_deduplicated():
    ports = [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}, {"port": 9}]
    slices = [
        endpoint_slice("web-a", "web", [endpoint("10.0.0.1")], ports),
        endpoint_slice("web-b", "web", [endpoint("10.0.0.1"), endpoint("10.0.0.2")], ports),
        endpoint_slice("other", "other", [endpoint("10.0.0.9")], ports),
        endpoint_slice("elsewhere", "web", [endpoint("10.0.0.8")], ports, namespace="prod"),
    ]
    web = service("web", {"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "metrics", "port": 9100})
    table = compute_rules([web], slices, "node-1")
    assert list(table) == [("default/web", "dns"), ("default/web", "http"), ("default/web", "metrics")]
    assert addresses(table, ("default/web", "http")) == ["10.0.0.1:8080", "10.0.0.2:8080"]
    assert addresses(table, ("default/web", "dns")) == ["10.0.0.1:53", "10.0.0.2:53"]
    assert addresses(table, ("default/web", "metrics")) == []  # no slice port of that name


def test_headless_and_external_name_services_get_no_rules():
    slices = [endpoint_slice("web-a", "web", [endpoint("10.0.0.1")])]
    headless = service("web", clusterIP="None")
    external = from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"type": "ExternalName", "externalName": "example.com"}})
    assert compute_rules([headless], slices, "node-1") == {}
    assert compute_rules([external], slices, "node-1") == {}


def test_usable_endpoints_oracle_against_a_direct_reading_of_categorize_endpoints():
    rng = stdlib_random.Random(11)
    for _ in range(300):
        endpoints = [
            EndpointRule(ip=f"10.0.0.{i}", port=80, node=rng.choice(["node-1", "node-2"]), ready=rng.random() < 0.4, serving=rng.random() < 0.6, terminating=rng.random() < 0.5)
            for i in range(rng.randrange(0, 6))
        ]
        local_only = rng.random() < 0.5
        pool = [e for e in endpoints if not local_only or e.node == "node-1"]
        expected = [e for e in pool if e.ready] or [e for e in pool if e.serving and e.terminating]
        assert list(usable_endpoints(endpoints, node="node-1", local_only=local_only)) == expected


def test_pick_endpoint_is_the_iptables_chain_and_uniform():
    chain = tuple(EndpointRule(ip=f"10.0.0.{i}", port=80) for i in range(4))
    assert pick_endpoint(chain, lambda: 0.0) == chain[0]
    assert pick_endpoint(chain, lambda: 0.999) == chain[-1]
    draws = iter([0.9, 0.9, 0.4])  # 1/4, then 1/3, then 1/2: the third takes it
    assert pick_endpoint(chain, lambda: next(draws)) == chain[2]
    rng = stdlib_random.Random(5)
    counts = Counter(pick_endpoint(chain, rng.random).ip for _ in range(20_000))
    assert all(abs(count / 20_000 - 0.25) < 0.015 for count in counts.values()), counts


# -- a live proxy and a traffic probe ----------------------------------------------------------

NODE = "node-1"


def set_conditions(endpoint_slice_, *, ready, serving, terminating):
    conditions = endpoint_slice_.endpoints[0].conditions
    conditions.ready, conditions.serving, conditions.terminating = ready, serving, terminating


def test_traffic_fails_only_while_no_ready_endpoint_exists():
    kubelets = {}
    box = {}

    async def proxy_main(process):
        client = ApiClient(process, API_SERVERS, node_credentials(NODE))
        proxy = box["proxy"] = KubeProxy(process, client, NODE)
        box["probe"] = TrafficProbe(process, proxy, "default/web", 80)
        box["hung"] = TrafficProbe(process, proxy, "default/hung", 80)
        process.start_soon(box["probe"].run)
        process.start_soon(box["hung"].run)
        await proxy.run()

    async def story(world, caller, _servers):
        client = admin(caller.process)
        await client.create(service("web", {"port": 80, "targetPort": 8080}))
        await client.create(service("hung", {"port": 80, "targetPort": 8080}))
        await client.create(pod_manifest("web", NODE))
        await client.create(pod_manifest("hung", NODE, annotations={"chaoskube.io/fail-liveness-after": "0s"}))
        pods = {}
        while len(pods) < 2:
            for name in ("web", "hung"):
                pod = await client.get("pods", "default", name)
                if condition(pod, "Ready") is not None and condition(pod, "Ready").status == "True":
                    pods[name] = pod
            await world.sleep(0.5)
        marks = {"ready": world.now}
        await client.create(endpoint_slice("hung-1", "hung", [endpoint(pods["hung"].status.pod_ip, ready=True)]))
        web = await client.create(endpoint_slice("web-1", "web", [endpoint(pods["web"].status.pod_ip, ready=True)]))
        await world.sleep(10)
        marks["terminating"] = world.now  # the pod is going away but still serves: the fallback keeps it
        set_conditions(web, ready=False, serving=True, terminating=True)
        web = await client.update(web)
        await world.sleep(10)
        marks["none"] = world.now
        set_conditions(web, ready=False, serving=False, terminating=True)
        web = await client.update(web)
        await world.sleep(10)
        marks["back"] = world.now
        set_conditions(web, ready=True, serving=True, terminating=False)
        web = await client.update(web)
        await world.sleep(10)
        marks["node-down"] = world.now
        world.process(NODE).kill()
        await world.sleep(5)
        marks["end"] = world.now
        return marks, pods["web"].status.pod_ip

    world, (marks, web_ip) = run_api(story, processes=[(NODE, kubelet_process(node_spec(NODE), kubelets)), ("kube-proxy", proxy_main)])
    traffic = events(world, "traffic", service="default/web")
    settle = 2.0  # watch delivery plus the proxy's 1 s minimum sync period

    def outcomes(start, end):
        return {e["outcome"] for e in traffic if start + settle <= e["t"] < end}

    assert outcomes(0, marks["ready"]) == {"no-endpoints"}
    assert outcomes(marks["ready"], marks["terminating"]) == {"ok"}
    assert outcomes(marks["terminating"], marks["none"]) == {"ok"}
    assert outcomes(marks["none"], marks["back"]) == {"no-endpoints"}
    assert outcomes(marks["back"], marks["node-down"]) == {"ok"}
    assert outcomes(marks["node-down"], marks["end"]) == {"refused"}
    assert all(e["endpoint"] == f"{web_ip}:8080" for e in traffic if e["outcome"] == "ok")
    assert {e["outcome"] for e in events(world, "traffic", service="default/hung") if marks["ready"] + settle < e["t"] < marks["node-down"]} == {"timeout"}
    rules = [e["endpoints"] for e in events(world, "proxy-rules", service="default/web")]
    assert rules == [[], [f"{web_ip}:8080"], [], [f"{web_ip}:8080"]]  # the terminating update changed nothing


def test_traffic_to_a_cluster_ip_is_routed_by_the_rule_of_that_address_and_port():
    kubelets = {}
    box = {}

    async def proxy_main(process):
        client = ApiClient(process, API_SERVERS, node_credentials(NODE))
        proxy = box["proxy"] = KubeProxy(process, client, NODE)
        await proxy.run()

    async def story(world, caller, _servers):
        client = admin(caller.process)
        created = await client.create(service("web", {"port": 80, "targetPort": 8080}))
        await client.create(pod_manifest("web", NODE))
        while True:
            pod = await client.get("pods", "default", "web")
            if condition(pod, "Ready") is not None and condition(pod, "Ready").status == "True":
                break
            await world.sleep(0.5)
        await client.create(endpoint_slice("web-1", "web", [endpoint(pod.status.pod_ip, ready=True)]))
        await world.sleep(3)
        ip = created.spec.cluster_ip
        outcomes = {
            "cluster ip": await TrafficProbe(caller.process, box["proxy"], ip, 80).probe_once(),
            "wrong port": await TrafficProbe(caller.process, box["proxy"], ip, 81).probe_once(),
            "no service": await TrafficProbe(caller.process, box["proxy"], "10.96.255.254", 80).probe_once(),
        }
        return ip, outcomes

    _, (ip, outcomes) = run_api(story, processes=[(NODE, kubelet_process(node_spec(NODE), kubelets)), ("kube-proxy", proxy_main)])
    assert ip.startswith("10.") and ip != "10.96.0.1"  # allocated from --service-cluster-ip-range
    assert outcomes == {"cluster ip": "ok", "wrong port": "timeout", "no service": "timeout"}

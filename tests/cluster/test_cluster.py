"""A whole cluster, story by story: etcd, API servers, leader-elected controller-managers and
schedulers, kubelets and kube-proxies, assembled by open_cluster from one spec."""

import pytest
import trio

from chaoskube.api.manifests import from_dict
from chaoskube.cluster import ClusterSpecError, load_cluster_spec
from chaoskube.node.kubelet import drain
from chaoskube.node.proxy import TrafficProbe
from tests.cluster.harness import deployment, pods_of, ready, ready_count, run_cluster, spec


def test_a_deployment_of_ten_spread_over_three_zones_converges():
    async def story(world, cluster, client):
        await client.create(deployment("web", 10, spread_zones=True))
        converged = await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 10), within_s=120)
        pods = await pods_of(client, "web")
        nodes = {node.metadata.name: node.metadata.labels["topology.kubernetes.io/zone"] for node in (await client.list("nodes")).items}
        return converged, world.now, sorted(nodes[pod.spec.node_name] for pod in pods)

    _, (converged, at, zones) = run_cluster(story, spec(nodes=6))
    assert converged, "10 ready replicas"
    assert sorted(zones.count(zone) for zone in set(zones)) == [3, 3, 4]


async def _equals(awaitable, value):
    return (await awaitable) == value


def test_a_rolling_update_keeps_max_unavailable_at_every_moment():
    async def story(world, cluster, client):
        await client.create(deployment("web", 6, max_unavailable=1, max_surge=1))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 6), within_s=120)
        observed = []

        async def observe():
            while True:
                observed.append(await ready_count(client, "web"))
                world.record("observed-ready", app="web", ready=observed[-1])
                await world.sleep(0.25)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(observe)
            await client.patch("deployments", "default", "web", {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.28", "resources": {"requests": {"cpu": "100m"}}}]}}}})

            async def rolled() -> bool:
                pods = await pods_of(client, "web")
                return len(pods) == 6 and all(p.spec.containers[0].image == "nginx:1.28" and ready(p) for p in pods)

            done = await cluster.wait_for(rolled, within_s=300)
            nursery.cancel_scope.cancel()
        return done, observed

    world, (done, observed) = run_cluster(story)
    assert done
    readiness = [event["ready"] for event in world.journal.events if event["type"] == "observed-ready"]
    assert readiness == observed and min(readiness) >= 5  # replicas - maxUnavailable, at every observation
    scales = [e for e in world.journal.events if e["type"] == "deployment-scale"]
    assert scales, "the rollout is in the journal"


def test_a_node_that_stops_renewing_goes_not_ready_is_tainted_and_its_pods_move_after_toleration():
    async def story(world, cluster, client):
        # No DoNotSchedule zone spread here: the dead node's zone would still count as a
        # domain with no pods and keep the replacement pending, as upstream does.
        await client.create(deployment("web", 3))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 3), within_s=120)
        victim = (await pods_of(client, "web"))[0].spec.node_name
        world.process(victim).kill()  # the kubelet stops: no lease, no status
        stopped_at = world.now

        async def node_unknown() -> bool:
            node = await client.get("nodes", "", victim)
            return any(c.type == "Ready" and c.status == "Unknown" for c in node.status.conditions)

        assert await cluster.wait_for(node_unknown, within_s=120, every_s=1.0)
        unknown_after = world.now - stopped_at
        node = await client.get("nodes", "", victim)
        taints = {(t.key, t.effect) for t in node.spec.taints}

        async def moved() -> bool:
            pods = await pods_of(client, "web")
            return sum(1 for p in pods if ready(p) and p.spec.node_name != victim) == 3

        assert await cluster.wait_for(moved, within_s=500, every_s=5.0)
        return victim, stopped_at, unknown_after, taints, world.now - stopped_at

    world, (victim, stopped_at, unknown_after, taints, moved_after) = run_cluster(story, spec(nodes=4))
    assert 40 <= unknown_after <= 40 + 5 + 10 + 2  # grace, monitor period, last renewal, polling
    assert ("node.kubernetes.io/unreachable", "NoSchedule") in taints  # with the condition
    added = {(e["taint"], e["effect"]) for e in world.journal.events if e["type"] == "node-taint" and e["node"] == victim and e.get("action") == "added"}
    assert ("node.kubernetes.io/unreachable", "NoExecute") in added  # through the zone's rate limiter
    evictions = [e for e in world.journal.events if e["type"] == "taint-eviction" and e["node"] == victim]
    assert evictions and all(e["t"] - stopped_at >= 40 + 300 - 1 for e in evictions)  # after tolerationSeconds 300
    assert moved_after < 40 + 300 + 120


def test_cutting_the_control_plane_off_from_every_node_does_not_evict_everything():
    from chaoskube.faults.grudge import complete

    async def story(world, cluster, client):
        await client.create(deployment("web", 6))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 6), within_s=120)
        before = sorted(p.metadata.uid for p in await pods_of(client, "web"))
        nodes = cluster.processes("node")
        rest = sorted(set(world.processes) - set(nodes))
        world.network.partition(complete([nodes, rest]))
        await world.sleep(420)  # beyond the grace (40 s) and tolerationSeconds (300 s)
        after = sorted(p.metadata.uid for p in await pods_of(client, "web"))
        world.network.heal()
        return before, after

    world, (before, after) = run_cluster(story, spec(nodes=3))
    assert after == before, "no pod was evicted"
    assert not [e for e in world.journal.events if e["type"] == "taint-eviction"]
    modes = [e for e in world.journal.events if e["type"] in ("zone-state", "node-disruption-mode")]
    assert any("FullDisruption" in str(e.get("state", "")) or "full" in str(e).lower() for e in modes), modes


def test_a_drain_stops_at_the_pdb_and_resumes_when_a_replacement_is_ready():
    async def story(world, cluster, client):
        await client.create(deployment("web", 4))
        await client.create(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 4), within_s=120)
        by_node = {}
        for pod in await pods_of(client, "web"):
            by_node.setdefault(pod.spec.node_name, []).append(pod.metadata.name)
        busiest = max(sorted(by_node), key=lambda node: len(by_node[node]))
        observed = []

        async def observe():
            while True:
                observed.append(await ready_count(client, "web"))
                await world.sleep(0.5)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(observe)
            result = await drain(client, busiest, timeout_s=600)
            nursery.cancel_scope.cancel()
        return busiest, by_node[busiest], result, observed

    world, (node, drained, result, observed) = run_cluster(story, spec(nodes=2, zones=("zone-a", "zone-b")))
    assert len(drained) >= 2, "the busiest node holds at least two replicas"
    assert sorted(result.evicted) == sorted(f"default/{name}" for name in drained)
    refusals = [e for e in world.journal.events if e["type"] == "eviction" and e.get("outcome") == "refused"]
    assert refusals, "the second eviction waited for the PDB"
    assert min(observed) >= 3  # never below the PDB's minimum (4 - maxUnavailable 1)


def test_a_service_probe_fails_only_while_no_ready_endpoint_exists():
    async def story(world, cluster, client):
        await client.create(deployment("web", 1))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}}))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 1), within_s=120)
        prober = world.process("node-1")
        probe = TrafficProbe(prober, cluster.proxies["node-1"], "default/web", 80, every_s=0.5)
        outcomes = []

        async def run_probe():
            while True:
                outcomes.append((world.now, await probe.probe_once()))
                await world.sleep(0.5)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_probe)
            await world.sleep(10)
            [pod] = await pods_of(client, "web")
            await client.delete("pods", "default", pod.metadata.name)
            deleted_at = world.now
            assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 1), within_s=120, every_s=0.5)
            replaced_at = world.now
            await world.sleep(10)
            nursery.cancel_scope.cancel()
        return outcomes, deleted_at, replaced_at

    world, (outcomes, deleted_at, replaced_at) = run_cluster(story)
    failures = [(t, o) for t, o in outcomes if o != "ok"]
    assert [o for t, o in outcomes if t < deleted_at] and all(o == "ok" for t, o in outcomes if t < deleted_at)
    assert failures, "the gap between the old pod and its replacement is seen"
    assert all(deleted_at <= t <= replaced_at + 2 for t, _ in failures)
    assert all(o == "ok" for t, o in outcomes if t > replaced_at + 2)


def test_cluster_specs_load_from_yaml_with_one_line_errors():
    loaded = load_cluster_spec("apiServers: 3\nnodeGroups:\n  - count: 6\n    zones: [a, b]\n    cpu: '8'\n", "spec.yaml")
    assert loaded.api_servers == 3 and [zone for _, zone, _ in loaded.nodes()] == ["a", "b"] * 3
    with pytest.raises(ClusterSpecError, match=r"^spec.yaml: Object contains unknown field `nodes`"):
        load_cluster_spec("nodes: 3\n", "spec.yaml")
    with pytest.raises(ClusterSpecError, match=r"^spec.yaml: `etcdMembers` must be at least 1, got 0"):
        load_cluster_spec("etcdMembers: 0\n", "spec.yaml")


def test_webhooks_from_the_spec_are_served_and_configured():
    from chaoskube.cluster import WebhookSpec

    async def story(world, cluster, client):
        async def configured() -> bool:
            try:
                return len((await client.list("mutatingwebhookconfigurations")).items) == 1
            except Exception:
                return False

        assert await cluster.wait_for(configured, within_s=30)
        await world.sleep(1)
        await client.create(deployment("web", 2))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "web"), 2), within_s=120)
        return [pod.metadata.labels for pod in await pods_of(client, "web")]

    cluster_spec = spec(nodes=2, webhooks=[WebhookSpec(name="stamp", type="mutating", behaviour="label-injector", label="team=platform", delay_s=0.2)])
    world, labels = run_cluster(story, cluster_spec)
    assert all(item.get("team") == "platform" for item in labels)
    assert [e["webhook"] for e in world.journal.events if e["type"] == "webhook-call"][:1] == ["stamp.chaoskube.io"]


def test_preemption_takes_the_victim_no_pdb_protects_and_taints_and_selectors_hold():
    async def story(world, cluster, client):
        for name, value in (("low", 100), ("high", 1000)):
            await client.create(from_dict({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}))
        await world.sleep(1)
        await client.create(deployment("protected", 1, cpu="600m", priority_class="low"))
        await client.create(deployment("plain", 1, cpu="600m", priority_class="low"))
        await client.create(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "protected", "namespace": "default"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "protected"}}}}))
        assert await cluster.wait_for(lambda: _all_ready(client, ("protected", "plain")), within_s=120)

        async def budget_settled() -> bool:
            pdb = await client.get("poddisruptionbudgets", "default", "protected")
            return pdb.status.observed_generation == pdb.metadata.generation and pdb.status.current_healthy == 1

        assert await cluster.wait_for(budget_settled, within_s=60)
        [protected] = await pods_of(client, "protected")
        [plain] = await pods_of(client, "plain")
        await client.create(deployment("urgent", 1, cpu="600m", priority_class="high"))
        assert await cluster.wait_for(lambda: _equals(ready_count(client, "urgent"), 1), within_s=180)
        [urgent] = await pods_of(client, "urgent")
        protected_after = await pods_of(client, "protected")
        return protected, plain, urgent, protected_after

    world, (protected, plain, urgent, protected_after) = run_cluster(story, spec(nodes=2, cpu="1", zones=("zone-a",)))
    assert urgent.spec.node_name == plain.spec.node_name, "the unprotected victim's node"
    assert [p.metadata.uid for p in protected_after] == [protected.metadata.uid], "the PDB-protected pod was spared"
    preempted = [e for e in world.journal.events if e["type"] == "preempted"]
    assert [e["pod"] for e in preempted] == [f"default/{plain.metadata.name}"]


async def _all_ready(client, apps):
    for app in apps:
        if await ready_count(client, app) != 1:
            return False
    return True


def test_taints_and_node_selectors_are_respected():
    from chaoskube.cluster import ClusterSpec, NodeGroup, Taint

    async def story(world, cluster, client):
        selected = deployment("selected", 2)
        selected.spec.template.spec.node_selector = {"disk": "ssd"}
        await client.create(selected)
        await client.create(deployment("anywhere", 4))
        assert await cluster.wait_for(lambda: _all_ready_n(client, {"selected": 2, "anywhere": 4}), within_s=120)
        nodes = {node.metadata.name: node for node in (await client.list("nodes")).items}
        return {app: [(p.spec.node_name, dict(nodes[p.spec.node_name].metadata.labels)) for p in await pods_of(client, app)] for app in ("selected", "anywhere")}

    cluster_spec = ClusterSpec(node_groups=[
        NodeGroup(prefix="plain", count=2),
        NodeGroup(prefix="ssd", count=2, labels={"disk": "ssd"}),
        NodeGroup(prefix="infra", count=1, taints=[Taint(key="dedicated", value="infra", effect="NoSchedule")]),
    ])
    world, placed = run_cluster(story, cluster_spec)
    assert all(labels.get("disk") == "ssd" for _, labels in placed["selected"])
    assert not [node for node, _ in placed["anywhere"] + placed["selected"] if node.startswith("infra")], "nobody tolerates the taint"


async def _all_ready_n(client, counts):
    for app, count in counts.items():
        if await ready_count(client, app) != count:
            return False
    return True

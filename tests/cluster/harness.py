"""A whole simulated cluster for scenario tests: ``run_cluster(story, spec, seed)``."""

from __future__ import annotations

import trio

from chaoskube.api.manifests import from_dict
from chaoskube.client.client import ApiError
from chaoskube.cluster import ClusterSpec, NodeGroup, open_cluster
from chaoskube.sim import World


async def idle(process):
    await trio.sleep_forever()


def spec(nodes=3, zones=("zone-a", "zone-b", "zone-c"), cpu="4", pods=110, **fields) -> ClusterSpec:
    return ClusterSpec(node_groups=[NodeGroup(count=nodes, zones=list(zones), cpu=cpu, pods=pods)], **fields)


def run_cluster(story, cluster_spec: ClusterSpec | None = None, *, seed: int = 1):
    """Run ``story(world, cluster, client)`` once every node is registered and Ready."""
    world = World(seed)
    cluster_spec = cluster_spec or spec()

    async def main(world):
        cluster = open_cluster(world, cluster_spec)
        client = cluster.client(world.spawn("admin", idle))
        expected = len(cluster_spec.nodes())

        async def nodes_ready() -> bool:
            try:
                listed = await client.list("nodes")
            except ApiError:
                return False
            ready = [n for n in listed.items if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)]
            return len(ready) == expected

        assert await cluster.wait_for(nodes_ready, within_s=60.0), "nodes did not register"
        return await story(world, cluster, client)

    return world, world.run(main)


def deployment(name, replicas, *, labels=None, max_unavailable=None, max_surge=None, spread_zones=False, priority_class="", cpu="100m", image="nginx:1.27"):
    labels = labels or {"app": name}
    spec = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}]}},
    }
    if max_unavailable is not None or max_surge is not None:
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {k: v for k, v in (("maxUnavailable", max_unavailable), ("maxSurge", max_surge)) if v is not None}}
    if spread_zones:
        spec["template"]["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": labels}}]
    if priority_class:
        spec["template"]["spec"]["priorityClassName"] = priority_class
    return from_dict({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def ready(pod) -> bool:
    return pod.metadata.deletion_timestamp is None and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


async def pods_of(client, app):
    return (await client.list("pods", "default", label_selector=f"app={app}")).items


async def ready_count(client, app) -> int:
    try:
        return sum(1 for pod in await pods_of(client, app) if ready(pod))
    except ApiError:
        return -1

"""Whole-cluster simulation speed: simulated seconds per wall second.

A 3-member etcd, 2 API servers, 2 controller-managers, 2 schedulers and ``--nodes`` nodes
in 3 zones with default timings; ``--pods`` pods as 10 Deployments, created at t = 10 s;
``--seconds`` simulated seconds in all. Prints the speed (target >= 30x, stretch >= 50x),
when every pod was Ready, and the peak memory. ``--scan`` doubles nodes and pods from
the given size until the run falls below 1x real time and prints the largest size that
kept up.

    python3 bench/cluster.py [--nodes 50] [--pods 500] [--seconds 600] [--seed 1] [--scan]
"""

from __future__ import annotations

import argparse
import resource
import time

import trio

from chaoskube.api.manifests import from_dict
from chaoskube.client.client import ApiError
from chaoskube.cluster import ClusterSpec, NodeGroup, open_cluster
from chaoskube.sim import World

DEPLOYMENTS = 10


def _deployment(index: int, replicas: int) -> object:
    labels = {"app": f"app-{index}"}
    return from_dict({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"app-{index}", "namespace": "default"},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}},
        },
    })


def run(nodes: int, pods: int, seconds: float, seed: int) -> dict[str, float]:
    spec = ClusterSpec(node_groups=[NodeGroup(count=nodes, cpu="16", memory="64Gi", pods=110)])
    world = World(seed)
    ready_at: list[float] = []

    async def main(world: World) -> None:
        cluster = open_cluster(world, spec)

        async def idle(process) -> None:
            await trio.sleep_forever()

        client = cluster.client(world.spawn("bench", idle))
        while True:
            try:
                await client.get("namespaces", "", "default")
                break
            except ApiError:
                await world.sleep(1.0)
        await world.sleep(max(0.0, 10.0 - world.now))
        per = [pods // DEPLOYMENTS + (1 if index < pods % DEPLOYMENTS else 0) for index in range(DEPLOYMENTS)]
        for index, replicas in enumerate(per):
            await client.create(_deployment(index, replicas))

        async def all_ready() -> bool:
            try:
                listed = await client.list("pods", "default", resource_version="0")
            except ApiError:
                return False
            ready = sum(1 for pod in listed.items if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions))
            return ready >= pods

        if await cluster.wait_for(all_ready, within_s=seconds - world.now, every_s=5.0):
            ready_at.append(world.now)
        await world.sleep(max(0.0, seconds - world.now))

    started = time.perf_counter()
    world.run(main)
    wall = time.perf_counter() - started
    return {"wall": wall, "speed": seconds / wall, "ready_at": ready_at[0] if ready_at else float("nan")}


def main() -> None:
    from loguru import logger

    logger.remove()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scan", action="store_true", help="double the size until the run is slower than real time")
    args = parser.parse_args()
    print(f"cluster benchmark: 3 etcd, 2 API servers, 2 controller-managers, 2 schedulers, {args.nodes} nodes in 3 zones, {args.pods} pods, {args.seconds:g} simulated s, seed {args.seed}")
    result = run(args.nodes, args.pods, args.seconds, args.seed)
    print(f"  speed          : {result['speed']:7.1f}x real time ({args.seconds:g} simulated s in {result['wall']:.1f} s wall; target >= 30x, stretch >= 50x)")
    print(f"  all pods ready : at {result['ready_at']:.1f} simulated s")
    print(f"  peak RSS       : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.scan:
        nodes, pods, largest = args.nodes, args.pods, None
        while True:
            nodes, pods = nodes * 2, pods * 2
            scan = run(nodes, pods, 120.0, args.seed)
            print(f"  scan           : {nodes} nodes, {pods} pods: {scan['speed']:.2f}x real time")
            if scan["speed"] < 1.0:
                break
            largest = (nodes, pods)
        print(f"  largest at >= 1x real time: {largest}")


if __name__ == "__main__":
    main()

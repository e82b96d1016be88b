"""API server write throughput: API writes per wall second through the full pipeline,
against raw etcd puts measured in the same run.

Both halves run a 3-member simulated etcd and ``--clients`` concurrent writers, each doing
``--writes`` sequential writes:

- baseline: raw etcd puts (``EtcdClient.request(PutRequest)``, a 1 KiB value);
- API: pod creates through one API server — authentication, RBAC (system:masters),
  built-in mutating admission, one mutating webhook (adds a label by JSON patch), schema
  validation, built-in validating admission, one validating webhook, and the etcd
  transaction guarded by the key's revision — through :class:`chaoskube.client.client.ApiClient`.

Printed: writes per wall second for each, their ratio (API / raw etcd; 1.0 would mean the
pipeline costs nothing on top of etcd), and the simulated latency per write.

    python3 bench/api.py [--clients 10] [--writes 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import trio

from chaoskube.api.identity import admin_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.apiserver.server import ApiServerConfig, spawn_api_servers
from chaoskube.apiserver.webhooks import allow, label_injector, webhook_server
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.etcd.client import EtcdClient
from chaoskube.etcd.requests import PutRequest
from chaoskube.etcd.server import EtcdConfig, spawn_cluster
from chaoskube.sim import World

VALUE = "x" * 1024


def _configuration(kind: str, name: str, service: str) -> object:
    return from_dict({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
        "webhooks": [{
            "name": f"{name}.bench.example.com",
            "clientConfig": {"service": {"namespace": "bench", "name": service, "path": "/"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
        }],
    })


def _pod(name: str) -> object:
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})


async def _idle(process) -> None:
    await trio.sleep_forever()


async def _concurrently(writer, clients: int) -> None:
    async with trio.open_nursery() as nursery:
        for index in range(clients):
            nursery.start_soon(writer, index)


def _timed(world: World, main) -> tuple[float, float]:
    """(wall seconds, what ``main`` returns: the simulated seconds of the writes)."""
    wall = time.perf_counter()
    simulated = world.run(main)
    return time.perf_counter() - wall, simulated


def raw_etcd(seed: int, clients: int, writes: int) -> tuple[float, float]:
    """(wall seconds, simulated seconds) for clients × writes raw etcd puts."""
    world = World(seed)

    async def main(world: World) -> float:
        config = EtcdConfig()
        spawn_cluster(world, config)
        await world.sleep(3.0)  # a leader
        started = world.now

        async def writer(index: int) -> None:
            client = EtcdClient(world.spawn(f"writer-{index}", _idle), config.names)
            for n in range(writes):
                result = await client.request(PutRequest(f"/bench/{index}/{n}", VALUE), idempotent=False)
                assert result.ok, result

        await _concurrently(writer, clients)
        return world.now - started

    return _timed(world, main)


def api_writes(seed: int, clients: int, writes: int) -> tuple[float, float]:
    """(wall seconds, simulated seconds) for clients × writes pod creates via the API."""
    world = World(seed)

    async def main(world: World) -> float:
        config = EtcdConfig()
        spawn_cluster(world, config)
        spawn_api_servers(world, ApiServerConfig(etcd_endpoints=tuple(config.names)), ["kube-apiserver-1"])
        world.spawn("inject.bench.svc", webhook_server(label_injector("bench", "yes")))
        world.spawn("check.bench.svc", webhook_server(allow()))
        admin = ApiClient(world.spawn("admin", _idle), ["kube-apiserver-1"], admin_credentials())
        while True:  # until the server has bootstrapped
            try:
                await admin.get("namespaces", "", "default")
                break
            except ApiError:
                await world.sleep(0.5)
        await admin.create(from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}}))
        await admin.create(_configuration("MutatingWebhookConfiguration", "inject", "inject"))
        await admin.create(_configuration("ValidatingWebhookConfiguration", "check", "check"))
        await world.sleep(2.0)  # the watch cache has them
        started = world.now

        async def writer(index: int) -> None:
            client = ApiClient(world.spawn(f"writer-{index}", _idle), ["kube-apiserver-1"], admin_credentials())
            for n in range(writes):
                created = await client.create(_pod(f"pod-{index}-{n}"))
                assert created.metadata.labels == {"bench": "yes"}, created.metadata

        await _concurrently(writer, clients)
        return world.now - started

    return _timed(world, main)


def main() -> None:
    from loguru import logger

    logger.remove()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--writes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    total = args.clients * args.writes
    print(f"API write benchmark: 3-member etcd, {args.clients} clients x {args.writes} writes = {total:,} writes, seed {args.seed}")
    etcd_wall, etcd_sim = raw_etcd(args.seed, args.clients, args.writes)
    api_wall, api_sim = api_writes(args.seed, args.clients, args.writes)
    etcd_rate, api_rate = total / etcd_wall, total / api_wall
    print(f"  raw etcd puts  : {etcd_rate:8.0f} writes/wall s  ({etcd_wall:6.2f} s wall; simulated {etcd_sim * 1000 / args.writes:6.2f} ms per write per client)")
    print(f"  API creates    : {api_rate:8.0f} writes/wall s  ({api_wall:6.2f} s wall; simulated {api_sim * 1000 / args.writes:6.2f} ms per write per client)")
    print(f"  ratio          : {api_rate / etcd_rate:8.3f} (API writes per raw etcd put, same run; pipeline = authn, RBAC, admission, 1 mutating + 1 validating webhook, validation, etcd txn)")


if __name__ == "__main__":
    main()

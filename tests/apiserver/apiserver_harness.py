"""A simulated cluster for API server scenario tests: a 3-member etcd, API server replicas
and a test process that sends raw protocol requests (the client library has its own tests)."""

from __future__ import annotations

from typing import Any

import trio

from chaoskube.api.identity import admin_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import API_PORT, Credentials, Request, Response
from chaoskube.apiserver.server import ApiServerConfig, spawn_api_servers
from chaoskube.etcd.server import EtcdConfig, spawn_cluster
from chaoskube.sim import Ok, World


async def idle(process):
    await trio.sleep_forever()


class Caller:
    """``await caller("get", "pods", namespace="default", name="web")`` -> Response."""

    def __init__(self, process, servers: list[str], credentials: Credentials | None = None) -> None:
        self.process = process
        self.servers = servers
        self.credentials = credentials or admin_credentials()
        self._ids = 0

    def as_(self, credentials: Credentials) -> Caller:
        return Caller(self.process, self.servers, credentials)

    async def __call__(self, verb: str, resource: str, *, server: str | None = None, timeout_s: float = 70.0, **fields: Any) -> Response:
        self._ids += 1
        request = Request(verb=verb, resource=resource, credentials=self.credentials, id=f"test/{self._ids}", **fields)
        outcome = await self.process.call(server or self.servers[0], request, port=API_PORT, timeout_s=timeout_s)
        assert isinstance(outcome, Ok), outcome
        return outcome.value

    async def eventually(self, verb: str, resource: str, predicate, *, within_s: float = 10.0, **fields: Any) -> Response:
        """Repeat a request every 0.1 s until ``predicate(response)`` (or fail)."""
        deadline = self.process.now() + within_s
        while True:
            response = await self(verb, resource, **fields)
            if predicate(response) or self.process.now() > deadline:
                assert predicate(response), response
                return response
            await self.process.sleep(0.1)


def run_api(story, *, seed: int = 1, servers: int = 1, config: ApiServerConfig | None = None, etcd: EtcdConfig | None = None, processes=()):
    """Run ``story(world, caller, registry)`` once the first API server has bootstrapped."""
    world = World(seed)

    async def main(world):
        etcd_config = etcd or EtcdConfig()
        spawn_cluster(world, etcd_config)
        names = [f"kube-apiserver-{index + 1}" for index in range(servers)]
        api_config = config or ApiServerConfig(etcd_endpoints=tuple(etcd_config.names))
        registry = spawn_api_servers(world, api_config, names)
        for name, process_main in processes:
            world.spawn(name, process_main)
        caller = Caller(world.spawn("client", idle), names)
        for name in names:
            await caller.eventually("get", "clusterrolebindings", lambda r: r.ok, name="system:kube-controller-manager", server=name, within_s=30.0)
        # What the controller-manager's serviceaccount controller would do: the ServiceAccount
        # admission plugin refuses pods in a namespace without its "default" account.
        account = from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}})
        assert (await caller("create", "serviceaccounts", namespace="default", body=account)).code == 201
        for name in names:
            await caller.eventually("get", "serviceaccounts", lambda r: r.ok, namespace="default", name="default", resource_version="0", server=name)
        return await story(world, caller, registry)

    return world, world.run(main)

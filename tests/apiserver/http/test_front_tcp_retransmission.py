"""The HTTPS front across a partition, as TCP carries a request: a real HTTP client (httpx,
no request timeout, as the kubernetes Python client in a kopf handler) whose client process
is cut from the replica gets its answer, late, once the partition heals -- the request and
the answer are retransmitted at TCP's backoff, not lost -- and its connection is closed
when the partition outlasts the bound (Linux gives up after tcp_retries2 = 15, ~924 s).
In virtual time, over memory streams (no TLS, no sockets)."""

from __future__ import annotations

from typing import Any

import httpcore
import httpx
import pytest
import trio
import trio.testing

from chaoskube.api.identity import ADMIN_TOKEN
from chaoskube.apiserver.http.front import ApiFront, FrontConfig
from chaoskube.sim.network import LinkProfile, tcp_backoff
from tests.apiserver.apiserver_harness import run_api

SERVER = "kube-apiserver-1"
CUT = {SERVER: {"outside"}, "outside": {SERVER}}


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: Any) -> None:
        self.stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            return await self.stream.receive_some(max_bytes)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.stream.send_all(buffer)

    async def aclose(self) -> None:
        await self.stream.aclose()


class _FrontBackend(httpcore.AsyncNetworkBackend):
    """httpx's connections, each one served by the front as the replica's listener would."""

    def __init__(self, front: ApiFront, nursery: trio.Nursery) -> None:
        self.front = front
        self.nursery = nursery

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        client, server = trio.testing.memory_stream_pair()
        self.nursery.start_soon(self.front.serve_stream, SERVER, server)
        return _Stream(client)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


def scenario(config: FrontConfig, partition_at_s: float, heal_after_s: float | None, reply_delay_s: float = 0.0):
    """A ConfigMap created through the front by httpx; the partition starts ``partition_at_s``
    after the request is sent and heals ``heal_after_s`` later (None: never)."""

    async def story(world, caller, registry):
        front = ApiFront(world, [SERVER], None, config)
        front.ensure_client("outside")
        if reply_delay_s:
            world.network.set_link(SERVER, "outside", LinkProfile(delay_s=reply_delay_s, jitter_s=0.0))
        result: dict[str, Any] = {}
        async with trio.open_nursery() as nursery:
            transport = httpx.AsyncHTTPTransport()
            transport._pool = httpcore.AsyncConnectionPool(network_backend=_FrontBackend(front, nursery))  # noqa: SLF001
            async with httpx.AsyncClient(transport=transport, base_url="http://kubernetes", timeout=None) as client:

                def cut(_: Any) -> None:
                    world.network.partition(CUT)

                if partition_at_s:
                    world.call_later(partition_at_s, cut)
                else:
                    cut(None)
                if heal_after_s is not None:
                    world.call_later(partition_at_s + heal_after_s, lambda _: world.network.heal())
                started = world.now
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "across"}, "data": {"a": "1"}}
                try:
                    response = await client.post("/api/v1/namespaces/default/configmaps", json=body, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
                    result["code"] = response.status_code
                except httpx.TransportError as error:
                    result["error"] = type(error).__name__
                result["elapsed_s"] = world.now - started
            nursery.cancel_scope.cancel()
        world.network.heal()
        result["stored"] = (await caller("get", "configmaps", namespace="default", name="across")).code
        return result

    return run_api(story)


def _events(world, kind):
    return [event for event in world.journal.events if event.get("type") == kind]


def test_a_request_across_a_short_partition_is_retransmitted_and_answered_after_the_heal():
    world, result = scenario(FrontConfig(), partition_at_s=0.0, heal_after_s=5.0)
    # retransmissions at 0.2, 0.6, 1.4, 3.0, 6.2 s: the one at 6.2 s gets through
    assert result["code"] == 201 and result["stored"] == 200, result
    assert 6.2 <= result["elapsed_s"] < 7.0, result
    retransmits = _events(world, "retransmit")
    assert [event["attempt"] for event in retransmits] == [1, 2, 3, 4, 5]
    assert [event["after_s"] for event in retransmits] == pytest.approx([0.2, 0.6, 1.4, 3.0, 6.2])
    (request,) = [event for event in _events(world, "http-request") if event["method"] == "POST"]
    assert request["code"] == 201 and request["outcome"] == "answered" and request["duration_s"] >= 6.2
    ops = [event["phase"] for event in _events(world, "api-op") if event.get("client") == "outside"]
    assert ops == ["invoke", "ok"]


def test_an_answer_cut_on_its_way_back_is_retransmitted_and_arrives_after_the_heal():
    # the answer takes 1 s on the wire; the partition starts while it is in flight
    world, result = scenario(FrontConfig(), partition_at_s=0.5, heal_after_s=5.0, reply_delay_s=1.0)
    assert result["code"] == 201 and result["stored"] == 200, result
    assert 5.5 <= result["elapsed_s"] < 10.0, result
    assert [event["src"] for event in _events(world, "retransmit")] and all(event["src"] == SERVER for event in _events(world, "retransmit"))
    assert not [event for event in _events(world, "drop") if event.get("dst") == "outside" and event.get("reason") == "partition"]


def test_a_partition_that_outlasts_the_bound_closes_the_connection():
    world, result = scenario(FrontConfig(stall_bound_s=40.0), partition_at_s=0.0, heal_after_s=None)
    assert "code" not in result and result["error"] in ("RemoteProtocolError", "ReadError"), result
    assert 40.0 <= result["elapsed_s"] < 41.0, result
    assert result["stored"] == 404  # never sent: it definitely did not happen
    assert max(event["after_s"] for event in _events(world, "retransmit")) <= 40.0
    (request,) = [event for event in _events(world, "http-request") if event["method"] == "POST"]
    assert request["outcome"] == "timed-out" and request["code"] == 0
    ops = [(event["phase"], event.get("reason")) for event in _events(world, "api-op") if event.get("client") == "outside"]
    assert ops == [("invoke", None), ("fail", "connection timed out")]


def test_the_backoff_is_linux_tcps():
    assert [tcp_backoff(attempt) for attempt in range(12)] == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 120.0, 120.0])
    assert sum(tcp_backoff(attempt) for attempt in range(16)) == pytest.approx(924.6)

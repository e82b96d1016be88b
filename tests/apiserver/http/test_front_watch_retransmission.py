"""A watch stream through the HTTPS front across a partition, as TCP carries it: a real HTTP
client (httpx, streaming ``?watch=1`` as client-go's reflector does) whose client process is
cut from the replica while objects change gets every event, in order, after the heal -- the
stream's bytes are held and retransmitted at TCP's backoff, not lost (no gap, no 410, no
re-list) -- and its connection is reset when the partition outlasts the bound (Linux gives
up after tcp_retries2 = 15, ~924 s). In virtual time, over memory streams."""

from __future__ import annotations

from typing import Any

import httpcore
import httpx
import orjson
import trio

from chaoskube.api.identity import ADMIN_TOKEN
from chaoskube.api.manifests import from_dict
from chaoskube.apiserver.http.front import ApiFront, FrontConfig
from tests.apiserver.apiserver_harness import run_api
from tests.apiserver.http.test_front_tcp_retransmission import CUT, SERVER, _FrontBackend

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def _configmap(name: str, value: str, resource_version: str = "") -> Any:
    metadata = {"name": name, "namespace": "default", **({"resourceVersion": resource_version} if resource_version else {})}
    return from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"v": value}})


def scenario(config: FrontConfig, heal_after_s: float | None, *, run_s: float = 60.0):
    """A watch of ConfigMaps through the front; 1 s in, the client process is cut from the
    replica; during the partition c1, c2, c3 are created, c1 updated and c2 deleted; the
    partition heals ``heal_after_s`` after it began (None: never); then c4 is created."""

    async def story(world, caller, registry):
        front = ApiFront(world, [SERVER], None, config)
        front.ensure_client("outside")
        created = await caller("create", "configmaps", namespace="default", body=_configmap("c0", "0"))
        since = created.object.metadata.resource_version
        result: dict[str, Any] = {"events": [], "error": None}
        async with trio.open_nursery() as nursery:
            transport = httpx.AsyncHTTPTransport()
            transport._pool = httpcore.AsyncConnectionPool(network_backend=_FrontBackend(front, nursery))  # noqa: SLF001
            async with httpx.AsyncClient(transport=transport, base_url="http://kubernetes", timeout=None) as client:

                async def watch() -> None:
                    try:
                        async with client.stream("GET", f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={since}", headers=AUTH) as response:
                            result["code"] = response.status_code
                            async for line in response.aiter_lines():
                                event = orjson.loads(line)
                                meta = event["object"].get("metadata", {})
                                result["events"].append((world.now, event["type"], meta.get("name", ""), meta.get("resourceVersion", "")))
                        result["ended_s"] = world.now
                    except httpx.TransportError as error:
                        if result.get("closing"):
                            return  # the test ends: the front's side of the stream closes
                        result["error"] = type(error).__name__
                        result["ended_s"] = world.now

                nursery.start_soon(watch)
                await trio.sleep(1.0)
                world.network.partition(CUT)
                result["cut_s"] = world.now
                await trio.sleep(1.0)
                c1 = await caller("create", "configmaps", namespace="default", body=_configmap("c1", "1"))
                await caller("create", "configmaps", namespace="default", body=_configmap("c2", "2"))
                await caller("create", "configmaps", namespace="default", body=_configmap("c3", "3"))
                await caller("update", "configmaps", namespace="default", name="c1", body=_configmap("c1", "1b", c1.object.metadata.resource_version))
                await caller("delete", "configmaps", namespace="default", name="c2")
                if heal_after_s is not None:
                    await trio.sleep(max(0.0, result["cut_s"] + heal_after_s - world.now))
                    world.network.heal()
                    result["healed_s"] = world.now
                    await caller("create", "configmaps", namespace="default", body=_configmap("c4", "4"))
                await trio.sleep(max(0.0, result["cut_s"] + run_s - world.now))
            result["closing"] = True
            nursery.cancel_scope.cancel()
        world.network.heal()
        return result

    return run_api(story)


def _events(world, kind):
    return [event for event in world.journal.events if event.get("type") == kind]


def test_watch_events_across_a_partition_arrive_after_the_heal_in_order():
    world, result = scenario(FrontConfig(), heal_after_s=20.0)
    assert result["code"] == 200 and result["error"] is None, result
    assert [(kind, name) for _, kind, name, _ in result["events"]] == [
        ("ADDED", "c1"), ("ADDED", "c2"), ("ADDED", "c3"), ("MODIFIED", "c1"), ("DELETED", "c2"), ("ADDED", "c4"),
    ], result
    versions = [int(version) for _, _, _, version in result["events"]]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    # held while cut, delivered by the first retransmission after the heal (TCP's backoff
    # from the first event cut, ~2 s after the cut: ... 12.6, 25.4 s), the stream still open
    arrivals = [at for at, *_ in result["events"]]
    assert all(result["healed_s"] <= at < result["healed_s"] + 10.0 for at in arrivals), (result["healed_s"], arrivals)
    assert "ended_s" not in result
    # one watch, never re-listed nor re-watched; no 410, no ERROR event
    watches = [event for event in _events(world, "http-request") if event.get("verb") == "watch"]
    assert len(watches) == 1 and watches[0]["code"] == 200, watches
    assert not [event for event in _events(world, "http-request") if event.get("verb") == "list"]
    (watch_id,) = {event["watch"] for event in _events(world, "watch-open") if event.get("outside")}
    retransmits = [event for event in _events(world, "retransmit") if event.get("stream") == watch_id]
    assert [event["attempt"] for event in retransmits] == list(range(1, len(retransmits) + 1)) and len(retransmits) >= 6
    assert all(event["src"] == SERVER and event["dst"] == "outside" for event in retransmits)
    assert not [event for event in _events(world, "drop") if event.get("dst") == "outside" and event.get("reason") == "partition"]
    assert not _events(world, "tcp-reset") and not _events(world, "watch-reset")
    received = [summary for event in _events(world, "watch-recv") if event.get("watch") == watch_id for summary in event["events"]]
    assert [summary[:2] for summary in received] == [["ADDED", "default/c1"], ["ADDED", "default/c2"], ["ADDED", "default/c3"], ["MODIFIED", "default/c1"], ["DELETED", "default/c2"], ["ADDED", "default/c4"]]


def test_a_partition_that_outlasts_the_bound_resets_the_watch_stream():
    world, result = scenario(FrontConfig(stall_bound_s=40.0), heal_after_s=None, run_s=60.0)
    assert result["code"] == 200 and result["events"] == [], result
    # the body never completes: the client sees the stream break (and would watch again)
    assert result["error"] in ("RemoteProtocolError", "ReadError"), result
    (reset,) = _events(world, "tcp-reset")
    assert reset["src"] == SERVER and reset["dst"] == "outside" and reset["after_s"] == 40.0 and reset["lost"] >= 1
    # the first event cut ~1 s after the partition began; reset 40 s later
    assert 41.0 <= result["ended_s"] - result["cut_s"] < 43.0, result
    assert max(event["after_s"] for event in _events(world, "retransmit") if event.get("stream") == reset["stream"]) <= 40.0
    (broken,) = _events(world, "watch-reset")
    assert broken["watch"] == reset["stream"] and broken["reason"] == "connection timed out"

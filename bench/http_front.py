"""The HTTPS front against the in-process client, in one live run.

A live cluster (3 etcd, 2 API servers, 1 controller-manager, 1 scheduler, 2 nodes; virtual
time paced to the wall clock) serves the front on loopback. The same requests go

- through the front: httpx over TLS with the admin's client certificate, from this
  process's own Trio loop in the main thread (a real client: TLS, HTTP/1.1, JSON);
- through the in-process client (:class:`chaoskube.client.client.ApiClient` of a process
  inside the World, run with ``trio.from_thread``): the baseline.

Measured, each sequentially (one request at a time), wall clock: GET of one pod, LIST of
100 and of 1,000 pods (pods bound to a node that does not exist, so no controller
touches them), CREATE of a pod; and WATCH fan-out: 100 watchers of the namespace, one
pod created, the time until every watcher has its ADDED event. Printed: requests per
second, p50 and p99 latency for each, and the front/in-process ratio. The front is
measured twice in the same run, the requests interleaved: in JSON, and in protobuf (``Accept`` and, for CREATE,
``Content-Type: application/vnd.kubernetes.protobuf``; the watch as length-prefixed
frames), with the protobuf/JSON ratios and the size of the 1,000-pod list in each.

    python3 bench/http_front.py [--requests 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec
import trio
import yaml

from chaoskube.apiserver.http import kubeproto
from chaoskube.api.identity import admin_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.client.client import ApiClient
from chaoskube.experiments.live import LiveOptions, default_experiment, run_live
from chaoskube.experiments.model import Phases
from chaoskube.experiments.systems.kubernetes import KubernetesSystem

CLUSTER = {"etcdMembers": 3, "apiServers": 2, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 2, "zones": ["zone-a", "zone-b"]}]}


def pod(name: str, namespace: str) -> Any:
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"bench": "1"}},
                      "spec": {"nodeName": "bench-nowhere", "containers": [{"name": "c", "image": "nginx"}]}})


def summary(name: str, latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return {"name": name, "rps": len(ordered) / sum(ordered), "p50_ms": statistics.median(ordered) * 1000, "p99_ms": p99 * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--watchers", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="bench-http-front-"))
    ready = threading.Event()
    holder: dict[str, Any] = {}
    experiment = msgspec.structs.replace(default_experiment(), name="bench", cluster=CLUSTER, phases=Phases(setup_s=60, warmup_s=0, faults_s=1e9, recovery_s=30, settle_s=0))

    def on_ready(handle: Any) -> None:
        holder["handle"] = handle
        ready.set()

    thread = threading.Thread(target=lambda: holder.setdefault("result", run_live(experiment, KubernetesSystem, args.seed, out, LiveOptions(port=0, on_ready=on_ready))), daemon=True)
    thread.start()
    assert ready.wait(120)
    handle = holder["handle"]
    token = handle._token  # noqa: SLF001 - the bench drives the world's loop
    names = handle.system.handle.api_server_names

    def in_world(fn: Any, *fn_args: Any) -> Any:
        return trio.from_thread.run(fn, *fn_args, trio_token=token)

    def spawn_client() -> ApiClient:
        process = handle.world.spawn("bench-client", lambda process: trio.sleep_forever(), role="bench")
        return ApiClient(process, names[:1], admin_credentials(), timeout_s=30.0)

    client = trio.from_thread.run_sync(spawn_client, trio_token=token)

    async def setup() -> None:
        await client.create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "small"}}))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "large"}}))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "writes"}}))  # CREATEs: the listed namespaces keep their size
        await handle.world.sleep(1.0)
        for index in range(100):
            await client.create(pod(f"p{index}", "small"))
        for index in range(1000):
            await client.create(pod(f"p{index}", "large"))

    in_world(setup)
    config = yaml.safe_load(handle.kubeconfig.read_text())
    url = config["clusters"][0]["cluster"]["server"]
    import base64

    workdir = Path(tempfile.mkdtemp(prefix="bench-certs-"))
    user = config["users"][0]["user"]
    (workdir / "ca.pem").write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
    (workdir / "cert.pem").write_bytes(base64.b64decode(user["client-certificate-data"]))
    (workdir / "key.pem").write_bytes(base64.b64decode(user["client-key-data"]))
    context = ssl.create_default_context(cafile=str(workdir / "ca.pem"))
    context.load_cert_chain(str(workdir / "cert.pem"), str(workdir / "key.pem"))

    results: list[tuple[dict[str, float], dict[str, float]]] = []
    n = args.requests

    sizes: dict[str, int] = {}

    async def front_ops() -> dict[bool, dict[str, list[float]]]:
        """The front's requests, in JSON and in protobuf, interleaved (one of each in turn, so
        both see the same cluster and the same machine load); answers decoded as a client
        would (orjson / the protobuf converter)."""
        times: dict[bool, dict[str, list[float]]] = {mode: {"get": [], "list100": [], "list1000": [], "create": []} for mode in (False, True)}

        def decoded(response: httpx.Response, protobuf: bool) -> Any:
            response.raise_for_status()
            return kubeproto.decode(response.content) if protobuf else response.json()

        async def timed(op: str, protobuf: bool, path: str, body: dict[str, Any] | None = None) -> Any:
            headers = {"Accept": kubeproto.PROTOBUF if protobuf else "application/json"}
            started = time.perf_counter()
            if body is None:
                response = await http.get(path, headers=headers)
            elif protobuf:
                response = await http.post(path, content=kubeproto.encode(body), headers={**headers, "Content-Type": kubeproto.PROTOBUF})
            else:
                response = await http.post(path, json=body, headers=headers)
            answer = decoded(response, protobuf)
            times[protobuf][op].append(time.perf_counter() - started)
            if op == "list1000":
                assert len(answer["items"]) == 1000
                sizes["protobuf" if protobuf else "json"] = len(response.content)
            return answer

        async with httpx.AsyncClient(base_url=url, verify=context, timeout=60) as http:
            for _ in range(n):
                for protobuf in (False, True):
                    await timed("get", protobuf, "/api/v1/namespaces/small/pods/p1")
            for _ in range(max(10, n // 4)):
                for protobuf in (False, True):
                    await timed("list100", protobuf, "/api/v1/namespaces/small/pods")
            for _ in range(max(5, n // 20)):
                for protobuf in (False, True):
                    await timed("list1000", protobuf, "/api/v1/namespaces/large/pods")
            for index in range(n):
                for protobuf in (False, True):
                    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{'pb' if protobuf else 'h'}{index}"}, "spec": {"nodeName": "bench-nowhere", "containers": [{"name": "c", "image": "nginx"}]}}
                    await timed("create", protobuf, "/api/v1/namespaces/writes/pods", body)
        return times

    async def front_fanout(watchers: int, protobuf: bool, round_: int = 0) -> float:
        got = trio.Event()
        seen = [0]
        namespace = f"fanout-front-{'pb' if protobuf else 'json'}-{round_}"
        event_class = kubeproto.message_class("meta.k8s.io/v1", "WatchEvent")

        def added(buffer: bytearray) -> bool:
            """Whether a whole protobuf frame of an ADDED event is in ``buffer`` (frames
            consumed)."""
            while len(buffer) >= 4:
                length = int.from_bytes(buffer[:4], "big")
                if len(buffer) < 4 + length:
                    return False
                event = event_class()
                event.ParseFromString(bytes(buffer[4:4 + length]))
                del buffer[:4 + length]
                if event.type == "ADDED" and kubeproto.decode(event.object.raw):
                    return True
            return False

        async def watch(http: httpx.AsyncClient, started: trio.Event) -> None:
            headers = {"Accept": f"{kubeproto.PROTOBUF};stream=watch"} if protobuf else {}
            async with http.stream("GET", f"/api/v1/namespaces/{namespace}/pods", params={"watch": "1", "resourceVersion": "0"}, headers=headers) as response:
                started.set()
                if protobuf:
                    buffer = bytearray()
                    async for chunk in response.aiter_bytes():
                        buffer += chunk
                        if added(buffer):
                            break
                else:
                    async for line in response.aiter_lines():
                        if '"ADDED"' in line:
                            break
                seen[0] += 1
                if seen[0] == watchers:
                    got.set()

        async with httpx.AsyncClient(base_url=url, verify=context, timeout=60, limits=httpx.Limits(max_connections=watchers + 10)) as http:
            (await http.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})).raise_for_status()
            await trio.sleep(1.0)
            async with trio.open_nursery() as nursery:
                for _ in range(watchers):
                    started = trio.Event()
                    nursery.start_soon(watch, http, started)
                    await started.wait()
                await trio.sleep(0.5)
                began = time.perf_counter()
                body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"nodeName": "bench-nowhere", "containers": [{"name": "c", "image": "nginx"}]}}
                (await http.post(f"/api/v1/namespaces/{namespace}/pods", json=body)).raise_for_status()
                await got.wait()
                return time.perf_counter() - began

    async def inproc_ops() -> dict[str, list[float]]:
        times: dict[str, list[float]] = {"get": [], "list100": [], "list1000": [], "create": []}
        for _ in range(n):
            started = time.perf_counter()
            await client.get("pods", "small", "p1")
            times["get"].append(time.perf_counter() - started)
        for _ in range(max(10, n // 4)):
            started = time.perf_counter()
            await client.list("pods", "small")
            times["list100"].append(time.perf_counter() - started)
        for _ in range(max(5, n // 20)):
            started = time.perf_counter()
            await client.list("pods", "large")
            times["list1000"].append(time.perf_counter() - started)
        for index in range(n):
            started = time.perf_counter()
            await client.create(pod(f"i{index}", "writes"))
            times["create"].append(time.perf_counter() - started)
        return times

    async def inproc_fanout(watchers: int) -> float:
        await client.create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fanout-inproc"}}))
        await handle.world.sleep(1.0)
        streams = [await client.watch("pods", "fanout-inproc", resource_version="0") for _ in range(watchers)]
        await handle.world.sleep(0.5)
        began = time.perf_counter()
        await client.create(pod("x", "fanout-inproc"))
        for stream in streams:
            while not any(event.type == "ADDED" for event in await stream.next()):
                pass
        took = time.perf_counter() - began
        for stream in streams:
            stream.stop()
        return took

    both = trio.run(front_ops)
    front, front_pb = both[False], both[True]
    inproc = in_world(inproc_ops)
    fans: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(3):  # interleaved rounds; the median of each
        for protobuf in (False, True):
            fans[protobuf].append(trio.run(front_fanout, args.watchers, protobuf, round_))
    front_fan, front_fan_pb = statistics.median(fans[False]), statistics.median(fans[True])
    inproc_fan = in_world(inproc_fanout, args.watchers)
    handle.stop()
    thread.join(120)
    print(f"live cluster, sequential requests; {n} GETs/CREATEs; front = HTTPS (httpx, TLS client cert), baseline = in-process ApiClient")
    print(f"{'operation':<12} {'front req/s':>12} {'p50 ms':>8} {'p99 ms':>8} | {'in-proc req/s':>13} {'p50 ms':>8} {'p99 ms':>8} | {'ratio (front/in-proc req/s)':>28}")
    for key in ("get", "list100", "list1000", "create"):
        a, b = summary(key, front[key]), summary(key, inproc[key])
        results.append((a, b))
        print(f"{key:<12} {a['rps']:>12.1f} {a['p50_ms']:>8.2f} {a['p99_ms']:>8.2f} | {b['rps']:>13.1f} {b['p50_ms']:>8.2f} {b['p99_ms']:>8.2f} | {a['rps'] / b['rps']:>28.2f}")
    print(f"watch fan-out to {args.watchers} watchers: front (JSON, median of 3) {front_fan * 1000:.1f} ms, in-process {inproc_fan * 1000:.1f} ms (ratio {front_fan / inproc_fan:.2f})")
    print()
    print("the front in protobuf beside JSON (same run, same objects; answers decoded by the client)")
    print(f"{'operation':<12} {'pb req/s':>10} {'p50 ms':>8} {'p99 ms':>8} | {'JSON req/s':>10} {'p50 ms':>8} {'p99 ms':>8} | {'ratio (pb/JSON req/s)':>22}")
    for key in ("get", "list100", "list1000", "create"):
        a, b = summary(key, front_pb[key]), summary(key, front[key])
        print(f"{key:<12} {a['rps']:>10.1f} {a['p50_ms']:>8.2f} {a['p99_ms']:>8.2f} | {b['rps']:>10.1f} {b['p50_ms']:>8.2f} {b['p99_ms']:>8.2f} | {a['rps'] / b['rps']:>22.2f}")
    print(f"LIST of 1,000 pods: {sizes['protobuf']:,} bytes in protobuf, {sizes['json']:,} in JSON (ratio {sizes['protobuf'] / sizes['json']:.2f})")
    print(f"watch fan-out to {args.watchers} watchers (median of 3): protobuf {front_fan_pb * 1000:.1f} ms, JSON {front_fan * 1000:.1f} ms (ratio {front_fan_pb / front_fan:.2f})")


if __name__ == "__main__":
    main()

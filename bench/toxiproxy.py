"""The Toxiproxy-compatible server under hostile and heavy clients, for a configurable time.

The server runs as users run it (``chaoskube toxiproxy``, a process of its own, so its memory
is its own). Against it, at once, for ``--seconds`` (300 for the figures in the report):

- ``--idle`` (1,000) idle TCP connections to the API port that never send a byte; the
  server closes each after its read timeout (15 s) and the pool reconnects it, so the
  server always holds about that many;
- ``--slow`` (200) slow clients that trickle a request's headers a line a second and never
  finish them, and reconnect when the server closes them;
- ``--streams`` (200) concurrent TCP streams through one proxy to an echo server (half of
  them through a ``latency`` toxic of 5 ms), each writing random chunks and reading them
  back, checking every byte (length and SHA-256 of what went and what came back);
- an API client that, every half second, reads ``/version`` and adds and removes a toxic,
  and records each request's latency and status (the server "stays up" when every one of
  them answered).

Measured: API requests answered / failed and their latency (median, max); connections the
server closed (idle and slow); stream bytes echoed and any byte lost or changed; the
server's resident memory (VmRSS) sampled every 2 s (first, max, last, and the max of the
first and second halves: bounded when the second half is not above the first by more than
a margin); and throughput of one bulk stream through a proxy against the same stream
directly to the echo server, in the same run (as a ratio).

    python3 bench/toxiproxy.py [--seconds 300] [--idle 1000] [--slow 200] [--streams 200]

``--quick``: 10 s, 100 idle, 20 slow, 20 streams (tests/faults/test_toxiproxy_bench.py runs it).
Exit code 1 when a request failed, a byte was lost, or the server died.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import trio

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 16 * 1024


@dataclass
class Figures:
    api_ok: int = 0
    api_failed: int = 0
    api_latency_s: list[float] = field(default_factory=list)
    idle_closed: int = 0
    slow_closed: int = 0
    stream_bytes: int = 0
    stream_errors: list[str] = field(default_factory=list)
    rss_kib: list[tuple[float, int]] = field(default_factory=list)
    direct_mib_s: float = 0.0
    proxied_mib_s: float = 0.0


def raise_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def start_server() -> tuple[subprocess.Popen[str], str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "toxiproxy", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    for _ in range(2):
        line = process.stdout.readline()
        if "serving" in line:
            return process, line.rsplit("http://", 1)[1].strip()
    raise RuntimeError(f"the server did not start: {process.stderr.read() if process.stderr else ''}")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def echo_server(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    async def handle(stream: trio.SocketStream) -> None:
        try:
            async with stream:
                while data := await stream.receive_some(CHUNK * 4):
                    await stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handle, listeners)
        task_status.started(port)


async def idle_pool(host: str, port: int, count: int, figures: Figures, until: float) -> None:
    async def one() -> None:
        while trio.current_time() < until:
            try:
                stream = await trio.open_tcp_stream(host, port)
            except OSError:
                await trio.sleep(0.5)
                continue
            async with stream:
                with trio.move_on_at(until):
                    try:
                        if not await stream.receive_some(1):
                            figures.idle_closed += 1
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        figures.idle_closed += 1

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(one)
            await trio.sleep(0.002)


async def slow_pool(host: str, port: int, count: int, figures: Figures, until: float) -> None:
    async def one() -> None:
        while trio.current_time() < until:
            try:
                stream = await trio.open_tcp_stream(host, port)
            except OSError:
                await trio.sleep(0.5)
                continue
            async with stream:
                try:
                    await stream.send_all(b"POST /proxies HTTP/1.1\r\nHost: x\r\n")
                    while trio.current_time() < until:
                        await stream.send_all(b"X-Slow: one header a second\r\n")
                        with trio.move_on_after(1.0):
                            if not await stream.receive_some(1024):
                                figures.slow_closed += 1
                                break
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    figures.slow_closed += 1

    async with trio.open_nursery() as nursery:
        for _ in range(count):
            nursery.start_soon(one)
            await trio.sleep(0.005)


async def streams(host: str, port: int, count: int, figures: Figures, until: float) -> None:
    async def one(index: int) -> None:
        rng = random.Random(index)
        while trio.current_time() < until:
            try:
                stream = await trio.open_tcp_stream(host, port)
            except OSError as error:
                figures.stream_errors.append(f"connect: {error}")
                await trio.sleep(0.5)
                continue
            async with stream:
                sent, received = hashlib.sha256(), hashlib.sha256()
                sent_bytes = received_bytes = 0
                try:
                    for _ in range(rng.randint(4, 64)):
                        chunk = rng.randbytes(rng.randint(1, CHUNK))
                        await stream.send_all(chunk)
                        sent.update(chunk)
                        sent_bytes += len(chunk)
                        while received_bytes < sent_bytes:
                            data = await stream.receive_some(CHUNK * 4)
                            if not data:
                                raise trio.BrokenResourceError("closed early")
                            received.update(data)
                            received_bytes += len(data)
                        if trio.current_time() >= until:
                            break
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as error:
                    figures.stream_errors.append(f"stream {index}: {error!r} after {received_bytes} of {sent_bytes} bytes")
                    continue
                if sent.digest() != received.digest():
                    figures.stream_errors.append(f"stream {index}: {sent_bytes} bytes sent, different bytes back")
                figures.stream_bytes += received_bytes

    async with trio.open_nursery() as nursery:
        for index in range(count):
            nursery.start_soon(one, index)


async def api_client(base: str, proxy: str, figures: Figures, until: float) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=10.0) as client:
        number = 0
        while trio.current_time() < until:
            number += 1
            for method, path, body in (("GET", "/version", None), ("POST", f"/proxies/{proxy}/toxics", {"name": f"t{number}", "type": "latency", "attributes": {"latency": 1}}), ("DELETE", f"/proxies/{proxy}/toxics/t{number}", None)):
                started = time.perf_counter()
                try:
                    answer = await client.request(method, path, json=body)
                    ok = answer.status_code < 400
                except httpx.HTTPError:
                    ok = False
                figures.api_latency_s.append(time.perf_counter() - started)
                if ok:
                    figures.api_ok += 1
                else:
                    figures.api_failed += 1
            await trio.sleep(0.5)


async def sample_memory(pid: int, figures: Figures, until: float) -> None:
    started = trio.current_time()
    while trio.current_time() < until:
        figures.rss_kib.append((trio.current_time() - started, rss_kib(pid)))
        await trio.sleep(2.0)


async def bulk_mib_s(host: str, port: int, seconds: float) -> float:
    """MiB/s of one stream writing and reading back 64 KiB chunks for ``seconds``."""
    stream = await trio.open_tcp_stream(host, port)
    chunk = b"x" * (64 * 1024)
    moved = 0
    started = trio.current_time()
    async with stream:
        while trio.current_time() - started < seconds:
            await stream.send_all(chunk)
            got = 0
            while got < len(chunk):
                data = await stream.receive_some(len(chunk))
                if not data:
                    raise RuntimeError("closed")
                got += len(data)
            moved += got
    return moved / (1024 * 1024) / (trio.current_time() - started)


async def main(options: argparse.Namespace, api: str, server_pid: int) -> Figures:
    figures = Figures()
    host, port = api.rsplit(":", 1)
    base = f"http://{api}"
    async with trio.open_nursery() as nursery:
        echo_port = await nursery.start(echo_server)
        async with httpx.AsyncClient(base_url=base, timeout=10.0) as client:
            for name, toxic in (("streams", None), ("slow-streams", {"type": "latency", "attributes": {"latency": 5}}), ("bulk", None)):
                answer = await client.post("/proxies", json={"name": name, "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{echo_port}"})
                answer.raise_for_status()
                if toxic:
                    (await client.post(f"/proxies/{name}/toxics", json=toxic)).raise_for_status()
            proxies = {name: int(value["listen"].rsplit(":", 1)[1]) for name, value in (await client.get("/proxies")).json().items()}
        figures.direct_mib_s = await bulk_mib_s("127.0.0.1", echo_port, options.bulk_seconds)
        figures.proxied_mib_s = await bulk_mib_s("127.0.0.1", proxies["bulk"], options.bulk_seconds)
        until = trio.current_time() + options.seconds
        nursery.start_soon(sample_memory, server_pid, figures, until)
        nursery.start_soon(idle_pool, host, int(port), options.idle, figures, until)
        nursery.start_soon(slow_pool, host, int(port), options.slow, figures, until)
        nursery.start_soon(streams, "127.0.0.1", proxies["streams"], options.streams // 2, figures, until)
        nursery.start_soon(streams, "127.0.0.1", proxies["slow-streams"], options.streams - options.streams // 2, figures, until)
        nursery.start_soon(api_client, base, "streams", figures, until)
        await trio.sleep_until(until + 1.0)
        nursery.cancel_scope.cancel()
    return figures


def report(options: argparse.Namespace, figures: Figures, alive: bool) -> dict[str, object]:
    rss = [kib for _, kib in figures.rss_kib]
    half = max(1, len(rss) // 2)
    latency = sorted(figures.api_latency_s) or [0.0]
    return {
        "seconds": options.seconds, "idle": options.idle, "slow": options.slow, "streams": options.streams,
        "server_alive": alive,
        "api_requests_ok": figures.api_ok, "api_requests_failed": figures.api_failed,
        "api_latency_median_ms": round(statistics.median(latency) * 1000, 2), "api_latency_max_ms": round(latency[-1] * 1000, 2),
        "idle_connections_closed_by_server": figures.idle_closed, "slow_clients_closed_by_server": figures.slow_closed,
        "stream_mib_echoed": round(figures.stream_bytes / 1024 / 1024, 1), "stream_errors": len(figures.stream_errors), "stream_error_examples": figures.stream_errors[:3],
        "server_rss_mib_first": round(rss[0] / 1024, 1) if rss else None, "server_rss_mib_max": round(max(rss) / 1024, 1) if rss else None,
        "server_rss_mib_last": round(rss[-1] / 1024, 1) if rss else None,
        "server_rss_mib_max_first_half": round(max(rss[:half]) / 1024, 1) if rss else None, "server_rss_mib_max_second_half": round(max(rss[half:] or rss) / 1024, 1) if rss else None,
        "direct_mib_s": round(figures.direct_mib_s, 1), "proxied_mib_s": round(figures.proxied_mib_s, 1),
        "proxied_over_direct": round(figures.proxied_mib_s / figures.direct_mib_s, 3) if figures.direct_mib_s else None,
    }  # fmt: skip


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--bulk-seconds", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args(argv)
    if options.quick:
        options.seconds, options.idle, options.slow, options.streams, options.bulk_seconds = 10.0, 100, 20, 20, 1.0
    raise_file_limit()
    server, api = start_server()
    try:
        figures = trio.run(main, options, api, server.pid)
        alive = server.poll() is None
    finally:
        server.terminate()
        server.wait(timeout=30)
    figures_json = report(options, figures, alive)
    print(json.dumps(figures_json, indent=2))
    bad = not alive or figures.api_failed or figures.stream_errors
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run())

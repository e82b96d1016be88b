"""Whole-cluster simulation speed: simulated seconds per CPU second, and how it scales.

A 3-member etcd, 2 API servers, 2 controller-managers, 2 schedulers and ``--nodes`` nodes
in 3 zones with default timings; ``--pods`` pods as 10 Deployments, created at t = 10 s;
``--seconds`` simulated seconds in all. Prints the speed in CPU time of this process
(``time.process_time``; target >= 50x for 3 etcd / 50 nodes / 500 pods), when every pod
was Ready, the peak memory, and where the time went by component (a sampling profiler
thread, every 5 ms of wall time: each sample is charged to the innermost
chaoskube package on the stack -- ``etcd``, ``apiserver``, ``scheduler``, ``controllers``,
``node``, ``client``, ``api``, ``sim`` -- or to ``trio`` when Trio's own run loop was
running).

``--scan`` then runs ``--scan-seconds`` (default 600) simulated seconds at 100 / 1,000,
200 / 2,000, 400 / 4,000 and 1,000 / 10,000 nodes / pods (``--scan-sizes`` to change),
prints the CPU seconds per simulated second of each with its profile, the largest size
at >= 1x real time (target: 1,000 nodes / 10,000 pods), and writes a plot of CPU seconds
per simulated second against the number of nodes (``--plot FILE``: PNG with matplotlib
when it is installed, else SVG written here; default ``cluster-scan.svg`` / ``.png`` in
the current directory).

    python3 bench/cluster.py [--nodes 50] [--pods 500] [--seconds 600] [--seed 1]
        [--scan] [--scan-seconds 600] [--scan-sizes 100:1000,1000:10000] [--plot FILE]
"""

from __future__ import annotations

import argparse
import resource
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaoskube.api.manifests import from_dict  # noqa: E402
from chaoskube.client.client import ApiError  # noqa: E402
from chaoskube.cluster import ClusterSpec, NodeGroup, open_cluster  # noqa: E402
from chaoskube.sim import Watchdog, World  # noqa: E402

DEPLOYMENTS = 10
SCAN_SIZES = ((100, 1_000), (200, 2_000), (400, 4_000), (1_000, 10_000))
COMPONENTS = ("etcd", "apiserver", "scheduler", "controllers", "node", "client", "api", "sim", "cluster", "checkers")
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent / "chaoskube")


def _deployment(index: int, replicas: int) -> object:
    labels = {"app": f"app-{index}"}
    return from_dict({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"app-{index}", "namespace": "default"},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}},
        },
    })


class Sampler:
    """A sampling profiler by component (module docstring), from a thread that looks at the
    main thread's stack every ``interval_s``. Not a signal: with a Python signal handler
    every ``SIGPROF`` wakes Trio's I/O (its wakeup fd), an extra pass of the run loop draws
    one more number from the seeded scheduler, and two runs of the same seed did different
    work (different journals, CPU figures apart by several per cent)."""

    def __init__(self, interval_s: float = 0.005) -> None:
        self.interval_s = interval_s
        self.samples: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _component(self, frame: FrameType | None) -> str:
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(PACKAGE_ROOT):
                part = filename[len(PACKAGE_ROOT) + 1 :].split("/", 1)[0]
                return part.removesuffix(".py")
            frame = frame.f_back
        return "trio"

    def _loop(self, ident: int) -> None:
        while not self._stop.wait(self.interval_s):
            frame = sys._current_frames().get(ident)
            if frame is not None:
                self.samples[self._component(frame)] += 1

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._loop, args=(threading.get_ident(),), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def shares(self) -> list[tuple[str, float]]:
        total = sum(self.samples.values()) or 1
        return [(name, count / total) for name, count in self.samples.most_common()]


def run(nodes: int, pods: int, seconds: float, seed: int) -> dict[str, Any]:
    spec = ClusterSpec(node_groups=[NodeGroup(count=nodes, cpu="16", memory="64Gi", pods=110)])
    # No journal bound: 1,000 nodes journal about 2 MB per simulated second, past the
    # watchdog's 1 GiB (a bound for runaway runs) within the scan's 600 s.
    world = World(seed, watchdog=Watchdog(max_journal_bytes=None))
    ready_at: list[float] = []

    async def main(world: World) -> None:
        cluster = open_cluster(world, spec)

        async def idle(process: Any) -> None:
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
            # As `kubectl rollout status` does: the Deployments' status, not every pod (a
            # list of 10,000 pods every 5 s would be the harness's cost, not the cluster's).
            try:
                listed = await client.list("deployments", "default", resource_version="0")
            except ApiError:
                return False
            return sum(d.status.ready_replicas or 0 for d in listed.items) >= pods

        if await cluster.wait_for(all_ready, within_s=seconds - world.now, every_s=5.0):
            ready_at.append(world.now)
        await world.sleep(max(0.0, seconds - world.now))

    sampler = Sampler()
    started, cpu = time.perf_counter(), time.process_time()
    with sampler:
        world.run(main)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - started
    return {
        "nodes": nodes, "pods": pods, "seconds": seconds, "wall": wall, "cpu": cpu, "speed": seconds / cpu,
        "cpu_per_simulated_s": cpu / seconds, "ready_at": ready_at[0] if ready_at else float("nan"),
        "profile": sampler.shares(), "messages": world.network.sent, "records": world.journal.count,
    }


def profile_line(result: dict[str, Any]) -> str:
    return ", ".join(f"{name} {share:.0%}" for name, share in result["profile"][:8])


def write_plot(path: Path, results: list[dict[str, Any]]) -> Path:
    """CPU seconds per simulated second against nodes: PNG with matplotlib if it is
    installed (and asked for), else SVG."""
    xs = [result["nodes"] for result in results]
    ys = [result["cpu_per_simulated_s"] for result in results]
    if path.suffix == ".png":
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            path = path.with_suffix(".svg")
        else:
            figure, axis = plt.subplots(figsize=(7, 4.5))
            axis.plot(xs, ys, marker="o")
            axis.axhline(1.0, linestyle="--", color="grey", label="real time")
            for result in results:
                axis.annotate(f"{result['pods']:,} pods", (result["nodes"], result["cpu_per_simulated_s"]), textcoords="offset points", xytext=(4, 4), fontsize=8)
            axis.set_xlabel("nodes (10 pods per node)")
            axis.set_ylabel("CPU seconds per simulated second")
            axis.set_title("chaoskube: whole-cluster simulation cost against size")
            axis.legend()
            figure.tight_layout()
            figure.savefig(path, dpi=120)
            return path
    width, height, margin = 640, 400, 60
    x_max = max(xs) * 1.05
    y_max = max(max(ys), 1.0) * 1.15

    def point(x: float, y: float) -> tuple[float, float]:
        return margin + (width - 2 * margin) * x / x_max, height - margin - (height - 2 * margin) * y / y_max

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
             f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="13">chaoskube: whole-cluster simulation cost against size</text>',
             f'<line x1="{margin}" y1="{height - margin}" x2="{width - margin}" y2="{height - margin}" stroke="black"/>',
             f'<line x1="{margin}" y1="{margin}" x2="{margin}" y2="{height - margin}" stroke="black"/>',
             f'<text x="{width / 2}" y="{height - 15}" text-anchor="middle">nodes (10 pods per node)</text>',
             f'<text x="15" y="{height / 2}" text-anchor="middle" transform="rotate(-90 15 {height / 2})">CPU seconds per simulated second</text>']
    for tick in range(5):
        value = y_max * tick / 4
        _, y = point(0, value)
        parts.append(f'<text x="{margin - 6}" y="{y + 4}" text-anchor="end">{value:.2f}</text>')
    for x_value in xs:
        x, _ = point(x_value, 0)
        parts.append(f'<text x="{x}" y="{height - margin + 15}" text-anchor="middle">{x_value}</text>')
    _, one = point(0, 1.0)
    parts.append(f'<line x1="{margin}" y1="{one}" x2="{width - margin}" y2="{one}" stroke="grey" stroke-dasharray="5,4"/><text x="{width - margin}" y="{one - 4}" text-anchor="end" fill="grey">real time</text>')
    coordinates = [point(x, y) for x, y in zip(xs, ys, strict=True)]
    parts.append('<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates) + '"/>')
    for (x, y), result in zip(coordinates, results, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#1f77b4"/><text x="{x + 5:.1f}" y="{y - 6:.1f}">{result["pods"]:,} pods: {result["cpu_per_simulated_s"]:.2f}</text>')
    parts.append("</svg>")
    path = path.with_suffix(".svg")
    path.write_text("\n".join(parts) + "\n")
    return path


def main() -> None:
    from loguru import logger

    logger.remove()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scan", action="store_true", help="also run the sizes of --scan-sizes and plot CPU per simulated second against size")
    parser.add_argument("--scan-seconds", type=float, default=600.0, help="simulated seconds per size [default: %(default)s: the ReplicaSet controller creates 10,000 pods at its client's 20 QPS in 500 s]")
    parser.add_argument("--scan-sizes", default=",".join(f"{n}:{p}" for n, p in SCAN_SIZES), help="NODES:PODS,... [default: %(default)s]")
    parser.add_argument("--plot", type=Path, default=None, help="where to write the plot [default: cluster-scan.png with matplotlib, else .svg]")
    args = parser.parse_args()
    print(f"cluster benchmark: 3 etcd, 2 API servers, 2 controller-managers, 2 schedulers, {args.nodes} nodes in 3 zones, {args.pods} pods, {args.seconds:g} simulated s, seed {args.seed}")
    result = run(args.nodes, args.pods, args.seconds, args.seed)
    print(f"  speed          : {result['speed']:7.1f}x real time ({args.seconds:g} simulated s in {result['cpu']:.1f} s CPU, {result['wall']:.1f} s wall; target >= 50x: {'met' if result['speed'] >= 50 else 'NOT met'})")
    print(f"  all pods ready : at {result['ready_at']:.1f} simulated s" if result["ready_at"] == result["ready_at"] else "  all pods ready : NOT by the end of the run")
    print(f"  profile        : {profile_line(result)}")
    print(f"  peak RSS       : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if not args.scan:
        return
    sizes = [tuple(int(part) for part in item.split(":")) for item in args.scan_sizes.split(",") if item]
    scan = []
    print(f"  scan           : {args.scan_seconds:g} simulated s each (the Deployments created at 10 s)")
    for nodes, pods in sizes:
        point = run(nodes, pods, args.scan_seconds, args.seed)
        scan.append(point)
        verdict = ">= 1x" if point["speed"] >= 1.0 else "< 1x"
        if point["ready_at"] != point["ready_at"]:
            verdict += ", NOT every pod Ready: does not count"
        print(f"    {nodes:>5} nodes, {pods:>6} pods: {point['cpu_per_simulated_s']:6.3f} CPU s per simulated s = {point['speed']:6.2f}x real time ({verdict}); all Ready at {point['ready_at']:.1f} s; "
              f"{point['messages'] / point['seconds']:,.0f} messages/simulated s")
        print(f"          profile: {profile_line(point)}")
    # A size counts only if every pod became Ready: a cluster that refused or lost pods
    # does less work than the size says.
    kept_up = [point for point in scan if point["speed"] >= 1.0 and point["ready_at"] == point["ready_at"]]
    largest = max(kept_up, key=lambda point: point["nodes"]) if kept_up else None
    named = f"{largest['nodes']} nodes / {largest['pods']} pods" if largest else "none"
    met = "met" if largest is not None and largest["nodes"] >= 1000 else "NOT met"
    print(f"  largest at >= 1x real time: {named} (target: 1,000 nodes / 10,000 pods: {met})")
    try:
        import matplotlib  # noqa: F401

        default = Path("cluster-scan.png")
    except ImportError:
        default = Path("cluster-scan.svg")
    plotted = write_plot(args.plot or default, [result, *scan])
    print(f"  plot           : {plotted} (CPU seconds per simulated second against nodes)")


if __name__ == "__main__":
    main()

"""The runtime's own demo system: a mesh of nodes that probe each other.

Every node answers pings and, every ``interval_s``, calls a seeded-random peer with a
deadline, journaling the outcome as a ``probe`` event. Its checkers verify the runtime's
network guarantees from the journal alone: nothing is delivered across a partition, to a
stopped or paused process, or without having been sent; no probe succeeds across a
partition that lasted the whole call; and after heal every pair of nodes talks again.
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.systems.base import System
from chaoskube.faults import ProcessInfo
from chaoskube.sim import Failed, Ok, Process, read_journal


class MeshCluster(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    nodes: int = 5

    def __post_init__(self) -> None:
        if not 2 <= self.nodes <= 1000:
            raise ValueError("`nodes` must be between 2 and 1000")


class MeshWorkload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    interval_s: float = 0.1
    timeout_s: float = 0.5

    def __post_init__(self) -> None:
        if not (0 < self.interval_s < float("inf") and 0 < self.timeout_s < float("inf")):
            raise ValueError("`interval_s` and `timeout_s` must be > 0")


class MeshSystem(System):
    name = "mesh"
    Cluster = MeshCluster
    Workload = MeshWorkload
    CHECKERS = {
        "network-integrity": "every delivery was sent, crossed no partition and reached a running process",
        "probes-respect-partitions": "no probe succeeded across a partition that lasted the whole call",
        "steady-state": "after heal, every node reaches every other node",
    }

    RUNS = ()  # the runtime only: no component of chaoskube's cluster

    @classmethod
    def process_infos(cls, cluster: MeshCluster, workload: MeshWorkload) -> list[ProcessInfo]:
        return [ProcessInfo(f"node-{index}", "node", None) for index in range(1, cluster.nodes + 1)]

    def __init__(self, world: Any, cluster: MeshCluster, workload: MeshWorkload) -> None:
        super().__init__(world, cluster, workload)
        self.names = [f"node-{index}" for index in range(1, cluster.nodes + 1)]
        self.probing = False
        self.steady_state_verdict: Verdict | None = None

    async def start(self) -> None:
        for name in self.names:
            self.world.spawn(name, self._node, role="node")

    async def _node(self, process: Process) -> None:
        process.start_soon(self._serve, process)
        rng = process.random("probe")
        peers = [name for name in self.names if name != process.name]
        while True:
            await process.sleep(self.workload.interval_s)
            if self.probing:
                await self._probe(process, rng.choice(peers))

    async def _serve(self, process: Process) -> None:
        while True:
            request = await process.receive()
            process.reply(request, "pong")

    async def _probe(self, process: Process, peer: str) -> str:
        started = process.world.now
        result = await process.call(peer, "ping", timeout_s=self.workload.timeout_s)
        status = "ok" if isinstance(result, Ok) else "fail" if isinstance(result, Failed) else "info"
        process.world.record("probe", src=process.name, dst=peer, status=status, call_t=round(started, 9))
        return status

    async def start_workload(self) -> None:
        self.probing = True

    async def stop_workload(self) -> None:
        self.probing = False

    async def steady_state(self) -> Verdict:
        """Every node calls every other node once; all must answer."""
        failures: list[str] = []

        async def pair(src: str, dst: str) -> None:
            process = self.world.process(src)
            if not process.running:
                failures.append(f"{src} is {process.state.value}")
                return
            result = await process.call(dst, "ping", timeout_s=self.workload.timeout_s)
            if not isinstance(result, Ok):
                failures.append(f"{src} -> {dst}: {type(result).__name__}")

        async with trio.open_nursery() as nursery:
            for src in self.names:
                for dst in self.names:
                    if src != dst:
                        nursery.start_soon(pair, src, dst)
        if failures:
            return Verdict(False, f"{len(failures)} of {len(self.names) * (len(self.names) - 1)} pairs failed", tuple(sorted(failures)[:5]))
        return Verdict(True, f"all {len(self.names) * (len(self.names) - 1)} pairs answered")

    def check(self, name: str) -> Verdict:
        if name == "steady-state":
            return self.steady_state_verdict or Verdict(None, "the steady state was never probed")
        path = self.world.journal.path
        events = read_journal(path) if path is not None else iter(self.world.journal.events)
        if name == "network-integrity":
            return check_network_integrity(events)
        if name == "probes-respect-partitions":
            return check_probes_respect_partitions(events)
        raise KeyError(name)


def check_network_integrity(events: Any) -> Verdict:
    """Every ``deliver`` follows the ``send`` of the same id, crosses no partition in force,
    and reaches a running process; no message is delivered twice (duplication is off)."""
    sent: dict[int, tuple[str, str]] = {}
    delivered: set[int] = set()
    grudge: dict[str, set[str]] = {}
    state: dict[str, str] = {}
    count = 0
    for event in events:
        kind = event["type"]
        if kind == "send":
            sent[event["id"]] = (event["src"], event["dst"])
        elif kind == "partition":
            grudge = {dst: set(sources) for dst, sources in event["grudge"].items()}
        elif kind == "process":
            state[event["process"]] = {"start": "running", "restart": "running", "resume": "running", "pause": "paused"}.get(event["event"], "stopped")
        elif kind == "deliver":
            count += 1
            message_id, src, dst = event["id"], event["src"], event["dst"]
            problem = None
            if sent.get(message_id) != (src, dst):
                problem = "delivered but never sent"
            elif message_id in delivered:
                problem = "delivered twice"
            elif src in grudge.get(dst, ()):
                problem = "delivered across a partition"
            elif state.get(dst) != "running":
                problem = f"delivered to a {state.get(dst, 'missing')} process"
            if problem:
                return Verdict(False, f"message {message_id} {src}->{dst} {problem} at t={event['t']}", (event,))
            delivered.add(message_id)
    if not sent:
        return Verdict(None, "the journal holds no network events")
    return Verdict(True, f"{count} deliveries of {len(sent)} messages all legal")


def check_probes_respect_partitions(events: Any) -> Verdict:
    """A probe that succeeded must not have been cut (either way) for its whole call."""
    # epochs: (start time, grudge) in order; a probe [call_t, t] spanning only epochs that
    # cut its pair could not have succeeded.
    epochs: list[tuple[float, dict[str, set[str]]]] = [(0.0, {})]
    probes = ok = 0
    for event in events:
        if event["type"] == "partition":
            epochs.append((event["t"], {dst: set(s) for dst, s in event["grudge"].items()}))
        elif event["type"] == "probe":
            probes += 1
            if event["status"] != "ok":
                continue
            ok += 1
            src, dst, start, end = event["src"], event["dst"], event["call_t"], event["t"]
            spanned = [g for index, (t, g) in enumerate(epochs) if t <= end and (index + 1 == len(epochs) or epochs[index + 1][0] > start)]
            if spanned and all(src in g.get(dst, ()) or dst in g.get(src, ()) for g in spanned):
                return Verdict(False, f"probe {src}->{dst} succeeded at t={end} across a partition in force for its whole call", (event,))
    if not probes:
        return Verdict(None, "no probes were recorded")
    return Verdict(True, f"{ok} of {probes} probes succeeded, none across a partition")

"""etcd under faults: a Raft cluster, recording clients, a watcher, and the checkers.

Cluster: ``members`` etcd members (``etcd-1`` ...), each a process with its own disk, with
etcd's default timings. Workload: ``clients`` client processes, each with one operation in
flight at a time (as Jepsen's workers), issuing reads, writes and compare-and-sets on a
few keys at ``rate_per_s`` in total (Poisson arrivals), every operation recorded as
invoke -> ok / fail / info; and ``watchers`` processes watching every workload key from
revision 1, resuming on another member when their stream breaks.

Checkers: ``raft-safety`` (election safety, state machine safety, leader completeness,
durability of acknowledged writes), ``linearizability`` (register per key: read / write /
cas), ``watch`` (ordered, gap-free, matching the store), and ``steady-state`` (before the
faults and after heal: a leader, and a write and a linearizable read through every
member).
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import trio

from chaoskube.checkers.history import from_client_records
from chaoskube.checkers.linearizability import RegisterModel, check_linearizability
from chaoskube.checkers.raft_safety import check_raft_safety
from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.checkers.watch import check_watches
from chaoskube.etcd.client import EtcdClient, Watcher
from chaoskube.etcd.raft import Raft
from chaoskube.etcd.raft_broken import BROKEN_VARIANTS
from chaoskube.etcd.requests import LeaseGrantRequest, PutRequest, RangeRequest, prefix_range_end
from chaoskube.etcd.server import CLIENT_PORT, ClientReply, ClientRequest, EtcdConfig, KeepAlive, current_leader, spawn_cluster
from chaoskube.experiments.systems.base import System
from chaoskube.faults import ProcessInfo
from chaoskube.sim import Ok, Process

KEY_PREFIX = "key/"


class EtcdCluster(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    members: int = 3
    heartbeat_ms: int = 100
    election_ms: int = 1000
    snapshot_count: int = 10_000
    fsync_ms: float = 1.0
    pre_vote: bool = True
    raft: str = "correct"  # or a broken variant: vote-without-log-check, commit-previous-term-by-count, forgets-vote

    def __post_init__(self) -> None:
        if self.members not in (1, 3, 5, 7):
            raise ValueError("`members` must be 1, 3, 5 or 7")
        if not 1 <= self.heartbeat_ms <= 60_000:
            raise ValueError("`heartbeat_ms` must be between 1 and 60000")
        if self.snapshot_count < 1:
            raise ValueError("`snapshot_count` must be >= 1")
        if not (math.isfinite(self.fsync_ms) and 0 <= self.fsync_ms <= 60_000):
            raise ValueError("`fsync_ms` must be a finite number between 0 and 60000")
        if self.election_ms < 5 * self.heartbeat_ms:
            raise ValueError("`election_ms` must be at least 5 x `heartbeat_ms` (etcd's rule)")
        if self.raft != "correct" and self.raft not in BROKEN_VARIANTS:
            raise ValueError(f"`raft` must be correct or one of {', '.join(sorted(BROKEN_VARIANTS))}")

    def config(self) -> EtcdConfig:
        return EtcdConfig(
            members=self.members,
            heartbeat_ms=self.heartbeat_ms,
            election_ms=self.election_ms,
            snapshot_count=self.snapshot_count,
            fsync_ms=self.fsync_ms,
            pre_vote=self.pre_vote,
            raft_class=Raft if self.raft == "correct" else BROKEN_VARIANTS[self.raft],
        )


class EtcdWorkload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    clients: int = 5
    keys: int = 3
    rate_per_s: float = 50.0
    read: float = 0.4
    write: float = 0.3
    cas: float = 0.3
    timeout_s: float = 2.0
    watchers: int = 1
    #: Lease clients (issue 19): each grants a lease of ``lease_ttl_s``, attaches a key,
    #: keeps it alive a few times, abandons it and lets it expire, again and again.
    lease_clients: int = 0
    lease_ttl_s: int = 5

    def __post_init__(self) -> None:
        if not (0 <= self.lease_clients <= 100 and 1 <= self.lease_ttl_s <= 3600):
            raise ValueError("`lease_clients` must be 0..100 and `lease_ttl_s` 1..3600")
        if not (1 <= self.clients <= 1000 and 1 <= self.keys <= 10_000 and 0 <= self.watchers <= 100):
            raise ValueError("`clients` must be 1..1000, `keys` 1..10000 and `watchers` 0..100")
        if not (math.isfinite(self.rate_per_s) and 0 < self.rate_per_s <= 100_000):
            raise ValueError("`rate_per_s` must be a finite number in (0, 100000]")
        if not (math.isfinite(self.timeout_s) and 0 < self.timeout_s <= 3600):
            raise ValueError("`timeout_s` must be a finite number in (0, 3600]")
        weights = (self.read, self.write, self.cas)
        if not all(math.isfinite(weight) and weight >= 0 for weight in weights) or sum(weights) <= 0:
            raise ValueError("`read`, `write` and `cas` are finite non-negative weights, not all zero")


class EtcdSystem(System):
    name = "etcd"
    Cluster = EtcdCluster
    Workload = EtcdWorkload
    CHECKERS = {
        "raft-safety": "one leader per term, same entry at each index everywhere, complete leaders, no acknowledged write lost",
        "linearizability": "the client history is linearizable (a register per key: read / write / cas)",
        "watch": "every watcher's events are ordered, gap-free and match the store's history",
        "steady-state": "before the faults and after heal: a leader, and a write and a read through every member",
        "etcd-leases": "keys of a lease live at least its TTL after the last acknowledged keep-alive (restarted by a new leader), vanish within a bound after it expires, and only the leader acknowledges keep-alives",
    }

    LEADER_ROLES = frozenset({"etcd"})
    RUNS = ("chaoskube.etcd",)

    @classmethod
    def process_infos(cls, cluster: EtcdCluster, workload: EtcdWorkload) -> list[ProcessInfo]:
        """As :meth:`start` spawns them: the members (``spawn_cluster``, no zones), the
        probe, the clients and the watchers."""
        return (
            [ProcessInfo(f"etcd-{index}", "etcd", None) for index in range(1, cluster.members + 1)]
            + [ProcessInfo("probe", "probe", None)]
            + [ProcessInfo(f"client-{index}", "client", None) for index in range(1, workload.clients + 1)]
            + [ProcessInfo(f"watcher-{index}", "watcher", None) for index in range(1, workload.watchers + 1)]
            + [ProcessInfo(f"lease-client-{index}", "client", None) for index in range(1, workload.lease_clients + 1)]
        )

    def __init__(self, world: Any, cluster: EtcdCluster, workload: EtcdWorkload) -> None:
        super().__init__(world, cluster, workload)
        self.config = cluster.config()
        self.registry: dict[str, Any] = {}
        self.running = False
        self.keys = [f"{KEY_PREFIX}{index}" for index in range(workload.keys)]
        self.steady_state_verdict: Verdict | None = None
        self._probe: Process | None = None
        self._probes = 0

    async def start(self) -> None:
        self.registry = spawn_cluster(self.world, self.config)
        self._probe = self.world.spawn("probe", _idle, role="probe")
        for index in range(1, self.workload.clients + 1):
            self.world.spawn(f"client-{index}", self._client, role="client")
        for index in range(1, self.workload.watchers + 1):
            self.world.spawn(f"watcher-{index}", self._watcher, role="watcher")
        for index in range(1, self.workload.lease_clients + 1):
            self.world.spawn(f"lease-client-{index}", self._lease_client, role="client")
        await self.world.sleep(0.001)

    def leader_of(self, role: str) -> str | None:
        return current_leader(self.world, self.registry) if role == "etcd" else None

    # -- workload -------------------------------------------------------------------------
    async def _client(self, process: Process) -> None:
        client = EtcdClient(process, self.config.names, timeout_s=self.workload.timeout_s)
        index = int(process.name.rsplit("-", 1)[1])
        await run_register_workload(client, self.workload, self.keys, index, process.random("workload"), process.sleep, lambda: self.running)

    async def _lease_client(self, process: Process) -> None:
        client = EtcdClient(process, self.config.names, timeout_s=self.workload.timeout_s, attempts=len(self.config.names) + 1)
        await run_lease_workload(client, self.workload.lease_ttl_s, process.random("leases"), process.sleep, lambda: self.running)

    async def _watcher(self, process: Process) -> None:
        watcher = Watcher(process, self.config.names, KEY_PREFIX, prefix_range_end(KEY_PREFIX), start_revision=1, name=process.name)
        await watcher.run()

    async def start_workload(self) -> None:
        self.running = True

    async def stop_workload(self) -> None:
        self.running = False
        await self.world.sleep(self.workload.timeout_s * 3)  # let operations in flight end
        for name, member in sorted(self.registry.items()):
            process = self.world.process(name)
            alive = process.running and member.incarnation == process.incarnation
            self.world.record(
                "etcd-final",
                member=name,
                running=alive,
                applied_index=member.applied_index if alive else None,
                term=member.raft.term if alive else None,
                revision=member.store.revision if alive else None,
            )

    # -- steady state -----------------------------------------------------------------------
    async def steady_state(self) -> Verdict:
        """A leader exists, and through every member a write and a linearizable read
        succeed within the client timeout."""
        assert self._probe is not None
        leader = self.leader_of("etcd")
        if leader is None:
            return Verdict(False, "no member leads")
        problems: list[str] = []

        async def through(member: str) -> None:
            self._probes += 1
            key = f"probe/{member}"
            for request in (PutRequest(key, str(self._probes)), RangeRequest(key)):
                result = await self._probe.call(member, ClientRequest(f"probe/{self._probes}/{type(request).__name__}", request), port=CLIENT_PORT, timeout_s=self.workload.timeout_s)
                reply: ClientReply | None = result.value if isinstance(result, Ok) else None
                if reply is None or not reply.ok:
                    problems.append(f"{member}: {type(request).__name__} {'timed out' if reply is None else reply.error}")
                    return

        async with trio.open_nursery() as nursery:
            for member in self.config.names:
                nursery.start_soon(through, member)
        if problems:
            return Verdict(False, f"{len(problems)} of {self.config.members} members not serving", tuple(sorted(problems)))
        return Verdict(True, f"{leader} leads; every member serves writes and linearizable reads")

    # -- checkers ---------------------------------------------------------------------------
    def check(self, name: str) -> Verdict:
        events = self.world.journal.events
        if name == "steady-state":
            return self.steady_state_verdict or Verdict(None, "the steady state was never probed")
        if name == "raft-safety":
            return check_raft_safety(events)
        if name == "linearizability":
            records = [event for event in events if event["type"] == "client-op"]
            operations = from_client_records(records)
            if not operations:
                return Verdict(None, "no client operations were recorded")
            return check_linearizability(operations, RegisterModel(), time_limit_s=60.0)
        if name == "watch":
            watchers = {f"watcher-{index}": KEY_PREFIX for index in range(1, self.workload.watchers + 1)}
            return check_watches(events, watchers)
        if name == "etcd-leases":
            from chaoskube.checkers.etcd_leases import check_etcd_leases

            return run_checker(check_etcd_leases, events, extend_s=self.config.election_ms / 1000.0)
        raise KeyError(name)

    def metrics(self) -> dict[str, Any]:
        events = self.world.journal.events
        operations: dict[str, int] = {"ok": 0, "fail": 0, "info": 0}
        for event in events:
            if event["type"] == "client-op" and event["phase"] != "invoke":
                operations[event["phase"]] += 1
        elections = [event for event in events if event["type"] == "raft-role" and event["role"] == "leader"]
        leaderless = _longest_leaderless_s(events)
        return {
            "operations_ok": operations["ok"],
            "operations_fail": operations["fail"],
            "operations_info": operations["info"],
            "elections": len(elections),
            "highest_term": max((event["term"] for event in elections), default=0),
            "longest_leaderless_s": round(leaderless, 6),
        }


async def run_register_workload(
    client: Any,
    workload: EtcdWorkload,
    keys: list[str],
    index: int,
    rng: random.Random,
    sleep: Callable[[float], Awaitable[None]],
    running: Callable[[], bool],
) -> None:
    """One client's loop, for the simulated and the real cluster alike: Poisson arrivals
    at its share of ``rate_per_s``, one operation in flight (as Jepsen's workers), reads,
    writes and compare-and-sets on ``keys`` in the workload's proportions. Written values
    are unique (``index`` x 10^6 + a counter), which helps the checker prune; a cas
    expects the value this client last saw for the key (it reads first if it saw none).
    ``client`` has ``read(key)``, ``write(key, value)`` and ``cas(key, expected, new)``,
    each recording its operation and returning its status."""
    rate = workload.rate_per_s / workload.clients
    counter = 0
    last_seen: dict[str, int | None] = {}
    weights = (workload.read, workload.write, workload.cas)
    while True:
        await sleep(rng.expovariate(rate))
        if not running():
            continue
        key = rng.choice(keys)
        kind = rng.choices(("read", "write", "cas"), weights)[0]
        counter += 1
        value = index * 1_000_000 + counter
        if kind == "read":
            last_seen[key] = await client.read(key)
        elif kind == "write":
            if await client.write(key, value) == "ok":
                last_seen[key] = value
        else:
            expected = last_seen.get(key)
            if expected is None:
                last_seen[key] = await client.read(key)
                continue
            if await client.cas(key, expected, value) == "ok":
                last_seen[key] = value


LEASE_KEY_PREFIX = "lease/"


async def run_lease_workload(client: EtcdClient, ttl_s: int, rng: random.Random, sleep: Callable[[float], Awaitable[None]], running: Callable[[], bool]) -> None:
    """One lease client's loop: grant a lease (``ttl_s``), attach a key to it, keep it
    alive every ttl/4 for 2 to 6 rounds, abandon it and let it expire, then start again.
    Every step is journaled as ``lease-op`` {client, op (grant, attach, keepalive,
    abandon), lease, phase (ok, fail), invoked (when it was sent), member (who answered),
    ttl, key, reason}. A keep-alive answered NotPrimary or not at all is retried on the
    next member (clientv3 reconnects), within the client's attempts."""
    world = client.process.world
    rounds = 0

    def record(op: str, phase: str, invoked: float, **fields: Any) -> None:
        world.record("lease-op", client=client.name, op=op, phase=phase, invoked=invoked, **fields)

    while True:
        if not running():
            await sleep(1.0)
            continue
        rounds += 1
        invoked = world.now
        granted = await client.request(LeaseGrantRequest(id=0, ttl=ttl_s), idempotent=False)
        if not granted.ok:
            record("grant", granted.status, invoked, reason=granted.reason)
            await sleep(1.0)
            continue
        lease, ttl = granted.reply.response.id, granted.reply.response.ttl
        record("grant", "ok", invoked, lease=lease, ttl=ttl, member=granted.reply.member)
        key = f"{LEASE_KEY_PREFIX}{client.name}/{rounds}"
        invoked = world.now
        attached = await client.request(PutRequest(key, "held", lease=lease), idempotent=False)
        record("attach", attached.status, invoked, lease=lease, key=key, reason=attached.reason)
        for _ in range(rng.randint(2, 6)):
            await sleep(ttl / 4.0)
            invoked = world.now
            alive = await client.request(KeepAlive(lease), idempotent=True)
            if alive.ok:
                record("keepalive", "ok", invoked, lease=lease, ttl=alive.reply.response, member=alive.reply.member)
            else:
                record("keepalive", "fail", invoked, lease=lease, reason=alive.reason, member=alive.reply.member if alive.reply is not None else None)
                if alive.reply is not None and "not found" in alive.reply.error:
                    break  # expired already
        record("abandon", "ok", world.now, lease=lease, key=key)
        await sleep(ttl + 2.0)


def _longest_leaderless_s(events: list[dict[str, Any]]) -> float:
    """From the first election on: the longest stretch with no member believing it leads
    its current term (a lower bound on unavailability of writes)."""
    leading: dict[str, bool] = {}
    since: float | None = None
    longest = 0.0
    started = False
    for event in events:
        if event["type"] == "process" and event["event"] in ("kill", "pause") and leading.get(event["process"]):
            leading[event["process"]] = False
        elif event["type"] == "raft-role":
            leading[event["member"]] = event["role"] == "leader"
            started = started or event["role"] == "leader"
        else:
            continue
        if not started:
            continue
        if any(leading.values()):
            if since is not None:
                longest = max(longest, event["t"] - since)
                since = None
        elif since is None:
            since = event["t"]
    return longest


async def _idle(process: Process) -> None:
    await trio.sleep_forever()

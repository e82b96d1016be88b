"""etcd under faults: a Raft cluster, recording clients, a watcher, and the checkers.

Cluster: ``members`` etcd members (``etcd-1`` ...), each a process with its own disk, with
etcd's default timings. Workload: ``clients`` client processes, each with one operation in
flight at a time (as Jepsen's workers), issuing reads, writes and compare-and-sets on a
few keys at ``rate_per_s`` in total (Poisson arrivals), every operation recorded as
invoke -> ok / fail / info; and ``watchers`` processes watching every workload key from
revision 1, resuming on another member when their stream breaks.

Client topology (issue 16, ``topology``): ``rotate`` as above, or ``pinned``: client i and
watcher i each get one endpoint, as a clientv3 client built with one endpoint, and never
fail over (:func:`pinned_member`). ``serializable_read`` adds serializable reads, judged by
the ``serializable-reads`` checker and never as linearizable ones
(:func:`linearizable_records`). ``traffic: kubernetes`` replaces the register operations
with etcd's robustness-test Kubernetes traffic (:func:`run_kubernetes_workload`).

Checkers: ``raft-safety`` (election safety, state machine safety, leader completeness,
durability of acknowledged writes), ``linearizability`` (register per key: read / write /
cas), ``watch`` (ordered, gap-free, matching the store), and ``steady-state`` (before the
faults and after heal: a leader, and a write and a linearizable read through every
member).
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Iterable
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
from chaoskube.etcd.requests import MAX_REQUEST_BYTES, LeaseGrantRequest, PutRequest, RangeRequest, prefix_range_end
from chaoskube.etcd.server import CLIENT_PORT, ClientReply, ClientRequest, EtcdConfig, KeepAlive, current_leader, spawn_cluster
from chaoskube.experiments.systems.base import System
from chaoskube.faults import ProcessInfo
from chaoskube.sim import Ok, Process

KEY_PREFIX = "key/"
#: The Kubernetes traffic's keys: pods in namespace default, as the API server stores them.
KUBERNETES_PREFIX = "/registry/pods/"
TOPOLOGIES = ("rotate", "pinned")
TRAFFICS = ("register", "kubernetes")


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
    #: Client topology (issue 16). ``rotate`` (the default, as before): each client starts
    #: at a member drawn from its seed and fails over to the next one when a request
    #: definitely failed or a read timed out. ``pinned``: client i, watcher i (and the
    #: Kubernetes profile's own watch) are given ONE endpoint, member
    #: ``etcd-((i - 1) mod members + 1)``, as a clientv3 client built with one endpoint:
    #: it retries on that member and never fails over, so reads reach a deposed, isolated
    #: or lagging member (where stale reads show), and with ``watchers >= members`` a watch
    #: is open on every member. Lease clients keep failing over in both topologies: a
    #: follower answers their keep-alives NotPrimary here, where etcd's follower forwards
    #: them to the leader (``LeaseRenew`` in ``server/etcdserver/v3_server.go``).
    topology: str = "rotate"
    #: Weight of serializable reads (``--consistency=s``: served by the member from its own
    #: store, may be stale -- https://etcd.io/docs/v3.5/learning/api_guarantees/) beside
    #: ``read`` (linearizable), ``write`` and ``cas``, in the ``register`` traffic.
    serializable_read: float = 0.0
    #: ``register`` (the default: reads, writes and compare-and-sets on ``keys`` keys) or
    #: ``kubernetes``: etcd's robustness-test Kubernetes traffic
    #: (``tests/robustness/traffic/kubernetes.go``): optimistic transactions on
    #: ``/registry/pods/default/<name>`` conditioned on the key's mod revision -- 75 %
    #: update, 15 % delete, 10 % create, around ``keys`` keys (its ``averageKeyCount``) --,
    #: a linearizable list when a write failed, and a watch keeping each client's view.
    traffic: str = "register"
    #: What each value the ``register`` traffic writes weighs, in bytes (0: its text, a
    #: few bytes). Kubernetes stores objects up to etcd's ``--max-request-bytes`` (1.5 MiB):
    #: large ConfigMaps and Secrets near it are real. The simulation carries such a value
    #: by its text and its size (``PutRequest.value_size``); simulated clusters only.
    value_bytes: int = 0

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"`topology` must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}")
        if self.traffic not in TRAFFICS:
            raise ValueError(f"`traffic` must be one of {', '.join(TRAFFICS)}, got {self.traffic!r}")
        if not (math.isfinite(self.serializable_read) and self.serializable_read >= 0):
            raise ValueError("`serializable_read` is a finite non-negative weight")
        if self.traffic == "kubernetes" and self.keys < 2:
            raise ValueError("`keys` (the Kubernetes traffic's average key count) must be at least 2")
        if not (0 <= self.lease_clients <= 100 and 1 <= self.lease_ttl_s <= 3600):
            raise ValueError("`lease_clients` must be 0..100 and `lease_ttl_s` 1..3600")
        if not (1 <= self.clients <= 1000 and 1 <= self.keys <= 10_000 and 0 <= self.watchers <= 100):
            raise ValueError("`clients` must be 1..1000, `keys` 1..10000 and `watchers` 0..100")
        if not (math.isfinite(self.rate_per_s) and 0 < self.rate_per_s <= 100_000):
            raise ValueError("`rate_per_s` must be a finite number in (0, 100000]")
        if not 0 <= self.value_bytes <= MAX_REQUEST_BYTES:
            raise ValueError(f"`value_bytes` must be 0..{MAX_REQUEST_BYTES} (etcd's --max-request-bytes, 1.5 MiB)")
        if not (math.isfinite(self.timeout_s) and 0 < self.timeout_s <= 3600):
            raise ValueError("`timeout_s` must be a finite number in (0, 3600]")
        weights = (self.read, self.write, self.cas, self.serializable_read)
        if not all(math.isfinite(weight) and weight >= 0 for weight in weights) or sum(weights) <= 0:
            raise ValueError("`read`, `write`, `cas` and `serializable_read` are finite non-negative weights, not all zero")


class EtcdSystem(System):
    name = "etcd"
    Cluster = EtcdCluster
    Workload = EtcdWorkload
    CHECKERS = {
        "raft-safety": "one leader per term, same entry at each index everywhere, complete leaders, no acknowledged write lost",
        "linearizability": "the client history is linearizable (a register per key: read / write / cas)",
        "watch": "every watcher's events are ordered, gap-free and match the store's history",
        "steady-state": "before the faults and after heal: a leader, and a write and a read through every member",
        "serializable-reads": "every serializable read returned the key as the store held it at the revision the member answered with (it may be stale, never invented)",
        "etcd-leases": "keys of a lease live at least its TTL after the last acknowledged keep-alive (restarted by a new leader), vanish within a bound after it expires, and only the leader acknowledges keep-alives",
    }

    LEADER_ROLES = frozenset({"etcd"})
    RUNS = ("chaoskube.etcd",)

    @classmethod
    def leader_gap_s(cls, cluster: EtcdCluster) -> dict[str, float]:
        """A follower campaigns after one to two election timeouts (etcd-io/raft's
        randomized election timeout) and wins within a round trip or two."""
        return {"etcd": 2 * cluster.election_ms / 1000.0 + 1.0}

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
        self.key_prefix = KUBERNETES_PREFIX if workload.traffic == "kubernetes" else KEY_PREFIX
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
    def endpoints_of(self, index: int) -> list[str]:
        """The endpoints client (or watcher) ``index`` is given: every member when the
        topology rotates, one member when it is pinned (``pinned_member``)."""
        if self.workload.topology == "pinned":
            return [pinned_member(self.config.names, index)]
        return list(self.config.names)

    async def _client(self, process: Process) -> None:
        index = int(process.name.rsplit("-", 1)[1])
        client = EtcdClient(process, self.endpoints_of(index), timeout_s=self.workload.timeout_s)
        if self.workload.traffic == "kubernetes":
            await run_kubernetes_workload(client, self.workload, index, process.random("workload"), process.sleep, lambda: self.running)
            return
        await run_register_workload(client, self.workload, self.keys, index, process.random("workload"), process.sleep, lambda: self.running)

    async def _lease_client(self, process: Process) -> None:
        client = EtcdClient(process, self.config.names, timeout_s=self.workload.timeout_s, attempts=len(self.config.names) + 1)
        await run_lease_workload(client, self.workload.lease_ttl_s, process.random("leases"), process.sleep, lambda: self.running)

    async def _watcher(self, process: Process) -> None:
        index = int(process.name.rsplit("-", 1)[1])
        prefix = self.key_prefix
        watcher = Watcher(process, self.endpoints_of(index), prefix, prefix_range_end(prefix), start_revision=1, name=process.name)
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
            records = linearizable_records(event for event in events if event["type"] == "client-op")
            operations = from_client_records(records)
            if not operations:
                return Verdict(None, "no client operations were recorded")
            return check_linearizability(operations, RegisterModel(), time_limit_s=60.0)
        if name == "serializable-reads":
            from chaoskube.checkers.serializable import check_serializable_reads

            return run_checker(check_serializable_reads, events)
        if name == "watch":
            watchers = {f"watcher-{index}": self.key_prefix for index in range(1, self.workload.watchers + 1)}
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
    weights = (workload.read, workload.write, workload.cas, workload.serializable_read)
    sized = {"size": workload.value_bytes} if workload.value_bytes else {}
    while True:
        await sleep(rng.expovariate(rate))
        if not running():
            continue
        key = rng.choice(keys)
        # A fourth weight appended (serializable reads, 0 unless asked for) leaves every
        # draw of the first three as it was: random.choices takes one random() per pick.
        kind = rng.choices(("read", "write", "cas", "sread"), weights)[0]
        counter += 1
        value = index * 1_000_000 + counter
        if kind == "read":
            last_seen[key] = await client.read(key)
        elif kind == "sread":
            last_seen[key] = await client.read(key, serializable=True)
        elif kind == "write":
            if await client.write(key, value, **sized) == "ok":
                last_seen[key] = value
        else:
            expected = last_seen.get(key)
            if expected is None:
                last_seen[key] = await client.read(key)
                continue
            if await client.cas(key, expected, value, **sized) == "ok":
                last_seen[key] = value


def pinned_member(members: list[str], index: int) -> str:
    """The one member client (or watcher) ``index`` (1-based) is pinned to: clients spread
    over the members in turn, so with ``clients >= members`` every member has one."""
    assert members and index >= 1, (members, index)
    return members[(index - 1) % len(members)]


def linearizable_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``client-op`` records the linearizability checker judges: every operation but
    serializable reads (``consistency: serializable`` on the invoke). etcd promises those
    no recency -- a member serves them from its own store, which may be stale
    (https://etcd.io/docs/v3.5/learning/api_guarantees/: "Serializable requests are
    better for lower latency ... at the cost of possibly reading stale data") --, so the
    ``serializable-reads`` checker judges them against the store at their revision."""
    kept: list[dict[str, Any]] = []
    serializable: set[tuple[Any, Any]] = set()
    for record in records:
        pair = (record.get("client"), record.get("op_id"))
        if record.get("phase") == "invoke" and record.get("consistency") == "serializable":
            serializable.add(pair)
        if pair not in serializable:
            kept.append(record)
    return kept


# -- etcd's robustness Kubernetes traffic -----------------------------------------------------
#: ``KubernetesTraffic.writeChoices`` in etcd-io/etcd ``tests/robustness/traffic/kubernetes.go``
#: (commit 04346e870fc0): 75 % update, 15 % delete, 10 % create.
KUBERNETES_WRITE_CHOICES: tuple[tuple[str, int], ...] = (("update", 75), ("delete", 15), ("create", 10))
_NAME_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def choose_kubernetes_write(count: int, average_key_count: int, rng: random.Random) -> str:
    """``kubernetesTraffic.Write``'s choice: create below half the average key count,
    delete above one and a half times it, otherwise a weighted draw of
    :data:`KUBERNETES_WRITE_CHOICES` (Go's integer division kept)."""
    if count < average_key_count // 2:
        return "create"
    if count > average_key_count * 3 // 2:
        return "delete"
    kinds, weights = zip(*KUBERNETES_WRITE_CHOICES)
    return rng.choices(kinds, weights)[0]


class KubernetesView:
    """A client's view of the pods (``storage`` in kubernetes.go): key -> (mod revision,
    value), and the revision it reflects. A list resets it only when newer; a watch event
    older than the view is ignored."""

    __slots__ = ("keys", "revision")

    def __init__(self) -> None:
        self.keys: dict[str, tuple[int, int]] = {}
        self.revision = 0

    def reset(self, response: Any) -> None:
        if response.header_revision <= self.revision:
            return
        self.keys = {kv.key: (kv.mod_revision, int(kv.value)) for kv in response.kvs}
        self.revision = response.header_revision

    def update(self, event: Any) -> None:
        if event.kv.mod_revision < self.revision:
            return
        self.revision = event.kv.mod_revision
        if event.type == "PUT":
            self.keys[event.kv.key] = (event.kv.mod_revision, int(event.kv.value))
        else:
            self.keys.pop(event.kv.key, None)

    def pick(self, rng: random.Random) -> tuple[str, int, int]:
        """A key at random (in sorted order, so the draw is deterministic), with its mod
        revision and value."""
        key = rng.choice(sorted(self.keys))
        return key, *self.keys[key]


async def run_kubernetes_workload(
    client: EtcdClient,
    workload: EtcdWorkload,
    index: int,
    rng: random.Random,
    sleep: Callable[[float], Awaitable[None]],
    running: Callable[[], bool],
) -> None:
    """One client of etcd's robustness Kubernetes traffic (``kubernetesTraffic.Run``): a
    linearizable list of ``/registry/pods/`` first and after every write that failed, a
    watch from the list's revision + 1 on the same endpoints keeping the view fresh, and
    optimistic writes at the client's share of ``rate_per_s`` (Poisson arrivals, one in
    flight) chosen by :func:`choose_kubernetes_write`. Values are unique (``index`` x 10^6 +
    a counter), which makes a mod-revision compare the same test as a value compare
    (:meth:`EtcdClient.optimistic_write`), so the ``linearizability`` checker judges this
    traffic with its register model, one register per key (a delete sets it absent)."""
    process = client.process
    rate = workload.rate_per_s / workload.clients
    view = KubernetesView()
    end = prefix_range_end(KUBERNETES_PREFIX)
    counter = 0
    need_list = True
    watching = False
    async with trio.open_nursery() as nursery:
        while True:
            await sleep(rng.expovariate(rate))
            if not running():
                continue
            if need_list:
                response = await client.list(KUBERNETES_PREFIX, end, sorted(view.keys))
                if response is None:
                    continue
                view.reset(response)
                need_list = False
                if not watching:
                    watching = True
                    watcher = Watcher(process, client.endpoints, KUBERNETES_PREFIX, end, start_revision=response.header_revision + 1, name=f"{client.name}/watch", on_event=view.update, journal=False)
                    nursery.start_soon(watcher.run)
                continue
            kind = choose_kubernetes_write(len(view.keys), workload.keys, rng)
            counter += 1
            value = index * 1_000_000 + counter
            if kind == "create":
                name = "".join(rng.choice(_NAME_LETTERS) for _ in range(5))
                status, _, _ = await client.optimistic_write("create", f"{KUBERNETES_PREFIX}default/{name}", 0, None, value)
            else:
                key, mod_revision, seen = view.pick(rng)
                status, _, _ = await client.optimistic_write(kind, key, mod_revision, seen, value if kind == "update" else None)
            # A compare that failed is an answer (the view was stale; the watch refreshes
            # it), as in kubernetes.go; only an error makes the client list again.
            need_list = status in ("fail", "info")


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

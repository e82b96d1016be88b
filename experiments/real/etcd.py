"""Real etcd (``real-etcd``): the Debian etcd binary, a JSON-gateway workload, real time.

The cluster is ``chaoskube.experiments.real.cluster.RealEtcdCluster`` (3 processes on loopback, every peer
link through our Toxiproxy-compatible server). The workload is the simulated ``etcd``
system's, over etcd's v3 JSON gateway (``/v3/kv/put``, ``/v3/kv/range``, ``/v3/kv/txn``;
keys and values base64) with httpx on Trio and the real clock:

* ``clients`` clients, one operation in flight each, Poisson arrivals at ``rate_per_s`` in
  total, reads / writes / compare-and-sets on ``keys`` keys, each recorded as
  ``client-op`` events exactly as ``chaoskube.etcd.client.EtcdClient`` records them
  (invoke, then ok / fail / info; ``t`` = real seconds since the run started). A read that
  fails or times out is ``fail`` (it has no effect); a write or cas that times out, or
  gets an error etcd may give after proposing, is ``info``; a refused connection or an
  error etcd gives before proposing ("no leader", "too many requests") is ``fail``.
  Acknowledged writes carry the ``revision`` of the response header.
* ``watchers`` watchers on the ``key/`` prefix over the gateway's ``/v3/watch`` stream
  (with the gRPC ``hasleader`` requirement, so a member that loses its leader ends the
  stream), resuming on the next member from the last revision + 1, recording
  ``watch-start`` / ``watch-event`` / ``watch-break`` like ``chaoskube.etcd.client.Watcher``.
* a leader poller: ``/v3/maintenance/status`` on every member every 100 ms, recording a
  ``leader`` event (member, leader, term) whenever a member's answer changes.

Checkers: ``linearizability`` (the same checker and model as the simulation),
``watch`` (:func:`check_real_watches`: the store's history is what acknowledged writes
report, since a real etcd journals no raft-apply events), ``leader-election`` (at most one
leader per term in every poll), ``steady-state``.

This class subclasses ``System`` so that experiment files validate; the run itself is
``real/runner.run_real_experiment`` (``real_time = True``).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import msgspec
import trio

from chaoskube.checkers.history import from_client_records
from chaoskube.checkers.linearizability import RegisterModel, check_linearizability
from chaoskube.checkers.verdict import Verdict
from chaoskube.etcd.client import OperationLog
from chaoskube.experiments.real.cluster import REAL_KINDS
from chaoskube.experiments.systems.base import System
from chaoskube.experiments.systems.etcd import EtcdWorkload, run_register_workload

KEY_PREFIX = "key/"
POLL_EVERY_S = 0.1
# Errors etcd answers before it proposes anything: the operation definitely did not happen.
DEFINITE_ERRORS = ("no leader", "too many requests", "not capable", "unhealthy cluster", "permission denied")


class RealEtcdCluster(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    members: int = 3
    heartbeat_ms: int = 100  # etcd's default; the catalogue uses 50 / 500 for short runs
    election_ms: int = 1000
    pre_vote: bool = True
    compare_with_simulation: bool = True  # also run the simulated `etcd` system, same schedule
    # HOST:PORT of a Toxiproxy server to use (a real Toxiproxy, or `chaoskube toxiproxy`);
    # empty: start chaoskube's own inside the run. A real Toxiproxy lacks the
    # chaoskube_block_from extension, so partition faults need chaoskube's server.
    toxiproxy: str = ""

    def __post_init__(self) -> None:
        if self.members not in (1, 3, 5):
            raise ValueError("`members` must be 1, 3 or 5")
        if self.election_ms < 5 * self.heartbeat_ms:
            raise ValueError("`election_ms` must be at least 5 x `heartbeat_ms` (etcd's rule)")
        if self.toxiproxy:
            from chaoskube.faults.toxiproxy.proxy import AddressError, parse_address

            try:
                parse_address(self.toxiproxy)
            except AddressError as error:
                raise ValueError(f"`toxiproxy`: {error}") from None


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def unb64(text: str | None) -> str | None:
    return None if text is None else base64.b64decode(text).decode()


class Recorder:
    """Journal events stamped with real seconds since ``origin`` (``trio.current_time()``)."""

    def __init__(self, journal: Any, origin: float) -> None:
        self.journal = journal
        self.origin = origin

    @property
    def now(self) -> float:
        return trio.current_time() - self.origin

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        fields["t"] = round(self.now, 6)
        fields["type"] = type
        self.journal.write(fields)


class GatewayResult(msgspec.Struct, frozen=True):
    status: str  # ok | fail | info
    body: dict[str, Any] | None = None
    reason: str = ""
    member: str = ""


class GatewayClient:
    """A recording register client over etcd's JSON gateway. Retries only where safe, as
    ``chaoskube.etcd.client.EtcdClient``: a definite failure on the next endpoint; an
    unknown outcome only for reads; at most ``attempts`` in all."""

    def __init__(self, http: Any, endpoints: dict[str, str], recorder: Recorder, name: str, *, timeout_s: float, rng: random.Random, attempts: int = 3) -> None:
        self.http = http
        self.endpoints = sorted(endpoints.items())
        self.recorder = recorder
        self.name = name
        self.timeout_s = timeout_s
        self.attempts = attempts
        self._endpoint = rng.randrange(len(self.endpoints))
        self.operations = OperationLog(recorder.record, name)

    def rotate(self) -> None:
        self._endpoint += 1

    async def once(self, path: str, body: dict[str, Any]) -> GatewayResult:
        import httpx

        member, url = self.endpoints[self._endpoint % len(self.endpoints)]
        reply = None
        try:
            with trio.move_on_after(self.timeout_s):
                reply = await self.http.post(url + path, json=body)
        except httpx.ConnectError as error:
            return GatewayResult("fail", None, f"connect: {error}", member)
        except httpx.HTTPError as error:
            return GatewayResult("info", None, f"{type(error).__name__}: {error}", member)
        if reply is None:
            return GatewayResult("info", None, "timed out", member)
        try:
            payload = reply.json()
        except ValueError:
            payload = {"error": reply.text[:200]}
        if reply.status_code == 200:
            return GatewayResult("ok", payload, "", member)
        error_text = str(payload.get("error") or payload.get("message") or reply.status_code)
        definite = any(marker in error_text for marker in DEFINITE_ERRORS)
        return GatewayResult("fail" if definite else "info", payload, error_text, member)

    async def request(self, path: str, body: dict[str, Any], *, idempotent: bool) -> GatewayResult:
        result = await self.once(path, body)
        for attempt in range(1, self.attempts):
            if result.status == "ok" or not (result.status == "fail" or idempotent):
                return result
            self.rotate()  # the member that failed may be down
            await trio.sleep(0.05 * 2 ** (attempt - 1))
            result = await self.once(path, body)
        if result.status != "ok":
            self.rotate()
        return result

    async def read(self, key: str) -> int | None:
        op_id = self.operations.invoke("read", key, None)
        result = await self.request("/v3/kv/range", {"key": b64(key)}, idempotent=True)
        if result.status == "ok":
            kvs = (result.body or {}).get("kvs") or []
            value = int(unb64(kvs[0].get("value", "")) or 0) if kvs else None
            self.operations.complete("ok", op_id, "read", key, None, value, member=result.member)
            return value
        self.operations.complete("fail", op_id, "read", key, None, reason=result.reason, member=result.member)
        return None

    async def write(self, key: str, value: int) -> str:
        op_id = self.operations.invoke("write", key, value)
        result = await self.request("/v3/kv/put", {"key": b64(key), "value": b64(str(value))}, idempotent=False)
        revision = _revision(result.body) if result.status == "ok" else None
        self.operations.complete(result.status, op_id, "write", key, value, reason=result.reason, revision=revision, member=result.member)
        return result.status

    async def cas(self, key: str, expected: int, new: int) -> str:
        op_id = self.operations.invoke("cas", key, [expected, new])
        txn = {
            "compare": [{"key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64(str(expected))}],
            "success": [{"request_put": {"key": b64(key), "value": b64(str(new))}}],
        }
        result = await self.request("/v3/kv/txn", txn, idempotent=False)
        if result.status == "ok":
            succeeded = bool((result.body or {}).get("succeeded", False))  # false is omitted
            self.operations.complete("ok", op_id, "cas", key, [expected, new], succeeded, revision=_revision(result.body) if succeeded else None, member=result.member)
            return "ok" if succeeded else "fail"
        self.operations.complete(result.status, op_id, "cas", key, [expected, new], reason=result.reason, member=result.member)
        return result.status


def _revision(body: dict[str, Any] | None) -> int | None:
    try:
        return int((body or {})["header"]["revision"])
    except (KeyError, TypeError, ValueError):
        return None


async def run_client(client: GatewayClient, workload: EtcdWorkload, keys: list[str], index: int, rng: random.Random, running: Callable[[], bool]) -> None:
    """One client's loop: the simulated system's workload, on the real clock."""
    await run_register_workload(client, workload, keys, index, rng, trio.sleep, running)


async def run_watcher(http: Any, endpoints: dict[str, str], recorder: Recorder, name: str, *, start_revision: int = 1) -> None:
    """A resumable watch on the ``key/`` prefix over ``/v3/watch`` (newline-delimited JSON).
    On a broken or cancelled stream it watches again on the next member from the last
    revision it saw + 1, as etcd clients do."""
    import httpx

    ordered = sorted(endpoints.items())
    next_revision = start_revision
    turn = 0
    prefix_end = KEY_PREFIX[:-1] + chr(ord(KEY_PREFIX[-1]) + 1)
    while True:
        member, url = ordered[turn % len(ordered)]
        turn += 1
        body = {"create_request": {"key": b64(KEY_PREFIX), "range_end": b64(prefix_end), "start_revision": next_revision}}
        created = False
        reason = "stream ended"
        try:
            async with http.stream("POST", url + "/v3/watch", json=body, headers={"Grpc-Metadata-hasleader": "true"}, timeout=httpx.Timeout(2.0, read=None)) as response:
                if response.status_code != 200:
                    reason = f"HTTP {response.status_code}"
                else:
                    async for line in response.aiter_lines():
                        if not line.strip():
                            continue
                        message = msgspec.json.decode(line)
                        if "error" in message:
                            reason = str(message["error"].get("message", message["error"]))
                            break
                        result = message.get("result", {})
                        if result.get("created"):
                            created = True
                            recorder.record("watch-start", watcher=name, member=member, start_revision=next_revision, ok=True)
                        if result.get("canceled") or result.get("compact_revision"):
                            reason = str(result.get("cancel_reason") or "canceled")
                            break
                        for event in result.get("events") or []:
                            kv = event["kv"]
                            change = event.get("type", "PUT")
                            revision = int(kv["mod_revision"])
                            recorder.record("watch-event", watcher=name, member=member, revision=revision, key=unb64(kv["key"]), event=change, value=unb64(kv.get("value", "")) if change == "PUT" else None)
                            next_revision = revision + 1
        except (httpx.HTTPError, msgspec.DecodeError) as error:
            reason = f"{type(error).__name__}: {error}"
        if created:
            recorder.record("watch-break", watcher=name, member=member, next_revision=next_revision, reason=reason)
        else:
            recorder.record("watch-start", watcher=name, member=member, start_revision=next_revision, ok=False, reason=reason)
        await trio.sleep(0.2)


class LeaderPoller:
    """Polls ``/v3/maintenance/status`` on every member every ``every_s``; records a
    ``leader`` event when a member's (leader, term) answer changes, and keeps the latest
    answers for fault targeting (``leader()``)."""

    def __init__(self, http: Any, endpoints: dict[str, str], recorder: Recorder, name_of_id: Callable[[str], str | None], *, every_s: float = POLL_EVERY_S) -> None:
        self.http = http
        self.endpoints = dict(sorted(endpoints.items()))
        self.recorder = recorder
        self.name_of_id = name_of_id
        self.every_s = every_s
        self.answers: dict[str, tuple[str | None, int] | None] = {}

    async def poll_member(self, member: str) -> None:
        url = self.endpoints[member]
        answer: tuple[str | None, int] | None = None
        with trio.move_on_after(max(self.every_s * 3, 0.3)):
            try:
                reply = await self.http.post(url + "/v3/maintenance/status", json={})
                if reply.status_code == 200:
                    body = reply.json()
                    leader_id = body.get("leader", "0")  # omitted (zero) when it knows no leader
                    answer = (self.name_of_id(leader_id) if leader_id not in ("0", 0) else None, int(body.get("raftTerm", 0)))
            except Exception:  # noqa: BLE001 - unreachable is an answer too
                answer = None
        if self.answers.get(member, "never") != answer:
            self.recorder.record("leader", member=member, leader=answer[0] if answer else None, term=answer[1] if answer else None, reachable=answer is not None)
        self.answers[member] = answer

    async def poll_once(self) -> dict[str, tuple[str | None, int] | None]:
        async with trio.open_nursery() as nursery:
            for member in self.endpoints:
                nursery.start_soon(self.poll_member, member)
        return dict(self.answers)

    async def run(self) -> None:
        """One loop per member, so that a member that does not answer (paused, killed)
        does not slow the polls of the others."""

        async def loop(member: str) -> None:
            while True:
                await self.poll_member(member)
                await trio.sleep(self.every_s)

        async with trio.open_nursery() as nursery:
            for member in self.endpoints:
                nursery.start_soon(loop, member)

    def leader(self, alive: Callable[[str], bool] = lambda name: True) -> str | None:
        """The leader the highest term's answers name, if that member is alive."""
        best: tuple[int, str] | None = None
        for answer in self.answers.values():
            if answer and answer[0] is not None and (best is None or answer[1] > best[0]):
                best = (answer[1], answer[0])
        return best[1] if best is not None and alive(best[1]) else None


# -- checkers -----------------------------------------------------------------------------------


def leadership_runs(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each member's stretches of claiming to lead, from its own status answers.

    etcd's status ``raftTerm`` is the term of the last *applied* entry (``EtcdServer.Term``),
    not raft's current term: a member that has just learned of a new leader, or a leader
    that has not yet applied the empty entry of its term, reports the previous term. So a
    claim by another member (hearsay) is not used, and a run's term is the highest term
    the leader reported during the run. A run ends at the member's next answer that names
    someone else, no one, or cannot be had; or at the end of the journal."""
    runs: list[dict[str, Any]] = []
    open_runs: dict[str, dict[str, Any]] = {}
    last_t = 0.0
    for event in events:
        last_t = max(last_t, event.get("t", 0.0))
        if event["type"] != "leader":
            continue
        member = event["member"]
        current = open_runs.get(member)
        if event.get("leader") == member:
            if current is None:
                current = open_runs[member] = {"leader": member, "term": event["term"], "start": event["t"], "end": None, "events": [event]}
                runs.append(current)
            else:
                current["term"] = max(current["term"], event["term"])
                current["events"].append(event)
        elif current is not None:
            current["end"] = event["t"]
            del open_runs[member]
    for run in open_runs.values():
        run["end"] = last_t
    return runs


def check_leader_election(events: Iterable[dict[str, Any]]) -> Verdict:
    """Election safety as the status polls can show it: no two members claim to lead the
    same term at overlapping times (see :func:`leadership_runs` for what a poll can and
    cannot tell). Non-guarantee: a leader deposed before it applied an entry of its own
    term shows the previous term, so two leaders of one term that never overlap in the
    polls (100 ms apart) are not reported."""
    runs = leadership_runs(events)
    if not runs:
        return Verdict(None, "no member ever claimed to lead in the status polls")
    for index, first in enumerate(runs):
        for second in runs[index + 1 :]:
            if first["leader"] != second["leader"] and first["term"] == second["term"] and first["start"] < second["end"] and second["start"] < first["end"]:
                return Verdict(False, f"term {first['term']}: {first['leader']} and {second['leader']} both claimed to lead, at {max(first['start'], second['start']):.3f} s", (first["events"][0], second["events"][0]))
    terms = sorted({run["term"] for run in runs})
    return Verdict(True, f"one leader per term: {len(runs)} leadership runs in terms {', '.join(map(str, terms))}", details={"runs": [{key: run[key] for key in ("leader", "term", "start", "end")} for run in runs]})


def check_real_watches(events: Iterable[dict[str, Any]], prefixes: dict[str, str]) -> Verdict:
    """Watch guarantees against the history acknowledged writes reveal.

    The store's history here is partial: the revision and value of every *acknowledged*
    write or successful cas (response headers). Writes with unknown outcome may hold the
    other revisions. So, per watcher: revisions strictly increase; an event at an
    acknowledged revision matches that write (key and value); an event at another
    revision carries a value some client tried to write to that key (none is invented);
    and every acknowledged write on its prefix between the revision it first started from
    and the last one it received was delivered.
    """
    acknowledged: dict[int, tuple[str, str]] = {}
    attempted: set[tuple[str, str]] = set()
    invoked: dict[tuple[Any, Any], dict[str, Any]] = {}
    received: dict[str, list[dict[str, Any]]] = {}
    started: dict[str, int] = {}
    for event in events:
        kind = event["type"]
        if kind == "client-op":
            pair = (event["client"], event["op_id"])
            if event["phase"] == "invoke":
                invoked[pair] = event
                if event["f"] == "write":
                    attempted.add((event["key"], str(event["value"])))
                elif event["f"] == "cas":
                    attempted.add((event["key"], str(event["value"][1])))
            elif event["phase"] == "ok" and event.get("revision") is not None and event["f"] in ("write", "cas"):
                value = event["value"] if event["f"] == "write" else event["value"][1]
                entry = (event["key"], str(value))
                previous = acknowledged.setdefault(event["revision"], entry)
                if previous != entry:
                    return Verdict(False, f"two acknowledged writes at revision {event['revision']}: {previous} and {entry}", (event,))
        elif kind == "watch-start" and event.get("ok"):
            started.setdefault(event["watcher"], event["start_revision"])
        elif kind == "watch-event":
            received.setdefault(event["watcher"], []).append(event)
    if not received:
        return Verdict(None, "no watcher received any event")
    total = 0
    for watcher, got in sorted(received.items()):
        prefix = prefixes.get(watcher, "")
        previous_revision = 0
        seen: set[int] = set()
        for event in got:
            revision = event["revision"]
            if revision <= previous_revision:
                return Verdict(False, f"{watcher}: revision {revision} arrived after revision {previous_revision} (out of order or duplicated)", (event,))
            previous_revision = revision
            entry = (event["key"], event["value"])
            expected = acknowledged.get(revision)
            if expected is not None and (event["event"] != "PUT" or entry != expected):
                return Verdict(False, f"{watcher} received {event['event']} {entry} at revision {revision}, but the write acknowledged there was {expected}", (event,))
            if expected is None and event["event"] == "PUT" and entry not in attempted:
                return Verdict(False, f"{watcher} received {entry} at revision {revision}, which no client ever wrote", (event,))
            seen.add(revision)
        first, last = started.get(watcher, got[0]["revision"]), got[-1]["revision"]
        for revision in range(first, last + 1):
            expected = acknowledged.get(revision)
            if expected is not None and expected[0].startswith(prefix) and revision not in seen:
                return Verdict(False, f"{watcher} missed the acknowledged PUT {expected} at revision {revision} (it received revisions {first}..{last})", ({"revision": revision, "key": expected[0], "value": expected[1]},))
        total += len(got)
    return Verdict(True, f"{len(received)} watchers received {total} events, ordered, complete against {len(acknowledged)} acknowledged writes, none invented")


def check_history(events: Iterable[dict[str, Any]], time_limit_s: float = 60.0) -> Verdict:
    records = [event for event in events if event["type"] == "client-op"]
    operations = from_client_records(records)
    if not operations:
        return Verdict(None, "no client operations were recorded")
    return check_linearizability(operations, RegisterModel(), time_limit_s=time_limit_s)


def first_fault_figures(events: list[dict[str, Any]], leader_types: tuple[str, ...] = ("leader",)) -> dict[str, Any]:
    """Figures after the first applied fault, from a real or a simulated journal: time to
    a leader of a higher term than any seen before the fault, and time to the first
    acknowledged write (or successful cas) invoked after the fault."""
    applied = [event for event in events if event["type"] == "fault" and event.get("event") == "apply"]
    if not applied:
        return {"first_fault_at_s": None, "time_to_new_leader_s": None, "time_to_write_s": None}
    at = applied[0]["t"]
    term_before = 0
    new_leader: float | None = None
    for event in events:
        if event["type"] == "leader" and event.get("leader") is not None:
            term = event["term"]
        elif event["type"] == "raft-role" and event.get("role") == "leader":
            term = event["term"]
        else:
            continue
        if event["t"] <= at:
            term_before = max(term_before, term)
        elif term > term_before and new_leader is None:
            new_leader = event["t"] - at
    invoked_after: set[tuple[Any, Any]] = set()
    write_at: float | None = None
    for event in events:
        if event["type"] != "client-op" or event["f"] not in ("write", "cas"):
            continue
        pair = (event["client"], event["op_id"])
        if event["phase"] == "invoke" and event["t"] > at:
            invoked_after.add(pair)
        elif event["phase"] == "ok" and pair in invoked_after and (event["f"] == "write" or event.get("output") is True):
            write_at = event["t"] - at
            break
    return {
        "first_fault_at_s": round(at, 6),
        "first_fault": f"{applied[0]['kind']} {','.join(applied[0]['targets'])}",
        "time_to_new_leader_s": None if new_leader is None else round(new_leader, 6),
        "time_to_write_s": None if write_at is None else round(write_at, 6),
    }


def operation_counts(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = {"ok": 0, "fail": 0, "info": 0}
    for event in events:
        if event["type"] == "client-op" and event["phase"] != "invoke":
            counts[event["phase"]] += 1
    return counts


class RealEtcdSystem(System):
    """The ``real-etcd`` system. Validation and checker names only: the run is
    ``real/runner.run_real_experiment``."""

    name = "real-etcd"
    real_time: ClassVar[bool] = True
    LEADER_ROLES = frozenset({"etcd"})
    RUNS = ()  # real etcd processes: no gallery variant patches them
    FAULT_KINDS = REAL_KINDS  # what real/cluster.py can apply to real processes

    @classmethod
    def process_infos(cls, cluster: Any, workload: Any) -> list[Any]:
        """The members, as real/runner.py names them for fault planning (no zones)."""
        from chaoskube.faults import ProcessInfo

        return [ProcessInfo(f"etcd-{index}", "etcd", None) for index in range(1, cluster.members + 1)]
    Cluster = RealEtcdCluster
    Workload = EtcdWorkload
    CHECKERS = {
        "linearizability": "the client history over the JSON gateway is linearizable (a register per key)",
        "watch": "every watcher's events are ordered, complete against the acknowledged writes, none invented",
        "leader-election": "no two members named as leader of the same term by the status polls",
        "steady-state": "before the faults and after heal: a leader, and a write and a read through every member",
    }

    @classmethod
    def options(cls, cluster: dict[str, Any], workload: dict[str, Any], *, base_dir: Any = None) -> tuple[Any, Any]:
        """As the base class; the simulated system's client topologies (issue 16) are
        refused rather than silently ignored: the gateway clients here rotate over the
        members and make register operations only."""
        from chaoskube.experiments.model import ExperimentError

        typed_cluster, typed_workload = super().options(cluster, workload, base_dir=base_dir)
        for name, default in (("topology", "rotate"), ("traffic", "register"), ("serializable_read", 0.0), ("value_bytes", 0)):
            if getattr(typed_workload, name) != default:
                raise ExperimentError(f"field `workload.{name}`: not supported by the real-etcd system (simulated `etcd` only); remove it")
        return typed_cluster, typed_workload

    def __init__(self, events: list[dict[str, Any]], cluster: RealEtcdCluster, workload: EtcdWorkload) -> None:
        # No simulated world: the checkers read the recorded events.
        self.world = None  # type: ignore[assignment]
        self.cluster = cluster
        self.workload = workload
        self.events = events
        self.steady_state_verdict: Verdict | None = None

    def check(self, name: str) -> Verdict:
        if name == "steady-state":
            return self.steady_state_verdict or Verdict(None, "the steady state was never probed")
        if name == "linearizability":
            return check_history(self.events)
        if name == "watch":
            return check_real_watches(self.events, {f"watcher-{index}": KEY_PREFIX for index in range(1, self.workload.watchers + 1)})
        if name == "leader-election":
            return check_leader_election(self.events)
        raise KeyError(name)

    def metrics(self) -> dict[str, Any]:
        counts = operation_counts(self.events)
        terms = [event["term"] for event in self.events if event["type"] == "leader" and event.get("term")]
        return {
            "operations_ok": counts["ok"],
            "operations_fail": counts["fail"],
            "operations_info": counts["info"],
            "highest_term": max(terms, default=0),
        } | first_fault_figures(self.events)


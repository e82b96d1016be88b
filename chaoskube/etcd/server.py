"""An etcd member on the simulated network: the Trio shell around the pure Raft and MVCC.

One process per member (``etcd-1`` ... ``etcd-N``, Raft ids 1..N), each with its own disk.
The member follows Raft's caller contract (see :mod:`chaoskube.etcd.raft`):

1. persist the hard state, entries and snapshot, then ``await disk.fsync``;
2. send the messages (port ``raft``);
3. apply the snapshot and the committed entries to the MVCC store, fan events out to
   watchers, answer the clients whose proposals or reads completed;
4. ``advance``.

Raft messages (port ``raft``), client requests (port ``client``), ticks (``raft.tick()``
every heartbeat interval, 100 ms by default as etcd's ``--heartbeat-interval``) and the
leader's lease-expiry check (etcd's lessor revokes expired leases through Raft) are
handled at delivery or by process timers, with no task of their own. A Ready that needs
no fsync (etcd's ``raft.MustSync``: no new entries, snapshot, term or vote) is handled
right there; one that does is written at once and finished by the fsync's completion
callback (``Disk.fsync_then``), with no task woken: one append and one fsync per Ready,
every proposal that arrived meanwhile batched into the next one, as etcd's raftNode
does. A request is answered at once, or when its read index or its proposal is applied,
or by a timer after the request timeout. A watch server task streams watch events. A
restarted member dials its peers (port ``peer``) and fast-forwards its election ticks once
more than one answered, as etcd's ``adjustTicks`` does (``EtcdMember._adjust_ticks``).

Linearizable reads are batched as etcd's ``linearizableReadLoop``
(``server/etcdserver/v3_server.go``): reads wait on the current "notifier"; one ReadIndex
round at a time confirms the commit index for every read that was waiting when it began,
and the reads that arrive during a round wait for the next one, which starts as soon as
it ends. A round without an answer is re-sent every 500 ms (``readIndexRetryTime``) and
fails its reads after the request timeout; a leader change fails the round's reads
(``ErrLeaderChanged``). A keep-alive on the leader waits on the same notifier before it
renews (``ensureLeadership``); when the round fails, it is answered NotPrimary.

Client requests (:class:`ClientRequest`) carry a unique id. Writes are proposed as
:class:`Proposal` (a follower forwards them to the leader inside Raft, as etcd does) and
answered when this member applies that id. Reads are linearizable (ReadIndex, as etcd's
default) unless ``serializable`` (served from the local store at once). Answers
(:class:`ClientReply`) are definite (``ok`` or a definite error such as "no leader": the
request did not happen) or ambiguous ("request timed out" after ``request_timeout_s``,
7 s as etcd's 5 s + 2 × election timeout: it may still commit).

Journal events (for the checkers): ``raft-role`` when a member's role, leader or term
changes, with its last log index/term when it becomes leader; ``raft-apply`` for every
committed entry a member applies (index, term, proposal id, resulting revision and the
key events it produced); ``etcd-snapshot`` when a member restores or takes a snapshot.

Not modelled: membership changes, learners, gRPC gateway details, MVCC backend
(bbolt) quotas and defragmentation, auth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


from chaoskube.etcd.lease import EXPIRED_LEASE_RETRY_INTERVAL_S
from chaoskube.etcd.mvcc import Store, WatchHub
from chaoskube.etcd.raft import (
    Entry,
    HardState,
    Message,
    Raft,
    RaftConfig,
    Ready,
    Role,
    Snapshot,
    Storage,
)
from chaoskube.etcd.requests import (
    ERROR_REQUEST_TOO_LARGE,
    MAX_REQUEST_BYTES,
    CompactedError,
    EtcdError,
    Event,
    LeaseGrantRequest,
    LeaseNotFoundError,
    LeaseRevokeRequest,
    NotPrimaryError,
    RangeRequest,
    request_bytes,
)
from chaoskube.sim import Process, World

RAFT_PORT = "raft"
CLIENT_PORT = "client"
WATCH_PORT = "watch"
#: rafthttp's stream dial between peers, answered at once: what makes a peer "active".
PEER_PORT = "peer"

ERROR_NO_LEADER = "etcdserver: no leader"
ERROR_TIMEOUT = "etcdserver: request timed out"
ERROR_LEADER_CHANGED = "etcdserver: leader changed"
LEASE_CHECK_INTERVAL_S = 0.5
#: etcd's ``monitorLeader`` cancels ``WithRequireLeader`` streams of a member that has had
#: no leader for this many election timeouts (``maxNoLeaderCnt = 3``).
REQUIRE_LEADER_ELECTIONS = 3
#: ``readIndexRetryTime``: a ReadIndex round with no answer is sent again after this.
READ_INDEX_RETRY_S = 0.5
#: etcd's ``adjustTicks`` polls for active peers every 50 ms for up to
#: ``rafthttp.ConnReadTimeout`` (5 s), then gives up without advancing.
TICK_ADVANCE_POLL_S = 0.05
TICK_ADVANCE_POLLS = 100


@dataclass(frozen=True)
class EtcdConfig:
    """A cluster's settings, with etcd's defaults."""

    members: int = 3
    heartbeat_ms: int = 100  # --heartbeat-interval
    election_ms: int = 1000  # --election-timeout
    snapshot_count: int = 10_000  # --snapshot-count (etcd 3.2-3.3 default; 3.4+ uses 100,000)
    pre_vote: bool = True  # --pre-vote (default true since etcd 3.5)
    check_quorum: bool = True  # etcd always runs with CheckQuorum
    fsync_ms: float = 1.0
    max_request_bytes: int = MAX_REQUEST_BYTES  # --max-request-bytes
    raft_class: type[Raft] = Raft  # a broken variant from raft_broken, for the gallery
    initial_election_tick_advance: bool = True  # --initial-election-tick-advance (EtcdMember._adjust_ticks)

    def __post_init__(self) -> None:
        assert self.members >= 1
        assert self.heartbeat_ms > 0 and self.election_ms >= 5 * self.heartbeat_ms, "etcd wants election >= 5 x heartbeat"

    @property
    def names(self) -> list[str]:
        return [member_name(index) for index in range(1, self.members + 1)]

    @property
    def election_tick(self) -> int:
        return self.election_ms // self.heartbeat_ms

    @property
    def request_timeout_s(self) -> float:
        # etcd: ReqTimeout() = 5 s + 2 x election timeout
        return 5.0 + 2 * self.election_ms / 1000.0


def entry_bytes(data: Any) -> int:
    """What a log entry's data weighs, for the byte limit of Raft appends
    (``RaftConfig.max_size_per_message``): its request's keys and values
    (:func:`request_bytes`) and its id; a new leader's empty entry weighs nothing."""
    if data is None:
        return 0
    return len(data.id) + request_bytes(data.request)


def member_name(raft_id: int) -> str:
    return f"etcd-{raft_id}"


def member_id(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


@dataclass(frozen=True, slots=True)
class Proposal:
    """The data of a log entry: a client request and its unique id."""

    id: str
    request: Any


@dataclass(frozen=True, slots=True)
class ClientRequest:
    id: str
    request: Any  # a request from chaoskube.etcd.requests, or KeepAlive


@dataclass(frozen=True, slots=True)
class PeerDial:
    """rafthttp's stream dial (``answer`` False) and its acceptance (``answer`` True): a
    peer that answered is one of the sender's ``ActivePeers``."""

    answer: bool = False


@dataclass(frozen=True, slots=True)
class KeepAlive:
    lease_id: int


@dataclass(frozen=True, slots=True)
class ClientReply:
    ok: bool
    response: Any = None
    error: str = ""
    ambiguous: bool = False  # the request may have happened (a timeout)
    member: str = ""


# -- watches over the network ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatchCreate:
    watch_id: str
    key: str
    range_end: str | None
    start_revision: int
    #: clientv3's ``WithRequireLeader``: the stream is only "alive" while this member has a
    #: leader (see :data:`REQUIRE_LEADER_ELECTIONS`). kube-apiserver opens its watches so
    #: (``apiserver/pkg/storage/etcd3/watcher.go``), so a cache fed by a member cut off from
    #: the quorum does not go stale for ever.
    require_leader: bool = False


@dataclass(frozen=True, slots=True)
class WatchProgress:
    watch_id: str


@dataclass(frozen=True, slots=True)
class WatchCancel:
    watch_id: str


@dataclass(frozen=True, slots=True)
class WatchEvents:
    """One message of a watch stream; ``sequence`` numbers messages of one stream from 1,
    so the client notices a lost message (a broken stream) and re-watches."""

    watch_id: str
    sequence: int
    events: tuple[Event, ...]
    kind: str = "watch-events"


@dataclass(frozen=True, slots=True)
class _Renewal:
    """A keep-alive waiting for its leader's leadership check (a ReadIndex round)."""

    message: Any
    keep_alive: KeepAlive
    term: int


@dataclass
class _Stream:
    client: str
    sequence: int = 0
    require_leader: bool = False


class EtcdMember:
    """The in-memory state of one member incarnation (rebuilt from disk on restart)."""

    def __init__(self, process: Process, config: EtcdConfig) -> None:
        self.process = process
        self.config = config
        self.world: World = process.world
        self.name = process.name
        self.incarnation = process.incarnation
        self.id = member_id(process.name)
        disk = process.disk
        if process.incarnation == 1:  # later incarnations keep the disk as faults left it
            disk.fsync_latency_s = config.fsync_ms / 1000.0
        hard_state: HardState = disk.read("hardstate", HardState())
        snapshot: Snapshot | None = disk.read("snapshot")
        entries = tuple(
            entry for _, entry in disk.items("entry/") if snapshot is None or entry.index > snapshot.index
        )
        self._stored_last = entries[-1].index if entries else (snapshot.index if snapshot else 0)
        self.store = Store.restore(snapshot.data) if snapshot is not None else Store()
        self.hub = WatchHub(self.store)
        rng = process.random("election")
        election_tick = config.election_tick
        self.raft = config.raft_class(
            RaftConfig(
                id=self.id,
                peers=tuple(range(1, config.members + 1)),
                election_tick=election_tick,
                heartbeat_tick=1,
                pre_vote=config.pre_vote,
                check_quorum=config.check_quorum,
                entry_size=entry_bytes,
            ),
            Storage(hard_state=hard_state, snapshot=snapshot, entries=entries),
            lambda: rng.randrange(election_tick, 2 * election_tick),
        )
        self._synced_term_vote = (hard_state.term, hard_state.vote)
        self.applied_index = snapshot.index if snapshot else 0
        self._last_snapshot_index = self.applied_index
        self._pending: Ready | None = None  # a Ready waiting for its fsync
        self._apply_queue: list[Entry] = []  # committed entries BUGGIFY holds back (etcd.commit-apply)
        self._proposals: dict[str, Any] = {}  # proposal id -> the client's request message
        # linearizableReadLoop: reads waiting for the next round (the current "notifier"),
        # the round in flight (its context and reads), rounds confirmed but not yet applied.
        # A read is a client's range request message, or a keep-alive's leadership check
        # (a _Renewal: ensureLeadership waits on the same notifier).
        self._reads_waiting: list[Any] = []
        self._read_round: tuple[str, list[Any]] | None = None
        self._read_index_waiting: list[tuple[int, str, list[Any]]] = []  # (read index, context, reads)
        self._streams: dict[str, _Stream] = {}
        self._read_counter = 0
        # statistics(): what this incarnation did
        self.proposals = 0
        self.appends = 0  # Readys whose entries were appended (one fsync each)
        self.leader_appends = 0  # of those, on the leader: proposals are batched per append
        self.readys = 0
        self.read_rounds = 0
        self.linearizable_reads = 0
        self.fsyncs = 0  # fsyncs this incarnation finished (the disk's own count runs on across restarts)
        self._role = Role.FOLLOWER
        self._term = hard_state.term
        self._lead = 0
        self._leaderless_since: float | None = process.now()  # no leader known yet
        self._revoking: dict[int, float] = {}  # lease id -> when its revocation was proposed
        self._active_peers: set[str] = set()  # peers that answered a PeerDial (rafthttp ActivePeers)
        if snapshot is not None:
            self.world.record("etcd-snapshot", member=self.name, event="restore", index=snapshot.index, revision=self.store.revision)

    # -- the tasks ----------------------------------------------------------------------
    async def serve(self) -> None:
        process = self.process
        process.on_message(RAFT_PORT, self._on_raft)
        process.on_message(CLIENT_PORT, self._on_client)
        process.on_message(PEER_PORT, self._on_peer)
        process.call_later(self.config.heartbeat_ms / 1000.0, self._on_tick)
        process.call_later(LEASE_CHECK_INTERVAL_S, self._on_lease_check)
        if self.incarnation > 1:
            self._adjust_ticks()
        await self._watch_loop()

    # -- the election tick advance on restart (etcd's adjustTicks) ---------------------------
    def _adjust_ticks(self) -> None:
        """etcd's ``EtcdServer.adjustTicks`` (``server/etcdserver/server.go``, run by
        ``start``; ``--initial-election-tick-advance``, on by default, etcd PR #9591): a
        single-member cluster advances ``ElectionTicks - 1`` ticks at once; a larger one polls
        every 50 ms, up to 5 s, until more than one peer is active (``peerN > 1``: both
        peers of a 3-member cluster), then advances ``ElectionTicks - 2`` ticks ("in case
        slow leader message receive"), so a restarted member whose leader is gone campaigns
        within 0.2-1.1 s instead of 1-2 s; with no active peers it advances nothing.

        Deviation, on purpose: only a restarted incarnation advances, not the first boot of
        the cluster. etcd advances there too; applying it would move the first election of
        every run, and with it every journal and every first-catch seed recorded in the
        tests and docs/checkers.md, for no behaviour the boot is there to test (who wins
        the first election of an empty log)."""
        if self.config.members == 1:
            self._advance_ticks(self.config.election_tick - 1)
            return
        if not self.config.initial_election_tick_advance:
            return
        self._dial_peers()
        self.process.call_later(TICK_ADVANCE_POLL_S, self._poll_active_peers, 1)

    def _dial_peers(self) -> None:
        # rafthttp's stream readers keep re-dialing a peer that has not answered.
        for name in self.config.names:
            if name != self.name and name not in self._active_peers:
                self.process.send(name, PeerDial(), port=PEER_PORT, duplicable=False)

    def _poll_active_peers(self, polls: int) -> None:
        if len(self._active_peers) > 1:
            self._advance_ticks(self.config.election_tick - 2)
            return
        if polls >= TICK_ADVANCE_POLLS:
            return  # no quorum of peers answered in 5 s: nothing to gain by advancing
        self._dial_peers()
        self.process.call_later(TICK_ADVANCE_POLL_S, self._poll_active_peers, polls + 1)

    def _advance_ticks(self, ticks: int) -> None:
        """etcd's ``raftNode.advanceTicks``: ``ticks`` ticks at once (fewer than the
        election tick, so none of them starts an election by itself)."""
        assert 0 <= ticks < self.config.election_tick
        self.process.log.info("fast-forwarding {} election ticks", ticks)
        for _ in range(ticks):
            self.raft.tick()
        self.drain()

    def _on_peer(self, message: Any) -> None:
        body = message.body
        if not isinstance(body, PeerDial):
            return
        if body.answer:
            self._active_peers.add(message.src)
        else:
            self.process.send(message.src, PeerDial(answer=True), port=PEER_PORT, duplicable=False)

    def _on_tick(self, _: Any = None) -> None:
        self.raft.tick()
        self.drain()
        self.process.call_later(self.config.heartbeat_ms / 1000.0, self._on_tick)

    def _on_raft(self, message: Any) -> None:
        self.raft.step(message.body)
        self.drain()

    def drain(self) -> None:
        """Handle every Ready that needs no fsync right here (persist, send, apply,
        advance); for the first one that does, start the fsync and finish it in the
        fsync's callback. While that one is outstanding, raft hands out nothing more
        (``has_ready`` is false), so the order persist -> send -> apply -> advance always
        holds."""
        raft = self.raft
        while self._pending is None and raft.has_ready():
            ready = raft.ready()
            self.readys += 1
            if ready.entries:
                self.appends += 1
                if raft.role is Role.LEADER:
                    self.leader_appends += 1
            if self._write(ready):
                self._pending = ready
                self.process.disk.fsync_then(self.process, self._synced)
                return
            self._finish(ready)

    def _synced(self) -> None:
        """The pending Ready's writes are durable: send, apply, advance; then the next.
        BUGGIFY (``etcd.persist-send``) may hold it a little longer, as a late goroutine."""
        self.fsyncs += 1
        buggify = self.world.buggify
        if buggify.enabled:
            delay = buggify.delay_s("etcd.persist-send", self.process)
            if delay:
                self.process.call_later(delay, self._finish_pending)
                return
        self._finish_pending()

    def _finish_pending(self, _: Any = None) -> None:
        ready, self._pending = self._pending, None
        assert ready is not None
        self._finish(ready)
        self.drain()

    def _finish(self, ready: Ready) -> None:
        self._send(ready.messages)
        self._apply(ready)
        self.raft.advance(ready)
        self._maybe_snapshot()

    # -- 1. persist -------------------------------------------------------------------
    def _write(self, ready: Ready) -> bool:
        """Write what ``ready`` asks to persist; returns whether it must be fsynced
        before anything is sent (etcd's raft.MustSync: new entries, a snapshot, a new
        term or vote; a new commit index alone is written but not synced)."""
        disk = self.process.disk
        must_sync = False
        if ready.snapshot is not None:
            # A snapshot from the leader replaces the whole stored log: entries past its
            # index are an uncommitted, divergent tail (etcd's MemoryStorage.ApplySnapshot).
            disk.write("snapshot", ready.snapshot)
            for key in disk.keys("entry/"):
                disk.delete(key)
            self._stored_last = ready.snapshot.index
            must_sync = True
        if ready.entries:
            first = ready.entries[0].index
            for entry in ready.entries:
                disk.write(f"entry/{entry.index:012d}", entry)
            last = ready.entries[-1].index
            for index in range(last + 1, self._stored_last + 1):  # a conflicting suffix
                disk.delete(f"entry/{index:012d}")
            assert first <= self._stored_last + 1, (first, self._stored_last)
            self._stored_last = last
            must_sync = True
        if ready.hard_state is not None:
            disk.write("hardstate", ready.hard_state)
            state = ready.hard_state
            if (state.term, state.vote) != self._synced_term_vote:
                self._synced_term_vote = (state.term, state.vote)
                must_sync = True
        return must_sync

    # -- 2. send ----------------------------------------------------------------------
    def _send(self, messages: tuple[Message, ...]) -> None:
        process = self.process
        buggify = self.world.buggify
        for message in messages:
            if buggify.enabled:  # BUGGIFY: rafthttp's pipeline may overtake (or be overtaken by) its stream
                delay = buggify.delay_s("etcd.raft-reorder", process)
                if delay:
                    process.call_later(delay, self._send_late, message)
                    continue
            process.send(member_name(message.to), message, port=RAFT_PORT, duplicable=False)  # rafthttp: TCP

    def _send_late(self, message: Message) -> None:
        self.process.send(member_name(message.to), message, port=RAFT_PORT, duplicable=False)

    # -- 3. apply ---------------------------------------------------------------------
    def _apply(self, ready: Ready) -> None:
        if ready.soft_state is not None or (ready.hard_state is not None and ready.hard_state.term != self._term):
            self._on_role_change(ready)
        if ready.snapshot is not None and ready.snapshot.index > self.applied_index:
            self._apply_held()  # the entries committed before the snapshot first, as etcd's FIFO
            self._restore(ready.snapshot)
        if self._apply_queue:  # BUGGIFY held earlier entries: these wait behind them
            self._apply_queue.extend(ready.committed_entries)
        elif ready.committed_entries and self._apply_later():
            self._apply_queue = list(ready.committed_entries)
        else:
            for entry in ready.committed_entries:
                if entry.index <= self.applied_index:
                    continue
                self._apply_entry(entry)
        for read_state in ready.read_states:
            round_ = self._read_round
            if round_ is not None and read_state.context == round_[0]:
                self._read_round = None
                self._read_index_waiting.append((read_state.index, round_[0], round_[1]))
        self._serve_confirmed_reads()
        if self._reads_waiting and self._read_round is None:
            self.process.call_later(0.0, self._next_read_round)

    def _apply_later(self) -> bool:
        """BUGGIFY (``etcd.commit-apply``): defer this Ready's committed entries, as
        etcd's apply goroutine lags raft; True when a delay was scheduled."""
        buggify = self.world.buggify
        if not buggify.enabled:
            return False
        delay = buggify.delay_s("etcd.commit-apply", self.process)
        if not delay:
            return False
        self.process.call_later(delay, self._apply_queued)
        return True

    def _apply_held(self) -> bool:
        """Apply the committed entries BUGGIFY held, in order; whether there were any."""
        queue, self._apply_queue = self._apply_queue, []
        for entry in queue:
            if entry.index <= self.applied_index:
                continue
            self._apply_entry(entry)
        return bool(queue)

    def _apply_queued(self, _: Any = None) -> None:
        """The delay is over: apply the held entries, then serve the reads they unblock."""
        if not self._apply_held():
            return  # a snapshot's Ready applied them already
        self._serve_confirmed_reads()
        if self._reads_waiting and self._read_round is None:
            self.process.call_later(0.0, self._next_read_round)
        self._maybe_snapshot()

    def _serve_confirmed_reads(self) -> None:
        """Serve the reads whose ReadIndex round is confirmed and whose index is applied."""
        if self._read_index_waiting:
            still: list[tuple[int, str, list[Any]]] = []
            for index, context, reads in self._read_index_waiting:
                if index > self.applied_index:
                    still.append((index, context, reads))
                    continue
                for message in reads:  # unblock every read of the round
                    if isinstance(message, _Renewal):
                        self._finish_renewal(message)
                    else:
                        self._reply_range(message, message.body.request)
            self._read_index_waiting = still

    def _on_role_change(self, ready: Ready) -> None:
        raft = self.raft
        role, term, lead = raft.role, raft.term, raft.lead
        if (role, term, lead) == (self._role, self._term, self._lead):
            return
        was_leader = self._role is Role.LEADER
        self._role, self._term, self._lead = role, term, lead
        fields: dict[str, Any] = {"member": self.name, "role": role.name.lower(), "term": term, "lead": member_name(lead) if lead else None}
        if role is Role.LEADER:
            # What the new leader held when elected: everything before the empty entry it
            # appends for its term (entries proposed since then do not count).
            empty = next((entry for entry in ready.entries if entry.term == term and entry.data is None), None)
            fields["last_index"] = empty.index if empty is not None else None
            fields["last_term"] = raft.log.last_term()
        self.world.record("raft-role", **fields)
        if lead and self._leaderless_since is not None:
            self._leaderless_since = None
        elif not lead and self._leaderless_since is None:
            self._leaderless_since = self.process.now()
        self.process.log.info("{} in term {} (leader: {})", role.name.lower(), term, fields["lead"] or "none")
        if was_leader and role is not Role.LEADER:
            self.store.lessor.demote()
            self._revoking.clear()
        if role is not Role.LEADER:  # reads waiting for a ReadState from the old leader get none
            self._fail_pending_reads()

    def _fail_pending_reads(self) -> None:
        # ReadIndex requests in flight are dropped by raft on a leader change: answer
        # their reads now (etcd: ErrLeaderChanged) rather than at the request timeout.
        # Reads waiting for the next round stay; it starts once there is a leader.
        failed = [message for _, _, reads in self._read_index_waiting for message in reads]
        if self._read_round is not None:
            failed += self._read_round[1]
        self._read_round = None
        self._read_index_waiting = []
        for message in failed:
            self._fail_read(message, ERROR_LEADER_CHANGED)

    def _restore(self, snapshot: Snapshot) -> None:
        self.store = Store.restore(snapshot.data)
        self.hub = WatchHub(self.store)
        self.applied_index = snapshot.index
        self._last_snapshot_index = snapshot.index
        for stream_id in list(self._streams):
            self._end_stream(stream_id)
        self.world.record("etcd-snapshot", member=self.name, event="restore", index=snapshot.index, revision=self.store.revision)

    def _apply_entry(self, entry: Entry) -> None:
        self.applied_index = entry.index
        data = entry.data
        if data is None:
            self.world.record("raft-apply", member=self.name, index=entry.index, term=entry.term, id=None)
            if self.raft.role is Role.LEADER and entry.term == self.raft.term:
                # etcd promotes the lessor when the leader applies its first entry of the term
                self.store.lessor.promote(self.process.now(), self.config.election_ms / 1000.0)
            return
        assert isinstance(data, Proposal), data
        error = ""
        response: Any = None
        try:
            response = self.store.apply(data.request, now=self.process.now())
        except EtcdError as failure:
            error = str(failure)
        events = self.store.take_events()
        if isinstance(data.request, LeaseRevokeRequest):
            self._revoking.pop(data.request.id, None)
        self.world.record(
            "raft-apply",
            member=self.name,
            index=entry.index,
            term=entry.term,
            id=data.id,
            revision=self.store.revision,
            error=error or None,
            events=[[event.type, event.kv.key, event.kv.value, event.kv.mod_revision] for event in events],
        )
        if events:
            for watch_id, delivered in self.hub.notify(events).items():
                self._push(watch_id, delivered)
        message = self._proposals.pop(data.id, None)
        if message is not None:
            self._reply(message, ClientReply(ok=not error, response=response, error=error, member=self.name))

    def _maybe_snapshot(self) -> None:
        if self.applied_index - self._last_snapshot_index < self.config.snapshot_count:
            return
        snapshot = self.raft.compact(self.applied_index, self.store.snapshot())
        disk = self.process.disk
        disk.write("snapshot", snapshot)
        for key in disk.keys("entry/"):
            if int(key[6:]) <= snapshot.index:
                disk.delete(key)
        self._last_snapshot_index = snapshot.index
        self.world.record("etcd-snapshot", member=self.name, event="take", index=snapshot.index, revision=self.store.revision)

    # -- clients ----------------------------------------------------------------------
    def _reply(self, message: Any, reply: ClientReply) -> None:
        self.process.reply(message, reply)

    def _on_client(self, message: Any) -> None:
        """A client request, handled at delivery: answered at once, or when its read
        index or its proposal is applied, or with a timeout after request_timeout_s."""
        request: ClientRequest = message.body
        inner = request.request
        if isinstance(inner, RangeRequest):
            if inner.serializable:
                self._reply_range(message, inner)
            else:
                self._start_read(message)
            return
        if isinstance(inner, KeepAlive):
            self._start_renewal(message, inner)
            return
        self._propose(message, request.id, inner)

    def _reply_range(self, message: Any, request: RangeRequest) -> None:
        try:
            response = self.store.apply(request)
        except EtcdError as failure:
            self._reply(message, ClientReply(ok=False, error=str(failure), member=self.name))
            return
        self._reply(message, ClientReply(ok=True, response=response, member=self.name))

    def _start_read(self, message: Any) -> None:
        """A linearizable read: wait for the next ReadIndex round (linearizableReadNotify),
        starting one if none is in flight; serve once its index is applied."""
        if self.raft.lead == 0:
            self._reply(message, ClientReply(ok=False, error=ERROR_NO_LEADER, member=self.name))
            return
        self._reads_waiting.append(message)
        self.linearizable_reads += 1
        if self._read_round is None:
            self._next_read_round()

    def _next_read_round(self, _: Any = None) -> None:
        """linearizableReadLoop: one ReadIndex for every read waiting now."""
        if self._read_round is not None or not self._reads_waiting:
            return
        reads, self._reads_waiting = self._reads_waiting, []
        if self.raft.lead == 0:
            for message in reads:
                self._fail_read(message, ERROR_NO_LEADER)
            return
        self._read_counter += 1
        self.read_rounds += 1
        context = f"{self.name}/read/{self.incarnation}/{self._read_counter}"
        self._read_round = (context, reads)
        if not self.raft.read_index(context):
            self._read_round = None
            for message in reads:
                self._fail_read(message, ERROR_NO_LEADER)
            return
        self.drain()
        self.process.call_later(READ_INDEX_RETRY_S, self._retry_read_round, (context, self.process.now()))

    def _retry_read_round(self, argument: tuple[str, float]) -> None:
        """requestCurrentIndex: no answer yet -- send the ReadIndex again every 500 ms,
        and give up (ErrTimeout) after the request timeout."""
        context, started = argument
        round_ = self._read_round
        if round_ is None or round_[0] != context:
            return  # answered (or failed) meanwhile
        if self.process.now() - started >= self.config.request_timeout_s:
            self._read_round = None
            for message in round_[1]:  # a read has no effect: its timeout is not ambiguous
                self._fail_read(message, ERROR_TIMEOUT)
            if self._reads_waiting:
                self._next_read_round()
            return
        if self.raft.lead != 0 and self.raft.read_index(context):
            self.drain()
        self.process.call_later(READ_INDEX_RETRY_S, self._retry_read_round, argument)

    def _propose(self, message: Any, request_id: str, request: Any) -> None:
        if request_bytes(request) > self.config.max_request_bytes:
            # etcd's v3 server checks the size before proposing (``processInternalRaftRequestOnce``)
            self._reply(message, ClientReply(ok=False, error=ERROR_REQUEST_TOO_LARGE, member=self.name))
            return
        if self.raft.lead == 0:
            self._reply(message, ClientReply(ok=False, error=ERROR_NO_LEADER, member=self.name))
            return
        if isinstance(request, LeaseGrantRequest) and request.id == 0:
            request = LeaseGrantRequest(id=self._new_lease_id(), ttl=request.ttl)
        self._proposals[request_id] = message
        self.proposals += 1
        if not self.raft.propose(Proposal(request_id, request)):
            self._proposals.pop(request_id, None)
            self._reply(message, ClientReply(ok=False, error=ERROR_NO_LEADER, member=self.name))
            return
        self.drain()
        self.process.call_later(self.config.request_timeout_s, self._expire_proposal, request_id)

    def _expire_proposal(self, request_id: str) -> None:
        message = self._proposals.pop(request_id, None)
        if message is not None:  # it may still commit later: ambiguous
            self._reply(message, ClientReply(ok=False, error=ERROR_TIMEOUT, ambiguous=True, member=self.name))

    def _new_lease_id(self) -> int:
        # etcd draws lease ids from the member id and a clock; ours come from the seeded tree
        return self.process.random("lease-ids").randrange(1, 2**62)

    def _start_renewal(self, message: Any, keep_alive: KeepAlive) -> None:
        """A keep-alive. A follower answers NotPrimary (etcd's follower forwards it to the
        leader; here the client tries the next member). The leader first makes sure it
        still leads and only then renews: ``ensureLeadership`` in ``LeaseRenew``
        (``server/etcdserver/v3_server.go``, added after etcd-io/etcd#15247) waits on the
        linearizable read notifier -- the next ReadIndex round, a quorum's heartbeat
        acknowledgements -- and checks it is still the leader, so a leader cut off from the
        quorum that has not noticed yet cannot extend a lease the new leader will expire.
        Any failure of that check (no leader, leader changed, timeout) is ErrNotPrimary."""
        if not self.store.lessor.is_primary or self.raft.role is not Role.LEADER:
            self._reply(message, self._keep_alive(keep_alive))
            return
        self._reads_waiting.append(_Renewal(message, keep_alive, self.raft.term))
        if self._read_round is None:
            self._next_read_round()

    def _finish_renewal(self, renewal: _Renewal) -> None:
        if self.raft.role is not Role.LEADER or self.raft.term != renewal.term:
            self._reply(renewal.message, ClientReply(ok=False, error=str(NotPrimaryError()), member=self.name))
            return
        self._reply(renewal.message, self._keep_alive(renewal.keep_alive))

    def _fail_read(self, read: Any, error: str) -> None:
        """A read of a failed round: the client's read gets ``error``; a keep-alive whose
        leadership check failed, NotPrimary (nothing was renewed)."""
        if isinstance(read, _Renewal):
            self._reply(read.message, ClientReply(ok=False, error=str(NotPrimaryError()), member=self.name))
        else:
            self._reply(read, ClientReply(ok=False, error=error, member=self.name))

    def _keep_alive(self, keep_alive: KeepAlive) -> ClientReply:
        try:
            ttl = self.store.lessor.renew(keep_alive.lease_id, self.process.now())
        except NotPrimaryError:
            return ClientReply(ok=False, error=str(NotPrimaryError()), member=self.name)
        except LeaseNotFoundError:
            return ClientReply(ok=False, error=str(LeaseNotFoundError()), member=self.name)
        return ClientReply(ok=True, response=ttl, member=self.name)

    def _on_lease_check(self, _: Any = None) -> None:
        """On the leader, propose the revocation of every expired lease (etcd's
        ``revokeExpiredLeases``, checked every 500 ms)."""
        self.process.call_later(LEASE_CHECK_INTERVAL_S, self._on_lease_check)
        if self.raft.role is not Role.LEADER:
            return
        now = self.process.now()
        for lease_id in self.store.lessor.expired(now):
            proposed = self._revoking.get(lease_id)
            if proposed is not None and now - proposed < EXPIRED_LEASE_RETRY_INTERVAL_S:
                continue  # etcd re-proposes a revocation that did not apply after 3 s
            self._revoking[lease_id] = now
            self.raft.propose(Proposal(f"{self.name}/revoke/{lease_id}/{now:.6f}", LeaseRevokeRequest(lease_id)))
        self.drain()

    def statistics(self) -> dict[str, int]:
        """What this incarnation did: client proposals, Readys, Readys that appended
        entries (one fsync each; ``leader_appends`` as leader), linearizable reads and the ReadIndex rounds that served
        them (linearizableReadLoop), the fsyncs it finished."""
        return {
            "proposals": self.proposals,
            "readys": self.readys,
            "appends": self.appends,
            "leader_appends": self.leader_appends,
            "linearizable_reads": self.linearizable_reads,
            "read_rounds": self.read_rounds,
            "fsyncs": self.fsyncs,
        }

    # -- watches ----------------------------------------------------------------------
    async def _watch_loop(self) -> None:
        inbox = self.process.inbox(WATCH_PORT)
        while True:
            message = await inbox.receive()
            body = message.body
            if isinstance(body, WatchCreate):
                self._create_watch(message, body)
            elif isinstance(body, WatchProgress):
                stream = self._streams.get(body.watch_id)
                alive = stream is not None and not (stream.require_leader and self._lost_leader())
                self.process.reply(message, {"alive": alive, "revision": self.store.revision})
            elif isinstance(body, WatchCancel):
                self._end_stream(body.watch_id)
                self.process.reply(message, {"cancelled": True})

    def _lost_leader(self) -> bool:
        """No leader for :data:`REQUIRE_LEADER_ELECTIONS` election timeouts: etcd's
        ``monitorLeader`` (``server/etcdserver/api/v3rpc/interceptor.go``) then cancels the
        streams opened with ``WithRequireLeader`` ("no leader")."""
        since = self._leaderless_since
        if since is None:
            return False
        return self.process.now() - since >= REQUIRE_LEADER_ELECTIONS * self.config.election_ms / 1000.0

    def _create_watch(self, message: Any, create: WatchCreate) -> None:
        if create.watch_id in self._streams:
            self._end_stream(create.watch_id)
        try:
            catch_up = self.hub.watch(create.watch_id, create.key, create.range_end, create.start_revision)
        except CompactedError as error:
            self.process.reply(message, {"created": False, "error": str(error), "compact_revision": self.store.compact_revision})
            return
        self._streams[create.watch_id] = _Stream(message.src, require_leader=create.require_leader)
        self.process.reply(message, {"created": True, "revision": self.store.revision})
        if catch_up:
            self._push(create.watch_id, catch_up)

    def _push(self, watch_id: str, events: tuple[Event, ...]) -> None:
        stream = self._streams.get(watch_id)
        if stream is None:
            return
        stream.sequence += 1
        self.process.send(stream.client, WatchEvents(watch_id, stream.sequence, events), port=WATCH_PORT, duplicable=False)

    def _end_stream(self, watch_id: str) -> None:
        self._streams.pop(watch_id, None)
        self.hub.cancel(watch_id)


def member_main(config: EtcdConfig, registry: dict[str, EtcdMember] | None = None) -> Callable[[Process], Any]:
    """The ``main`` of an etcd member process. ``registry`` (name -> live member) lets a
    harness find the current leader; it is updated on every (re)start."""

    async def main(process: Process) -> None:
        member = EtcdMember(process, config)
        if registry is not None:
            registry[process.name] = member
        await member.serve()

    return main


def spawn_cluster(world: World, config: EtcdConfig, *, zones: list[str] | None = None) -> dict[str, EtcdMember]:
    """Start every member of a cluster; returns the live registry (name -> member)."""
    registry: dict[str, EtcdMember] = {}
    for index, name in enumerate(config.names):
        zone = zones[index % len(zones)] if zones else None
        world.spawn(name, member_main(config, registry), role="etcd", zone=zone)
    return registry


def current_leader(world: World, registry: dict[str, EtcdMember]) -> str | None:
    """The running member that believes it leads in the highest term, if any."""
    best: tuple[int, str] | None = None
    for name, member in sorted(registry.items()):
        process = world.processes.get(name)
        if process is None or not process.running or member.incarnation != process.incarnation:
            continue
        if member.raft.role is Role.LEADER and (best is None or member.raft.term > best[0]):
            best = (member.raft.term, name)
    return best[1] if best else None

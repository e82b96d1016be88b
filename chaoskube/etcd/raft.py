"""One Raft member as a pure state machine, in the style of etcd-io/raft.

``Raft`` does no I/O: no awaits, no clock reads, no randomness of its own (the
election timeout jitter comes from ``draw_election_timeout``, the caller's seeded
generator). ``tick()`` and ``step(message)`` change its state; ``ready()`` hands
out what the caller must do; ``advance(ready)`` acknowledges it. This is
etcd-io/raft's ``RawNode`` (``rawnode.go``) with ``raft.go``'s behaviour:
pre-vote, check-quorum, probe/replicate/snapshot progress with a bounded
inflight window, conflict back-off with reject hints (``findConflictByTerm``),
log compaction with MsgSnap, and ReadIndex (``read_only.go``, ReadOnlySafe).

The caller's contract (as etcd-io/raft's README), for each ``Ready``:

1. Persist, durably: ``hard_state`` (if not None); ``snapshot`` (if not None:
   it replaces the whole stored log, so drop *every* stored entry, also those
   after ``snapshot.index`` — they are a divergent, uncommitted tail, as in
   etcd's ``MemoryStorage.ApplySnapshot``); then ``entries`` (first drop any
   stored entry at or after ``entries[0].index``). Nothing may be sent before
   this is done: a vote or an append acknowledged before it is on disk can be
   forgotten by a crash.
2. Send ``messages`` (any order, any loss; raft tolerates both). A MsgSnap's
   snapshot may be large: sending it is the caller's job.
3. Apply ``snapshot`` (restore the state machine from ``snapshot.data``), then
   apply ``committed_entries`` in order. Entries with ``data is None`` are the
   empty entries new leaders append: skip them. Hand ``read_states`` to the
   waiting readers once the state machine has applied ``read_state.index``.
4. Call ``advance(ready)``, and only then call ``ready()`` again.

On (re)start, build ``Raft`` from what step 1 stored (``Storage``) and restore
the state machine from the stored snapshot; raft then hands out the committed
entries after it again, in ``committed_entries``.

To compact, the caller snapshots its applied state at ``index`` and calls
``compact(index, data)``; raft returns the ``Snapshot`` it keeps (persist it,
then drop stored entries up to ``index``). A follower whose next index was
compacted away is sent that snapshot.

Not guaranteed (as in etcd-io/raft): that a proposal is committed (proposals
are dropped when there is no leader, when the leader changes, or when a message
is lost — the caller retries and must deduplicate); that a ``ReadState`` is
delivered (a leader that loses its quorum or its leadership drops pending reads).

Deviations from etcd-io/raft, on purpose:
- the leader counts its own entries as matched when it appends them (etcd acks
  them after the local append is durable; the caller persists before it sends,
  so no follower can count on them earlier, and committed entries are handed
  out in the same Ready as the entries, to be persisted first);
- a follower in snapshot state goes back to probing on a heartbeat response
  (etcd waits for ``ReportSnapshot``; our network loses messages silently,
  so a lost MsgSnap must not stall the follower forever);
- no configuration changes, learners, leader transfer or async storage writes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from chaoskube.etcd.raft_log import Entry, RaftLog, Snapshot

__all__ = [
    "Entry",
    "HardState",
    "Message",
    "MsgType",
    "Progress",
    "ProgressState",
    "Raft",
    "RaftConfig",
    "ReadState",
    "Ready",
    "Role",
    "SoftState",
    "Snapshot",
    "Storage",
]

NONE = 0  # no node: etcd's ``None``; member ids are positive.


class Role(enum.Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


class MsgType(enum.Enum):
    HUP = "hup"  # local: start an election
    BEAT = "beat"  # local: leader, send heartbeats
    CHECK_QUORUM = "check-quorum"  # local: leader, step down without an active quorum
    PROP = "prop"
    APP = "app"
    APP_RESP = "app-resp"
    VOTE = "vote"
    VOTE_RESP = "vote-resp"
    PRE_VOTE = "pre-vote"
    PRE_VOTE_RESP = "pre-vote-resp"
    SNAP = "snap"
    HEARTBEAT = "heartbeat"
    HEARTBEAT_RESP = "heartbeat-resp"
    READ_INDEX = "read-index"
    READ_INDEX_RESP = "read-index-resp"


_LOCAL = frozenset({MsgType.HUP, MsgType.BEAT, MsgType.CHECK_QUORUM})
# etcd ``send``: proposals and read requests are forwarded as local messages, without a term.
_TERMLESS = frozenset({MsgType.PROP, MsgType.READ_INDEX})
_VOTE_TYPES = frozenset({MsgType.VOTE, MsgType.VOTE_RESP, MsgType.PRE_VOTE, MsgType.PRE_VOTE_RESP})


class HardState(msgspec.Struct, frozen=True):
    term: int = 0
    vote: int = 0
    commit: int = 0


class Message(msgspec.Struct, frozen=True):
    type: MsgType
    to: int
    from_: int
    term: int
    log_term: int = 0
    index: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    reject_hint: int = 0
    snapshot: Snapshot | None = None
    context: Any = None


class ReadState(msgspec.Struct, frozen=True):
    """Reads that started with ``context`` may be served once ``index`` is applied."""

    index: int
    context: Any


class SoftState(msgspec.Struct, frozen=True):
    lead: int
    role: Role


class Ready(msgspec.Struct, frozen=True):
    """What the caller must do now, in the order of the module docstring.

    ``committed_entries`` may include entries of this same Ready's ``entries``
    (a follower learns a commit index with the entries): they are applied after
    step 1 persisted them. ``soft_state`` and ``hard_state`` are None when
    unchanged since the previous Ready.
    """

    soft_state: SoftState | None
    hard_state: HardState | None
    entries: tuple[Entry, ...]
    snapshot: Snapshot | None
    committed_entries: tuple[Entry, ...]
    messages: tuple[Message, ...]
    read_states: tuple[ReadState, ...]


@dataclass(frozen=True)
class RaftConfig:
    id: int
    peers: tuple[int, ...]
    election_tick: int = 10
    heartbeat_tick: int = 1
    pre_vote: bool = True
    check_quorum: bool = True
    max_entries_per_message: int = 64
    max_inflight_messages: int = 256
    #: etcd's ``raft.Config.MaxSizePerMsg`` as etcd's server sets it (``maxSizePerMsg = 1 *
    #: 1024 * 1024``, server/etcdserver/raft.go): an append carries entries up to this many
    #: bytes, and always at least one, however large (etcd-io/raft ``limitSize``, util.go).
    #: Beside the count limit above: entries of a few hundred bytes never reach it, while a
    #: few values near ``--max-request-bytes`` (1.5 MiB) each fill an append alone.
    max_size_per_message: int = 1024 * 1024
    #: What an entry's data weighs in bytes (etcd sizes the marshalled entry,
    #: ``proto.Size``); None: entries are not sized and only the count limit applies.
    entry_size: Callable[[Any], int] | None = None

    def __post_init__(self) -> None:
        assert self.id > 0, "member ids are positive (0 means no node)"
        assert self.id in self.peers, "a member is one of its peers"
        assert len(set(self.peers)) == len(self.peers), "duplicate peers"
        assert all(peer > 0 for peer in self.peers)
        assert self.heartbeat_tick > 0
        assert self.election_tick > self.heartbeat_tick, "election tick must exceed heartbeat tick (etcd)"
        assert self.max_entries_per_message > 0
        assert self.max_inflight_messages > 0
        assert self.max_size_per_message > 0


@dataclass(frozen=True)
class Storage:
    """What the caller loaded from its disk on (re)start."""

    hard_state: HardState = HardState()
    snapshot: Snapshot | None = None
    entries: tuple[Entry, ...] = ()


class ProgressState(enum.Enum):
    PROBE = "probe"
    REPLICATE = "replicate"
    SNAPSHOT = "snapshot"


@dataclass(slots=True)
class Progress:
    """The leader's view of one follower (etcd ``tracker/progress.go``)."""

    match: int
    next: int
    state: ProgressState = ProgressState.PROBE
    probe_sent: bool = False
    pending_snapshot: int = 0
    recent_active: bool = False
    # Last index of each MsgApp in flight, oldest first (etcd ``Inflights``),
    # bounded by ``max_inflight_messages``: at the bound, sending pauses.
    inflights: list[int] = field(default_factory=list)

    def become_probe(self) -> None:
        if self.state is ProgressState.SNAPSHOT:
            self.next = max(self.match + 1, self.pending_snapshot + 1)
        else:
            self.next = self.match + 1
        self.state = ProgressState.PROBE
        self.probe_sent = False
        self.pending_snapshot = 0
        self.inflights.clear()

    def become_replicate(self) -> None:
        self.state = ProgressState.REPLICATE
        self.next = self.match + 1
        self.probe_sent = False
        self.pending_snapshot = 0
        self.inflights.clear()

    def become_snapshot(self, index: int) -> None:
        self.state = ProgressState.SNAPSHOT
        self.pending_snapshot = index
        self.probe_sent = False
        self.inflights.clear()

    def maybe_update(self, index: int) -> bool:
        """An acknowledgement up to ``index``; says whether ``match`` moved."""
        updated = index > self.match
        if updated:
            self.match = index
            self.probe_sent = False
        self.next = max(self.next, index + 1)
        return updated

    def maybe_decrease_to(self, rejected: int, match_hint: int) -> bool:
        """A rejection of the append at ``rejected``; False if it is stale (etcd ``MaybeDecrTo``)."""
        if self.state is ProgressState.REPLICATE:
            if rejected <= self.match:
                return False
            self.next = self.match + 1
            return True
        if self.next - 1 != rejected:
            return False
        self.next = max(min(rejected, match_hint + 1), self.match + 1)
        self.probe_sent = False
        return True

    def is_paused(self, max_inflight: int) -> bool:
        if self.state is ProgressState.PROBE:
            return self.probe_sent
        if self.state is ProgressState.REPLICATE:
            return len(self.inflights) >= max_inflight
        return True

    def free_inflights_to(self, index: int) -> None:
        while self.inflights and self.inflights[0] <= index:
            self.inflights.pop(0)


@dataclass(slots=True)
class _ReadIndexStatus:
    request: Message
    index: int
    acks: set[int]


class Raft:
    """One Raft member. See the module docstring for the caller's contract."""

    def __init__(
        self,
        config: RaftConfig,
        storage: Storage,
        draw_election_timeout: Callable[[], int],
    ) -> None:
        self.config = config
        self._draw_election_timeout = draw_election_timeout
        hard_state = storage.hard_state
        self._log = RaftLog(storage.snapshot, storage.entries, hard_state.commit)
        assert hard_state.vote == NONE or hard_state.vote in config.peers
        self._term = hard_state.term
        self._vote = hard_state.vote
        assert self._log.last_term() <= self._term, "stored log has entries from a future term"
        self._lead = NONE
        self._role = Role.FOLLOWER
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._randomized_election_timeout = config.election_tick
        self._votes: dict[int, bool] = {}
        self._progress: dict[int, Progress] = {}
        self._messages: list[Message] = []
        self._read_states: list[ReadState] = []
        self._pending_reads: dict[Any, _ReadIndexStatus] = {}
        self._pending_read_queue: list[Any] = []
        self._deferred_read_requests: list[Message] = []
        self._step_role: Callable[[Message], bool] = self._step_follower
        self._tick_role: Callable[[], None] = self._tick_election
        self._previous_soft_state = SoftState(lead=NONE, role=Role.FOLLOWER)
        self._previous_hard_state = self._hard_state()
        self._outstanding_ready: Ready | None = None
        # ``_hard_state`` is a hook (the gallery overrides it); the unchanged one is
        # compared field by field in has_ready, without building a HardState.
        self._plain_hard_state = type(self)._hard_state is Raft._hard_state
        self._become_follower(self._term, NONE)

    # -- properties -------------------------------------------------------------

    @property
    def id(self) -> int:
        return self.config.id

    @property
    def term(self) -> int:
        return self._term

    @property
    def vote(self) -> int:
        return self._vote

    @property
    def lead(self) -> int:
        return self._lead

    @property
    def role(self) -> Role:
        return self._role

    @property
    def commit(self) -> int:
        return self._log.committed

    @property
    def applied(self) -> int:
        return self._log.applied

    @property
    def log(self) -> RaftLog:
        """The log, for tests and checkers: read it, never change it."""
        return self._log

    @property
    def randomized_election_timeout(self) -> int:
        return self._randomized_election_timeout

    @property
    def election_elapsed(self) -> int:
        return self._election_elapsed

    def quorum(self) -> int:
        return len(self.config.peers) // 2 + 1

    # -- the public interface ---------------------------------------------------------

    def tick(self) -> None:
        """One logical clock tick (the server ticks every 100 ms)."""
        self._tick_role()

    def step(self, message: Message) -> None:
        """Handle a message from a peer (or a local one). Illegal input raises."""
        self._step(message)

    def propose(self, data: Any) -> bool:
        """Propose ``data``; False when it was dropped (no leader known)."""
        assert data is not None, "data None is reserved for the empty entries of new leaders"
        entry = Entry(term=0, index=0, data=data)
        return self._step(Message(type=MsgType.PROP, to=self.id, from_=self.id, term=0, entries=(entry,)))

    def read_index(self, context: Any) -> bool:
        """Start a linearizable read (etcd ReadIndex, ReadOnlySafe); False when dropped.

        ``context`` identifies the read: hashable, unique among pending reads.
        The answer is a ``ReadState(index, context)`` in a later Ready on this node.
        """
        assert context is not None, "a read needs a context to be answered"
        return self._step(Message(type=MsgType.READ_INDEX, to=self.id, from_=self.id, term=0, context=context))

    def campaign(self) -> None:
        """Start an election now, as if the election timeout passed (MsgHup)."""
        self._step(Message(type=MsgType.HUP, to=self.id, from_=self.id, term=0))

    def compact(self, index: int, data: Any) -> Snapshot:
        """The caller snapshotted its applied state at ``index``; keep it, drop entries <= index.

        Returns the Snapshot raft keeps: the caller persists it.
        """
        return self._log.compact(index, data)

    def has_ready(self) -> bool:
        if self._outstanding_ready is not None:
            return False
        if self._messages or self._read_states:
            return True
        log = self._log
        # the cheap tests first (all are pure; only the answer matters), none allocating
        previous_soft = self._previous_soft_state
        if (
            log.pending_snapshot is not None
            or log.stabled < log.offset + len(log.entries)
            or self._lead != previous_soft.lead
            or self._role is not previous_soft.role
            or log.has_next_committed_entries()
        ):
            return True
        if self._plain_hard_state:
            previous = self._previous_hard_state
            return self._term != previous.term or self._vote != previous.vote or log.committed != previous.commit
        return self._hard_state() != self._previous_hard_state

    def ready(self) -> Ready:
        """What to persist, send and apply now; call ``advance`` with it when done."""
        assert self._outstanding_ready is None, "ready() called again before advance()"
        previous_soft = self._previous_soft_state
        soft_state = None
        if self._lead != previous_soft.lead or self._role is not previous_soft.role:
            soft_state = self._previous_soft_state = SoftState(self._lead, self._role)
        hard_state = self._hard_state()
        if hard_state == self._previous_hard_state:
            hard_state = None
        else:
            self._previous_hard_state = hard_state
        log = self._log
        ready = Ready(
            soft_state=soft_state,
            hard_state=hard_state,
            entries=log.unstable_entries() if log.stabled < log.offset + len(log.entries) else (),
            snapshot=log.pending_snapshot,
            committed_entries=log.next_committed_entries() if log.has_next_committed_entries() else (),
            messages=tuple(self._messages) if self._messages else (),
            read_states=tuple(self._read_states) if self._read_states else (),
        )
        # Accepted at once, as etcd's ``acceptReady``: later steps start afresh.
        self._messages.clear()
        self._read_states.clear()
        self._outstanding_ready = ready
        return ready

    def advance(self, ready: Ready) -> None:
        """The caller persisted, sent and applied everything in ``ready``."""
        assert ready is self._outstanding_ready, "advance() with a Ready that is not the last one"
        self._outstanding_ready = None
        if ready.entries:
            last = ready.entries[-1]
            self._log.stable_to(last.index, last.term)
        if ready.snapshot is not None:
            self._log.snapshot_applied(ready.snapshot)
        if ready.committed_entries:
            self._log.applied_to(ready.committed_entries[-1].index)
        self._log.check()

    def status(self) -> dict:
        status: dict[str, Any] = {
            "id": self.id,
            "term": self._term,
            "vote": self._vote,
            "lead": self._lead,
            "role": self._role.value,
            "commit": self._log.committed,
            "applied": self._log.applied,
            "last_index": self._log.last_index(),
        }
        if self._role is Role.LEADER:
            status["progress"] = {
                peer: {"match": pr.match, "next": pr.next, "state": pr.state.value}
                for peer, pr in sorted(self._progress.items())
            }
        return status

    # -- hooks the broken gallery overrides -------------------------------------------

    def _hard_state(self) -> HardState:
        return HardState(term=self._term, vote=self._vote, commit=self._log.committed)

    def _candidate_log_ok(self, message: Message) -> bool:
        """Raft §5.4.1: grant a vote only to a candidate whose log is up to date."""
        return self._log.is_up_to_date(message.log_term, message.index)

    def _maybe_commit(self) -> bool:
        """Commit the highest index a quorum matches, if it is of this term (§5.4.2)."""
        matches = sorted((pr.match for pr in self._progress.values()), reverse=True)
        return self._log.maybe_commit(matches[self.quorum() - 1], self._term)

    # -- role transitions ---------------------------------------------------------------

    def _reset(self, term: int) -> None:
        if term != self._term:
            assert term > self._term, f"term going back from {self._term} to {term}"
            self._term = term
            self._vote = NONE
        self._lead = NONE
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._reset_randomized_election_timeout()
        self._votes = {}
        last_index = self._log.last_index()
        self._progress = {peer: Progress(match=0, next=last_index + 1) for peer in self.config.peers}
        self._progress[self.id].match = last_index
        self._pending_reads = {}
        self._pending_read_queue = []
        self._deferred_read_requests = []

    def _reset_randomized_election_timeout(self) -> None:
        timeout = self._draw_election_timeout()
        election_tick = self.config.election_tick
        assert election_tick <= timeout < 2 * election_tick, f"election timeout {timeout} out of range"
        self._randomized_election_timeout = timeout

    def _become_follower(self, term: int, lead: int) -> None:
        self._step_role = self._step_follower
        self._reset(term)
        self._tick_role = self._tick_election
        self._lead = lead
        self._role = Role.FOLLOWER

    def _become_pre_candidate(self) -> None:
        # etcd: changes the step function and role only; not the term, not the vote.
        assert self._role is not Role.LEADER, "invalid transition leader -> pre-candidate"
        self._step_role = self._step_candidate
        self._votes = {}
        self._tick_role = self._tick_election
        self._lead = NONE
        self._role = Role.PRE_CANDIDATE

    def _become_candidate(self) -> None:
        assert self._role is not Role.LEADER, "invalid transition leader -> candidate"
        self._step_role = self._step_candidate
        self._reset(self._term + 1)
        self._tick_role = self._tick_election
        self._vote = self.id
        self._role = Role.CANDIDATE

    def _become_leader(self) -> None:
        assert self._role is not Role.FOLLOWER, "invalid transition follower -> leader"
        self._step_role = self._step_leader
        self._reset(self._term)
        self._tick_role = self._tick_heartbeat
        self._lead = self.id
        self._role = Role.LEADER
        self._progress[self.id].become_replicate()
        self._progress[self.id].recent_active = True
        # Raft §8 / etcd: an empty entry of the new term lets earlier entries commit.
        self._append_entries((Entry(term=0, index=0, data=None),))

    # -- ticks --------------------------------------------------------------------------

    def _tick_election(self) -> None:
        self._election_elapsed += 1
        if self._election_elapsed >= self._randomized_election_timeout:
            self._election_elapsed = 0
            self._step(Message(type=MsgType.HUP, to=self.id, from_=self.id, term=0))

    def _tick_heartbeat(self) -> None:
        self._heartbeat_elapsed += 1
        self._election_elapsed += 1
        if self._election_elapsed >= self.config.election_tick:
            self._election_elapsed = 0
            if self.config.check_quorum:
                self._step(Message(type=MsgType.CHECK_QUORUM, to=self.id, from_=self.id, term=0))
        if self._role is not Role.LEADER:
            return
        if self._heartbeat_elapsed >= self.config.heartbeat_tick:
            self._heartbeat_elapsed = 0
            self._step(Message(type=MsgType.BEAT, to=self.id, from_=self.id, term=0))

    # -- stepping ------------------------------------------------------------------------

    def _send(self, message: Message) -> None:
        assert message.to != self.id, "a member does not send to itself"
        if message.type in _VOTE_TYPES:
            assert message.term != 0, f"{message.type} must carry a term"
        elif message.type in _TERMLESS:
            if message.term != 0:
                message = msgspec.structs.replace(message, term=0)
        elif message.term != self._term:  # most callers already set it: skip the copy
            message = msgspec.structs.replace(message, term=self._term)
        self._messages.append(message)

    def _step(self, m: Message) -> bool:
        """etcd ``raft.Step``: term rules first, then votes, then the role's handler."""
        assert m.to in (self.id, NONE), f"message for {m.to} stepped into {self.id}"
        if m.type in _LOCAL:
            assert m.term == 0, "local messages carry no term"
        if m.term == 0:
            pass
        elif m.term > self._term:
            if m.type in (MsgType.VOTE, MsgType.PRE_VOTE):
                in_lease = (
                    self.config.check_quorum
                    and self._lead != NONE
                    and self._election_elapsed < self.config.election_tick
                )
                if in_lease:
                    # Raft §6 / etcd: a member that heard from a leader within the
                    # election timeout neither updates its term nor votes.
                    return False
            if m.type is MsgType.PRE_VOTE:
                pass  # never change the term for a pre-vote
            elif m.type is MsgType.PRE_VOTE_RESP and not m.reject:
                pass  # a granted pre-vote for our future term
            elif m.type in (MsgType.APP, MsgType.HEARTBEAT, MsgType.SNAP):
                self._become_follower(m.term, m.from_)
            else:
                self._become_follower(m.term, NONE)
        elif m.term < self._term:
            if (self.config.check_quorum or self.config.pre_vote) and m.type in (MsgType.HEARTBEAT, MsgType.APP):
                # A leader of a lower term: tell it our term, so it steps down
                # (otherwise, with check-quorum, it may never learn of it).
                self._send(Message(type=MsgType.APP_RESP, to=m.from_, from_=self.id, term=self._term))
            elif m.type is MsgType.PRE_VOTE:
                self._send(
                    Message(
                        type=MsgType.PRE_VOTE_RESP, to=m.from_, from_=self.id, term=self._term, reject=True
                    )
                )
            return False

        if m.type is MsgType.HUP:
            self._hup()
            return True
        if m.type in (MsgType.VOTE, MsgType.PRE_VOTE):
            self._handle_vote_request(m)
            return True
        return self._step_role(m)

    def _hup(self) -> None:
        if self._role is Role.LEADER:
            return
        if self.config.pre_vote:
            self._campaign(pre=True)
        else:
            self._campaign(pre=False)

    def _campaign(self, *, pre: bool) -> None:
        if pre:
            self._become_pre_candidate()
            vote_type, term = MsgType.PRE_VOTE, self._term + 1
        else:
            self._become_candidate()
            vote_type, term = MsgType.VOTE, self._term
        if self._poll(self.id, granted=True) == "won":
            # A single-member group wins at once.
            if pre:
                self._campaign(pre=False)
            else:
                self._become_leader()
            return
        for peer in self.config.peers:
            if peer == self.id:
                continue
            self._send(
                Message(
                    type=vote_type,
                    to=peer,
                    from_=self.id,
                    term=term,
                    log_term=self._log.last_term(),
                    index=self._log.last_index(),
                )
            )

    def _poll(self, peer: int, *, granted: bool) -> str:
        self._votes.setdefault(peer, granted)
        granted_count = sum(1 for vote in self._votes.values() if vote)
        rejected_count = len(self._votes) - granted_count
        if granted_count >= self.quorum():
            return "won"
        if rejected_count >= self.quorum():
            return "lost"
        return "pending"

    def _handle_vote_request(self, m: Message) -> None:
        can_vote = (
            self._vote == m.from_
            or (self._vote == NONE and self._lead == NONE)
            or (m.type is MsgType.PRE_VOTE and m.term > self._term)
        )
        response_type = MsgType.VOTE_RESP if m.type is MsgType.VOTE else MsgType.PRE_VOTE_RESP
        if can_vote and self._candidate_log_ok(m):
            # Answer with the message's term: for a pre-vote our term is lower,
            # and the pre-candidate would ignore an answer from the past.
            self._send(Message(type=response_type, to=m.from_, from_=self.id, term=m.term))
            if m.type is MsgType.VOTE:
                self._election_elapsed = 0
                self._vote = m.from_
        else:
            self._send(Message(type=response_type, to=m.from_, from_=self.id, term=self._term, reject=True))

    # -- leader --------------------------------------------------------------------------

    def _step_leader(self, m: Message) -> bool:
        if m.type is MsgType.BEAT:
            self._broadcast_heartbeat()
            return True
        if m.type is MsgType.CHECK_QUORUM:
            if not self._quorum_active():
                self._become_follower(self._term, NONE)
            for peer, pr in self._progress.items():
                if peer != self.id:
                    pr.recent_active = False
            return True
        if m.type is MsgType.PROP:
            assert m.entries, "empty proposal"
            self._append_entries(m.entries)
            self._broadcast_append()
            return True
        if m.type is MsgType.READ_INDEX:
            if len(self.config.peers) == 1:
                self._answer_read(m, self._log.committed)
            elif not self._committed_entry_in_current_term():
                # etcd: postpone until the leader commits an entry of its term;
                # before that its commit index may be behind the cluster's.
                self._deferred_read_requests.append(m)
            else:
                self._start_read(m)
            return True

        pr = self._progress.get(m.from_)
        if pr is None:
            return False
        if m.type is MsgType.APP_RESP:
            self._handle_append_response(m, pr)
        elif m.type is MsgType.HEARTBEAT_RESP:
            self._handle_heartbeat_response(m, pr)
        return True

    def _append_entries(self, entries: tuple[Entry, ...]) -> None:
        last_index = self._log.last_index()
        stamped = tuple(
            Entry(term=self._term, index=last_index + 1 + offset, data=entry.data)
            for offset, entry in enumerate(entries)
        )
        self._log.append(stamped)
        self._progress[self.id].maybe_update(self._log.last_index())
        self._maybe_commit()

    def _broadcast_append(self) -> None:
        for peer in self.config.peers:
            if peer != self.id:
                self._send_append(peer)

    def _send_append(self, to: int) -> None:
        self._maybe_send_append(to, send_if_empty=True)

    def _maybe_send_append(self, to: int, *, send_if_empty: bool) -> bool:
        """Send entries (or the snapshot) to ``to``; says whether it sent anything."""
        pr = self._progress[to]
        if pr.is_paused(self.config.max_inflight_messages):
            return False
        previous_index = pr.next - 1
        previous_term = self._log.term(previous_index)
        if previous_term is None:
            return self._maybe_send_snapshot(to, pr)
        high = min(self._log.last_index() + 1, pr.next + self.config.max_entries_per_message)
        entries = self._log.slice(pr.next, high) if pr.next < high else ()
        if len(entries) > 1 and self.config.entry_size is not None:
            entries = self._limit_size(entries)
        if not entries and not send_if_empty:
            return False
        self._send(
            Message(
                type=MsgType.APP,
                to=to,
                from_=self.id,
                term=self._term,
                log_term=previous_term,
                index=previous_index,
                entries=entries,
                commit=self._log.committed,
            )
        )
        if pr.state is ProgressState.REPLICATE:
            if entries:
                last = entries[-1].index
                pr.next = last + 1
                pr.inflights.append(last)
        elif pr.state is ProgressState.PROBE:
            pr.probe_sent = True
        return True

    def _limit_size(self, entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
        """The longest prefix of ``entries`` within ``max_size_per_message`` bytes, and
        at least the first entry (etcd-io/raft ``limitSize``). A new leader's log may end
        in entries of earlier terms heavier than one message: then its first appends to a
        follower that lacks them carry those entries alone, without the empty entry of its
        own term -- the window of Raft's Figure 8 (section 5.4.2)."""
        size_of = self.config.entry_size
        assert size_of is not None
        limit = self.config.max_size_per_message
        size = size_of(entries[0].data)
        for count in range(1, len(entries)):
            size += size_of(entries[count].data)
            if size > limit:
                return entries[:count]
        return entries

    def _maybe_send_snapshot(self, to: int, pr: Progress) -> bool:
        if not pr.recent_active:
            # etcd: do not send a (large) snapshot to a member not heard from lately.
            return False
        snapshot = self._log.snapshot
        assert snapshot is not None, "entries are compacted but there is no snapshot"
        pr.become_snapshot(snapshot.index)
        self._send(Message(type=MsgType.SNAP, to=to, from_=self.id, term=self._term, snapshot=snapshot))
        return True

    def _broadcast_heartbeat(self) -> None:
        context = self._pending_read_queue[-1] if self._pending_read_queue else None
        self._broadcast_heartbeat_with_context(context)

    def _broadcast_heartbeat_with_context(self, context: Any) -> None:
        for peer in self.config.peers:
            if peer == self.id:
                continue
            # The follower may not have the entries up to our commit yet.
            commit = min(self._progress[peer].match, self._log.committed)
            self._send(
                Message(type=MsgType.HEARTBEAT, to=peer, from_=self.id, term=self._term, commit=commit, context=context)
            )

    def _handle_append_response(self, m: Message, pr: Progress) -> None:
        pr.recent_active = True
        if m.reject:
            next_probe = m.reject_hint
            if m.log_term > 0:
                next_probe, _ = self._log.find_conflict_by_term(m.reject_hint, m.log_term)
            if pr.maybe_decrease_to(m.index, next_probe):
                if pr.state is ProgressState.REPLICATE:
                    pr.become_probe()
                self._send_append(m.from_)
            return
        was_paused = pr.is_paused(self.config.max_inflight_messages)
        if not pr.maybe_update(m.index):
            return
        if pr.state is ProgressState.PROBE:
            pr.become_replicate()
        elif pr.state is ProgressState.SNAPSHOT and pr.match + 1 >= self._log.first_index():
            pr.become_probe()
            pr.become_replicate()
        elif pr.state is ProgressState.REPLICATE:
            pr.free_inflights_to(m.index)
        if self._maybe_commit():
            self._release_deferred_reads()
            self._broadcast_append()
        elif was_paused:
            self._send_append(m.from_)
        # Bounded: each round sends at least one entry or stops.
        while self._maybe_send_append(m.from_, send_if_empty=False):
            pass

    def _handle_heartbeat_response(self, m: Message, pr: Progress) -> None:
        pr.recent_active = True
        pr.probe_sent = False
        if pr.state is ProgressState.REPLICATE and len(pr.inflights) >= self.config.max_inflight_messages:
            pr.inflights.pop(0)
        if pr.state is ProgressState.SNAPSHOT:
            # Deviation from etcd (see the module docstring): retry a possibly lost MsgSnap.
            pr.become_probe()
        if pr.match < self._log.last_index() or pr.state is ProgressState.PROBE:
            self._send_append(m.from_)
        if m.context is None:
            return
        status = self._pending_reads.get(m.context)
        if status is None:
            return
        status.acks.add(m.from_)
        if len(status.acks) < self.quorum():
            return
        # Every read queued up to this one is confirmed by the same heartbeat round.
        position = self._pending_read_queue.index(m.context)
        confirmed = self._pending_read_queue[: position + 1]
        del self._pending_read_queue[: position + 1]
        for context in confirmed:
            read = self._pending_reads.pop(context)
            self._answer_read(read.request, read.index)

    def _quorum_active(self) -> bool:
        active = sum(1 for peer, pr in self._progress.items() if peer == self.id or pr.recent_active)
        return active >= self.quorum()

    def _committed_entry_in_current_term(self) -> bool:
        return self._log.term(self._log.committed) == self._term

    def _start_read(self, m: Message) -> None:
        """etcd ``sendMsgReadIndexResponse`` (ReadOnlySafe): record commit, confirm by heartbeat."""
        if m.context in self._pending_reads:
            return
        self._pending_reads[m.context] = _ReadIndexStatus(request=m, index=self._log.committed, acks={self.id})
        self._pending_read_queue.append(m.context)
        self._broadcast_heartbeat_with_context(m.context)

    def _release_deferred_reads(self) -> None:
        if not self._committed_entry_in_current_term():
            return
        deferred, self._deferred_read_requests = self._deferred_read_requests, []
        for request in deferred:
            self._start_read(request)

    def _answer_read(self, request: Message, index: int) -> None:
        if request.from_ in (NONE, self.id):
            self._read_states.append(ReadState(index=index, context=request.context))
        else:
            self._send(
                Message(
                    type=MsgType.READ_INDEX_RESP,
                    to=request.from_,
                    from_=self.id,
                    term=self._term,
                    index=index,
                    context=request.context,
                )
            )

    # -- candidate and pre-candidate ------------------------------------------------------

    def _step_candidate(self, m: Message) -> bool:
        my_response_type = MsgType.PRE_VOTE_RESP if self._role is Role.PRE_CANDIDATE else MsgType.VOTE_RESP
        if m.type in (MsgType.PROP, MsgType.READ_INDEX):
            return False  # no leader: dropped
        if m.type is MsgType.APP:
            self._become_follower(m.term, m.from_)
            self._handle_append(m)
        elif m.type is MsgType.HEARTBEAT:
            self._become_follower(m.term, m.from_)
            self._handle_heartbeat(m)
        elif m.type is MsgType.SNAP:
            self._become_follower(m.term, m.from_)
            self._handle_snapshot(m)
        elif m.type is my_response_type:
            result = self._poll(m.from_, granted=not m.reject)
            if result == "won":
                if self._role is Role.PRE_CANDIDATE:
                    self._campaign(pre=False)
                else:
                    self._become_leader()
                    self._broadcast_append()
            elif result == "lost":
                # A pre-vote rejection with a higher term already made us a follower.
                self._become_follower(self._term, NONE)
        return True

    # -- follower -------------------------------------------------------------------------

    def _step_follower(self, m: Message) -> bool:
        if m.type in (MsgType.PROP, MsgType.READ_INDEX):
            if self._lead == NONE:
                return False  # no leader known: dropped
            self._send(msgspec.structs.replace(m, to=self._lead, from_=self.id))
            return True
        if m.type is MsgType.APP:
            self._election_elapsed = 0
            self._lead = m.from_
            self._handle_append(m)
        elif m.type is MsgType.HEARTBEAT:
            self._election_elapsed = 0
            self._lead = m.from_
            self._handle_heartbeat(m)
        elif m.type is MsgType.SNAP:
            self._election_elapsed = 0
            self._lead = m.from_
            self._handle_snapshot(m)
        elif m.type is MsgType.READ_INDEX_RESP:
            self._read_states.append(ReadState(index=m.index, context=m.context))
        return True

    def _handle_append(self, m: Message) -> None:
        log = self._log
        if m.index < log.committed:
            self._send(Message(type=MsgType.APP_RESP, to=m.from_, from_=self.id, term=self._term, index=log.committed))
            return
        last_new = log.maybe_append(m.index, m.log_term, m.commit, m.entries)
        if last_new is not None:
            self._send(Message(type=MsgType.APP_RESP, to=m.from_, from_=self.id, term=self._term, index=last_new))
            return
        # Reject with a hint: the largest index whose term is <= the leader's
        # term at m.index, so the leader skips a whole term per round trip.
        hint_index, hint_term = log.find_conflict_by_term(min(m.index, log.last_index()), m.log_term)
        self._send(
            Message(
                type=MsgType.APP_RESP,
                to=m.from_,
                from_=self.id,
                term=self._term,
                index=m.index,
                reject=True,
                reject_hint=hint_index,
                log_term=hint_term,
            )
        )

    def _handle_heartbeat(self, m: Message) -> None:
        self._log.commit_to(m.commit)
        self._send(
            Message(type=MsgType.HEARTBEAT_RESP, to=m.from_, from_=self.id, term=self._term, context=m.context)
        )

    def _handle_snapshot(self, m: Message) -> None:
        snapshot = m.snapshot
        assert snapshot is not None, "MsgSnap without a snapshot"
        log = self._log
        if snapshot.index <= log.committed:
            index = log.committed
        elif log.match_term(snapshot.index, snapshot.term):
            # We already hold the snapshot's last entry: fast-forward the commit.
            log.commit_to(snapshot.index)
            index = log.committed
        else:
            log.restore(snapshot)
            index = log.last_index()
        self._send(Message(type=MsgType.APP_RESP, to=m.from_, from_=self.id, term=self._term, index=index))

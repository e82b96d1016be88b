"""One behaviour of the Raft paper per test, named after its section.

In the style of etcd-io/raft's ``raft_paper_test.go``: a member is driven by
hand (messages stepped in, messages read out of its Ready), and checked
against what the paper (Ongaro & Ousterhout, "In Search of an Understandable
Consensus Algorithm", 2014) says. Pre-vote and check-quorum are off here, as in
etcd's paper tests: they are extensions of §9.6 and of the thesis, not of the
basic algorithm; tests/etcd/test_raft.py covers them.
"""

from __future__ import annotations

import random

import pytest
from tests.etcd.raft_harness import Network

from chaoskube.etcd.raft import (
    Entry,
    HardState,
    Message,
    MsgType,
    Raft,
    RaftConfig,
    Role,
    Storage,
)


def fixed_timeout(ticks: int = 10):
    return lambda: ticks


def new_raft(
    member: int = 1,
    peers: tuple[int, ...] = (1, 2, 3),
    *,
    storage: Storage = Storage(),
    election_tick: int = 10,
    heartbeat_tick: int = 1,
    draw=None,
    **options,
) -> Raft:
    options.setdefault("pre_vote", False)
    options.setdefault("check_quorum", False)
    config = RaftConfig(id=member, peers=peers, election_tick=election_tick, heartbeat_tick=heartbeat_tick, **options)
    return Raft(config, storage, draw or fixed_timeout(election_tick))


def msg(type: MsgType, from_: int, to: int, term: int, **fields) -> Message:
    return Message(type=type, to=to, from_=from_, term=term, **fields)


def read_messages(r: Raft) -> list[Message]:
    ready = r.ready()
    r.advance(ready)
    return list(ready.messages)


def entries(*terms: int, start: int = 1) -> tuple[Entry, ...]:
    """Entries with the given terms at consecutive indexes from ``start``; data names them."""
    return tuple(Entry(term=term, index=start + offset, data=f"t{term}i{start + offset}") for offset, term in enumerate(terms))


def make_leader(r: Raft) -> None:
    r.campaign()
    for peer in r.config.peers:
        if peer != r.id and r.role is not Role.LEADER:
            r.step(msg(MsgType.VOTE_RESP, peer, r.id, r.term))
    assert r.role is Role.LEADER


def commit_noop_entry(r: Raft) -> None:
    """Like etcd's ``commitNoopEntry``: every follower acknowledges the new leader's empty entry."""
    assert r.role is Role.LEADER
    read_messages(r)
    for peer in r.config.peers:
        if peer != r.id:
            r.step(msg(MsgType.APP_RESP, peer, r.id, r.term, index=r.log.last_index()))
    assert r.commit == r.log.last_index()
    read_messages(r)


def become(r: Raft, role: Role, term: int) -> None:
    """Put ``r`` in ``role`` at ``term`` (a follower learns the term from a heartbeat)."""
    if role is Role.FOLLOWER:
        r.step(msg(MsgType.HEARTBEAT, 2, r.id, term))
    else:
        r.step(msg(MsgType.HEARTBEAT, 2, r.id, term - 1))
        if role is Role.CANDIDATE:
            r.campaign()
        else:
            make_leader(r)
    read_messages(r)
    assert (r.role, r.term) == (role, term)


# -- §5.1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.CANDIDATE, Role.LEADER])
def test_update_term_from_message_5_1(role: Role) -> None:
    """§5.1: a server that sees a larger term updates its term; a candidate or leader reverts to follower."""
    r = new_raft()
    become(r, role, 1)
    r.step(msg(MsgType.APP, 2, 1, 2))
    assert r.term == 2
    assert r.role is Role.FOLLOWER


def test_reject_stale_term_message_5_1() -> None:
    """§5.1: a request with a stale term is ignored (etcd drops it; no state changes)."""
    r = new_raft(storage=Storage(hard_state=HardState(term=2)))
    r.step(msg(MsgType.APP, 2, 1, 1, entries=entries(1)))
    assert r.log.last_index() == 0
    assert r.term == 2
    assert read_messages(r) == []


# -- §5.2 ---------------------------------------------------------------------------------


def test_start_as_follower_5_2() -> None:
    """§5.2: servers start up as followers."""
    r = new_raft()
    assert r.role is Role.FOLLOWER
    assert r.lead == 0


def test_leader_bcast_beat_5_2() -> None:
    """§5.2: a leader sends heartbeats (empty AppendEntries) to all followers to keep its authority."""
    r = new_raft(heartbeat_tick=1)
    make_leader(r)
    for value in range(10):
        assert r.propose(value)
    read_messages(r)
    r.tick()
    messages = sorted(read_messages(r), key=lambda m: m.to)
    assert messages == [
        msg(MsgType.HEARTBEAT, 1, 2, 1, commit=0),
        msg(MsgType.HEARTBEAT, 1, 3, 1, commit=0),
    ]


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.CANDIDATE])
def test_follower_start_election_5_2(role: Role) -> None:
    """§5.2: a follower (or a candidate whose election timed out) that hears nothing
    for an election timeout increments its term, votes for itself and requests votes."""
    r = new_raft()
    become(r, role, 1)
    for _ in range(1, 2 * r.config.election_tick):
        r.tick()
    assert r.term == 2
    assert r.role is Role.CANDIDATE
    assert r.vote == 1
    messages = sorted(read_messages(r), key=lambda m: m.to)
    assert messages == [msg(MsgType.VOTE, 1, 2, 2), msg(MsgType.VOTE, 1, 3, 2)]


@pytest.mark.parametrize(
    ("size", "votes", "expected"),
    [
        (1, {}, Role.LEADER),
        (3, {2: True, 3: True}, Role.LEADER),
        (3, {2: True}, Role.LEADER),
        (5, {2: True, 3: True, 4: True, 5: True}, Role.LEADER),
        (5, {2: True, 3: True, 4: True}, Role.LEADER),
        (5, {2: True, 3: True}, Role.LEADER),
        (3, {2: False, 3: False}, Role.FOLLOWER),
        (5, {2: False, 3: False, 4: False, 5: False}, Role.FOLLOWER),
        (5, {2: True, 3: False, 4: False, 5: False}, Role.FOLLOWER),
        (3, {}, Role.CANDIDATE),
        (5, {2: True}, Role.CANDIDATE),
        (5, {2: False, 3: False}, Role.CANDIDATE),
        (5, {}, Role.CANDIDATE),
    ],
)
def test_leader_election_in_one_round_rpc_5_2(size: int, votes: dict[int, bool], expected: Role) -> None:
    """§5.2: a candidate wins with votes from a majority, loses on a majority of
    rejections, and otherwise stays a candidate."""
    r = new_raft(peers=tuple(range(1, size + 1)))
    r.campaign()
    for voter, granted in votes.items():
        r.step(msg(MsgType.VOTE_RESP, voter, 1, r.term, reject=not granted))
    assert r.role is expected
    assert r.term == 1


@pytest.mark.parametrize(
    ("vote", "candidate", "rejected"),
    [(0, 2, False), (0, 3, False), (2, 2, False), (3, 3, False), (2, 3, True), (3, 2, True)],
)
def test_follower_vote_5_2(vote: int, candidate: int, rejected: bool) -> None:
    """§5.2: each server votes for at most one candidate in a term, first come first served."""
    r = new_raft(storage=Storage(hard_state=HardState(term=1, vote=vote)))
    r.step(msg(MsgType.VOTE, candidate, 1, 1))
    assert read_messages(r) == [
        msg(MsgType.VOTE_RESP, 1, candidate, 1, reject=rejected),
    ]


@pytest.mark.parametrize("leader_term", [1, 2])
def test_candidate_fallback_5_2(leader_term: int) -> None:
    """§5.2: a candidate that hears AppendEntries from a leader whose term is at least
    its own recognises the leader and returns to follower."""
    r = new_raft()
    r.campaign()
    assert (r.role, r.term) == (Role.CANDIDATE, 1)
    r.step(msg(MsgType.APP, 2, 1, leader_term))
    assert r.role is Role.FOLLOWER
    assert r.term == leader_term
    assert r.lead == 2


@pytest.mark.parametrize("role", [Role.FOLLOWER, Role.CANDIDATE])
def test_election_timeout_randomized_5_2(role: Role) -> None:
    """§5.2: election timeouts are chosen randomly from a fixed interval; each
    election starts after exactly the timeout drawn for it, by the caller."""
    generator = random.Random(7)
    drawn: list[int] = []

    def draw() -> int:
        drawn.append(generator.randrange(10, 20))
        return drawn[-1]

    r = new_raft(draw=draw)
    become(r, role, 1)
    waited: set[int] = set()
    for _ in range(200):
        timeout = drawn[-1]
        term = r.term
        ticks = 0
        while r.term == term:
            r.tick()
            ticks += 1
        read_messages(r)
        assert ticks == timeout
        waited.add(ticks)
    assert waited == set(range(10, 20))


# -- §5.3 ---------------------------------------------------------------------------------


def test_leader_start_replication_5_3() -> None:
    """§5.3: the leader appends a command to its log and issues AppendEntries to each follower."""
    r = new_raft()
    make_leader(r)
    commit_noop_entry(r)
    assert r.propose("some data")
    assert r.log.last_index() == 2
    expected = (Entry(term=1, index=2, data="some data"),)
    ready = r.ready()
    assert sorted(ready.messages, key=lambda m: m.to) == [
        msg(MsgType.APP, 1, 2, 1, log_term=1, index=1, entries=expected, commit=1),
        msg(MsgType.APP, 1, 3, 1, log_term=1, index=1, entries=expected, commit=1),
    ]
    assert ready.entries == expected


def test_leader_commit_entry_5_3() -> None:
    """§5.3: once a majority replicated the entry, the leader commits and applies it,
    and tells the followers the new commit index."""
    r = new_raft()
    make_leader(r)
    commit_noop_entry(r)
    r.propose("some data")
    for m in read_messages(r):
        r.step(msg(MsgType.APP_RESP, m.to, 1, 1, index=m.index + len(m.entries)))
    assert r.commit == 2
    ready = r.ready()
    assert ready.committed_entries == (Entry(term=1, index=2, data="some data"),)
    r.advance(ready)
    commits = sorted((m.to, m.commit) for m in ready.messages if m.type is MsgType.APP)
    assert commits == [(2, 2), (3, 2)]


@pytest.mark.parametrize(
    ("size", "acceptors", "committed"),
    [
        (1, set(), True),
        (3, set(), False),
        (3, {2}, True),
        (3, {2, 3}, True),
        (5, set(), False),
        (5, {2}, False),
        (5, {2, 3}, True),
        (5, {2, 3, 4}, True),
        (5, {2, 3, 4, 5}, True),
    ],
)
def test_leader_acknowledge_commit_5_3(size: int, acceptors: set[int], committed: bool) -> None:
    """§5.3: an entry is committed once the leader has replicated it on a majority."""
    r = new_raft(peers=tuple(range(1, size + 1)))
    make_leader(r)
    if size > 1:
        commit_noop_entry(r)
    r.propose("some data")
    for m in read_messages(r):
        if m.to in acceptors:
            r.step(msg(MsgType.APP_RESP, m.to, 1, 1, index=m.index + len(m.entries)))
    assert (r.commit == r.log.last_index()) is committed


@pytest.mark.parametrize("stored", [(), (2,), (1, 2), (1,)])
def test_leader_commit_preceding_entries_5_3(stored: tuple[int, ...]) -> None:
    """§5.3: committing an entry commits all preceding entries, including those of earlier leaders."""
    storage = Storage(hard_state=HardState(term=2), entries=entries(*stored))
    r = new_raft(storage=storage)
    make_leader(r)
    assert r.term == 3
    r.propose("some data")
    for m in read_messages(r):
        r.step(msg(MsgType.APP_RESP, m.to, 1, 3, index=len(stored) + 2))
    ready = r.ready()
    expected = (
        *entries(*stored),
        Entry(term=3, index=len(stored) + 1, data=None),
        Entry(term=3, index=len(stored) + 2, data="some data"),
    )
    assert ready.committed_entries == expected


@pytest.mark.parametrize(
    ("sent", "commit"),
    [
        (entries(1), 1),
        (entries(1, 1), 2),
        (entries(1, 1), 1),
        (entries(1), 1),
    ],
)
def test_follower_commit_entry_5_3(sent: tuple[Entry, ...], commit: int) -> None:
    """§5.3: once a follower learns that an entry is committed, it applies it, in log order."""
    r = new_raft()
    r.step(msg(MsgType.APP, 2, 1, 1, entries=sent, commit=commit))
    assert r.commit == commit
    assert r.ready().committed_entries == sent[:commit]


@pytest.mark.parametrize(
    ("term", "index", "response_index", "rejected", "hint", "hint_term"),
    [
        (0, 0, 1, False, 0, 0),  # below the commit: answered with the commit index
        (1, 1, 1, False, 0, 0),
        (2, 2, 2, False, 0, 0),
        (1, 2, 2, True, 1, 1),  # term mismatch at 2: hint at the last entry with term <= 1
        (3, 3, 3, True, 2, 2),  # beyond the log: hint at our last entry
    ],
)
def test_follower_check_msgapp_5_3(
    term: int, index: int, response_index: int, rejected: bool, hint: int, hint_term: int
) -> None:
    """§5.3: a follower refuses AppendEntries whose previous entry (index, term) it does not hold."""
    r = new_raft(storage=Storage(hard_state=HardState(term=2, commit=1), entries=entries(1, 2)))
    r.step(msg(MsgType.APP, 2, 1, 2, log_term=term, index=index, commit=1))
    assert read_messages(r) == [
        msg(
            MsgType.APP_RESP,
            1,
            2,
            2,
            index=response_index,
            reject=rejected,
            reject_hint=hint,
            log_term=hint_term,
        )
    ]


@pytest.mark.parametrize(
    ("index", "term", "sent", "expected_terms", "unstable_terms"),
    [
        (2, 2, ((3, 3),), (1, 2, 3), (3,)),
        (1, 1, ((3, 2), (4, 3)), (1, 3, 4), (3, 4)),
        (0, 0, ((1, 1),), (1, 2), ()),
        (0, 0, ((3, 1),), (3,), (3,)),
    ],
)
def test_follower_append_entries_5_3(
    index: int,
    term: int,
    sent: tuple[tuple[int, int], ...],
    expected_terms: tuple[int, ...],
    unstable_terms: tuple[int, ...],
) -> None:
    """§5.3: on a conflict (same index, different term) the follower deletes the entry and
    all that follow it, then appends the leader's new entries."""
    stored = entries(1, 2)
    r = new_raft(storage=Storage(hard_state=HardState(term=2), entries=stored))
    sent_entries = tuple(Entry(term=t, index=i, data=f"t{t}i{i}") for t, i in sent)
    r.step(msg(MsgType.APP, 2, 1, 4, log_term=term, index=index, entries=sent_entries))
    assert tuple(entry.term for entry in r.log.entries) == expected_terms
    assert tuple(entry.term for entry in r.ready().entries) == unstable_terms


# Figure 7: the leader's log at term 8, and the followers' logs (a)-(f).
FIGURE_7_LEADER = (1, 1, 1, 4, 4, 5, 5, 6, 6, 6)
FIGURE_7_FOLLOWERS = {
    "a": (1, 1, 1, 4, 4, 5, 5, 6, 6),
    "b": (1, 1, 1, 4),
    "c": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6),
    "d": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7),
    "e": (1, 1, 1, 4, 4, 4, 4),
    "f": (1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3),
}


@pytest.mark.parametrize("case", sorted(FIGURE_7_FOLLOWERS))
def test_leader_sync_follower_log_5_3(case: str) -> None:
    """§5.3, Figure 7: whatever the follower's log, the leader's AppendEntries consistency
    check finds the last common entry and makes the follower's log identical to its own."""
    follower_log = FIGURE_7_FOLLOWERS[case]
    storages = {
        1: Storage(hard_state=HardState(term=8, commit=len(FIGURE_7_LEADER)), entries=entries(*FIGURE_7_LEADER)),
        2: Storage(hard_state=HardState(term=7), entries=entries(*follower_log)),
        # An empty member at term 7 that votes for the leader (etcd's test injects that vote).
        3: Storage(hard_state=HardState(term=7)),
    }
    net = Network((1, 2, 3), storages=storages, pre_vote=False, check_quorum=False)
    net.campaign(1)
    assert net.node(1).role is Role.LEADER
    assert net.propose(1, "some data")
    assert net.log_of(2) == net.log_of(1)
    assert net.node(2).commit == net.node(1).commit == len(FIGURE_7_LEADER) + 2
    assert net.violations == []


# -- §5.4 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("stored", "expected_term"), [((1,), 2), ((1, 2), 3)])
def test_vote_request_5_4_1(stored: tuple[int, ...], expected_term: int) -> None:
    """§5.4.1: RequestVote carries the index and term of the candidate's last log entry."""
    r = new_raft()
    r.step(msg(MsgType.APP, 2, 1, stored[-1], log_term=0, index=0, entries=entries(*stored)))
    read_messages(r)
    for _ in range(1, 2 * r.config.election_tick):
        r.tick()
    messages = sorted(read_messages(r), key=lambda m: m.to)
    assert [m.to for m in messages] == [2, 3]
    for m in messages:
        assert m.type is MsgType.VOTE
        assert (m.term, m.log_term, m.index) == (expected_term, stored[-1], len(stored))


@pytest.mark.parametrize(
    ("stored", "log_term", "index", "rejected"),
    [
        # same last term: the longer log is more up to date
        ((1,), 1, 1, False),
        ((1,), 1, 2, False),
        ((1, 1), 1, 1, True),
        # the candidate's last term is higher
        ((1,), 2, 1, False),
        ((1,), 2, 2, False),
        ((1, 1), 2, 1, False),
        # the voter's last term is higher
        ((2,), 1, 1, True),
        ((2,), 1, 2, True),
        ((1, 2), 1, 1, True),
    ],
)
def test_voter_5_4_1(stored: tuple[int, ...], log_term: int, index: int, rejected: bool) -> None:
    """§5.4.1: a voter denies its vote if its own log is more up to date than the candidate's."""
    r = new_raft(storage=Storage(hard_state=HardState(term=2), entries=entries(*stored)))
    r.step(msg(MsgType.VOTE, 2, 1, 3, log_term=log_term, index=index))
    [response] = read_messages(r)
    assert response.type is MsgType.VOTE_RESP
    assert response.reject is rejected


@pytest.mark.parametrize(("acked_index", "expected_commit"), [(1, 0), (2, 0), (3, 3)])
def test_leader_only_commits_log_from_current_term_5_4_2(acked_index: int, expected_commit: int) -> None:
    """§5.4.2: a leader commits by counting replicas only entries of its own term."""
    r = new_raft(storage=Storage(hard_state=HardState(term=2), entries=entries(1, 2)))
    make_leader(r)
    assert r.term == 3
    read_messages(r)
    r.step(msg(MsgType.APP_RESP, 2, 1, 3, index=acked_index))
    assert r.commit == expected_commit

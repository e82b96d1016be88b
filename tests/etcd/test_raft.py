"""Raft beyond the paper's basic algorithm — pre-vote, check-quorum, snapshots,
ReadIndex, restarts — the gallery of broken variants, and random schedules.

Each scripted test reads as a story: the steps, then the outcome.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.etcd.raft import (
    Entry,
    HardState,
    Message,
    MsgType,
    Raft,
    RaftConfig,
    ReadState,
    Role,
    Storage,
)
from chaoskube.etcd.raft_broken import (
    BROKEN_VARIANTS,
    CommitPreviousTermByCount,
    ForgetsVote,
    VoteWithoutLogCheck,
)
from chaoskube.etcd.raft_log import RaftLog
from tests.etcd.raft_harness import Network

# -- elections: pre-vote and check-quorum --------------------------------------------------


def test_pre_vote_partitioned_node_rejoins_without_raising_the_term() -> None:
    """etcd pre-vote (thesis §9.6): an isolated member keeps pre-campaigning at its
    term; when it rejoins, the leader keeps its leadership and the term stays."""
    net = Network((1, 2, 3))
    net.campaign(1)
    assert (net.leader(), net.node(1).term) == (1, 1)
    net.isolate(3)
    net.tick(3, 100)
    assert net.node(3).term == 1
    assert net.node(3).role is Role.PRE_CANDIDATE
    net.heal()
    net.tick(1)
    assert net.leader() == 1
    assert [net.node(member).term for member in net.ids] == [1, 1, 1]
    assert net.node(3).role is Role.FOLLOWER
    assert net.node(3).lead == 1


def test_without_pre_vote_a_rejoining_node_disrupts_the_leader() -> None:
    """The contrast: without pre-vote the isolated member raises its term, and on
    rejoining its next campaign deposes the leader (etcd ignores the old leader's
    lower-term heartbeats here, since neither pre-vote nor check-quorum is on)."""
    net = Network((1, 2, 3), pre_vote=False, check_quorum=False)
    net.campaign(1)
    net.isolate(3)
    net.tick(3, 100)
    assert net.node(3).term > 1
    net.heal()
    net.tick(3, 2 * net.config(3).election_tick)
    assert net.node(1).term == net.node(3).term > 1
    assert max(net.leaders) > 1


def test_check_quorum_isolated_leader_steps_down() -> None:
    """etcd check-quorum: a leader that heard from no quorum within an election
    timeout steps down."""
    net = Network((1, 2, 3))
    net.campaign(1)
    net.isolate(1)
    election_tick = net.config(1).election_tick
    net.tick(1, 2 * election_tick)
    assert net.node(1).role is Role.FOLLOWER
    assert net.node(1).lead == 0


def test_without_check_quorum_an_isolated_leader_stays() -> None:
    net = Network((1, 2, 3), check_quorum=False)
    net.campaign(1)
    net.isolate(1)
    net.tick(1, 50)
    assert net.node(1).role is Role.LEADER


def test_check_quorum_member_in_lease_ignores_vote_requests() -> None:
    """etcd ``inLease``: a member that heard from its leader within the election
    timeout ignores (pre-)vote requests, so a campaign cannot depose a live leader."""
    net = Network((1, 2, 3))
    net.campaign(1)
    net.campaign(3)
    assert net.leader() == 1
    assert net.node(1).term == 1
    assert net.node(2).vote == 1


def test_pre_candidate_does_not_bump_its_term() -> None:
    net = Network((1, 2, 3))
    net.isolate(1)
    net.campaign(1)
    assert net.node(1).role is Role.PRE_CANDIDATE
    assert net.node(1).term == 0
    assert net.node(1).vote == 0


# -- replication, snapshots, restarts ------------------------------------------------------


def test_proposal_without_leader_is_dropped() -> None:
    net = Network((1, 2, 3))
    assert net.propose(2, "x") is False
    net.campaign(1)
    assert net.propose(2, "forwarded") is True
    assert [item[2] for item in net.state[1]] == [None, "forwarded"]


def _appends_to_3_after_catching_up(**config_options) -> list[tuple]:
    """Member 3 misses five entries (one of 25 bytes), rejoins and catches up: the
    entries of each append that reached it."""
    net = Network((1, 2, 3), **config_options)
    net.campaign(1)
    net.isolate(3)
    for data in ("aaaa", "bbbb", "cccc", "d" * 25, "eeee"):
        assert net.propose(1, data)
    net.heal()
    carried: list[tuple] = []
    net.drop_if = lambda m: carried.append(tuple(e.data for e in m.entries)) if m.type is MsgType.APP and m.to == 3 and m.entries else False
    net.tick(1, 3)
    assert net.state[3] == net.state[1]
    return carried


def test_an_append_carries_entries_up_to_max_size_per_message_and_at_least_one() -> None:
    """etcd-io/raft ``limitSize`` (util.go), as ``maybeSendAppend`` applies
    ``MaxSizePerMsg`` (1 MiB in etcd's server): the longest prefix within the byte
    limit, and always the first entry however large. Without sized entries only the
    count limit applies and one append carries them all."""
    sized = _appends_to_3_after_catching_up(entry_size=lambda data: 0 if data is None else len(data), max_size_per_message=10)
    assert sized == [("aaaa", "bbbb"), ("cccc",), ("d" * 25,), ("eeee",)]
    assert _appends_to_3_after_catching_up() == [("aaaa", "bbbb", "cccc", "d" * 25, "eeee")]


def test_the_byte_limit_keeps_a_new_leaders_own_entry_out_of_its_first_catch_up_append() -> None:
    """The window of Raft's Figure 8 the byte limit opens: a new leader whose log ends in
    a large entry of an earlier term sends a follower that lacks it that entry alone, not
    with the empty entry of its own term (which commits both). A correct leader does not
    commit on that follower's acknowledgement; one that counts replicas does."""
    sizes = {"entry_size": lambda data: 0 if data is None else len(data), "max_size_per_message": 10}
    for variant, committed_on_ack in ((Raft, False), (CommitPreviousTermByCount, True)):
        storages = {
            1: Storage(HardState(term=2), entries=(Entry(1, 1, "x"), Entry(2, 2, "y" * 20))),
            2: Storage(HardState(term=2), entries=(Entry(1, 1, "x"),)),
            3: Storage(HardState(term=2), entries=(Entry(1, 1, "x"),)),
        }
        net = Network((1, 2, 3), variant=variant, storages=storages, **sizes)
        net.crash(3)
        first_ack: list[int] = []

        def hold_own_term_entry(m: Message) -> bool:
            if m.type is MsgType.APP_RESP and m.from_ == 2 and not m.reject and not first_ack:
                first_ack.append(net.node(1).commit)
            # only the appends that would put the term-3 entry in member 2's log
            carries = m.type is MsgType.APP and any(entry.term == 3 for entry in m.entries)
            return carries and net.node(m.to).log.match_term(m.index, m.log_term)

        net.drop_if = hold_own_term_entry
        net.campaign(1)
        assert (net.node(1).role, net.node(1).term) == (Role.LEADER, 3)
        net.tick(1, 2)
        assert net.node(2).log.last_index() == 2 and net.node(2).log.term(2) == 2  # the old entry, alone
        assert (net.node(1).commit == 2) is committed_on_ack, variant.__name__


def test_snapshot_catches_up_lagging_follower_after_compaction() -> None:
    """A follower whose next entry the leader compacted away gets MsgSnap, restores
    its state machine from it and then follows the log again."""
    net = Network((1, 2, 3))
    net.campaign(1)
    net.isolate(3)
    for value in range(20):
        assert net.propose(1, value)
    applied = net.node(1).applied
    snapshot = net.compact(1, applied)
    assert net.node(1).log.first_index() == applied + 1
    net.heal()
    net.tick(1, 2)
    follower = net.node(3)
    assert follower.log.snapshot == snapshot
    assert follower.commit == net.node(1).commit
    assert net.state[3] == net.state[1]
    net.propose(1, "after")
    assert net.state[3] == net.state[1]
    assert net.state[3][-1][2] == "after"
    assert net.violations == []


def test_lost_snapshot_is_sent_again() -> None:
    net = Network((1, 2, 3))
    net.campaign(1)
    net.isolate(3)
    for value in range(5):
        net.propose(1, value)
    net.compact(1, net.node(1).applied)
    net.heal()
    net.drop_if = lambda m: m.type is MsgType.SNAP
    net.tick(1, 3)
    assert net.node(3).commit < net.node(1).commit
    net.drop_if = None
    net.tick(1, 3)
    assert net.state[3] == net.state[1]


def test_restart_from_storage_keeps_term_vote_and_log() -> None:
    net = Network((1, 2, 3))
    net.campaign(1)
    net.propose(1, "a")
    net.tick(1)  # the heartbeat carries the new commit index to the followers
    before = net.node(2)
    term, vote, log, commit = before.term, before.vote, dict(net.log_of(2)), before.commit
    net.crash(2)
    net.restart(2)
    after = net.node(2)
    assert (after.term, after.vote, net.log_of(2), after.commit) == (term, vote, log, commit)
    assert after.role is Role.FOLLOWER
    assert [item[2] for item in net.state[2]] == [None, "a"]


def test_whole_cluster_restart_recovers() -> None:
    net = Network((1, 2, 3))
    net.campaign(1)
    for value in "abc":
        net.propose(1, value)
    for member in net.ids:
        net.crash(member)
    for member in net.ids:
        net.restart(member)
    net.tick_all(40)
    leader = net.leader()
    assert leader is not None
    net.propose(leader, "d")
    assert [item[2] for item in net.state[1] if item[2] is not None] == ["a", "b", "c", "d"]
    assert net.violations == []


def test_raft_raises_on_programmer_errors() -> None:
    config = RaftConfig(id=1, peers=(1, 2, 3))
    r = Raft(config, Storage(), lambda: 10)
    with pytest.raises(AssertionError):
        r.step(Message(type=MsgType.APP, to=2, from_=3, term=1))  # not addressed to us
    with pytest.raises(AssertionError):
        ready = r.ready()
        r.advance(ready)
        r.advance(ready)  # a Ready advanced twice
    with pytest.raises(AssertionError):
        Raft(config, Storage(), lambda: 99)  # election timeout out of range
    with pytest.raises(AssertionError):
        Raft(config, Storage(hard_state=HardState(term=1, commit=5)), lambda: 10)  # commit beyond the log


# -- ReadIndex --------------------------------------------------------------------------


def test_read_index_on_leader() -> None:
    net = Network((1, 2, 3))
    net.campaign(1)
    net.propose(1, "a")
    assert net.read_index(1, "read-1")
    assert net.read_states[1] == [ReadState(index=net.node(1).commit, context="read-1")]


def test_read_index_forwarded_from_follower() -> None:
    net = Network((1, 2, 3))
    net.campaign(1)
    net.propose(1, "a")
    assert net.read_index(2, "read-2")
    assert net.read_states[2] == [ReadState(index=2, context="read-2")]
    assert net.read_states[1] == []


def test_read_index_without_leader_is_dropped() -> None:
    net = Network((1, 2, 3))
    assert net.read_index(2, "nobody") is False


def test_no_read_state_from_leader_cut_off_from_quorum() -> None:
    """The heartbeat round that would confirm leadership never reaches a quorum;
    the leader steps down and the read is dropped, never answered."""
    net = Network((1, 2, 3))
    net.campaign(1)
    net.isolate(1)
    assert net.read_index(1, "stale")
    net.tick(1, 2 * net.config(1).election_tick)
    assert net.node(1).role is Role.FOLLOWER
    net.heal()
    net.tick_all(30)
    assert net.read_states[1] == []


def test_read_index_deferred_until_leader_commits_in_its_term() -> None:
    """etcd: a new leader postpones ReadIndex until it commits an entry of its term,
    since before that its commit index may lag the cluster's."""
    net = Network((1, 2, 3))
    net.drop_if = lambda m: m.type is MsgType.APP
    net.campaign(1)
    assert net.node(1).role is Role.LEADER
    assert net.read_index(1, "early")
    net.tick(1, 3)
    assert net.read_states[1] == []
    net.drop_if = None
    net.tick(1, 2)
    assert net.read_states[1] == [ReadState(index=1, context="early")]


def test_single_member_read_index_is_immediate() -> None:
    net = Network((1,))
    net.campaign(1)
    net.propose(1, "a")
    net.read_index(1, "solo")
    assert net.read_states[1] == [ReadState(index=2, context="solo")]


# -- the gallery of broken variants -------------------------------------------------------


def script_two_leaders_after_restart(variant: type[Raft]) -> Network:
    """Member 1 wins term 1 with member 2's vote; member 2 restarts; member 3
    (cut off from 1) campaigns in term 1 and asks member 2 again."""
    net = Network((1, 2, 3), variant=variant)
    net.cut |= {(1, 3), (3, 1)}
    net.drop_if = lambda m: m.type is MsgType.APP  # member 2 never hears from its leader
    net.campaign(1)
    assert net.node(1).role is Role.LEADER
    net.crash(2)
    net.restart(2)
    net.campaign(3)
    return net


def script_figure_8(variant: type[Raft]) -> Network:
    """Raft paper Figure 8, from (b): S1 led term 2 and put index 2 on S1, S2; S5
    led term 3 and put a different index 2 on itself only. S5 is down. S1 wins
    term 4 and replicates its index 2 to S3 and S4 but never its term-4 entry.
    Then S1 crashes, S5 comes back and wins term 5 with an index 2 of term 3."""
    first = Entry(term=1, index=1, data="x1")
    storages = {
        1: Storage(HardState(term=3, commit=1), entries=(first, Entry(2, 2, "from S1, term 2"))),
        2: Storage(HardState(term=3, commit=1), entries=(first, Entry(2, 2, "from S1, term 2"))),
        3: Storage(HardState(term=3, vote=5, commit=1), entries=(first,)),
        4: Storage(HardState(term=3, vote=5, commit=1), entries=(first,)),
        5: Storage(HardState(term=3, vote=5, commit=1), entries=(first, Entry(3, 2, "from S5, term 3"))),
    }
    net = Network(
        (1, 2, 3, 4, 5),
        variant=variant,
        storages=storages,
        pre_vote=False,
        check_quorum=False,
        max_entries_per_message=1,
    )
    net.crash(5)

    def drop_current_term_entries(m: Message) -> bool:
        # Only the appends that would actually put a term-4 entry in a follower's log.
        carries = any(entry.term == 4 for entry in m.entries)
        return m.type is MsgType.APP and carries and net.node(m.to).log.match_term(m.index, m.log_term)

    net.drop_if = drop_current_term_entries
    net.campaign(1)
    assert (net.node(1).role, net.node(1).term) == (Role.LEADER, 4)
    net.crash(1)
    net.drop_if = None
    net.restart(5)
    net.campaign(5)  # term 4: everyone already voted for S1
    net.campaign(5)  # term 5
    assert net.node(5).role is Role.LEADER
    net.tick(5, 2)
    return net


def script_leader_without_committed_entry(variant: type[Raft]) -> Network:
    """Member 3 is cut off while 1 and 2 commit an entry; member 1 crashes; member 3,
    whose log is empty, campaigns and asks member 2 for its vote."""
    # Check-quorum off: its lease would only delay member 2's vote by an election timeout.
    net = Network((1, 2, 3), variant=variant, check_quorum=False)
    net.isolate(3)
    net.campaign(1)
    net.propose(1, "committed")
    assert net.node(2).commit == 2
    net.crash(1)
    net.heal()
    # Hold back the new leader's appends: member 2 would refuse to truncate a committed
    # entry (an assertion, as etcd's panic) and we want the violation, not the crash.
    net.drop_if = lambda m: m.type is MsgType.APP
    net.campaign(3)  # its pre-vote for term 1 is refused (member 2 voted in term 1); it learns term 1
    net.campaign(3)  # term 2
    net.check_leader_completeness()
    return net


GALLERY: list[tuple[type[Raft], Callable[[type[Raft]], Network], str]] = [
    (ForgetsVote, script_two_leaders_after_restart, "election safety"),
    (CommitPreviousTermByCount, script_figure_8, "state machine safety"),
    (VoteWithoutLogCheck, script_leader_without_committed_entry, "leader completeness"),
]


def test_gallery_covers_every_broken_variant() -> None:
    assert sorted(variant.__name__ for variant, _, _ in GALLERY) == sorted(
        variant.__name__ for variant in BROKEN_VARIANTS.values()
    )
    assert set(BROKEN_VARIANTS) == {"vote-without-log-check", "commit-previous-term-by-count", "forgets-vote"}


@pytest.mark.parametrize(("variant", "script", "violation"), GALLERY, ids=lambda value: getattr(value, "__name__", None))
def test_broken_variant_violates_safety(variant: type[Raft], script, violation: str) -> None:
    net = script(variant)
    assert any(found.startswith(violation) for found in net.violations), net.violations


@pytest.mark.parametrize(("variant", "script", "violation"), GALLERY, ids=lambda value: getattr(value, "__name__", None))
def test_correct_raft_survives_the_same_script(variant: type[Raft], script, violation: str) -> None:
    net = script(Raft)
    assert net.violations == []


def test_figure_8_correct_leader_does_not_commit_previous_term_entry() -> None:
    """The heart of Figure 8: with the correct rule, S1 never applied its index 2,
    so S5 overwriting it is safe; the broken rule applied it first."""
    correct = script_figure_8(Raft)
    assert [item[0] for item in correct.state[1]] == [1]
    broken = script_figure_8(CommitPreviousTermByCount)
    assert [item[0] for item in broken.state[1]] == [1, 2]


def test_two_leaders_in_one_term_with_forgotten_vote() -> None:
    net = script_two_leaders_after_restart(ForgetsVote)
    assert net.leaders[1] == {1, 3}
    assert net.disks[2].hard_state.vote == 0


# -- random schedules ---------------------------------------------------------------------


ELECTION_TICK = 4


@st.composite
def schedules(draw):
    size = draw(st.sampled_from([3, 5]))
    member = st.integers(1, size)
    operation = st.one_of(
        st.tuples(st.just("tick"), st.integers(1, 12)),
        # Asynchrony: one member ticks and only a few messages arrive; the rest stay in flight.
        st.tuples(st.just("tick_one"), member, st.integers(1, 12), st.integers(0, 6)),
        st.tuples(st.just("deliver"), st.integers(0, 6)),
        st.tuples(st.just("campaign"), member),
        st.tuples(st.just("reorder"), st.booleans()),
        st.tuples(st.just("propose"), member),
        st.tuples(st.just("read"), member),
        st.tuples(st.just("partition"), st.sets(member, min_size=1, max_size=size - 1)),
        st.tuples(st.just("isolate"), member),
        st.tuples(st.just("heal")),
        st.tuples(st.just("crash"), member),
        st.tuples(st.just("restart"), member),
        st.tuples(st.just("reboot"), member),  # crash and restart at once: memory lost, disk kept
        st.tuples(st.just("loss"), st.sampled_from([0.0, 0.1, 0.3])),
        st.tuples(st.just("compact"), member),
    )
    seed = draw(st.integers(0, 2**32 - 1))
    # Both on is how etcd runs; the other combinations explore more elections.
    options = {"pre_vote": draw(st.booleans()), "check_quorum": draw(st.booleans())}
    return size, seed, options, draw(st.lists(operation, min_size=10, max_size=60))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_random_schedules_keep_raft_safe(schedule) -> None:
    """Safety under random faults (election safety, log matching, state machine
    safety, ReadIndex never behind a commit seen before the read), then liveness
    once healed: a leader emerges and every member applies the same entries."""
    size, seed, options, operations = schedule
    # A short election timeout (4 ticks) so that schedules of a few dozen steps see many elections.
    net = Network(range(1, size + 1), seed=seed, election_tick=ELECTION_TICK, **options)
    values = itertools.count()
    read_floor: dict[str, int] = {}
    checked_reads = {member: 0 for member in net.ids}

    def check() -> None:
        net.check_log_matching()
        assert net.violations == []
        for member in net.ids:
            for read in net.read_states[member][checked_reads[member] :]:
                # Linearizable read: not behind anything committed before it began.
                assert read.index >= read_floor[read.context], (read, read_floor[read.context])
            checked_reads[member] = len(net.read_states[member])

    for operation in operations:
        kind = operation[0]
        if kind == "tick":
            net.tick_all(operation[1])
        elif kind == "tick_one" and net.nodes[operation[1]] is not None:
            for _ in range(operation[2]):
                net.node(operation[1]).tick()
                net.process(operation[1])
            net.deliver(operation[3])
        elif kind == "deliver":
            net.deliver(operation[1])
        elif kind == "campaign" and net.nodes[operation[1]] is not None:
            net.node(operation[1]).campaign()
            net.process(operation[1])
        elif kind == "reorder":
            net.reorder = operation[1]
        elif kind == "propose" and net.nodes[operation[1]] is not None:
            net.node(operation[1]).propose(next(values))
            net.process(operation[1])  # delivered by later operations
        elif kind == "read" and net.nodes[operation[1]] is not None:
            context = f"read-{next(values)}"
            read_floor[context] = max(net.committed, default=0)
            net.node(operation[1]).read_index(context)
            net.process(operation[1])
        elif kind == "partition":
            net.heal()
            net.partition(operation[1], set(net.ids) - operation[1])
        elif kind == "isolate":
            net.isolate(operation[1])
        elif kind == "heal":
            net.heal()
        elif kind == "crash":
            net.crash(operation[1])
        elif kind == "restart" and net.nodes[operation[1]] is None:
            net.restart(operation[1])
        elif kind == "reboot" and net.nodes[operation[1]] is not None:
            net.crash(operation[1])
            net.restart(operation[1])
        elif kind == "loss":
            net.loss_rate = operation[1]
        elif kind == "compact" and net.nodes[operation[1]] is not None:
            node = net.node(operation[1])
            if node.applied > node.log.offset:
                net.compact(operation[1], node.applied)
        check()

    # Liveness: heal everything, and require convergence within a bound.
    net.heal()
    net.loss_rate = 0.0
    net.reorder = False
    for member in net.ids:
        if net.nodes[member] is None:
            net.restart(member)
    net.stabilize()

    def converged() -> bool:
        states = {tuple(net.state[member]) for member in net.ids}
        return len(states) == 1 and any(item[2] == "final" for item in next(iter(states)))

    # A proposal is lost when leadership changes (not guaranteed): propose again
    # every election timeout until every member applied it.
    for tick in range(50 * ELECTION_TICK):
        leader = net.leader()
        if tick % ELECTION_TICK == 0 and leader is not None:
            net.propose(leader, "final")
        net.tick_all()
        if converged():
            break
    check()
    assert converged(), {member: net.state[member][-3:] for member in net.ids}


# -- pure helpers against simple oracles ----------------------------------------------------


@st.composite
def logs(draw):
    """A log (terms non-decreasing) and an optional compaction point."""
    increments = draw(st.lists(st.integers(0, 2), max_size=12))
    terms = list(itertools.accumulate(increments, initial=1))[1:]
    entries = tuple(Entry(term=term, index=index + 1, data=index) for index, term in enumerate(terms))
    return entries


@given(logs(), st.integers(0, 14), st.integers(0, 8))
def test_find_conflict_by_term_matches_oracle(entries, index, term) -> None:
    """etcd ``findConflictByTerm``: the largest index <= ``index`` whose term is <= ``term``."""
    log = RaftLog(None, entries, 0)
    index = min(index, log.last_index())
    candidates = [i for i in range(0, index + 1) if (log.term(i) or 0) <= term]
    expected = max(candidates)
    assert log.find_conflict_by_term(index, term) == (expected, log.term(expected))


@given(logs(), st.integers(0, 8), st.integers(0, 14))
def test_is_up_to_date_matches_oracle(entries, last_term, last_index) -> None:
    """§5.4.1 as a lexicographic comparison of (last term, last index)."""
    log = RaftLog(None, entries, 0)
    ours = (log.last_term(), log.last_index())
    assert log.is_up_to_date(last_term, last_index) is ((last_term, last_index) >= ours)


def test_conflict_back_off_skips_whole_terms() -> None:
    """etcd ``raft.go`` (MsgAppResp, reject hints): with the leader's log 1 3 3 3 5 5 5 5 5
    and the follower's 1 1 1 1 2 2, one rejection is enough to find the common prefix."""
    leader_terms = (1, 3, 3, 3, 5, 5, 5, 5, 5)
    follower_terms = (1, 1, 1, 1, 2, 2)

    def log(terms):
        return tuple(Entry(term=t, index=i + 1, data=(t, i + 1)) for i, t in enumerate(terms))

    storages = {
        1: Storage(HardState(term=5), entries=log(leader_terms)),
        2: Storage(HardState(term=5), entries=log(follower_terms)),
        3: Storage(HardState(term=5)),
    }
    net = Network((1, 2, 3), storages=storages, pre_vote=False, check_quorum=False)
    rejections = []

    def count(m: Message) -> bool:
        if m.type is MsgType.APP_RESP and m.from_ == 2 and m.reject:
            rejections.append(m)
        return False

    net.drop_if = count
    net.campaign(1)
    assert net.node(1).role is Role.LEADER
    assert len(rejections) == 1
    assert (rejections[0].reject_hint, rejections[0].log_term) == (6, 2)
    assert net.log_of(2) == net.log_of(1)

"""Leader election (client-go semantics) on the simulated runtime, under kill, partition,
pause and clock jumps of the leader; and the pure decision core, table by table."""

import pytest
import trio

from chaoskube.checkers.leader_election import check_leader_election, leader_intervals
from chaoskube.client.leaderelection import (
    Action,
    FakeLeaseLock,
    LeaderElectionConfig,
    LeaderElector,
    LeaseRecord,
    Observation,
    decide,
    jittered,
    lease_server,
    released_record,
)
from chaoskube.sim import World

CONFIG = LeaderElectionConfig()
LEASE = 15.0
RETRY = 2.0
MAX_RETRY_WAIT = RETRY * (1 + 1.2)  # wait.Jitter(2 s, 1.2): at most 4.4 s
# A candidate first sees the dead leader's last renewal at most one (jittered) poll after
# it, then needs the lease duration of its own clock plus up to one more poll.
FAILOVER_BOUND = LEASE + 2 * MAX_RETRY_WAIT
CANDIDATES = ("a", "b", "c")


# -- the pure core -----------------------------------------------------------------------------
def record(holder, renew=0.0, transitions=0, duration=15):
    return LeaseRecord(holder, duration, 0.0, renew, transitions)


def test_defaults_and_validation_are_client_gos():
    assert (CONFIG.lease_duration_s, CONFIG.renew_deadline_s, CONFIG.retry_period_s, CONFIG.jitter_factor) == (15.0, 10.0, 2.0, 1.2)
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        LeaderElectionConfig(lease_duration_s=10, renew_deadline_s=10)
    with pytest.raises(ValueError, match="retryPeriod\\*JitterFactor"):
        LeaderElectionConfig(renew_deadline_s=4, retry_period_s=4)


@pytest.mark.parametrize(
    ("name", "got", "observed", "now", "action", "transitions"),
    [
        ("no lease: create it", None, Observation(), 5.0, Action.ACQUIRE, 0),
        ("held by b, just seen change", record("b", 100.0), Observation(record("b", 98.0), 1.0), 3.0, Action.WAIT, None),
        ("held by b, unchanged 14.9 s", record("b", 98.0), Observation(record("b", 98.0), 1.0), 15.9, Action.WAIT, None),
        ("held by b, unchanged exactly 15 s: expired", record("b", 98.0), Observation(record("b", 98.0), 1.0), 16.0, Action.ACQUIRE, 1),
        ("renew time far in the past is not trusted", record("b", -1e9), Observation(), 3.0, Action.WAIT, None),
        ("renew time far in the future is not trusted", record("b", 1e9), Observation(record("b", 1e9), 0.0), 20.0, Action.ACQUIRE, 1),
        ("released (no holder): take it at once", record("", 7.0, 4), Observation(record("b", 6.0, 4), 6.0), 7.0, Action.ACQUIRE, 5),
        ("we hold it: renew", record("a", 9.0, 2), Observation(record("a", 9.0, 2), 9.0), 11.0, Action.RENEW, 2),
        ("we held it, b holds it now: lost", record("b", 12.0, 3), Observation(record("a", 9.0, 2), 9.0), 12.0, Action.LOST, None),
        ("we held it, b's is expired by our clock", record("b", 12.0, 3), Observation(record("b", 12.0, 3), 12.0), 27.5, Action.ACQUIRE, 4),
    ],
)
def test_decide(name, got, observed, now, action, transitions):
    decision = decide(got, observed, now, "a", CONFIG)
    assert decision.action is action, name
    if transitions is None:
        assert decision.record is None
    else:
        assert decision.record.holder_identity == "a"
        assert decision.record.lease_transitions == transitions
        assert decision.record.renew_time == now
        assert decision.record.lease_duration_seconds == 15
    assert decision.create == (got is None)


def test_observed_time_moves_only_when_the_record_changes():
    seen = record("b", 100.0)
    first = decide(seen, Observation(), 1.0, "a", CONFIG)
    assert first.observed == Observation(seen, 1.0)
    again = decide(seen, first.observed, 9.0, "a", CONFIG)
    assert again.observed.time == 1.0  # unchanged record: the clock of the first sighting
    changed = decide(record("b", 101.0), again.observed, 9.5, "a", CONFIG)
    assert changed.observed.time == 9.5


def test_renew_keeps_acquire_time_and_transitions():
    held = LeaseRecord("a", 15, 3.0, 9.0, 6)
    decision = decide(held, Observation(held, 9.0), 11.0, "a", CONFIG)
    assert decision.record == LeaseRecord("a", 15, 3.0, 11.0, 6)


def test_release_record_and_jitter():
    assert released_record(Observation(record("a", 1.0, 7), 1.0)) == LeaseRecord("", 1, None, None, 7)
    assert jittered(2.0, 1.2, 0.0) == 2.0
    assert jittered(2.0, 1.2, 0.5) == pytest.approx(3.2)
    assert jittered(2.0, 1.2, 0.999999) < MAX_RETRY_WAIT


def test_module_docstring_states_the_non_guarantee():
    import chaoskube.client.leaderelection as module

    text = " ".join(module.__doc__.split())
    assert "does not guarantee that only one client is acting as a leader (a.k.a. fencing)" in text


# -- the simulated cluster: 3 electors and a lease server -------------------------------------
def elector(lease="controller-manager", release_on_cancel=False, work=None):
    async def main(process):
        lock = FakeLeaseLock(process, lease)
        while True:  # as a controller-manager restarts its election after losing it
            await LeaderElector(process, lock, CONFIG, work, release_on_cancel=release_on_cancel).run()

    return main


def cluster(world, names=CANDIDATES, **options):
    world.spawn("lease-server", lease_server)
    for name in names:
        world.spawn(name, elector(**options))


def leader_events(world, event=None, after=-1.0):
    return [
        e
        for e in world.journal.of_type("leader")
        if (event is None or e["event"] == event) and e["t"] > after
    ]


def current_leader(world):
    return leader_events(world, "start")[-1]["process"]


def scenario(seed, fault, warmup_s=20.0, after_s=40.0):
    """Run 3 electors; at warm-up's end apply ``fault`` to the leader; return the world,
    the fault time and the old leader."""
    facts = {}

    async def main(world):
        cluster(world)
        await world.sleep(warmup_s + (seed % 10) * 0.173)  # vary the phase of the fault
        leader = facts["leader"] = current_leader(world)
        facts["t"] = world.now
        await fault(world, leader)
        await world.sleep(after_s)

    world = World(seed)
    world.run(main)
    return world, facts["t"], facts["leader"]


def test_steady_state_one_leader_that_keeps_the_lease():
    async def main(world):
        cluster(world)
        await world.sleep(120)

    world = World(1)
    world.run(main)
    starts = leader_events(world, "start")
    assert len(starts) == 1 and starts[0]["t"] < 0.1
    assert [e["event"] for e in leader_events(world) if e["t"] < 120] == ["candidate"] * 3 + ["start"]
    verdict = check_leader_election(world.journal.events, max_gap_s=1.0, lease_server="lease-server")
    assert verdict.valid is True, verdict.reason


async def kill(world, leader):
    world.process(leader).kill()


@pytest.mark.parametrize("seed", range(1, 41))
def test_kill_the_leader_a_new_leader_within_the_bound(seed):
    world, killed_at, old = scenario(seed, kill)
    new = leader_events(world, "start", after=killed_at)
    assert new and new[0]["process"] != old
    failover = new[0]["t"] - killed_at
    # Not before the lease could expire (the last renewal was at most one retry period
    # plus a round trip before the kill), and within the lease plus two jittered polls.
    assert LEASE - RETRY - 0.1 < failover <= FAILOVER_BOUND
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND, lease_server="lease-server")
    assert verdict.valid is True, verdict.reason


def test_measured_failover_after_a_kill_over_seeds():
    """The figure reported in the issue: over 40 seeds, min / max time from the kill of
    the leader to the next ``start``. Mostly under the issue's lease + jittered retry
    (15 s + 4.4 s); the proven bound is lease + two jittered polls (23.8 s)."""
    failovers = []
    for seed in range(1, 41):
        world, killed_at, _ = scenario(seed, kill)
        failovers.append(leader_events(world, "start", after=killed_at)[0]["t"] - killed_at)
    assert min(failovers) > LEASE - RETRY - 0.1
    assert max(failovers) <= FAILOVER_BOUND
    assert sorted(failovers)[len(failovers) // 2] <= LEASE + MAX_RETRY_WAIT


async def partition_leader(world, leader):
    world.network.partition({"lease-server": {leader}, leader: {"lease-server"}})


@pytest.mark.parametrize("seed", range(1, 21))
def test_partition_the_leader_it_stops_at_the_renew_deadline_then_another_takes_over(seed):
    world, cut_at, old = scenario(seed, partition_leader)
    stop = leader_events(world, "stop", after=cut_at)[0]
    assert stop["process"] == old
    # its last renewal was at most one retry period before the cut; the round after it
    # retries for the renew deadline (10 s), each attempt bounded by the call timeout
    assert stop["t"] - cut_at <= RETRY + CONFIG.renew_deadline_s + 1.0 + 0.1
    new = leader_events(world, "start", after=cut_at)[0]
    assert new["process"] != old
    assert new["t"] > stop["t"]  # the renew deadline (10 s) is shorter than the lease (15 s)
    assert new["t"] - cut_at <= FAILOVER_BOUND
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND, lease_server="lease-server")
    assert verdict.valid is True, verdict.reason


def pause_leader(seconds):
    async def fault(world, leader):
        world.process(leader).pause()
        await world.sleep(seconds)
        world.process(leader).resume()

    return fault


@pytest.mark.parametrize("seed", range(1, 11))
def test_pause_longer_than_the_lease_two_leaders_at_once_and_the_checker_measures_it(seed):
    world, paused_at, old = scenario(seed, pause_leader(20.0))
    new = leader_events(world, "start", after=paused_at)[0]
    assert new["process"] != old and new["t"] < paused_at + 20.0
    stop = next(e for e in leader_events(world, "stop", after=paused_at) if e["process"] == old)
    # On resume the old leader still believes it leads: like client-go it keeps retrying
    # (and acting) until its renew deadline passes, though it reads the new holder at once.
    assert stop["t"] > paused_at + 20.0
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is False
    overlap = verdict.details["overlaps"][0]
    assert set(overlap["processes"]) == {old, new["process"]}
    assert overlap["overlap_s"] == pytest.approx(stop["t"] - new["t"])
    assert 0 < overlap["active_overlap_s"] <= CONFIG.renew_deadline_s + RETRY + 0.1
    assert "both acted as leader" in verdict.reason
    assert verdict.evidence[0]["type"] == "leader"


def test_a_short_pause_is_absorbed():
    world, paused_at, old = scenario(3, pause_leader(5.0))
    assert not leader_events(world, "start", after=paused_at)
    assert check_leader_election(world.journal.events).valid is True


async def jump_leader_clock(world, leader):
    world.process(leader).jump_clock(60.0)


def test_forward_jump_of_the_leaders_clock_changes_nothing():
    """The leader judges nothing by its own clock while it holds the lease, and the others
    never read the renew times it writes (now 60 s ahead): only their change."""
    world, jumped_at, old = scenario(5, jump_leader_clock)
    assert not leader_events(world, "start", after=jumped_at)
    assert leader_events(world, "stop", after=jumped_at)[0]["t"] == pytest.approx(world.now)  # only at the end of the run
    assert check_leader_election(world.journal.events).valid is True


def follower_jump_during_a_short_partition(jump_s):
    async def fault(world, leader):
        world.network.partition({"lease-server": {leader}, leader: {"lease-server"}})
        # once every follower has polled the leader's last record (one jittered poll)...
        await world.sleep(MAX_RETRY_WAIT + 0.05)
        for name in CANDIDATES:
            if name != leader:
                world.process(name).jump_clock(jump_s)
        # ...heal before the leader's renew deadline (at least 10 s after the cut)
        await world.sleep(2.0)
        world.network.heal()

    return fault


def test_forward_jump_of_a_followers_clock_alone_is_absorbed():
    """A follower re-stamps its observation with its (jumped) clock at every change of the
    record; the leader renews every 2 s, so the jump is absorbed at its next poll."""
    async def fault(world, leader):
        for name in CANDIDATES:
            if name != leader:
                world.process(name).jump_clock(20.0)

    world, jumped_at, _ = scenario(2, fault)
    assert not leader_events(world, "start", after=jumped_at)


@pytest.mark.parametrize("seed", range(1, 6))
def test_forward_jump_of_a_followers_clock_makes_it_take_over_early(seed):
    """Without the jump, a 6.5 s partition of the leader is harmless (shorter than the renew
    deadline and the lease). With the followers' clocks 20 s ahead, a follower that sees
    the record unchanged across one poll judges the lease expired at once, takes it while
    the old leader still leads, and the checker measures the overlap."""
    calm, cut_at, _ = scenario(seed, follower_jump_during_a_short_partition(0.0))
    assert not leader_events(calm, "start", after=cut_at)
    assert check_leader_election(calm.journal.events).valid is True

    world, cut_at, old = scenario(seed, follower_jump_during_a_short_partition(20.0))
    new = leader_events(world, "start", after=cut_at)[0]
    assert new["process"] != old and new["t"] - cut_at < 2 * MAX_RETRY_WAIT + 0.1
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is False
    assert verdict.details["max_overlap_s"] > 0


def test_release_on_cancel_lets_the_next_candidate_in_within_one_poll():
    stopped = []

    async def leader_main(process):
        lock = FakeLeaseLock(process, "controller-manager")
        elector_ = LeaderElector(process, lock, CONFIG, release_on_cancel=True)
        with process.move_on_after(30):  # the owner cancels its election after 30 s
            await elector_.run()
        stopped.append(process.now())
        await trio.sleep_forever()

    async def main(world):
        world.spawn("lease-server", lease_server)
        world.spawn("a", leader_main)
        await world.sleep(1)
        for name in ("b", "c"):
            world.spawn(name, elector())
        await world.sleep(40)

    world = World(6)
    world.run(main)
    assert leader_events(world, "start")[0]["process"] == "a"
    release = leader_events(world, "release")
    assert [e["process"] for e in release] == ["a"]
    new = leader_events(world, "start", after=30.0)[0]
    assert new["process"] in ("b", "c")
    assert new["t"] - release[0]["t"] <= MAX_RETRY_WAIT + 0.1  # not a whole lease
    assert check_leader_election(world.journal.events).valid is True


def test_the_leader_runs_its_work_and_it_is_cancelled_when_leadership_ends():
    log = []

    async def work():
        log.append("started")
        try:
            await trio.sleep_forever()
        finally:
            log.append("cancelled")

    async def main(world):
        world.spawn("lease-server", lease_server)
        world.spawn("a", elector(work=work))
        await world.sleep(5)
        world.network.partition({"lease-server": {"a"}, "a": {"lease-server"}})
        await world.sleep(20)

    world = World(7)
    world.run(main)
    assert log[:2] == ["started", "cancelled"]
    intervals, _, _ = leader_intervals(world.journal.events)
    assert intervals[0].process == "a" and intervals[0].end < 5 + RETRY + CONFIG.renew_deadline_s + 1.1


def test_same_seed_same_journal():
    fingerprints = {scenario(9, kill)[0].fingerprint for _ in range(2)}
    assert len(fingerprints) == 1

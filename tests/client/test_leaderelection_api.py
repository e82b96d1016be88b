"""Leader election over the real API servers, under faults.

Three kube-controller-manager candidates (``kube-controller-manager-1..3``) each run
:class:`~chaoskube.client.leaderelection.LeaderElector` on an
:class:`~chaoskube.client.client.ApiLeaseLock` over the Lease ``kube-system/kube-controller-manager``,
through an :class:`~chaoskube.client.client.ApiClient` built as ``resourcelock.NewFromKubeconfig``
builds it (:func:`~chaoskube.client.client.leader_election_client`: 5 s request timeout) and
authenticated as ``system:kube-controller-manager`` (the x509 identity kubeadm gives it),
against two API server replicas over a 3-member etcd (:mod:`tests.apiserver.apiserver_harness`).

What each test shows, judged from the journal by
:func:`chaoskube.checkers.leader_election.check_leader_election`:

1. one leader is elected, and the Lease read back through the API names it, with client-go's
   ``leaseDurationSeconds`` (15) and ``leaseTransitions`` counting changes of holder;
2. kill the leader: another starts within ``FAILOVER_BOUND`` of the kill, no overlap;
3. cut the leader from both API servers: it stops acting at its renew deadline (10 s after
   the round that follows its last renewal), before anyone can take over (15 s lease);
4. pause the leader longer than the lease: two processes act as leader at once (client-go
   "does not guarantee that only one client is acting as a leader (a.k.a. fencing)",
   ``tools/leaderelection/leaderelection.go``), and the checker measures exactly that;
5. a follower's clock that jumps forward is absorbed while the leader renews (expiry is
   judged on the local time a *change* of the record was seen), but turns the safe failover
   of (3) into an overlap: the follower takes over while the old leader still acts;
6. kill the API server the leader talks to: the clients fail over, the leader keeps its
   lease, no overlap;
7. the same seed gives the same journal.

Like kube-controller-manager (``cmd/kube-controller-manager/app/controllermanager.go``:
``OnStoppedLeading`` logs "leaderelection lost" and exits; the kubelet restarts the static
pod), a candidate that loses leadership campaigns again: the loop stands for the restart,
without its delay.
"""

import pytest

from chaoskube.api.identity import KUBE_CONTROLLER_MANAGER_USER, user_credentials
from chaoskube.api.protocol import parse_timestamp
from chaoskube.checkers.leader_election import check_leader_election
from chaoskube.client.client import ApiLeaseLock, leader_election_client
from chaoskube.client.leaderelection import LeaderElectionConfig, LeaderElector
from chaoskube.faults import grudge as grudges
from tests.apiserver.apiserver_harness import run_api

CONFIG = LeaderElectionConfig()  # client-go defaults: lease 15 s, renew deadline 10 s, retry 2 s
LEASE = CONFIG.lease_duration_s
RENEW_DEADLINE = CONFIG.renew_deadline_s
RETRY = CONFIG.retry_period_s
MAX_RETRY_WAIT = RETRY * (1 + CONFIG.jitter_factor)  # wait.Jitter(2 s, 1.2): at most 4.4 s
# As in tests/client/test_leaderelection.py: a candidate first sees the leader's last renewal
# at most one jittered poll after it, then waits the lease of its own clock plus at most
# one more poll.
FAILOVER_BOUND = LEASE + 2 * MAX_RETRY_WAIT
ROUND_TRIP_S = 0.1  # generous: a request through an API server to etcd and back

API_SERVERS = ("kube-apiserver-1", "kube-apiserver-2")
CANDIDATES = tuple(f"kube-controller-manager-{index}" for index in (1, 2, 3))
LEASE_NAMESPACE, LEASE_NAME = "kube-system", "kube-controller-manager"
LOCK = f"{LEASE_NAMESPACE}/{LEASE_NAME}"  # LeaseLock.Describe(): the journal's "lease"


# -- the cluster --------------------------------------------------------------------------------
def candidate(clients):
    """A kube-controller-manager's leader election, with its own identity and client."""

    async def main(process):
        credentials = user_credentials(KUBE_CONTROLLER_MANAGER_USER)
        client = clients[process.name] = leader_election_client(process, API_SERVERS, credentials)
        lock = ApiLeaseLock(client, LEASE_NAMESPACE, LEASE_NAME)
        while True:  # lost leadership: kube-controller-manager exits and is restarted
            await LeaderElector(process, lock, CONFIG).run()

    return main


def leader_events(world, event=None, after=-1.0):
    return [
        e
        for e in world.journal.of_type("leader")
        if e["lease"] == LOCK and (event is None or e["event"] == event) and e["t"] > after
    ]


def lease_writes(world, process, phase, after=-1.0):
    """The Lease writes (create / update) of ``process``'s elector that ended in ``phase``."""
    return [
        e
        for e in world.journal.of_type("api-op")
        if e["resource"] == "leases"
        and e["client"] == f"{process}/leader-election"
        and e["phase"] == phase
        and e["t"] > after
    ]


def scenario(seed, fault=None, *, warmup_s=20.0, after_s=40.0):
    """Bootstrap the control plane, run the three candidates for ``warmup_s`` (plus a
    seed-dependent phase), apply ``fault(world, leader, facts)`` to the leader, run
    ``after_s`` more and read the Lease back through a live API server. Returns the world
    and the facts: ``leader``, ``t`` (fault time), ``t0`` (candidates' start), ``lease``,
    ``clients`` and whatever the fault recorded."""
    facts = {"clients": {}}

    async def story(world, api, registry):
        facts["t0"] = world.now
        for name in CANDIDATES:
            world.spawn(name, candidate(facts["clients"]), role="kube-controller-manager")
        await world.sleep(warmup_s + (seed % 10) * 0.173)  # vary the phase of the fault
        facts["leader"] = leader_events(world, "start")[-1]["process"]
        facts["t"] = world.now
        if fault is not None:
            await fault(world, facts["leader"], facts)
        await world.sleep(after_s)
        server = next(name for name in API_SERVERS if world.process(name).alive)
        response = await api("get", "leases", server=server, namespace=LEASE_NAMESPACE, name=LEASE_NAME)
        assert response.ok, response
        facts["lease"] = response.object
        facts["end"] = world.now

    world, _ = run_api(story, seed=seed, servers=len(API_SERVERS))
    return world, facts


# -- faults ---------------------------------------------------------------------------------------
async def kill(world, leader, facts):
    world.process(leader).kill()


def cut_from_api_servers(process):
    """Both ways between ``process`` and every API server; nothing else is cut."""
    grudge = grudges.one_way([process], API_SERVERS)
    grudge.update(grudges.one_way(API_SERVERS, [process]))
    return grudge


async def partition_leader(world, leader, facts):
    world.network.partition(cut_from_api_servers(leader))


def pause_leader(seconds):
    async def fault(world, leader, facts):
        world.process(leader).pause()
        await world.sleep(seconds)
        world.process(leader).resume()
        facts["resumed"] = world.now

    return fault


def jump_followers(jump_s):
    async def fault(world, leader, facts):
        for name in CANDIDATES:
            if name != leader:
                world.process(name).jump_clock(jump_s)

    return fault


def partition_leader_and_jump_followers(jump_s):
    """Cut the leader from the API servers; once every follower has polled its last record
    (one jittered poll), jump the followers' clocks; heal as soon as someone else leads."""

    async def fault(world, leader, facts):
        world.network.partition(cut_from_api_servers(leader))
        await world.sleep(MAX_RETRY_WAIT + 0.05)
        for name in CANDIDATES:
            if name != leader:
                world.process(name).jump_clock(jump_s)
        facts["jumped"] = world.now
        for _ in range(int(2 * LEASE / 0.1)):  # bounded: the failover of test 3 comes sooner
            if leader_events(world, "start", after=facts["t"]):
                break
            await world.sleep(0.1)
        world.network.heal()
        facts["healed"] = world.now

    return fault


async def kill_the_leaders_api_server_then_the_leader(world, leader, facts):
    """Kill the API server the leader's client talks to; 10 s later kill the leader."""
    server = facts["killed_server"] = facts["clients"][leader].server
    world.process(server).kill()
    await world.sleep(10.0)
    facts["leader_killed"] = world.now
    world.process(leader).kill()


def first_start_after(world, t):
    starts = leader_events(world, "start", after=t)
    assert starts, f"no leader started after t={t}"
    return starts[0]


def stop_of(world, process, after):
    return next(e for e in leader_events(world, "stop", after=after) if e["process"] == process)


def last_renewal_before(world, process, t):
    """The last Lease write of ``process`` that succeeded before ``t``."""
    return [e for e in lease_writes(world, process, "ok") if e["t"] <= t][-1]


# -- 1. one leader, and the Lease names it -------------------------------------------------------
def test_one_leader_is_elected_and_the_lease_read_through_the_api_names_it():
    world, facts = scenario(1)
    t0, leader, lease = facts["t0"], facts["leader"], facts["lease"]
    # (the world's shutdown at ``end`` cancels the electors: each leader journals a "stop")
    events = [(e["event"], e["process"]) for e in leader_events(world) if e["t"] < facts["end"] - 1e-6]
    assert sorted(events[:3]) == [("candidate", name) for name in CANDIDATES]
    assert events[3:] == [("start", leader)]  # one start, never a stop, in the whole run
    start = leader_events(world, "start")[0]
    assert start["t"] - t0 < ROUND_TRIP_S  # the Lease did not exist: created at once
    # All three found no Lease and tried to create it; the API server let one through
    # (storage: create is a txn on "key does not exist") and answered 409 AlreadyExists
    # to the others, which ApiLeaseLock reports as "not acquired".
    creates = [e for e in world.journal.of_type("api-op") if e["resource"] == "leases" and e["verb"] == "create" and e["phase"] != "invoke"]
    assert [(e["client"], e["code"]) for e in creates if e["phase"] == "ok"] == [(f"{leader}/leader-election", 201)]
    assert sorted((e["phase"], e["code"], e["reason"]) for e in creates if e["phase"] != "ok") == [("fail", 409, "AlreadyExists")] * 2
    # The Lease, read through the API as `kubectl get lease -n kube-system` would.
    assert (lease.metadata.namespace, lease.metadata.name) == (LEASE_NAMESPACE, LEASE_NAME)
    assert lease.spec.holder_identity == leader
    assert lease.spec.lease_duration_seconds == 15  # client-go: int(LeaseDuration / time.Second)
    assert lease.spec.lease_transitions == 0  # created by its first holder
    assert parse_timestamp(lease.spec.acquire_time) == pytest.approx(start["t"], abs=ROUND_TRIP_S)
    renewed = parse_timestamp(lease.spec.renew_time)
    assert facts["end"] - RETRY - ROUND_TRIP_S < renewed <= facts["end"]  # renewed every retry period
    verdict = check_leader_election(world.journal.events, max_gap_s=ROUND_TRIP_S)
    assert verdict.valid is True, verdict.reason
    assert len(verdict.details["intervals"]) == 1


def test_lease_transitions_count_each_change_of_holder():
    async def kill_twice(world, leader, facts):
        world.process(leader).kill()
        await world.sleep(FAILOVER_BOUND + 1.0)
        facts["second"] = second = leader_events(world, "start")[-1]["process"]
        world.process(second).kill()

    world, facts = scenario(2, kill_twice)
    starts = [e["process"] for e in leader_events(world, "start")]
    assert len(starts) == 3 and sorted(starts) == sorted(CANDIDATES)  # each led once
    assert starts[:2] == [facts["leader"], facts["second"]]
    assert facts["lease"].spec.holder_identity == starts[2]
    assert facts["lease"].spec.lease_transitions == 2
    assert check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND).valid is True


# -- 2. kill the leader ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_the_leader_another_starts_within_the_bound_and_never_two_at_once(seed):
    world, facts = scenario(seed, kill)
    killed_at, old = facts["t"], facts["leader"]
    new = first_start_after(world, killed_at)
    assert new["process"] != old
    failover = new["t"] - killed_at
    # Not before the lease could expire (the last renewal was at most one retry period
    # plus a round trip before the kill), and within the lease plus two jittered polls.
    assert LEASE - RETRY - ROUND_TRIP_S < failover <= FAILOVER_BOUND
    assert [e["process"] for e in leader_events(world, "start", after=killed_at)] == [new["process"]]
    assert facts["lease"].spec.holder_identity == new["process"]
    assert facts["lease"].spec.lease_transitions == 1
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["overlaps"] == [] and verdict.details["max_overlap_s"] == 0.0
    old_interval = next(i for i in verdict.details["intervals"] if i["process"] == old)
    assert old_interval["end"] == pytest.approx(killed_at, abs=1e-6)  # the checker ends a killed leader's acting at the kill


# -- 3. cut the leader from both API servers ---------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2])
def test_a_leader_cut_from_the_api_servers_stops_at_its_renew_deadline_before_another_starts(seed):
    world, facts = scenario(seed, partition_leader)
    cut_at, old = facts["t"], facts["leader"]
    last = last_renewal_before(world, old, cut_at)
    assert not lease_writes(world, old, "ok", after=cut_at)  # every answer to it is dropped
    stop = stop_of(world, old, after=cut_at)
    # client-go renew(): after a success, wait RetryPeriod, then retry until RenewDeadline
    # passes; every attempt times out (5 s each) or is cut by the deadline.
    assert stop["t"] - last["t"] == pytest.approx(RETRY + RENEW_DEADLINE, abs=1e-6)
    assert stop["t"] - cut_at <= RETRY + RENEW_DEADLINE + ROUND_TRIP_S
    new = first_start_after(world, cut_at)
    assert new["process"] != old
    assert new["t"] > stop["t"]  # the renew deadline (10 s) runs out before the lease (15 s)
    assert new["t"] - last["t"] >= LEASE  # the followers saw that renewal, then waited a lease
    assert new["t"] - cut_at <= FAILOVER_BOUND
    assert facts["lease"].spec.holder_identity == new["process"]
    assert facts["lease"].spec.lease_transitions == 1
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND)
    assert verdict.valid is True, verdict.reason


# -- 4. pause the leader longer than the lease -------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2])
def test_a_leader_paused_longer_than_the_lease_acts_alongside_its_successor(seed):
    pause_s = 25.0
    world, facts = scenario(seed, pause_leader(pause_s))
    paused_at, resumed_at, old = facts["t"], facts["resumed"], facts["leader"]
    assert resumed_at == pytest.approx(paused_at + pause_s)
    new = first_start_after(world, paused_at)
    assert new["process"] != old
    assert LEASE - RETRY - ROUND_TRIP_S < new["t"] - paused_at <= FAILOVER_BOUND < pause_s
    # On resume the old leader still believes it leads: its pending wait fires, it reads the
    # new holder (a "lost" decision: no write), and, as client-go's renew loop does, it keeps
    # retrying, and acting, until its renew deadline passes.
    stop = stop_of(world, old, after=paused_at)
    assert stop["t"] == pytest.approx(resumed_at + RENEW_DEADLINE, abs=ROUND_TRIP_S)
    assert not lease_writes(world, old, "invoke", after=paused_at)  # the Lease itself is safe
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND)
    assert verdict.valid is False
    assert "both acted as leader" in verdict.reason
    [overlap] = verdict.details["overlaps"]
    assert set(overlap["processes"]) == {old, new["process"]}
    assert (overlap["from"], overlap["to"]) == (new["t"], stop["t"])
    # The pause counts as acting (whatever it had in flight lands after it): the overlap is
    # from the successor's start to the old leader's stop ...
    assert overlap["overlap_s"] == pytest.approx(stop["t"] - new["t"])
    assert verdict.details["max_overlap_s"] == overlap["overlap_s"]
    # ... of which both were running from the resume to the stop: at most a renew deadline
    # plus a retry period.
    assert overlap["active_overlap_s"] == pytest.approx(stop["t"] - resumed_at)
    assert 0 < overlap["active_overlap_s"] <= RENEW_DEADLINE + RETRY
    assert verdict.details["gaps"] == []
    first, second = overlap["processes"]
    assert verdict.reason == (
        f"lease {LOCK}: {first} and {second} both acted as leader for {overlap['overlap_s']:.3f} s "
        f"from t={new['t']:.3f} ({overlap['active_overlap_s']:.3f} s while both were running)"
    )
    # evidence: both starts, then the old leader's stop that ended the overlap
    assert [(e["event"], e["process"]) for e in verdict.evidence] == [("start", old), ("start", new["process"]), ("stop", old)]
    assert facts["lease"].spec.holder_identity == new["process"]
    assert facts["lease"].spec.lease_transitions == 1


# -- 5. a follower's clock jumps forward --------------------------------------------------------------
@pytest.mark.parametrize("seed", [1, 2])
def test_a_followers_clock_jump_is_absorbed_while_the_leader_renews(seed):
    """A follower stamps its observation with its own clock whenever the record *changes*;
    the leader renews every 2 s and a follower polls every 2 to 4.4 s, so the first poll
    after the jump sees a new record and re-stamps it with the jumped clock. (It would take
    over only if two of its polls fell between two renewals: its jittered wait would have
    to be shorter than the leader's by the round trip of the update.)"""
    world, facts = scenario(seed, jump_followers(20.0))
    jumps = [e for e in world.journal.of_type("clock") if e["t"] == pytest.approx(facts["t"], abs=1e-6)]
    assert sorted(e["process"] for e in jumps) == sorted(set(CANDIDATES) - {facts["leader"]})
    assert not leader_events(world, "start", after=facts["t"])
    assert facts["lease"].spec.holder_identity == facts["leader"]
    assert facts["lease"].spec.lease_transitions == 0
    assert check_leader_election(world.journal.events).valid is True


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_followers_clock_jump_turns_a_safe_failover_into_an_overlap(seed):
    """The leader is cut from the API servers as in test 3. Without a jump the failover is
    safe (it stops at its renew deadline, 12 s after its last renewal; the followers wait a
    lease, 15 s). With the followers' clocks 20 s ahead, the record they stamped before the
    jump looks expired at their next poll: one takes over while the old leader still acts,
    and the checker measures the overlap."""
    calm, calm_facts = scenario(seed, partition_leader_and_jump_followers(0.0))
    calm_stop = stop_of(calm, calm_facts["leader"], after=calm_facts["t"])
    assert first_start_after(calm, calm_facts["t"])["t"] > calm_stop["t"]
    assert check_leader_election(calm.journal.events).valid is True

    world, facts = scenario(seed, partition_leader_and_jump_followers(20.0))
    cut_at, jumped_at, old = facts["t"], facts["jumped"], facts["leader"]
    new = first_start_after(world, cut_at)
    assert new["process"] != old
    assert jumped_at < new["t"] <= jumped_at + MAX_RETRY_WAIT + ROUND_TRIP_S  # its first poll after the jump
    stop = stop_of(world, old, after=cut_at)
    last = last_renewal_before(world, old, cut_at)
    assert stop["t"] - last["t"] == pytest.approx(RETRY + RENEW_DEADLINE, abs=1e-6)  # as without the jump
    assert stop["t"] == pytest.approx(calm_stop["t"])
    assert new["t"] < stop["t"]
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is False and "both acted as leader" in verdict.reason
    [overlap] = verdict.details["overlaps"]
    assert set(overlap["processes"]) == {old, new["process"]}
    assert overlap["overlap_s"] == pytest.approx(stop["t"] - new["t"])
    assert overlap["active_overlap_s"] == pytest.approx(overlap["overlap_s"])  # nobody paused
    assert 0 < overlap["overlap_s"] < RETRY + RENEW_DEADLINE - MAX_RETRY_WAIT
    assert facts["lease"].spec.holder_identity == new["process"]


# -- 6. kill one of the two API servers -----------------------------------------------------------------
def test_a_killed_api_server_the_clients_fail_over_and_election_goes_on():
    world, facts = scenario(3, kill_the_leaders_api_server_then_the_leader)
    killed_at, old, dead = facts["t"], facts["leader"], facts["killed_server"]
    survivor = next(name for name in API_SERVERS if name != dead)
    clients = facts["clients"]
    assert clients[old].statistics()["refused"] >= 1
    assert {name: client.server for name, client in clients.items()} == dict.fromkeys(CANDIDATES, survivor)
    # The leader kept its lease through the other server: a refused request is retried at
    # once on the next server, so it renewed every retry period as before.
    leader_killed_at = facts["leader_killed"]
    renewals = [e for e in lease_writes(world, old, "ok", after=killed_at) if e["t"] < leader_killed_at]
    assert len(renewals) >= int((leader_killed_at - killed_at) / (RETRY + ROUND_TRIP_S))
    assert {e["server"] for e in renewals} == {survivor}
    assert not lease_writes(world, old, "fail") and not lease_writes(world, old, "info")
    assert not [e for e in leader_events(world, after=killed_at) if e["t"] < leader_killed_at]
    # Then the leader dies: the election goes on through the surviving server.
    new = first_start_after(world, leader_killed_at)
    assert new["process"] != old
    assert LEASE - RETRY - ROUND_TRIP_S < new["t"] - leader_killed_at <= FAILOVER_BOUND
    assert {e["server"] for e in lease_writes(world, new["process"], "ok", after=leader_killed_at)} == {survivor}
    assert facts["lease"].spec.holder_identity == new["process"]
    assert facts["lease"].spec.lease_transitions == 1
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND)
    assert verdict.valid is True, verdict.reason


# -- 7. one seed, one run -------------------------------------------------------------------------------
def test_the_same_seed_gives_the_same_journal():
    first, again, other = (scenario(seed, kill)[0].fingerprint for seed in (4, 4, 5))
    assert first == again
    assert first != other

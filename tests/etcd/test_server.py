"""The simulated etcd cluster, scenario by scenario: each test a short story."""

import pytest
import trio

from chaoskube.checkers.raft_safety import check_raft_safety
from chaoskube.checkers.watch import check_watches
from chaoskube.etcd.client import EtcdClient, Watcher
from chaoskube.etcd.requests import Compare, CompactionRequest, LeaseGrantRequest, PutRequest, RangeRequest, TxnRequest, prefix_range_end, request_bytes
from chaoskube.etcd.server import CLIENT_PORT, WATCH_PORT, ClientRequest, EtcdConfig, KeepAlive, Proposal, WatchCreate, WatchProgress, current_leader, entry_bytes, spawn_cluster
from chaoskube.faults import isolate
from chaoskube.sim import Ok, World


async def idle(process):
    await trio.sleep_forever()


def run_cluster(story, seed=1, config=None):
    config = config or EtcdConfig()
    world = World(seed)

    async def main(world):
        registry = spawn_cluster(world, config)
        client_process = world.spawn("client", idle)
        client = EtcdClient(client_process, config.names)
        return await story(world, registry, client, config)

    return world, world.run(main)


async def wait_leader(world, registry, within_s=5.0):
    deadline = world.now + within_s
    while world.now < deadline:
        leader = current_leader(world, registry)
        if leader is not None:
            return leader
        await world.sleep(0.05)
    return None


def test_elects_a_leader_within_two_election_timeouts_and_serves():
    async def story(world, registry, client, config):
        leader = await wait_leader(world, registry)
        elected_at = world.now
        assert await client.write("k", 1) == "ok"
        assert await client.read("k") == 1
        assert await client.cas("k", 1, 2) == "ok"
        assert await client.cas("k", 1, 3) == "fail"  # compare failed: a definite observation
        return leader, elected_at, await client.read("k")

    world, (leader, elected_at, value) = run_cluster(story)
    assert leader is not None and elected_at <= 2.0
    assert value == 2
    assert check_raft_safety(world.journal.events).valid is True


def test_leader_kill_elects_a_new_leader_and_keeps_acknowledged_writes():
    async def story(world, registry, client, config):
        old = await wait_leader(world, registry)
        for value in range(10):
            assert await client.write("k", value) == "ok"
        world.process(old).kill()
        killed_at = world.now
        new = None
        while new is None or new == old:
            await world.sleep(0.05)
            new = current_leader(world, registry)
        gap = world.now - killed_at
        value = await client.read("k")
        first = registry[old]
        world.process(old).restart()
        await world.sleep(3)
        second = registry[old]
        # statistics() is the incarnation's: the disk's fsync count runs on across the restart
        assert second is not first and first.statistics()["fsyncs"] > 0 and second.statistics()["fsyncs"] > 0
        assert first.statistics()["fsyncs"] + second.statistics()["fsyncs"] == world.process(old).disk.fsyncs
        return old, new, gap, value

    world, (old, new, gap, value) = run_cluster(story)
    assert new != old
    # one election timeout (1 s) plus the randomized part (< 1 s) plus a pre-vote round
    assert gap < 2.5
    assert value == 9
    applied = {}
    for event in world.journal.of_type("raft-apply"):
        applied.setdefault(event["member"], set()).add(event["index"])
    assert applied[old] == applied[new]  # the restarted member caught up
    assert check_raft_safety(world.journal.events).valid is True


def test_isolated_leader_serves_no_linearizable_reads_but_serializable_ones():
    async def story(world, registry, client, config):
        leader = await wait_leader(world, registry)
        assert await client.write("k", 1) == "ok"
        world.network.partition(isolate(leader, config.names))
        process = world.process("client")
        linearizable = await process.call(leader, ClientRequest("r1", RangeRequest("k")), port=CLIENT_PORT, timeout_s=10)
        serializable = await process.call(leader, ClientRequest("r2", RangeRequest("k", serializable=True)), port=CLIENT_PORT, timeout_s=10)
        return linearizable, serializable

    _, (linearizable, serializable) = run_cluster(story)
    assert isinstance(linearizable, Ok) and not linearizable.value.ok
    assert isinstance(serializable, Ok) and serializable.value.ok
    assert serializable.value.response.kvs[0].value == "1"


def test_lagging_follower_catches_up_from_a_snapshot():
    config = EtcdConfig(snapshot_count=20)

    async def story(world, registry, client, config):
        leader = await wait_leader(world, registry)
        follower = next(name for name in config.names if name != leader)
        world.network.partition(isolate(follower, config.names))
        for value in range(60):
            assert await client.write(f"k{value % 5}", value) == "ok"
        world.network.heal()
        await world.sleep(5)
        return follower, registry[follower].store.revision, registry[leader].store.revision

    world, (follower, follower_revision, leader_revision) = run_cluster(story, config=config)
    restores = [e for e in world.journal.of_type("etcd-snapshot") if e["member"] == follower and e["event"] == "restore"]
    assert restores, "the follower should have been sent a snapshot"
    assert follower_revision == leader_revision
    assert check_raft_safety(world.journal.events).valid is True


def test_restart_from_disk_keeps_state_and_snapshots():
    config = EtcdConfig(snapshot_count=10)

    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        for value in range(30):
            assert await client.write("k", value) == "ok"
        for name in config.names:
            world.process(name).kill()
        for name in config.names:
            world.process(name).restart()
        await wait_leader(world, registry)
        return await client.read("k")

    world, value = run_cluster(story, config=config)
    assert value == 29
    assert check_raft_safety(world.journal.events).valid is True


def test_lease_expiry_deletes_attached_keys_and_keep_alive_prevents_it():
    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        granted = await client.request(LeaseGrantRequest(id=0, ttl=5), idempotent=False)
        lease = granted.reply.response.id
        assert (await client.request(PutRequest("held", "x", lease=lease), idempotent=False)).ok
        for _ in range(4):  # keep it alive for 8 s
            await world.sleep(2)
            alive = await client.request(KeepAlive(lease), idempotent=True)
            assert alive.ok, alive
        present_after_keepalive = await client.request(RangeRequest("held"), idempotent=True)
        await world.sleep(7)  # no more keep-alives: it expires after its TTL
        gone = await client.request(RangeRequest("held"), idempotent=True)
        return present_after_keepalive.reply.response.count, gone.reply.response.count

    _, (before, after) = run_cluster(story)
    assert (before, after) == (1, 0)


def test_watch_from_revision_one_is_complete_and_compacted_revisions_are_refused():
    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        async def watch(process):
            await Watcher(process, config.names, "key/", prefix_range_end("key/"), name="watcher-1").run()

        world.spawn("watcher-1", watch)
        for value in range(20):
            assert await client.write(f"key/{value % 3}", value) == "ok"
        leader = current_leader(world, registry)
        world.process(leader).kill()  # the watcher's stream may break: it resumes elsewhere
        while current_leader(world, registry) in (None, leader):
            await world.sleep(0.1)
        for value in range(20, 30):
            assert await client.write(f"key/{value % 3}", value) == "ok"
        await world.sleep(3)
        compacted = await client.request(CompactionRequest(5), idempotent=False)
        assert compacted.ok
        refusal = await world.process("client").call(current_leader(world, registry), WatchCreate("late", "key/", prefix_range_end("key/"), 2), port=WATCH_PORT, timeout_s=2)
        return refusal

    world, refusal = run_cluster(story)
    verdict = check_watches(world.journal.events, {"watcher-1": "key/"})
    assert verdict.valid is True, verdict.reason
    received = world.journal.of_type("watch-event")
    assert len(received) == 30
    assert isinstance(refusal, Ok) and refusal.value["created"] is False and "compacted" in refusal.value["error"]


def test_a_require_leader_watch_dies_on_a_member_without_a_leader():
    """clientv3's WithRequireLeader (kube-apiserver's watches): a member cut off from the
    quorum answers its streams "not alive" once it has had no leader for three election
    timeouts (etcd's ``monitorLeader``); a plain stream stays alive."""
    async def story(world, registry, client, config):
        leader = await wait_leader(world, registry)
        follower = next(name for name in config.names if name != leader)
        process = world.process("client")
        for watch_id, require in (("plain", False), ("strict", True)):
            created = await process.call(follower, WatchCreate(watch_id, "k", None, 1, require_leader=require), port=WATCH_PORT, timeout_s=2)
            assert created.value["created"]
        world.network.partition(isolate(follower, config.names))
        answers = []
        for wait_s in (1.0, 4.0):
            await world.sleep(wait_s)
            answers.append({w: (await process.call(follower, WatchProgress(w), port=WATCH_PORT, timeout_s=2)).value["alive"] for w in ("plain", "strict")})
        return answers

    _, (soon, later) = run_cluster(story)
    assert soon == {"plain": True, "strict": True}
    assert later == {"plain": True, "strict": False}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_seed_same_journal(seed):
    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        for value in range(20):
            await client.write("k", value)
        world.process(current_leader(world, registry)).kill()
        await world.sleep(3)
        return await client.read("k")

    first, _ = run_cluster(story, seed=seed)
    second, _ = run_cluster(story, seed=seed)
    assert first.fingerprint == second.fingerprint


def _first_campaign_after_restart(config, restarted, seed):
    """Boot, elect, kill every member, restart ``restarted`` (indexes into the names) at one
    instant; seconds from the restart to the first member's pre-vote campaign (None: none
    within 8 s)."""

    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        for name in config.names:
            world.process(name).kill()
        await world.sleep(1)
        restarted_at = world.now
        for index in restarted:
            world.process(config.names[index]).restart()
        await world.sleep(8)
        return restarted_at

    world, restarted_at = run_cluster(story, seed=seed, config=config)
    campaigns = [e["t"] for e in world.journal.of_type("raft-role") if e["t"] >= restarted_at and e["role"] == "pre_candidate"]
    return campaigns[0] - restarted_at if campaigns else None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_restarted_member_fast_forwards_its_election_ticks_once_more_than_one_peer_answers(seed):
    """etcd's ``adjustTicks`` (server/etcdserver/server.go, ``--initial-election-tick-advance``
    on by default): a member restarted in a 3-member cluster whose two peers answer its
    stream dials advances ElectionTicks - 2 ticks, so it campaigns within 0.2-1.1 s, before
    a whole election timeout (1 s: 10 ticks) has passed; raft.go's ``tickElection`` alone
    would wait at least ``electionTimeout`` ticks (``pastElectionTimeout``)."""
    first = _first_campaign_after_restart(EtcdConfig(), restarted=(0, 1, 2), seed=seed)
    assert first is not None and 0.15 <= first < 0.95, first


@pytest.mark.parametrize("seed", [1, 2])
def test_without_two_active_peers_or_with_the_advance_off_a_restarted_member_waits_a_whole_timeout(seed):
    """``peerN > 1`` is required (a lone restarted member, or one with a single peer up,
    advances nothing: it gives up after 5 s), and ``--initial-election-tick-advance=false``
    turns it off: the first campaign then comes after the randomized election timeout,
    10-19 ticks."""
    for config, restarted in ((EtcdConfig(), (0,)), (EtcdConfig(), (0, 1)), (EtcdConfig(initial_election_tick_advance=False), (0, 1, 2))):
        first = _first_campaign_after_restart(config, restarted=restarted, seed=seed)
        assert first is not None and 0.95 <= first < 2.0, (config.initial_election_tick_advance, restarted, first)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_restarted_single_member_advances_all_but_one_tick(seed):
    """``clusterN == 1``: ElectionTicks - 1 ticks at once, whatever the flag, so the lone
    member leads again within 1-10 ticks of its restart instead of 10-19."""
    config = EtcdConfig(members=1, initial_election_tick_advance=False)

    async def story(world, registry, client, config):
        await wait_leader(world, registry)
        world.process(config.names[0]).kill()
        await world.sleep(1)
        restarted_at = world.now
        world.process(config.names[0]).restart()
        await world.sleep(3)
        return restarted_at

    world, restarted_at = run_cluster(story, seed=seed, config=config)
    elected = [e["t"] - restarted_at for e in world.journal.of_type("raft-role") if e["t"] >= restarted_at and e["role"] == "leader"]
    assert elected and elected[0] < 0.95, elected


def test_a_large_value_weighs_its_size_in_requests_and_in_raft_entries():
    """``PutRequest.value_size``: a large value carried by a short text weighs its size
    where requests and Raft appends are sized (``--max-request-bytes``, ``MaxSizePerMsg``);
    a new leader's empty entry weighs nothing."""
    small, large = PutRequest("k", "17"), PutRequest("k", "17", value_size=1_100_000)
    assert (request_bytes(small), request_bytes(large)) == (3, 1_100_001)
    cas = TxnRequest(compare=(Compare("k", "VALUE", "=", "16"),), success=(large,))
    assert request_bytes(cas) == 3 + 1_100_001
    assert entry_bytes(None) == 0
    assert entry_bytes(Proposal("client-1/1/9", large)) == len("client-1/1/9") + 1_100_001

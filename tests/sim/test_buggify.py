"""BUGGIFY (chaoskube/sim/buggify.py): the pure core, a scenario in which the etcd points
fire, and whole runs -- deterministic with BUGGIFY on, byte-identical with it off."""

from __future__ import annotations

import msgspec
import orjson
import pytest
import trio

from chaoskube.checkers.raft_safety import check_raft_safety
from chaoskube.etcd.client import EtcdClient
from chaoskube.etcd.server import EtcdConfig, current_leader, spawn_cluster
from chaoskube.experiments import registry
from chaoskube.experiments.model import with_buggify
from chaoskube.experiments.runner import run_experiment
from chaoskube.sim import BUGGIFY_POINTS, Buggify, BuggifySpec, RandomTree, World
from chaoskube.sim.buggify import MAX_DELAY_S, MAX_LIFETIME_S, maybe_sleep


class FakeWorld:
    """What Buggify.start needs of a World: the random tree and the journal."""

    def __init__(self, seed: int) -> None:
        self.random = RandomTree(seed)
        self.records: list[dict] = []

    def record(self, type, **fields):  # noqa: A002
        self.records.append({"type": type, **fields})


class FakeProcess:
    def __init__(self, name: str, world) -> None:
        self.name = name
        self.world = world
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def started(seed: int, spec: BuggifySpec = BuggifySpec()) -> tuple[FakeWorld, Buggify]:
    world = FakeWorld(seed)
    buggify = Buggify()
    buggify.start(world, spec)
    return world, buggify


def firings(buggify: Buggify, times: int = 200) -> list[tuple[str, float]]:
    process = FakeProcess("p", None)
    return [(point, buggify.delay_s(point, process)) for _ in range(times) for point in sorted(BUGGIFY_POINTS)]


# -- the pure core ------------------------------------------------------------------------


def test_same_seed_same_live_points_same_firings_same_delays():
    first_world, first = started(7)
    second_world, second = started(7)
    assert first.live == second.live
    assert firings(first) == firings(second)
    assert first_world.records == second_world.records


def test_seeds_choose_different_points():
    lives = {started(seed)[1].live for seed in range(1, 30)}
    assert len(lives) > 5  # 2**8 subsets; 29 seeds pick many of them
    sizes = [len(live) for live in lives]
    assert min(sizes) < max(sizes)


def test_live_probability_and_fire_probability_are_what_they_say():
    # every point live, firing a quarter of the time (FoundationDB's P_BUGGIFIED_SECTION_FIRES)
    _, buggify = started(3, BuggifySpec(live_probability=1.0, fire_probability=0.25))
    assert buggify.live == frozenset(BUGGIFY_POINTS)
    fired = [delay for _, delay in firings(buggify, 400) if delay]
    share = len(fired) / (400 * len(BUGGIFY_POINTS))
    assert 0.2 < share < 0.3, share
    assert started(3, BuggifySpec(live_probability=0.0))[1].live == frozenset()
    _, never = started(3, BuggifySpec(live_probability=1.0, fire_probability=0.0))
    assert not any(delay for _, delay in firings(never))


def test_delays_stay_within_each_points_bounds_and_the_global_bound():
    _, buggify = started(5, BuggifySpec(live_probability=1.0, fire_probability=1.0))
    for point, delay in firings(buggify, 100):
        bounds = BUGGIFY_POINTS[point]
        assert bounds.min_s <= delay <= bounds.max_s <= (MAX_LIFETIME_S if bounds.ends else MAX_DELAY_S), (point, delay)


def test_start_journals_the_choice_once_and_every_firing_with_its_point():
    world, buggify = started(11, BuggifySpec(live_probability=1.0, fire_probability=0.5))
    start, = [r for r in world.records if r["event"] == "start"]
    assert start["live"] == sorted(BUGGIFY_POINTS) and start["points"] == sorted(BUGGIFY_POINTS)
    assert (start["live_probability"], start["fire_probability"]) == (1.0, 0.5)
    process = FakeProcess("etcd-1", None)
    delays = [buggify.delay_s("etcd.commit-apply", process) for _ in range(50)]
    fires = [r for r in world.records if r["event"] == "fire"]
    assert [r["delay_s"] for r in fires] == [d for d in delays if d]
    assert all(r["point"] == "etcd.commit-apply" and r["process"] == "etcd-1" for r in fires)
    assert buggify.statistics()["fired"]["etcd.commit-apply"] == len(fires)


def test_the_allow_list_keeps_only_its_points_and_shifts_no_draw():
    _, everything = started(13, BuggifySpec(live_probability=0.5))
    allowed = ["etcd.commit-apply", "informer.watch-event", "scheduler.bind"]
    _, some = started(13, BuggifySpec(live_probability=0.5, points=allowed))
    assert some.live == everything.live & set(allowed)


def test_off_costs_no_draw_no_record_no_sleep():
    world = FakeWorld(1)
    world.buggify = Buggify()
    process = FakeProcess("p", world)
    trio.run(maybe_sleep, process, "informer.watch-event")
    assert process.slept == [] and world.records == []
    assert not any(name.startswith("buggify") for name in world.random._generators)


def test_nothing_live_stays_off_after_the_start_record():
    world, buggify = started(1, BuggifySpec(live_probability=0.0))
    assert not buggify.enabled
    assert [r["event"] for r in world.records] == ["start"]


def test_a_live_point_sleeps_on_the_process_clock():
    world, buggify = started(2, BuggifySpec(live_probability=1.0, fire_probability=1.0))
    world.buggify = buggify
    process = FakeProcess("kubelet", world)
    trio.run(maybe_sleep, process, "kubelet.status-update")
    assert len(process.slept) == 1 and process.slept[0] == world.records[-1]["delay_s"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"live_probability": -0.1}, "`live_probability` is a probability between 0 and 1"),
        ({"fire_probability": float("nan")}, "`fire_probability` is a probability between 0 and 1"),
        ({"points": ["informer.watch-events"]}, "unknown buggify point 'informer.watch-events'; known: apiserver.etcd-watch-end, apiserver.watch-end, controller.status-write"),
        ({"points": []}, "`points` lists no point"),
    ],
)
def test_a_bad_spec_is_one_line(fields, message):
    with pytest.raises(msgspec.ValidationError) as raised:
        msgspec.convert(fields, type=BuggifySpec)
    assert message in str(raised.value) and "\n" not in str(raised.value)


# -- a scenario: the etcd points fire, and etcd stays correct ----------------------------------


def test_etcd_points_fire_are_journaled_and_raft_stays_safe():
    """Every etcd point live and firing: sends and applies are late, entries queue behind
    held ones, reads wait for their index to be applied -- and every write is acknowledged,
    every read sees the last write, and Raft's safety properties hold."""
    world = World(4)
    config = EtcdConfig()

    async def main(world):
        world.buggify.start(world, BuggifySpec(live_probability=1.0, fire_probability=0.5, points=["etcd.commit-apply", "etcd.persist-send", "etcd.raft-reorder"]))
        registry = spawn_cluster(world, config)
        client = EtcdClient(world.spawn("client", lambda process: trio.sleep_forever()), config.names)
        while current_leader(world, registry) is None:
            await world.sleep(0.05)
        seen = []
        for value in range(30):
            assert await client.write("k", value) == "ok"
            seen.append(await client.read("k"))
        leader = current_leader(world, registry)
        world.process(leader).kill()  # entries held by BUGGIFY are lost with the memory, re-applied from the log
        await world.sleep(3)
        world.process(leader).restart()
        assert await client.write("k", 99) == "ok"
        await world.sleep(3)
        return seen, {name: member.applied_index for name, member in registry.items()}

    seen, applied = world.run(main)
    assert seen == list(range(30))
    fires = [e for e in world.journal.events if e["type"] == "buggify" and e["event"] == "fire"]
    assert {e["point"] for e in fires} == {"etcd.commit-apply", "etcd.persist-send", "etcd.raft-reorder"}
    assert {e["process"] for e in fires} <= set(config.names)
    assert len(set(applied.values())) == 1, applied  # every member applied everything in the end
    assert check_raft_safety(world.journal.events).valid is True
    for name in config.names:  # each member applies in index order, with no gap, per incarnation
        indexes = [e["index"] for e in world.journal.events if e["type"] == "raft-apply" and e["member"] == name]
        restarts = [i for i in range(1, len(indexes)) if indexes[i] <= indexes[i - 1]]
        for start, end in zip([0, *restarts], [*restarts, len(indexes)]):
            run = indexes[start:end]
            assert run == list(range(run[0], run[0] + len(run))), (name, run)


def test_held_applies_and_snapshots_a_lagging_member_catches_up_by_snapshot():
    """Applies always held (fire probability 1), snapshots every 10 entries: the leader
    compacts while a follower is down, the follower catches up from a snapshot, and every
    member ends with the same applied index and store."""
    world = World(9)
    config = EtcdConfig(snapshot_count=10)

    async def main(world):
        world.buggify.start(world, BuggifySpec(live_probability=1.0, fire_probability=1.0, points=["etcd.commit-apply", "etcd.raft-reorder"]))
        registry = spawn_cluster(world, config)
        client = EtcdClient(world.spawn("client", lambda process: trio.sleep_forever()), config.names)
        while (leader := current_leader(world, registry)) is None:
            await world.sleep(0.05)
        follower = next(name for name in config.names if name != leader)
        world.process(follower).kill()
        for value in range(40):
            assert await client.write(f"k{value % 7}", value) == "ok"
        world.process(follower).restart()
        await world.sleep(5)
        assert await client.write("last", 1) == "ok"
        await world.sleep(2)
        return follower, {name: (member.applied_index, member.store.revision) for name, member in registry.items()}

    follower, state = world.run(main)
    assert len(set(state.values())) == 1, state
    restores = [e for e in world.journal.events if e["type"] == "etcd-snapshot" and e["event"] == "restore" and e["member"] == follower]
    assert restores, "the follower caught up from a snapshot"
    assert check_raft_safety(world.journal.events).valid is True


# -- whole runs ---------------------------------------------------------------------------------


def run(tmp_path, name, experiment, seed=1):
    result = run_experiment(experiment, seed, tmp_path / name)
    summary = {checker: (verdict.label, verdict.reason) for checker, verdict in result.verdicts.items()}
    assert result.as_expected, f"{name}: {summary}"
    return result


def test_a_buggified_run_is_deterministic_and_journals_its_points(tmp_path):
    experiment = with_buggify(registry.find("etcd-failover-under-kubernetes"), True)
    experiment = msgspec.structs.replace(experiment, buggify=msgspec.structs.replace(experiment.buggify, live_probability=1.0))
    first, second = run(tmp_path, "a", experiment), run(tmp_path, "b", experiment)
    assert first.journal_sha256 == second.journal_sha256
    events = [orjson.loads(line) for line in (tmp_path / "a" / "journal.jsonl").read_bytes().splitlines()]
    buggify = [e for e in events if e["type"] == "buggify"]
    assert buggify[0]["event"] == "start" and buggify[0]["live"] == sorted(BUGGIFY_POINTS)
    fired = {e["point"] for e in buggify[1:]}
    assert {"etcd.commit-apply", "etcd.persist-send", "informer.watch-event"} <= fired, fired
    reseed = next(i for i, e in enumerate(events) if e["type"] == "world" and e.get("event") == "reseed")
    assert events.index(buggify[0]) == reseed + 1  # started at the switch to the run seed: the boot is never buggified
    assert "--buggify" in first.replay


def test_buggify_off_leaves_the_journal_byte_identical(tmp_path):
    experiment = registry.find("etcd-failover-under-kubernetes")
    assert experiment.buggify is None
    plain = run(tmp_path, "plain", experiment)
    off = run(tmp_path, "off", with_buggify(experiment, False))
    assert off.journal_sha256 == plain.journal_sha256
    assert b'"buggify"' not in (tmp_path / "off" / "journal.jsonl").read_bytes()


def test_the_flags_switch_buggify_keep_the_experiments_settings_and_reach_the_replay(tmp_path):
    from chaoskube.experiments.campaign import plan_jobs

    nemesis = registry.find("random-nemesis")
    assert nemesis.buggify is not None and nemesis.buggify.enabled  # on by default there
    off = with_buggify(nemesis, False)
    assert not off.buggify.enabled and off.buggify.live_probability == nemesis.buggify.live_probability
    plain = registry.find("etcd-leader-kill")
    assert with_buggify(plain, True).buggify == BuggifySpec()  # FoundationDB's defaults
    for flag, expected in ((True, "--buggify"), (False, "--no-buggify")):
        job, = plan_jobs([("etcd-leader-kill", plain)], [3], tmp_path, buggify=flag)
        assert job.replay.endswith(expected) and job.experiment().buggify.enabled is flag
    job, = plan_jobs([("etcd-leader-kill", plain)], [3], tmp_path)
    assert "buggify" not in job.replay and job.experiment().buggify is None

"""The random nemesis: deterministic per seed, mixes kinds, swizzle clogs then unclogs."""

import random

import pytest

from chaoskube.faults import FaultError, FaultInjector
from chaoskube.faults.nemesis import NEMESIS_KINDS, NemesisSpec, generate, swizzle

KINDS = sorted(NEMESIS_KINDS)
NODES = ["node-1", "node-2", "node-3", "node-4"]


def schedule(seed, **options):
    options = {"kinds": KINDS, "count": 12, "window_s": 60.0, "nodes": NODES, **options}
    return generate(random.Random(seed), **options)


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert schedule(7) == schedule(7)
    assert schedule(7) != schedule(8)


def test_mixes_kinds_and_heals_within_the_window():
    entries = schedule(3, count=len(KINDS) + 2)  # every kind at least once
    assert len({(entry.kind, entry.target) for entry in entries}) >= 5
    assert {entry.kind for entry in entries} >= {"kill", "pause", "clock-jump", "link-loss", "control-plane-partition", "node-failure",
                                                 "kubelet-stop", "drain", "webhook-error", "webhook-delay"}
    assert ("kill", "random:webhook") in {(entry.kind, entry.target) for entry in entries}  # webhook-unavailable
    assert all(entry.duration_s is not None and entry.at_s + entry.duration_s <= 60.0 + 1e-6 for entry in entries)
    assert [entry.at_s for entry in entries] == sorted(entry.at_s for entry in entries)


def test_bad_options_are_refused():
    with pytest.raises(FaultError, match="unknown nemesis kind"):
        schedule(1, kinds=["meteor"])
    with pytest.raises(FaultError, match="needs nodes"):
        schedule(1, nodes=[])
    with pytest.raises(FaultError, match="durations"):
        schedule(1, max_duration_s=90.0)


@pytest.mark.parametrize("seed", range(10))
def test_swizzle_clogs_one_by_one_then_unclogs_in_another_order(seed):
    entries = swizzle(random.Random(seed), NODES, start_s=5.0, window_s=40.0)
    clogs = sorted(entries, key=lambda entry: entry.at_s)
    unclogs = sorted(entries, key=lambda entry: entry.at_s + entry.duration_s)
    assert 1 <= len(entries) <= len(NODES) and len({entry.target for entry in entries}) == len(entries)
    assert all(entry.kind == "link-loss" and entry.params == {"loss": 1.0} for entry in entries)
    assert max(entry.at_s for entry in entries) < min(entry.at_s + entry.duration_s for entry in entries)  # all clogged at once
    assert max(entry.at_s + entry.duration_s for entry in entries) <= 40.0 + 1e-6
    assert len({entry.at_s for entry in entries}) == len(entries)  # one by one


def test_swizzle_unclog_order_is_random():
    orders = set()
    for seed in range(20):
        entries = swizzle(random.Random(seed), NODES, start_s=0.0, window_s=60.0)
        if len(entries) == len(NODES):
            clog = [e.target for e in sorted(entries, key=lambda e: e.at_s)]
            unclog = [e.target for e in sorted(entries, key=lambda e: e.at_s + e.duration_s)]
            orders.add(clog == unclog)
    assert False in orders  # some seed unclogs in an order other than the clog order


def test_swizzle_in_a_world_clogs_then_unclogs_every_link():
    from chaoskube.faults import Context, ProcessInfo
    from chaoskube.sim import World

    seen = {}

    async def idle(process):
        await process.sleep(1e6)

    async def main(world):
        for name in NODES:
            world.spawn(name, idle, role="node")
        entries = swizzle(random.Random(5), NODES, start_s=1.0, window_s=30.0)
        injector = FaultInjector(world, lambda: Context([ProcessInfo(p.name, p.role, p.zone) for p in world.processes.values()], lambda role: None))
        injector.schedule(entries, origin_s=world.now)
        peak = max(entry.at_s for entry in entries) + 0.01
        await world.sleep(peak)
        seen["clogged"] = sorted(name for name in NODES if world.network.link(name, "x").loss == 1.0)
        seen["expected"] = sorted(entry.target.removeprefix("name:") for entry in entries)
        await world.sleep(31.0 - peak)
        seen["after"] = sorted(name for name in NODES if world.network.link(name, "x").loss == 1.0)
        seen["links"] = {key: value for key, value in world.network._links.items() if value is not None}

    World(1).run(main)
    assert seen["clogged"] == seen["expected"] and seen["clogged"]
    assert seen["after"] == [] and seen["links"] == {}


def test_nemesis_spec_checks_itself_and_shifts_its_schedule_by_after_s():
    import msgspec

    spec = msgspec.convert({"kinds": ["kubelet-stop", "drain-node", "swizzle"], "count": 5, "after_s": 10.0, "window_s": 40.0}, NemesisSpec)
    entries = spec.schedule(random.Random(4), NODES)
    plain = generate(random.Random(4), kinds=spec.kinds, count=5, window_s=40.0, nodes=NODES)
    assert [round(e.at_s - 10.0, 6) for e in entries] == [e.at_s for e in plain]
    assert all(10.0 <= e.at_s and e.at_s + e.duration_s <= spec.ends_at_s() + 1e-6 for e in entries)
    assert spec.random_name == "nemesis/0" and spec.schedule(random.Random(4), NODES) == entries
    for fields, message in (
        ({"kinds": ["meteor"]}, "unknown nemesis kind 'meteor'"),
        ({"kinds": ["kill-apiserver"], "window_s": 0}, "`after_s` and `window_s` must be finite"),
        ({"kinds": ["kill-apiserver"], "count": 500}, "the nemesis `count` must be between 0 and 200, got 500"),
        ({"kinds": ["kill-apiserver"], "max_duration_s": 90.0}, "nemesis durations must satisfy"),
        ({"kinds": ["kill-apiserver"], "surprise": 1}, "unknown field"),
    ):
        with pytest.raises(msgspec.ValidationError, match=message):
            msgspec.convert(fields, NemesisSpec)

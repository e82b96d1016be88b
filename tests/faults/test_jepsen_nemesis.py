"""Jepsen's nemesis packages (issue 16): the partition specs as grudges, with Jepsen's own
test cases transcribed (jepsen-io/jepsen c4c7473d: jepsen/test/jepsen/nemesis_test.clj,
util_test.clj), the node specs, the packages composed as combined.clj composes them, swarm
subsets, the clock strobe in a live world, and one short etcd run per package."""

import itertools
import random

import msgspec
import pytest
import trio

from chaoskube.faults import Context, FaultInjector, ProcessInfo, bridge, complete, plan, resolve
from chaoskube.faults import grudge as grudges
from chaoskube.faults.nemesis import NODE_SPECS, PACKAGES, NemesisSpec, PackageOptions, packages, stagger, swarm_subset
from chaoskube.sim import World

FIVE = ["1", "2", "3", "4", "5"]


def as_sets(grudge):
    return {node: set(dropped) for node, dropped in grudge.items()}


def sees(grudge, node, everyone):
    return set(everyone) - set(grudge.get(node, ()))


# -- Jepsen's own cases ------------------------------------------------------------------


@pytest.mark.parametrize(("n", "expected"), [(0, 1), (1, 1), (2, 2), (3, 2), (4, 3), (5, 3)])
def test_majority_as_jepsen_util_test(n, expected):
    assert grudges.majority(n) == expected


@pytest.mark.parametrize(("n", "expected"), [(1, 0), (2, 0), (3, 0), (4, 1), (5, 1), (6, 1), (7, 2), (9, 2), (10, 3)])
def test_minority_third_is_the_largest_integer_strictly_below_a_third(n, expected):
    assert grudges.minority_third(n) == expected
    assert 3 * expected < n and 3 * (expected + 1) >= n


@pytest.mark.parametrize(("nodes", "expected"), [([], ([], [])), (["1"], ([], ["1"])), (["1", "2", "3", "4"], (["1", "2"], ["3", "4"])), (FIVE, (["1", "2"], ["3", "4", "5"]))])
def test_bisect_as_jepsen_bisect_test(nodes, expected):
    assert grudges.bisect(nodes) == expected


def test_complete_grudge_as_jepsen_complete_grudge_test():
    assert as_sets(complete(grudges.bisect(FIVE))) == {"1": {"3", "4", "5"}, "2": {"3", "4", "5"}, "3": {"1", "2"}, "4": {"1", "2"}, "5": {"1", "2"}}


def test_bridge_as_jepsen_bridge_test():
    assert as_sets(bridge(FIVE)) == {"1": {"4", "5"}, "2": {"4", "5"}, "4": {"1", "2"}, "5": {"1", "2"}}


@pytest.mark.parametrize("seed", range(20))
def test_majorities_ring_five_nodes_as_jepsen_majorities_ring_test(seed):
    grudge = grudges.majorities_ring(FIVE, random.Random(seed))
    assert set(grudge) == set(FIVE)
    assert all(len(dropped) == 2 and node not in dropped for node, dropped in grudge.items())
    assert len({dropped for dropped in grudge.values()}) == 5  # distinct
    # "five-node-ring": every node sees exactly its two neighbours; walking the ring from any
    # node visits every node once and comes back
    start = sorted(grudge)[0]
    path, previous, node = [start], None, start
    while True:
        neighbours = sees(grudge, node, FIVE) - {node}
        assert len(neighbours) == 2
        following = sorted(neighbours - {previous})[0] if previous is not None else sorted(neighbours)[0]
        if following == start:
            break
        path.append(following)
        previous, node = node, following
    assert sorted(path) == FIVE


@pytest.mark.parametrize("seed", range(20))
def test_majorities_ring_ten_nodes_as_jepsen_majorities_ring_test(seed):
    nodes = [f"n{index:02d}" for index in range(10)]
    grudge = grudges.majorities_ring(nodes, random.Random(seed))
    assert all(source in grudge[destination] for destination, dropped in grudge.items() for source in dropped)  # symmetric
    assert set(grudge) == set(nodes)
    assert all(len(dropped) < 5 for dropped in grudge.values())  # every node sees a majority
    assert all(len(dropped) >= 3 for dropped in grudge.values())  # but bans at least 3


@pytest.mark.parametrize("size", [3, 4, 5, 6, 7, 8, 9])
def test_majorities_ring_every_node_sees_a_majority_and_no_two_the_same(size):
    nodes = [f"n{index}" for index in range(size)]
    for seed in range(10):
        grudge = grudges.majorities_ring(nodes, random.Random(seed))
        views = [frozenset(sees(grudge, node, nodes)) for node in nodes]
        assert all(len(view) >= grudges.majority(size) for view in views)
        assert all(node in view for node, view in zip(nodes, views))
        if size <= 5:  # the exact ring: every node sees exactly a majority, all different
            assert len(set(views)) == size and all(len(view) == grudges.majority(size) for view in views)


# -- the partition specs -----------------------------------------------------------------


def components(grudge, nodes):
    """The groups of nodes that see exactly each other (for complete grudges)."""
    return sorted({tuple(sorted(sees(grudge, node, nodes))) for node in nodes})


@pytest.mark.parametrize("seed", range(10))
def test_partition_specs_as_combined_clj_grudge(seed):
    rng = random.Random(seed)
    one = grudges.partition_spec("one", FIVE, rng)
    assert sorted(len(group) for group in components(one, FIVE)) == [1, 4]
    majority = grudges.partition_spec("majority", FIVE, rng)
    assert sorted(len(group) for group in components(majority, FIVE)) == [2, 3]
    third = grudges.partition_spec("minority-third", FIVE, rng)
    assert sorted(len(group) for group in components(third, FIVE)) == [1, 4]
    seven = [f"n{index}" for index in range(7)]
    assert sorted(len(group) for group in components(grudges.partition_spec("minority-third", seven, rng), seven)) == [2, 5]
    assert grudges.partition_spec("minority-third", FIVE[:3], rng) == {}  # a third of three is nobody
    primaries = grudges.partition_spec("primaries", FIVE, rng, ["3"])
    assert components(primaries, FIVE) == [("1", "2", "4", "5"), ("3",)]
    assert grudges.partition_spec("primaries", FIVE, rng, []) == {}
    # two primaries: a non-empty subset of them, each alone against the others and the rest;
    # a primary left out is in no component, so nobody drops it (combined.clj removes every
    # primary from "the others" before consing the chosen singletons)
    two = as_sets(grudges.partition_spec("primaries", FIVE, random.Random(seed), ["2", "4"]))
    chosen = {node for node in ("2", "4") if node in two}
    assert chosen
    assert all(two[node] == {"1", "3", "5"} | (chosen - {node}) for node in chosen)
    assert all(dropped == chosen for node, dropped in two.items() if node not in chosen)


def test_partition_specs_are_seeded():
    for spec in grudges.PARTITION_SPECS:
        draws = [grudges.partition_spec(spec, FIVE, random.Random(seed), ["1"]) for seed in range(12)]
        assert draws == [grudges.partition_spec(spec, FIVE, random.Random(seed), ["1"]) for seed in range(12)]
        if spec != "primaries":  # one primary: always the same grudge
            assert len({tuple(sorted((k, tuple(sorted(v))) for k, v in d.items())) for d in draws}) > 1, spec


def test_nonempty_subset_covers_every_size():
    sizes = {len(grudges.nonempty_subset(FIVE, random.Random(seed))) for seed in range(200)}
    assert sizes == {1, 2, 3, 4, 5}


# -- node specs (targets) and the partition kind -----------------------------------------

PROCESSES = [ProcessInfo(f"etcd-{index}", "etcd", None) for index in range(1, 6)] + [ProcessInfo("api-1", "kube-apiserver", None)]


@pytest.mark.parametrize(("selector", "sizes"), [("minority", {2}), ("majority", {3}), ("minority-third", {1}), ("subset", {1, 2, 3, 4, 5}), ("primaries", {1}), ("random", {1}), ("role", {5})])
def test_node_specs_draw_the_sizes_jepsen_db_nodes_draws(selector, sizes):
    drawn = [resolve(f"{selector}:etcd", PROCESSES, random.Random(seed), lambda role: "etcd-2") for seed in range(100)]
    assert {len(names) for names in drawn} == sizes
    assert all(name.startswith("etcd-") for names in drawn for name in names)
    if selector == "primaries":
        assert drawn[0] == ["etcd-2"]
        assert resolve("primaries:etcd", PROCESSES, random.Random(0), lambda role: None) == []
    assert set(NODE_SPECS.values()) >= {selector} or selector == "random"


def test_partition_kind_plans_the_spec_over_the_role_group():
    context = Context(PROCESSES, lambda role: "etcd-4" if role == "etcd" else None)
    planned = plan("partition", "role:etcd", {"spec": "primaries"}, context, random.Random(1))
    assert components(planned.grudge, [p.name for p in PROCESSES[:5]]) == [("etcd-1", "etcd-2", "etcd-3", "etcd-5"), ("etcd-4",)]
    assert "api-1" not in planned.grudge
    nobody = plan("partition", "role:etcd", {"spec": "primaries"}, Context(PROCESSES, lambda role: None), random.Random(1))
    assert nobody.targets == () and nobody.note.startswith("nothing to do:")
    ring = plan("partition", "role:etcd", {"spec": "majorities-ring"}, context, random.Random(1))
    assert len(ring.grudge) == 5 and all(len(dropped) == 2 for dropped in ring.grudge.values())


# -- packages -----------------------------------------------------------------------------

OPTIONS = PackageOptions(window_s=60.0, interval_s=2.0)


def test_same_seed_same_schedule_other_seed_other_schedule():
    assert packages(random.Random(5), PACKAGES, OPTIONS) == packages(random.Random(5), PACKAGES, OPTIONS)
    assert packages(random.Random(5), PACKAGES, OPTIONS) != packages(random.Random(6), PACKAGES, OPTIONS)


def test_stagger_gaps_are_uniform_in_zero_to_twice_the_interval():
    instants = stagger(random.Random(3), 2.0, 600.0)
    gaps = [b - a for a, b in zip([0.0, *instants], instants)]
    assert all(0 <= gap <= 4.0 + 1e-6 for gap in gaps)
    assert 1.7 < sum(gaps) / len(gaps) < 2.3  # mean interval_s
    assert len(stagger(random.Random(3), 0.05, 3600.0)) == 1000  # bounded


@pytest.mark.parametrize("seed", range(5))
def test_each_package_flip_flops_and_heals_within_the_window(seed):
    for name, kinds in (("partition", {"partition"}), ("kill", {"kill"}), ("pause", {"pause"}), ("clock", {"clock-jump", "clock-strobe"}), ("packet", {"link-delay", "link-loss", "link-duplicate", "link-reorder"}), ("flap", {"partition"})):
        entries = packages(random.Random(seed), [name], OPTIONS)
        assert entries and {entry.kind for entry in entries} <= kinds, name
        assert all(entry.duration_s > 0 and entry.at_s + entry.duration_s <= 60.0 + 1e-6 for entry in entries), name
        if name in ("partition", "kill", "pause", "packet", "flap"):  # flip-flop: one at a time
            assert all(a.at_s + a.duration_s <= b.at_s + 1e-6 for a, b in zip(entries, entries[1:])), name


def test_flapping_is_on_and_off_for_a_tenth_to_three_seconds():
    entries = packages(random.Random(9), ["flap"], OPTIONS)
    assert len(entries) > 10
    assert all(0.1 - 1e-6 <= entry.duration_s <= 3.0 + 1e-6 for entry in entries[:-1])
    gaps = [b.at_s - (a.at_s + a.duration_s) for a, b in zip(entries, entries[1:])]
    assert all(0.1 - 1e-6 <= gap <= 3.0 + 1e-6 for gap in gaps)


def test_kill_and_pause_mix_as_the_db_package_targets_as_told():
    options = PackageOptions(window_s=120.0, interval_s=0.5, kill_targets=("primaries", "all"), pause_targets=("one",), roles=("etcd", "kube-scheduler"))
    entries = packages(random.Random(2), ["kill", "pause"], options)
    assert {entry.kind for entry in entries} == {"kill", "pause"}
    assert {entry.target for entry in entries if entry.kind == "kill"} <= {"primaries:etcd", "role:etcd", "primaries:kube-scheduler", "role:kube-scheduler"}
    assert {entry.target for entry in entries if entry.kind == "pause"} <= {"random:etcd", "random:kube-scheduler"}
    assert len(entries) > 60  # a high rate: 120 s at a stagger of 0 to 1 s, two ops per fault


def test_clock_bumps_and_strobes_in_jepsens_ranges():
    entries = packages(random.Random(4), ["clock"], PackageOptions(window_s=600.0, interval_s=2.0))
    bumps = [entry for entry in entries if entry.kind == "clock-jump"]
    strobes = [entry for entry in entries if entry.kind == "clock-strobe"]
    assert bumps and strobes
    assert all(0.011 <= abs(entry.params["seconds"]) <= 288.0 for entry in bumps)
    assert {entry.params["seconds"] > 0 for entry in bumps} == {True, False}
    assert all(4 <= entry.params["delta_ms"] <= 262144 and 1 <= entry.params["period_ms"] <= 1024 for entry in strobes)
    assert all(entry.duration_s <= 32.0 + 1e-6 for entry in strobes)


def test_swarm_draws_a_nonempty_subset_per_seed():
    subsets = {tuple(swarm_subset(random.Random(seed), PACKAGES)) for seed in range(100)}
    assert all(subset and set(subset) <= set(PACKAGES) for subset in subsets)
    assert len(subsets) > 20
    assert all(list(subset) == [name for name in PACKAGES if name in subset] for subset in subsets)  # in order
    spec = msgspec.convert({"faults": list(PACKAGES), "kinds": ["kill-etcd-leader", "pause-etcd"], "swarm": True, "window_s": 30}, NemesisSpec)
    draws = [spec.draw(random.Random(seed), ["node-1"]) for seed in range(30)]
    assert len({tuple(draw.faults) for draw in draws}) > 5
    for draw in draws:
        assert draw.faults and draw.kinds and draw.to_json() == {"kinds": draw.kinds, "faults": draw.faults}
        package_kinds = {entry.kind for entry in draw.entries} - {"kill", "pause"}
        if "partition" not in draw.faults and "flap" not in draw.faults:
            assert "partition" not in package_kinds
        if "clock" not in draw.faults:
            assert not package_kinds & {"clock-jump", "clock-strobe"}
    assert spec.draw(random.Random(3), ["node-1"]) == spec.draw(random.Random(3), ["node-1"])
    plain = msgspec.convert({"faults": ["kill"], "window_s": 30}, NemesisSpec)
    assert plain.draw(random.Random(1), []).faults == ["kill"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"window_s": 10}, "the nemesis needs `kinds`"),
        ({"faults": ["meteor"]}, "`faults`: unknown 'meteor'; known: partition, kill, pause, clock, packet, flap"),
        ({"faults": ["partition"], "partition_targets": ["halves"]}, "`partition_targets`: unknown 'halves'; known: one, majority, majorities-ring, minority-third, primaries"),
        ({"faults": ["kill"], "kill_targets": []}, "`kill_targets` must name at least one of"),
        ({"faults": ["kill"], "kill_targets": ["leader"]}, "`kill_targets`: unknown 'leader'"),
        ({"faults": ["packet"], "packet_behaviors": ["corrupt"]}, "`packet_behaviors`: unknown 'corrupt'"),
        ({"faults": ["kill"], "roles": []}, "`roles` must list at least one role"),
        ({"faults": ["kill"], "interval_s": 0.0}, "`interval_s` must be between 0.05 and 3600"),
        ({"faults": ["flap"], "flap_off_s": [0.0, 1.0]}, "`flap_off_s` must be [low, high] seconds"),
        ({"faults": ["flap"], "flap_on_s": [1.0]}, "`flap_on_s` must be [low, high] seconds"),
    ],
)
def test_bad_nemesis_specs_are_refused_in_one_line(fields, message):
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert(fields, NemesisSpec)
    assert message in str(caught.value) and "\n" not in str(caught.value)


# -- the clock strobe in a live world -----------------------------------------------------


async def idle(process):
    await trio.sleep_forever()


def test_clock_strobe_flips_every_period_and_heal_stops_it():
    offsets = []

    async def main(world):
        for index in (1, 2, 3):
            world.spawn(f"n{index}", idle, role="db")

        def context():
            return Context([ProcessInfo(p.name, p.role, p.zone) for p in world.processes.values()], lambda role: "n1")

        injector = FaultInjector(world, context)
        injector.inject("clock-jump", "name:n1", {"seconds": 10.0})
        active = injector.inject("clock-strobe", "name:n1", {"delta_ms": 500.0, "period_ms": 100.0})
        for _ in range(6):
            offsets.append(round(world.process("n1").clock_offset, 6))
            await world.sleep(0.1)
        injector.heal(active)
        offsets.append(round(world.process("n1").clock_offset, 6))
        await world.sleep(1.0)
        offsets.append(round(world.process("n1").clock_offset, 6))
        offsets.append(round(world.process("n2").clock_offset, 6))

    World(1).run(main)
    # on at the apply, then flipped every 100 ms (sampled at each flip instant, after it)
    assert offsets[:6] == [10.5, 10.0, 10.5, 10.0, 10.5, 10.0]
    assert offsets[6:] == [10.0, 10.0, 0.0]  # healed: the bump stays, the strobe stopped


# -- one short etcd run per package ------------------------------------------------------

ETCD_EXPERIMENT = {
    "name": "jepsen-package",
    "title": "t",
    "description": "d",
    "source": "s",
    "system": "etcd",
    "cluster": {"members": 5},
    "workload": {"clients": 3, "keys": 2, "rate_per_s": 30},
    "phases": {"warmup_s": 2, "faults_s": 13, "recovery_s": 20, "settle_s": 1},
    "schedule": [],
    "checkers": ["raft-safety", "linearizability", "watch", "steady-state"],
    "expected": {"outcome": "pass"},
}
PACKAGE_KINDS = {"partition": {"partition"}, "kill": {"kill"}, "pause": {"pause"}, "clock": {"clock-jump", "clock-strobe"}, "packet": {"link-delay", "link-loss", "link-duplicate", "link-reorder"}, "flap": {"partition"}}


@pytest.mark.parametrize("package", PACKAGES)
def test_a_short_etcd_run_per_package_applies_it_and_stays_safe(package, tmp_path):
    from chaoskube.experiments.model import Experiment
    from chaoskube.experiments.runner import run_experiment

    experiment = msgspec.convert({**ETCD_EXPERIMENT, "nemesis": {"faults": [package], "interval_s": 1.5, "after_s": 1, "window_s": 12}}, Experiment)
    result = run_experiment(experiment, 2, tmp_path / package)
    assert result.as_expected, {name: (verdict.label, verdict.reason) for name, verdict in result.verdicts.items()}
    events = [msgspec.json.decode(line) for line in (tmp_path / package / "journal.jsonl").read_bytes().splitlines()]
    applied = {event["kind"] for event in events if event["type"] == "fault" and event.get("event") == "apply"}
    assert applied and applied <= PACKAGE_KINDS[package], applied
    healed = [event for event in events if event["type"] == "fault" and event.get("event") == "heal"]
    assert len(healed) == sum(1 for event in events if event["type"] == "fault" and event.get("event") == "apply")
    assert list(itertools.islice((event for event in events if event["type"] == "nemesis"), 1))


def test_same_seed_same_journal_with_strobes_and_swarm(tmp_path):
    """The strobe's flips are world timers and swarm draws from the nemesis's generator: two
    runs of one seed give one journal, and the swarm's choice is in it."""
    from chaoskube.experiments.model import Experiment
    from chaoskube.experiments.runner import run_experiment

    nemesis = {"faults": ["partition", "clock", "pause"], "swarm": True, "interval_s": 1.0, "after_s": 1, "window_s": 12}
    experiment = msgspec.convert({**ETCD_EXPERIMENT, "nemesis": nemesis}, Experiment)
    first, second = (run_experiment(experiment, 3, tmp_path / name) for name in ("a", "b"))
    assert first.journal_sha256 == second.journal_sha256
    assert (tmp_path / "a" / "journal.jsonl").read_bytes() == (tmp_path / "b" / "journal.jsonl").read_bytes()
    events = [msgspec.json.decode(line) for line in (tmp_path / "a" / "journal.jsonl").read_bytes().splitlines()]
    (drawn,) = [event for event in events if event["type"] == "nemesis"]
    assert drawn["swarm"]["faults"] and set(drawn["swarm"]["faults"]) <= {"partition", "clock", "pause"}
    assert drawn["swarm"]["kinds"] == []


def test_flapping_primaries_catch_a_read_index_without_quorum_check(tmp_path):
    """The targeted package finds what the leader-isolation schedules rarely reach: a
    leader serving ReadIndex without a heartbeat round answers a stale read in one of the
    short isolations (first catch: seed 3; docs/experiments.md)."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.model import with_broken
    from chaoskube.experiments.runner import run_experiment

    experiment = with_broken(registry.find("etcd-jepsen-flapping-primaries"), ["raft-read-index-without-quorum-check"])
    result = run_experiment(experiment, 3, tmp_path / "run")
    assert result.verdicts["linearizability"].valid is False
    assert "cannot be linearized" in result.verdicts["linearizability"].reason

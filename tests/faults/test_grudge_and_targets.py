"""Pure fault planning: grudges, targets, plans."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chaoskube.faults import (
    Context,
    FaultError,
    ProcessInfo,
    TargetError,
    bridge,
    complete,
    isolate,
    minority_majority,
    one_way,
    plan,
    resolve,
)

NODES = ["n1", "n2", "n3", "n4", "n5"]


def reachable(grudge, src, dst):
    return src not in grudge.get(dst, frozenset())


def test_isolate_table():
    grudge = isolate("n3", NODES)
    for src in NODES:
        for dst in NODES:
            expected = src == dst or ("n3" not in (src, dst))
            assert reachable(grudge, src, dst) == expected, (src, dst)


def test_complete_oracle():
    components = [["n1", "n2"], ["n3"], ["n4", "n5"]]
    grudge = complete(components)
    side = {node: index for index, component in enumerate(components) for node in component}
    for src in NODES:
        for dst in NODES:
            assert reachable(grudge, src, dst) == (side[src] == side[dst])


def test_one_way_is_asymmetric():
    grudge = one_way(["n1"], ["n2"])
    assert not reachable(grudge, "n1", "n2")
    assert reachable(grudge, "n2", "n1")


def test_bridge_middle_node_sees_both_sides():
    grudge = bridge(NODES)  # n1 n2 | n3 | n4 n5
    assert all(reachable(grudge, "n3", node) and reachable(grudge, node, "n3") for node in NODES)
    assert not reachable(grudge, "n1", "n4") and not reachable(grudge, "n5", "n2")
    assert reachable(grudge, "n1", "n2") and reachable(grudge, "n4", "n5")


@given(st.integers(3, 9), st.integers(0, 2**32), st.booleans())
def test_minority_is_a_strict_minority(size, seed, with_leader):
    nodes = [f"n{i}" for i in range(size)]
    leader = nodes[seed % size] if with_leader else None
    minority, majority = minority_majority(nodes, random.Random(seed), include=leader)
    assert len(minority) == (size - 1) // 2 and len(majority) > size // 2
    assert sorted(minority + majority) == sorted(nodes)
    if leader:
        assert leader in minority


PROCESSES = [
    ProcessInfo("etcd-1", "etcd", "a"),
    ProcessInfo("etcd-2", "etcd", "b"),
    ProcessInfo("etcd-3", "etcd", "c"),
    ProcessInfo("client-1", "client", "a"),
]


def leader_of(role):
    return "etcd-2" if role == "etcd" else None


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("name:etcd-3", ["etcd-3"]),
        ("role:etcd", ["etcd-1", "etcd-2", "etcd-3"]),
        ("leader:etcd", ["etcd-2"]),
        ("leader:client", []),
        ("zone:a", ["client-1", "etcd-1"]),
        ("name:nope", []),
    ],
)
def test_targets(target, expected):
    assert resolve(target, PROCESSES, random.Random(1), leader_of) == expected


def test_random_and_follower_targets_are_seeded():
    picks = {resolve("random:etcd", PROCESSES, random.Random(seed), leader_of)[0] for seed in range(30)}
    assert picks == {"etcd-1", "etcd-2", "etcd-3"}
    followers = {resolve("follower:etcd", PROCESSES, random.Random(seed), leader_of)[0] for seed in range(30)}
    assert followers == {"etcd-1", "etcd-3"}
    assert resolve("random:etcd", PROCESSES, random.Random(5), leader_of) == resolve(
        "random:etcd", PROCESSES, random.Random(5), leader_of
    )


@pytest.mark.parametrize("bad", ["etcd", "who:etcd", "name:", ""])
def test_bad_targets_are_refused(bad):
    with pytest.raises(TargetError):
        resolve(bad, PROCESSES, random.Random(1), leader_of)


CONTEXT = Context(PROCESSES, leader_of)


def test_plan_isolate_leader_cuts_it_from_its_peers_only():
    isolated = plan("isolate", "leader:etcd", {}, CONTEXT, random.Random(1))
    assert isolated.targets == ("etcd-2",)
    assert isolated.grudge == {
        "etcd-1": frozenset({"etcd-2"}),
        "etcd-2": frozenset({"etcd-1", "etcd-3"}),
        "etcd-3": frozenset({"etcd-2"}),
    }


def test_plan_split_puts_the_leader_in_the_minority_or_majority():
    minority = plan("split", "role:etcd", {"leader_in": "minority"}, CONTEXT, random.Random(1))
    assert minority.targets == ("etcd-2",)
    majority = plan("split", "role:etcd", {"leader_in": "majority"}, CONTEXT, random.Random(1))
    assert "etcd-2" not in majority.targets and len(majority.targets) == 1


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        ("explode", {}, "unknown fault kind"),
        ("kill", {"force": 1}, "has no parameter 'force'"),
        ("slow-disk", {"fsync_ms": "slow"}, "must be a finite number"),
        ("link-loss", {"loss": 5}, "out of range"),
        ("clock-drift", {"drift": -2}, "out of range"),
        ("isolate", {"scope": "weird"}, "must be one of peers, all"),
        ("split", {"leader_in": "sideways"}, "must be one of minority"),
    ],
)
def test_bad_fault_specs_are_refused_with_a_clear_message(kind, params, message):
    with pytest.raises(FaultError, match=message):
        plan(kind, "role:etcd", params, CONTEXT, random.Random(1))

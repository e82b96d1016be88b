"""Fault targets as data: which processes a fault hits, resolved when it is applied.

A target is a string ``SELECTOR:ARGUMENT``:

- ``name:etcd-1``   — that process;
- ``role:etcd``     — every process with that role;
- ``random:etcd``   — one process of that role, chosen with the run's seeded generator
  (``random:*`` — any process);
- ``leader:etcd``   — the current leader of that role's group, as the system under test
  reports it (no leader: the fault does nothing, and says so in the journal);
- ``follower:etcd`` — one non-leader of that role, chosen with the seed;
- ``zone:a``        — every process in zone ``a``;
- ``minority:etcd``, ``majority:etcd``, ``minority-third:etcd``, ``subset:etcd``,
  ``primaries:etcd`` — Jepsen's node specs (jepsen/src/jepsen/nemesis/combined.clj
  ``db-nodes``), drawn with the seed from the role's processes when the fault fires: a
  random minority (``majority(n) - 1`` of them), a random majority, fewer than a third
  (nobody on three or fewer), a random non-empty subset, and the primaries (the role's
  current leader: a non-empty subset of one);
- ``workload:TERMS`` — the nodes running pods of the workloads TERMS select (the
  kubernetes system's roles: ``workload:kind:StatefulSet,largest``,
  ``workload:with-pdb``; docs/experiments.md), as the system reports them now.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chaoskube.faults import grudge

SELECTORS = ("name", "role", "random", "leader", "follower", "zone", "workload", "minority", "majority", "minority-third", "subset", "primaries")
#: Jepsen's node specs (combined.clj ``db-nodes``): a seeded draw from the role's group.
NODE_SPEC_SELECTORS = ("minority", "majority", "minority-third", "subset", "primaries")


class TargetError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    name: str
    role: str | None
    zone: str | None


def parse_target(target: str) -> tuple[str, str]:
    selector, _, argument = target.partition(":")
    if selector not in SELECTORS or not argument:
        raise TargetError(
            f"bad target {target!r}: expected SELECTOR:ARGUMENT with SELECTOR one of {', '.join(SELECTORS)}"
        )
    return selector, argument


def resolve(
    target: str,
    processes: Sequence[ProcessInfo],
    rng: random.Random,
    leader_of: Callable[[str], str | None],
    workload_nodes: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """Names of the processes ``target`` means now, sorted. Pure given its inputs."""
    selector, argument = parse_target(target)
    ordered = sorted(processes, key=lambda process: process.name)
    if selector == "workload":
        nodes = set(workload_nodes(argument)) if workload_nodes is not None else set()
        return [process.name for process in ordered if process.name in nodes]
    if selector == "name":
        return [process.name for process in ordered if process.name == argument]
    if selector == "zone":
        return [process.name for process in ordered if process.zone == argument]
    group = [process.name for process in ordered if argument == "*" or process.role == argument]
    if selector == "role":
        return group
    if selector == "random":
        return [rng.choice(group)] if group else []
    if selector in ("minority", "majority", "minority-third", "subset") and group:
        shuffled = list(group)
        rng.shuffle(shuffled)
        size = {"minority": grudge.majority(len(group)) - 1, "majority": grudge.majority(len(group)), "minority-third": grudge.minority_third(len(group))}.get(selector)
        return sorted(shuffled[:size]) if size is not None else grudge.nonempty_subset(group, rng)
    if selector in ("minority", "majority", "minority-third", "subset"):
        return []
    leader = leader_of(argument)
    if selector == "primaries":
        return [leader] if leader is not None else []
    if selector == "leader":
        return [leader] if leader is not None else []
    followers = [name for name in group if name != leader]
    return [rng.choice(followers)] if followers else []

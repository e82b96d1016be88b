"""A random nemesis: a seeded generator of fault schedules mixing kinds (Jepsen's combined
nemesis, FoundationDB's simulation "swizzle-clogging").

Contract: :func:`generate` is a pure function of the ``random.Random`` it is given (the
caller takes it from the world, e.g. ``world.random("nemesis")``) and its arguments; it
returns :class:`~faults.schedule.ScheduledFault` entries, sorted by ``at_s``, every one
with a ``duration_s`` and healed by ``window_s`` (so the schedule heals itself inside the
window, whatever the heal phase does). Targets are selectors (``leader:etcd``,
``random:node``...) resolved when each fault fires, by the injector's generator.

Nemesis kinds (:data:`NEMESIS_KINDS`, name -> fault kind, target, params):

- ``kill-etcd-leader``, ``kill-controller-manager`` (the acting one),
  ``kill-apiserver``, ``kill-scheduler`` — SIGKILL, restarted at the fault's end;
- ``node-failure`` — power off a random node; ``partition-node`` — cut a random node off
  from the control plane (``control-plane-partition``);
- ``pause-etcd``, ``pause-apiserver`` — SIGSTOP a random one (a long GC pause);
- ``clock-jump-node`` — step a random node's clock 30 s forward;
- ``swizzle`` — swizzle-clogging over the nodes: a random subset of them is clogged one
  by one (every link to and from the node drops everything: ``link-loss`` 1.0), then
  unclogged in an independently random order ("swizzle-clogging",
  https://apple.github.io/foundationdb/testing.html and Will Wilson's "Testing Distributed
  Systems w/ Deterministic Simulation", Strange Loop 2014).

Guarantees: same rng state and arguments, same schedule; every entry validates as a
ScheduledFault; the swizzle's unclog order is a permutation of its clog order.
Non-guarantees: faults may overlap (two kills of the etcd leader may take a quorum down
for a while); a target may match nothing when it fires (the injector records a skip).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from faults.kinds import FaultError
from faults.schedule import ScheduledFault

#: nemesis kind -> (fault kind, target, params)
NEMESIS_KINDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "kill-etcd-leader": ("kill", "leader:etcd", {}),
    "kill-controller-manager": ("kill", "leader:kube-controller-manager", {}),
    "kill-apiserver": ("kill", "random:kube-apiserver", {}),
    "kill-scheduler": ("kill", "leader:kube-scheduler", {}),
    "node-failure": ("node-failure", "random:node", {}),
    "partition-node": ("control-plane-partition", "random:node", {"from_roles": "control-plane"}),
    "pause-etcd": ("pause", "random:etcd", {}),
    "pause-apiserver": ("pause", "random:kube-apiserver", {}),
    "clock-jump-node": ("clock-jump", "random:node", {"seconds": 30.0}),
    "swizzle": ("link-loss", "", {"loss": 1.0}),  # expanded by :func:`swizzle`
}
#: How far apart the swizzle clogs (and unclogs) its nodes.
SWIZZLE_STEP_S = 2.0
#: Bound on one schedule (every fault is planned and journaled).
MAX_COUNT = 200


def generate(
    rng: random.Random,
    *,
    kinds: Sequence[str],
    count: int,
    window_s: float,
    nodes: Sequence[str] = (),
    min_duration_s: float = 3.0,
    max_duration_s: float = 15.0,
) -> list[ScheduledFault]:
    """``count`` faults of ``kinds`` (chosen uniformly, each at least once when
    ``count >= len(kinds)``), each starting at a uniform time and lasting a uniform
    duration in ``[min_duration_s, max_duration_s]``, all healed by ``window_s``.
    ``nodes`` are the names a ``swizzle`` clogs. Raises FaultError on a bad argument."""
    _check(kinds, count, window_s, nodes, min_duration_s, max_duration_s)
    chosen = list(kinds)[:count] if count >= len(kinds) else []
    chosen += [rng.choice(list(kinds)) for _ in range(count - len(chosen))]
    rng.shuffle(chosen)
    entries: list[ScheduledFault] = []
    for name in chosen:
        duration_s = rng.uniform(min_duration_s, max_duration_s)
        at_s = rng.uniform(0.0, window_s - duration_s)
        if name == "swizzle":
            entries += swizzle(rng, nodes, start_s=at_s, window_s=window_s)
            continue
        kind, target, params = NEMESIS_KINDS[name]
        entries.append(ScheduledFault(round(at_s, 6), kind, target, round(duration_s, 6), dict(params)))
    return sorted(entries, key=lambda entry: entry.at_s)


def swizzle(rng: random.Random, nodes: Sequence[str], *, start_s: float, window_s: float, step_s: float = SWIZZLE_STEP_S) -> list[ScheduledFault]:
    """Clog a random non-empty subset of ``nodes`` one by one from ``start_s``, every
    ``step_s``; once all are clogged, unclog them one by one in a fresh random order, every
    ``step_s``, the last by ``window_s`` (the steps shrink to fit the window)."""
    assert nodes, "a swizzle needs nodes"
    assert 0 <= start_s < window_s, "the swizzle starts inside the window"
    subset = rng.sample(sorted(nodes), rng.randint(1, len(nodes)))
    unclog_order = rng.sample(subset, len(subset))
    step_s = min(step_s, (window_s - start_s) / (2 * len(subset)))
    clog_at = {name: start_s + index * step_s for index, name in enumerate(subset)}
    all_clogged_s = start_s + len(subset) * step_s
    unclog_at = {name: all_clogged_s + index * step_s for index, name in enumerate(unclog_order, start=1)}
    kind, _, params = NEMESIS_KINDS["swizzle"]
    return [ScheduledFault(round(clog_at[name], 6), kind, f"name:{name}", round(unclog_at[name] - clog_at[name], 6), dict(params)) for name in subset]


def _check(kinds: Sequence[str], count: int, window_s: float, nodes: Sequence[str], min_duration_s: float, max_duration_s: float) -> None:
    if not kinds:
        raise FaultError(f"the nemesis needs at least one kind; known: {', '.join(sorted(NEMESIS_KINDS))}")
    unknown = [name for name in kinds if name not in NEMESIS_KINDS]
    if unknown:
        raise FaultError(f"unknown nemesis kind {unknown[0]!r}; known: {', '.join(sorted(NEMESIS_KINDS))}")
    if not 0 <= count <= MAX_COUNT:
        raise FaultError(f"the nemesis `count` must be between 0 and {MAX_COUNT}, got {count}")
    if not 0 < min_duration_s <= max_duration_s < window_s:
        raise FaultError(f"nemesis durations must satisfy 0 < min ({min_duration_s}) <= max ({max_duration_s}) < window ({window_s})")
    if "swizzle" in kinds and not nodes:
        raise FaultError("the nemesis kind `swizzle` needs nodes to clog")

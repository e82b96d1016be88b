"""A random nemesis: a seeded generator of fault schedules mixing kinds (Jepsen's combined
nemesis, FoundationDB's simulation "swizzle-clogging").

Contract: :func:`generate` is a pure function of the ``random.Random`` it is given (the
caller takes it from the world, e.g. ``world.random("nemesis")``) and its arguments; it
returns :class:`~chaoskube.faults.schedule.ScheduledFault` entries, sorted by ``at_s``, every one
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
- ``kubelet-stop`` — stop a random node's kubelet (its containers keep serving);
  ``drain-node`` — ``kubectl drain`` a random node (voluntary: through the Eviction API,
  honouring PodDisruptionBudgets), uncordoned at the fault's end;
- ``webhook-error`` — a random admission webhook answers HTTP 500;
  ``webhook-delay`` — it answers 6 s late; ``webhook-unavailable`` — it is down (a
  ``kill``: connection refused; faults/kinds.py says why that is the unavailability). With
  no webhook in the cluster these match nothing and are skipped;
- ``swizzle`` — swizzle-clogging over the nodes: a random subset of them is clogged one
  by one (every link to and from the node drops everything: ``link-loss`` 1.0), then
  unclogged in an independently random order ("swizzle-clogging",
  https://apple.github.io/foundationdb/testing.html and Will Wilson's "Testing Distributed
  Systems w/ Deterministic Simulation", Strange Loop 2014).

:class:`NemesisSpec` is the same as data, for an experiment file (``nemesis:``): its fields
are :func:`generate`'s arguments plus ``after_s`` (where in the fault phase the window
starts) and ``seed_offset`` (which generator: ``world.random(spec.random_name)``), checked
when the spec is read; :meth:`NemesisSpec.schedule` draws the entries, already shifted by
``after_s``, for the run's own FaultInjector (experiments/runner.py), so the nemesis's
faults are the run's faults.

Guarantees: same rng state and arguments, same schedule; every entry validates as a
ScheduledFault; the swizzle's unclog order is a permutation of its clog order.
Non-guarantees: faults may overlap (two kills of the etcd leader may take a quorum down
for a while); a target may match nothing when it fires (the injector records a skip).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from typing import Any

import msgspec

from chaoskube.faults.kinds import FaultError
from chaoskube.faults.schedule import ScheduledFault

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
    "kubelet-stop": ("kubelet-stop", "random:node", {}),
    "drain-node": ("drain", "random:node", {}),
    "webhook-error": ("webhook-error", "random:webhook", {"code": 500}),
    "webhook-delay": ("webhook-delay", "random:webhook", {"delay_ms": 6000.0}),
    "webhook-unavailable": ("kill", "random:webhook", {}),
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


class NemesisSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A random fault schedule as data (module docstring): ``count`` faults of ``kinds``
    (names of :data:`NEMESIS_KINDS`) within ``window_s``, starting ``after_s`` into the
    fault phase, each lasting ``min_duration_s`` to ``max_duration_s``; ``seed_offset``
    picks another generator for the same seed. Raises ValueError (one line) when invalid."""

    kinds: list[str]
    count: int = 6
    after_s: float = 0.0
    window_s: float = 60.0
    seed_offset: int = 0
    min_duration_s: float = 3.0
    max_duration_s: float = 15.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.after_s) and 0 <= self.after_s <= 3600 and math.isfinite(self.window_s) and 0 < self.window_s <= 3600):
            raise ValueError(f"`after_s` and `window_s` must be finite, 0 <= after_s <= 3600 and 0 < window_s <= 3600; got {self.after_s}, {self.window_s}")
        try:  # validate once with a throw-away generator (the same checks as the run's)
            generate(random.Random(0), kinds=self.kinds, count=self.count, window_s=self.window_s, nodes=["node"], min_duration_s=self.min_duration_s, max_duration_s=self.max_duration_s)
        except FaultError as error:
            raise ValueError(str(error)) from None

    @property
    def random_name(self) -> str:
        """The name of the world generator the schedule is drawn from."""
        return f"nemesis/{self.seed_offset}"

    def schedule(self, rng: random.Random, nodes: Sequence[str]) -> list[ScheduledFault]:
        """The entries, drawn from ``rng`` (take it as ``world.random(spec.random_name)``),
        with ``at_s`` counted from the start of the fault phase (``after_s`` added);
        ``nodes`` are what a ``swizzle`` clogs. Sorted by ``at_s``."""
        entries = generate(rng, kinds=self.kinds, count=self.count, window_s=self.window_s, nodes=nodes, min_duration_s=self.min_duration_s, max_duration_s=self.max_duration_s)
        return [dataclasses.replace(entry, at_s=round(entry.at_s + self.after_s, 6)) for entry in entries]

    def ends_at_s(self) -> float:
        """When the last fault of the schedule is healed, counted as ``schedule``'s ``at_s``."""
        return self.after_s + self.window_s

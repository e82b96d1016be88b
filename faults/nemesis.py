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
  ``kill-apiserver``, ``kill-scheduler`` — SIGKILL, restarted at the fault's end; the
  leaders are Jepsen's ``primaries:`` node spec, so with no leader at that instant (an
  earlier fault of the mix took it) the kill does nothing, as in Jepsen, instead of making
  the run inconclusive;
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

Jepsen's nemesis packages (``faults:``, :func:`packages`), as
jepsen/src/jepsen/nemesis/combined.clj builds them (jepsen-io/jepsen c4c7473d) and
jepsen-io/etcd's ``src/jepsen/etcd/nemesis.clj`` combines them: a *package* is a generator
of fault operations plus the heal that ends them; every package's operations are staggered
(``gen/stagger``: each gap uniform in ``[0, 2 * interval_s]``) and the enabled packages run
side by side over the window (``compose-packages``: ``gen/any``), each healed at the window's
end (its final generator). Packages (Jepsen's ``:faults`` names):

- ``partition`` — flip-flop of start-partition (a spec drawn from ``partition_targets``:
  ``one``, ``majority``, ``majorities-ring``, ``minority-third``, ``primaries``; a
  ``partition`` fault of faults/kinds.py on a role of ``partition_roles``) and
  stop-partition;
- ``kill``, ``pause`` — Jepsen's db package: a mix of the kill/start and pause/resume
  flip-flops, each kill or pause on a node spec drawn from ``kill_targets`` /
  ``pause_targets`` (``one``, ``minority``, ``majority``, ``minority-third``,
  ``primaries``, ``all``, ``subset`` (Jepsen's nil: a random non-empty subset)) of a role of
  ``roles``; start (resume) brings back everything killed (paused);
- ``clock`` — a mix of reset, bump and strobe operations (nemesis/time.clj): a bump steps
  the targets' clocks by ±1.5^(6+U(0,25)) ms (11 ms to 288 s) until the next reset; a
  strobe flips them by 2^(2+U(0,16)) ms every 2^U(0,10) ms for U(0,32) s;
- ``packet`` — flip-flop of start-packet (one behaviour of ``packet_behaviors`` on a node
  spec of ``packet_targets``) and stop-packet (net.clj's packet behaviours: delay, loss,
  duplicate, reorder);
- ``flap`` — a flapping partition: a spec of ``partition_targets`` on for U(``flap_on_s``)
  (0.1-3 s by default), off for U(``flap_off_s``), on again, for the whole window.

Kills and pauses at a high rate are the same packages with a short ``interval_s`` (jepsen-io/etcd
runs ``--nemesis-interval`` 5 s by default). Deviations from Jepsen, on purpose: a bump or a
strobe steps every target by the same drawn amount (Jepsen draws one per node); a reset
ends every bump in force (Jepsen resets the nodes of a node spec); the packages' random
choices come from one generator in a fixed order, so the schedule is a pure function of
the seed; the clock package's opening check-offsets operation takes a stagger slot and
does nothing.

Swarm (``swarm: true``; FoundationDB's swarm testing,
https://apple.github.io/foundationdb/testing.html, and Groce et al., "Swarm Testing",
ISSTA 2012): before drawing anything, the spec draws from the same generator a random
non-empty subset of its ``faults`` and of its ``kinds`` and uses only those for this seed,
so each seed exercises a different mix; the choice is part of the journaled ``nemesis``
event (:class:`NemesisDraw`).

Guarantees: same rng state and arguments, same schedule; every entry validates as a
ScheduledFault; the swizzle's unclog order is a permutation of its clog order; every
package's faults are healed by the end of the window.
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

from chaoskube.faults import grudge as grudges
from chaoskube.faults.kinds import FaultError
from chaoskube.faults.schedule import ScheduledFault

#: nemesis kind -> (fault kind, target, params)
NEMESIS_KINDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "kill-etcd-leader": ("kill", "primaries:etcd", {}),
    "kill-controller-manager": ("kill", "primaries:kube-controller-manager", {}),
    "kill-apiserver": ("kill", "random:kube-apiserver", {}),
    "kill-scheduler": ("kill", "primaries:kube-scheduler", {}),
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


# -- Jepsen's nemesis packages ------------------------------------------------------------

#: Jepsen's fault names (combined.clj ``nemesis-packages``), and ``flap``.
PACKAGES = ("partition", "kill", "pause", "clock", "packet", "flap")
#: Jepsen's node specs (combined.clj ``db-nodes``) -> the target selector that draws them.
NODE_SPECS: dict[str, str] = {
    "one": "random",
    "minority": "minority",
    "majority": "majority",
    "minority-third": "minority-third",
    "primaries": "primaries",
    "all": "role",
    "subset": "subset",
}
#: Jepsen's packet behaviours (net.clj ``all-packet-behaviors``) as fault kinds, with
#: netem's defaults where Jepsen takes them (delay 50 ms ± 10 ms; loss, duplicate and
#: reorder at 20 %).
PACKET_BEHAVIORS: dict[str, tuple[str, dict[str, Any]]] = {
    "delay": ("link-delay", {"delay_ms": 50.0, "jitter_ms": 10.0}),
    "loss": ("link-loss", {"loss": 0.2}),
    "duplicate": ("link-duplicate", {"duplicate": 0.2}),
    "reorder": ("link-reorder", {"reorder": 0.2, "window_ms": 50.0}),
}
#: jepsen-io/etcd's ``--nemesis-interval`` default, seconds between a package's operations.
DEFAULT_INTERVAL_S = 5.0
#: Bound on the operations of one package in one window (each is planned and journaled).
MAX_PACKAGE_OPS = 1000
#: A fault lasts at least this long (a stop drawn at the same instant as its start).
MIN_FAULT_S = 0.001


@dataclasses.dataclass(frozen=True)
class PackageOptions:
    """What the packages act on and how often (NemesisSpec's fields of the same names)."""

    window_s: float
    interval_s: float = DEFAULT_INTERVAL_S
    roles: tuple[str, ...] = ("etcd",)
    partition_roles: tuple[str, ...] = ("etcd",)
    partition_targets: tuple[str, ...] = grudges.PARTITION_SPECS
    kill_targets: tuple[str, ...] = tuple(NODE_SPECS)
    pause_targets: tuple[str, ...] = tuple(NODE_SPECS)
    clock_targets: tuple[str, ...] = tuple(NODE_SPECS)
    packet_targets: tuple[str, ...] = tuple(NODE_SPECS)
    packet_behaviors: tuple[str, ...] = tuple(PACKET_BEHAVIORS)
    flap_on_s: tuple[float, float] = (0.1, 3.0)
    flap_off_s: tuple[float, float] = (0.1, 3.0)


def stagger(rng: random.Random, interval_s: float, window_s: float) -> list[float]:
    """The instants of a staggered generator's operations inside ``[0, window_s)``: each
    gap uniform in ``[0, 2 * interval_s]`` (jepsen.generator ``stagger``), at most
    :data:`MAX_PACKAGE_OPS` of them."""
    instants: list[float] = []
    now = rng.uniform(0.0, 2 * interval_s)
    while now < window_s and len(instants) < MAX_PACKAGE_OPS:
        instants.append(round(now, 6))
        now += rng.uniform(0.0, 2 * interval_s)
    return instants


def _target(rng: random.Random, specs: Sequence[str], roles: Sequence[str]) -> str:
    return f"{NODE_SPECS[rng.choice(list(specs))]}:{rng.choice(list(roles))}"


def _entry(at_s: float, end_s: float, kind: str, target: str, params: dict[str, Any]) -> ScheduledFault:
    return ScheduledFault(round(at_s, 6), kind, target, round(max(end_s - at_s, MIN_FAULT_S), 6), dict(params))


def partition_package(rng: random.Random, options: PackageOptions) -> list[ScheduledFault]:
    """combined.clj ``partition-package``: start-partition / stop-partition, flip-flopped
    and staggered; the last start is stopped at the window's end."""
    instants = stagger(rng, options.interval_s, options.window_s) + [options.window_s]
    entries = []
    for start, stop in zip(instants[0:-1:2], instants[1::2]):
        spec, role = rng.choice(list(options.partition_targets)), rng.choice(list(options.partition_roles))
        entries.append(_entry(start, stop, "partition", f"role:{role}", {"spec": spec}))
    return entries


def db_package(rng: random.Random, options: PackageOptions, modes: Sequence[str]) -> list[ScheduledFault]:
    """combined.clj ``db-package``: ``gen/mix`` of the kill/start and pause/resume
    flip-flops (``modes``: "kill", "pause" or both), staggered; what is still down at the
    window's end is brought back then (the final generator)."""
    targets = {"kill": options.kill_targets, "pause": options.pause_targets}
    started: dict[str, tuple[float, str]] = {}  # mode -> (when, target) of its pending fault
    entries = []
    for now in stagger(rng, options.interval_s, options.window_s):
        mode = rng.choice(list(modes))
        if mode in started:
            at_s, target = started.pop(mode)
            entries.append(_entry(at_s, now, mode, target, {}))
        else:
            started[mode] = (now, _target(rng, targets[mode], options.roles))
    for mode, (at_s, target) in sorted(started.items()):
        entries.append(_entry(at_s, options.window_s, mode, target, {}))
    return entries


def clock_package(rng: random.Random, options: PackageOptions) -> list[ScheduledFault]:
    """combined.clj ``clock-package``: check-offsets, then a mix of reset, bump and strobe
    (nemesis/time.clj ``reset-gen-select``, ``bump-gen-select``, ``strobe-gen-select``),
    staggered; a bump lasts until the next reset or the window's end."""
    instants = stagger(rng, options.interval_s, options.window_s)[1:]  # the first: check-offsets
    bumps: list[tuple[float, str, float]] = []
    entries = []
    for now in instants:
        operation = rng.choice(["reset", "bump", "strobe"])
        if operation == "reset":
            entries += [_entry(at_s, now, "clock-jump", target, {"seconds": seconds}) for at_s, target, seconds in bumps]
            bumps = []
            continue
        target = _target(rng, options.clock_targets, options.roles)
        if operation == "bump":
            milliseconds = rng.choice([-1, 1]) * int(1.5 ** (6 + rng.uniform(0.0, 25.0)))
            bumps.append((now, target, milliseconds / 1000.0))
        else:
            delta_ms = float(int(2 ** (2 + rng.uniform(0.0, 16.0))))
            period_ms = float(max(1, int(2 ** rng.uniform(0.0, 10.0))))
            end_s = min(now + rng.uniform(0.0, 32.0), options.window_s)
            entries.append(_entry(now, end_s, "clock-strobe", target, {"delta_ms": delta_ms, "period_ms": period_ms}))
    entries += [_entry(at_s, options.window_s, "clock-jump", target, {"seconds": seconds}) for at_s, target, seconds in bumps]
    return entries


def packet_package(rng: random.Random, options: PackageOptions) -> list[ScheduledFault]:
    """combined.clj ``packet-package``: start-packet (a behaviour on a node spec) /
    stop-packet, flip-flopped and staggered."""
    instants = stagger(rng, options.interval_s, options.window_s) + [options.window_s]
    entries = []
    for start, stop in zip(instants[0:-1:2], instants[1::2]):
        target = _target(rng, options.packet_targets, options.roles)
        kind, params = PACKET_BEHAVIORS[rng.choice(list(options.packet_behaviors))]
        entries.append(_entry(start, stop, kind, target, params))
    return entries


def flap_package(rng: random.Random, options: PackageOptions) -> list[ScheduledFault]:
    """A flapping partition: a spec of ``partition_targets`` on for U(``flap_on_s``), off
    for U(``flap_off_s``), and again, from a staggered start to the window's end."""
    entries: list[ScheduledFault] = []
    now = rng.uniform(0.0, 2 * options.interval_s)
    while now < options.window_s and len(entries) < MAX_PACKAGE_OPS:
        end_s = min(now + rng.uniform(*options.flap_on_s), options.window_s)
        spec, role = rng.choice(list(options.partition_targets)), rng.choice(list(options.partition_roles))
        entries.append(_entry(now, end_s, "partition", f"role:{role}", {"spec": spec}))
        now = end_s + rng.uniform(*options.flap_off_s)
    return entries


def packages(rng: random.Random, faults: Sequence[str], options: PackageOptions) -> list[ScheduledFault]:
    """The composed schedule of the packages ``faults`` names (combined.clj
    ``nemesis-package``; jepsen-io/etcd's ``nemesis-package`` over ``--nemesis``), each
    drawn in :data:`PACKAGES` order from ``rng``, sorted by ``at_s``."""
    unknown = [name for name in faults if name not in PACKAGES]
    if unknown:
        raise FaultError(f"unknown nemesis package {unknown[0]!r}; known: {', '.join(PACKAGES)}")
    enabled = set(faults)
    entries: list[ScheduledFault] = []
    if "partition" in enabled:
        entries += partition_package(rng, options)
    modes = [mode for mode in ("pause", "kill") if mode in enabled]  # combined.clj: pause first
    if modes:
        entries += db_package(rng, options, modes)
    if "clock" in enabled:
        entries += clock_package(rng, options)
    if "packet" in enabled:
        entries += packet_package(rng, options)
    if "flap" in enabled:
        entries += flap_package(rng, options)
    return sorted(entries, key=lambda entry: entry.at_s)


def swarm_subset(rng: random.Random, names: Sequence[str]) -> list[str]:
    """A random non-empty subset of ``names`` in their order (swarm testing: each seed
    runs with only some of the features)."""
    if not names:
        return []
    chosen = set(grudges.nonempty_subset(list(dict.fromkeys(names)), rng))
    return [name for name in dict.fromkeys(names) if name in chosen]


@dataclasses.dataclass(frozen=True)
class NemesisDraw:
    """One seed's draw of a :class:`NemesisSpec`: the entries, and (under swarm) which of
    the spec's kinds and packages this seed uses."""

    entries: list[ScheduledFault]
    kinds: list[str]
    faults: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"kinds": list(self.kinds), "faults": list(self.faults)}


class NemesisSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A random fault schedule as data (module docstring): ``count`` faults of ``kinds``
    (names of :data:`NEMESIS_KINDS`) within ``window_s``, starting ``after_s`` into the
    fault phase, each lasting ``min_duration_s`` to ``max_duration_s``; and/or Jepsen's
    packages ``faults`` (names of :data:`PACKAGES`, staggered by ``interval_s``, acting on
    ``roles`` / ``partition_roles`` with the ``*_targets`` specs); ``swarm`` draws a
    random non-empty subset of the kinds and of the packages per seed. ``seed_offset``
    picks another generator for the same seed. Raises ValueError (one line) when invalid."""

    kinds: list[str] = []
    count: int = 6
    after_s: float = 0.0
    window_s: float = 60.0
    seed_offset: int = 0
    min_duration_s: float = 3.0
    max_duration_s: float = 15.0
    faults: list[str] = []
    interval_s: float = DEFAULT_INTERVAL_S
    roles: list[str] = msgspec.field(default_factory=lambda: ["etcd"])
    partition_roles: list[str] = msgspec.field(default_factory=lambda: ["etcd"])
    partition_targets: list[str] = msgspec.field(default_factory=lambda: list(grudges.PARTITION_SPECS))
    kill_targets: list[str] = msgspec.field(default_factory=lambda: list(NODE_SPECS))
    pause_targets: list[str] = msgspec.field(default_factory=lambda: list(NODE_SPECS))
    clock_targets: list[str] = msgspec.field(default_factory=lambda: list(NODE_SPECS))
    packet_targets: list[str] = msgspec.field(default_factory=lambda: list(NODE_SPECS))
    packet_behaviors: list[str] = msgspec.field(default_factory=lambda: list(PACKET_BEHAVIORS))
    flap_on_s: list[float] = msgspec.field(default_factory=lambda: [0.1, 3.0])
    flap_off_s: list[float] = msgspec.field(default_factory=lambda: [0.1, 3.0])
    swarm: bool = False

    def __post_init__(self) -> None:
        if not (math.isfinite(self.after_s) and 0 <= self.after_s <= 3600 and math.isfinite(self.window_s) and 0 < self.window_s <= 3600):
            raise ValueError(f"`after_s` and `window_s` must be finite, 0 <= after_s <= 3600 and 0 < window_s <= 3600; got {self.after_s}, {self.window_s}")
        if not self.kinds and not self.faults:
            raise ValueError(f"the nemesis needs `kinds` ({', '.join(sorted(NEMESIS_KINDS))}) or `faults` (Jepsen's packages: {', '.join(PACKAGES)})")
        for field, names, known in (
            ("faults", self.faults, PACKAGES),
            ("partition_targets", self.partition_targets, grudges.PARTITION_SPECS),
            ("kill_targets", self.kill_targets, tuple(NODE_SPECS)),
            ("pause_targets", self.pause_targets, tuple(NODE_SPECS)),
            ("clock_targets", self.clock_targets, tuple(NODE_SPECS)),
            ("packet_targets", self.packet_targets, tuple(NODE_SPECS)),
            ("packet_behaviors", self.packet_behaviors, tuple(PACKET_BEHAVIORS)),
        ):
            unknown = [name for name in names if name not in known]
            if unknown:
                raise ValueError(f"`{field}`: unknown {unknown[0]!r}; known: {', '.join(known)}")
            if not names and field != "faults":
                raise ValueError(f"`{field}` must name at least one of {', '.join(known)}")
        for field, roles in (("roles", self.roles), ("partition_roles", self.partition_roles)):
            if not roles or not all(isinstance(role, str) and role for role in roles):
                raise ValueError(f"`{field}` must list at least one role (e.g. etcd), got {roles!r}")
        if not (math.isfinite(self.interval_s) and 0.05 <= self.interval_s <= 3600):
            raise ValueError(f"`interval_s` must be between 0.05 and 3600 seconds, got {self.interval_s}")
        for field, bounds in (("flap_on_s", self.flap_on_s), ("flap_off_s", self.flap_off_s)):
            if len(bounds) != 2 or not all(math.isfinite(bound) for bound in bounds) or not 0.001 <= bounds[0] <= bounds[1] <= 3600:
                raise ValueError(f"`{field}` must be [low, high] seconds with 0.001 <= low <= high <= 3600, got {bounds!r}")
        if self.kinds:
            try:  # validate once with a throw-away generator (the same checks as the run's)
                generate(random.Random(0), kinds=self.kinds, count=self.count, window_s=self.window_s, nodes=["node"], min_duration_s=self.min_duration_s, max_duration_s=self.max_duration_s)
            except FaultError as error:
                raise ValueError(str(error)) from None

    @property
    def random_name(self) -> str:
        """The name of the world generator the schedule is drawn from."""
        return f"nemesis/{self.seed_offset}"

    def package_options(self) -> PackageOptions:
        return PackageOptions(
            window_s=self.window_s,
            interval_s=self.interval_s,
            roles=tuple(self.roles),
            partition_roles=tuple(self.partition_roles),
            partition_targets=tuple(self.partition_targets),
            kill_targets=tuple(self.kill_targets),
            pause_targets=tuple(self.pause_targets),
            clock_targets=tuple(self.clock_targets),
            packet_targets=tuple(self.packet_targets),
            packet_behaviors=tuple(self.packet_behaviors),
            flap_on_s=(self.flap_on_s[0], self.flap_on_s[1]),
            flap_off_s=(self.flap_off_s[0], self.flap_off_s[1]),
        )

    def draw(self, rng: random.Random, nodes: Sequence[str]) -> NemesisDraw:
        """This seed's schedule, drawn from ``rng`` (take it as
        ``world.random(spec.random_name)``): under ``swarm`` first the subsets of kinds and
        packages, then the kinds' faults, then the packages' (module docstring); ``at_s``
        counted from the start of the fault phase (``after_s`` added); ``nodes`` are what
        a ``swizzle`` clogs. Entries sorted by ``at_s``."""
        kinds = swarm_subset(rng, self.kinds) if self.swarm else list(self.kinds)
        faults = swarm_subset(rng, self.faults) if self.swarm else list(self.faults)
        entries: list[ScheduledFault] = []
        if kinds:
            entries += generate(rng, kinds=kinds, count=self.count, window_s=self.window_s, nodes=nodes, min_duration_s=self.min_duration_s, max_duration_s=self.max_duration_s)
        if faults:
            entries += packages(rng, faults, self.package_options())
        shifted = [dataclasses.replace(entry, at_s=round(entry.at_s + self.after_s, 6)) for entry in entries]
        return NemesisDraw(sorted(shifted, key=lambda entry: entry.at_s), kinds, faults)

    def schedule(self, rng: random.Random, nodes: Sequence[str]) -> list[ScheduledFault]:
        """The entries of :meth:`draw`."""
        return self.draw(rng, nodes).entries

    def targets(self) -> list[tuple[str, str, str, str, dict[str, Any]]]:
        """Every (field, spec, kind, target, params) the packages may fire, for checking
        them against a system's processes before the run. ``minority-third`` is left out:
        as in Jepsen, it is nobody on three processes or fewer, and the run skips it."""
        found: list[tuple[str, str, str, str, dict[str, Any]]] = []
        enabled = set(self.faults)
        if enabled & {"partition", "flap"}:
            found += [("partition_targets", spec, "partition", f"role:{role}", {"spec": spec}) for role in self.partition_roles for spec in self.partition_targets if spec != "minority-third"]
        for package, field, specs in (("kill", "kill_targets", self.kill_targets), ("pause", "pause_targets", self.pause_targets), ("clock", "clock_targets", self.clock_targets), ("packet", "packet_targets", self.packet_targets)):
            if package in enabled:
                kind = {"kill": "kill", "pause": "pause", "clock": "clock-jump", "packet": "link-delay"}[package]
                found += [(field, spec, kind, f"{NODE_SPECS[spec]}:{role}", {}) for role in self.roles for spec in specs if spec != "minority-third"]
        return found

    def fault_kinds(self) -> list[str]:
        """Every fault kind (faults/kinds.py) this spec may schedule, sorted."""
        used = {NEMESIS_KINDS[name][0] for name in self.kinds}
        enabled = set(self.faults)
        used |= {"partition"} if enabled & {"partition", "flap"} else set()
        used |= enabled & {"kill", "pause"}
        used |= {"clock-jump", "clock-strobe"} if "clock" in enabled else set()
        used |= {PACKET_BEHAVIORS[name][0] for name in self.packet_behaviors} if "packet" in enabled else set()
        return sorted(used)

    def describe(self) -> str:
        """One line for ``--dry-run`` and ``show``."""
        parts = []
        if self.kinds:
            parts.append(f"{self.count} fault(s) of {', '.join(self.kinds)}, each {self.min_duration_s:g}-{self.max_duration_s:g} s")
        if self.faults:
            parts.append(f"Jepsen packages {', '.join(self.faults)} every ~{self.interval_s:g} s on {', '.join(self.roles)}")
        swarm = " (swarm: a random subset per seed)" if self.swarm else ""
        return f"Random nemesis: {'; '.join(parts)}{swarm}, from {self.after_s:g} s for {self.window_s:g} s"

    def ends_at_s(self) -> float:
        """When the last fault of the schedule is healed, counted as ``schedule``'s ``at_s``."""
        return self.after_s + self.window_s

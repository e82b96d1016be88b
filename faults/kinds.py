"""Fault kinds: each is planned as data by a pure function and applied/healed by thin code.

``plan(kind, target, params, context, rng)`` resolves the target and computes everything
the fault will do (which processes, which grudge, which link profile) without touching the
world. ``apply(world, plan)`` does it; ``heal(world, plan, saved)`` undoes it and is
idempotent (healing twice, or healing a fault whose target already recovered, is fine).

Kinds (``params`` in brackets, with defaults):

- ``kill``          — SIGKILL the targets; heal restarts them from their disks.
- ``lossy-crash``   — kill with ``lose_unsynced_on_crash`` on: writes not yet fsynced are
  lost (a power cut, or a disk that acknowledges fsync falsely); heal restarts.
- ``pause``         — SIGSTOP / long GC pause; heal resumes (the process sees time jump).
- ``isolate``       — cut each target off from the rest of its role group, both ways
  [``scope``: "peers" (same role, default) or "all"].
- ``split``         — minority/majority partition of the targets' role group
  [``leader_in``: "minority" (default) | "majority" | "any"].
- ``bridge``        — two halves sharing one node, across the role group.
- ``clock-jump``    — step the targets' clocks [``seconds``: 60]; heal steps them back.
- ``clock-drift``   — run the targets' clocks fast or slow [``drift``: 0.01]; heal stops it.
- ``link-delay``    — every link to and from the targets [``delay_ms``: 100, ``jitter_ms``: 0].
- ``link-loss``     — [``loss``: 0.2]; ``link-duplicate`` [``duplicate``: 0.2];
  ``link-reorder``  [``reorder``: 0.5, ``window_ms``: 50].
- ``slow-disk``     — fsync latency of the targets' disks [``fsync_ms``: 500]; heal restores it.
- ``skip-fsync``    — the targets' disks acknowledge fsync without syncing (etcd's
  ``--unsafe-no-fsync``, or a disk that lies); combine with ``lossy-crash`` to lose
  acknowledged writes. Heal makes fsync honest again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faults import grudge as grudges
from faults.targets import ProcessInfo, resolve

if TYPE_CHECKING:
    from chaoskube.sim import World

Params = dict[str, Any]

# kind -> default params (also the list of known kinds and their parameter names)
KINDS: dict[str, Params] = {
    "kill": {},
    "lossy-crash": {},
    "pause": {},
    "isolate": {"scope": "peers"},
    "split": {"leader_in": "minority"},
    "bridge": {},
    "clock-jump": {"seconds": 60.0},
    "clock-drift": {"drift": 0.01},
    "link-delay": {"delay_ms": 100.0, "jitter_ms": 0.0},
    "link-loss": {"loss": 0.2},
    "link-duplicate": {"duplicate": 0.2},
    "link-reorder": {"reorder": 0.5, "window_ms": 50.0},
    "slow-disk": {"fsync_ms": 500.0},
    "skip-fsync": {},
}
PARTITIONS = frozenset({"isolate", "split", "bridge"})
# parameter -> allowed (inclusive) range; numbers not listed must be >= 0
RANGES: dict[str, tuple[float, float]] = {
    "loss": (0.0, 1.0),
    "duplicate": (0.0, 1.0),
    "reorder": (0.0, 1.0),
    "drift": (-0.5, 10.0),  # a clock cannot run backwards; beyond 10x is not a clock
    "seconds": (-1e9, 1e9),
}
CHOICES: dict[str, tuple[str, ...]] = {
    "scope": ("peers", "all"),
    "leader_in": ("minority", "majority", "any"),
}


class FaultError(ValueError):
    """A fault specification that cannot be planned (bad kind, parameter or target)."""


@dataclass(frozen=True)
class Context:
    """What planning may look at: the processes and who leads each role's group."""

    processes: Sequence[ProcessInfo]
    leader_of: Callable[[str], str | None]

    def group(self, role: str | None) -> list[str]:
        return sorted(process.name for process in self.processes if role is None or process.role == role)

    def role_of(self, name: str) -> str | None:
        for process in self.processes:
            if process.name == name:
                return process.role
        return None


@dataclass(frozen=True)
class Plan:
    kind: str
    target: str
    targets: tuple[str, ...]
    params: Params = field(default_factory=dict)
    grudge: dict[str, frozenset[str]] | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "kind": self.kind,
            "target": self.target,
            "targets": list(self.targets),
            "params": dict(sorted(self.params.items())),
        }
        if self.grudge is not None:
            payload["grudge"] = {dst: sorted(sources) for dst, sources in sorted(self.grudge.items())}
        if self.note:
            payload["note"] = self.note
        return payload


def validate(kind: str, params: Params) -> Params:
    """Known kind and parameter names, with defaults filled in."""
    if kind not in KINDS:
        raise FaultError(f"unknown fault kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}")
    defaults = KINDS[kind]
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        allowed = ", ".join(sorted(defaults)) or "none"
        raise FaultError(f"fault {kind!r} has no parameter {unknown[0]!r} (allowed: {allowed})")
    merged = {**defaults, **params}
    for name, value in merged.items():
        if isinstance(defaults[name], float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise FaultError(f"fault {kind!r}: parameter {name!r} must be a finite number, not {value!r}")
            low, high = RANGES.get(name, (0.0, math.inf))
            if not low <= value <= high:
                raise FaultError(f"fault {kind!r}: parameter {name!r} = {value} is out of range [{low:g}, {high:g}]")
        elif name in CHOICES and value not in CHOICES[name]:
            raise FaultError(f"fault {kind!r}: parameter {name!r} must be one of {', '.join(CHOICES[name])}, not {value!r}")
    return merged


def plan(kind: str, target: str, params: Params, context: Context, rng: random.Random) -> Plan:
    """Decide what the fault does, now, without touching the world."""
    params = validate(kind, params)
    targets = resolve(target, context.processes, rng, context.leader_of)
    if not targets:
        return Plan(kind, target, (), params, note=f"no process matches {target!r} now")
    if kind not in PARTITIONS:
        return Plan(kind, target, tuple(targets), params)
    role = context.role_of(targets[0])
    group = context.group(role)
    if kind == "isolate":
        everyone = context.group(None) if params["scope"] == "all" else group
        merged: dict[str, set[str]] = {}
        for node in targets:
            for dst, sources in grudges.isolate(node, everyone).items():
                merged.setdefault(dst, set()).update(sources)
        grudge = {dst: frozenset(sources) for dst, sources in sorted(merged.items())}
        return Plan(kind, target, tuple(targets), params, grudge)
    if kind == "split":
        if len(group) < 3:
            raise FaultError(f"split needs a group of at least 3 processes; {role!r} has {len(group)}")
        leader = context.leader_of(role) if role else None
        where = params["leader_in"]
        minority, majority = grudges.minority_majority(
            group,
            rng,
            include=leader if where == "minority" else None,
            exclude=leader if where == "majority" else None,
        )
        return Plan(kind, target, tuple(minority), params, grudges.complete([minority, majority]), note=f"majority {majority}")
    assert kind == "bridge"
    if len(group) < 3:
        raise FaultError(f"bridge needs a group of at least 3 processes; {role!r} has {len(group)}")
    return Plan(kind, target, (grudges.bridge_node(group),), params, grudges.bridge(group), note="target is the bridge node")


# -- applying and healing --------------------------------------------------------------------


def apply(world: World, plan: Plan) -> dict[str, Any]:
    """Do what the plan says. Returns what ``heal`` needs to undo it."""
    saved: dict[str, Any] = {}
    kind, params = plan.kind, plan.params
    processes = [world.process(name) for name in plan.targets]
    if plan.grudge is not None:
        merged = {dst: set(sources) for dst, sources in world.network.grudge.items()}
        for dst, sources in plan.grudge.items():
            merged.setdefault(dst, set()).update(sources)
        world.network.partition(merged)
    elif kind == "kill":
        for process in processes:
            process.kill()
    elif kind == "lossy-crash":
        for process in processes:
            saved[process.name] = process.disk.lose_unsynced_on_crash
            process.disk.lose_unsynced_on_crash = True
            process.kill()
    elif kind == "pause":
        for process in processes:
            process.pause()
    elif kind == "clock-jump":
        for process in processes:
            process.jump_clock(float(params["seconds"]))
    elif kind == "clock-drift":
        for process in processes:
            process.set_drift(float(params["drift"]))
    elif kind.startswith("link-"):
        base = world.network.default
        changes = {
            "link-delay": {"delay_s": params.get("delay_ms", 0) / 1000.0, "jitter_s": params.get("jitter_ms", 0) / 1000.0},
            "link-loss": {"loss": params.get("loss", 0.0)},
            "link-duplicate": {"duplicate": params.get("duplicate", 0.0)},
            "link-reorder": {"reorder": params.get("reorder", 0.0), "reorder_window_s": params.get("window_ms", 0) / 1000.0},
        }[kind]
        for process in processes:
            for src, dst in ((process.name, "*"), ("*", process.name)):
                saved[f"{src}->{dst}"] = world.network._links.get((src, dst))
                current = world.network._links.get((src, dst)) or base
                world.network.set_link(src, dst, current.with_(**changes))
    elif kind == "slow-disk":
        for process in processes:
            saved[process.name] = process.disk.fsync_latency_s
            process.disk.fsync_latency_s = float(params["fsync_ms"]) / 1000.0
    elif kind == "skip-fsync":
        for process in processes:
            saved[process.name] = process.disk.skip_fsync
            process.disk.skip_fsync = True
    else:  # pragma: no cover - validate() keeps this unreachable
        raise AssertionError(kind)
    return saved


def heal(world: World, plan: Plan, saved: dict[str, Any]) -> None:
    """Undo ``plan``. Idempotent."""
    kind = plan.kind
    processes = [world.process(name) for name in plan.targets]
    if plan.grudge is not None:
        current = world.network.grudge
        remaining = {dst: set(sources) - set(plan.grudge.get(dst, ())) for dst, sources in current.items()}
        remaining = {dst: sources for dst, sources in remaining.items() if sources}
        if remaining != {dst: set(sources) for dst, sources in current.items()}:
            world.network.partition(remaining)
    elif kind in ("kill", "lossy-crash"):
        for process in processes:
            if kind == "lossy-crash" and process.name in saved:
                process.disk.lose_unsynced_on_crash = saved[process.name]
            if not process.alive:
                process.restart()
    elif kind == "pause":
        for process in processes:
            process.resume()
    elif kind in ("clock-jump", "clock-drift"):
        for process in processes:
            if process.clock_offset != 0.0 or process._rate != 1.0:
                process.reset_clock()
    elif kind.startswith("link-"):
        for key, profile in sorted(saved.items()):
            src, dst = key.split("->")
            world.network.set_link(src, dst, profile)
    elif kind == "slow-disk":
        for process in processes:
            if process.name in saved:
                process.disk.fsync_latency_s = saved[process.name]
    elif kind == "skip-fsync":
        for process in processes:
            if process.name in saved:
                process.disk.skip_fsync = saved[process.name]

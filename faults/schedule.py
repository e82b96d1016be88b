"""Fault schedules: lists of (time, fault, duration), applied to a running world.

A schedule is data (``ScheduledFault``). The :class:`FaultInjector` turns each entry into a
plan when it falls due (targets such as ``leader:etcd`` are resolved then, not earlier),
applies it from a world callback — at a quiescent instant, so a pause freezes a process
between steps — and heals it ``duration_s`` later, or in :meth:`FaultInjector.heal_all`.
Kinds that are API requests (``drain``) run as tasks of the world, through the context's
``admin``; applying and healing stay synchronous.
Every apply and heal is journaled as ``{"type": "fault", "event": "apply"|"heal", ...}``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chaoskube.faults import kinds
from chaoskube.faults.kinds import Context, Plan

if TYPE_CHECKING:
    from chaoskube.sim import World


@dataclass(frozen=True)
class ScheduledFault:
    at_s: float
    kind: str
    target: str
    duration_s: float | None = None  # None: until the heal phase
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kinds.validate(self.kind, self.params)
        if not (math.isfinite(self.at_s) and self.at_s >= 0):
            raise kinds.FaultError(f"fault {self.kind!r}: at_s must be a finite number >= 0, not {self.at_s}")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise kinds.FaultError(f"fault {self.kind!r}: duration_s must be a finite number > 0, not {self.duration_s}")


@dataclass
class ActiveFault:
    id: int
    plan: Plan
    applied_at: float
    healed_at: float | None = None


class FaultInjector:
    def __init__(self, world: World, context: Callable[[], Context], rng: random.Random | None = None) -> None:
        self.world = world
        self.context = context
        self.rng = rng or world.random("faults")
        self.faults: list[ActiveFault] = []
        self._baseline = kinds.Baseline()
        self.skipped: list[str] = []  # scheduled faults that could not be applied, and why
        self.log = world.logger.bind(process="faults")

    def schedule(self, entries: Sequence[ScheduledFault], origin_s: float) -> None:
        """Apply each entry at ``origin_s + at_s`` of world time."""
        for entry in sorted(entries, key=lambda entry: entry.at_s):
            self.world.call_at(origin_s + entry.at_s, self._fire, entry)

    def _fire(self, entry: ScheduledFault) -> None:
        active = self.inject(entry.kind, entry.target, entry.params)
        if active is not None and entry.duration_s is not None:
            self.world.call_later(entry.duration_s, lambda _: self.heal(active))

    def inject(self, kind: str, target: str, params: dict[str, Any] | None = None) -> ActiveFault | None:
        """Plan and apply one fault now. Returns None when its target matched nothing."""
        fault_id = len(self.faults) + 1
        context = self.context()
        try:
            plan = kinds.plan(kind, target, dict(params or {}), context, self.rng)
        except kinds.FaultError as error:
            self.world.record("fault", event="skip", id=fault_id, kind=kind, target=target, note=str(error))
            self.skipped.append(f"{kind} {target}: {error}")
            return None
        if not plan.targets:
            self.world.record("fault", event="skip", id=fault_id, **plan.to_json())
            self.skipped.append(f"{kind} {target}: {plan.note}")
            return None
        self.world.record("fault", event="apply", id=fault_id, **plan.to_json())
        self.log.info("fault #{} {} on {} ({})", fault_id, plan.kind, ", ".join(plan.targets), plan.target)
        active = ActiveFault(fault_id, plan, self.world.now)
        self.faults.append(active)
        kinds.apply(self.world, plan)
        kinds.reconcile(self.world, [fault.plan for fault in self.active], self._baseline, context.admin)
        return active

    def heal(self, active: ActiveFault) -> None:
        if active.healed_at is not None:
            return
        active.healed_at = self.world.now
        still = [fault.plan for fault in self.active]
        kinds.heal(self.world, active.plan, still)
        kinds.reconcile(self.world, still, self._baseline)
        self.world.record("fault", event="heal", id=active.id, kind=active.plan.kind, targets=list(active.plan.targets))
        self.log.info("heal #{} {} on {}", active.id, active.plan.kind, ", ".join(active.plan.targets))

    def heal_all(self) -> None:
        """Heal every fault still in force, newest first. Idempotent."""
        for active in reversed(self.faults):
            self.heal(active)

    @property
    def active(self) -> list[ActiveFault]:
        return [fault for fault in self.faults if fault.healed_at is None]

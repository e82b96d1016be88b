"""Fault schedules: lists of (time, fault, duration), applied to a running world.

A schedule is data (``ScheduledFault``). The :class:`FaultInjector` turns each entry into a
plan when it falls due (targets such as ``leader:etcd`` are resolved then, not earlier),
applies it from a world callback — at a quiescent instant, so a pause freezes a process
between steps — and heals it ``duration_s`` later, or in :meth:`FaultInjector.heal_all`.
Kinds that are API requests (``drain``) run as tasks of the world, through the context's
``admin``; applying and healing stay synchronous.
Every apply and heal is journaled as ``{"type": "fault", "event": "apply"|"heal", ...}``.

An entry with ``when`` (faults/triggers.py) is armed at ``at_s`` instead of fired: each
journal event it matches, up to ``when.times``, fires its fault ``when.delay`` later;
events between a match and its fire do not count (the appends one step sends to every
follower are one occurrence, not several). A match is journaled ``{"type": "trigger", "event": "match", "entry", "match", "on":
{the matched event's type, time and process}, "target"}`` (``target`` resolved from an
``event:`` target), and the fault it fires carries ``trigger: <entry>`` in its ``apply``
(or ``skip``) record; ``entry`` numbers the schedule's triggered entries from 1, in order of
``at_s``. :meth:`FaultInjector.heal_all` disarms every trigger first, so the
heal phase sees no new fault, and a fire still pending in its delay does nothing.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chaoskube.faults import kinds, triggers
from chaoskube.faults.kinds import Context, Plan
from chaoskube.faults.targets import resolve
from chaoskube.faults.triggers import When

if TYPE_CHECKING:
    from chaoskube.sim import World


@dataclass(frozen=True)
class ScheduledFault:
    at_s: float
    kind: str
    target: str
    duration_s: float | None = None  # None: until the heal phase
    params: dict[str, Any] = field(default_factory=dict)
    when: When | None = None  # fire on a journal event (faults/triggers.py), armed at at_s

    def __post_init__(self) -> None:
        kinds.validate(self.kind, self.params)
        if self.when is not None:
            triggers.validate(self.when)
        triggers.check_target(self.target, self.when)
        if not (math.isfinite(self.at_s) and self.at_s >= 0):
            raise kinds.FaultError(f"fault {self.kind!r}: at_s must be a finite number >= 0, not {self.at_s}")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise kinds.FaultError(f"fault {self.kind!r}: duration_s must be a finite number > 0, not {self.duration_s}")


@dataclass
class _Armed:
    """A schedule entry with a trigger: how often it fired, and how to disarm it."""

    number: int
    entry: ScheduledFault
    fired: int = 0
    pending: bool = False  # matched, its fault not fired yet: further matches are ignored
    remove: Callable[[], None] | None = None


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
        self.triggers: list[_Armed] = []  # in schedule order; entry numbers count from 1
        self.disarmed = False

    def schedule(self, entries: Sequence[ScheduledFault], origin_s: float) -> None:
        """Apply each entry at ``origin_s + at_s`` of world time (arm it, for a ``when``)."""
        for entry in sorted(entries, key=lambda entry: entry.at_s):
            if entry.when is not None:
                armed = _Armed(len(self.triggers) + 1, entry)
                self.triggers.append(armed)
                self.world.call_at(origin_s + entry.at_s, self._arm, armed)
            else:
                self.world.call_at(origin_s + entry.at_s, self._fire, entry)

    def _fire(self, entry: ScheduledFault, target: str | None = None, trigger: int | None = None) -> None:
        active = self.inject(entry.kind, target or entry.target, entry.params, trigger=trigger)
        if active is not None and entry.duration_s is not None:
            self.world.call_later(entry.duration_s, lambda _: self.heal(active))

    # -- triggers -----------------------------------------------------------------------
    def _arm(self, armed: _Armed) -> None:
        if self.disarmed:
            return
        when = armed.entry.when
        assert when is not None
        armed.remove = self.world.on_record(when.type, lambda event: self._on_event(armed, event))
        self.world.record("trigger", event="arm", entry=armed.number, kind=armed.entry.kind, target=armed.entry.target, when=when.describe())

    def _disarm(self, armed: _Armed) -> None:
        if armed.remove is not None:
            armed.remove()
            armed.remove = None

    def _selector(self, selector: str, argument: str) -> list[str]:
        """The processes a trigger's selector value means now (faults/triggers.py)."""
        context = self.context()
        if selector == "follower":  # any non-leader of the role, not one drawn at random
            leader = context.leader_of(argument)
            return [p.name for p in context.processes if p.role == argument and p.name != leader]
        return resolve(f"{selector}:{argument}", context.processes, self.rng, context.leader_of)

    def _on_event(self, armed: _Armed, event: dict[str, Any]) -> None:
        entry = armed.entry
        when = entry.when
        assert when is not None
        if armed.pending or armed.fired >= when.times or not triggers.matches(when, event, self._selector):
            return
        armed.fired += 1
        armed.pending = True
        if armed.fired >= when.times:
            self._disarm(armed)
        target = entry.target
        if triggers.event_field(target) is not None:
            process = triggers.event_process(when.type, target, event)
            target = f"name:{process}" if process is not None else target
        shape = triggers.EVENTS[when.type]
        on = {"type": event["type"], "t": event["t"]}
        if shape.process_field is not None and shape.process_field in event:
            on["process"] = event[shape.process_field]
        self.world.record("trigger", event="match", entry=armed.number, match=armed.fired, on=on, target=target, delay_s=when.delay)
        self.world.call_later(when.delay, lambda _: self._fire_triggered(armed, target))

    def _fire_triggered(self, armed: _Armed, target: str) -> None:
        armed.pending = False
        if self.disarmed:  # the heal came first: a fault now would outlive the fault phase
            self.world.record("trigger", event="expired", entry=armed.number, target=target)
            return
        if triggers.event_field(target) is not None:  # the event named no process
            self.world.record("fault", event="skip", id=len(self.faults) + 1, kind=armed.entry.kind, target=target, trigger=armed.number, note="the matched event names no process")
            self.skipped.append(f"{armed.entry.kind} {target}: the matched event names no process")
            return
        self._fire(armed.entry, target, armed.number)

    def inject(self, kind: str, target: str, params: dict[str, Any] | None = None, *, trigger: int | None = None) -> ActiveFault | None:
        """Plan and apply one fault now. Returns None when its target matched nothing.
        ``trigger``: the number of the armed trigger that fired it (journaled)."""
        fault_id = len(self.faults) + 1
        context = self.context()
        cause = {"trigger": trigger} if trigger is not None else {}
        try:
            plan = kinds.plan(kind, target, dict(params or {}), context, self.rng)
        except kinds.FaultError as error:
            self.world.record("fault", event="skip", id=fault_id, kind=kind, target=target, note=str(error), **cause)
            self.skipped.append(f"{kind} {target}: {error}")
            return None
        if not plan.targets:
            self.world.record("fault", event="skip", id=fault_id, **plan.to_json(), **cause)
            self.skipped.append(f"{kind} {target}: {plan.note}")
            return None
        self.world.record("fault", event="apply", id=fault_id, **plan.to_json(), **cause)
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
        """Disarm every trigger, then heal every fault still in force, newest first.
        Idempotent."""
        if not self.disarmed:
            self.disarmed = True
            for armed in self.triggers:
                self._disarm(armed)
        for active in reversed(self.faults):
            self.heal(active)

    @property
    def active(self) -> list[ActiveFault]:
        return [fault for fault in self.faults if fault.healed_at is None]

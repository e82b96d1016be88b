"""Event-triggered faults: a schedule entry that fires ``when:`` a journal event matches.

A trigger (:class:`When`) names a journal event type (``World.record``'s first argument),
optionally the process the event is about (its *process field*, per type: ``member`` for
Raft events, ``src`` for ``send``, ``server`` for the API server's ...) and field values.
It is armed at the entry's ``at_s`` into the fault phase and disarmed at the heal; each
match (up to ``times``) fires the entry's fault ``delay_s`` (or ``delay_ms``) later, from a
world callback, so a fault triggered with no delay still lands at a quiescent point of the
same virtual instant -- after the step that recorded the event, before anything the event
sets in motion (a message it sent has not arrived: every link has a delay).

Values in ``process`` and ``fields`` are matched for equality, except a string of the form
``leader:ROLE`` (the current leader of ROLE), ``follower:ROLE`` (any other process of
ROLE), ``role:ROLE`` (any process of ROLE), ``zone:ZONE`` or ``name:NAME``: such a value
matches when the field names a process the selector means at the instant of the event
(docs/experiments.md, "Event-triggered faults").

A fault's target may name the matching event: ``event:process`` is the event's process,
``event:FIELD`` the process its field FIELD names (``event:dst`` for a message's
receiver). It is resolved at the match, and journaled with it.

Cost: ``World.record`` looks the event type up in a dict only while a trigger is armed
(``World.on_record``); everything else here runs only for events of an armed type.

This is how FoundationDB-, Jepsen- and Sieve-style tools aim faults at moments (Sieve:
"perturbing at the moments the controller's view changes", OSDI 2022; Jepsen's
``nemesis/combined.clj`` composes faults with generators that react to the history).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

#: What a trigger may compare a field with.
Scalar = str | int | float | bool | None

#: Selectors a matched value may use (a subset of faults/targets.py's: no random choice).
MATCH_SELECTORS = ("leader", "follower", "role", "zone", "name")

#: The target prefix that names the matching event's process.
EVENT_TARGET = "event:"

#: The most matches one trigger may fire (a bound on the faults one entry injects).
MAX_TIMES = 1000


@dataclass(frozen=True)
class EventShape:
    process_field: str | None  # the field naming the process the event is about
    fields: frozenset[str]


def _shape(process_field: str | None, *fields: str) -> EventShape:
    return EventShape(process_field, frozenset(fields))


#: The journal events a trigger may name, with their fields (``t`` and ``type`` are every
#: event's). Written from the components' ``world.record`` calls (chaoskube/sim/network.py,
#: process.py, etcd/server.py, etcd/client.py, apiserver/, client/, controllers/);
#: tests/faults/test_triggers.py checks the table against the journals of real runs.
EVENTS: dict[str, EventShape] = {
    # the runtime
    "send": _shape("src", "id", "src", "dst", "port", "kind"),
    "deliver": _shape("dst", "id", "src", "dst"),
    "drop": _shape("dst", "id", "src", "dst", "reason"),
    "process": _shape("process", "event", "process", "incarnation", "lost_writes"),
    "clock": _shape("process", "process", "jump_s", "drift", "offset_s"),
    "partition": _shape(None, "grudge"),
    # etcd
    "raft-role": _shape("member", "member", "role", "term", "lead", "last_index", "last_term"),
    "raft-apply": _shape("member", "member", "index", "term", "id", "revision", "error", "events"),
    "etcd-snapshot": _shape("member", "member", "event", "index", "revision"),
    "client-op": _shape("client", "client", "phase", "op_id", "f", "key", "value", "output", "reason", "request"),
    "watch-start": _shape("member", "watcher", "member", "start_revision", "ok", "reason"),
    "watch-event": _shape("member", "watcher", "member", "revision", "key", "event", "value"),
    "watch-break": _shape("member", "watcher", "member", "next_revision"),
    # kube-apiserver
    "watch-cache": _shape("server", "server", "event", "revision", "member", "key", "error", "reason", "client", "watch_id"),
    "eviction": _shape("server", "server", "id", "namespace", "pod", "pdb", "outcome", "reason"),
    "etcd-compaction": _shape("server", "server", "revision"),
    "api-request": _shape("server", "server", "id", "verb", "resource", "subresource", "namespace", "name", "code", "reason", "resource_version"),
    "api-op": _shape(None, "client", "phase", "op_id", "verb", "resource", "subresource", "namespace", "name", "server", "code", "reason", "message", "request", "resource_version", "uid", "precondition_rv", "precondition_uid"),
    # client-go (``name`` and ``client`` are "<process>/<component>...", not process names)
    "informer": _shape(None, "name", "resource", "event", "resource_version", "reason"),
    "watch-open": _shape("server", "name", "watch", "server", "resource", "namespace", "from_rv", "label_selector", "field_selector"),
    "leader": _shape("process", "event", "lease", "identity", "process"),
    # controllers, scheduler, kubelet (``controller`` names the controller, not its process)
    "replicaset-pods": _shape(None, "replicaset", "action", "want", "done", "controller", "pods"),
    "deployment-scale": _shape(None, "deployment", "rs", "from", "to", "reason", "controller"),
    "cronjob": _shape(None, "cronjob", "event", "controller", "job", "scheduled", "kind", "schedule"),
    "scheduled": _shape("scheduler", "pod", "node", "attempts", "scheduler"),
    "pod-phase": _shape("node", "pod", "node", "phase"),
    "node-health": _shape("node", "node", "ready", "reason"),
}


class TriggerError(ValueError):
    """A bad trigger. ``field`` is where, in the schedule entry (``when.type``,
    ``when.fields.kind``, ``target``)."""

    def __init__(self, field: str, message: str, *, under_when: bool = True) -> None:
        self.field = f"when.{field}" if under_when else field
        super().__init__(f"{self.field}: {message}")


class When(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """``when:`` of a schedule entry (module docstring)."""

    type: str
    process: str | None = None  # the event's process: a name or a selector (MATCH_SELECTORS)
    fields: dict[str, Scalar] = {}
    delay_s: float | None = None
    delay_ms: float | None = None
    times: int = 1

    @property
    def delay(self) -> float:
        """The delay in seconds (0 when none is given)."""
        if self.delay_ms is not None:
            return self.delay_ms / 1000.0
        return self.delay_s or 0.0

    def describe(self) -> str:
        """One line: ``when raft-role (process leader:etcd, role=leader), +1 ms, up to 2 times``."""
        terms = ([f"process {self.process}"] if self.process is not None else []) + [f"{name}={value}" for name, value in sorted(self.fields.items())]
        text = f"when {self.type}" + (f" ({', '.join(terms)})" if terms else "")
        if self.delay_ms is not None:
            text += f", +{self.delay_ms:g} ms"
        elif self.delay_s is not None:
            text += f", +{self.delay_s:g} s"
        return text + (f", up to {self.times} times" if self.times != 1 else ", once")


def validate(when: When) -> None:
    """Raise :class:`TriggerError` (one line naming the field) when ``when`` is bad."""
    shape = EVENTS.get(when.type)
    if shape is None:
        raise TriggerError("type", f"unknown event type {when.type!r}; known: {', '.join(sorted(EVENTS))}")
    if when.process is not None:
        if shape.process_field is None:
            raise TriggerError("process", f"a {when.type!r} event names no process; match a field instead ({', '.join(sorted(shape.fields))})")
        _check_value("process", when.process)
    for name, value in when.fields.items():
        if name not in shape.fields:
            raise TriggerError(f"fields.{name}", f"a {when.type!r} event has no field {name!r}; its fields: {', '.join(sorted(shape.fields))}")
        if isinstance(value, str):
            _check_value(f"fields.{name}", value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise TriggerError(f"fields.{name}", f"must be a finite number, not {value}")
    if when.delay_s is not None and when.delay_ms is not None:
        raise TriggerError("delay_ms", "give delay_s or delay_ms, not both")
    for name, value in (("delay_s", when.delay_s), ("delay_ms", when.delay_ms)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise TriggerError(name, f"must be a finite number >= 0, not {value}")
    if not 1 <= when.times <= MAX_TIMES:
        raise TriggerError("times", f"must be between 1 and {MAX_TIMES}, not {when.times}")


def _check_value(field: str, value: str) -> None:
    selector, colon, argument = value.partition(":")
    if colon and selector in MATCH_SELECTORS and not argument:
        raise TriggerError(field, f"{value!r}: the selector {selector}: needs an argument")


def event_field(target: str) -> str | None:
    """For a target ``event:FIELD``, FIELD; else None."""
    return target[len(EVENT_TARGET):] if target.startswith(EVENT_TARGET) else None


def check_target(target: str, when: When | None) -> None:
    """Raise TriggerError when an ``event:`` target cannot be resolved from ``when``'s events."""
    field = event_field(target)
    if field is None:
        return
    if when is None:
        raise TriggerError("target", f"{target!r} names a journal event's process: it needs a `when` trigger", under_when=False)
    shape = EVENTS[when.type]
    if field == "process":
        if shape.process_field is None:
            raise TriggerError("target", f"{target!r}: a {when.type!r} event names no process; use event:FIELD with one of {', '.join(sorted(shape.fields))}", under_when=False)
    elif field not in shape.fields:
        raise TriggerError("target", f"{target!r}: a {when.type!r} event has no field {field!r}; its fields: {', '.join(sorted(shape.fields))}", under_when=False)


def event_process(when_type: str, target: str, event: Mapping[str, Any]) -> str | None:
    """The process an ``event:`` target names in ``event`` (None: the event names none)."""
    field = event_field(target)
    assert field is not None, target
    if field == "process":
        field = EVENTS[when_type].process_field or ""
    value = event.get(field)
    return value if isinstance(value, str) and value else None


#: Resolves a selector value (``leader:etcd``) to the process names it means now.
Resolver = Callable[[str, str], "frozenset[str] | set[str] | list[str]"]


def _value_matches(expected: Scalar, actual: Any, resolve: Resolver) -> bool:
    if isinstance(expected, str):
        selector, colon, argument = expected.partition(":")
        if colon and selector in MATCH_SELECTORS and argument:
            return isinstance(actual, str) and actual in resolve(selector, argument)
        return actual == expected
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    return actual == expected


def matches(when: When, event: Mapping[str, Any], resolve: Resolver) -> bool:
    """Whether the journal event ``event`` (the fields ``World.record`` was given, with
    ``type``) matches ``when``. Pure given ``resolve``; plain comparisons come first, so a
    selector is resolved only for an event that matches everything else."""
    if event.get("type") != when.type:
        return False
    deferred: list[tuple[Scalar, Any]] = []
    checks: list[tuple[Scalar, Any]] = [(value, event.get(name, _MISSING)) for name, value in sorted(when.fields.items())]
    if when.process is not None:
        checks.append((when.process, event.get(EVENTS[when.type].process_field or "", _MISSING)))
    for expected, actual in checks:
        if actual is _MISSING:
            return False
        if isinstance(expected, str) and expected.partition(":")[0] in MATCH_SELECTORS and ":" in expected:
            deferred.append((expected, actual))
        elif not _value_matches(expected, actual, resolve):
            return False
    return all(_value_matches(expected, actual, resolve) for expected, actual in deferred)


_MISSING = object()


def trigger_problems(when: When, processes: Any, leader_roles: Any) -> list[tuple[str, str]]:
    """(field, problem) for each selector value in ``when`` that could never match one of
    ``processes`` (``ProcessInfo``: the processes an experiment builds, known before it
    runs): an unknown role, zone or process name, or ``leader:`` of a role that elects none."""
    names = {process.name for process in processes}
    roles = {process.role for process in processes if process.role}
    zones = {process.zone for process in processes if process.zone}
    values = ([("process", when.process)] if when.process is not None else []) + [(f"fields.{name}", value) for name, value in sorted(when.fields.items())]
    problems = []
    for field, value in values:
        if not isinstance(value, str):
            continue
        selector, colon, argument = value.partition(":")
        if not colon or selector not in MATCH_SELECTORS:
            continue
        if selector == "name" and argument not in names:
            problems.append((field, f"{value}: no process named {argument!r} in this experiment"))
        elif selector == "zone" and argument not in zones:
            problems.append((field, f"{value}: no zone {argument!r} in this experiment"))
        elif selector in ("role", "leader", "follower") and argument not in roles:
            problems.append((field, f"{value}: no process has role {argument!r} in this experiment (roles: {', '.join(sorted(roles)) or 'none'})"))
        elif selector in ("leader", "follower") and argument not in leader_roles:
            problems.append((field, f"{value}: role {argument!r} elects no leader this system can name (roles with a leader: {', '.join(sorted(leader_roles)) or 'none'})"))
    return problems

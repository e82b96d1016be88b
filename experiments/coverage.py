"""The coverage signal of a run, for coverage-guided ``explore --guided`` (campaign.py).

A run's *journal coverage* is the set of distinct ``(component, event kind, transition)``
tuples in its journal (:func:`journal_tuples`), the analogue of the edges a
coverage-guided fuzzer (AFL, libFuzzer) counts:

- **component**: the process or client the event is about, with its ordinal, uid and
  hash suffixes taken away (``etcd-2`` -> ``etcd``, ``node-1/kube-proxy`` ->
  ``node/kube-proxy``, ``kube-scheduler-2_dda2…`` -> ``kube-scheduler``, a query after
  ``?`` dropped);
- **event kind**: the event's ``type`` with the fields that say *what* happened and take
  their values from a closed vocabulary (``verb``, ``resource``, ``f``, ``phase``,
  ``code``, ``reason`` …), never ids, times, counters or free text; ``+fault`` when a fault
  was active at the time (the same event under a fault is another behaviour);
- **transition**: for an entity with a state (a Raft member's role, a process's life, a
  client operation's invoke -> ok/fail/info, a pod's phase, a node's readiness, a fault's
  apply -> heal …: :data:`STATES`), ``previous -> new`` of that entity; for any other event,
  ``after <kind>``: the kind of the previous event of the same concrete component (an
  edge between two events of one process, as AFL's edge is one between two blocks).

Bounded: every part comes from a finite vocabulary (abstracted names, closed field values,
strings with digits or spaces dropped or masked), and a run contributes at most
:data:`MAX_TUPLES` tuples (more are counted in ``dropped``, not kept). The network's
``send`` / ``deliver`` events are left out (ten thousands per run, all alike); ``drop`` is in
(why a message was lost).

Pure: :func:`journal_tuples` is a function of the events alone; the same journal gives the
same set, on any machine. :func:`read_journal_tuples` reads a journal file.

Python line coverage of ``chaoskube/`` (``explore --guided --line-coverage``) is the
optional second signal (:class:`LineCoverage`): coverage.py's C tracer on Python 3.11 (the
``coverage`` extra: ``pip install 'chaoskube[coverage]'``); on an interpreter with
``sys.monitoring`` (3.12+) coverage.py uses it itself (``COVERAGE_CORE=sysmon``). Lines are
measured only in the run after its boot (the shared part of a forked campaign is the same
for every run), as ``path:line`` strings relative to the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

#: At most this many tuples per run (the signal stays small whatever the journal holds).
MAX_TUPLES = 20_000
#: The network's per-message events: left out.
SKIPPED_TYPES = frozenset({"send", "deliver"})
_SKIP_MARKERS = (b'"type":"send"', b'"type":"deliver"')

#: Event type -> (the fields naming the entity whose state changes, the field holding the
#: state). An event of these types gives ``previous -> new`` of that entity.
STATES: dict[str, tuple[tuple[str, ...], str]] = {
    "raft-role": (("member",), "role"),
    "process": (("process",), "event"),
    "leader": (("lease", "process"), "event"),
    "client-op": (("client", "op_id"), "phase"),
    "api-op": (("client", "op_id"), "phase"),
    "api-read": (("client", "call"), "phase"),
    "pod-phase": (("pod",), "phase"),
    "node-health": (("node",), "ready"),
    "zone-state": (("zone",), "state"),
    "steady-state": ((), "valid"),
    "watch-cache": (("server",), "event"),
    "informer": (("name",), "event"),
    "kubelet": (("node",), "event"),
    "fault": (("id",), "event"),
    "phase": ((), "name"),
    "pdb-status": (("pdb",), "reason"),
}

#: Fields that say what kind of thing happened (appended to the type, when their value is
#: a closed-vocabulary token: see :func:`token`).
KIND_FIELDS = ("f", "verb", "resource", "subresource", "action", "kind", "event", "reason", "outcome", "cause", "code", "valid", "ok", "running", "phase", "role", "state", "ready", "policy", "rv_match")

#: Fields that name the component, first found wins (per type where a type names it
#: otherwise).
COMPONENT_FIELDS = ("member", "process", "client", "server", "controller", "scheduler", "watcher", "node", "dst")
COMPONENT_BY_TYPE = {"watch-recv": "name", "watch-open": "name", "informer": "name", "informer-cache": "name", "fault": "kind", "phase": "", "steady-state": "", "world": ""}

_DIGITS = re.compile(r"[0-9]+")
_SUFFIX = re.compile(r"_[0-9a-f-]{8,}$")  # a leader identity's uuid
_TOKEN = re.compile(r"^[A-Za-z0-9_.:/#+-]{1,48}$")


def component(name: Any) -> str:
    """A process or client name without what tells instances apart (module doc)."""
    if not isinstance(name, str) or not name:
        return "-"
    parts = []
    for part in name.partition("?")[0].split("/")[:3]:
        part = _SUFFIX.sub("", part)
        part = _DIGITS.sub("", part).strip("-_.") or "#"
        parts.append(part)
    return "/".join(parts)[:64]


def token(value: Any) -> str | None:
    """A field value as a closed-vocabulary token, or None when it is not one (free text,
    a number that counts something, a structure). Digits inside a token are masked,
    except for a whole number, which is kept only for ``code``-like small sets (the caller
    decides: see :func:`event_kind`)."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, str):
        if not _TOKEN.match(value):
            return None
        return _DIGITS.sub("#", value)
    return None


def event_kind(event: Mapping[str, Any]) -> str:
    """The event's type with its closed-vocabulary discriminators, e.g.
    ``api-op verb=create resource=pods phase=ok code=201``."""
    parts = [str(event.get("type", "?"))]
    for field in KIND_FIELDS:
        if field not in event:
            continue
        value = event[field]
        if field == "code" and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000:
            text = str(value)  # an HTTP / gRPC status: a small closed set
        else:
            text = token(value)
        if text is not None:
            parts.append(f"{field}={text}")
    return " ".join(parts)


def _component_of(event: Mapping[str, Any]) -> tuple[str, str]:
    """(the concrete component, its abstraction)."""
    kind = event.get("type")
    field = COMPONENT_BY_TYPE.get(kind) if isinstance(kind, str) else None
    if field is not None:
        value = event.get(field) if field else ""
        return (str(value), component(value) if field and field != "kind" else (token(value) or "-"))
    for name in COMPONENT_FIELDS:
        value = event.get(name)
        if isinstance(value, str) and value:
            return value, component(value)
    return "", "-"


def journal_tuples(events: Iterable[Mapping[str, Any]], *, max_tuples: int = MAX_TUPLES) -> tuple[frozenset[tuple[str, str, str]], int]:
    """The run's coverage: the set of ``(component, event kind, transition)`` tuples of
    ``events`` (module doc), and how many distinct tuples past ``max_tuples`` were left
    out. Network ``send`` / ``deliver`` events are skipped."""
    seen: set[tuple[str, str, str]] = set()
    dropped: set[tuple[str, str, str]] = set()
    states: dict[tuple[Any, ...], str] = {}
    previous: dict[str, str] = {}
    active: set[Any] = set()  # ids of the faults applied and not healed
    for event in events:
        kind_name = event.get("type")
        if not isinstance(kind_name, str) or kind_name in SKIPPED_TYPES:
            continue
        if kind_name == "fault":
            if event.get("event") == "apply":
                active.add(event.get("id"))
            elif event.get("event") == "heal":
                active.discard(event.get("id"))
        concrete, abstract = _component_of(event)
        kind = event_kind(event) + (" +fault" if active and kind_name != "fault" else "")
        state = STATES.get(kind_name)
        if state is not None:
            fields, state_field = state
            key = (kind_name, *(str(event.get(field)) for field in fields))
            new = token(event.get(state_field)) or "?"
            transition = f"{states.get(key, 'none')} -> {new}"
            states[key] = new
        else:
            transition = f"after {previous.get(concrete, 'start')}"
        previous[concrete] = kind_name
        item = (abstract, kind, transition)
        if item in seen:
            continue
        if len(seen) < max_tuples:
            seen.add(item)
        else:
            dropped.add(item)
    return frozenset(seen), len(dropped)


def iter_journal(path: str | Path) -> Iterable[dict[str, Any]]:
    """The events of a journal file, without the network's ``send`` / ``deliver`` (a line
    cut short by a killed process is skipped)."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return
    with file:
        for line in file:
            if any(marker in line for marker in _SKIP_MARKERS) or not line.strip():
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict):
                yield event


def read_journal_tuples(path: str | Path) -> tuple[frozenset[tuple[str, str, str]], int]:
    """:func:`journal_tuples` of a journal file."""
    return journal_tuples(iter_journal(path))


def tuple_text(item: tuple[str, str, str]) -> str:
    """One tuple as one line (``component | kind | transition``)."""
    return " | ".join(item)


def cumulative(sets: Iterable[Iterable[Any]]) -> list[int]:
    """After each run (in the order given), how many distinct items the runs so far
    reached: the campaign's coverage curve."""
    union: set[Any] = set()
    curve = []
    for items in sets:
        union.update(items)
        curve.append(len(union))
    return curve


# -- Python line coverage (optional) ----------------------------------------------------------


class CoverageMissing(RuntimeError):
    """``--line-coverage`` without coverage.py installed; ``str(error)`` is one line."""


def line_coverage_available() -> str | None:
    """None when line coverage can be measured here, else why not (one line)."""
    try:
        import coverage  # noqa: F401
    except ImportError:
        return "--line-coverage needs coverage.py: pip install 'chaoskube[coverage]' (or pip install coverage)"
    return None


class LineCoverage:
    """Python line coverage of the ``chaoskube`` package between :meth:`start` and
    :meth:`stop` (coverage.py; its C tracer on 3.11, ``sys.monitoring`` where the
    interpreter has it and ``COVERAGE_CORE=sysmon`` asks for it). No data file is written."""

    def __init__(self) -> None:
        problem = line_coverage_available()
        if problem is not None:
            raise CoverageMissing(problem)
        import coverage

        import chaoskube

        self.root = Path(chaoskube.__file__).resolve().parent
        self._coverage = coverage.Coverage(data_file=None, source=[str(self.root)], branch=False, config_file=False)

    def start(self) -> None:
        self._coverage.start()

    def stop(self) -> frozenset[str]:
        """Stop measuring; the lines run, as ``path:line`` relative to the package root's
        parent (``chaoskube/etcd/raft.py:123``)."""
        self._coverage.stop()
        data = self._coverage.get_data()
        lines: set[str] = set()
        base = self.root.parent
        for filename in data.measured_files():
            try:
                relative = Path(filename).resolve().relative_to(base).as_posix()
            except ValueError:
                relative = Path(filename).name
            for number in data.lines(filename) or ():
                lines.add(f"{relative}:{number}")
        return frozenset(lines)

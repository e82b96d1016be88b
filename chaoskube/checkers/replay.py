"""The journal, replayed: the API objects as the store held them at each revision, and the
helpers the cluster checkers judge them with.

Shared by every checker that reads the store (PDB-aware eviction, convergence, scheduling,
admission, ...); the checkers import this module, never each other. Pure functions of the
journal's events, like the checkers themselves.

- :class:`StoreReplay`: every ``raft-apply`` event carries the keys and values its revision
  wrote (the objects' JSON under ``/registry/...``, as the API server stores them);
  replayed once per revision (the first member to apply it gives the time), they give every
  tracked object as it was at each revision, and each :class:`Change`.
- object helpers on the stored JSON (camelCase, defaults omitted): labels, deletion,
  conditions, readiness (``podutil.IsPodReady``), label selectors
  (``metav1.LabelSelectorAsSelector``), IntOrString scaling
  (``intstr.GetScaledValueFromIntOrPercent``);
- :func:`request_invokes`: when the clients' API requests started (``api-op`` invokes).
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "Change",
    "REGISTRY_PREFIX",
    "StoreReplay",
    "condition_status",
    "is_deleting",
    "labels_of",
    "latest_before",
    "parse_key",
    "pod_ready",
    "RunHealth",
    "request_invokes",
    "run_health",
    "scaled_value",
    "selector_matches",
]

Event = dict[str, Any]
Obj = dict[str, Any]

REGISTRY_PREFIX = "/registry/"


# =========================================================================== the store, replayed
@dataclass(frozen=True, slots=True)
class Change:
    """One key written at one store revision: ``after`` is None for a delete, ``before``
    None for a create. Keys are ``namespace/name`` (``name`` for cluster-scoped kinds)."""

    t: float
    revision: int
    resource: str
    key: str
    before: Obj | None
    after: Obj | None

    def summary(self) -> dict[str, Any]:
        kind = "created" if self.before is None else "deleted" if self.after is None else "updated"
        return {"type": "store", "t": self.t, "revision": self.revision, "object": f"{self.resource}/{self.key}", "change": kind}


def parse_key(key: str) -> tuple[str, str] | None:
    """``/registry/<resource>/<namespace>/<name>`` -> (resource, "namespace/name");
    ``/registry/<resource>/<name>`` -> (resource, "name"); anything else -> None."""
    if not key.startswith(REGISTRY_PREFIX):
        return None
    parts = key[len(REGISTRY_PREFIX):].split("/")
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    if len(parts) == 3 and all(parts):
        return parts[0], f"{parts[1]}/{parts[2]}"
    return None


def _loads(value: str) -> Any:
    """``json.loads``, by orjson (about 5x faster, the same values for the JSON the API
    server stores); the standard library for what orjson refuses (NaN, integers past 64 bits)."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return json.loads(value)


class StoreReplay:
    """The API objects of ``resources`` as the store held them, replayed from ``raft-apply``
    events. Feed it every journal event in order (:meth:`apply` ignores other types); each
    revision is applied once, at the time of its first apply. Objects are the decoded JSON
    the API server stored (camelCase, defaults omitted): read, never change them."""

    def __init__(self, resources: Iterable[str]) -> None:
        self.resources = frozenset(resources)
        self._objects: dict[str, dict[str, Obj]] = {resource: {} for resource in sorted(self.resources)}
        self._seen: set[int] = set()
        self.revision = 0
        self.revisions_applied = 0

    def apply(self, event: Event) -> list[Change]:
        """The changes ``event`` makes to the tracked resources (none if it is not a
        ``raft-apply`` with events, or its revision was applied already)."""
        if event.get("type") != "raft-apply" or not event.get("events"):
            return []
        revision = event.get("revision")
        if revision is None or revision in self._seen:
            return []
        self._seen.add(revision)
        self.revision = max(self.revision, revision)
        self.revisions_applied += 1
        changes = []
        for entry in event["events"]:
            kind, key, value = entry[0], entry[1], entry[2]
            parsed = parse_key(key)
            if parsed is None or parsed[0] not in self.resources:
                continue
            resource, name = parsed
            table = self._objects[resource]
            before = table.get(name)
            if kind == "DELETE":
                after = None
                table.pop(name, None)
            else:
                after = _loads(value)
                table[name] = after
            changes.append(Change(event["t"], revision, resource, name, before, after))
        return changes

    def get(self, resource: str, key: str) -> Obj | None:
        return self._objects[resource].get(key)

    def objects(self, resource: str) -> Mapping[str, Obj]:
        """Every live object of ``resource`` by key (a live view: do not keep it across
        :meth:`apply`)."""
        return self._objects[resource]

    def in_namespace(self, resource: str, namespace: str) -> list[tuple[str, Obj]]:
        prefix = f"{namespace}/"
        return [(key, obj) for key, obj in self._objects[resource].items() if key.startswith(prefix)]


# =========================================================================== object helpers
def labels_of(obj: Obj) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def is_deleting(obj: Obj) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def condition_status(obj: Obj, kind: str) -> str | None:
    """The status of condition ``kind`` in ``obj.status.conditions`` (None if absent)."""
    for condition in obj.get("status", {}).get("conditions") or ():
        if condition.get("type") == kind:
            return condition.get("status")
    return None


def pod_ready(pod: Obj | None) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    return pod is not None and condition_status(pod, "Ready") == "True"


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector`` (apimachinery ``pkg/apis/meta/v1/helpers.go``):
    a missing selector selects nothing, an empty one everything; matchLabels and every
    matchExpressions requirement (In, NotIn, Exists, DoesNotExist) must hold."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or ():
        key, operator, values = requirement.get("key", ""), requirement.get("operator", ""), requirement.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an invalid selector selects nothing
    return True


def scaled_value(value: int | str, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int, or "N%" of ``total``."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text.endswith("%"):
        return int(text)
    scaled = int(text[:-1]) * total / 100
    return math.ceil(scaled) if round_up else math.floor(scaled)


def request_invokes(events: Iterable[Event]) -> tuple[dict[str, float], dict[tuple[str, ...], list[float]]]:
    """When requests started, from the clients' ``api-op`` records: (API request id ->
    invoke time of the operation that sent it; (verb, resource, subresource, namespace,
    name) -> sorted invoke times)."""
    invoked: dict[tuple[str, int], float] = {}
    by_request: dict[str, float] = {}
    by_target: dict[tuple[str, ...], list[float]] = {}
    for event in events:
        if event.get("type") != "api-op":
            continue
        op = (event.get("client", ""), event.get("op_id", 0))
        if event.get("phase") == "invoke":
            invoked[op] = event["t"]
            target = tuple(str(event.get(name) or "") for name in ("verb", "resource", "subresource", "namespace", "name"))
            by_target.setdefault(target, []).append(event["t"])
        elif event.get("request") and op in invoked:
            by_request[event["request"]] = invoked[op]
    for times in by_target.values():
        times.sort()
    return by_request, by_target


def latest_before(times: list[float] | None, t: float) -> float | None:
    if not times:
        return None
    index = bisect.bisect_right(times, t)
    return times[index - 1] if index else None


# =========================================================================== the run's health
#: Processes of the control plane proper (the store and the API) by name prefix.
CONTROL_PLANE_PREFIXES = ("etcd-", "kube-apiserver-")
CLOCK_KINDS = frozenset({"clock-jump", "clock-drift", "clock-skew", "clock-jump-node"})


@dataclass
class RunHealth:
    """When a component could be expected to act on time: intervals with a fault on the
    control plane or on the component (``faulty``), intervals during which one of the
    component's replicas acted as leader (``led``), and clock faults on it (``clocks``).
    Upper bounds on a leader-elected controller's reaction are judged only where it was
    :meth:`healthy`; lower bounds are voided where a clock fault touched it."""

    faulty: list[tuple[float, float]]
    led: list[tuple[float, float]]
    clocks: list[tuple[float, float]]

    def healthy(self, start: float, end: float) -> bool:
        touched = any(a < end and start < b for a, b in self.faulty)
        return not touched and any(a <= start and end <= b for a, b in self.led)

    def clock_fault(self, start: float, end: float) -> bool:
        return any(a < end and start < b for a, b in self.clocks)


def run_health(events: Iterable[Event], end_t: float, component: str) -> RunHealth:
    """:class:`RunHealth` of ``component`` ("kube-controller-manager", "kube-scheduler"):
    from ``fault`` apply/heal events (their ``targets``) and the ``leader`` start/stop events
    of the component's Lease."""
    faulty: list[tuple[float, float]] = []
    clocks: list[tuple[float, float]] = []
    led: list[tuple[float, float]] = []
    open_faults: dict[Any, tuple[float, list[str], str]] = {}
    leading: dict[str, float] = {}
    prefixes = (*CONTROL_PLANE_PREFIXES, f"{component}-")

    def close(start: float, targets: list[str], kind: str, end: float) -> None:
        if any(target.startswith(prefixes) for target in targets):
            faulty.append((start, end))
        if kind in CLOCK_KINDS and any(target.startswith(f"{component}-") for target in targets):
            clocks.append((start, end))

    for event in events:
        kind = event.get("type")
        if kind == "fault":
            if event.get("event") == "apply":
                open_faults[event.get("id")] = (event["t"], list(event.get("targets") or ()), event.get("kind", ""))
            elif event.get("event") == "heal" and event.get("id") in open_faults:
                close(*open_faults.pop(event["id"]), event["t"])
        elif kind == "leader" and str(event.get("lease", "")).endswith(component):
            process = event.get("process", "")
            if event.get("event") == "start":
                leading[process] = event["t"]
            elif event.get("event") == "stop" and process in leading:
                led.append((leading.pop(process), event["t"]))
    for start, targets, fault_kind in open_faults.values():
        close(start, targets, fault_kind, end_t)
    led.extend((start, end_t) for start in leading.values())
    return RunHealth(_merge(faulty), _merge(led), _merge(clocks))


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


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
import contextlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from chaoskube.api.manifests import ManifestError, from_json
from chaoskube.api.selectors import selectable_fields

__all__ = [
    "CONTROLLER_MANAGER_LEASE",
    "Change",
    "REGISTRY_PREFIX",
    "StoreHistory",
    "acting_intervals",
    "deadline_under_leader",
    "endpoint_ready_intervals",
    "failed_calls",
    "StoreReplay",
    "Version",
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
    "shared_decoding",
]

Event = dict[str, Any]
Obj = dict[str, Any]

REGISTRY_PREFIX = "/registry/"
#: The Lease the acting kube-controller-manager holds (its controllers act only while it does).
CONTROLLER_MANAGER_LEASE = "kube-system/kube-controller-manager"


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


#: While :func:`shared_decoding` is on: each stored value decoded so far, by its text.
_SHARED: dict[str, Any] | None = None


def _loads(value: str) -> Any:
    """``json.loads``, by orjson (about 5x faster, the same values for the JSON the API
    server stores); the standard library for what orjson refuses (NaN, integers past 64 bits).
    Inside :func:`shared_decoding`, each value is decoded once."""
    shared = _SHARED
    if shared is not None:
        found = shared.get(value)
        if found is not None:
            return found
    try:
        decoded = orjson.loads(value)
    except orjson.JSONDecodeError:
        decoded = json.loads(value)
    if shared is not None and decoded is not None:
        shared[value] = decoded
    return decoded


@contextlib.contextmanager
def shared_decoding() -> Iterator[None]:
    """While it lasts, every replay of the store shares one decoded object per stored value:
    a run's checkers and reports replay the same journal about ten times over (each value was
    decoded ~9 times; 0.4 s of a 50-node seed). The objects were already read-only (the
    module's contract: never change them); now they are also shared between checkers."""
    global _SHARED
    outer = _SHARED
    if outer is None:
        _SHARED = {}
    try:
        yield
    finally:
        _SHARED = outer


def first_applies(events: Iterable[Event]) -> Iterator[Event]:
    """The ``raft-apply`` events that carry changes, each store revision once (at its first
    apply: every member applies it, the first is when the store held it)."""
    seen: set[int] = set()
    for event in events:
        if event.get("type") != "raft-apply" or not event.get("events"):
            continue
        revision = event.get("revision")
        if revision is None or revision in seen:
            continue
        seen.add(revision)
        yield event


class StoreReplay:
    """The API objects of ``resources`` as the store held them, replayed from ``raft-apply``
    events. Feed it every journal event in order (:meth:`apply` ignores other types); each
    revision is applied once, at the time of its first apply. Objects are the decoded JSON
    the API server stored (camelCase, defaults omitted): read, never change them."""

    def __init__(self, resources: Iterable[str]) -> None:
        self.resources = frozenset(resources)
        self._objects: dict[str, dict[str, Obj]] = {resource: {} for resource in sorted(self.resources)}
        self._seen: set[int] = set()
        self._plain: set[str] = set()  # keys holding plain values, not API objects
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
                if before is None and key in self._plain:
                    self._plain.discard(key)
                    continue
                after = None
                table.pop(name, None)
            else:
                after = _loads(value)
                if not isinstance(after, dict):
                    # Not an API object: etcd's robustness Kubernetes traffic (the etcd
                    # system's ``traffic: kubernetes``) writes plain values under
                    # /registry/pods/. Not tracked, and neither is its deletion.
                    self._plain.add(key)
                    continue
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


def failed_calls(events: Iterable[Event], wanted: Callable[[Event], bool]) -> list[tuple[float, Event]]:
    """The clients' calls (``api-op`` records) that ended without success -- no answer in
    time, or an error -- among those whose invoke record ``wanted`` accepts: (invoke time,
    the record that ended it), in the order they ended."""
    invoked: dict[tuple[str, str], float] = {}
    failed: list[tuple[float, Event]] = []
    for event in events:
        if event.get("type") != "api-op":
            continue
        op = (str(event.get("client", "")), str(event.get("op_id")))
        if event.get("phase") == "invoke":
            if wanted(event):
                invoked[op] = event["t"]
        elif op in invoked:
            started = invoked.pop(op)
            if event.get("phase") != "ok":
                failed.append((started, event))
    return failed


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
        elif kind == "process" and event.get("event") in ("kill", "exit") and event.get("process") in leading:
            # a killed leader stops acting at once, with no ``leader`` stop record (as
            # acting_intervals has it); after its restart it is a candidate again, not a
            # leader (workload-churn-under-nemesis seed 5 with app-kinds.yaml: the killed
            # scheduler was still counted as leading until the other took the Lease 16 s later)
            led.append((leading.pop(event["process"]), event["t"]))
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


# =========================================================================== versions of objects
@dataclass(frozen=True, slots=True)
class Version:
    """One version of one object: written at store ``revision`` (first applied at ``t``);
    ``value`` is the stored JSON text, None for a delete."""

    revision: int
    t: float
    value: str | None

    @property
    def deleted(self) -> bool:
        return self.value is None


class StoreHistory:
    """Every version of every object under ``/registry/``, by (resource, key), and when
    each store revision was first applied (by any member): the store's own order, from the
    ``raft-apply`` events. Values are decoded on demand (:meth:`object`) and kept.

    ``revision_at(t)`` is the highest revision applied at or before ``t``: what a
    linearizable read invoked after ``t`` must at least see. Revisions that wrote no
    ``/registry/`` key (the API servers' compaction key) count too: they are revisions."""

    def __init__(self, events: Iterable[Event]) -> None:
        self._versions: dict[tuple[str, str], list[Version]] = {}
        self._times: list[float] = []
        self._revisions: list[int] = []
        self._decoded: dict[tuple[str, str, int], Obj] = {}
        self._typed: dict[tuple[str, str, int], Any] = {}
        self._selectable: dict[tuple[str, str, int], dict[str, str]] = {}
        self._changes: dict[str, tuple[list[int], list[float]]] = {}  # first_change_after's memo
        seen: set[int] = set()
        for event in events:
            if event.get("type") != "raft-apply" or not event.get("events"):
                continue
            revision = event.get("revision")
            if revision is None or revision in seen:
                continue
            seen.add(revision)
            if not self._revisions or revision > self._revisions[-1]:
                self._revisions.append(revision)
                self._times.append(event["t"])
            for entry in event["events"]:
                parsed = parse_key(entry[1])
                if parsed is None:
                    continue
                value = None if entry[0] == "DELETE" else entry[2]
                self._versions.setdefault(parsed, []).append(Version(revision, event["t"], value))
        self._numbers: dict[tuple[str, str], list[int]] = {}
        for key, versions in self._versions.items():
            versions.sort(key=lambda version: version.revision)
            self._numbers[key] = [version.revision for version in versions]

    @property
    def last_revision(self) -> int:
        return self._revisions[-1] if self._revisions else 0

    def __bool__(self) -> bool:
        return bool(self._revisions)

    def revision_at(self, t: float) -> int:
        index = bisect.bisect_right(self._times, t)
        return self._revisions[index - 1] if index else 0

    def revision_before(self, t: float) -> int:
        """The highest revision applied strictly before ``t``."""
        index = bisect.bisect_left(self._times, t)
        return self._revisions[index - 1] if index else 0

    def first_change_after(self, resource: str, revision: int) -> tuple[int, float] | None:
        """The first revision after ``revision`` that wrote a key of ``resource`` and when
        it was applied, or None: what a read of ``resource`` at ``revision`` missed first."""
        changes = self._changes.get(resource)
        if changes is None:
            found = sorted({(version.revision, version.t) for (res, _), versions in self._versions.items() if res == resource for version in versions})
            changes = self._changes[resource] = ([revision for revision, _ in found], [t for _, t in found])
        index = bisect.bisect_right(changes[0], revision)
        return (changes[0][index], changes[1][index]) if index < len(changes[0]) else None

    def versions(self, resource: str, key: str) -> list[Version]:
        return self._versions.get((resource, key), [])

    def keys(self, resource: str) -> list[str]:
        return sorted(key for kind, key in self._versions if kind == resource)

    def at(self, resource: str, key: str, revision: int) -> Version | None:
        """The version of the object at ``revision`` (None: it never existed by then;
        a version whose ``deleted`` is true: it was deleted then)."""
        versions = self._versions.get((resource, key))
        if not versions:
            return None
        index = bisect.bisect_right(self._numbers[(resource, key)], revision)
        return versions[index - 1] if index else None

    def live_at(self, resource: str, key: str, revision: int) -> Version | None:
        """The version of the object at ``revision`` if it existed then, else None."""
        version = self.at(resource, key, revision)
        return version if version is not None and not version.deleted else None

    def object(self, resource: str, key: str, version: Version) -> Obj | None:
        """The decoded object of ``version`` (None for a delete); decoded once."""
        if version.value is None:
            return None
        cache_key = (resource, key, version.revision)
        obj = self._decoded.get(cache_key)
        if obj is None:
            obj = self._decoded[cache_key] = _loads(version.value)
        return obj

    def typed(self, resource: str, key: str, version: Version) -> Any:
        """The typed API object of ``version`` (``from_json``), decoded once; None for a
        delete or a value that does not decode. Every watch filter of a run (a kubelet's
        per node, an informer's per selector) asks about the same versions."""
        if version.value is None:
            return None
        cache_key = (resource, key, version.revision)
        if cache_key in self._typed:
            return self._typed[cache_key]
        try:
            obj = from_json(version.value, key)
        except ManifestError:
            obj = None
        self._typed[cache_key] = obj
        return obj

    def selectable(self, resource: str, key: str, version: Version) -> dict[str, str]:
        """The fields :meth:`typed`'s object can be selected by (``selectable_fields``),
        computed once per version: every kubelet's watch filter (``spec.nodeName=...``)
        asks about every pod version. Call it only where :meth:`typed` is not None."""
        cache_key = (resource, key, version.revision)
        fields = self._selectable.get(cache_key)
        if fields is None:
            fields = self._selectable[cache_key] = selectable_fields(self.typed(resource, key, version))
        return fields

    def uid(self, resource: str, key: str, version: Version) -> str:
        obj = self.object(resource, key, version)
        return (obj or {}).get("metadata", {}).get("uid", "")


# =========================================================================== leaders and endpoints
def acting_intervals(events: Iterable[Event], lease: str) -> list[tuple[float, float]]:
    """When some process acted as leader of ``lease`` (``leader`` start / stop; a killed
    or exited process stops at once)."""
    acting: dict[str, float] = {}
    rows: list[tuple[float, float]] = []
    for event in events:
        kind = event["type"]
        if kind == "leader" and event.get("lease") == lease:
            process = event.get("process", "")
            if event.get("event") == "start":
                acting.setdefault(process, event["t"])
            elif event.get("event") == "stop" and process in acting:
                rows.append((acting.pop(process), event["t"]))
        elif kind == "process" and event.get("event") in ("kill", "exit") and event.get("process") in acting:
            rows.append((acting.pop(event["process"]), event["t"]))
    rows += [(start, math.inf) for start in acting.values()]
    return sorted(rows)


def deadline_under_leader(start: float, acting: list[tuple[float, float]], bound: float) -> float:
    """The first time a node unreachable since ``start`` has been so for ``bound`` seconds
    under one acting controller-manager leader (a new leader restarts the grace)."""
    moment = start
    for begin, end in acting:
        if end <= moment:
            continue
        moment = max(moment, begin)
        if moment + bound < end:
            return moment + bound
    return math.inf


def _target(endpoint: Obj, namespace: str) -> str:
    reference = endpoint.get("targetRef") or {}
    name = reference.get("name", "")
    return f"{reference.get('namespace') or namespace}/{name}" if name else ""


def endpoint_ready_intervals(events: Iterable[Event]) -> list[dict[str, Any]]:
    """Every interval during which an EndpointSlice of the store held a ready endpoint
    (``conditions.ready`` not false: unset means ready): {service, slice, address, node,
    pod (``namespace/name`` of its targetRef), from, to} (``to`` infinite while open)."""
    replay = StoreReplay(["endpointslices"])
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    done: list[dict[str, Any]] = []
    last_t = 0.0
    for event in events:
        for change in replay.apply(event):
            last_t = change.t
            now: dict[tuple[str, str], dict[str, Any]] = {}
            if change.after is not None:
                service = (change.after.get("metadata", {}).get("labels") or {}).get("kubernetes.io/service-name", "")
                namespace = change.key.partition("/")[0]
                for endpoint in change.after.get("endpoints") or ():
                    if (endpoint.get("conditions") or {}).get("ready") is False:
                        continue
                    for address in endpoint.get("addresses") or ():
                        now[(change.key, address)] = {
                            "service": f"{namespace}/{service}", "slice": change.key, "address": address,
                            "node": endpoint.get("nodeName", ""), "pod": _target(endpoint, namespace),
                        }
            for item, row in list(open_.items()):
                if item[0] == change.key and (item not in now or now[item]["node"] != row["node"]):
                    done.append(row | {"to": change.t})
                    del open_[item]
            for item, row in now.items():
                if item not in open_:
                    open_[item] = row | {"from": change.t}
    done += [row | {"to": math.inf} for row in open_.values()]
    return done

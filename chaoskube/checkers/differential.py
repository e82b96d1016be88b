"""The differential oracle (Sieve, OSDI 2022; Acto, SOSP 2023): the same experiment and seed
run again without faults -- the same workload actions at the same virtual times -- and the
two end states compared object by object. A controller that mishandles a fault often
leaves the cluster converged by every check but *different* from where it would have been:
a taint left on a node, a ReplicaSet too many, a Service's endpoints out of date.

What is compared: every object of the store at the end of each journal (``raft-apply``),
after this documented normalization (:func:`normalize`), which removes what differs
between any two runs of a healthy cluster and says nothing about its state:

- dropped: Leases and Events; objects being deleted (a termination in progress is not an
  end state); ``uid``, ``resourceVersion``, ``generation``, ``creationTimestamp``,
  ``managedFields``, deletion fields; every timestamp (``*Time``, ``*Timestamp``,
  ``startedAt``, ``finishedAt``, ``startTime``, ``timeAdded``, ``renewTime``); the
  ``reason`` and ``message`` of conditions and statuses; a Job's ``controller-uid`` labels
  and selector (the Job's uid); container ids, image ids,
  restart counts, last states; pod and host IPs; the node a pod runs on and an endpoint's
  node and zone (scheduling may place pods elsewhere after a fault); a Service's
  ``clusterIP``; owner references' uids;
- rewritten: ``status.observedGeneration`` becomes whether it equals the generation;
  conditions become (type, status) pairs; an object whose name was generated
  (``generateName``) is keyed by that prefix and its owners, and compared as a multiset
  with its siblings; an EndpointSlice is keyed by its Service and described by its ports
  and the counts of its endpoints by (ready, serving, terminating).

What faults excuse (:data:`EXCUSED`): nothing beyond the normalization above. A difference
left is a finding: the evidence lists the first differences (object, path, this run's value,
the reference's), and ``details`` all of them.

``check_differential(events, reference)`` answers False on a difference, unknown when
either journal has no store (nothing to compare), True when the end states are equal.
:func:`end_state` computes a journal's normalized end state once, so a campaign can keep
one per (experiment, seed, variants) and share it (``experiments/simulated.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from chaoskube.checkers.replay import REGISTRY_PREFIX, parse_key
from chaoskube.checkers.replay import _loads as loads
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["EXCUSED", "check_differential", "diff_states", "end_state", "normalize"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: Resources never compared: their contents are run-specific by nature.
IGNORED_RESOURCES = frozenset({"leases", "events"})
#: Keys dropped wherever they appear (module docstring).
DROPPED_KEYS = frozenset({
    "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds",
    "selfLink", "lastHeartbeatTime", "lastTransitionTime", "lastUpdateTime", "lastProbeTime", "lastScheduleTime", "timeAdded",
    "startedAt", "finishedAt", "startTime", "renewTime", "acquireTime", "holderIdentity", "leaseTransitions",
    "reason", "message", "containerID", "imageID", "restartCount", "lastState", "podIP", "podIPs", "hostIP", "hostIPs",
    "disruptedPods", "clusterIP", "clusterIPs",
    # the Job controller's selector and template labels carry the Job's uid (pkg/controller/job
    # and apis/batch: "batch.kubernetes.io/controller-uid", legacy "controller-uid"); found
    # when the workload generator (issue 16) first ran Jobs under this checker
    "controller-uid", "batch.kubernetes.io/controller-uid",
})
#: Differences the faults excuse beyond the normalization: none (module docstring).
EXCUSED: tuple[str, ...] = ()
MAX_EVIDENCE = 8


def end_state(events: Iterable[Event]) -> dict[str, Any]:
    """The normalized end state of a journal's store (``{}`` when it has none)."""
    store: dict[tuple[str, str], Obj] = {}
    seen: set[int] = set()
    for event in events:
        if event.get("type") != "raft-apply" or not event.get("events"):
            continue
        revision = event.get("revision")
        if revision is None or revision in seen:
            continue
        seen.add(revision)
        for change, key, value, *_ in event["events"]:
            if not key.startswith(REGISTRY_PREFIX):
                continue
            parsed = parse_key(key)
            if parsed is None:
                continue
            if change == "DELETE":
                store.pop(parsed, None)
            else:
                store[parsed] = loads(value)
    return normalize(store)


def normalize(store: Mapping[tuple[str, str], Obj]) -> dict[str, Any]:
    """``{"<resource>/<identity>": normalized object or sorted list of them}``."""
    names: dict[str, str] = {}  # uid -> normalized identity, for owner references
    for (resource, key), obj in store.items():
        names[obj.get("metadata", {}).get("uid", "")] = f"{resource}/{_identity(resource, key, obj, {})}"
    grouped: dict[str, list[str]] = {}
    for (resource, key), obj in sorted(store.items()):
        if resource in IGNORED_RESOURCES or obj.get("metadata", {}).get("deletionTimestamp"):
            continue
        identity = f"{resource}/{_identity(resource, key, obj, names)}"
        grouped.setdefault(identity, []).append(json.dumps(_scrub(resource, obj, names), sort_keys=True))
    result: dict[str, Any] = {}
    for identity, items in grouped.items():
        decoded = [json.loads(item) for item in sorted(items)]
        result[identity] = decoded[0] if len(decoded) == 1 and not identity.endswith("*") else decoded
    return result


def _identity(resource: str, key: str, obj: Obj, names: Mapping[str, str]) -> str:
    meta = obj.get("metadata", {})
    namespace = meta.get("namespace", "")
    prefix = f"{namespace}/" if namespace else ""
    if resource == "endpointslices":
        service = (meta.get("labels") or {}).get("kubernetes.io/service-name", "")
        return f"{prefix}{service}:{obj.get('addressType', '')}*"
    generated = meta.get("generateName")
    if generated and meta.get("name", "").startswith(generated):
        owners = ",".join(sorted(names.get(reference.get("uid", ""), reference.get("name", "")) for reference in meta.get("ownerReferences") or ()))
        return f"{prefix}{generated}[{owners}]*"
    return key


def _scrub(resource: str, obj: Obj, names: Mapping[str, str]) -> Any:
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata", {})
    for reference in meta.get("ownerReferences") or ():
        reference["name"] = names.get(reference.pop("uid", ""), reference.get("name", "")).rpartition("/")[2]
    if meta.get("generateName") and meta.get("name", "").startswith(meta["generateName"]):
        meta.pop("name")
    status = obj.get("status")
    if isinstance(status, dict) and "observedGeneration" in status:
        status["observedGeneration"] = status["observedGeneration"] == meta.get("generation")
    if resource == "pods":
        obj.get("spec", {}).pop("nodeName", None)
        for container in (status or {}).get("containerStatuses") or ():
            state = container.get("state") or {}
            container["state"] = sorted(state)
    if resource == "endpointslices":
        counts: dict[str, int] = {}
        for endpoint in obj.get("endpoints") or ():
            conditions = endpoint.get("conditions") or {}
            label = f"ready={conditions.get('ready')},serving={conditions.get('serving')},terminating={conditions.get('terminating')}"
            counts[label] = counts.get(label, 0) + 1
        obj["endpoints"] = dict(sorted(counts.items()))
    return _drop(obj)


def _drop(value: Any) -> Any:
    if isinstance(value, dict):
        cleaned = {key: _drop(item) for key, item in value.items() if key not in DROPPED_KEYS}
        if "conditions" in cleaned and isinstance(cleaned["conditions"], list):
            cleaned["conditions"] = sorted([[c.get("type"), c.get("status")] for c in cleaned["conditions"] if isinstance(c, dict)])
        return cleaned
    if isinstance(value, list):
        return [_drop(item) for item in value]
    return value


def diff_states(state: Mapping[str, Any], reference: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every difference: {object, path, run, reference} (``None`` for absent), sorted."""
    differences: list[dict[str, Any]] = []
    for identity in sorted(set(state) | set(reference)):
        if identity not in state:
            differences.append({"object": identity, "path": "", "run": None, "reference": "present"})
        elif identity not in reference:
            differences.append({"object": identity, "path": "", "run": "present", "reference": None})
        else:
            _diff(identity, "", state[identity], reference[identity], differences)
    return differences


def _diff(identity: str, path: str, mine: Any, theirs: Any, out: list[dict[str, Any]]) -> None:
    if mine == theirs:
        return
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in sorted(set(mine) | set(theirs)):
            _diff(identity, f"{path}.{key}", mine.get(key), theirs.get(key), out)
        return
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        for index, (left, right) in enumerate(zip(mine, theirs)):
            _diff(identity, f"{path}[{index}]", left, right, out)
        return
    out.append({"object": identity, "path": path or "(whole)", "run": _short(mine), "reference": _short(theirs)})


def _short(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True)
    return value if len(text) <= 300 else text[:300] + "..."


def check_differential(events: Sequence[Event], reference: Mapping[str, Any] | Sequence[Event]) -> Verdict:
    """Compare this run's normalized end state with the fault-free reference's (an end
    state from :func:`end_state`, or the reference's journal events)."""
    state = end_state(events)
    theirs = reference if isinstance(reference, Mapping) else end_state(reference)
    if not state or not theirs:
        return nothing_to_judge("no store to compare: " + ("this run" if not state else "the reference run") + " has no objects")
    differences = diff_states(state, theirs)
    details = {"objects": len(state), "reference_objects": len(theirs), "differences": differences[:100], "difference_count": len(differences)}
    failed_steps = [event for event in events if event.get("type") == "workload-step" and str(event.get("outcome", "")).startswith("error")]
    if differences and failed_steps:
        # The faults excuse it: a workload action the faults made fail (an API error under
        # an etcd or API-server outage; a step is not retried, as a one-shot kubectl is
        # not) means this run did not do what the fault-free one did.
        # Nothing comparable is left to judge, so a run whose faults were changed (a
        # guided mutant that took the API servers down through a step) leaves it out.
        step = failed_steps[0]
        return nothing_to_judge((
            f"{len(differences)} difference(s) from the fault-free run, not judged: the workload step {step.get('action')} {step.get('target')} "
            f"failed under the faults at t={float(step.get('t', 0.0)):.3f} ({step.get('outcome')}), so the runs did different things"
        ), (step,), details | {"failed_steps": len(failed_steps)})
    if differences:
        first = differences[0]
        return Verdict(
            False,
            f"{len(differences)} difference(s) from the fault-free run of the same seed; first: {first['object']}{first['path']} is {first['run']!r} here, {first['reference']!r} there",
            tuple(differences[:MAX_EVIDENCE]), details,
        )
    return Verdict(True, f"the end state ({len(state)} normalized objects) equals the fault-free run's", (), details)

"""Scheduling, judged from the journal: every binding the store shows respects what the
kube-scheduler's filters promise.

The Kubernetes behaviour checked (kube-scheduler's Filter plugins, ``pkg/scheduler/framework/
plugins/``; "Assigning Pods to Nodes", "Taints and Tolerations",
https://kubernetes.io/docs/concepts/scheduling-eviction/):

1. **Resources** (``noderesources/fit.go``, ``fitsRequest``): after a binding, the pods
   bound to the node and not terminated (phase neither Succeeded nor Failed — the
   scheduler's pod informer drops terminal pods, ``status.phase!=Succeeded,
   status.phase!=Failed``; pods being deleted still count) request no more of any resource
   the new pod requests than the node's ``status.allocatable``, and no more pods than its
   ``pods``. A pod's request is ``component-helpers/resource`` ``PodRequests``: the sum of
   its containers (and restartable init containers, "sidecars"), or the largest init
   container plus the sidecars started before it if that is more, plus ``overhead``; a
   container's request defaults to its limit (``SetDefaults_Pod``).
2. **Taints** (``tainttoleration``, ``nodeunschedulable``; ``Toleration.ToleratesTaint`` in
   ``k8s.io/api/core/v1/toleration.go``): every NoSchedule and NoExecute taint of the node is
   tolerated, and a node with ``spec.unschedulable`` is chosen only by a pod tolerating
   ``node.kubernetes.io/unschedulable:NoSchedule``.
3. **Node affinity** (``nodeaffinity``; ``component-helpers/scheduling/corev1/nodeaffinity``):
   ``spec.nodeSelector`` labels all match, and one of the
   ``requiredDuringSchedulingIgnoredDuringExecution`` terms matches (In, NotIn, Exists,
   DoesNotExist, Gt, Lt on labels; ``metadata.name`` in matchFields; an empty term matches
   nothing).
4. **One node per pod**: a pod (one uid) is never bound to a second node — the binding
   subresource refuses a pod that already has ``spec.nodeName``
   (``pkg/registry/core/pod/storage/storage.go`` ``assignPod``) — and the scheduler never
   reports (``scheduled`` events) the same pod on two nodes.

Reconstruction: the store (:class:`~chaoskube.checkers.eviction.StoreReplay`) gives every
Pod and Node at each revision; a *binding* is a revision at which a pod's ``spec.nodeName``
goes from empty to a node. Pods created with ``nodeName`` already set never went through
the scheduler: they count for resources but are not judged.

The scheduler decides on its informer cache, which trails the store. Resources need no
allowance for that (its cache holds its own assumed pods and frees a pod only after the
store did), but taints, ``unschedulable`` and labels do: a check 2-3 failure is a violation
only if it held in every state the node was in from ``cache_lag_s`` before the binding
request started (the scheduler's ``api-op`` invoke of ``pods/binding``; the binding's own
revision when not journaled) to the binding, and -- where the journal shows what the
binding scheduler's nodes informer received (its ``watch-recv`` and list records) -- its
cache held the node's state with the problem when the request started (a watch event
counts 0.5 s after it arrived: BUGGIFY may delay its handling that long). Shorter ones, and
ones the scheduler had not seen yet however long the store held them (a watch that ended
and resumed lags more than the 1 s; swarm seed 66), are listed as races in ``details``.

5. **Preemption decisions** (issue 19; "Pod Priority and Preemption",
   https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/;
   ``framework/preemption/preemption.go``): from the snapshot the scheduler recorded with
   each ``preemption-decision`` (the preemptor, the nodes whose filters failed only on what
   preemption frees, their pods and nominated pods, the PodDisruptionBudgets) the checker
   recomputes, independently, each node's minimal victims (remove every lower-priority
   pod; the pod must then fit; put them back most important first -- PDB-violating ones
   first -- keeping as victims those that do not fit) and upstream's choice
   (``pickOneNodeForPreemption``: fewest PDB violations, then the lowest highest-victim
   priority, the smallest sum of priorities, the fewest victims, the latest start of the
   highest-priority victims). The node preempted must be one of the best, with exactly its
   minimal victims. Resources (CPU, memory, pod count) are what is recomputed; other
   filters passed on those nodes by construction.
6. **No pod left Pending while it fits** (issue 19): a pod unbound, not being deleted, for
   which some node was feasible all along -- Ready, schedulable, taints tolerated, node
   selector and required affinity matched, its requests within the node's allocatable less
   what the pods bound there request -- for longer than :data:`PENDING_BOUND_S` (the
   scheduler's ``podMaxBackoffSeconds`` 10 s + ``podInitialBackoffSeconds`` 1 s + the
   cache lag + 3 s) is a finding, judged only while a kube-scheduler led and neither the
   store, the API nor the scheduler was under a fault. A node is feasible only if the pod's
   PersistentVolumeClaims allow it, as the scheduler's volume filters decide (issue 32: a
   StatefulSet replica whose zonal volume lives only in a cordoned node's zone was called
   feasible elsewhere): **VolumeBinding** (``plugins/volumebinding``, as
   :mod:`chaoskube.scheduler.volumebinding` models it) -- every claim exists and is not
   being deleted; a bound claim's volume exists and its ``spec.nodeAffinity`` accepts the
   node ("node(s) had volume node affinity conflict"); an unbound claim's class binds
   ``WaitForFirstConsumer`` (else "pod has unbound immediate PersistentVolumeClaims") and an
   available matching volume accepts the node or the class's provisioner can provision
   there (``allowedTopologies``) -- and **VolumeZone** (``plugins/volumezone``): a bound
   volume's ``topology.kubernetes.io/zone`` / ``region`` labels (and their
   ``failure-domain.beta`` forms; ``__``-separated value sets) are the node's ("node(s) had
   no available volume zone").

Answers False with the first violation in time (evidence: the binding's store change and
what it broke), unknown when the journal has no store history or no binding, True
otherwise. Limits: inter-pod (anti-)affinity, topology spread, ports, volumes (in items
1-4; item 6 models the volume filters) and pod-level ``resources`` are not judged; a binding to a node absent from the store is listed
as unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from chaoskube.checkers.replay import Change, StoreReplay, labels_of, pod_ready, request_invokes, run_health, selector_matches
from chaoskube.checkers.verdict import NOTHING_TO_JUDGE, Verdict, judged_nothing, nothing_to_judge

__all__ = [
    "PENDING_BOUND_S",
    "check_scheduling",
    "check_scheduling_decisions",
    "preemption_victims",
    "node_affinity_matches",
    "parse_quantity",
    "pod_requests",
    "scheduling_problems",
    "tolerates",
    "volume_problem",
]

Event = dict[str, Any]
Obj = dict[str, Any]

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
TERMINAL_PHASES = ("Succeeded", "Failed")

_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_SUFFIXES = {
    None: Fraction(1), "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}


def parse_quantity(value: Any) -> Fraction:
    """``resource.ParseQuantity`` (apimachinery ``pkg/api/resource/quantity.go``): decimal
    SI and binary suffixes and exponents, exactly. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, (int, float)):
        return Fraction(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, exponent, suffix = match.groups()
    result = Fraction(number) * _SUFFIXES[suffix]
    if exponent is not None:
        result *= Fraction(10) ** int(exponent)
    return result


def _container_requests(container: Obj) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})  # a request defaults to the limit
    merged.update(resources.get("requests") or {})
    return {name: parse_quantity(value) for name, value in merged.items()}


def _add(total: dict[str, Fraction], more: dict[str, Fraction]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Fraction(0)) + value


def pod_requests(pod: Obj) -> dict[str, Fraction]:
    """The pod's effective request per resource (module docstring, item 1)."""
    spec = pod.get("spec", {})
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        _add(total, _container_requests(container))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            continue
        for name, value in requests.items():
            running = value + sidecars.get(name, Fraction(0))
            init_peak[name] = max(init_peak.get(name, Fraction(0)), running)
    _add(total, sidecars)
    for name, value in init_peak.items():
        total[name] = max(total.get(name, Fraction(0)), value)
    _add(total, {name: parse_quantity(value) for name, value in (spec.get("overhead") or {}).items()})
    return total


# =========================================================================== filters
def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint``."""
    effect, key = toleration.get("effect", ""), toleration.get("key", "")
    if effect and effect != taint.get("effect", ""):
        return False
    if key and key != taint.get("key", ""):
        return False
    operator = toleration.get("operator", "")
    if operator in ("", "Equal"):
        return toleration.get("value", "") == taint.get("value", "")
    return operator == "Exists"


def _requirement_matches(requirement: Obj, values_by_key: dict[str, str]) -> bool:
    key, operator, values = requirement.get("key", ""), requirement.get("operator", ""), requirement.get("values") or []
    present = key in values_by_key
    value = values_by_key.get(key, "")
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def node_affinity_matches(pod: Obj, node_name: str, node: Obj) -> tuple[bool, bool]:
    """(nodeSelector matches, required node affinity matches)."""
    spec = pod.get("spec", {})
    labels = labels_of(node)
    selector_ok = all(labels.get(key) == value for key, value in (spec.get("nodeSelector") or {}).items())
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return selector_ok, True
    fields = {"metadata.name": node_name}
    for term in required.get("nodeSelectorTerms") or ():
        expressions, match_fields = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not expressions and not match_fields:
            continue  # an empty term matches nothing
        if all(_requirement_matches(r, labels) for r in expressions) and all(_requirement_matches(r, fields) for r in match_fields):
            return selector_ok, True
    return selector_ok, False


def scheduling_problems(pod: Obj, node_name: str, node: Obj) -> frozenset[str]:
    """What of items 2-3 binding ``pod`` to ``node`` would break, as short descriptions."""
    problems = set()
    tolerations = pod.get("spec", {}).get("tolerations") or []
    node_spec = node.get("spec", {})
    for taint in node_spec.get("taints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(toleration, taint) for toleration in tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            problems.add(f"untolerated taint {taint.get('key', '')}{value}:{taint.get('effect')}")
    if node_spec.get("unschedulable"):
        cordon = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
        if not any(tolerates(toleration, cordon) for toleration in tolerations):
            problems.add("node unschedulable (cordoned)")
    selector_ok, affinity_ok = node_affinity_matches(pod, node_name, node)
    if not selector_ok:
        problems.add("nodeSelector does not match")
    if not affinity_ok:
        problems.add("required node affinity does not match")
    return frozenset(problems)


# =========================================================================== the checker
@dataclass(frozen=True, slots=True)
class _Binding:
    change: Change
    node: str
    started_t: float
    client: str = ""  # the scheduler's client that sent it ("kube-scheduler-1/scheduler")


def _pods_on(store: StoreReplay, node: str) -> list[tuple[str, Obj]]:
    return sorted(
        (key, pod) for key, pod in store.objects("pods").items()
        if pod.get("spec", {}).get("nodeName") == node and pod.get("status", {}).get("phase") not in TERMINAL_PHASES
    )


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _over_allocatable(store: StoreReplay, binding: _Binding) -> dict[str, Any] | None:
    node = store.get("nodes", binding.node)
    assert node is not None
    pod = binding.change.after
    assert pod is not None
    allocatable = node.get("status", {}).get("allocatable") or {}
    pods = _pods_on(store, binding.node)
    wanted = {name for name, value in pod_requests(pod).items() if value > 0}
    if len(pods) > parse_quantity(allocatable.get("pods", 0)):
        return {"node": binding.node, "resource": "pods", "requested": str(len(pods)), "allocatable": str(allocatable.get("pods", 0)), "pods": [key for key, _ in pods]}
    for name in sorted(wanted):
        requested = sum((pod_requests(other).get(name, Fraction(0)) for _, other in pods), Fraction(0))
        have = parse_quantity(allocatable.get(name, 0))
        if requested > have:
            return {"node": binding.node, "resource": name, "requested": _fraction_text(requested), "allocatable": str(allocatable.get(name, 0)), "pods": [key for key, _ in pods]}
    return None


#: How long after a watch event was received an informer may still be handling it
#: (BUGGIFY's ``informer.watch-event`` delays a batch up to 0.5 s).
EVENT_HANDLING_S = 0.5


class _NodeObservations:
    """When each scheduler client's nodes informer received each node's versions: its
    ``watch-recv`` events (``<client>/nodes``) and its lists (``informer`` synced/relist,
    which hold every node at the list's resourceVersion)."""

    def __init__(self) -> None:
        self._events: dict[tuple[str, str], list[tuple[int, float]]] = {}  # (client, node) -> (rv, t)
        self._lists: dict[str, list[tuple[int, float]]] = {}  # client -> (rv, t)

    def add(self, event: Event) -> None:
        kind = event.get("type")
        if kind not in ("watch-recv", "informer"):
            return
        name = str(event.get("name", ""))
        if not name.endswith("/nodes"):
            return
        client = name[: -len("/nodes")]
        if kind == "informer":
            if event.get("event") in ("synced", "relist") and str(event.get("resource_version") or "").isdigit():
                self._lists.setdefault(client, []).append((int(event["resource_version"]), event["t"]))
            return
        for entry in event.get("events") or ():
            if len(entry) >= 3 and str(entry[2]).isdigit():
                self._events.setdefault((client, str(entry[1])), []).append((int(entry[2]), event["t"]))

    def knows(self, client: str) -> bool:
        return bool(client) and client in self._lists

    def first_at_or_after(self, client: str, node: str, revision: int) -> float | None:
        """When ``client``'s cache first held ``node`` at ``revision`` or later (None:
        never): a list fills it at once; a watch event is handled up to
        :data:`EVENT_HANDLING_S` after it was received (BUGGIFY's ``informer.watch-event``)."""
        times = [t + EVENT_HANDLING_S for rv, t in self._events.get((client, node), ()) if rv >= revision]
        times += [t for rv, t in self._lists.get(client, ()) if rv >= revision]
        return min(times, default=None)


def _problem_since(history: list[tuple[float, Obj | None]], revisions: list[int], pod: Obj, node_name: str, problems: frozenset[str], bind_t: float) -> int | None:
    """The store revision from which ``problems`` held without a break up to ``bind_t``."""
    since = None
    for (t, obj), revision in zip(history, revisions, strict=True):
        if t > bind_t:
            break
        if obj is not None and problems <= scheduling_problems(pod, node_name, obj):
            since = revision if since is None else since
        else:
            since = None
    return since


def _lasting_problems(history: list[tuple[float, Obj | None]], pod: Obj, node_name: str, start_t: float, bind_t: float) -> frozenset[str]:
    """The problems that held in every state the node was in during [start_t, bind_t]."""
    states = []
    before = [obj for t, obj in history if t <= start_t]
    if before and before[-1] is not None:
        states.append(before[-1])
    states.extend(obj for t, obj in history if start_t < t <= bind_t and obj is not None)
    if not states:
        return frozenset()
    lasting = scheduling_problems(pod, node_name, states[0])
    for state in states[1:]:
        lasting &= scheduling_problems(pod, node_name, state)
    return lasting


def check_scheduling(events: Iterable[Event], *, cache_lag_s: float = 1.0) -> Verdict:
    """Judge every binding of a cluster's journal (module docstring)."""
    assert cache_lag_s >= 0
    events = list(events)
    by_request, _ = request_invokes(events)
    bind_started: dict[int, tuple[float, str]] = {}
    seen = _NodeObservations()
    for event in events:
        if event.get("type") == "api-request" and event.get("subresource") == "binding" and event.get("resource_version") and event.get("id") in by_request:
            bind_started[int(event["resource_version"])] = (by_request[event["id"]], "/".join(str(event["id"]).split("/")[:-2]))
        seen.add(event)
    store = StoreReplay(("pods", "nodes"))
    node_history: dict[str, list[tuple[float, Obj | None]]] = {}
    node_revisions: dict[str, list[int]] = {}
    bindings: list[_Binding] = []
    races: list[dict[str, Any]] = []
    unchecked: list[dict[str, Any]] = []
    direct = 0
    reported: dict[str, tuple[str, str, Event]] = {}  # pod key -> (node, uid, scheduled event)
    for event in events:
        if event.get("type") == "scheduled":
            verdict = _check_reported(event, store, reported)
            if verdict is not None:
                return _details(verdict, bindings, races, unchecked, direct)
            continue
        for change in store.apply(event):
            if change.resource == "nodes":
                node_history.setdefault(change.key, []).append((change.t, change.after))
                node_revisions.setdefault(change.key, []).append(change.revision)
                continue
            before_node = (change.before or {}).get("spec", {}).get("nodeName", "")
            after_node = (change.after or {}).get("spec", {}).get("nodeName", "")
            if before_node and after_node and before_node != after_node:
                return _details(_bound_twice(change, before_node, after_node), bindings, races, unchecked, direct)
            if before_node or not after_node:
                continue
            if change.before is None:
                direct += 1  # created bound: never went through the scheduler
                continue
            started, client = bind_started.get(change.revision, (change.t, ""))
            binding = _Binding(change, after_node, started, client)
            bindings.append(binding)
            verdict = _judge_binding(binding, store, node_history, cache_lag_s, races, unchecked, seen, node_revisions)
            if verdict is not None:
                return _details(verdict, bindings, races, unchecked, direct)
    if not store.revisions_applied:
        return Verdict(None, "the journal has no store history (raft-apply events): bindings cannot be reconstructed")
    decisions = check_scheduling_decisions(events)
    if decisions.valid is False:
        verdict = _details(decisions, bindings, races, unchecked, direct)
        return Verdict(False, decisions.reason, decisions.evidence, {**verdict.details, **decisions.details})
    if not bindings:
        return _details(nothing_to_judge("no pod was bound by a scheduler in the journal"), bindings, races, unchecked, direct)
    nodes = len({binding.node for binding in bindings})
    verdict = _details(
        Verdict(True, f"{len(bindings)} binding(s) on {nodes} node(s): within allocatable, taints tolerated, node affinity met, no pod bound twice"
                      f" ({len(races)} race(s) within the {cache_lag_s} s cache lag, {len(unchecked)} unchecked); {decisions.reason}"),
        bindings, races, unchecked, direct,
    )
    return Verdict(True, verdict.reason, details={**verdict.details, **decisions.details})


def _judge_binding(
    binding: _Binding, store: StoreReplay, node_history: dict[str, list[tuple[float, Obj | None]]], cache_lag_s: float,
    races: list[dict[str, Any]], unchecked: list[dict[str, Any]],
    seen: _NodeObservations | None = None, node_revisions: dict[str, list[int]] | None = None,
) -> Verdict | None:
    change = binding.change
    pod = change.after
    assert pod is not None
    node = store.get("nodes", binding.node)
    if node is None:
        unchecked.append({**change.summary(), "pod": change.key, "node": binding.node, "why": "the node is not in the store"})
        return None
    over = _over_allocatable(store, binding)
    if over is not None:
        return Verdict(
            False,
            f"binding {change.key} to {binding.node} at t={change.t:.3f} puts {over['requested']} {over['resource']} on a node with {over['allocatable']} allocatable",
            ({**change.summary(), "pod": change.key, "node": binding.node}, over),
        )
    now = scheduling_problems(pod, binding.node, node)
    if not now:
        return None
    start_t = binding.started_t - cache_lag_s
    lasting = _lasting_problems(node_history.get(binding.node, []), pod, binding.node, start_t, change.t)
    if not lasting:
        races.append({**change.summary(), "pod": change.key, "node": binding.node, "problems": sorted(now)})
        return None
    if seen is not None and node_revisions is not None and seen.knows(binding.client):
        # The scheduler decides on its informer's cache: a problem its cache did not hold
        # yet when the request started is a race however long the store held it (its
        # watch may have ended and resumed, BUGGIFY may have delayed it: swarm seed 66).
        since = _problem_since(node_history.get(binding.node, []), node_revisions.get(binding.node, []), pod, binding.node, lasting, change.t)
        received = seen.first_at_or_after(binding.client, binding.node, since) if since is not None else None
        if received is None or received > binding.started_t:
            races.append({**change.summary(), "pod": change.key, "node": binding.node, "problems": sorted(lasting), "received_by_scheduler": received})
            return None
    changed_at = max((t for t, _ in node_history.get(binding.node, []) if t <= start_t), default=None)
    return Verdict(
        False,
        f"binding {change.key} to {binding.node} at t={change.t:.3f}: {', '.join(sorted(lasting))}"
        f" (so since t={start_t:.3f} at least, {cache_lag_s} s before the binding request)",
        ({**change.summary(), "pod": change.key, "node": binding.node},
         {"node": binding.node, "problems": sorted(lasting), "node_state_since": changed_at,
          "taints": node.get("spec", {}).get("taints") or [], "unschedulable": bool(node.get("spec", {}).get("unschedulable")),
          "tolerations": pod.get("spec", {}).get("tolerations") or []}),
    )


def _bound_twice(change: Change, first: str, second: str) -> Verdict:
    return Verdict(
        False,
        f"pod {change.key} was bound to {first}, then to {second} at t={change.t:.3f} (revision {change.revision})",
        ({**change.summary(), "pod": change.key, "from_node": first, "to_node": second},),
    )


def _check_reported(event: Event, store: StoreReplay, reported: dict[str, tuple[str, str, Event]]) -> Verdict | None:
    """Two ``scheduled`` reports of one pod (same uid in the store) on different nodes."""
    key, node = event.get("pod", ""), event.get("node", "")
    current = store.get("pods", key)
    uid = (current or {}).get("metadata", {}).get("uid", "")
    previous = reported.get(key)
    reported[key] = (node, uid, event)
    if previous is None or not uid or previous[1] != uid or previous[0] == node:
        return None
    return Verdict(False, f"the scheduler reported {key} bound to {previous[0]}, then to {node} at t={event['t']:.3f} (one pod, uid {uid})", (previous[2], event))


def _details(verdict: Verdict, bindings: list[_Binding], races: list[dict[str, Any]], unchecked: list[dict[str, Any]], direct: int) -> Verdict:
    per_node: dict[str, int] = {}
    for binding in bindings:
        per_node[binding.node] = per_node.get(binding.node, 0) + 1
    details = {"bindings": len(bindings), "bindings_per_node": dict(sorted(per_node.items())), "created_bound": direct, "races": races, "unchecked": unchecked}
    return Verdict(verdict.valid, verdict.reason, verdict.evidence, details | ({NOTHING_TO_JUDGE: True} if judged_nothing(verdict) else {}))


# =========================================================================== decisions (issue 19)
#: ``podMaxBackoffSeconds`` (10) + ``podInitialBackoffSeconds`` (1) + cache lag (1) + 3 s.
PENDING_BOUND_S = 15.0
#: A pod is looked at only once it has been Pending this long (most are bound at once), and
#: feasibility is re-evaluated at most this often (journal time): bounded work in big runs.
PENDING_GRACE_S = 2.0
EVALUATE_EVERY_S = 0.1
_INT32 = 2**31


@dataclass(frozen=True, slots=True)
class _Candidate:
    node: str
    victims: tuple[Obj, ...]  # most important first
    violations: int


def _requests_of(record: Obj) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for container in record.get("requests") or ():
        _add(total, {name: parse_quantity(value) for name, value in container.items()})
    return total


def _fits(pods: list[Obj], preemptor: Obj, allocatable: Obj) -> bool:
    """``noderesources`` fit for the resources the preemptor requests, and the pod count."""
    if len(pods) + 1 > parse_quantity(allocatable.get("pods", 110)):
        return False
    wanted = {name: value for name, value in _requests_of(preemptor).items() if value > 0}
    for name, value in wanted.items():
        used = sum((_requests_of(pod).get(name, Fraction(0)) for pod in pods), Fraction(0))
        if used + value > parse_quantity(allocatable.get(name, 0)):
            return False
    return True


def _start_key(record: Obj) -> str:
    return record.get("start") or "9999"  # a pod not started counts as the latest


def _pdb_split(pods: list[Obj], pdbs: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``filterPodsWithPDBViolation``: a PDB whose (non-empty) selector matches the pod, unless
    it is in ``disruptedPods``, spends one of its ``disruptionsAllowed``; below zero the pod
    violates it."""
    allowed = [pdb.get("disruptions_allowed", 0) for pdb in pdbs]
    violating, fine = [], []
    for pod in pods:
        violated = False
        for index, pdb in enumerate(pdbs):
            selector = pdb.get("selector")
            if pdb.get("namespace") != pod.get("namespace") or not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
                continue
            if not pod.get("labels") or not selector_matches(selector, pod.get("labels") or {}):
                continue
            if pod["key"].partition("/")[2] in (pdb.get("disrupted_pods") or ()):
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


def preemption_victims(node: Obj, preemptor: Obj, pdbs: list[Obj]) -> _Candidate | None:
    """``SelectVictimsOnNode`` over resources: None when the pod does not fit even with every
    lower-priority pod gone (or there is none)."""
    priority = preemptor.get("priority", 0)
    nominated = [pod for pod in node.get("nominated") or () if pod.get("priority", 0) >= priority]
    keep = [pod for pod in node.get("pods") or () if pod.get("priority", 0) >= priority] + nominated
    lower = [pod for pod in node.get("pods") or () if pod.get("priority", 0) < priority]
    allocatable = node.get("allocatable") or {}
    if not lower or not _fits(keep, preemptor, allocatable):
        return None
    lower.sort(key=lambda pod: (-pod.get("priority", 0), _start_key(pod)))
    violating, fine = _pdb_split(lower, pdbs)
    victims: list[Obj] = []
    violations = 0
    for group, counts in ((violating, True), (fine, False)):
        for pod in group:
            if _fits([*keep, pod], preemptor, allocatable):
                keep.append(pod)
            else:
                victims.append(pod)
                violations += 1 if counts else 0
    if not victims:
        return None
    victims.sort(key=lambda pod: (-pod.get("priority", 0), _start_key(pod)))
    return _Candidate(node["name"], tuple(victims), violations)


def _best(candidates: list[_Candidate]) -> list[_Candidate]:
    """``pickOneNodeForPreemption``'s criteria in order; the survivors (ties)."""
    def earliest_start(candidate: _Candidate) -> str:
        highest = max(pod.get("priority", 0) for pod in candidate.victims)
        return min(_start_key(pod) for pod in candidate.victims if pod.get("priority", 0) == highest)

    criteria = (
        lambda c: -c.violations,
        lambda c: -max(pod.get("priority", 0) for pod in c.victims),
        lambda c: -sum(pod.get("priority", 0) + _INT32 for pod in c.victims),
        lambda c: -len(c.victims),
        earliest_start,  # later is better
    )
    survivors = list(candidates)
    for criterion in criteria:
        best = max(criterion(c) for c in survivors)
        survivors = [c for c in survivors if criterion(c) == best]
        if len(survivors) == 1:
            break
    return survivors


def _judge_preemption(event: Event) -> tuple[bool, str, dict[str, Any]] | None:
    chosen = event.get("chosen")
    if not chosen:
        return None
    preemptor, pdbs = event.get("preemptor") or {}, event.get("pdbs") or []
    candidates = [c for c in (preemption_victims(node, preemptor, pdbs) for node in event.get("nodes") or ()) if c is not None]
    if not candidates:
        return False, f"the scheduler preempted on {chosen['node']} for {preemptor.get('key')} at t={event['t']:.3f}, but no node could take the pod by preempting lower-priority pods", {}
    best = _best(candidates)
    by_node = {c.node: c for c in candidates}
    mine = by_node.get(chosen["node"])
    summary = {c.node: {"victims": sorted(pod["key"] for pod in c.victims), "pdb_violations": c.violations} for c in candidates}
    if mine is None or mine not in best:
        names = ", ".join(sorted(c.node for c in best))
        return False, (f"preemption for {preemptor.get('key')} at t={event['t']:.3f} chose {chosen['node']}, but upstream's ordering (fewest PDB violations, lowest highest"
                       f" victim priority, smallest priority sum, fewest victims, latest start) picks {names}"), {"candidates": summary, "chosen": chosen}
    if sorted(pod["key"] for pod in mine.victims) != sorted(chosen.get("victims") or ()):
        return False, (f"preemption for {preemptor.get('key')} at t={event['t']:.3f} on {chosen['node']} evicted {sorted(chosen.get('victims') or ())},"
                       f" not the minimal victims {sorted(pod['key'] for pod in mine.victims)}"), {"candidates": summary, "chosen": chosen}
    return True, "", {}


def _pod_fits_node(pod: Obj, node_name: str, node: Obj, used: dict[str, Fraction], count: int) -> bool:
    if not node or (node.get("spec") or {}).get("unschedulable") and not any(
            tolerates(t, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}) for t in (pod.get("spec") or {}).get("tolerations") or ()):
        return False
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in (node.get("status") or {}).get("conditions") or ())
    if not ready or scheduling_problems(pod, node_name, node):
        return False
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    if count + 1 > parse_quantity(allocatable.get("pods", 110)):
        return False
    for name, value in pod_requests(pod).items():
        if value > 0 and used.get(name, Fraction(0)) + value > parse_quantity(allocatable.get(name, 0)):
            return False
    return True


#: The volume node-affinity / zone reasons, upstream's strings (``volumebinding/binder.go``,
#: ``volumezone/volume_zone.go``).
ERR_VOLUME_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_VOLUME_ZONE_CONFLICT = "node(s) had no available volume zone"
ERR_NO_VOLUMES = "node(s) didn't find available persistent volumes to bind"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
#: VolumeZone's topology labels (``volumezone.topologyLabels``): GA and deprecated beta.
VOLUME_TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
)
_NO_PROVISIONER = ("", "kubernetes.io/no-provisioner")


def _node_selector_matches(selector: Obj | None, node_name: str, labels: dict[str, str]) -> bool:
    """A required ``NodeSelector`` (a volume's ``nodeAffinity.required``): None matches
    every node, else one non-empty term whose every expression and field matches."""
    if selector is None:
        return True
    fields = {"metadata.name": node_name}
    for term in selector.get("nodeSelectorTerms") or ():
        expressions, match_fields = term.get("matchExpressions") or [], term.get("matchFields") or []
        if not expressions and not match_fields:
            continue
        if all(_requirement_matches(r, labels) for r in expressions) and all(_requirement_matches(r, fields) for r in match_fields):
            return True
    return False


def _volume_accepts(volume: Obj, node_name: str, labels: dict[str, str]) -> bool:
    return _node_selector_matches(((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required"), node_name, labels)


_GA_OF_BETA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


def _volume_zone_matches(volume: Obj, labels: dict[str, str]) -> bool:
    """VolumeZone's Filter for one bound volume: each of its topology labels names (one of,
    ``__``-separated) the node's value for that label (a beta label the node's GA one too);
    a node with no topology label at all is not constrained."""
    if not any(key in labels for key in VOLUME_TOPOLOGY_LABELS):
        return True
    volume_labels = labels_of(volume)
    for key in VOLUME_TOPOLOGY_LABELS:
        value = volume_labels.get(key)
        if value is None:
            continue
        have = labels.get(key, labels.get(_GA_OF_BETA.get(key, key)))
        if have not in set(value.split("__")):
            return False
    return True


def _class_topology_allows(storage_class: Obj, labels: dict[str, str]) -> bool:
    terms = storage_class.get("allowedTopologies") or []
    if not terms:
        return True
    return any(
        all(labels.get(expression.get("key")) in (expression.get("values") or []) for expression in term.get("matchLabelExpressions") or ())
        for term in terms
    )


def _static_volume_for(claim: Obj, node_name: str, labels: dict[str, str], volumes: Mapping[str, Obj]) -> bool:
    """An available volume the claim could bind to that accepts the node (the scheduler's
    ``_static_match``: class, capacity, access modes, selector, node affinity)."""
    spec = claim.get("spec") or {}
    want = parse_quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage", "0"))
    for _, volume in sorted(volumes.items()):
        volume_spec = volume.get("spec") or {}
        if volume_spec.get("claimRef") is not None or (volume.get("status") or {}).get("phase", "") not in ("Available", ""):
            continue
        if (volume_spec.get("storageClassName") or "") != (spec.get("storageClassName") or ""):
            continue
        if parse_quantity((volume_spec.get("capacity") or {}).get("storage", "0")) < want:
            continue
        if not all(mode in (volume_spec.get("accessModes") or ()) for mode in spec.get("accessModes") or ()):
            continue
        if spec.get("selector") is not None and not selector_matches(spec["selector"], labels_of(volume)):
            continue
        if _volume_accepts(volume, node_name, labels):
            return True
    return False


def volume_problem(pod: Obj, node_name: str, node: Obj, claims: Mapping[str, Obj], volumes: Mapping[str, Obj], classes: Mapping[str, Obj]) -> str | None:
    """Why the scheduler's volume filters (VolumeBinding's PreFilter and Filter, VolumeZone's
    Filter) refuse ``node`` for ``pod``, in upstream's words; None when they accept it.
    ``claims`` by ``namespace/name``, ``volumes`` and ``classes`` by name (the store's keys)."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    labels = labels_of(node)
    for entry in (pod.get("spec") or {}).get("volumes") or ():
        reference = entry.get("persistentVolumeClaim") if isinstance(entry, dict) else None
        if not isinstance(reference, dict) or not reference.get("claimName"):
            continue
        claim = claims.get(f"{namespace}/{reference['claimName']}")
        if claim is None:
            return f'persistentvolumeclaim "{reference["claimName"]}" not found'
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return f'persistentvolumeclaim "{reference["claimName"]}" is being deleted'
        spec = claim.get("spec") or {}
        if spec.get("volumeName"):
            volume = volumes.get(spec["volumeName"])
            if volume is None:
                return ERR_PV_NOT_EXIST
            if not _volume_accepts(volume, node_name, labels):
                return ERR_VOLUME_NODE_CONFLICT
            if not _volume_zone_matches(volume, labels):
                return ERR_VOLUME_ZONE_CONFLICT
            continue
        storage_class = classes.get(spec["storageClassName"]) if spec.get("storageClassName") else None
        if storage_class is None or (storage_class.get("volumeBindingMode") or "Immediate") != "WaitForFirstConsumer":
            return ERR_UNBOUND_IMMEDIATE
        if _static_volume_for(claim, node_name, labels, volumes):
            continue
        if storage_class.get("provisioner", "") in _NO_PROVISIONER or not _class_topology_allows(storage_class, labels):
            return ERR_NO_VOLUMES
    return None


def _pending(pod: Obj | None) -> bool:
    if pod is None:
        return False
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    if spec.get("nodeName") or meta.get("deletionTimestamp"):
        return False
    if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return False
    return spec.get("schedulerName", "default-scheduler") in ("", "default-scheduler")


def check_scheduling_decisions(events: Iterable[Event], *, pending_bound_s: float = PENDING_BOUND_S) -> Verdict:
    """Items 5 and 6 of the module docstring."""
    events = list(events)
    end_t = events[-1]["t"] if events else 0.0
    health = run_health(events, end_t, "kube-scheduler")
    store = StoreReplay(("pods", "nodes", "persistentvolumeclaims", "persistentvolumes", "storageclasses"))
    used: dict[str, dict[str, Fraction]] = {}
    counts: dict[str, int] = {}
    feasible_since: dict[str, float] = {}
    pending_since: dict[str, float] = {}
    last_evaluation = -1.0
    dirty = False
    reported: set[str] = set()
    unjudged: set[str] = set()
    preemptions = judged_pending = 0
    findings: list[tuple[float, str, tuple[Any, ...]]] = []
    unjudged_pending = 0
    for event in events:
        if event.get("type") == "preemption-decision":
            outcome = _judge_preemption(event)
            if outcome is not None:
                preemptions += 1
                ok, reason, extra = outcome
                if not ok:
                    findings.append((event["t"], reason, ({"type": "preemption-decision", "t": event["t"], "preemptor": (event.get("preemptor") or {}).get("key"), **extra},)))
            continue
        changes = store.apply(event)
        for change in changes:
            dirty = True
            if change.resource != "pods":
                continue
            for obj, sign in ((change.before, -1), (change.after, 1)):
                node = (obj or {}).get("spec", {}).get("nodeName", "") if obj else ""
                if node and (obj.get("status") or {}).get("phase") not in TERMINAL_PHASES:
                    totals = used.setdefault(node, {})
                    for name, value in pod_requests(obj).items():
                        totals[name] = totals.get(name, Fraction(0)) + sign * value
                    counts[node] = counts.get(node, 0) + sign
            if _pending(change.after):
                pending_since.setdefault(change.key, change.t)
            else:
                pending_since.pop(change.key, None)
                feasible_since.pop(change.key, None)
        now = event["t"]
        due = bool(feasible_since) and any(now > since + pending_bound_s for key, since in feasible_since.items() if key not in reported)
        # Bounded work: only pods pending for a while, at most every EVALUATE_EVERY_S -- and
        # always before a deadline is judged, so no change goes unseen.
        if dirty and (now - last_evaluation >= EVALUATE_EVERY_S or due):
            dirty = False
            last_evaluation = now
            nodes = sorted(store.objects("nodes").items())
            for key, since in sorted(pending_since.items()):
                if now - since < PENDING_GRACE_S:
                    dirty = True  # look again once it is old enough
                    continue
                pod = store.get("pods", key)
                claims, volumes, classes = (store.objects(resource) for resource in ("persistentvolumeclaims", "persistentvolumes", "storageclasses"))
                if any(
                    _pod_fits_node(pod, name, node, used.get(name, {}), counts.get(name, 0)) and volume_problem(pod, name, node, claims, volumes, classes) is None
                    for name, node in nodes
                ):
                    feasible_since.setdefault(key, now)
                else:
                    feasible_since.pop(key, None)
        for key, since in sorted(feasible_since.items()) if feasible_since else ():
            deadline = since + pending_bound_s
            if key in reported or event["t"] <= deadline:
                continue
            if not health.healthy(since, deadline):
                # Not judged over a window a fault overlapped; judged again over the next
                # one, so a pod Pending for ever after a fault is still a finding.
                if key not in unjudged:
                    unjudged.add(key)
                    unjudged_pending += 1
                feasible_since[key] = event["t"]
                continue
            reported.add(key)
            judged_pending += 1
            findings.append((deadline, f"pod {key} stayed Pending from t={since:.3f} to past t={deadline:.3f} although a node could take it all along (beyond the {pending_bound_s:g} s back-off bound), with a scheduler leading and the control plane healthy",
                             ({"type": "store", "t": since, "object": f"pods/{key}", "deadline_t": deadline},)))
    details = {"preemptions_judged": preemptions, "pending_judged": judged_pending, "pending_unjudged": unjudged_pending}
    if findings:
        t, reason, evidence = min(findings, key=lambda finding: finding[0])
        return Verdict(False, reason, evidence, details)
    return Verdict(True, f"{preemptions} preemption decision(s) as upstream's ordering picks, no pod left Pending while it fit", details=details)


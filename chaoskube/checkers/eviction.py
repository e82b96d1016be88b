"""PDB-aware eviction, judged from the journal: no voluntary disruption takes a
PodDisruptionBudget's healthy pods below its ``desiredHealthy``.

The Kubernetes behaviour checked ("Disruptions",
https://kubernetes.io/docs/concepts/workloads/pods/disruptions/; the eviction subresource,
``pkg/registry/core/pod/storage/eviction.go``): a PDB "limits the number of pods of a
replicated application that are down simultaneously from voluntary disruptions" that go
through the Eviction API — ``kubectl drain`` and every tool that evicts. The scheduler's
preemption honours PDBs too, though only as far as it can ("Pod Priority and Preemption":
PodDisruptionBudget is supported, but not guaranteed); it counts as voluntary here unless
``include_preemption=False``. Involuntary losses (a node that fails, a NoExecute taint
eviction, a container that dies or stops being ready) and voluntary ones no PDB governs
(deleting a pod or scaling a controller down; the docs: "deleting deployments or pods
bypasses Pod Disruption Budgets") are never violations: they are listed.

Reconstruction, from the store itself rather than from what components believed:

1. The store: every ``raft-apply`` event carries the keys and values (the objects' JSON, as
   the API server stores them under ``/registry/...``) its revision wrote. Replayed once per
   revision (the first member to apply it gives the time), they give every Pod, PDB,
   ReplicaSet and Deployment as it was at each revision (:class:`StoreReplay`, shared with
   the other cluster checkers).
2. Healthy, as the disruption controller counts it (``countHealthyPods`` in
   ``pkg/controller/disruption/disruption.go``): a pod the PDB's selector picks in its
   namespace, not being deleted, with the Ready condition True. A *loss* is a revision at
   which a pod goes from healthy to not healthy: deleted or marked for deletion, or no
   longer Ready.
3. ``desiredHealthy``, computed independently of the controller under test, as
   ``getExpectedPodCount`` does: an integer ``minAvailable``; otherwise ``expected`` is the
   sum of the scales of the pods' controllers (a ReplicaSet, or the Deployment owning it; a
   StatefulSet; a ReplicationController; pods without a controller do not count) and
   ``desiredHealthy`` is ``minAvailable`` as a percentage of it, or ``expected -
   maxUnavailable``, percentages rounded up (``intstr.GetScaledValueFromIntOrPercent``).
   When a controller is missing from the store, the PDB's own ``status.desiredHealthy`` is
   used (if the status observed the PDB's generation); otherwise the loss is unjudged.
4. Attribution: a loss by deletion is *voluntary* when a voluntary request for that pod was
   in flight around it: an ``eviction`` event with outcome ``evicted`` (or a 2xx
   ``api-request`` on ``pods/eviction``), a ``drain`` evict with code 201, or a
   ``preempted`` event, whose request started (the client's ``api-op`` invoke; failing
   that, ``attribution_window_s`` before the record) no later than the loss and which was
   recorded no earlier than it (the API server records an eviction after the delete is
   stored; the scheduler records a preemption after its delete returned).
5. Violation: after the revision of a voluntary loss, a PDB that selected the pod has fewer
   healthy pods than its ``desiredHealthy`` -- unless the status the eviction trusted was
   stale by upstream's design: the shortfall is no more than the other losses of its pods
   (involuntary, or voluntary but not governed by a PDB) that the disruption controller
   had not had the time to count, each within :data:`DISRUPTION_SYNC_BOUND_S` of it under
   an acting kube-controller-manager leader (while none acts, the status stays as it was).
   ``eviction.go`` checks ``status.disruptionsAllowed`` as the controller last wrote it, so
   such an eviction goes through on a correct cluster; it is listed in ``details``
   (``stale_status``), not a finding. An eviction that spends a budget another eviction
   already spent is never excused so (``eviction-spend-without-precondition``).

Answers: False with the first violation (evidence: the voluntary request's event, the
loss as a summary of the store change, and the other losses of that PDB's pods since it
last had a disruption to spare — they show why a stale status let the eviction through);
unknown when the journal has no store history, no PDB was ever stored, or a voluntary loss
could not be judged; True otherwise. ``details`` counts the voluntary disruptions judged and
lists the other losses with a guessed cause.

Limits: a loss is judged at store revisions, not at the instants the pods stopped serving
(a pod marked for deletion counts as lost at once, as for the controller); the
``disruptedPods`` map is not used (the checker judges the store, not the controller's
bookkeeping); a voluntary request whose store write happened more than
``attribution_window_s`` before its record and whose client journaled no ``api-op`` is
not attributed (its loss is listed as another loss, a possible false negative); a pod
selected by two PDBs is judged against both (the eviction API refuses such pods).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.replay import (
    CONTROLLER_MANAGER_LEASE,
    Change,
    StoreReplay,
    acting_intervals,
    condition_status,
    deadline_under_leader,
    is_deleting,
    labels_of,
    latest_before,
    pod_ready,
    request_invokes,
    scaled_value,
    selector_matches,
)
from chaoskube.checkers.verdict import NOTHING_TO_JUDGE, Verdict, judged_nothing, nothing_to_judge

__all__ = ["check_pdb_eviction"]

Event = dict[str, Any]
Obj = dict[str, Any]

# =========================================================================== PDB arithmetic
def _controller_ref(obj: Obj) -> Obj | None:
    for reference in obj.get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller"):
            return reference
    return None


def _replicas(obj: Obj) -> int:
    value = obj.get("spec", {}).get("replicas")
    return 1 if value is None else int(value)  # the API server defaults spec.replicas to 1


def _find(store: StoreReplay, resource: str, namespace: str, reference: Obj) -> Obj | None:
    if resource not in store.resources:
        return None
    found = store.get(resource, f"{namespace}/{reference.get('name', '')}")
    if found is None or found.get("metadata", {}).get("uid") != reference.get("uid"):
        return None
    return found


def expected_scale(pods: Iterable[Obj], namespace: str, store: StoreReplay) -> int | None:
    """``getExpectedScale``: the sum of the scales of the pods' controllers, each counted
    once; None when a controller cannot be found in the store."""
    scales: dict[str, int] = {}
    for pod in pods:
        reference = _controller_ref(pod)
        if reference is None:
            continue  # unmanaged pods do not count
        kind = reference.get("kind")
        if kind == "ReplicaSet":
            replica_set = _find(store, "replicasets", namespace, reference)
            if replica_set is None:
                return None
            owner = _controller_ref(replica_set)
            if owner is not None and owner.get("kind") == "Deployment":
                deployment = _find(store, "deployments", namespace, owner)
                if deployment is None:
                    return None
                scales[owner.get("uid", "")] = _replicas(deployment)
            else:
                scales[reference.get("uid", "")] = _replicas(replica_set)
        elif kind in ("StatefulSet", "ReplicationController"):
            resource = "statefulsets" if kind == "StatefulSet" else "replicationcontrollers"
            found = _find(store, resource, namespace, reference)
            if found is None:
                return None
            scales[reference.get("uid", "")] = _replicas(found)
        else:
            return None  # the scale subresource of other kinds is not modelled
    return sum(scales.values())


def selected_pods(pdb_key: str, pdb: Obj, store: StoreReplay) -> list[tuple[str, Obj]]:
    namespace = pdb_key.partition("/")[0]
    selector = pdb.get("spec", {}).get("selector")
    return [(key, pod) for key, pod in store.in_namespace("pods", namespace) if selector_matches(selector, labels_of(pod))]


def healthy(pod: Obj | None) -> bool:
    """``countHealthyPods``: Ready and not being deleted."""
    return pod is not None and not is_deleting(pod) and pod_ready(pod)


def desired_healthy(pdb_key: str, pdb: Obj, store: StoreReplay) -> tuple[int | None, str]:
    """(desiredHealthy, where it came from): from the spec (module docstring, step 3), else
    from the status if it observed the PDB's generation, else (None, why)."""
    spec = pdb.get("spec", {})
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if isinstance(min_available, int) and max_unavailable is None:
        return min_available, "spec.minAvailable"
    if min_available is not None or max_unavailable is not None:
        namespace = pdb_key.partition("/")[0]
        expected = expected_scale((pod for _, pod in selected_pods(pdb_key, pdb, store)), namespace, store)
        if expected is not None:
            if max_unavailable is not None:
                return max(0, expected - scaled_value(max_unavailable, expected, round_up=True)), f"expected {expected} - maxUnavailable"
            return scaled_value(min_available, expected, round_up=True), f"minAvailable of expected {expected}"
    status = pdb.get("status") or {}
    generation = pdb.get("metadata", {}).get("generation", 0)
    if status.get("observedGeneration", 0) >= max(generation, 1):
        return int(status.get("desiredHealthy", 0)), "status.desiredHealthy"
    return None, "no controller scale and no observed status"


# =========================================================================== attribution
@dataclass(slots=True)
class _Voluntary:
    pod: str
    t: float
    start_t: float
    source: str  # eviction | drain | preemption
    event: Event
    used: bool = False


@dataclass(slots=True)
class _Loss:
    change: Change
    kind: str  # deleted | unready
    cause: str = ""
    voluntary: _Voluntary | None = None

    def summary(self) -> dict[str, Any]:
        return {**self.change.summary(), "pod": self.change.key, "loss": self.kind, "cause": self.cause}


#: The disruption controller's reaction to a pod loss: informer delivery, its queue, the
#: recount and the status write, retried once: bounded by 10 s here.
DISRUPTION_SYNC_BOUND_S = 10.0


@dataclass(slots=True)
class _Budget:
    """Per PDB: the losses of its pods since it last had a disruption to spare."""

    losses_since_room: list[_Loss] = field(default_factory=list)


RELATED = ("taint-eviction", "gc-delete", "container-exit", "container-kill", "probe", "pod-deleted", "preempted")


def _voluntary_requests(events: list[Event], window_s: float, include_preemption: bool) -> dict[str, list[_Voluntary]]:
    by_request, by_target = request_invokes(events)

    def start(t: float, request: str | None, target: tuple[str, ...]) -> float:
        if request and request in by_request:
            return by_request[request]
        latest = latest_before(by_target.get(target), t)
        return latest if latest is not None else t - window_s

    found: dict[str, list[_Voluntary]] = {}
    eviction_ids: set[str] = set()
    for event in events:
        kind = event.get("type")
        if kind == "eviction" and event.get("outcome") == "evicted":
            pod = f"{event.get('namespace', '')}/{event.get('pod', '')}"
            eviction_ids.add(event.get("id", ""))
            target = ("create", "pods", "eviction", event.get("namespace", ""), event.get("pod", ""))
            found.setdefault(pod, []).append(_Voluntary(pod, event["t"], start(event["t"], event.get("id"), target), "eviction", event))
    for event in events:
        kind = event.get("type")
        if kind == "api-request" and event.get("subresource") == "eviction" and 200 <= event.get("code", 0) < 300 and event.get("id") not in eviction_ids:
            pod = f"{event.get('namespace', '')}/{event.get('name', '')}"
            target = ("create", "pods", "eviction", event.get("namespace", ""), event.get("name", ""))
            found.setdefault(pod, []).append(_Voluntary(pod, event["t"], start(event["t"], event.get("id"), target), "eviction", event))
        elif kind == "drain" and event.get("event") == "evict" and event.get("code") == 201:
            pod = event.get("pod", "")
            namespace, _, name = pod.partition("/")
            target = ("create", "pods", "eviction", namespace, name)
            if any(other.start_t <= event["t"] and event["t"] - window_s <= other.t <= event["t"] for other in found.get(pod, ())):
                continue  # the API server's record of the same eviction
            found.setdefault(pod, []).append(_Voluntary(pod, event["t"], start(event["t"], None, target), "drain", event))
        elif kind == "preempted" and include_preemption:
            pod = event.get("pod", "")
            namespace, _, name = pod.partition("/")
            target = ("delete", "pods", "", namespace, name)
            found.setdefault(pod, []).append(_Voluntary(pod, event["t"], start(event["t"], None, target), "preemption", event))
    for requests in found.values():
        requests.sort(key=lambda request: (request.t, request.start_t))
    return found


def _attribute(loss: _Loss, requests: dict[str, list[_Voluntary]]) -> None:
    if loss.kind != "deleted":
        return  # every voluntary path deletes: a pod that stops being Ready was not evicted
    t = loss.change.t
    for request in requests.get(loss.change.key, ()):
        if not request.used and request.start_t <= t <= request.t:
            request.used = True
            loss.voluntary = request
            loss.cause = request.source
            return


def _guess_cause(loss: _Loss, related: dict[str, list[Event]], store: StoreReplay, window_s: float) -> str:
    t = loss.change.t
    nearby = [event for event in related.get(loss.change.key, ()) if abs(event["t"] - t) <= window_s]
    if nearby:
        return min(nearby, key=lambda event: (abs(event["t"] - t), event["t"]))["type"]
    pod = loss.change.before or {}
    node_name = pod.get("spec", {}).get("nodeName", "")
    node = store.get("nodes", node_name) if node_name else None
    if node is not None and condition_status(node, "Ready") != "True":
        return "node-not-ready"
    return "deleted" if loss.kind == "deleted" else "unready"


# =========================================================================== the checker
def check_pdb_eviction(events: Iterable[Event], *, include_preemption: bool = True, attribution_window_s: float = 5.0) -> Verdict:
    """Judge PDB-aware eviction on a cluster's journal (module docstring)."""
    events = list(events)
    requests = _voluntary_requests(events, attribution_window_s, include_preemption)
    related: dict[str, list[Event]] = {}
    for event in events:
        if event.get("type") in RELATED:
            pod = event.get("pod") or f"{event.get('namespace', '')}/{event.get('name', '')}"
            related.setdefault(pod, []).append(event)
    store = StoreReplay(("pods", "poddisruptionbudgets", "replicasets", "deployments", "statefulsets", "replicationcontrollers", "nodes"))
    budgets: dict[str, _Budget] = {}
    judged: list[dict[str, Any]] = []
    others: list[_Loss] = []
    unjudged: list[dict[str, Any]] = []
    ever_pdb = False
    acting = acting_intervals(events, CONTROLLER_MANAGER_LEASE)
    for event in events:
        changes = store.apply(event)
        if not changes:
            continue
        ever_pdb = ever_pdb or bool(store.objects("poddisruptionbudgets"))
        touched = [change for change in changes if change.resource == "pods"]
        if not touched:
            continue
        losses = []
        for change in touched:
            if healthy(change.before) and not healthy(change.after):
                kind = "deleted" if change.after is None or is_deleting(change.after) else "unready"
                loss = _Loss(change, kind)
                _attribute(loss, requests)
                if loss.voluntary is None:
                    loss.cause = _guess_cause(loss, related, store, attribution_window_s)
                    others.append(loss)
                losses.append(loss)
        for pdb_key, pdb in sorted(store.objects("poddisruptionbudgets").items()):
            verdict = _judge_revision(pdb_key, pdb, touched, losses, store, budgets.setdefault(pdb_key, _Budget()), judged, unjudged, acting)
            if verdict is not None:
                return _with_details(verdict, judged, others, unjudged)
    if not store.revisions_applied:
        return Verdict(None, "the journal has no store history (raft-apply events): pods and PDBs cannot be reconstructed")
    if not ever_pdb:
        return _with_details(nothing_to_judge("no PodDisruptionBudget was ever stored: nothing to judge"), judged, others, unjudged)
    if unjudged:
        first = unjudged[0]
        return _with_details(Verdict(None, f"{len(unjudged)} voluntary disruption(s) could not be judged: PDB {first['pdb']}: {first['why']}"), judged, others, unjudged)
    evictions = sum(1 for row in judged if row["source"] != "preemption")
    stale = sum(1 for row in judged if row.get("stale_status"))
    stale_note = f" but {stale} that a status the disruption controller had not yet updated allowed" if stale else ""
    return _with_details(
        Verdict(True, f"{len(judged)} voluntary disruption(s) of PDB-covered pods ({evictions} eviction(s), {len(judged) - evictions} preemption(s)) "
                      f"never took a PDB below desiredHealthy{stale_note}; {len(others)} other loss(es) listed"),
        judged, others, unjudged,
    )


def _judge_revision(
    pdb_key: str, pdb: Obj, touched: list[Change], losses: list[_Loss], store: StoreReplay, budget: _Budget,
    judged: list[dict[str, Any]], unjudged: list[dict[str, Any]], acting: list[tuple[float, float]],
) -> Verdict | None:
    namespace = pdb_key.partition("/")[0]
    selector = pdb.get("spec", {}).get("selector")

    def picks(obj: Obj | None) -> bool:
        return obj is not None and selector_matches(selector, labels_of(obj))

    mine = [change for change in touched if change.key.startswith(f"{namespace}/") and (picks(change.before) or picks(change.after))]
    if not mine:
        return None
    my_losses = [loss for loss in losses if loss.change.key.startswith(f"{namespace}/") and picks(loss.change.before)]
    if not my_losses and not budget.losses_since_room:
        return None  # nothing to judge and no list to clear: the count would change nothing
    count = sum(1 for _, pod in selected_pods(pdb_key, pdb, store) if healthy(pod))
    desired, source = desired_healthy(pdb_key, pdb, store)
    verdict = None
    for loss in my_losses:
        if loss.voluntary is None:
            budget.losses_since_room.append(loss)
            continue
        row = {"pdb": pdb_key, "pod": loss.change.key, "t": loss.change.t, "revision": loss.change.revision, "source": loss.voluntary.source,
               "healthy_after": count, "desired_healthy": desired, "desired_from": source}
        if desired is None:
            unjudged.append({**row, "why": source})
            continue
        judged.append(row)
        if count < desired and verdict is None:
            uncounted = [other for other in budget.losses_since_room if other.change.key != loss.change.key
                         and loss.change.t <= deadline_under_leader(other.change.t, acting, DISRUPTION_SYNC_BOUND_S)]
            if desired - count <= len(uncounted):
                row["stale_status"] = [other.change.key for other in uncounted]  # upstream's eviction.go trusted it
                continue
            verdict = _violation(pdb_key, pdb, loss, count, desired, source, budget)
    if desired is not None and count > desired:
        budget.losses_since_room.clear()
    return verdict


def _violation(pdb_key: str, pdb: Obj, loss: _Loss, count: int, desired: int, source: str, budget: _Budget) -> Verdict:
    request = loss.voluntary
    assert request is not None
    status = pdb.get("status") or {}
    summary = {
        **loss.summary(), "pdb": pdb_key, "healthy_after": count, "desired_healthy": desired, "desired_from": source,
        "status": {name: status.get(name, 0) for name in ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")},
    }
    others = [other.summary() for other in budget.losses_since_room if other.change.key != loss.change.key][-5:]
    note = f" ({len(others)} other loss(es) of its pods since it last had room: {', '.join(o['pod'] + ' ' + o['cause'] for o in others)})" if others else ""
    verb = {"eviction": "eviction", "drain": "drain eviction", "preemption": "preemption"}[request.source]
    return Verdict(
        False,
        f"{verb} of {loss.change.key} at t={loss.change.t:.3f} left PDB {pdb_key} with {count} healthy pod(s), below desiredHealthy {desired}{note}",
        (request.event, summary, *others),
    )


def _with_details(verdict: Verdict, judged: list[dict[str, Any]], others: list[_Loss], unjudged: list[dict[str, Any]]) -> Verdict:
    details = {
        "voluntary": judged,
        "other_losses": [loss.summary() for loss in others],
        "unjudged": unjudged,
    }
    return Verdict(verdict.valid, verdict.reason, verdict.evidence, details | ({NOTHING_TO_JUDGE: True} if judged_nothing(verdict) else {}))

"""Workload invariants, judged at every observation of the store: what the workload
controllers (Deployment, ReplicaSet) promise about the pods they run, not only whether the
cluster converged at the end.

The Kubernetes behaviour checked:

- **Deployment rolling updates** ("Rolling Update Deployment",
  https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment;
  ``pkg/controller/deployment/rolling.go``, ``util/deployment_util.go`` ``ResolveFenceposts``):
  "Deployment ensures that only a certain number of Pods are down while they are being
  updated ... at least 75% of the desired number of Pods are up (25% max unavailable)" and
  "only a certain number of Pods are created above the desired number ... at most 125%
  (25% max surge)"; maxSurge rounds up, maxUnavailable down, and both 0 make
  maxUnavailable 1. The controller keeps the first by its own count -- it scales old
  ReplicaSets down only while ``replicas - maxUnavailable`` pods stay available -- so the
  check is made where the controller acts: **availability floor**, when the ReplicaSet
  controller deletes an available pod of a Deployment (its ``replicaset-pods`` record names
  the pods it chose), the Deployment must still have ``replicas - maxUnavailable``
  available pods, or the shortfall must be explained: pods unavailable because their node
  is not Ready or had a fault or restart in the last ``excuse_s`` (the checker says which;
  only a pod that was Ready once: one still starting never counted as available), and
  pods lost to an eviction, a taint-based eviction, a drain, the garbage collector or a
  fault whose replacement is not yet available (each such loss explains one missing pod
  until a pod created after it becomes Ready). **Surge ceiling**, when a pod of a
  Deployment is created: its live pods (not being deleted, not terminal) are at most
  ``replicas + maxSurge``, with ``replicas`` the largest the Deployment asked for in the
  last ``window_s`` (a scale-down in progress is not an over-creation), plus what its
  ReplicaSets were scaled down by in that window (a create their controller decided before
  may land after: client-go's latency, a slow webhook). Recreate
  Deployments have no availability floor.
- **ReplicaSets** (``pkg/controller/replicaset/replica_set.go``, expectations:
  ``pkg/controller/controller_utils.go``): the controller creates pods only while it has
  fewer than ``spec.replicas``, and its expectations keep a stale cache from creating
  twice: **no over-creation** -- when a pod of a ReplicaSet is created, it has at most
  ``spec.replicas`` live pods, ``spec.replicas`` being the largest in the last
  ``window_s`` (a create decided before a scale-down may land after it). **Scale-down
  order** ("Scaling a ReplicaSet",
  https://kubernetes.io/docs/concepts/workloads/controllers/replicaset/#scaling-a-replicaset;
  ``ActivePodsWithRanks.Less`` in ``controller_utils.go``): the controller deletes
  unassigned before assigned, Pending before Unknown before Running, not-ready before
  ready pods. When it deletes a pod (its ``replicaset-pods`` record names it), no pod of
  the same ReplicaSet that it keeps may rank strictly before the deleted one on those
  three keys, both pods having held their rank in the store for ``settled_s`` (the
  controller decides from its informer cache, which may lag the store by a moment).
- **observedGeneration** (API conventions, "Spec and Status": the status reflects the
  generation it observed): never above ``metadata.generation`` and never going back, for
  Deployments and ReplicaSets.
- **At convergence**, exact counts, not "at least": when the run ended converged (the
  system's final steady state held, and the store shows every Deployment complete and every
  pod on a Ready node, as the convergence checker defines it), every ReplicaSet has exactly ``spec.replicas`` live
  pods, every Deployment exactly ``replicas`` live pods, all in its newest ReplicaSet (old
  ones scaled to 0 and empty), at most ``revisionHistoryLimit`` (default 10) old
  ReplicaSets kept, and ``observedGeneration`` equal to ``generation``.

Rules are data (:data:`RULES`): each names the resources it needs and judges a change
(``on_change``) and the end (``at_end``) on a shared :class:`WorkloadView`; workload kinds
added later (StatefulSet ordering, DaemonSet one pod per node, Job completions) add a
rule here, with nothing else to change.

``check_workload_invariants(events)`` answers False with the first finding (evidence: the
change, the object and the counts), unknown when the store never held a Deployment or a
ReplicaSet (nothing to judge), True otherwise; ``details`` lists the shortfalls the journal
explained and by what.

Limits: "available" is Ready (``minReadySeconds`` 0, the default, is assumed); pods are
tied to their owners by controller ``ownerReferences``; a pod that turns NotReady on a
healthy node with no fault is not a controller's doing and is not judged here.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaoskube.api.objects import resolve_fenceposts
from chaoskube.checkers.convergence import convergence_problems
from chaoskube.checkers.replay import Change, StoreReplay, condition_status, is_deleting, pod_ready, request_invokes
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["RULES", "Rule", "WorkloadView", "check_workload_invariants"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: How long a recent ``spec.replicas`` still bounds pod creations (the controller's client
#: allows a create 10 s per attempt, 5 attempts: 50 s; rounded up).
WINDOW_S = 60.0
#: How long after a node's fault or restart its pods' unavailability counts as explained
#: (a restarted kubelet reports readiness only after its first probe; its sync loop runs
#: at least every minute: ``syncFrequency``).
EXCUSE_S = 60.0
#: How long both pods must have held their rank (assigned, phase, ready) in the store
#: before a scale-down choice between them is judged: well above an informer's lag.
SETTLED_S = 10.0
#: ``controller_utils.go`` ``podPhaseToOrdinal``.
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
DEFAULT_REVISION_HISTORY_LIMIT = 10
MAX_EXPLAINED = 20


def _replicas(obj: Obj) -> int:
    value = obj.get("spec", {}).get("replicas")
    return 1 if value is None else int(value)


def _controller_uid(obj: Obj) -> str | None:
    for reference in obj.get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller"):
            return reference.get("uid")
    return None


def _uid(obj: Obj) -> str:
    return obj.get("metadata", {}).get("uid", "")


def _live(pod: Obj | None) -> bool:
    return pod is not None and not is_deleting(pod) and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def _available(pod: Obj | None) -> bool:
    return _live(pod) and pod_ready(pod)


def _rank(pod: Obj) -> tuple[int, int, int]:
    """The first three keys of ``ActivePodsWithRanks.Less``: lower is deleted first."""
    return (
        1 if pod.get("spec", {}).get("nodeName") else 0,
        _PHASE_ORDINAL.get(pod.get("status", {}).get("phase", ""), 0),
        1 if pod_ready(pod) else 0,
    )


def _generation(obj: Obj) -> tuple[int, int]:
    return int(obj.get("metadata", {}).get("generation") or 0), int(obj.get("status", {}).get("observedGeneration") or 0)


@dataclass
class Finding:
    rule: str
    t: float
    object: str
    problem: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "t": self.t, "object": self.object, "problem": self.problem, **self.evidence}


class WorkloadView:
    """The store as replayed so far, with owner indexes, recent sizes and the journal's
    explanations (faults, evictions, the ReplicaSet controller's own deletions)."""

    def __init__(self, events: Sequence[Event], resources: Iterable[str], *, window_s: float = WINDOW_S, excuse_s: float = EXCUSE_S, settled_s: float = SETTLED_S) -> None:
        self.store = StoreReplay(resources)
        self.window_s = window_s
        self.excuse_s = excuse_s
        self.settled_s = settled_s
        self.t = 0.0
        self.pods_of: dict[str, set[str]] = {}  # controller uid -> pod keys
        self.by_uid: dict[tuple[str, str], str] = {}  # (resource, uid) -> key
        self.sizes: dict[tuple[str, str], deque[tuple[float, int]]] = {}  # recent spec.replicas
        self.losses: dict[str, deque[float]] = {}  # deployment uid -> times of external losses
        self.explained: list[dict[str, Any]] = []
        self.controller_deleted: set[str] = set()
        self.external: dict[str, str] = {}  # pod key -> why it was removed
        self.node_events: dict[str, list[float]] = {}
        self.created: dict[str, float] = {}  # pod uid -> when the store first had it
        self.rank_since: dict[str, tuple[tuple[int, int, int], float]] = {}  # pod key -> (rank, since)
        self.ever_ready: set[str] = set()  # uids of pods that were Ready at some point
        self.final_steady: bool | None = None
        # namespace -> when a pod create got no definite answer (a timeout, a 5xx): the
        # write may still land later (a stalled etcd leader applies it when it resumes),
        # after the controller, told it failed, created another -- client-go's documented
        # "a timeout does not mean the request failed"; the next sync deletes the extra.
        self.indeterminate_creates: dict[str, list[float]] = {}
        self.unseen_creates: set[str] = set()  # pods whose create's answer its client never received
        # deployment uid -> [(t, n)], each change of n: from t on, the store's ReplicaSet
        # statuses counted n more available pods than its ReplicaSets had (overstated_at).
        self.overstated: dict[str, list[tuple[float, int]]] = {}
        # "namespace/ReplicaSet" -> when the Deployment controller scaled it down; and the
        # Deployments it scaled down (only theirs need the overstatement kept)
        self.scaled_down: dict[str, list[float]] = {}
        self.scaling: set[str] = set()
        for event in events:
            kind = event["type"]
            if (
                kind == "api-request" and event.get("verb") == "create" and event.get("resource") == "pods" and not event.get("subresource")
                and (event.get("code") is None or int(event.get("code") or 0) >= 500)
            ):
                self.indeterminate_creates.setdefault(event.get("namespace", ""), []).append(event["t"])
            if kind == "replicaset-pods" and event.get("action") == "delete":
                self.controller_deleted.update(event.get("pods") or ())
            elif kind == "taint-eviction":
                self.external.setdefault(event["pod"], "taint-based eviction")
            elif kind == "eviction" and event.get("outcome") == "evicted":
                self.external.setdefault(f"{event['namespace']}/{event['pod']}", "eviction")
            elif kind == "gc-delete" and event.get("resource") == "pods":
                self.external.setdefault(f"{event['namespace']}/{event['name']}", "garbage collector")
            elif kind in ("process", "kubelet"):
                node = event.get("process") or event.get("node")
                if node:
                    self.node_events.setdefault(node, []).append(event["t"])
            elif kind == "fault":
                for target in event.get("targets") or ():
                    self.node_events.setdefault(target, []).append(event["t"])
            elif kind == "deployment-scale" and int(event.get("to") or 0) < int(event.get("from") or 0):
                namespace = str(event.get("deployment", "")).partition("/")[0]
                self.scaled_down.setdefault(f"{namespace}/{event.get('rs', '')}", []).append(event["t"])
                self.scaling.add(str(event.get("deployment", "")))
            elif kind == "kubernetes" and event.get("event") == "final":
                self.final_steady = bool(event.get("steady"))
        # A create whose answer its client never received (its call cancelled when the
        # controller lost its lease, or its process killed) may have landed all the same,
        # unseen (workload-churn-under-nemesis with BUGGIFY, seed 33: a ReplicaSet create
        # sent before a leadership loss stored 3 s after it). Judged only for clients that
        # journal their calls (api-op): the server's record names the request.
        answered, _ = request_invokes(events)
        journaling = {event.get("client") for event in events if event["type"] == "api-op"}
        for event in events:
            if (
                event["type"] == "api-request" and event.get("verb") == "create" and event.get("resource") == "pods" and not event.get("subresource")
                and event.get("code") is not None and int(event.get("code") or 0) < 300
            ):
                request = str(event.get("id", ""))
                client = request.rsplit("/", 2)[0] if request.count("/") >= 2 else ""
                if client in journaling and request not in answered:
                    self.unseen_creates.add(f"{event.get('namespace', '')}/{event.get('name', '')}")

    # -- owners and counts --------------------------------------------------------------
    def apply(self, change: Change) -> None:
        self.t = change.t
        resource, before, after = change.resource, change.before, change.after
        if before is not None:
            self.by_uid.pop((resource, _uid(before)), None)
        if after is not None:
            self.by_uid[(resource, _uid(after))] = change.key
        if resource == "pods":
            old, new = (before and _controller_uid(before)), (after and _controller_uid(after))
            if old and (old != new):
                self.pods_of.get(old, set()).discard(change.key)
            if new:
                self.pods_of.setdefault(new, set()).add(change.key)
            if before is None and after is not None:
                self.created[_uid(after)] = change.t
            if after is not None and pod_ready(after):
                self.ever_ready.add(_uid(after))
            if after is None:
                self.rank_since.pop(change.key, None)
            else:
                rank = _rank(after)
                held = self.rank_since.get(change.key)
                if held is None or held[0] != rank or (before is not None and _uid(before) != _uid(after)):
                    self.rank_since[change.key] = (rank, change.t)
        elif after is not None and (resource in ("replicasets", "deployments") or "replicas" in after.get("spec", {})):
            sizes = self.sizes.setdefault((resource, change.key), deque())
            sizes.append((change.t, _replicas(after)))
            while len(sizes) > 1 and sizes[1][0] <= change.t - self.window_s:
                sizes.popleft()
        if resource in ("pods", "replicasets"):
            obj = after if after is not None else before
            assert obj is not None
            rs = self.owner("replicasets", _controller_uid(obj) if resource == "pods" else _uid(obj))
            deployment = self.owner("deployments", _controller_uid(rs[1])) if rs is not None else None
            if deployment is not None and deployment[0] in self.scaling:
                self._note_overstated(_uid(deployment[1]))

    def _note_overstated(self, d_uid: str) -> None:
        """Remember when the Deployment's ReplicaSets' stored statuses count more available
        pods than they have: the ReplicaSet controller computes a status from the pods it
        listed before its own deletions in the same sync (``syncReplicaSet``), so right
        after a delete the status still counts the pod, until its next sync."""
        extra = 0
        for _, rs in self.replica_sets_of(d_uid):
            said = int((rs.get("status") or {}).get("availableReplicas") or 0)
            extra += max(0, said - sum(1 for _, pod in self.pods(_uid(rs)) if _available(pod)))
        noted = self.overstated.setdefault(d_uid, [])
        if (noted[-1][1] if noted else 0) != extra:
            noted.append((self.t, extra))

    def overstated_at(self, d_uid: str, t: float) -> int:
        """How many available pods more than it had the Deployment's ReplicaSets' stored
        statuses counted at ``t``."""
        noted = self.overstated.get(d_uid, [])
        index = bisect_right(noted, (t, math.inf)) - 1
        return noted[index][1] if index >= 0 else 0

    def last_scale_down(self, rs_key: str, t: float) -> float | None:
        """When the Deployment controller last scaled ReplicaSet ``rs_key`` down, at or
        before ``t``."""
        times = self.scaled_down.get(rs_key, [])
        index = bisect_right(times, t) - 1
        return times[index] if index >= 0 else None

    def pods(self, owner_uid: str) -> list[tuple[str, Obj]]:
        found = []
        for key in sorted(self.pods_of.get(owner_uid, ())):
            pod = self.store.get("pods", key)
            if pod is not None and _controller_uid(pod) == owner_uid:
                found.append((key, pod))
        return found

    def replica_sets_of(self, deployment_uid: str) -> list[tuple[str, Obj]]:
        """The Deployment's ReplicaSets: in its namespace (a copy elsewhere that kept the
        owner reference is not its: the reference is invalid, the owner absent there)."""
        deployment = self.owner("deployments", deployment_uid)
        prefix = f"{deployment[0].partition('/')[0]}/" if deployment is not None else ""
        return [(key, rs) for key, rs in sorted(self.store.objects("replicasets").items()) if _controller_uid(rs) == deployment_uid and key.startswith(prefix)]

    def deployment_pods(self, deployment_uid: str) -> list[tuple[str, Obj]]:
        return [item for _, rs in self.replica_sets_of(deployment_uid) for item in self.pods(_uid(rs))]

    def recent_size(self, resource: str, key: str, current: int) -> int:
        """The largest ``spec.replicas`` in effect during the last ``window_s``."""
        largest, start = current, self.t - self.window_s
        in_effect = None
        for t, size in self.sizes.get((resource, key), ()):
            if t > start:
                largest = max(largest, size)
            else:
                in_effect = size
        return max(largest, in_effect) if in_effect is not None else largest

    def owner(self, resource: str, uid: str | None) -> tuple[str, Obj] | None:
        if not uid:
            return None
        key = self.by_uid.get((resource, uid))
        obj = self.store.get(resource, key) if key is not None else None
        return (key, obj) if obj is not None else None

    def node_excuse(self, pod: Obj) -> str | None:
        """Why a not-ready pod's node explains it, or None. Only a pod that was Ready once
        can have lost its readiness to its node; one that never was is still starting, and
        the Deployment controller does not count it as available."""
        node = pod.get("spec", {}).get("nodeName", "")
        if not node or _uid(pod) not in self.ever_ready:
            return None
        stored = self.store.get("nodes", node)
        if stored is None or condition_status(stored, "Ready") != "True":
            return f"node {node} not Ready"
        recent = [t for t in self.node_events.get(node, ()) if self.t - self.excuse_s <= t <= self.t]
        if recent:
            return f"node {node} had a fault or restart at t={recent[-1]:.3f}"
        return None


class Rule(Protocol):
    """One workload invariant (module docstring): the resources it needs, a judgement per
    store change and one at the end of the run."""

    name: str
    resources: tuple[str, ...]

    def on_change(self, view: WorkloadView, change: Change) -> list[Finding]: ...

    def at_end(self, view: WorkloadView) -> list[Finding]: ...


# =========================================================================== ReplicaSets
class ReplicaSetRules:
    name = "replicaset"
    resources = ("pods", "replicasets")

    def on_change(self, view: WorkloadView, change: Change) -> list[Finding]:
        findings = []
        if change.resource == "replicasets" and change.after is not None:
            findings += _generation_findings("ReplicaSet", change)
        if change.resource == "pods" and change.before is None and _live(change.after):
            owner = view.owner("replicasets", _controller_uid(change.after))
            if owner is not None:
                rs_key, rs = owner
                live = [key for key, pod in view.pods(_uid(rs)) if _live(pod)]
                bound = view.recent_size("replicasets", rs_key, _replicas(rs))
                unanswered = [t for t in view.indeterminate_creates.get(change.key.partition("/")[0], ()) if change.t - view.window_s <= t <= change.t]
                if len(live) > bound and (unanswered or change.key in view.unseen_creates):
                    if len(view.explained) < MAX_EXPLAINED:
                        why = (f"{len(unanswered)} pod create(s) answered without a definite outcome (timeout or 5xx) in the last {view.window_s:g} s: one may land late"
                               if unanswered else "its create's answer never reached the controller (its call was cancelled): it landed unseen")
                        view.explained.append({"t": change.t, "replicaset": rs_key, "created": change.key, "live": len(live), "bound": bound, "explained_by": [why]})
                elif len(live) > bound:
                    findings.append(Finding(
                        "replicaset-over-creation", change.t, f"replicasets/{rs_key}",
                        f"ReplicaSet {rs_key} has {len(live)} live pods after creating {change.key}, over its {bound} replicas (the largest in the last {view.window_s:g} s)",
                        {"pods": live, "replicas": _replicas(rs), "bound": bound},
                    ))
        if (
            change.resource == "pods" and change.before is not None and change.after is not None
            and not is_deleting(change.before) and is_deleting(change.after) and change.key in view.controller_deleted
        ):
            findings += _scale_down_order(view, change)
        return findings

    def at_end(self, view: WorkloadView) -> list[Finding]:
        findings = []
        for key, rs in sorted(view.store.objects("replicasets").items()):
            if is_deleting(rs):
                continue
            live = [pod_key for pod_key, pod in view.pods(_uid(rs)) if _live(pod)]
            if len(live) != _replicas(rs):
                findings.append(Finding("replicaset-exact", view.t, f"replicasets/{key}", f"ReplicaSet {key} ended with {len(live)} live pods for {_replicas(rs)} replicas", {"pods": live}))
            generation, observed = _generation(rs)
            if observed != generation:
                findings.append(Finding("replicaset-observed-generation", view.t, f"replicasets/{key}", f"ReplicaSet {key} ended with observedGeneration {observed} for generation {generation}"))
        return findings


def _scale_down_order(view: WorkloadView, change: Change) -> list[Finding]:
    """The ReplicaSet controller deleted ``change.key``: did it keep a pod of the same
    ReplicaSet that ranks strictly before it (module docstring, scale-down order)?"""
    before = change.before
    assert before is not None
    owner = view.owner("replicasets", _controller_uid(before))
    held = view.rank_since.get(change.key)
    if owner is None or held is None:
        return []
    rs_key, rs = owner
    rank, since = _rank(before), held[1]
    if change.t - since < view.settled_s:
        return []
    for key, pod in view.pods(_uid(rs)):
        if key == change.key or not _live(pod) or key in view.controller_deleted:
            continue
        kept = view.rank_since.get(key)
        if kept is None or change.t - kept[1] < view.settled_s or not kept[0] < rank:
            continue
        names = ("assigned", "phase", "ready")
        first = next(i for i in range(3) if kept[0][i] != rank[i])
        return [Finding(
            "replicaset-scale-down-order", change.t, f"replicasets/{rs_key}",
            f"the ReplicaSet controller deleted {change.key} ({_describe(before)}) and kept {key} ({_describe(pod)}), which ranks before it on {names[first]}",
            {"deleted": change.key, "kept": key, "deleted_rank_since": since, "kept_rank_since": kept[1]},
        )]
    return []


def _describe(pod: Obj) -> str:
    node = pod.get("spec", {}).get("nodeName") or "unassigned"
    return f"{node}, {pod.get('status', {}).get('phase', 'Pending')}, {'ready' if pod_ready(pod) else 'not ready'}"


def _generation_findings(kind: str, change: Change) -> list[Finding]:
    after = change.after
    assert after is not None
    generation, observed = _generation(after)
    resource = f"{kind.lower()}s/{change.key}"
    if observed > generation:
        return [Finding("observed-generation", change.t, resource, f"{kind} {change.key} has observedGeneration {observed} above its generation {generation}")]
    if change.before is not None and _uid(change.before) == _uid(after) and observed < _generation(change.before)[1]:
        return [Finding("observed-generation", change.t, resource, f"{kind} {change.key}'s observedGeneration went back from {_generation(change.before)[1]} to {observed}")]
    return []


# =========================================================================== Deployments
class DeploymentRules:
    name = "deployment"
    resources = ("pods", "replicasets", "deployments", "nodes")

    def on_change(self, view: WorkloadView, change: Change) -> list[Finding]:
        findings: list[Finding] = []
        if change.resource == "deployments" and change.after is not None:
            findings += _generation_findings("Deployment", change)
        if change.resource != "pods":
            return findings
        before, after = change.before, change.after
        pod = after if after is not None else before
        assert pod is not None
        rs = view.owner("replicasets", _controller_uid(pod))
        deployment = view.owner("deployments", _controller_uid(rs[1])) if rs is not None else None
        if deployment is None:
            return findings
        d_key, d = deployment
        d_uid = _uid(d)
        losses = view.losses.setdefault(d_uid, deque())
        if _available(before) and not _available(after) and (after is None or is_deleting(after)):
            if change.key in view.controller_deleted:
                finding = self._floor(view, change, d_key, d, losses)
                if finding is not None:
                    findings.append(finding)
            else:
                losses.append(change.t)
        elif not _available(before) and _available(after) and losses:
            created = _created_t(after, view)
            if created is not None and created >= losses[0]:
                losses.popleft()
        if before is None and _live(after):
            findings += self._ceiling(view, change, d_key, d)
        return findings

    def _floor(self, view: WorkloadView, change: Change, d_key: str, d: Obj, losses: deque[float]) -> Finding | None:
        spec = d.get("spec", {})
        strategy = spec.get("strategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return None
        replicas = _replicas(d)
        rolling = strategy.get("rollingUpdate") or {}
        _, unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)
        floor = replicas - min(unavailable, replicas)
        pods = view.deployment_pods(_uid(d))
        available = sum(1 for _, pod in pods if _available(pod))
        if available >= floor:
            return None
        reasons = []
        for key, pod in pods:
            if _live(pod) and not _available(pod):
                excuse = view.node_excuse(pod)
                if excuse is not None:
                    reasons.append(f"{key}: {excuse}")
        reasons += [f"a pod lost at t={t:.3f} not replaced yet" for t in losses]
        active = [rs for _, rs in view.replica_sets_of(_uid(d)) if _replicas(rs) > 0 or view.pods(_uid(rs))]
        if len(active) > 1 and view.recent_size("deployments", d_key, replicas) > replicas:
            # A scale-down mid-rollout: the Deployment controller splits it over its
            # ReplicaSets by size (sync.go scale, getProportion), not by availability, so
            # maxUnavailable does not bound it (workload-churn-under-nemesis with BUGGIFY,
            # seed 65: 3 -> 1 took both available pods of the largest old ReplicaSet)
            reasons.append(f"Deployment {d_key} scaled down to {replicas} mid-rollout ({len(active)} ReplicaSets): proportional scaling")
            if len(view.explained) < MAX_EXPLAINED:
                view.explained.append({"t": change.t, "deployment": d_key, "deleted": change.key, "available": available, "floor": floor, "explained_by": reasons})
            return None
        excused = len(reasons)
        rs = view.owner("replicasets", _controller_uid(change.before or change.after or {}))
        decided = view.last_scale_down(rs[0], change.t) if rs is not None else None
        extra = view.overstated_at(_uid(d), decided) if decided is not None else 0
        if extra and available + excused < floor:
            # The Deployment controller scales old ReplicaSets down by the ReplicaSets'
            # statuses (rolling.go reconcileOldReplicaSets: newRS.Status.AvailableReplicas),
            # which may still count pods their controller just deleted. Judged at the
            # scale-down this delete carries out (watch-resume-under-churn with BUGGIFY, seed
            # 4: a rollback made the ReplicaSet just scaled down the new one, its status still
            # counted the deleted pod, and the old one was scaled to 0).
            reasons.append(f"when the Deployment controller scaled {rs[0] if rs else '?'} down (t={decided:.3f}), the ReplicaSets' statuses counted {extra} available pod(s) more than Deployment {d_key} had: it trusts them")
            excused += extra
        if available + excused >= floor:
            if len(view.explained) < MAX_EXPLAINED:
                view.explained.append({"t": change.t, "deployment": d_key, "deleted": change.key, "available": available, "floor": floor, "explained_by": reasons})
            return None
        return Finding(
            "deployment-availability", change.t, f"deployments/{d_key}",
            f"the ReplicaSet controller deleted {change.key} while Deployment {d_key} had {available} available pods, below replicas - maxUnavailable = {floor}"
            + (f" (explained: {len(reasons)}: {'; '.join(reasons[:3])})" if reasons else " (nothing in the journal explains the shortfall)"),
            {"available": available, "floor": floor, "pods": {key: ("available" if _available(pod) else "live" if _live(pod) else "terminating") for key, pod in pods}},
        )

    def _ceiling(self, view: WorkloadView, change: Change, d_key: str, d: Obj) -> list[Finding]:
        replicas = view.recent_size("deployments", d_key, _replicas(d))
        strategy = d.get("spec", {}).get("strategy") or {}
        rolling = strategy.get("rollingUpdate") or {}
        surge = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas)[0] if strategy.get("type", "RollingUpdate") == "RollingUpdate" else 0
        live = [key for key, pod in view.deployment_pods(_uid(d)) if _live(pod)]
        if len(live) <= replicas + surge:
            return []
        # A ReplicaSet scaled down in the window may still see a create land that its
        # controller decided before (the ReplicaSet rule allows it: its largest recent
        # size); the Deployment's sum of sizes never passed the ceiling, so such in-flight
        # creates explain as many extra pods as the scale-downs took away.
        in_flight = sum(
            max(0, view.recent_size("replicasets", rs_key, _replicas(rs)) - _replicas(rs)) for rs_key, rs in view.replica_sets_of(_uid(d))
        )
        if len(live) <= replicas + surge + in_flight:
            if len(view.explained) < MAX_EXPLAINED:
                view.explained.append({"t": change.t, "deployment": d_key, "created": change.key, "live": len(live), "ceiling": replicas + surge,
                                       "explained_by": [f"ReplicaSet scale-downs in the last {view.window_s:g} s took {in_flight} replica(s) while their creates could be in flight"]})
            return []
        return [Finding(
            "deployment-surge", change.t, f"deployments/{d_key}",
            f"Deployment {d_key} has {len(live)} live pods after {change.key} was created, over replicas + maxSurge = {replicas} + {surge}",
            {"pods": live},
        )]

    def at_end(self, view: WorkloadView) -> list[Finding]:
        findings = []
        for key, d in sorted(view.store.objects("deployments").items()):
            if is_deleting(d):
                continue
            generation, observed = _generation(d)
            if observed != generation:
                findings.append(Finding("deployment-observed-generation", view.t, f"deployments/{key}", f"Deployment {key} ended with observedGeneration {observed} for generation {generation}"))
            owned = view.replica_sets_of(_uid(d))
            live = [pod_key for _, rs in owned for pod_key, pod in view.pods(_uid(rs)) if _live(pod)]
            if len(live) != _replicas(d):
                findings.append(Finding("deployment-exact", view.t, f"deployments/{key}", f"Deployment {key} ended with {len(live)} live pods for {_replicas(d)} replicas", {"pods": live}))
            newest = _newest(owned, d)
            old = [(rs_key, rs) for rs_key, rs in owned if newest is None or rs_key != newest]
            busy = [rs_key for rs_key, rs in old if _replicas(rs) or any(_live(pod) for _, pod in view.pods(_uid(rs)))]
            if busy:
                findings.append(Finding("deployment-old-replicasets", view.t, f"deployments/{key}", f"Deployment {key} ended with old ReplicaSets not scaled down: {', '.join(busy)}"))
            limit = d.get("spec", {}).get("revisionHistoryLimit")
            limit = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else int(limit)
            if len(old) > limit:
                findings.append(Finding("deployment-revision-history", view.t, f"deployments/{key}", f"Deployment {key} ended with {len(old)} old ReplicaSets, over its revisionHistoryLimit {limit}"))
        return findings


def _newest(owned: list[tuple[str, Obj]], d: Obj) -> str | None:
    """The ReplicaSet whose template is the Deployment's (ignoring the pod-template-hash label)."""
    template = _without_hash(d.get("spec", {}).get("template") or {})
    for key, rs in owned:
        if _without_hash(rs.get("spec", {}).get("template") or {}) == template:
            return key
    return None


def _without_hash(template: Obj) -> Obj:
    metadata = dict(template.get("metadata") or {})
    labels = {key: value for key, value in (metadata.get("labels") or {}).items() if key != "pod-template-hash"}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    return {**template, "metadata": metadata}


def _created_t(pod: Obj, view: WorkloadView) -> float | None:
    """When the pod was created, by the store (its first version)."""
    return view.created.get(_uid(pod))


#: The rules judged, in order. A new workload kind adds its rule here.
RULES: tuple[Rule, ...] = (DeploymentRules(), ReplicaSetRules())


def check_workload_invariants(
    events: Sequence[Event], *, window_s: float = WINDOW_S, excuse_s: float = EXCUSE_S, settled_s: float = SETTLED_S, rules: Sequence[Rule] = RULES
) -> Verdict:
    """Judge the rules at every store change and at the end (module docstring)."""
    resources = sorted({resource for rule in rules for resource in rule.resources})
    view = WorkloadView(events, resources, window_s=window_s, excuse_s=excuse_s, settled_s=settled_s)
    seen_workloads = False
    changes = 0
    for event in events:
        for change in view.store.apply(event):
            changes += 1
            view.apply(change)
            seen_workloads = seen_workloads or change.resource in ("deployments", "replicasets")
            for rule in rules:
                if change.resource not in rule.resources:
                    continue
                findings = rule.on_change(view, change)
                if findings:
                    return _violation(findings[0], view)
    details: dict[str, Any] = {"changes": changes, "explained_shortfalls": view.explained, "judged_at_end": bool(view.final_steady)}
    if not seen_workloads:
        return nothing_to_judge("the store never held a Deployment or ReplicaSet: nothing to judge", (), details)
    # Exact counts at the end presume the controllers were done: the experiment's steady
    # state held at the end, and so did convergence over every Deployment and pod (a run
    # ends once its own workloads are back; one the generator rolled out just before the
    # heal may still be rolling, its ReplicaSet controller backing off after failed
    # creates -- convergence answers unknown then, and so does this end).
    unconverged = convergence_problems(view.store) if view.final_steady and "nodes" in view.store.resources else []
    judged_end = bool(view.final_steady) and not unconverged
    details["judged_at_end"] = judged_end
    if judged_end:
        for rule in rules:
            findings = rule.at_end(view)
            if findings:
                return _violation(findings[0], view)
    ending = ("exact counts at the end" if judged_end else
              "the end not judged (the run did not end converged" + (f": {len(unconverged)} convergence problem(s)" if unconverged else "") + ")")
    explained = f"; {len(view.explained)} shortfall(s) explained by faults or evictions" if view.explained else ""
    return Verdict(True, f"{changes} store change(s): rollouts within maxSurge/maxUnavailable, no over-creation, scale-downs in rank order, observedGeneration sound; {ending}{explained}", (), details)


def _violation(finding: Finding, view: WorkloadView) -> Verdict:
    return Verdict(False, finding.problem, (finding.to_json(),), {"rule": finding.rule, "explained_shortfalls": view.explained})

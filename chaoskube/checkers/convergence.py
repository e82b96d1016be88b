"""Convergence after heal, judged from the journal: within a deadline of the heal, the store
shows every Deployment at its spec and every pod running on a Ready node.

The Kubernetes behaviour checked: controllers are level-triggered and drive the actual state
to the declared one ("Controllers", https://kubernetes.io/docs/concepts/architecture/controller/),
so once faults are healed the cluster returns to its steady state — the liveness phase of a
run (TigerBeetle's and Jepsen's shape; DESIGN.md "Experiments and reports").

Converged, at a store revision (:class:`~chaoskube.checkers.eviction.StoreReplay`), means all
of:

- every Deployment is complete as ``DeploymentComplete`` defines it
  (``pkg/controller/deployment/util/deployment_util.go``), with readiness for availability:
  ``status.observedGeneration >= metadata.generation``, ``status.updatedReplicas`` and
  ``status.replicas`` equal to ``spec.replicas`` (default 1) and ``status.readyReplicas`` at
  least that — the controller's own account — and, independently of it, at least
  ``spec.replicas`` live pods its selector picks are Ready on Ready nodes;
- every live pod (not being deleted, phase neither Succeeded nor Failed) is bound
  (``spec.nodeName``) to a Node whose Ready condition is True.

``check_convergence(events, healed_at=..., deadline_s=...)`` looks at the state as of
``healed_at`` and after every later revision that touches pods, nodes or Deployments. It
answers True when the cluster is converged at the deadline ``healed_at + deadline_s``,
with the time to converge: from the heal to the start of that converged stretch (0 when it
was already converged at ``healed_at``; a convergence that did not last to the deadline
does not count). It answers False when the journal runs past the deadline and the cluster
was not converged then (evidence: what stood in the way at the deadline; the reason says
whether, and when, it converged later), and unknown when the journal has no store
history, no pod and no Deployment, or ends before the deadline without being converged.
``details`` counts the flaps (converged, then not) and says whether it was converged at
the end of the journal.

:class:`ConvergenceWatch` keeps the same judgement up to date as a journal grows, for a
runner that waits, after its settle phase, until this checker's verdict is conclusive
(``experiments/phases.py``): fed the journal's events so far, it says whether the store is
converged now.

Limits: pods left terminating on a dead node (Kubernetes keeps them until the node returns
or is deleted) do not block convergence; StatefulSets, DaemonSets and Jobs are judged only
through their pods; readiness is what the store holds (the kubelet's last report).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chaoskube.checkers.replay import (
    Change,
    StoreReplay,
    condition_status,
    is_deleting,
    labels_of,
    pod_ready,
    selector_matches,
)
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["ConvergenceWatch", "check_convergence", "convergence_problems"]

Event = dict[str, Any]
Obj = dict[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")
MAX_EVIDENCE = 8


def _live(pod: Obj) -> bool:
    return not is_deleting(pod) and pod.get("status", {}).get("phase") not in TERMINAL_PHASES


def _node_ready(store: StoreReplay, name: str) -> bool:
    node = store.get("nodes", name) if name else None
    return node is not None and condition_status(node, "Ready") == "True"


def convergence_problems(store: StoreReplay) -> list[dict[str, Any]]:
    """What keeps the store's current state from being converged (empty: converged),
    deployments first, each group by key. (:class:`_Tracker` keeps the same list up to
    date change by change.)"""
    problems: list[dict[str, Any]] = []
    pods = store.objects("pods")
    for key, deployment in sorted(store.objects("deployments").items()):
        problem = _deployment_problem(key, deployment, _ready_pods(key, deployment, store, pods))
        if problem is not None:
            problems.append(problem)
    for key, pod in sorted(pods.items()):
        problem = _pod_problem(key, pod, store)
        if problem is not None:
            problems.append(problem)
    return problems


def _pod_problem(key: str, pod: Obj, store: StoreReplay) -> dict[str, Any] | None:
    if not _live(pod):
        return None
    node = pod.get("spec", {}).get("nodeName", "")
    if not node:
        return {"pod": key, "problem": "not bound to a node"}
    if not _node_ready(store, node):
        return {"pod": key, "node": node, "problem": "its node is not Ready"}
    return None


class _Tracker:
    """The problems of :func:`convergence_problems`, updated per change: a pod change
    re-judges that pod and the Deployments of its namespace whose selector picks it (before
    or after); a Deployment change re-judges it; a node's readiness changing re-judges all."""

    def __init__(self, store: StoreReplay) -> None:
        self.store = store
        self.pods: dict[str, dict[str, Any]] = {}
        self.deployments: dict[str, dict[str, Any]] = {}
        self.node_ready: dict[str, bool] = {}
        # The pods that count as ready for a Deployment (live, Ready, on a Ready node), as
        # (namespace, labels) -> how many: a Deployment's count sums the label sets its
        # selector picks, instead of scanning every pod (pods of one ReplicaSet share labels).
        self._ready_group: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}
        self._ready_counts: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}

    def _judge_ready(self, key: str, pod: Obj | None) -> None:
        """Re-count ``key`` (``pod`` None: gone) among the ready pods."""
        group = None
        if pod is not None and _counts_ready(pod, self.store):
            group = (key.partition("/")[0], tuple(sorted(labels_of(pod).items())))
        old = self._ready_group.get(key)
        if old == group:
            return
        if old is not None:
            left = self._ready_counts[old] - 1
            if left:
                self._ready_counts[old] = left
            else:
                del self._ready_counts[old]
            del self._ready_group[key]
        if group is not None:
            self._ready_group[key] = group
            self._ready_counts[group] = self._ready_counts.get(group, 0) + 1

    def ready_pods(self, namespace: str, selector: Obj | None) -> int:
        """What :func:`_ready_pods` counts, from the groups."""
        return sum(count for (group_namespace, labels), count in self._ready_counts.items() if group_namespace == namespace and selector_matches(selector, dict(labels)))

    def update(self, changes: list[Change]) -> None:
        dirty: set[str] = set()
        everything = False
        for change in changes:
            if change.resource == "nodes":
                ready = change.after is not None and condition_status(change.after, "Ready") == "True"
                everything = everything or self.node_ready.get(change.key, False) != ready
                self.node_ready[change.key] = ready
            elif change.resource == "deployments":
                dirty.add(change.key)
            else:
                self._set(self.pods, change.key, None if change.after is None else _pod_problem(change.key, change.after, self.store))
                self._judge_ready(change.key, change.after)
                namespace = change.key.partition("/")[0]
                for key, deployment in self.store.in_namespace("deployments", namespace):
                    selector = deployment.get("spec", {}).get("selector")
                    if any(obj is not None and selector_matches(selector, labels_of(obj)) for obj in (change.before, change.after)):
                        dirty.add(key)
        if everything:
            self.pods = {key: problem for key, pod in self.store.objects("pods").items() if (problem := _pod_problem(key, pod, self.store)) is not None}
            self._ready_group, self._ready_counts = {}, {}
            for key, pod in self.store.objects("pods").items():
                self._judge_ready(key, pod)
            dirty = set(self.store.objects("deployments")) | set(self.deployments)
        for key in dirty:
            deployment = self.store.get("deployments", key)
            if deployment is None:
                self._set(self.deployments, key, None)
                continue
            ready = self.ready_pods(key.partition("/")[0], deployment.get("spec", {}).get("selector"))
            self._set(self.deployments, key, _deployment_problem(key, deployment, ready))

    @staticmethod
    def _set(table: dict[str, dict[str, Any]], key: str, problem: dict[str, Any] | None) -> None:
        if problem is None:
            table.pop(key, None)
        else:
            table[key] = problem

    def problems(self) -> list[dict[str, Any]]:
        return [self.deployments[key] for key in sorted(self.deployments)] + [self.pods[key] for key in sorted(self.pods)]


class ConvergenceWatch:
    """Convergence as of the events fed so far, kept up to date change by change (the
    store and problems :func:`check_convergence` replays, without its timeline): feed it a
    growing list of events (a run's journal in memory) and ask :attr:`converged`. Reads
    the events only; journals nothing."""

    def __init__(self) -> None:
        self.store = StoreReplay(("pods", "nodes", "deployments"))
        self._tracker = _Tracker(self.store)
        self._fed = 0

    def feed(self, events: list[Event]) -> None:
        """Apply ``events[n:]``, where ``n`` is how many a previous call applied (the list
        only grows)."""
        for event in events[self._fed:]:
            changes = self.store.apply(event)
            if changes:
                self._tracker.update(changes)
        self._fed = len(events)

    def problems(self) -> list[dict[str, Any]]:
        """What keeps the store from being converged now (:func:`convergence_problems`)."""
        return self._tracker.problems()

    @property
    def converged(self) -> bool | None:
        """True or False as the store stands; None while it holds no pod nor Deployment
        (:func:`check_convergence` has nothing to judge then)."""
        if not (self.store.objects("pods") or self.store.objects("deployments")):
            return None
        return not self._tracker.problems()


def _counts_ready(pod: Obj, store: StoreReplay) -> bool:
    """A pod that counts towards a Deployment's ready pods: live, Ready, on a Ready node."""
    return _live(pod) and pod_ready(pod) and _node_ready(store, pod.get("spec", {}).get("nodeName", ""))


def _ready_pods(key: str, deployment: Obj, store: StoreReplay, pods: Mapping[str, Obj]) -> int:
    """The live pods of the Deployment's namespace its selector picks that are Ready on a Ready node."""
    namespace = key.partition("/")[0]
    selector = deployment.get("spec", {}).get("selector")
    return sum(
        1 for pod_key, pod in pods.items()
        if pod_key.startswith(f"{namespace}/") and selector_matches(selector, labels_of(pod)) and _counts_ready(pod, store)
    )


def _deployment_problem(key: str, deployment: Obj, ready_pods: int) -> dict[str, Any] | None:
    spec, status = deployment.get("spec", {}), deployment.get("status") or {}
    replicas = 1 if spec.get("replicas") is None else int(spec["replicas"])
    row = {
        "deployment": key, "replicas": replicas, "ready_replicas": status.get("readyReplicas", 0), "updated_replicas": status.get("updatedReplicas", 0),
        "status_replicas": status.get("replicas", 0), "observed_generation": status.get("observedGeneration", 0),
        "generation": deployment.get("metadata", {}).get("generation", 0), "ready_pods": ready_pods,
    }
    complete = (
        row["observed_generation"] >= row["generation"]
        and row["updated_replicas"] == replicas
        and row["status_replicas"] == replicas
        and row["ready_replicas"] >= replicas
        and ready_pods >= replicas
    )
    return None if complete else {**row, "problem": "not at its spec"}


def check_convergence(events: Iterable[Event], *, healed_at: float, deadline_s: float) -> Verdict:
    """Judge convergence after ``healed_at`` (module docstring)."""
    assert deadline_s >= 0, deadline_s
    deadline = healed_at + deadline_s
    store = StoreReplay(("pods", "nodes", "deployments"))
    tracker = _Tracker(store)
    seen_workload = False
    transitions: list[tuple[float, bool]] = []  # (t, converged from then on), changes only
    at_deadline: list[dict[str, Any]] = []
    last_t = healed_at
    evaluated_heal = False
    last_change: dict[str, float] = {}

    def evaluate(t: float) -> None:
        nonlocal at_deadline
        problems = tracker.problems()
        if t <= deadline:
            at_deadline = problems
        if not transitions or transitions[-1][1] != (not problems):
            transitions.append((t, not problems))

    for event in events:
        t = event.get("t", last_t)
        if t > healed_at and not evaluated_heal:
            evaluated_heal = True
            evaluate(healed_at)
        last_t = max(last_t, t)
        changes = store.apply(event)
        if not changes:
            continue
        tracker.update(changes)
        for change in changes:
            last_change[f"{change.resource}/{change.key}"] = change.t
        seen_workload = seen_workload or bool(store.objects("pods")) or bool(store.objects("deployments"))
        if evaluated_heal:
            evaluate(changes[0].t)
    if not evaluated_heal:
        evaluate(healed_at)
    stretch = max((row for row in transitions if row[0] <= deadline), key=lambda row: row[0])
    later = next((t for t, converged in transitions if converged and t > deadline), None)
    details: dict[str, Any] = {
        "healed_at": healed_at, "deadline": deadline, "journal_end": last_t,
        "converged_at": stretch[0] if stretch[1] else later,
        "flaps": sum(1 for _, converged in transitions[1:] if not converged),
        "converged_at_end": transitions[-1][1],
    }
    if not store.revisions_applied:
        return Verdict(None, "the journal has no store history (raft-apply events): the cluster's state cannot be reconstructed", (), details)
    if not seen_workload:
        return nothing_to_judge("the store never held a pod or a Deployment: nothing to converge", (), details)
    if stretch[1]:
        took = max(0.0, stretch[0] - healed_at)
        details["time_to_converge_s"] = took
        still = f"at the deadline ({deadline_s:g} s)" if last_t >= deadline else f"when the journal ends at t={last_t:.3f}"
        return Verdict(True, f"converged {took:.3f} s after the heal at t={healed_at:.3f} and still so {still}", (), details)
    if last_t < deadline:
        return Verdict(None, f"not converged when the journal ends at t={last_t:.3f}, before the deadline t={deadline:.3f}", (), details)
    evidence = tuple({**problem, "last_change_t": last_change.get(_object_of(problem))} for problem in at_deadline[:MAX_EVIDENCE])
    late = f"converged only {later - healed_at:.3f} s after the heal" if later is not None else "not converged"
    what = "; ".join(_describe(problem) for problem in at_deadline[:3]) + (f"; {len(at_deadline) - 3} more" if len(at_deadline) > 3 else "")
    details["time_to_converge_s"] = None if later is None else later - healed_at
    return Verdict(False, f"{late} (deadline {deadline_s} s after the heal at t={healed_at:.3f}); at the deadline: {what}", evidence, details)


def _object_of(problem: dict[str, Any]) -> str:
    return f"deployments/{problem['deployment']}" if "deployment" in problem else f"pods/{problem['pod']}"


def _describe(problem: dict[str, Any]) -> str:
    if "deployment" in problem:
        return (f"deployment {problem['deployment']} ready {problem['ready_replicas']}/{problem['replicas']} "
                f"(updated {problem['updated_replicas']}, {problem['ready_pods']} ready pod(s) on Ready nodes)")
    if "node" in problem:
        return f"pod {problem['pod']} on {problem['node']}: {problem['problem']}"
    return f"pod {problem['pod']}: {problem['problem']}"

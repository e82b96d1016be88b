"""Graceful termination, judged from the journal: a deleted pod's containers get SIGTERM and
are not killed before its grace period, and its endpoints stop being ready at the deletion.

The Kubernetes behaviour checked ("Termination of Pods",
https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination):

1. "the API server updates the Pod object with the time beyond which the Pod is considered
   dead along with the grace period" (``deletionTimestamp``,
   ``deletionGracePeriodSeconds``); "the kubelet ... triggers the container runtime to send
   a TERM signal to process 1 inside each container"; "When the grace period expires, the
   kubelet triggers forcible shutdown ... sends SIGKILL" (``kuberuntime_container.go``
   ``killContainer``). So a container the kubelet stops for a deletion must not be killed
   before the deletion's grace period has passed: its SIGKILL comes no earlier than the
   earliest deadline a delete request set (the time of the request plus its grace; a later
   delete may only shorten it). Force deletions (removed from the API at once, grace 0)
   are exempt: "Pods that are set to terminate immediately will still be given a small
   grace period before being force killed".
2. "At the same time as the kubelet is starting graceful shutdown of the Pod, the control
   plane evaluates whether to remove that shutting-down Pod from EndpointSlice objects ...
   the endpoint is marked terminating" (``staging/src/k8s.io/endpointslice/utils.go``
   ``podToEndpoint``: ``ready`` = serving and not terminating): once a pod is marked for
   deletion, every EndpointSlice endpoint of it stops being ready within
   :data:`ENDPOINT_SYNC_BOUND_S`, counted from the later of the deletion and the start of the
   kube-controller-manager leader acting then (and only while one acts); a write of that
   EndpointSlice by the controller that the API server did not answer in time, or refused
   with an error, started before that deadline gives it another bound from the failure (it
   tried; the control plane did not let it: swarm with BUGGIFY, seeds 72, 78, 79, an API
   server whose etcd member was paused). And at no time
   is an endpoint both ``ready`` and ``terminating`` ("EndpointSlices", Conditions,
   https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/#conditions:
   "For compatibility reasons, ready is NEVER true when a Pod is terminating"): the
   controller derives both from one pod object, so no cache lag excuses it.
3. Graceful deletion happens at all ("Pod termination": a pod bound to a node is deleted
   gracefully unless the delete asks for grace 0; ``CheckGracefulDelete`` in
   ``pkg/registry/core/pod/strategy.go``: only an unscheduled or terminal pod goes at
   once): a pod bound to a node and not terminal never leaves the store without having
   been marked for deletion first, unless a delete of it asked ``gracePeriodSeconds: 0``
   (a force deletion; the API clients journal a delete's ``grace_s``) or its own
   ``terminationGracePeriodSeconds`` is 0 (the delete's default).

Inputs: the store's pods and EndpointSlices (``raft-apply``), the kubelets'
``container-term`` records (pod, uid, grace_s, exit_after_s, exit_code: 137 is a SIGKILL at
the end of the grace; :mod:`chaoskube.node.kubelet`), and the ``leader`` / ``process``
events of kube-controller-manager.

Answers False with the first violation in time (evidence: the kubelet's record or the
endpoint, and the deletion), unknown when no pod was deleted gracefully, True otherwise.

Limits: containers killed by something else (a node powered off, a liveness failure) are
not terminations; a kubelet that never sends SIGTERM for a deleted pod is seen only through
its endpoints and the convergence checker (the pod never goes away).
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.replay import CONTROLLER_MANAGER_LEASE, StoreReplay, acting_intervals, deadline_under_leader, endpoint_ready_intervals, failed_calls
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["ENDPOINT_SYNC_BOUND_S", "check_graceful_termination"]

Event = dict[str, Any]
#: The EndpointSlice controller's reaction to a pod update (informer delivery, the write,
#: a retry after its 1 s initial backoff): 10 s, as for the dead-endpoint check.
ENDPOINT_SYNC_BOUND_S = 10.0
_EPSILON_S = 1e-6


@dataclass
class _Deletion:
    key: str
    uid: str
    first_t: float
    deadline_t: float  # the earliest (request time + grace) of any delete
    grace_s: float
    marks: list[dict[str, Any]] = field(default_factory=list)
    gone_t: float = math.inf  # when the pod left the store (a later pod may reuse its name: a StatefulSet's)


def _ready_and_terminating(t: float, key: str, endpoint_slice: dict[str, Any], summary: Any) -> list[tuple[float, str, tuple[Any, ...]]]:
    for endpoint in endpoint_slice.get("endpoints") or ():
        conditions = endpoint.get("conditions") or {}
        if conditions.get("ready") and conditions.get("terminating"):
            pod = (endpoint.get("targetRef") or {}).get("name", "?")
            addresses = ",".join(endpoint.get("addresses") or ())
            return [(t, f"EndpointSlice {key} has endpoint {addresses} of pod {pod} ready and terminating at once at t={t:.3f} (ready is never true for a terminating pod)", (summary,))]
    return []


def check_graceful_termination(events: Sequence[Event], *, endpoint_bound_s: float = ENDPOINT_SYNC_BOUND_S) -> Verdict:
    """Judge every graceful pod deletion (module docstring)."""
    replay = StoreReplay(["pods", "endpointslices"])
    deletions: dict[tuple[str, str], _Deletion] = {}
    forced: set[tuple[str, str]] = set()
    terms: list[Event] = []
    findings: list[tuple[float, str, tuple[Any, ...]]] = []
    forced_requests: set[str] = set()  # pods some delete asked to remove with grace 0
    for event in events:
        if event["type"] == "container-term":
            terms.append(event)
            continue
        if event["type"] == "api-op":
            if event.get("phase") == "invoke" and event.get("verb") == "delete" and event.get("resource") == "pods" and event.get("grace_s") == 0:
                forced_requests.add(f"{event.get('namespace', '')}/{event.get('name', '')}")
            continue
        for change in replay.apply(event):
            before, after = change.before, change.after
            if change.resource == "endpointslices":
                if after is not None:
                    findings += _ready_and_terminating(change.t, change.key, after, change.summary())
                continue
            if after is not None:
                meta = after.get("metadata", {})
                if meta.get("deletionTimestamp"):
                    grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                    uid = meta.get("uid", "")
                    found = deletions.get((change.key, uid))
                    if found is None:
                        deletions[(change.key, uid)] = _Deletion(change.key, uid, change.t, change.t + grace, grace, [change.summary()])
                    elif not before or (before.get("metadata", {}).get("deletionGracePeriodSeconds") != meta.get("deletionGracePeriodSeconds")):
                        found.deadline_t = min(found.deadline_t, change.t + grace)
                        found.grace_s = min(found.grace_s, grace)
                        found.marks.append(change.summary())
            elif before is not None and (before.get("metadata", {}).get("uid", "") and (change.key, before["metadata"]["uid"]) in deletions):
                deletions[(change.key, before["metadata"]["uid"])].gone_t = change.t
            if after is None and before is not None and not before.get("metadata", {}).get("deletionTimestamp"):
                forced.add((change.key, before.get("metadata", {}).get("uid", "")))
                bound = before.get("spec", {}).get("nodeName")
                terminal = before.get("status", {}).get("phase") in ("Succeeded", "Failed")
                no_grace = before.get("spec", {}).get("terminationGracePeriodSeconds") == 0  # its own default is 0
                if bound and not terminal and not no_grace and change.key not in forced_requests:
                    findings.append((change.t, (
                        f"pod {change.key} on {bound} left the store at t={change.t:.3f} without being marked for deletion first, "
                        f"and no delete of it asked for grace 0 (a graceful deletion skipped)"
                    ), (change.summary(),)))
    graceful = {key: deletion for key, deletion in deletions.items() if deletion.grace_s > 0}
    counts = {"graceful_deletions": len(graceful), "forced": len(forced), "sigterms": 0, "sigkills": 0, "endpoints_checked": 0}
    for term in terms:
        pair = (term["pod"], term.get("uid", ""))
        deletion = deletions.get(pair)
        if deletion is None or pair in forced or deletion.grace_s <= 0:
            continue
        counts["sigterms"] += 1
        if term.get("exit_code") != 137:
            continue
        counts["sigkills"] += 1
        kill_t = term["t"] + float(term.get("exit_after_s", 0.0))
        if kill_t + _EPSILON_S < deletion.deadline_t:
            findings.append((term["t"], (
                f"{term['node']} kills container {term['container']} of {term['pod']} at t={kill_t:.3f}, {deletion.deadline_t - kill_t:.3f} s before the grace period "
                f"of its deletion ends (deleted at t={deletion.first_t:.3f} with {deletion.grace_s:g} s grace)"
            ), (term, *deletion.marks[:2])))
    acting = acting_intervals(events, CONTROLLER_MANAGER_LEASE)
    stuck: dict[str, list[tuple[float, float]]] = {}  # EndpointSlice -> (invoked, ended) of the controller's failed writes of it
    for started, ended in failed_calls(events, lambda op: op.get("resource") == "endpointslices" and str(op.get("client", "")).startswith("kube-controller-manager")):
        stuck.setdefault(f"{ended.get('namespace', '')}/{ended.get('name', '')}", []).append((started, ended["t"]))
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for row in endpoint_ready_intervals(events):
        by_pod.setdefault(row["pod"], []).append(row)
    for (key, _), deletion in sorted(deletions.items(), key=lambda item: item[1].first_t):
        rows = by_pod.get(key, ())
        if not rows:
            continue
        counts["endpoints_checked"] += 1
        bound = deadline_under_leader(deletion.first_t, acting, endpoint_bound_s)
        for row in rows:
            if row["from"] >= deletion.gone_t:
                continue  # a later pod of the same name (a StatefulSet recreates its pods by name)
            deadline = bound
            for started, ended in stuck.get(row["slice"], ()):
                if started <= deadline and ended >= deletion.first_t:
                    deadline = max(deadline, deadline_under_leader(ended, acting, endpoint_bound_s))
            if row["from"] <= deadline < row["to"]:
                findings.append((deadline, (
                    f"endpoint {row['address']} of {key} in EndpointSlice {row['slice']} still ready at t={deadline:.3f}, "
                    f"{endpoint_bound_s:g} s after the pod was marked for deletion at t={deletion.first_t:.3f}"
                ), ({"type": "endpoint", **{k: v for k, v in row.items() if k != "to"}, "ready_to_s": row["to"]}, *deletion.marks[:1])))
                break
    if findings:
        findings.sort(key=lambda item: item[0])
        return Verdict(False, findings[0][1], findings[0][2], counts | {"violations": len(findings)})
    if not graceful:
        return nothing_to_judge("no pod was deleted gracefully: nothing to judge", (), counts)
    return Verdict(
        True,
        f"{len(graceful)} graceful deletion(s): {counts['sigterms']} SIGTERM(s), {counts['sigkills']} SIGKILL(s) none before the grace period; "
        f"endpoints of {counts['endpoints_checked']} deleted pod(s) stopped being ready within {endpoint_bound_s:g} s",
        (), counts,
    )

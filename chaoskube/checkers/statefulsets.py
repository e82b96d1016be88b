"""StatefulSet guarantees, judged from the journal: what the StatefulSet controller promises
about the pods and claims it makes, at every change of the store and of the nodes' runtimes.

The Kubernetes behaviour checked ("StatefulSets",
https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/; "Force Delete
StatefulSet Pods",
https://kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod/;
kubernetes/kubernetes ``pkg/controller/statefulset/stateful_set_control.go``
``updateStatefulSet``, ``stateful_set_utils.go`` ``newVersionedStatefulSetPod``,
``isRunningAndReady``, ``getPersistentVolumeClaimName``):

1. **At most one pod per identity** ("StatefulSet ensures that, at any time, there is at
   most one Pod with a given identity running in a cluster"): for every pod name a
   StatefulSet owns, no two nodes run a container of it at the same moment. A container
   runs from its ``container-start`` to its ``container-exit`` (``exited_ago_s`` before the
   record), and not while its node's process is killed (powered off) -- unless the node's
   kubelet re-adopts it on restart (``kubelet`` start, ``adopted``). A node cut off from
   the control plane keeps running its containers: that is the case the guarantee is for
   (kubernetes/kubernetes#35145, PR #35235: "creation of replacement pods is blocked until
   old pods are definitely not running"). Only a force deletion by a user may break it
   ("Manual force deletion should be undertaken with caution, as it has the potential to
   violate the at most one semantics"): a second copy that began after a delete with grace
   0 from a client other than a kubelet or a controller (``kubectl``, the workload
   generator), or after its node's Node object was deleted, is listed in
   ``details.force_deleted`` and the reason says so; any other second copy is a finding.
2. **OrderedReady creation** (the default ``podManagementPolicy``): "Before a scaling
   operation is applied to a Pod, all of its predecessors must be Running and Ready" --
   when a pod of ordinal *i* is created, every ordinal from ``ordinals.start`` to *i* - 1
   was Running, Ready and not terminating at some moment in the last ``lag_s`` (the
   controller decides from its informer cache). Any set: no pod is created at an ordinal
   at or past ``start + replicas`` (the largest ``replicas`` of the last ``lag_s``).
3. **Termination order**: "When Pods are being deleted, they are terminated in reverse
   order"; "Before a Pod is terminated, all of its successors must be completely
   shutdown". When the StatefulSet controller deletes a condemned pod (its
   ``statefulset-pod`` record names it), no pod of the set with a higher ordinal has been
   in the store all through the last ``lag_s`` (OrderedReady), or live and not
   terminating all through it (Parallel: the controller deletes the condemned from the
   highest ordinal in one pass).
4. **Rolling updates** (``updateStrategy.type: RollingUpdate``): the controller deletes a
   pod that is not condemned only to update it -- never with ``OnDelete``, never one at
   the update revision, never an ordinal below ``start + partition`` ("All Pods with an
   ordinal that is greater than or equal to the partition will be updated ... Pods with
   an ordinal that is less than the partition will not be updated, and, even if they are
   deleted, they will be recreated at the previous version"), and only once every pod of
   a higher ordinal is at the update revision and Running and Ready ("It will wait until
   an updated Pod is Running and Ready prior to updating its predecessor": one pod at a
   time; ``maxUnavailable`` is behind the MaxUnavailableStatefulSet feature gate, off by
   default, and the controller here does not model it, so it is judged as 1) -- at the
   update revision the first status written after the delete names, unless that status
   was computed from a spec written after the delete (a later sync's). And a pod
   (re)created while the set's ``partition``, ``currentRevision`` and ``updateRevision``
   held still for ``lag_s`` is at the current revision below the partition and at the
   update revision from it (``newVersionedStatefulSetPod``; kubernetes/kubernetes#119685,
   #121534 are bugs of exactly this) -- judged only while the stored status was written
   for the spec as it stood all through the window (``observedGeneration`` =
   ``generation``): ``getStatefulSetRevisions`` computes the update revision from the
   template at each sync, so a status a spec change left behind (a rollback reuses the
   earlier template's revision) does not say which revision the controller acted for.
5. **Claims** (``volumeClaimTemplates``): when a pod is created, the claim
   ``<template>-<set>-<ordinal>`` of each template is in the store and not being deleted
   (the controller creates the claims first). ``persistentVolumeClaimRetentionPolicy``
   ("PersistentVolumeClaim retention"; ``stateful_set_utils.go``
   ``isClaimOwnerUpToDate``): the garbage collector deletes a claim of the set only while
   whenDeleted=Delete and the set is being deleted or gone, or whenScaled=Delete and the
   claim's ordinal is condemned, at some moment of the last ``lag_s`` (Retain, the default
   for both, keeps them: "PVCs are not affected when their Pods are deleted"); and at a
   steady end no claim of a set deleted with whenDeleted=Delete, nor of a scaled-down
   ordinal under whenScaled=Delete, is left ``SETTLE_S`` (30 s) after its set or pod left
   the store (fresher ones: ``details.retention_unjudged``).
6. **At the end**, when the run ended with its steady state held and the set's pods are
   Running and Ready: exactly the ordinals ``[start, start + replicas)``, every claim in
   place, and without a partition every pod at the update revision and
   ``status.currentRevision`` equal to it.

``check_statefulset_invariants(events)`` answers False with the first finding (evidence:
the change and what the rule saw), unknown when the store never held a StatefulSet, True
otherwise; ``details`` counts what was judged and what was not (``unjudged``: revision
rules skipped because the set's spec or status moved in the window; claims that retention
Delete should remove but whose set or pod left the store less than ``SETTLE_S`` before the
end).

Bounds: ``lag_s`` (10 s) for what the controller's cache may not have seen yet; an
identity's two copies must overlap by more than ``overlap_s`` (1 ms). Limits: a paused
node's containers count as running (a paused VM resumes them); ``minReadySeconds`` is not
required before a successor is created (Ready is).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.workloads import stateful_claim_name, stateful_pod_ordinal
from chaoskube.checkers.replay import Change, StoreReplay, is_deleting, pod_ready
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["LAG_S", "check_statefulset_invariants", "running_intervals"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: How long the controller's informer cache may lag the store (as the workload checker's
#: ``SETTLED_S``).
LAG_S = 10.0
#: Two copies of an identity must overlap longer than this to count (records of one instant).
OVERLAP_S = 1e-3
REVISION_LABEL = "controller-revision-hash"
#: How soon after the store wrote its delete the StatefulSet controller records it.
RECORD_S = 2.0


def _uid(obj: Obj | None) -> str:
    return (obj or {}).get("metadata", {}).get("uid", "")


def _owner_set(pod: Obj | None) -> str | None:
    """The name of the StatefulSet controlling ``pod`` (its controller ownerReference)."""
    for reference in (pod or {}).get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller") and reference.get("kind") == "StatefulSet":
            return reference.get("name")
    return None


def _healthy(pod: Obj | None) -> bool:
    """``isHealthy``: Running and Ready and not terminating."""
    return pod is not None and not is_deleting(pod) and pod.get("status", {}).get("phase") == "Running" and pod_ready(pod)


def _terminal(pod: Obj | None) -> bool:
    return (pod or {}).get("status", {}).get("phase") in ("Succeeded", "Failed")


def _revision(pod: Obj | None) -> str:
    return ((pod or {}).get("metadata", {}).get("labels") or {}).get(REVISION_LABEL, "")


def _start(sts: Obj) -> int:
    return int(((sts.get("spec") or {}).get("ordinals") or {}).get("start") or 0)


#: How long after its set or its pod left the store a claim that retention Delete removes
#: may still be there (the garbage collector, then the pvc-protection controller).
SETTLE_S = 30.0


def _replicas(sts: Obj) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _strategy(sts: Obj) -> tuple[str, int | None]:
    """(type, partition): partition None when the stored spec gives none."""
    strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    partition = rolling.get("partition")
    return strategy.get("type") or "RollingUpdate", (None if partition is None else int(partition))


def _policy(sts: Obj) -> str:
    return (sts.get("spec") or {}).get("podManagementPolicy") or "OrderedReady"


def _templates(sts: Obj) -> list[str]:
    return [(template.get("metadata") or {}).get("name", "") for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or ()]


def _retention(sts: Obj) -> tuple[str, str]:
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain"


# =========================================================================== containers running
def running_intervals(events: Sequence[Event]) -> dict[str, list[tuple[float, float, str]]]:
    """Every interval during which a node ran a container of a pod, by pod key
    (``namespace/name``): (from, to, node), ``to`` infinite while it still ran at the end
    (module docstring, rule 1)."""
    open_: dict[tuple[str, str, str], float] = {}  # (pod, node, container) -> since
    suspended: dict[str, set[tuple[str, str, str]]] = {}  # node -> containers its kill stopped
    done: dict[str, list[tuple[float, float, str]]] = {}

    def close(item: tuple[str, str, str], end: float) -> None:
        since = open_.pop(item)
        if end > since:
            done.setdefault(item[0], []).append((since, end, item[1]))

    for event in events:
        kind = event["type"]
        if kind == "container-start":
            item = (event.get("pod", ""), event.get("node", ""), event.get("container", ""))
            if item in open_:
                close(item, event["t"])
            open_[item] = event["t"]
            suspended.get(item[1], set()).discard(item)
        elif kind == "container-exit":
            item = (event.get("pod", ""), event.get("node", ""), event.get("container", ""))
            if item in open_:
                close(item, event["t"] - float(event.get("exited_ago_s") or 0.0))
            suspended.get(item[1], set()).discard(item)
        elif kind == "process" and event.get("event") in ("kill", "exit"):
            node = event.get("process", "")
            stopped = [item for item in open_ if item[1] == node]
            for item in stopped:
                close(item, event["t"])
            suspended.setdefault(node, set()).update(stopped)
        elif kind == "kubelet" and event.get("event") == "start" and event.get("adopted"):
            node = event.get("node", "")
            adopted = set(event.get("adopted") or ())
            for item in sorted(suspended.pop(node, set())):
                if item[0] in adopted:
                    open_[item] = event["t"]
    for item in sorted(open_):
        done.setdefault(item[0], []).append((open_[item], math.inf, item[1]))
    return done


def _second_copies(intervals: list[tuple[float, float, str]]) -> list[tuple[float, float, str, str]]:
    """Overlaps of intervals on different nodes: (from, to, node, other node)."""
    found = []
    ordered = sorted(intervals)
    for index, (a_from, a_to, a_node) in enumerate(ordered):
        for b_from, b_to, b_node in ordered[index + 1:]:
            if b_from >= a_to:
                break
            if b_node != a_node and min(a_to, b_to) - b_from > OVERLAP_S:
                found.append((b_from, min(a_to, b_to), a_node, b_node))
    return found


# =========================================================================== the store, per set
@dataclass
class _SetHistory:
    """A StatefulSet's stored spec and status over time: (t, replicas, type, partition,
    currentRevision, updateRevision, observed), one row per change that moved one of them;
    ``observed`` is whether ``status.observedGeneration`` is the spec's ``generation`` (the
    revisions the status names were computed from the spec as it stands)."""

    rows: list[tuple[float, int, str, int | None, str, str, bool]] = field(default_factory=list)
    #: (t, metadata.generation, status.observedGeneration), one row per change of either
    generations: list[tuple[float, int, int]] = field(default_factory=list)

    def note(self, t: float, sts: Obj) -> None:
        status = sts.get("status") or {}
        generation = (sts.get("metadata") or {}).get("generation")
        observed = status.get("observedGeneration") == generation
        row = (t, _replicas(sts), *_strategy(sts), status.get("currentRevision", ""), status.get("updateRevision", ""), observed)
        if not self.rows or self.rows[-1][1:] != row[1:]:
            self.rows.append(row)
        pair = (int(generation or 0), int(status.get("observedGeneration") or 0))
        if not self.generations or self.generations[-1][1:] != pair:
            self.generations.append((t, *pair))

    def _generations_at(self, t: float) -> tuple[int, int]:
        index = bisect.bisect_right([row[0] for row in self.generations], t) - 1
        return self.generations[index][1:] if index >= 0 else (0, 0)

    def update_after(self, t: float, lag_s: float) -> str:
        """The update revision the controller acted for at ``t``: the one the first status
        written after ``t`` (within ``lag_s``) names -- the controller writes the status it
        computed at the end of the sync that acted -- else the one in effect at ``t``. A
        status computed from a spec written after ``t`` (its ``observedGeneration`` past the
        generation stored at ``t``) is a later sync's: the controller cannot have acted at
        ``t`` for a spec not yet written, and a set's syncs run one at a time (the work
        queue), so the sync that acted wrote its status before it; the scan stops there."""
        times = [row[0] for row in self.rows]
        index = bisect.bisect_left(times, t)
        generation = self._generations_at(t)[0]
        for row in self.rows[index:]:
            if row[0] > t + lag_s or self._generations_at(row[0])[1] > generation:
                break
            if row[5] and (index == 0 or row[5] != self.rows[index - 1][5]):
                return row[5]
        in_effect = self.window(t, t)
        return in_effect[-1][5] if in_effect else ""

    def window(self, start: float, end: float) -> list[tuple[float, int, str, int | None, str, str, bool]]:
        """The rows in effect at some moment of [start, end]."""
        times = [row[0] for row in self.rows]
        first = max(0, bisect.bisect_right(times, start) - 1)
        last = bisect.bisect_right(times, end)
        return self.rows[first:last]


@dataclass
class Finding:
    rule: str
    t: float
    object: str
    problem: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "t": self.t, "object": self.object, "problem": self.problem, **self.evidence}


class _View:
    def __init__(self, events: Sequence[Event], lag_s: float) -> None:
        self.lag_s = lag_s
        self.store = StoreReplay(["statefulsets", "pods", "persistentvolumeclaims", "nodes", "namespaces"])
        self.sets: dict[str, _SetHistory] = {}  # the whole run's, computed first (rules look a moment ahead)
        self.last_healthy: dict[str, dict[str, float]] = {}  # pod key -> revision -> last time healthy at it
        self.present_since: dict[str, float] = {}  # pod key -> when its current object was created
        self.live_since: dict[str, float] = {}  # pod key -> since when live and not terminating
        self.gone_at: dict[str, float] = {}  # pod key -> when it last left the store
        self.stateful_pods: dict[str, str] = {}  # pod key -> namespace/set, for every pod a set ever owned
        self.node_deleted: dict[str, float] = {}
        self.counts = {"creates": 0, "controller_deletes": 0, "unjudged_revision": 0, "claims_checked": 0}
        # pod key -> times of the StatefulSet controller's delete records
        self.controller_deletes: dict[str, list[float]] = {}
        # pod key -> times of force deletions (grace 0) by a user's client
        self.forced: dict[str, list[float]] = {}
        self.gc_claims: list[Event] = []
        # (pod key, store revision) -> the client whose delete wrote that revision
        self.deleted_by: dict[tuple[str, int], str] = {}
        # set key -> (t, whenDeleted, whenScaled, start, replicas, deleting or gone) per change
        self.retention: dict[str, list[tuple[float, str, str, int, int, bool]]] = {}
        self.set_templates: dict[str, list[str]] = {}
        self.set_gone: dict[str, float] = {}
        self.counts["retention_judged"] = 0
        self.retention_unjudged: list[str] = []
        sets = StoreReplay(["statefulsets"])
        for event in events:
            for change in sets.apply(event):
                if change.after is not None:
                    self.sets.setdefault(change.key, _SetHistory()).note(change.t, change.after)
                    after = change.after
                    self.retention.setdefault(change.key, []).append((change.t, *_retention(after), _start(after), _replicas(after), is_deleting(after)))
                    self.set_templates[change.key] = _templates(after)
                    self.set_gone.pop(change.key, None)
                elif self.retention.get(change.key):
                    last = self.retention[change.key][-1]
                    self.retention[change.key].append((change.t, last[1], last[2], last[3], last[4], True))
                    self.set_gone[change.key] = change.t
        for event in events:
            kind = event["type"]
            if kind == "statefulset-pod" and event.get("action") == "delete":
                namespace = str(event.get("statefulset", "")).partition("/")[0]
                self.controller_deletes.setdefault(f"{namespace}/{event.get('pod', '')}", []).append(event["t"])
            elif (
                kind == "api-op" and event.get("phase") == "invoke" and event.get("verb") == "delete" and event.get("resource") == "pods"
                and event.get("grace_s") == 0 and not _is_system_client(str(event.get("client", "")))
            ):
                self.forced.setdefault(f"{event.get('namespace', '')}/{event.get('name', '')}", []).append(event["t"])
            elif (
                kind == "api-request" and event.get("verb") == "delete" and event.get("resource") == "pods"
                and event.get("code") == 200 and str(event.get("resource_version") or "").isdigit()
            ):
                request = str(event.get("id", ""))
                self.deleted_by[(f"{event.get('namespace', '')}/{event.get('name', '')}", int(event["resource_version"]))] = request.rsplit("/", 2)[0] if request.count("/") >= 2 else request
            elif kind == "gc-delete" and event.get("resource") == "persistentvolumeclaims":
                self.gc_claims.append(event)

    def controller_deleted(self, key: str, t: float, revision: int) -> bool:
        """Whether the StatefulSet controller wrote ``key``'s deletion at ``revision``: the
        API server's record of the delete that wrote it names a kube-controller-manager
        client, and the StatefulSet controller's record of a delete of it follows within
        ``RECORD_S`` (it records as its call returns; the controller-manager's other
        controllers -- taint manager, garbage collector -- share its client)."""
        if not self.deleted_by.get((key, revision), "").startswith("kube-controller-manager"):
            return False
        times = self.controller_deletes.get(key, [])
        index = bisect.bisect_left(times, t)
        return index < len(times) and times[index] - t <= RECORD_S

    def healthy_within(self, key: str, t: float, revisions: set[str] | None = None) -> bool:
        """Whether pod ``key`` was healthy (at one of ``revisions``, if given) at some
        moment of [t - lag, t]."""
        pod = self.store.get("pods", key)
        if _healthy(pod) and (revisions is None or _revision(pod) in revisions):
            return True
        seen = self.last_healthy.get(key, {})
        return any(when >= t - self.lag_s for revision, when in seen.items() if revisions is None or revision in revisions)

    def pods_of(self, set_key: str) -> list[tuple[int, str, Obj]]:
        namespace, _, name = set_key.partition("/")
        found = []
        for key, pod in self.store.in_namespace("pods", namespace):
            if _owner_set(pod) != name:
                continue
            ordinal = stateful_pod_ordinal(name, key.partition("/")[2])
            if ordinal is not None:
                found.append((ordinal, key, pod))
        return sorted(found)

    def apply(self, change: Change) -> None:
        t, key, before, after = change.t, change.key, change.before, change.after
        if change.resource == "nodes" and after is None:
            self.node_deleted[key] = t
        elif change.resource == "pods":
            owner = _owner_set(after) or _owner_set(before)
            if owner is not None:
                self.stateful_pods[key] = f"{key.partition('/')[0]}/{owner}"
            if _healthy(before):
                self.last_healthy.setdefault(key, {})[_revision(before)] = t
            if after is None:
                self.present_since.pop(key, None)
                self.live_since.pop(key, None)
                self.gone_at[key] = t
            else:
                if before is None or _uid(before) != _uid(after):
                    self.present_since[key] = t
                if is_deleting(after) or _terminal(after):
                    self.live_since.pop(key, None)
                else:
                    self.live_since.setdefault(key, t)


def _is_system_client(client: str) -> bool:
    """A kubelet's or a control-plane component's client (their force deletions are not a
    user's: a kubelet deletes with grace 0 once the containers stopped)."""
    return client.endswith("/kubelet") or client.startswith(("kube-controller-manager", "kube-scheduler", "kube-apiserver", "node-"))


# =========================================================================== the rules
def _on_create(view: _View, change: Change) -> list[Finding]:
    pod = change.after
    assert pod is not None
    name = _owner_set(pod)
    namespace, _, pod_name = change.key.partition("/")
    set_key = f"{namespace}/{name}"
    sts = view.store.get("statefulsets", set_key)
    ordinal = stateful_pod_ordinal(name or "", pod_name)
    if sts is None or ordinal is None:
        return []
    view.counts["creates"] += 1
    t = change.t
    rows = view.sets[set_key].window(t - view.lag_s, t) if set_key in view.sets else []
    start = _start(sts)
    largest = max([row[1] for row in rows] or [_replicas(sts)])
    if ordinal >= start + largest:
        return [Finding("statefulset-over-creation", t, f"statefulsets/{set_key}",
                        f"StatefulSet {set_key} created {change.key}, ordinal {ordinal}, at or past start + replicas = {start + largest} (the largest replicas of the last {view.lag_s:g} s)")]
    findings: list[Finding] = []
    if _policy(sts) == "OrderedReady":
        for predecessor in range(start, ordinal):
            other = f"{namespace}/{name}-{predecessor}"
            if not view.healthy_within(other, t):
                found = view.store.get("pods", other)
                state = "absent" if found is None else ("terminating" if is_deleting(found) else f"{found.get('status', {}).get('phase', 'Pending')}, {'Ready' if pod_ready(found) else 'not Ready'}")
                return [Finding("statefulset-ordered-creation", t, f"statefulsets/{set_key}",
                                f"StatefulSet {set_key} (OrderedReady) created {change.key} while its predecessor {other} had not been Running and Ready in the last {view.lag_s:g} s ({state})",
                                {"created": change.key, "predecessor": other, "predecessor_state": state})]
    # the revision a (re)created pod gets: newVersionedStatefulSetPod
    kinds = {row[2] for row in rows}
    partitions = {row[3] for row in rows}
    currents = {row[4] for row in rows}
    updates = {row[5] for row in rows}
    if kinds == {"RollingUpdate"} and len(partitions) == 1 and len(currents) == 1 and len(updates) == 1 and rows:
        (partition,), (current,), (update,) = partitions, currents, updates
        # judged only against a status written for the spec as it stood all through the
        # window: the controller computes the update revision from the spec's template at
        # each sync (getStatefulSetRevisions), so a spec changed since the last status write
        # (observedGeneration behind generation) may name another revision -- a rollback to
        # an earlier template reuses that template's revision
        settled = all(row[6] for row in rows)
        if partition is not None and current and update and current != update and settled and rows[0][0] <= t - view.lag_s:
            want = current if ordinal < start + partition else update
            if _revision(pod) != want:
                side = "below" if ordinal < start + partition else "at or above"
                findings.append(Finding("statefulset-partition", t, f"statefulsets/{set_key}",
                                        f"StatefulSet {set_key} created {change.key} at revision {_revision(pod) or '(none)'}, but ordinal {ordinal} is {side} the partition {partition}: it must be at {want} (currentRevision {current}, updateRevision {update})",
                                        {"created": change.key, "revision": _revision(pod), "want": want, "partition": partition}))
        else:
            view.counts["unjudged_revision"] += 1
    else:
        view.counts["unjudged_revision"] += 1
    for template in _templates(sts):
        claim = f"{namespace}/{stateful_claim_name(template, name or '', ordinal)}"
        view.counts["claims_checked"] += 1
        stored = view.store.get("persistentvolumeclaims", claim)
        if stored is None:
            findings.append(Finding("statefulset-claim", t, f"statefulsets/{set_key}",
                                    f"StatefulSet {set_key} created {change.key} before its claim {claim} of template {template!r} was in the store",
                                    {"created": change.key, "claim": claim}))
        uses = {(volume.get("persistentVolumeClaim") or {}).get("claimName") for volume in (pod.get("spec") or {}).get("volumes") or () if volume.get("name") == template}
        if uses != {claim.partition("/")[2]}:
            findings.append(Finding("statefulset-claim", t, f"statefulsets/{set_key}",
                                    f"{change.key}'s volume {template!r} mounts {sorted(str(use) for use in uses)}, not its own claim {claim}",
                                    {"created": change.key, "claim": claim}))
    return findings


def _on_delete(view: _View, change: Change) -> list[Finding]:
    """The controller marked (or removed) ``change.key``: rules 3 and 4."""
    pod = change.before
    assert pod is not None
    name = _owner_set(pod)
    namespace, _, pod_name = change.key.partition("/")
    set_key = f"{namespace}/{name}"
    sts = view.store.get("statefulsets", set_key)
    ordinal = stateful_pod_ordinal(name or "", pod_name)
    if sts is None or ordinal is None or is_deleting(sts) or _terminal(pod):
        return []  # a terminal pod is deleted to be recreated
    view.counts["controller_deletes"] += 1
    t = change.t
    rows = view.sets[set_key].window(t - view.lag_s, t) if set_key in view.sets else []
    start = _start(sts)
    smallest = min([row[1] for row in rows] or [_replicas(sts)])
    largest = max([row[1] for row in rows] or [_replicas(sts)])
    others = [(k, key, other) for k, key, other in view.pods_of(set_key) if key != change.key]
    if ordinal >= start + smallest:  # condemned (at some moment of the window)
        ordered = _policy(sts) == "OrderedReady"
        for k, key, other in others:
            if k <= ordinal:
                continue
            held = view.present_since.get(key) if ordered else view.live_since.get(key)
            if held is not None and held <= t - view.lag_s:
                what = "still in the store" if ordered else "live and not terminating"
                return [Finding("statefulset-termination-order", t, f"statefulsets/{set_key}",
                                f"StatefulSet {set_key} ({_policy(sts)}) deleted {change.key} while {key}, of a higher ordinal, had been {what} for {t - held:.1f} s: pods are terminated from the highest ordinal"
                                + (", each successor completely shut down first" if ordered else ""),
                                {"deleted": change.key, "successor": key, "since": held})]
        return []
    if ordinal >= start + largest:
        return []
    kinds = {row[2] for row in rows} or {_strategy(sts)[0]}
    if kinds == {"OnDelete"}:
        return [Finding("statefulset-on-delete", t, f"statefulsets/{set_key}",
                        f"StatefulSet {set_key} (updateStrategy OnDelete) deleted {change.key}, which is not condemned: OnDelete leaves pods to the user")]
    update = view.sets[set_key].update_after(t, view.lag_s) if set_key in view.sets else ""
    updates = {update}
    around = {row[5] for row in (view.sets[set_key].window(t - view.lag_s, t + view.lag_s) if set_key in view.sets else ())}
    if update and around == {_revision(pod)}:
        return [Finding("statefulset-rolling-update", t, f"statefulsets/{set_key}",
                        f"StatefulSet {set_key} deleted {change.key}, already at the update revision {_revision(pod)} and not condemned")]
    partitions = [row[3] for row in rows if row[3] is not None]
    if partitions and ordinal < start + min(partitions):
        return [Finding("statefulset-partition", t, f"statefulsets/{set_key}",
                        f"StatefulSet {set_key} deleted {change.key} to update it, but ordinal {ordinal} is below the partition {min(partitions)}: pods below the partition are not updated",
                        {"deleted": change.key, "partition": min(partitions)})]
    for k in range(ordinal + 1, start + smallest):
        key = f"{namespace}/{name}-{k}"
        if not view.healthy_within(key, t, updates):
            found = view.store.get("pods", key)
            state = "absent" if found is None else f"revision {_revision(found) or '(none)'}, {'terminating' if is_deleting(found) else found.get('status', {}).get('phase', 'Pending')}, {'Ready' if pod_ready(found) else 'not Ready'}"
            return [Finding("statefulset-rolling-update", t, f"statefulsets/{set_key}",
                            f"StatefulSet {set_key} deleted {change.key} to update it while {key} had not been Running and Ready at the update revision in the last {view.lag_s:g} s ({state}): one pod at a time, from the highest ordinal",
                            {"deleted": change.key, "successor": key, "successor_state": state, "update_revisions": sorted(updates)})]
    return []


def _identity(view: _View, events: Sequence[Event]) -> tuple[list[Finding], list[dict[str, Any]]]:
    findings: list[Finding] = []
    excused: list[dict[str, Any]] = []
    intervals = running_intervals(events)
    for key in sorted(view.stateful_pods):
        for since, until, node, other in _second_copies(intervals.get(key, [])):
            forced = [t for t in view.forced.get(key, ()) if t <= since]
            gone_nodes = [n for n in (node, other) if view.node_deleted.get(n, math.inf) <= since]
            row = {"pod": key, "from": since, "to": until, "nodes": [node, other]}
            if forced or gone_nodes:
                excused.append(row | {"explained_by": f"force deletion by a user at t={forced[-1]:.3f}" if forced else f"Node {gone_nodes[0]} deleted"})
                continue
            findings.append(Finding("statefulset-at-most-one", since, f"statefulsets/{view.stateful_pods[key]}",
                                    f"two pods of identity {key} ran at once, on {node} and {other}, from t={since:.3f} to {'the end' if math.isinf(until) else f't={until:.3f}'}, and no user force-deleted it",
                                    row))
    return findings, excused


def _at_end(view: _View) -> list[Finding]:
    findings = []
    for set_key, sts in sorted(view.store.objects("statefulsets").items()):
        if is_deleting(sts):
            continue
        pods = view.pods_of(set_key)
        start, replicas = _start(sts), _replicas(sts)
        if any(not _healthy(pod) for _, _, pod in pods):
            continue  # not settled: not judged
        ordinals = sorted(k for k, _, _ in pods)
        if ordinals != list(range(start, start + replicas)):
            findings.append(Finding("statefulset-exact", view.store.revision, f"statefulsets/{set_key}",
                                    f"StatefulSet {set_key} ended with ordinals {ordinals}, not {start}..{start + replicas - 1}"))
            continue
        namespace, _, name = set_key.partition("/")
        for template in _templates(sts):
            for k in ordinals:
                claim = f"{namespace}/{stateful_claim_name(template, name, k)}"
                if view.store.get("persistentvolumeclaims", claim) is None:
                    findings.append(Finding("statefulset-claim", view.store.revision, f"statefulsets/{set_key}", f"StatefulSet {set_key} ended without the claim {claim} of {name}-{k}"))
        kind, partition = _strategy(sts)
        update = (sts.get("status") or {}).get("updateRevision", "")
        if kind == "RollingUpdate" and not partition and update:
            behind = [key for _, key, pod in pods if _revision(pod) != update]
            if behind:
                findings.append(Finding("statefulset-rolling-update", view.store.revision, f"statefulsets/{set_key}",
                                        f"StatefulSet {set_key} ended with pods not at its update revision {update}: {', '.join(behind)}"))
    return findings


def check_statefulset_invariants(events: Sequence[Event], *, lag_s: float = LAG_S) -> Verdict:
    """Judge the StatefulSet rules (module docstring)."""
    view = _View(events, lag_s)
    findings: list[Finding] = []
    final_steady: bool | None = None
    end_t = 0.0
    changes = 0
    for event in events:
        if event["type"] == "kubernetes" and event.get("event") == "final":
            final_steady = bool(event.get("steady"))
            end_t = float(event["t"])
        for change in view.store.apply(event):
            changes += 1
            before, after = change.before, change.after
            if change.resource == "pods":
                if before is None and after is not None and _owner_set(after) is not None:
                    findings += _on_create(view, change)
                elif before is not None and not is_deleting(before) and (after is None or is_deleting(after)) and _owner_set(before) is not None:
                    if view.controller_deleted(change.key, change.t, change.revision):
                        findings += _on_delete(view, change)
            view.apply(change)
            if findings:
                return _violation(findings[0], view)
    if not view.sets:
        return nothing_to_judge("the store never held a StatefulSet: nothing to judge", (), {"changes": changes})
    identity, excused = _identity(view, events)
    identity += _retention_collections(view)
    if identity:
        return _violation(identity[0], view, excused)
    end = (_at_end(view) + _retention_at_end(view, end_t)) if final_steady else []
    if end:
        return _violation(end[0], view, excused)
    details = {"changes": changes, "sets": len(view.sets), **view.counts, "force_deleted": excused,
               "pods_judged_for_identity": len(view.stateful_pods), "judged_at_end": bool(final_steady),
               "retention_unjudged": view.retention_unjudged}
    note = f"; {len(excused)} identity overlap(s) after a user's force deletion (allowed: it may break at-most-one)" if excused else ""
    return Verdict(True, (
        f"{len(view.sets)} StatefulSet(s), {len(view.stateful_pods)} identities: at most one pod of each ran at a time; "
        f"{view.counts['creates']} creation(s) in order with their claims, {view.counts['controller_deletes']} controller deletion(s) in order and within the partition"
        f"{'; the end exact' if final_steady else '; the end not judged (the steady state did not hold at the end)'}{note}"
    ), (), details)


def _claim_ordinal(view: _View, set_key: str, claim_name: str) -> int | None:
    """The ordinal ``n`` when ``claim_name`` is ``<template>-<set>-<n>`` for one of the
    set's templates, else None."""
    name = set_key.partition("/")[2]
    for template in view.set_templates.get(set_key, ()):
        prefix = f"{template}-{name}-"
        if claim_name.startswith(prefix) and claim_name[len(prefix):].isdigit():
            return int(claim_name[len(prefix):])
    return None


def _retention_collections(view: _View) -> list[Finding]:
    """Rule 5, retention: the garbage collector deletes a claim of a set only as
    ``persistentVolumeClaimRetentionPolicy`` allows at some moment of the last ``lag_s``:
    whenDeleted=Delete while the set is being deleted or gone, or whenScaled=Delete while
    the claim's ordinal is condemned (past ``start + replicas``)."""
    findings = []
    for event in view.gc_claims:
        namespace, name = str(event.get("namespace", "")), str(event.get("name", ""))
        t = float(event["t"])
        for set_key in sorted(view.retention):
            if set_key.partition("/")[0] != namespace:
                continue
            ordinal = _claim_ordinal(view, set_key, name)
            if ordinal is None:
                continue
            view.counts["retention_judged"] += 1
            rows = _rows_in(view.retention[set_key], t - view.lag_s, t)
            if any((deleted == "Delete" and deleting) or (scaled == "Delete" and not start <= ordinal < start + replicas)
                   for _, deleted, scaled, start, replicas, deleting in rows):
                continue
            policy = "/".join(sorted({f"whenDeleted {row[1]}, whenScaled {row[2]}" for row in rows}))
            findings.append(Finding("statefulset-claim-retention", t, f"statefulsets/{set_key}",
                                    f"the garbage collector deleted claim {namespace}/{name} of StatefulSet {set_key} (ordinal {ordinal}), which its persistentVolumeClaimRetentionPolicy ({policy}) keeps: "
                                    f"{'the set was not being deleted' if all(not row[5] for row in rows) else 'whenDeleted is Retain'} and the ordinal was not condemned with whenScaled Delete",
                                    {"claim": f"{namespace}/{name}", "ordinal": ordinal}))
    return findings


def _rows_in(rows: list[tuple[float, str, str, int, int, bool]], start: float, end: float) -> list[tuple[float, str, str, int, int, bool]]:
    """The rows in effect at some moment of [start, end]."""
    times = [row[0] for row in rows]
    first = max(0, bisect.bisect_right(times, start) - 1)
    return rows[first:bisect.bisect_right(times, end)]


def _retention_at_end(view: _View, end_t: float) -> list[Finding]:
    """Rule 5, retention Delete honoured (judged at a steady end): no claim of a set deleted
    with whenDeleted=Delete, and no claim of a condemned ordinal of a set with
    whenScaled=Delete, is left live ``SETTLE_S`` after its set or its pod left the store
    (the garbage collector, then the pvc-protection controller, have removed it); a fresher
    one is listed in ``details.retention_unjudged``."""
    findings = []
    for set_key, rows in sorted(view.retention.items()):
        namespace = set_key.partition("/")[0]
        gone = view.set_gone.get(set_key)
        for key, claim in view.store.in_namespace("persistentvolumeclaims", namespace):
            if is_deleting(claim):
                continue
            ordinal = _claim_ordinal(view, set_key, key.partition("/")[2])
            if ordinal is None:
                continue
            if gone is not None:
                if rows[-1][1] != "Delete":
                    continue
                if gone > end_t - SETTLE_S:
                    view.retention_unjudged.append(key)
                    continue
                view.counts["retention_judged"] += 1
                findings.append(Finding("statefulset-claim-retention", end_t, f"statefulsets/{set_key}",
                                        f"claim {key} of StatefulSet {set_key}, deleted at t={gone:.1f} with whenDeleted Delete, was still in the store at the end",
                                        {"claim": key}))
                continue
            _, _, scaled, start, replicas, deleting = rows[-1]
            if deleting or start <= ordinal < start + replicas:
                continue
            pod_key = f"{namespace}/{set_key.partition('/')[2]}-{ordinal}"
            left = view.gone_at.get(pod_key)
            if view.store.get("pods", pod_key) is not None or left is None:
                continue
            if any(row[2] != "Delete" for row in _rows_in(rows, left - view.lag_s, end_t)):
                continue
            if left > end_t - SETTLE_S:
                view.retention_unjudged.append(key)
                continue
            view.counts["retention_judged"] += 1
            findings.append(Finding("statefulset-claim-retention", end_t, f"statefulsets/{set_key}",
                                    f"claim {key} of StatefulSet {set_key}'s scaled-down ordinal {ordinal} (whenScaled Delete) was still in the store at the end, {end_t - left:.1f} s after its pod left",
                                    {"claim": key, "ordinal": ordinal}))
    return findings


def _violation(finding: Finding, view: _View, excused: list[dict[str, Any]] | None = None) -> Verdict:
    return Verdict(False, finding.problem, (finding.to_json(),), {"rule": finding.rule, **view.counts, "force_deleted": excused or []})

"""The control plane's documented timers, judged from the journal: a component that acts
too early, too late, or faster than its rate limit is a finding even when the cluster
converges in the end.

Each bound is measured on the store's history (``raft-apply`` events replayed by
:class:`~chaoskube.checkers.replay.StoreReplay`): when a kubelet's heartbeat or a taint was
*stored* is ground truth; a controller can only act later than it, never earlier, so the
lower bounds need no allowance but one for informer lag where the controller may not have
seen a heartbeat yet. Upper bounds ("not much later") are judged only while the control
plane was healthy -- no fault on an etcd member, API server or controller-manager, and a
controller-manager acting as leader all along -- because a failover rightly restarts the
controllers' timers; the stretches left unjudged are counted. A clock fault on a
controller-manager or scheduler voids the bounds it spans (a component reads its own
clock: a jumped clock rightly makes it act early, as upstream).

1. **Node monitor grace** (kube-controller-manager ``--node-monitor-grace-period`` 40 s,
   ``--node-monitor-period`` 5 s; https://kubernetes.io/docs/concepts/architecture/nodes/#node-controller):
   a node's Ready condition turns Unknown in the store no earlier than grace after its last
   heartbeat (a change of its Lease's ``renewTime`` in ``kube-node-lease`` or of its Ready
   condition's ``lastHeartbeatTime``) minus :data:`INFORMER_LAG_S`, and no later than
   grace + two monitor periods + :data:`SLACK_S` after it: the controller notices a
   heartbeat at its next monitor pass (``tryUpdateNodeHealth`` stamps ``probeTimestamp``
   with the pass's time, up to a period after the renewal), and marks the node at the first
   pass after probe + grace (up to another period); the passes run a period apart *after*
   each one ends (``wait.Until``), so slow status writes delay them too
   (rolling-update-under-partition with BUGGIFY, seed 26: renewed at 12.28, noticed at the
   17.02 pass, marked by the 62.02 pass, stored at 62.40).
2. **NoExecute tolerationSeconds** (the pod's tolerations; the DefaultTolerationSeconds
   admission plugin's ``--default-not-ready-toleration-seconds`` and
   ``--default-unreachable-toleration-seconds``, 300 s;
   https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions):
   the taint manager deletes a pod no earlier than its shortest matching
   ``tolerationSeconds`` after its node got a NoExecute taint while it was bound there
   (upstream starts the timer when the work is first created and keeps it while taints
   remain: ``tainteviction/taint_eviction.go`` ``processPodOnNode``), and no later than
   that + :data:`EVICTION_SLACK_S`.
3. **Zone eviction rates** (``--node-eviction-rate`` 0.1/s, ``--secondary-node-eviction-rate``
   0.01/s, ``--unhealthy-zone-threshold`` 0.55, ``--large-cluster-size-threshold`` 50;
   https://kubernetes.io/docs/concepts/architecture/nodes/#rate-limits-on-eviction): the
   NoExecute taints that start evictions are added in a zone at most one per 1/rate
   seconds (a token bucket of burst 1) between the zone's state changes (``zone-state``
   events: the controller swaps in a new limiter then), none while a small zone is in
   PartialDisruption, none while every zone is fully disrupted (``node-disruption-mode``).
4. **Graceful termination** (``terminationGracePeriodSeconds``, 30 s by default;
   https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination): a
   container stopped for its pod's deletion is SIGKILLed (exit code 137) no earlier than the
   grace period after the deletion was stored.
5. **Leader election** (``--leader-elect-lease-duration`` 15 s;
   https://kubernetes.io/docs/concepts/architecture/leases/): a Lease in ``kube-system``
   passes from one holder to another no earlier than its ``leaseDurationSeconds`` after
   the previous holder's last write (a release, holder "", is not a holder).

Answers False with the first violation in time; unknown when the journal has no store
history; True otherwise, with every contract's counts in ``details``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.replay import RunHealth, StoreReplay, labels_of, run_health
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["INFORMER_LAG_S", "SLACK_S", "TimingConfig", "check_timing_contracts"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: How long a controller's informer may trail the store (the API servers' cache bound of
#: :mod:`chaoskube.checkers.authorization`): a heartbeat stored this recently may be unseen.
INFORMER_LAG_S = 10.0
#: API round trips and a monitor pass: how much later than its timer a healthy controller acts.
SLACK_S = 5.0
#: The taint manager's deletion after its timer: workers and a status update and delete.
EVICTION_SLACK_S = 10.0
#: Store writes of one controller decision land within this of each other.
EPSILON_S = 0.5
NO_EXECUTE_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


@dataclass(frozen=True, slots=True)
class TimingConfig:
    """The timers, as the cluster runs them (defaults: the flags' defaults)."""

    node_monitor_grace_period_s: float = 40.0
    node_monitor_period_s: float = 5.0
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    default_grace_period_s: float = 30.0


# =========================================================================== object helpers
def _ready(node: Obj | None) -> tuple[str | None, str | None]:
    """(status, lastHeartbeatTime) of a node's Ready condition."""
    for condition in ((node or {}).get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition.get("status"), condition.get("lastHeartbeatTime")
    return None, None


def _no_execute(node: Obj | None) -> set[str]:
    return {taint.get("key", "") for taint in ((node or {}).get("spec") or {}).get("taints") or () if taint.get("effect") == "NoExecute"}


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint`` (``k8s.io/api/core/v1/toleration.go``)."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def min_toleration_s(pod: Obj, taints: list[Obj]) -> float | None:
    """``GetMatchingTolerations`` then ``getMinTolerationTime``: for each NoExecute taint the
    pod's *first* toleration that tolerates it; 0 when a taint is not tolerated (or a used
    toleration has tolerationSeconds <= 0), None (for ever) when no used toleration has
    seconds, else the shortest."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    shortest: float | None = None
    for taint in taints:
        used = next((t for t in tolerations if _tolerates(t, taint)), None)
        if used is None:
            return 0.0
        seconds = used.get("tolerationSeconds")
        if seconds is None:
            continue
        if float(seconds) <= 0:
            return 0.0
        shortest = float(seconds) if shortest is None else min(shortest, float(seconds))
    return shortest


def _zone(node: Obj | None) -> str:
    labels = labels_of(node or {})
    zone = next((labels[label] for label in ZONE_LABELS if label in labels), "")
    region = next((labels[label] for label in REGION_LABELS if label in labels), "")
    return f"{region}/{zone}" if region else zone


# =========================================================================== the checker
@dataclass
class _NodeTrack:
    heartbeats: list[float] = field(default_factory=list)
    ready: str | None = None
    heartbeat_stamp: str | None = None
    marks: list[float] = field(default_factory=list)  # Ready went Unknown
    tainted_since: float | None = None  # NoExecute taints present since


@dataclass
class _Findings:
    first: Verdict | None = None
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    unjudged: dict[str, int] = field(default_factory=dict)

    def count(self, contract: str, what: str) -> None:
        bucket = self.counts.setdefault(contract, {"judged": 0, "findings": 0})
        bucket[what] = bucket.get(what, 0) + 1

    def skip(self, contract: str, why: str) -> None:
        self.unjudged[f"{contract}: {why}"] = self.unjudged.get(f"{contract}: {why}", 0) + 1

    def found(self, contract: str, t: float, reason: str, evidence: tuple[Any, ...]) -> None:
        self.count(contract, "findings")
        if self.first is None or t < self.first.details.get("t", float("inf")):
            self.first = Verdict(False, f"{contract}: {reason}", evidence, {"t": t})


def check_timing_contracts(events: Iterable[Event], config: TimingConfig | None = None) -> Verdict:
    """Judge the control plane's timers over a cluster's journal (module docstring)."""
    config = config or TimingConfig()
    events = list(events)
    if not events:
        return Verdict(None, "the journal is empty")
    end_t = events[-1]["t"]
    health = run_health(events, end_t, "kube-controller-manager")
    findings = _Findings()
    store = StoreReplay(("nodes", "leases", "pods"))
    nodes: dict[str, _NodeTrack] = {}
    pods_deleting: dict[str, float] = {}  # pod key -> when its deletion was stored
    pod_grace: dict[str, float] = {}
    pod_node_since: dict[str, tuple[str, float]] = {}  # pod key -> (node, bound since)
    lease_holders: dict[str, tuple[str, float, float]] = {}  # lease key -> (holder, last write t, duration)
    zone_states: dict[str, str] = {}
    zone_taints: dict[str, float] = {}  # zone -> time of the last NoExecute taint since its state changed
    all_disrupted = False
    evictions: list[Event] = []
    for event in events:
        kind = event.get("type")
        if kind == "zone-state":
            zone_states[event.get("zone", "")] = event.get("state", "")
            zone_taints.pop(event.get("zone", ""), None)  # a new limiter (SwapLimiter)
            continue
        if kind == "node-disruption-mode":
            all_disrupted = event.get("event") == "enter"
            continue
        if kind == "taint-eviction":
            evictions.append(event)
            continue
        if kind == "container-exit" and event.get("cause") == "deletion":
            _judge_grace(event, pods_deleting, pod_grace, config, findings)
            continue
        for change in store.apply(event):
            if change.resource == "leases":
                _judge_lease(change, lease_holders, nodes, health, findings)
            elif change.resource == "nodes":
                _node_change(change, nodes, zone_states, zone_taints, all_disrupted, config, health, findings, store)
            else:
                _pod_change(change, pods_deleting, pod_grace, pod_node_since, config)
    if not store.revisions_applied:
        return Verdict(None, "the journal has no store history (raft-apply events)")
    _judge_marks(nodes, health, config, end_t, findings)
    _judge_evictions(evictions, store, events, pod_node_since, nodes, health, findings)
    details = {"contracts": dict(sorted(findings.counts.items())), "unjudged": dict(sorted(findings.unjudged.items()))}
    if findings.first is not None:
        return Verdict(False, findings.first.reason, findings.first.evidence, {**details, "t": findings.first.details["t"]})
    judged = sum(bucket["judged"] for bucket in findings.counts.values())
    if not judged:
        return nothing_to_judge("no timer of the control plane ran in this journal (no node went silent, no taint, no eviction, no lease handover)", details=details)
    parts = ", ".join(f"{name} {bucket['judged']}" for name, bucket in sorted(findings.counts.items()))
    return Verdict(True, f"{judged} timed action(s) within their documented bounds ({parts})", details=details)


# -- node heartbeats, marks and taints ------------------------------------------------------
def _node_change(change: Any, nodes: dict[str, _NodeTrack], zone_states: dict[str, str], zone_taints: dict[str, float],
                 all_disrupted: bool, config: TimingConfig, health: RunHealth, findings: _Findings, store: StoreReplay) -> None:
    track = nodes.setdefault(change.key, _NodeTrack())
    status, stamp = _ready(change.after)
    if status in ("True", "False") and stamp and stamp != track.heartbeat_stamp:
        track.heartbeats.append(change.t)
    if stamp:
        track.heartbeat_stamp = stamp
    if status == "Unknown" and track.ready != "Unknown":
        track.marks.append(change.t)
    track.ready = status
    before, after = _no_execute(change.before), _no_execute(change.after)
    if after and not before:
        track.tainted_since = change.t
    elif not after:
        track.tainted_since = None
    added = {key for key in after - before if key in NO_EXECUTE_KEYS}
    if added:
        _judge_rate(change, _zone(change.after), zone_states, zone_taints, all_disrupted, config, store, findings)


def _judge_rate(change: Any, zone: str, zone_states: dict[str, str], zone_taints: dict[str, float], all_disrupted: bool,
                config: TimingConfig, store: StoreReplay, findings: _Findings) -> None:
    contract = "zone eviction rate"
    findings.count(contract, "judged")
    state = zone_states.get(zone, "Normal")
    zone_size = sum(1 for node in store.objects("nodes").values() if _zone(node) == zone)
    evidence = ({**change.summary(), "node": change.key, "zone": zone, "zone_state": state},)
    if all_disrupted:
        findings.found(contract, change.t, f"node {change.key} was tainted NoExecute at t={change.t:.3f} while every zone was fully disrupted (evictions stop in master disruption mode)", evidence)
        return
    if state == "PartialDisruption":
        rate = config.secondary_node_eviction_rate if zone_size > config.large_cluster_size_threshold else 0.0
    else:
        rate = config.node_eviction_rate
    if rate <= 0:
        findings.found(contract, change.t, f"node {change.key} was tainted NoExecute at t={change.t:.3f} in zone {zone!r}, PartialDisruption with {zone_size} node(s) (<= --large-cluster-size-threshold {config.large_cluster_size_threshold}): the rate is 0", evidence)
        return
    previous = zone_taints.get(zone)
    zone_taints[zone] = change.t
    if previous is not None and change.t - previous < 1.0 / rate - EPSILON_S:
        findings.found(contract, change.t, f"zone {zone!r} tainted node {change.key} NoExecute {change.t - previous:.3f} s after the previous one, faster than {rate:g}/s ({1.0 / rate:g} s apart, --node-eviction-rate)",
                       ({**evidence[0], "previous_taint_t": previous},))


def _judge_marks(nodes: dict[str, _NodeTrack], health: RunHealth, config: TimingConfig, end_t: float, findings: _Findings) -> None:
    grace, period = config.node_monitor_grace_period_s, config.node_monitor_period_s
    contract = "node monitor grace"
    for name, track in sorted(nodes.items()):
        if not track.heartbeats:
            continue
        for mark in track.marks:
            last = max((t for t in track.heartbeats if t <= mark), default=None)
            if last is None:
                continue  # not Ready yet: the startup grace applies
            findings.count(contract, "judged")
            if mark - last < grace - INFORMER_LAG_S and not health.clock_fault(last, mark):
                findings.found(contract, mark, f"node {name} was marked Unknown at t={mark:.3f}, {mark - last:.3f} s after its last heartbeat at t={last:.3f}: earlier than --node-monitor-grace-period {grace:g} s (less {INFORMER_LAG_S:g} s of informer lag)",
                               ({"type": "store", "t": mark, "object": f"nodes/{name}", "change": "Ready=Unknown", "last_heartbeat_t": last},))
        beats = [*track.heartbeats, end_t]
        for last, following in zip(beats, beats[1:]):
            deadline = last + grace + 2 * period + SLACK_S
            if following < deadline:
                continue
            if any(last < mark <= deadline for mark in track.marks):
                findings.count(contract, "judged")
                continue
            if not health.healthy(last, deadline):
                findings.skip(contract, "the control plane was faulted or leaderless")
                continue
            findings.count(contract, "judged")
            findings.found(contract, deadline, f"node {name} went silent at t={last:.3f} and was not marked Unknown by t={deadline:.3f} (--node-monitor-grace-period {grace:g} s + 2 x --node-monitor-period {period:g} s + {SLACK_S:g} s), with the control plane healthy",
                           ({"type": "store", "t": last, "object": f"nodes/{name}", "change": "last heartbeat", "deadline_t": deadline},))


# -- taint evictions --------------------------------------------------------------------------
def _pod_change(change: Any, pods_deleting: dict[str, float], pod_grace: dict[str, float], pod_node_since: dict[str, tuple[str, float]], config: TimingConfig) -> None:
    before, after = change.before or {}, change.after
    if after is None:
        pods_deleting.setdefault(change.key, change.t)
        return
    meta = after.get("metadata") or {}
    if meta.get("deletionTimestamp") and not (before.get("metadata") or {}).get("deletionTimestamp"):
        pods_deleting[change.key] = change.t
        grace = meta.get("deletionGracePeriodSeconds")
        pod_grace[change.key] = float(grace) if grace is not None else float((after.get("spec") or {}).get("terminationGracePeriodSeconds", config.default_grace_period_s))
    node = (after.get("spec") or {}).get("nodeName", "")
    if node and (before.get("spec") or {}).get("nodeName", "") != node:
        pod_node_since[change.key] = (node, change.t)


def _judge_evictions(evictions: list[Event], store: StoreReplay, events: list[Event], pod_node_since: dict[str, tuple[str, float]],
                     nodes: dict[str, _NodeTrack], health: RunHealth, findings: _Findings) -> None:
    """Both bounds of the taint manager: replay again, following every pod bound to a node
    with NoExecute taints (its timer: since when, how long), judging each deletion against
    its timer and each timer that ran out with the pod still there."""
    contract = "NoExecute tolerationSeconds"
    pending = sorted(evictions, key=lambda e: e["t"])
    replay = StoreReplay(("nodes", "pods"))
    tainted_since: dict[str, float] = {}
    bound_since: dict[str, float] = {}
    timers: dict[str, tuple[str, float, float]] = {}  # pod -> (node, start, toleration) while it runs
    late: set[str] = set()
    due: float | None = None  # the earliest deadline of a running timer not yet judged; None: to compute
    index = 0
    for event in events:
        while index < len(pending) and pending[index]["t"] <= event["t"]:
            _judge_one_eviction(pending[index], replay, tainted_since, bound_since, health, findings, contract)
            index += 1
        touched_nodes, touched_pods = set(), set()
        for change in replay.apply(event):
            if change.resource == "nodes":
                before, after = _no_execute(change.before), _no_execute(change.after)
                if after and not before:
                    tainted_since[change.key] = change.t
                elif not after:
                    tainted_since.pop(change.key, None)
                touched_nodes.add(change.key)
            else:
                touched_pods.add(change.key)
                if change.after is not None:
                    node = (change.after.get("spec") or {}).get("nodeName", "")
                    if node and ((change.before or {}).get("spec") or {}).get("nodeName", "") != node:
                        bound_since[change.key] = change.t
                    if (change.after.get("metadata") or {}).get("deletionTimestamp") and not ((change.before or {}).get("metadata") or {}).get("deletionTimestamp"):
                        bound_since.setdefault(f"deleted:{change.key}", change.t)
        if touched_nodes or touched_pods:
            _update_timers(replay, timers, tainted_since, bound_since, touched_nodes, touched_pods)
            due = None
        if due is None:
            due = min((start + tolerate_s + EVICTION_SLACK_S for key, (_, start, tolerate_s) in timers.items() if key not in late), default=math.inf)
        if event["t"] <= due:
            continue  # no timer ran out: the loop below would judge nothing
        due = None
        for key, (node, start, tolerate_s) in list(timers.items()):
            deadline = start + tolerate_s + EVICTION_SLACK_S
            if key in late or event["t"] <= deadline:
                continue
            late.add(key)
            if not health.healthy(start, deadline):
                findings.skip(contract, "the control plane was faulted or leaderless")
                continue
            findings.count(contract, "judged")
            findings.found(contract, deadline, f"pod {key} stayed on {node} (NoExecute-tainted since t={start:.3f}) past its tolerationSeconds {tolerate_s:g} + {EVICTION_SLACK_S:g} s (t={deadline:.3f}), with the control plane healthy",
                           ({"type": "store", "t": start, "object": f"pods/{key}", "node": node, "toleration_s": tolerate_s, "deadline_t": deadline},))
    while index < len(pending):
        _judge_one_eviction(pending[index], replay, tainted_since, bound_since, health, findings, contract)
        index += 1


def _update_timers(replay: StoreReplay, timers: dict[str, tuple[str, float, float]], tainted_since: dict[str, float],
                   bound_since: dict[str, float], touched_nodes: set[str], touched_pods: set[str]) -> None:
    """The taint manager's work per pod: a pod bound to a tainted node, not being deleted,
    with a finite toleration has a timer from max(taint, binding); it keeps its start while
    the taints remain (``processPodOnNode`` keeps the work's CreatedAt)."""
    candidates = set(touched_pods)
    if touched_nodes:
        candidates |= {key for key, pod in replay.objects("pods").items() if (pod.get("spec") or {}).get("nodeName", "") in touched_nodes}
        candidates |= {key for key, (node, _, _) in timers.items() if node in touched_nodes}
    for key in sorted(candidates):
        pod = replay.get("pods", key)
        node_name = (pod or {}).get("spec", {}).get("nodeName", "") if pod else ""
        node = replay.get("nodes", node_name) if node_name else None
        deleting = bool(((pod or {}).get("metadata") or {}).get("deletionTimestamp"))
        taints = [t for t in ((node or {}).get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]
        if pod is None or node is None or deleting or not taints or node_name not in tainted_since:
            timers.pop(key, None)
            continue
        tolerate_s = min_toleration_s(pod, taints)
        if tolerate_s is None:
            timers.pop(key, None)
            continue
        start = max(tainted_since[node_name], bound_since.get(key, 0.0))
        current = timers.get(key)
        if current is not None and current[0] == node_name:
            start = current[1]
        timers[key] = (node_name, start, tolerate_s)


def _judge_one_eviction(event: Event, replay: StoreReplay, tainted_since: dict[str, float], bound_since: dict[str, float],
                        health: RunHealth, findings: _Findings, contract: str) -> None:
    key, node_name = event.get("pod", ""), event.get("node", "")
    pod, node = replay.get("pods", key), replay.get("nodes", node_name)
    if pod is None or node is None or node_name not in tainted_since:
        findings.skip(contract, "pod or node taint not in the store")
        return
    # The controller journals its deletion once its delete call returned: the store write
    # came before. (A pod another party deleted first -- a rollout -- has an earlier
    # deletionTimestamp that is not the taint manager's doing.)
    deleted_at = event["t"]
    taints = [t for t in (node.get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]
    tolerate_s = min_toleration_s(pod, taints)
    start = max(tainted_since[node_name], bound_since.get(key, 0.0))
    findings.count(contract, "judged")
    if tolerate_s is None:
        findings.found(contract, deleted_at, f"pod {key} tolerates every NoExecute taint of {node_name} for ever, yet the taint manager deleted it at t={deleted_at:.3f}",
                       ({"type": "taint-eviction", "t": event["t"], "pod": key, "node": node_name},))
        return
    if deleted_at - start < tolerate_s - EPSILON_S and not health.clock_fault(start, deleted_at):
        findings.found(contract, deleted_at, f"pod {key} was deleted by the taint manager at t={deleted_at:.3f}, {deleted_at - start:.3f} s after {node_name} got its NoExecute taint (t={start:.3f}): earlier than its tolerationSeconds {tolerate_s:g}",
                       ({"type": "taint-eviction", "t": event["t"], "pod": key, "node": node_name, "tainted_since": start, "toleration_s": tolerate_s},))


# -- graceful termination ------------------------------------------------------------------------
def _judge_grace(event: Event, pods_deleting: dict[str, float], pod_grace: dict[str, float], config: TimingConfig, findings: _Findings) -> None:
    contract = "termination grace period"
    key = event.get("pod", "")
    if event.get("exit_code") != 137:
        return
    started = pods_deleting.get(key)
    if started is None:
        findings.skip(contract, "deletion not in the store")
        return
    stopped = event["t"] - float(event.get("exited_ago_s", 0.0))
    grace = pod_grace.get(key, config.default_grace_period_s)
    findings.count(contract, "judged")
    if stopped - started < grace - EPSILON_S:
        findings.found(contract, stopped, f"container {event.get('container')} of {key} was SIGKILLed at t={stopped:.3f}, {stopped - started:.3f} s after the pod's deletion (t={started:.3f}): earlier than its grace period {grace:g} s",
                       ({"type": "container-exit", "t": event["t"], "pod": key, "container": event.get("container"), "deletion_t": started, "grace_s": grace},))


# -- leader election -------------------------------------------------------------------------------
def _judge_lease(change: Any, holders: dict[str, tuple[str, float, float]], nodes: dict[str, _NodeTrack], health: RunHealth, findings: _Findings) -> None:
    namespace, _, name = change.key.partition("/")
    spec = (change.after or {}).get("spec") or {}
    if namespace == "kube-node-lease":
        before_renew = ((change.before or {}).get("spec") or {}).get("renewTime")
        if change.after is not None and spec.get("renewTime") != before_renew:
            nodes.setdefault(name, _NodeTrack()).heartbeats.append(change.t)
        return
    if namespace != "kube-system" or change.after is None:
        return
    holder = spec.get("holderIdentity") or ""
    duration = float(spec.get("leaseDurationSeconds") or 15)
    previous = holders.get(change.key)
    holders[change.key] = (holder, change.t, duration)
    if previous is None or not holder or not previous[0] or previous[0] == holder:
        return
    contract = "leader election lease duration"
    findings.count(contract, "judged")
    last_write, lease_s = previous[1], previous[2]
    if change.t - last_write < lease_s - EPSILON_S and not health.clock_fault(last_write, change.t):
        findings.found(contract, change.t, f"Lease {change.key} passed from {previous[0]} to {holder} at t={change.t:.3f}, {change.t - last_write:.3f} s after the holder's last renewal (t={last_write:.3f}): before its leaseDurationSeconds {lease_s:g} (--leader-elect-lease-duration)",
                       ({**change.summary(), "from": previous[0], "to": holder, "last_renewal_t": last_write},))

"""Service availability, as a user of each Service saw it: failed requests and outages.

Input: the ``traffic`` records of :class:`chaoskube.node.proxy.TrafficProbe`, ``{"type":
"traffic", "t", "node", "service", "port", "outcome": "ok" | "no-endpoints" | "refused" |
"timeout", "latency_s", "endpoint"}``: one per request sent through a node's kube-proxy
rules, recorded when it ended (``t``; it started at ``t - latency_s``). Any outcome but
``ok`` is a failure: no ready endpoint in the rules ("no-endpoints"; kube-proxy then
rejects the connection, as its REJECT rule for a Service without endpoints does), a
connection refused by a dead or absent pod, or no answer in time.

Figures, per Service (``namespace/name``, all ports and probing nodes together):

- the fraction of failed requests;
- the longest outage: a run of consecutive failed requests, in the order they ended, lasts
  from the start of its first failure to the start of the first successful request after
  it (from then on the Service worked again), or to the end of its last failure when no
  success follows (the outage is then ``ongoing`` at the end of the journal). A lone
  failure with no latency is an outage of 0 s: one observation, no duration.

``check_service_availability`` answers False when a Service exceeds ``max_failed_fraction``
or ``max_outage_s`` (a longest outage over the bound first, then the fraction; Services in
name order), unknown when there is no traffic record (in ``between``, a (from, to) window
of record times, when given), and True otherwise; the reason always carries the figures.
Evidence: the first and last failures of the outage and the success that ended it, or the
first and last failures for a fraction over its bound.

With an error budget, ``max_outage_s`` is charged only with unexplained failures: an
outage made of explained failures alone (every endpoint's node cut off, as when a swizzle
clogs every node) is the documented window, not a finding.

**Error budget** (``error_budget``, a fraction of each Service's requests; the
kubernetes system's default is :data:`DEFAULT_ERROR_BUDGET`, 1 %): only *unexplained*
failures count against it. A failure is explained when it ended inside a window the
experiment declares as expected (``expected``, absolute (from, to) times), or when it was
sent to an endpoint whose node could not reach the control plane, for as long as
Kubernetes lets such an endpoint stay ready (below) plus :data:`PROXY_SYNC_S` for
kube-proxy to drop it, and, when the node's machine went down (its containers died with
it), for :data:`REBOOT_SETTLE_S` after it is reachable again, while its kubelet starts the
containers again -- the documented window ("the Service may fail requests to the dead
endpoint until it is dropped"). So a Service rotating over three endpoints with one dead
for five minutes fails about a third of its requests for those five minutes, and only the
first minute or so is explained.

A failure is also explained when it was sent to an endpoint the store's EndpointSlice still
held ready (then, or up to :data:`PROXY_SYNC_S` before: kube-proxy applies a slice change
within its sync) after its pod stopped serving (marked for deletion, not Ready, or gone: the
store's view of the pod at that IP), within :data:`ENDPOINT_SYNC_BOUND_S` of that change
under an acting kube-controller-manager leader plus :data:`PROXY_SYNC_S`: the EndpointSlice
controller had not written the change yet, or kube-proxy had not applied it, and it routes
by the slices alone -- the race a rolling update's terminating pods lose without a preStop
delay (kubernetes-pinned-kubelets-etcd-failover with BUGGIFY, seed 71). While
no leader acts (killed, paused, its lease not yet taken over), slices stay as they were, and
the window waits for one (``controller-manager-kill-after-pod-creates``: a pod deleted 11 ms
before the acting controller-manager was killed kept its ready endpoint for 15 s).

**Dead endpoints** (with ``nodes``): an EndpointSlice endpoint that stays ready while its
node is down or cut off from every API server (its process killed or paused, its kubelet
stopped, or the grudge dropping its messages to each API server or theirs to it) for
longer than the node lifecycle controller's ``--node-monitor-grace-period`` (40 s) plus
its ``--node-monitor-period`` (5 s) plus :data:`ENDPOINT_SYNC_BOUND_S` for the
EndpointSlice controller to write the change is a finding (the node controller marks the
pods of an unreachable node NotReady: ``pkg/controller/nodelifecycle`` ``MarkPodsNotReady``;
the EndpointSlice controller then marks their endpoints not ready). The grace counts from
the later of the node's loss and the current kube-controller-manager leader's start (a new
leader gives every node a full grace period), and only while a leader acts. Evidence: the
endpoint, the node, since when it was unreachable and until when the endpoint stayed ready.

Non-guarantees: the figures are only as dense as the probes (an outage shorter than the
probe interval can fall between two requests), and requests from several nodes interleave:
one node's success ends another node's run of failures. Endpoints are tied to nodes by
their ``nodeName`` and traffic failures by the pod IP (each node's pod IPs come from its
own range).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.replay import CONTROLLER_MANAGER_LEASE, StoreReplay, acting_intervals, deadline_under_leader, endpoint_ready_intervals, is_deleting, pod_ready
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = [
    "DEFAULT_ERROR_BUDGET",
    "ServiceFigures",
    "check_service_availability",
    "dead_endpoints",
    "node_unreachable",
    "service_figures",
]

Event = dict[str, Any]

#: The kubernetes system's default error budget: 1 % of a Service's requests may fail
#: without an explanation (a blip at heal when kube-proxies relist, a request racing a
#: graceful termination). A quarter of requests failing for minutes is far beyond it.
DEFAULT_ERROR_BUDGET = 0.01
#: kube-controller-manager ``--node-monitor-grace-period`` (40 s) and
#: ``--node-monitor-period`` (5 s).
NODE_MONITOR_GRACE_S = 40.0
NODE_MONITOR_PERIOD_S = 5.0
#: The EndpointSlice controller's reaction to a pod turning NotReady: informer delivery,
#: ``endpointSliceChangeMinSyncDelay`` (1 s), a retry after its 1 s initial backoff, the
#: write: bounded by 10 s here.
ENDPOINT_SYNC_BOUND_S = 10.0
#: kube-proxy applying an EndpointSlice change (informer delivery and ``minSyncPeriod`` 1 s).
PROXY_SYNC_S = 5.0
DEAD_ENDPOINT_BOUND_S = NODE_MONITOR_GRACE_S + NODE_MONITOR_PERIOD_S + ENDPOINT_SYNC_BOUND_S
#: A node whose machine went down (killed, powered off) and came back shorter than the
#: grace period: its pods' endpoints never turned not ready, and its containers are gone
#: until the kubelet, reachable again, re-lists its pods, starts their containers again
#: and reports them (PLEG relist 1 s, the container's start, the status manager's write;
#: "Container restart policy", https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#restart-policy).
#: Requests to those endpoints fail for that long after the node is reachable again.
REBOOT_SETTLE_S = 15.0


@dataclass(slots=True)
class ServiceFigures:
    service: str
    requests: int = 0
    failed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    outages: int = 0
    longest_outage_s: float = 0.0
    outage_evidence: tuple[Event, ...] = ()
    ongoing: bool = False
    first_failure: Event | None = None
    last_failure: Event | None = None

    @property
    def failed_fraction(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def text(self) -> str:
        outage = f"longest outage {self.longest_outage_s:.2f} s"
        if self.outage_evidence:
            outage += f" from t={_start(self.outage_evidence[0]):.3f}" + (" (ongoing)" if self.ongoing else "")
        return f"{self.service}: {self.failed}/{self.requests} failed ({100 * self.failed_fraction:.1f}%), {outage}"

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "failed": self.failed, "failed_fraction": self.failed_fraction,
            "outcomes": dict(sorted(self.outcomes.items())), "outages": self.outages, "longest_outage_s": self.longest_outage_s,
            "outage_from": _start(self.outage_evidence[0]) if self.outage_evidence else None, "ongoing": self.ongoing,
        }


def _start(record: Event) -> float:
    return record["t"] - float(record.get("latency_s", 0.0))


def service_figures(events: Iterable[Event], between: tuple[float, float] | None = None) -> dict[str, ServiceFigures]:
    """The figures of every Service that has traffic records (in ``between``), by name."""
    records: dict[str, list[Event]] = {}
    for event in events:
        if event.get("type") != "traffic":
            continue
        if between is not None and not between[0] <= event["t"] <= between[1]:
            continue
        records.setdefault(event["service"], []).append(event)
    return {service: _figures(service, rows) for service, rows in sorted(records.items())}


def _figures(service: str, rows: list[Event]) -> ServiceFigures:
    rows = sorted(rows, key=lambda row: row["t"])  # stable: journal order breaks ties
    figures = ServiceFigures(service)
    run: list[Event] = []

    def close(recovery: Event | None) -> None:
        if not run:
            return
        figures.outages += 1
        end = max(_start(recovery), _start(run[0])) if recovery is not None else run[-1]["t"]
        length = end - _start(run[0])
        if length > figures.longest_outage_s or figures.outages == 1:
            figures.longest_outage_s = length
            figures.outage_evidence = _unique((run[0], run[-1], recovery) if recovery is not None else (run[0], run[-1]))
            figures.ongoing = recovery is None
        run.clear()

    for row in rows:
        outcome = row.get("outcome", "")
        figures.requests += 1
        figures.outcomes[outcome] = figures.outcomes.get(outcome, 0) + 1
        if outcome == "ok":
            close(row)
            continue
        figures.failed += 1
        figures.first_failure = figures.first_failure or row
        figures.last_failure = row
        run.append(row)
    close(None)
    return figures


def _unique(records: tuple[Event, ...]) -> tuple[Event, ...]:
    seen: list[Event] = []
    for record in records:
        if not any(record is other for other in seen):
            seen.append(record)
    return tuple(seen)


def check_service_availability(
    events: Sequence[Event],
    *,
    max_failed_fraction: float | None = None,
    max_outage_s: float | None = None,
    between: tuple[float, float] | None = None,
    error_budget: float | None = None,
    expected: Sequence[tuple[float, float]] = (),
    nodes: Sequence[str] = (),
    api_servers: Sequence[str] = (),
) -> Verdict:
    """Judge what the traffic probes saw against the caller's bounds (module docstring):
    the longest outage, the failed fraction, the error budget of unexplained failures, and
    (with ``nodes``) dead endpoints."""
    assert max_failed_fraction is None or 0.0 <= max_failed_fraction <= 1.0, max_failed_fraction
    assert max_outage_s is None or max_outage_s >= 0.0, max_outage_s
    assert error_budget is None or 0.0 <= error_budget <= 1.0, error_budget
    figures = service_figures(events, between)
    dead: list[dict[str, Any]] = []
    unreachable: dict[str, list[tuple[float, float]]] = {}
    if nodes:
        unreachable = node_unreachable(events, nodes, api_servers)
        dead = dead_endpoints(events, unreachable)
    if not figures and not dead:
        window = f" between t={between[0]} and t={between[1]}" if between is not None else ""
        return nothing_to_judge(f"no traffic record{window}: no Service was probed")
    details: dict[str, Any] = {service: row.to_json() for service, row in figures.items()}
    unexplained: dict[str, list[Event]] = {}
    if error_budget is not None and figures:
        unexplained = _unexplained_failures(events, figures, expected, unreachable, between)
        for service, rows in unexplained.items():
            details[service]["unexplained"] = len(rows)
            details[service]["unexplained_fraction"] = len(rows) / figures[service].requests if figures[service].requests else 0.0
    summary = "; ".join(row.text() + (f", {len(unexplained.get(service, ()))} unexplained" if error_budget is not None else "") for service, row in figures.items())
    if dead:
        details["dead_endpoints"] = dead
        first = dead[0]
        return Verdict(
            False,
            f"dead endpoint: {first['endpoint']} of {first['service']} stayed ready from t={first['ready_until_s']:.3f} while its node {first['node']} was unreachable since t={first['unreachable_since_s']:.3f} (bound {DEAD_ENDPOINT_BOUND_S:g} s); {summary}",
            tuple(dead[:4]), details,
        )
    charged = _charged_outages(events, figures, unexplained, between) if error_budget is not None and max_outage_s is not None else figures
    for service, row in figures.items():
        outage = charged[service]
        if max_outage_s is not None and outage.longest_outage_s > max_outage_s:
            return Verdict(False, f"outage over {max_outage_s} s: {summary}", outage.outage_evidence, details)
        if max_failed_fraction is not None and row.failed_fraction > max_failed_fraction:
            assert row.first_failure is not None and row.last_failure is not None
            evidence = _unique((row.first_failure, row.last_failure))
            return Verdict(False, f"failed fraction over {100 * max_failed_fraction:.1f}%: {summary}", evidence, details)
        rows = unexplained.get(service, [])
        if error_budget is not None and row.requests and len(rows) / row.requests > error_budget:
            return Verdict(False, f"error budget of {100 * error_budget:g}% spent: {service} failed {len(rows)} of {row.requests} requests without an explanation; {summary}", _unique((rows[0], rows[-1])), details)
    return Verdict(True, summary, (), details)


# =========================================================================== nodes and endpoints
def node_unreachable(events: Iterable[Event], nodes: Sequence[str], api_servers: Sequence[str] = ()) -> dict[str, list[tuple[float, float]]]:
    """Per node, the intervals [from, to) during which it could not heartbeat to the control
    plane: its process killed, exited or paused, its kubelet stopped (or a ``kubelet-stop``
    fault in force, which keeps a restarted node's kubelet off), every API server
    cut from it (either direction) by the grudge, or every link of it dropping everything
    (a ``link-loss`` fault with ``loss`` 1.0: the swizzle's clog). ``api_servers`` empty: every process whose
    name starts with "kube-apiserver". An interval open at the end closes at infinity."""
    wanted = set(nodes)
    servers = set(api_servers)
    down: dict[str, set[str]] = {node: set() for node in nodes}  # node -> reasons now
    since: dict[str, float] = {}
    intervals: dict[str, list[tuple[float, float]]] = {node: [] for node in nodes}
    clogged: dict[int, list[str]] = {}  # link-loss 1.0 fault id -> its nodes

    def update(node: str, t: float, reason: str, on: bool) -> None:
        reasons = down[node]
        was = bool(reasons)
        if on:
            reasons.add(reason)
        else:
            reasons.discard(reason)
        if not was and reasons:
            since[node] = t
        elif was and not reasons:
            intervals[node].append((since.pop(node), t))

    for event in events:
        kind = event["type"]
        if kind == "process":
            name = event.get("process", "")
            if not api_servers and name.startswith("kube-apiserver"):
                servers.add(name)
            if name not in wanted:
                continue
            what = event.get("event")
            if what in ("kill", "exit"):
                update(name, event["t"], "down", True)
            elif what in ("start", "restart"):
                update(name, event["t"], "down", False)
                update(name, event["t"], "paused", False)
            elif what == "pause":
                update(name, event["t"], "paused", True)
            elif what == "resume":
                update(name, event["t"], "paused", False)
        elif kind == "kubelet" and event.get("node") in wanted:
            if event.get("event") == "stop":
                update(event["node"], event["t"], "kubelet", True)
            elif event.get("event") == "start":
                update(event["node"], event["t"], "kubelet", False)
        elif kind == "fault" and event.get("kind") == "kubelet-stop" and event.get("event") in ("apply", "heal"):
            # the fault as well as the kubelet's own stop record: a node restarted while
            # the fault is in force comes back with its kubelet off, and no kubelet stops
            for node in event.get("targets") or ():
                if node in wanted:
                    update(node, event["t"], f"kubelet-stop-{event.get('id')}", event["event"] == "apply")
        elif kind == "fault" and event.get("event") == "apply" and event.get("kind") == "link-loss" and float((event.get("params") or {}).get("loss", 0.0)) >= 1.0:
            # every link to and from the node drops everything (swizzle-clogging): as cut off as a grudge
            clogged[event["id"]] = [node for node in event.get("targets") or () if node in wanted]
            for node in clogged[event["id"]]:
                update(node, event["t"], f"clogged-{event['id']}", True)
        elif kind == "fault" and event.get("event") == "heal" and event.get("id") in clogged:
            for node in clogged.pop(event["id"]):
                update(node, event["t"], f"clogged-{event['id']}", False)
        elif kind == "partition":
            grudge = {dst: set(sources) for dst, sources in (event.get("grudge") or {}).items()}
            for node in nodes:
                cut = bool(servers) and all(node in grudge.get(server, ()) or server in grudge.get(node, ()) for server in servers)
                update(node, event["t"], "partitioned", cut)
    for node, start in since.items():
        intervals[node].append((start, math.inf))
    return {node: sorted(rows) for node, rows in intervals.items()}


def dead_endpoints(events: Sequence[Event], unreachable: dict[str, list[tuple[float, float]]], *, bound_s: float = DEAD_ENDPOINT_BOUND_S) -> list[dict[str, Any]]:
    """The dead endpoints of the module docstring, by when they should have turned not
    ready."""
    acting = acting_intervals(events, CONTROLLER_MANAGER_LEASE)
    found = []
    for row in endpoint_ready_intervals(events):
        for start, end in unreachable.get(row["node"], ()):
            if end <= row["from"] or start >= row["to"]:
                continue
            deadline = deadline_under_leader(start, acting, bound_s)
            if deadline < min(end, row["to"]) and deadline >= row["from"]:
                found.append({
                    "type": "dead-endpoint", "service": row["service"], "endpoint": row["address"], "pod": row["pod"], "node": row["node"],
                    "unreachable_since_s": start, "ready_until_s": deadline, "ready_to_s": row["to"], "unreachable_to_s": end,
                })
    return sorted(found, key=lambda item: (item["ready_until_s"], item["service"], item["endpoint"]))


def _charged_outages(events: Sequence[Event], figures: dict[str, ServiceFigures], unexplained: dict[str, list[Event]], between: tuple[float, float] | None) -> dict[str, ServiceFigures]:
    """Per Service, its figures over the successes and the *unexplained* failures only: an
    outage every failure of which is explained (an expected window, or endpoints whose node
    was cut off while Kubernetes lets them stay ready: every node clogged at once by a
    swizzle) is not charged against ``max_outage_s``; one unexplained failure in it is."""
    charged = {id(row) for rows in unexplained.values() for row in rows}
    kept = [event for event in events if event.get("type") == "traffic" and (event.get("outcome") == "ok" or id(event) in charged)]
    found = service_figures(kept, between)
    return {service: found.get(service, ServiceFigures(service)) for service in figures}


def _unexplained_failures(
    events: Sequence[Event], figures: dict[str, ServiceFigures], expected: Sequence[tuple[float, float]],
    unreachable: dict[str, list[tuple[float, float]]], between: tuple[float, float] | None,
) -> dict[str, list[Event]]:
    """Per Service, its failed requests that no expected window or allowed dead endpoint
    explains (module docstring, "Error budget")."""
    acting = acting_intervals(events, CONTROLLER_MANAGER_LEASE)
    allowed: dict[str, list[tuple[float, float]]] = {
        node: [(start, min(end, deadline_under_leader(start, acting, DEAD_ENDPOINT_BOUND_S) + PROXY_SYNC_S)) for start, end in rows]
        for node, rows in unreachable.items()
    }
    for node, down_at in _machine_downs(events, unreachable):  # and the reboot's settling after it
        for start, end in unreachable[node]:
            if start <= down_at < end and end != math.inf:
                allowed[node].append((end, end + REBOOT_SETTLE_S))
    # A node's pods serve nothing while it is unreachable (once its grace passed, the node
    # controller marks them NotReady and their endpoints go) and for a while after (its
    # kubelet reports them Ready again, the EndpointSlice controller and kube-proxy follow).
    serving_gap: dict[str, list[tuple[float, float]]] = {
        node: [(start, end + REBOOT_SETTLE_S) for start, end in rows] for node, rows in unreachable.items()
    }
    replay = StoreReplay(["pods", "services"]) if unreachable else None
    found: dict[str, list[Event]] = {service: [] for service in figures}
    node_of_ip: dict[str, str] | None = None
    ready_windows: dict[tuple[str, str], list[tuple[float, float]]] | None = None
    sliced: set[str] = set()
    stopped_serving: dict[str, list[float]] | None = None

    def windows() -> dict[tuple[str, str], list[tuple[float, float]]]:
        nonlocal ready_windows, sliced
        if ready_windows is None:
            ready_windows = {}
            for row in endpoint_ready_intervals(events):
                ready_windows.setdefault((row["service"], row["address"]), []).append((row["from"], row["to"]))
            sliced = {service for service, _ in ready_windows}
        return ready_windows

    def stale_slice(service: str, ip: str, sent: float) -> bool:
        """The store's slice held ``ip`` ready at ``sent`` (or up to kube-proxy's sync
        before) after its pod stopped serving, within the EndpointSlice controller's and
        kube-proxy's sync (module docstring)."""
        nonlocal stopped_serving
        if not any(low <= sent and sent - PROXY_SYNC_S < high for low, high in windows().get((service, ip), ())):
            return False  # not ready in the store then, nor within kube-proxy's sync before
        if stopped_serving is None:
            stopped_serving = _stopped_serving(events)
        times = stopped_serving.get(ip, [])
        position = bisect_right(times, sent)
        return position > 0 and sent <= deadline_under_leader(times[position - 1], acting, ENDPOINT_SYNC_BOUND_S) + PROXY_SYNC_S
    for event in events:
        if replay is not None and event.get("type") == "raft-apply":
            replay.apply(event)
            continue
        if event.get("type") != "traffic" or event.get("outcome") == "ok" or event["service"] not in found:
            continue
        t = event["t"]
        if between is not None and not between[0] <= t <= between[1]:
            continue
        if any(low <= t <= high for low, high in expected):
            continue
        sent = t - float(event.get("latency_s", 0.0))
        ip = str(event.get("endpoint", "")).rpartition(":")[0]
        if node_of_ip is None:
            node_of_ip = _pod_ip_nodes(events)
        node = node_of_ip.get(ip, "")
        if node and any(start <= sent <= end for start, end in allowed.get(node, ())):
            continue
        asker_cut_off = any(start <= sent <= end for start, end in serving_gap.get(event.get("node", ""), ()))
        if not ip and (
            # no endpoint: the asking node's kube-proxy, restarted while its node is cut
            # off, could not list any; or every pod of the Service was on such a node
            asker_cut_off or replay is not None and _every_pod_unreachable(replay, event["service"], sent, serving_gap)
        ):
            continue
        if ip and asker_cut_off:
            # a stale rule: the asking node's kube-proxy, cut off, still routes to an
            # endpoint the store no longer holds ready
            ready = windows()
            if event["service"] in sliced and not any(low <= sent < high for low, high in ready.get((event["service"], ip), ())):
                continue  # (only where the store held the Service's slices at all)
        if ip and stale_slice(event["service"], ip, sent):
            continue  # a stale slice: its pod stopped serving, the controller had not caught up
        found[event["service"]].append(event)
    return {service: rows for service, rows in found.items()}


def _every_pod_unreachable(replay: StoreReplay, service: str, t: float, serving_gap: dict[str, list[tuple[float, float]]]) -> bool:
    """Whether a request ``service`` had no endpoint for at ``t`` found none because every
    pod of the Service (its selector's, bound, not being deleted), spread over two nodes or
    more, was on a node that could not serve then: the documented state while nodes are
    unreachable (their pods are marked NotReady and stay, not replaced, until their
    ``tolerationSeconds``, 300 s by default)."""
    spec = (replay.get("services", service) or {}).get("spec") or {}
    selector = spec.get("selector") or {}
    if not selector:
        return False
    namespace = service.partition("/")[0]
    nodes = []
    for _, pod in replay.in_namespace("pods", namespace):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if is_deleting(pod) or any(labels.get(key) != value for key, value in selector.items()):
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return False  # a pod waiting to be scheduled: not the nodes' doing
        nodes.append(node)
    # Only a Service spread over two nodes or more: the faults took more than its
    # redundancy. A single replica, or all on one node, is the application's single point
    # of failure, which a user must see (the guestbook's redis-master).
    return len(set(nodes)) >= 2 and all(any(start <= t <= end for start, end in serving_gap.get(node, ())) for node in nodes)


def _stopped_serving(events: Sequence[Event]) -> dict[str, list[float]]:
    """Pod IP -> the times, in order, at which the store showed the pod with that IP stop
    serving: marked for deletion, no longer Ready, or removed (from serving before)."""
    def serving(pod: Any) -> bool:
        return pod is not None and not is_deleting(pod) and pod_ready(pod)

    table: dict[str, list[float]] = {}
    replay = StoreReplay(["pods"])
    for event in events:
        for change in replay.apply(event):
            if serving(change.before) and not serving(change.after):
                ip = (change.before.get("status") or {}).get("podIP")
                if ip:
                    table.setdefault(ip, []).append(change.t)
    return table


def _machine_downs(events: Sequence[Event], unreachable: dict[str, list[tuple[float, float]]]) -> list[tuple[str, float]]:
    """(node, when) of every kill or exit of a node's process: its containers died with it."""
    return [(event["process"], event["t"]) for event in events
            if event.get("type") == "process" and event.get("event") in ("kill", "exit") and event.get("process") in unreachable]


def _pod_ip_nodes(events: Sequence[Event]) -> dict[str, str]:
    """Pod IP -> the node of the pod that had it (pods' ``status.podIP`` in the store)."""
    table: dict[str, str] = {}
    replay = StoreReplay(["pods"])
    for event in events:
        for change in replay.apply(event):
            pod = change.after
            if pod is not None and pod.get("status", {}).get("podIP") and pod.get("spec", {}).get("nodeName"):
                table[pod["status"]["podIP"]] = pod["spec"]["nodeName"]
    return table

"""What a user asks of a run, answered from its journal: for each workload and Service of
theirs, how long it was below its desired replicas and how low it went, which evictions
were refused by which PodDisruptionBudget and when, which pods the taint manager evicted,
what the Service's users saw (availability and outage windows), and which pods were unready
and why. ``report.md`` and ``report.html`` open with these answers.

Pure functions of the journal's events:

- readiness comes from the store (:class:`chaoskube.checkers.replay.StoreReplay` over the
  ``raft-apply`` events): a pod is ready when its Ready condition is True
  (``podutil.IsPodReady``), never from its phase; a pod belongs to the workload its owner
  references lead to (a Deployment through its ReplicaSets); a bare Pod is a workload of
  its own that wants 1 pod until it succeeds (once deleted, nothing brings it back);
- a workload's desired count is :func:`chaoskube.api.workloads.desired_pods` of its stored
  object at that moment (a DaemonSet's ``desiredNumberScheduled``); "below desired" is
  counted from the first moment it had all its pods ready (the rollout before that is not
  an outage), until the end of the run;
- refused evictions are the API server's ``eviction`` events with outcome ``refused``;
  taint-based evictions the node lifecycle controller's ``taint-eviction`` events;
- a Service's outage windows are the stretches of the ``traffic`` probe's requests that
  did not succeed, from the first failed request to the next successful one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.workloads import desired_pods
from chaoskube.checkers.replay import StoreReplay, pod_ready

__all__ = ["Answers", "ServiceAnswer", "WorkloadAnswer", "answer", "ready_pod_steps_from_store", "shown_windows", "windows_text", "workload_when"]

WORKLOAD_RESOURCES = {
    "deployments": "Deployment", "statefulsets": "StatefulSet", "daemonsets": "DaemonSet", "replicasets": "ReplicaSet",
    "replicationcontrollers": "ReplicationController", "jobs": "Job",
}
STORE_RESOURCES = ("pods", "nodes", *WORKLOAD_RESOURCES)
MAX_ROWS = 50
#: Outage (and below-desired) windows a report row shows: the first few in time, plus the
#: longest when it is not among them; the rest are counted ("... and N more"; result.json
#: has every one).
MAX_WINDOWS_SHOWN = 5


def shown_windows(windows: list[tuple[float, float | None, int]], limit: int = MAX_WINDOWS_SHOWN) -> tuple[list[tuple[float, float | None, int]], int]:
    """The windows a report row shows, in time order, and how many it leaves out: the first
    ``limit``, and always the longest (the row names its length; issue 32: the longest of 23
    was not among the five shown). A window still open at the end counts from its start
    to its start, as :attr:`ServiceAnswer.longest_s` measures it."""
    if len(windows) <= limit:
        return list(windows), 0
    length = [(end if end is not None else start) - start for start, end, _ in windows]
    longest = max(range(len(windows)), key=lambda index: (length[index], -index))
    chosen = list(range(limit)) if longest < limit else [*range(limit - 1), longest]
    return [windows[index] for index in chosen], len(windows) - len(chosen)


def windows_text(windows: list[tuple[float, float | None, int]], render: Any, empty: str) -> str:
    """A report cell: :func:`shown_windows` rendered by ``render(window)``, joined by
    "; ", then "… and N more" when some are left out (``empty`` when there are none)."""
    shown, more = shown_windows(windows)
    text = "; ".join(render(window) for window in shown) or empty
    return text + (f"; … and {more} more" if more else "")


@dataclass
class WorkloadAnswer:
    kind: str
    key: str  # namespace/name
    desired: int = 0
    converged_at: float | None = None
    below_s: float = 0.0
    minimum_ready: int | None = None
    minimum_at: float | None = None
    windows: list[tuple[float, float | None, int]] = field(default_factory=list)  # (from, to, lowest ready)
    why: str = ""  # never reached its desired replicas, or still short at the end: why, from its pods
    deleted_at: float | None = None  # when it was marked for deletion (or removed): no longer wanted from then on

    @property
    def name(self) -> str:
        return f"{self.kind} {self.key}"


def workload_when(w: WorkloadAnswer, t: Any) -> str:
    """The "when" cell of a workload that reached its desired replicas: its windows below
    desired (each time rendered by ``t``), then why it was short -- "deleted at T" for one
    marked for deletion, "at the end: ..." for one still short; "—" when there is nothing."""
    when = windows_text(w.windows, lambda window: f"{t(window[0])} – {t(window[1])} (lowest {window[2]})", "")
    if w.why:
        when = "; ".join(part for part in (when, w.why if w.deleted_at is not None else f"at the end: {w.why}") if part)
    return when or "—"


@dataclass
class ServiceAnswer:
    service: str
    requests: int = 0
    ok: int = 0
    windows: list[tuple[float, float | None, int]] = field(default_factory=list)  # (from, to, failed requests)

    @property
    def availability(self) -> float:
        return self.ok / self.requests if self.requests else 1.0

    @property
    def down_s(self) -> float:
        return sum((end if end is not None else start) - start for start, end, _ in self.windows)

    @property
    def longest_s(self) -> float:
        return max(((end if end is not None else start) - start for start, end, _ in self.windows), default=0.0)


@dataclass
class Answers:
    workloads: list[WorkloadAnswer] = field(default_factory=list)
    services: list[ServiceAnswer] = field(default_factory=list)
    refused_evictions: list[dict[str, Any]] = field(default_factory=list)
    taint_evictions: list[dict[str, Any]] = field(default_factory=list)
    unready: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # the API server's, once each (pruned fields, unenforced CRD features)
    end_s: float = 0.0

    @property
    def empty(self) -> bool:
        return not (self.workloads or self.services or self.refused_evictions or self.taint_evictions or self.unready or self.skipped or self.warnings)

    def to_json(self) -> dict[str, Any]:
        return {
            "workloads": [
                {"workload": w.name, "desired": w.desired, "converged_at": w.converged_at, "below_desired_s": round(w.below_s, 3), "minimum_ready": w.minimum_ready, "minimum_at": w.minimum_at, "why": w.why,
                 "windows": [[start, end, low] for start, end, low in w.windows]}
                for w in self.workloads
            ],
            "services": [
                {"service": s.service, "requests": s.requests, "ok": s.ok, "availability": round(s.availability, 6), "down_s": round(s.down_s, 3), "longest_outage_s": round(s.longest_s, 3),
                 "windows": [[start, end, failed] for start, end, failed in s.windows]}
                for s in self.services
            ],
            "refused_evictions": self.refused_evictions,
            "taint_evictions": self.taint_evictions,
            "unready_pods": self.unready,
            "skipped_unsupported": self.skipped,
            "warnings": self.warnings,
        }


def _key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _controller(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if reference.get("controller"):
            return str(reference.get("kind")), str(reference.get("name"))
    return None


def _top_workload(pod: Mapping[str, Any], store: StoreReplay) -> tuple[str, str] | None:
    """(kind, namespace/name) of the workload a pod belongs to, through ReplicaSets."""
    owner = _controller(pod)
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    if owner is None:
        return "Pod", _key_of(pod)  # a bare Pod is its own workload
    kind, name = owner
    if kind == "ReplicaSet":
        replica_set = store.get("replicasets", f"{namespace}/{name}")
        if replica_set is not None:
            parent = _controller(replica_set)
            if parent is not None and parent[0] == "Deployment":
                return "Deployment", f"{namespace}/{parent[1]}"
    if kind in WORKLOAD_RESOURCES.values():
        return kind, f"{namespace}/{name}"
    return None


def _node_problem(pod: Mapping[str, Any], store: StoreReplay) -> str:
    """Why the pod's node is not Ready, as its Ready condition says, or ""."""
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = store.get("nodes", node_name) if node_name else None
    if node is None:
        return ""
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return f"node {node_name} {condition.get('status') == 'Unknown' and 'unreachable' or 'not ready'} ({condition.get('reason', '')}: {condition.get('message', '')})"
    return ""


def _why_unready(pod: Mapping[str, Any], store: StoreReplay | None = None) -> str:
    node_problem = _node_problem(pod, store) if store is not None else ""
    if node_problem:
        return node_problem
    status = pod.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return f"{condition.get('reason') or 'not scheduled'}: {condition.get('message') or ''}".strip(": ")
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            reason = condition.get("reason") or ""
            message = condition.get("message") or ""
            if message or reason:
                break
    else:
        reason = message = ""
    waiting = [cs.get("state", {}).get("waiting") for cs in status.get("containerStatuses") or () if (cs.get("state") or {}).get("waiting")]
    if waiting:
        first = waiting[0]
        detail = f"{first.get('reason', '')}: {first.get('message', '')}".strip(": ")
        return detail if not message else f"{message} ({detail})"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "being deleted"
    if reason or message:
        return f"{reason}: {message}".strip(": ")
    return f"phase {status.get('phase') or 'Pending'}"


def _why_never(state: WorkloadAnswer, store: StoreReplay, pod_owner: Mapping[str, tuple[str, str] | None], refused_pods: Mapping[str, Mapping[str, str]]) -> str:
    """Why a workload never had all its desired pods Ready: the first of its pods that is
    not (unscheduled, waiting, failing its readiness probe), as its status says at the end."""
    if state.desired == 0:
        return "it wants no pods (desired 0)"
    pods = [pod for pod in store.objects("pods").values() if pod_owner.get((pod.get("metadata") or {}).get("uid", "")) == (state.kind, state.key)]
    if not pods and state.kind == "Pod":
        return "deleted, and nothing recreates a bare Pod"
    if not pods:
        namespace, _, name = state.key.partition("/")
        refusal = refused_pods.get(namespace, {})
        found = next((message for prefix, message in reversed(list(refusal.items())) if prefix.startswith(f"{name}-")), None)
        return f"none of its pods was created: {found}" if found else "none of its pods was created"
    unready = [pod for pod in pods if not pod_ready(pod)]
    if not unready:
        return f"{len(pods)} of its pods Ready at the end"
    pod = unready[0]
    return f"pod {(pod.get('metadata') or {}).get('name')}: {_why_unready(pod, store)}"


def answer(events: Sequence[Mapping[str, Any]], end_s: float | None = None, *, skipped: Iterable[str] = ()) -> Answers:
    """The answers for one run (module docstring)."""
    end = end_s if end_s is not None else max((event["t"] for event in events), default=0.0)
    answers = Answers(skipped=list(skipped), end_s=end)
    faults_at = next((event["t"] for event in events if event.get("type") == "phase" and event.get("name") == "faults"), None)
    store = StoreReplay(STORE_RESOURCES)
    # per workload: ready pods now
    ready: dict[tuple[str, str], set[str]] = {}
    pod_owner: dict[str, tuple[str, str] | None] = {}
    states: dict[tuple[str, str], WorkloadAnswer] = {}
    open_windows: dict[tuple[str, str], list[Any]] = {}
    unready_open: dict[str, dict[str, Any]] = {}
    refused_pods: dict[str, dict[str, str]] = {}  # namespace -> pod name asked for -> why refused

    def desired_of(workload: tuple[str, str]) -> int | None:
        kind, key = workload
        if kind == "Pod":  # a bare Pod: wanted until it completes; once deleted, nothing replaces it
            pod = store.get("pods", key)
            return 0 if pod is not None and (pod.get("status") or {}).get("phase") == "Succeeded" else 1
        resource = next(r for r, k in WORKLOAD_RESOURCES.items() if k == kind)
        obj = store.get(resource, key)
        return desired_pods(obj) if obj is not None else None

    def evaluate(workload: tuple[str, str], t: float) -> None:
        state = states.get(workload)
        if state is None:
            return
        if workload[0] != "Pod":  # a workload marked for deletion or gone is no longer wanted: its window ends
            resource = next(r for r, k in WORKLOAD_RESOURCES.items() if k == workload[0])
            obj = store.get(resource, workload[1])
            gone = obj is None or bool((obj.get("metadata") or {}).get("deletionTimestamp"))
            if state.deleted_at is not None:
                if gone:
                    return
                # made again under the same name (the workload generator reuses its slots'
                # names): wanted again, once it has reached its desired replicas
                state.deleted_at = state.converged_at = None
            elif gone:
                state.deleted_at = t
                window = open_windows.pop(workload, None)
                if window is not None:
                    state.windows.append((window[0], t, window[1]))
                    state.below_s += t - window[0]
                return
        want = desired_of(workload)
        if want is None:
            return
        state.desired = want
        have = len(ready.get(workload, ()))
        if state.converged_at is None:
            if want > 0 and have >= want:
                state.converged_at = t
            return
        window = open_windows.get(workload)
        if have < want:
            if window is None:
                open_windows[workload] = [t, have]
            else:
                window[1] = min(window[1], have)
            if state.minimum_ready is None or have < state.minimum_ready:
                state.minimum_ready, state.minimum_at = have, t
        elif window is not None:
            state.windows.append((window[0], t, window[1]))
            state.below_s += t - window[0]
            del open_windows[workload]

    for event in events:
        kind = event.get("type")
        if kind == "raft-apply":
            for change in store.apply(event):
                t = change.t
                if change.resource in WORKLOAD_RESOURCES:
                    workload_kind = WORKLOAD_RESOURCES[change.resource]
                    workload = (workload_kind, change.key)
                    obj = change.after
                    if obj is not None and (change.resource != "replicasets" or _controller(obj) is None):
                        states.setdefault(workload, WorkloadAnswer(workload_kind, change.key))
                    evaluate(workload, t)
                    continue
                if change.resource != "pods":
                    continue  # nodes: read by _node_problem
                pod = change.after if change.after is not None else change.before
                assert pod is not None
                uid = (pod.get("metadata") or {}).get("uid", change.key)
                owner = _top_workload(pod, store) if change.after is not None else pod_owner.get(uid)
                pod_owner[uid] = owner
                is_ready = change.after is not None and pod_ready(change.after)
                if owner is not None:
                    if owner[0] == "Pod" and change.after is not None:
                        states.setdefault(owner, WorkloadAnswer("Pod", owner[1]))
                    members = ready.setdefault(owner, set())
                    if is_ready:
                        members.add(uid)
                    else:
                        members.discard(uid)
                    evaluate(owner, t)
                # unready pods after the fault phase began
                if change.after is None and uid in unready_open:
                    unready_open[uid]["to"] = t
                    unready_open[uid]["why"] += "; then deleted"
                    del unready_open[uid]
                if faults_at is not None and t >= faults_at and change.after is not None:
                    record = unready_open.get(uid)
                    if not is_ready and (change.before is not None and pod_ready(change.before) or record is not None):
                        why = _why_unready(change.after, store)
                        if record is None:
                            record = unready_open[uid] = {"pod": change.key, "node": (change.after.get("spec") or {}).get("nodeName", ""), "from": t, "to": None, "why": why}
                            answers.unready.append(record)
                        elif record["why"] == "phase Running" and why != "phase Running":
                            record["why"] = why  # the first informative reason stays
                    elif is_ready and record is not None:
                        record["to"] = t
                        del unready_open[uid]
        elif kind == "api-request" and event.get("resource") == "pods" and event.get("verb") == "create" and event.get("message"):
            # a controller's pod refused (ServiceAccount missing, quota, limits, invalid):
            # pods "NAME-" is forbidden: ... -> by the name (or generateName) it asked for
            message = str(event["message"])
            if message.startswith('pods "'):
                refused_pods.setdefault(str(event.get("namespace") or "default"), {})[message[6:].partition('"')[0]] = message
        elif kind == "eviction" and event.get("outcome") == "refused":
            answers.refused_evictions.append({"t": event["t"], "pod": f"{event.get('namespace')}/{event.get('pod')}", "pdb": event.get("pdb", ""), "reason": event.get("reason", "")})
        elif kind == "apiserver-warning":
            line = f"{event.get('resource')} {event.get('name')}: {event.get('warning')}"
            if line not in answers.warnings and len(answers.warnings) < MAX_ROWS:
                answers.warnings.append(line)
        elif kind == "taint-eviction":
            answers.taint_evictions.append({"t": event["t"], "pod": event.get("pod"), "node": event.get("node"), "after_s": event.get("after_s")})
    for workload, window in open_windows.items():
        state = states[workload]
        state.windows.append((window[0], None, window[1]))
        state.below_s += end - window[0]
    for workload, state in states.items():
        if state.deleted_at is not None:
            state.why = f"deleted at {state.deleted_at:.1f} s"
        elif state.converged_at is None or workload in open_windows:  # still short at the end: why
            state.why = _why_never(state, store, pod_owner, refused_pods)
    answers.workloads = sorted(states.values(), key=lambda w: (w.kind, w.key))
    answers.services = _services(events)
    answers.unready = answers.unready[:MAX_ROWS]
    return answers


def _services(events: Iterable[Mapping[str, Any]]) -> list[ServiceAnswer]:
    found: dict[str, ServiceAnswer] = {}
    failing: dict[str, list[Any]] = {}
    for event in events:
        if event.get("type") != "traffic":
            continue
        service = str(event.get("service", ""))
        row = found.setdefault(service, ServiceAnswer(service))
        row.requests += 1
        if event.get("outcome") == "ok":
            row.ok += 1
            window = failing.pop(service, None)
            if window is not None:
                row.windows.append((window[0], event["t"], window[1]))
        else:
            window = failing.setdefault(service, [event["t"], 0])
            window[1] += 1
    for service, window in failing.items():
        found[service].windows.append((window[0], None, window[1]))
    return [found[name] for name in sorted(found)]


def ready_pod_steps_from_store(events: Iterable[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """(time, pods whose Ready condition is True) after each change of a pod in the store."""
    store = StoreReplay(("pods",))
    ready: set[str] = set()
    steps: list[tuple[float, int]] = []
    for event in events:
        if event.get("type") != "raft-apply":
            continue
        for change in store.apply(event):
            if change.after is not None and pod_ready(change.after):
                ready.add(change.key)
            else:
                ready.discard(change.key)
            if not steps or steps[-1] != (change.t, len(ready)):
                steps.append((change.t, len(ready)))
    return steps


# =========================================================================== rendering


def _t(value: float | None) -> str:
    return "end of run" if value is None else f"{value:.1f} s"


def markdown_lines(answers: Answers) -> list[str]:
    """The report's opening section, as Markdown."""
    if answers.empty:
        return []
    lines = ["## What your workloads saw", ""]
    if answers.skipped:
        lines += [f"Left out (`--skip-unsupported`): {len(answers.skipped)} document(s)", ""]
        lines += [f"- {line}" for line in answers.skipped]
        lines.append("")
    if answers.workloads:
        lines += ["| workload | desired | below desired | lowest ready | when |", "|---|---|---|---|---|"]
        for w in answers.workloads:
            if w.converged_at is None:
                lines.append(f"| {w.name} | {w.desired} | never reached its desired replicas | — | {w.why or '—'} |")
                continue
            lowest = "—" if w.minimum_ready is None else f"{w.minimum_ready}/{w.desired}"
            when = workload_when(w, _t)
            lines.append(f"| {w.name} | {w.desired} | {w.below_s:.1f} s | {lowest} | {when} |")
        lines.append("")
    if answers.services:
        lines += ["| Service | availability | down | longest outage | outage windows |", "|---|---|---|---|---|"]
        for s in answers.services:
            windows = windows_text(s.windows, lambda window: f"{_t(window[0])} – {_t(window[1])} ({window[2]} failed)", "none")
            lines.append(f"| {s.service} | {100 * s.availability:.1f}% of {s.requests} requests | {s.down_s:.1f} s | {s.longest_s:.1f} s | {windows} |")
        lines.append("")
    lines += [f"Refused evictions: {len(answers.refused_evictions)}" if answers.refused_evictions else "Refused evictions: none", ""]
    for row in answers.refused_evictions[:MAX_ROWS]:
        lines.append(f"- {row['t']:.1f} s: pod {row['pod']}, PodDisruptionBudget {row['pdb']}: {row['reason']}")
    if answers.refused_evictions:
        lines.append("")
    lines += [f"Taint-based evictions: {len(answers.taint_evictions)}" if answers.taint_evictions else "Taint-based evictions: none", ""]
    for row in answers.taint_evictions[:MAX_ROWS]:
        lines.append(f"- {row['t']:.1f} s: pod {row['pod']} from node {row['node']} ({row['after_s']} s after the taint)")
    if answers.taint_evictions:
        lines.append("")
    if answers.warnings:
        lines += ["API server warnings:", ""]
        lines += [f"- {line}" for line in answers.warnings]
        lines.append("")
    if answers.unready:
        lines += ["Pods that were unready during the faults, and why:", ""]
        for row in answers.unready:
            lines.append(f"- {row['pod']} on {row['node'] or 'no node'}: {_t(row['from'])} – {_t(row['to'])}: {row['why']}")
        lines.append("")
    return lines

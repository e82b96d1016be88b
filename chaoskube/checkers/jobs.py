"""Job guarantees, judged from the store's history: what the Job controller promises about
the pods it runs and how it counts them.

The Kubernetes behaviour checked ("Jobs",
https://kubernetes.io/docs/concepts/workloads/controllers/job/; KEP-2307 "Job tracking
without lingering Pods",
https://github.com/kubernetes/enhancements/tree/master/keps/sig-apps/2307-job-tracking-wihout-lingering-pods;
kubernetes/kubernetes ``pkg/controller/job/job_controller.go`` ``syncJob``, ``manageJob``,
``trackJobStatusAndRemoveFinalizers``, ``isPodFailed``):

1. **Parallelism**: "The requested parallelism ... the actual number of pods running in
   steady state will be less than this number" -- when a pod of a Job is created, the
   Job's active pods (neither terminal nor being deleted) are at most ``parallelism`` (the
   largest of the ``window_s`` before the create was admitted: a create decided before a
   decrease may land after). ``manageJob`` counts the active pods of its informer cache when
   it decides a create, so a create is judged as of its admission (the pod's
   ``creationTimestamp``, when earlier than its store write): the active pods counted are
   those admitted no later than it (a pod admitted after it was decided without it -- a new
   leader cannot see a create still waiting on etcd), and a create that may have failed
   (5xx or no answer) since ``window_s`` before its admission excuses an excess.
2. **Completions**: ``status.succeeded`` never exceeds ``completions``; with Indexed
   completion, every index in ``status.completedIndexes`` had a pod of that index that
   succeeded, and no index has two active pods for longer than ``lag_s`` ("the Job
   controller ... deletes duplicates").
3. **Exactly-once accounting** (the ``batch.kubernetes.io/job-tracking`` finalizer: a
   finished pod is recorded in ``status.uncountedTerminatedPods`` before its finalizer is
   removed, then counted, so "the Job controller can account for the Pod ... even if the
   Pod is removed" -- across a controller-manager failover too): at every stored status,
   ``succeeded + uncounted.succeeded`` is at most the pods that had succeeded by then,
   ``failed + uncounted.failed`` at most those that had failed, and their sum at most the
   pods that had finished (no pod counted twice: kubernetes/kubernetes#105200); and once a
   Job is finished with nothing uncounted and no pod of it left with the finalizer,
   every finished pod is counted (none lost). A pod counts as failed when its phase is
   Failed or it was deleted without having succeeded (``isPodFailed``); one marked for
   deletion that then exits 0 may be counted either way (the controller sticks with what
   it saw first: PR #111646) and bounds both sides.
4. **backoffLimit** (restartPolicy Never, no podFailurePolicy: "the number of retries
   before marking this job failed"): a Job is marked Failed with BackoffLimitExceeded only
   when more than ``backoffLimit`` of its pods had failed (kubernetes/kubernetes#92245 is
   the bug of one too early), and no pod is created for it once more than
   ``backoffLimit`` had definitely failed ``lag_s`` before the create was admitted
   (``syncJob`` checks ``exceedsBackoffLimit`` before ``manageJob`` creates: failures stored
   after the admission could not have stopped it).
5. **activeDeadlineSeconds**: "Once a Job reaches activeDeadlineSeconds, all of its
   running Pods are terminated and the Job status will become type: Failed with reason:
   DeadlineExceeded" -- never before ``startTime + activeDeadlineSeconds``; by then plus
   ``lag_s`` unless it finished first, judged only while a kube-controller-manager led and
   the control plane had no fault (``replay.run_health``).
6. **Finished is final**: no pod is created for a Job more than ``lag_s`` after it was
   stored Complete or Failed -- created as of the pod's ``creationTimestamp`` (the API
   server stamps it when it admits the create, ``rest.FillObjectMetaSystemFields``) when
   that is earlier than the store write: a create admitted before the Job finished whose
   etcd write lands later (an API server stuck on a paused etcd member, within its 60 s
   request timeout) is not a create after the finish.

``check_job_invariants(events)`` answers False with the first finding, unknown when the
store never held a Job, True otherwise. Not judged (``details``): the failure count of a
Job with a podFailurePolicy (Ignore rules do not count) or restartPolicy OnFailure
(container restarts count, and the store holds only the last restart count);
``backoffLimitPerIndex`` (the controller does not model it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.protocol import parse_timestamp
from chaoskube.checkers.replay import Change, StoreReplay, condition_status, is_deleting, run_health
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_job_invariants"]

Event = dict[str, Any]
Obj = dict[str, Any]

LAG_S = 10.0
WINDOW_S = 60.0
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def _uid(obj: Obj | None) -> str:
    return (obj or {}).get("metadata", {}).get("uid", "")


def _job_uid(pod: Obj | None) -> str | None:
    for reference in (pod or {}).get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller") and reference.get("kind") == "Job":
            return reference.get("uid")
    return None


def _phase(pod: Obj | None) -> str:
    return (pod or {}).get("status", {}).get("phase") or "Pending"


def _active(pod: Obj | None) -> bool:
    return pod is not None and not is_deleting(pod) and _phase(pod) not in ("Succeeded", "Failed")


def _index(pod: Obj) -> int | None:
    value = (pod.get("metadata", {}).get("annotations") or {}).get(COMPLETION_INDEX)
    return int(value) if value is not None and str(value).isdigit() else None


def _parse_indexes(text: str) -> set[int]:
    found: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def _finished(job: Obj) -> tuple[str, str] | None:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"], condition.get("reason", "")
    return None


@dataclass
class _Pod:
    """One pod of a Job, by uid: when it succeeded / was marked / failed, as the store shows."""

    key: str
    created_t: float
    admitted_t: float = math.inf  # the create's admission (creationTimestamp), at most created_t
    succeeded_t: float = math.inf
    failed_t: float = math.inf  # phase Failed
    deleting_t: float = math.inf  # marked for deletion (not yet succeeded then)
    gone_t: float = math.inf
    finalizer: bool = False
    index: int | None = None

    def succeeded_by(self, t: float) -> bool:
        return self.succeeded_t <= t

    def failed_by(self, t: float) -> bool:
        """Definitely failed by ``t``: phase Failed, or left the store without succeeding."""
        return self.failed_t <= t or (self.gone_t <= t and math.isinf(self.succeeded_t) and self.deleting_t <= t)

    def maybe_failed_by(self, t: float) -> bool:
        return self.failed_t <= t or (self.deleting_t <= t and not self.succeeded_t < self.deleting_t)

    def finished_by(self, t: float) -> bool:
        return min(self.succeeded_t, self.failed_t, self.deleting_t, self.gone_t) <= t


@dataclass
class Finding:
    rule: str
    t: float
    object: str
    problem: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "t": self.t, "object": self.object, "problem": self.problem, **self.evidence}


@dataclass
class _Job:
    key: str
    uid: str
    pods: dict[str, _Pod] = field(default_factory=dict)
    parallelism: list[tuple[float, int]] = field(default_factory=list)
    finished_t: float = math.inf
    last_status: Obj = field(default_factory=dict)
    last_succeeded: int = 0


def _counted(status: Obj) -> tuple[int, int]:
    uncounted = status.get("uncountedTerminatedPods") or {}
    return int(status.get("succeeded") or 0) + len(uncounted.get("succeeded") or ()), int(status.get("failed") or 0) + len(uncounted.get("failed") or ())


class _Checker:
    def __init__(self, events: Sequence[Event], lag_s: float, window_s: float) -> None:
        self.events = events
        self.lag_s = lag_s
        self.window_s = window_s
        self.store = StoreReplay(["jobs", "pods"])
        self.jobs: dict[str, _Job] = {}  # job uid -> history
        self.counts = {"jobs": 0, "pods": 0, "status_writes": 0, "judged_at_end": 0, "failure_count_not_judged": 0, "deadlines_judged": 0}
        self.indeterminate: dict[str, list[float]] = {}
        for event in events:
            if (
                event["type"] == "api-request" and event.get("verb") == "create" and event.get("resource") == "pods" and not event.get("subresource")
                and (event.get("code") is None or int(event.get("code") or 0) >= 500)
            ):
                self.indeterminate.setdefault(event.get("namespace", ""), []).append(event["t"])
        self.end_t = events[-1]["t"] if events else 0.0
        self.health = run_health(events, self.end_t, "kube-controller-manager")

    def job_of(self, pod: Obj | None) -> _Job | None:
        uid = _job_uid(pod)
        return self.jobs.get(uid) if uid else None

    def parallelism_bound(self, job: _Job, admitted: float, t: float) -> int:
        """The largest ``parallelism`` stored from ``window_s`` before the create's admission
        to its store write ``t``, or the one in effect before then."""
        largest, in_effect = 0, None
        for when, value in job.parallelism:
            if when > t:
                break
            if when > admitted - self.window_s:
                largest = max(largest, value)
            else:
                in_effect = value
        return max(largest, in_effect or 0)

    def on_change(self, change: Change) -> list[Finding]:
        t, before, after = change.t, change.before, change.after
        if change.resource == "jobs":
            if after is None:
                return []
            uid = _uid(after)
            job = self.jobs.get(uid)
            if job is None:
                job = self.jobs[uid] = _Job(change.key, uid)
                self.counts["jobs"] += 1
            spec = after.get("spec") or {}
            parallelism = 1 if spec.get("parallelism") is None else int(spec["parallelism"])
            if not job.parallelism or job.parallelism[-1][1] != parallelism:
                job.parallelism.append((t, parallelism))
            status = after.get("status") or {}
            findings = []
            if status != job.last_status:
                self.counts["status_writes"] += 1
                findings = self.on_status(job, after, t)
                job.last_status = status
            if _finished(after) is not None and math.isinf(job.finished_t):
                job.finished_t = t
            return findings
        pod = after if after is not None else before
        job = self.job_of(pod)
        if job is None:
            return []
        uid = _uid(pod)
        record = job.pods.get(uid)
        if record is None:
            assert pod is not None
            record = job.pods[uid] = _Pod(change.key, t, _admitted(pod, t), index=_index(pod))
            self.counts["pods"] += 1
        findings: list[Finding] = []
        if after is None:
            record.gone_t = min(record.gone_t, t)
            return []
        record.finalizer = TRACKING_FINALIZER in (after.get("metadata", {}).get("finalizers") or ())
        if _phase(after) == "Succeeded":
            record.succeeded_t = min(record.succeeded_t, t)
        if _phase(after) == "Failed":
            record.failed_t = min(record.failed_t, t)
        if is_deleting(after) and math.isinf(record.succeeded_t):
            record.deleting_t = min(record.deleting_t, t)
        if before is None or _uid(before) != uid:
            findings += self.on_create(job, change, record)
        return findings

    def on_create(self, job: _Job, change: Change, record: _Pod) -> list[Finding]:
        t = change.t
        stored = self.store.get("jobs", job.key)
        if stored is None or _uid(stored) != job.uid:
            return []
        admitted = record.admitted_t
        if job.finished_t + self.lag_s < admitted:
            return [Finding("job-finished", t, f"jobs/{job.key}", f"Job {job.key} created pod {change.key} {admitted - job.finished_t:.1f} s after it was stored finished")]
        # as of the admission: pods admitted later were decided without this one
        active = [p for uid, p in job.pods.items() if p.admitted_t <= admitted and _active(self.store.get("pods", p.key)) and _uid(self.store.get("pods", p.key)) == uid]
        bound = self.parallelism_bound(job, admitted, t)
        namespace = change.key.partition("/")[0]
        unanswered = [when for when in self.indeterminate.get(namespace, ()) if admitted - self.window_s <= when <= t]
        if len(active) > bound and not unanswered:
            return [Finding("job-parallelism", t, f"jobs/{job.key}",
                            f"Job {job.key} has {len(active)} active pods after creating {change.key}, above its parallelism {bound} (the largest of the {self.window_s:g} s before its admission)",
                            {"active": sorted(p.key for p in active), "admitted": admitted})]
        spec = stored.get("spec") or {}
        limit = 6 if spec.get("backoffLimit") is None else int(spec["backoffLimit"])
        if self._failures_judged(stored):
            failed = sum(1 for p in job.pods.values() if p is not record and p.failed_by(admitted - self.lag_s))
            if failed > limit and _finished(stored) is None:
                return [Finding("job-backoff-limit", t, f"jobs/{job.key}",
                                f"Job {job.key} created pod {change.key} although {failed} of its pods had failed more than {self.lag_s:g} s before it was admitted, over its backoffLimit {limit}",
                                {"failed": failed, "backoffLimit": limit, "admitted": admitted})]
        return []

    def _failures_judged(self, job: Obj) -> bool:
        spec = job.get("spec") or {}
        template = (spec.get("template") or {}).get("spec") or {}
        return not spec.get("podFailurePolicy") and (template.get("restartPolicy") or "Never") == "Never"

    def on_status(self, job: _Job, stored: Obj, t: float) -> list[Finding]:
        status = stored.get("status") or {}
        spec = stored.get("spec") or {}
        succeeded, failed = _counted(status)
        pods = list(job.pods.values())
        indexed = spec.get("completionMode") == "Indexed"
        # an Indexed Job counts completed indexes, not pods (``succeededIndexes.total()``)
        could_succeed = len({p.index for p in pods if p.succeeded_by(t)}) if indexed else sum(1 for p in pods if p.succeeded_by(t))
        could_fail = sum(1 for p in pods if p.maybe_failed_by(t))
        finished = sum(1 for p in pods if p.finished_by(t))
        where = f"jobs/{job.key}"
        evidence = {"succeeded": succeeded, "failed": failed, "pods_succeeded": could_succeed, "pods_failed": could_fail, "pods_finished": finished}
        if succeeded > could_succeed or succeeded + failed > finished:
            return [Finding("job-counted-twice", t, where,
                            f"Job {job.key}'s status counts {succeeded} succeeded and {failed} failed pods (with the uncounted ones), but only {could_succeed} of its pods had succeeded and {finished} finished: a pod counted twice",
                            evidence)]
        if failed > could_fail and self._failures_judged(stored):
            return [Finding("job-counted-twice", t, where, f"Job {job.key}'s status counts {failed} failed pods, but only {could_fail} of its pods had failed", evidence)]
        plain = int(status.get("succeeded") or 0)
        if plain < job.last_succeeded:
            return [Finding("job-count-lost", t, where, f"Job {job.key}'s succeeded count went back from {job.last_succeeded} to {plain}")]
        job.last_succeeded = plain
        completions = spec.get("completions")
        if completions is not None and int(status.get("succeeded") or 0) > int(completions):
            return [Finding("job-completions", t, where, f"Job {job.key} counts {status.get('succeeded')} succeeded pods, above its completions {completions}")]
        if spec.get("completionMode") == "Indexed":
            done = {p.index for p in pods if p.succeeded_by(t)}
            claimed = _parse_indexes(status.get("completedIndexes") or "")
            if claimed - done:
                return [Finding("job-indexes", t, where, f"Job {job.key} marks indexes {sorted(claimed - done)} completed, but no pod of them had succeeded", {"completedIndexes": status.get("completedIndexes")})]
        result = _finished(stored)
        previous = _finished({"status": job.last_status})
        if result is not None and previous is None:
            kind, reason = result
            if kind == "Failed" and reason == "BackoffLimitExceeded" and self._failures_judged(stored):
                limit = 6 if spec.get("backoffLimit") is None else int(spec["backoffLimit"])
                if could_fail <= limit:
                    return [Finding("job-backoff-limit", t, where,
                                    f"Job {job.key} was marked Failed (BackoffLimitExceeded) after {could_fail} failed pod(s), but its backoffLimit {limit} allows {limit} retries",
                                    evidence | {"backoffLimit": limit})]
            if kind == "Failed" and reason == "DeadlineExceeded":
                deadline = _deadline(stored)
                if deadline is not None and t + 1e-6 < deadline:
                    return [Finding("job-active-deadline", t, where, f"Job {job.key} was marked Failed (DeadlineExceeded) at t={t:.3f}, {deadline - t:.3f} s before its activeDeadlineSeconds ran out")]
        return []

    def at_end(self) -> list[Finding]:
        findings = []
        for job in self.jobs.values():
            stored = self.store.get("jobs", job.key)
            if stored is None or _uid(stored) != job.uid:
                continue
            deadline = _deadline(stored)
            if deadline is not None and math.isinf(job.finished_t) and deadline + self.lag_s < self.end_t:
                if self.health.healthy(deadline, deadline + self.lag_s):
                    self.counts["deadlines_judged"] += 1
                    findings.append(Finding("job-active-deadline", deadline + self.lag_s, f"jobs/{job.key}",
                                            f"Job {job.key} was still running {self.lag_s:g} s after its activeDeadlineSeconds ran out at t={deadline:.3f} (the controller-manager led and the control plane was healthy)"))
                    continue
            if job.finished_t + self.lag_s > self.end_t:
                continue
            status = stored.get("status") or {}
            uncounted = status.get("uncountedTerminatedPods") or {}
            lingering = [p.key for p in job.pods.values() if math.isinf(p.gone_t) and p.finalizer]
            if uncounted.get("succeeded") or uncounted.get("failed") or lingering:
                continue
            self.counts["judged_at_end"] += 1
            pods = list(job.pods.values())
            succeeded, failed = _counted(status)
            # nothing lost: every pod that surely succeeded (exited 0 before any deletion) or
            # surely failed (phase Failed) before the Job finished is counted; pods that
            # finish after it are not (syncJob returns early for a finished Job)
            done = [p for p in pods if p.succeeded_t < min(p.deleting_t, job.finished_t)]
            indexed = (stored.get("spec") or {}).get("completionMode") == "Indexed"
            surely = len({p.index for p in done}) if indexed else len(done)
            failures = sum(1 for p in pods if p.failed_t < job.finished_t)
            if succeeded < surely or (self._failures_judged(stored) and failed < failures):
                findings.append(Finding("job-count-lost", self.end_t, f"jobs/{job.key}",
                                        f"Job {job.key} ended counting {succeeded} succeeded and {failed} failed pods, but {surely} {'indexes' if indexed else 'pods'} succeeded and {failures} pods failed before it finished: a finished pod was never counted",
                                        {"succeeded": succeeded, "failed": failed, "pods_succeeded": surely, "pods_failed": failures}))
        return findings


def _admitted(pod: Obj | None, t: float) -> float:
    """When the API server admitted the create: the pod's ``creationTimestamp`` (stamped by
    ``rest.FillObjectMetaSystemFields``; second precision, so never later than the
    admission), ``t`` (its store write) when that is earlier or the stamp is missing."""
    stamp = ((pod or {}).get("metadata") or {}).get("creationTimestamp")
    return min(t, parse_timestamp(stamp)) if stamp else t


def _deadline(job: Obj) -> float | None:
    spec = job.get("spec") or {}
    start = (job.get("status") or {}).get("startTime")
    if spec.get("activeDeadlineSeconds") is None or not start:
        return None
    return parse_timestamp(start) + float(spec["activeDeadlineSeconds"])


def check_job_invariants(events: Sequence[Event], *, lag_s: float = LAG_S, window_s: float = WINDOW_S) -> Verdict:
    """Judge the Job rules (module docstring)."""
    checker = _Checker(events, lag_s, window_s)
    for event in events:
        for change in checker.store.apply(event):
            findings = checker.on_change(change)
            if findings:
                return _violation(findings[0], checker)
    if not checker.jobs:
        return nothing_to_judge("the store never held a Job: nothing to judge", (), checker.counts)
    findings = checker.at_end()
    if findings:
        return _violation(findings[0], checker)
    counts = checker.counts
    return Verdict(True, (
        f"{counts['jobs']} Job(s), {counts['pods']} pod(s), {counts['status_writes']} status write(s): active within parallelism, "
        f"no pod counted twice, completions and indexes sound, backoff limits and deadlines kept; {counts['judged_at_end']} finished Job(s) with every pod counted"
    ), (), counts)


def _violation(finding: Finding, checker: _Checker) -> Verdict:
    return Verdict(False, finding.problem, (finding.to_json(),), {"rule": finding.rule, **checker.counts})

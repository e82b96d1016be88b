"""CronJob guarantees, judged from the store's history: which Jobs the CronJob controller
starts, when, and how many it leaves running.

The Kubernetes behaviour checked ("CronJob",
https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/; kubernetes/kubernetes
``pkg/controller/cronjob/cronjob_controllerv2.go`` ``syncCronJob``, ``utils.go``
``mostRecentScheduleTime``, ``getJobFromTemplate2``):

1. **Each scheduled time started at most once**: no two Jobs of one CronJob carry the same
   ``batch.kubernetes.io/cronjob-scheduled-timestamp`` (the controller names a Job after its
   scheduled minute so that "the same time never starts twice"). Every such time is an
   activation of the schedule in the CronJob's ``timeZone`` (UTC when unset; "Time
   zones"), and the Job is created no earlier than it and, with
   ``startingDeadlineSeconds``, no later than it plus that deadline (plus ``lag_s`` for the
   create's own latency): "If that deadline is missed, the CronJob skips that instance".
2. **Forbid never runs two**: "if it is time for a new job run and the previous job run
   hasn't finished yet, the CronJob skips the new job run" -- when a Job of a Forbid
   CronJob is created, no other Job of it has been active (not finished, not being
   deleted) through the last ``lag_s``.
3. **Replace never leaves two**: "it replaces the currently running job run with a new job
   run" -- every Job of a Replace CronJob that was active when a newer one was created is
   deleted (or finished) within ``lag_s``.
4. **No schedule lost**: every activation after the CronJob was created is started within
   ``lag_s`` -- unless Forbid skipped it (another Job active then), the CronJob was
   suspended, or the control plane could not act (judged only where a kube-controller-manager
   led all through ``[activation, activation + lag_s]`` with no fault on the control plane
   and no clock fault on it: ``replay.run_health``). More than 100 missed activations do
   not stop it: since 1.21 the controller starts the most recent one and warns
   (kubernetes/kubernetes#42649 is the old bug: "Too many missed start times to list").
5. **History limits**: at the end, when the controller led and the control plane was
   healthy for the last ``lag_s``, at most ``successfulJobsHistoryLimit`` (3) Complete and
   ``failedJobsHistoryLimit`` (1) Failed Jobs of each CronJob are kept.

``check_cronjob_invariants(events)`` answers False with the first finding, unknown when
the store never held a CronJob, True otherwise. Not judged: a CronJob whose schedule does
not parse (the controller records it and does nothing), Jobs without the scheduled-time
annotation (created by hand from the template: ``kubectl create job --from``).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.cron import ScheduleError, parse_schedule, zone
from chaoskube.api.protocol import parse_timestamp
from chaoskube.api import protocol
from chaoskube.checkers.replay import StoreReplay, is_deleting, run_health
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_cronjob_invariants"]

Event = dict[str, Any]
Obj = dict[str, Any]

LAG_S = 10.0
SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
#: At most this many activations of one CronJob are walked (a schedule of every minute
#: over a run of hours; a bound, not a rule).
MAX_ACTIVATIONS = 10_000


def _uid(obj: Obj | None) -> str:
    return (obj or {}).get("metadata", {}).get("uid", "")


def _owner(job: Obj | None) -> str | None:
    for reference in (job or {}).get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller") and reference.get("kind") == "CronJob":
            return reference.get("uid")
    return None


def _finished(job: Obj) -> str | None:
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def _virtual(moment: _dt.datetime) -> float:
    return (moment - protocol.EPOCH).total_seconds()


@dataclass
class _Job:
    key: str
    created_t: float
    scheduled: float | None  # virtual seconds of its scheduled-timestamp annotation
    scheduled_text: str = ""
    ended_t: float = math.inf  # finished, being deleted or gone: no longer active
    finished: str | None = None


@dataclass
class _Cron:
    key: str
    uid: str
    created_t: float
    spec: Obj = field(default_factory=dict)
    suspended: list[tuple[float, bool]] = field(default_factory=list)
    jobs: dict[str, _Job] = field(default_factory=dict)
    deleted_t: float = math.inf  # marked for deletion or gone (its namespace's deletion included)

    def policy(self) -> str:
        return self.spec.get("concurrencyPolicy") or "Allow"

    def suspended_during(self, start: float, end: float) -> bool:
        state = False
        for t, value in self.suspended:
            if t <= start:
                state = value
            elif t <= end and value:
                return True
        return state

    def active_at(self, t: float, *, besides: str = "") -> list[_Job]:
        return [job for uid, job in self.jobs.items() if uid != besides and job.created_t <= t < job.ended_t]


@dataclass
class Finding:
    rule: str
    t: float
    object: str
    problem: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "t": self.t, "object": self.object, "problem": self.problem, **self.evidence}


def check_cronjob_invariants(events: Sequence[Event], *, lag_s: float = LAG_S) -> Verdict:
    """Judge the CronJob rules (module docstring)."""
    store = StoreReplay(["cronjobs", "jobs"])
    crons: dict[str, _Cron] = {}
    findings: list[Finding] = []
    counts = {"cronjobs": 0, "jobs": 0, "activations_judged": 0, "activations_not_judged": 0, "forbid_skips": 0}
    for event in events:
        for change in store.apply(event):
            after, before = change.after, change.before
            if change.resource == "cronjobs":
                if after is None or is_deleting(after):
                    gone = crons.get(_uid(before if after is None else after))
                    if gone is not None:
                        gone.deleted_t = min(gone.deleted_t, change.t)
                    if after is None:
                        continue
                uid = _uid(after)
                cron = crons.get(uid)
                if cron is None:
                    created = after.get("metadata", {}).get("creationTimestamp")
                    cron = crons[uid] = _Cron(change.key, uid, parse_timestamp(created) if created else change.t)
                    counts["cronjobs"] += 1
                cron.spec = after.get("spec") or {}
                suspended = bool(cron.spec.get("suspend"))
                if not cron.suspended or cron.suspended[-1][1] != suspended:
                    cron.suspended.append((change.t, suspended))
                continue
            job_obj = after if after is not None else before
            cron = crons.get(_owner(job_obj) or "")
            if cron is None:
                continue
            uid = _uid(job_obj)
            job = cron.jobs.get(uid)
            if job is None:
                assert job_obj is not None
                text = (job_obj.get("metadata", {}).get("annotations") or {}).get(SCHEDULED_ANNOTATION, "")
                scheduled = parse_timestamp(text) if text else None
                job = cron.jobs[uid] = _Job(change.key, change.t, scheduled, text)
                counts["jobs"] += 1
                findings += _on_create(cron, job, uid, change.t, lag_s)
            if after is None or is_deleting(after):
                job.ended_t = min(job.ended_t, change.t)
            elif _finished(after) is not None:
                job.ended_t = min(job.ended_t, change.t)
                job.finished = _finished(after)
            if findings:
                return _violation(findings[0], counts)
    if not crons:
        return nothing_to_judge("the store never held a CronJob: nothing to judge", (), counts)
    end_t = events[-1]["t"] if events else 0.0
    health = run_health(events, end_t, "kube-controller-manager")
    for cron in crons.values():
        findings += _replaced(cron, lag_s)
        findings += _liveness(cron, end_t, health, lag_s, counts)
        stored = store.get("cronjobs", cron.key)
        if stored is not None and _uid(stored) == cron.uid and health.healthy(end_t - lag_s, end_t):
            findings += _history(cron, store, end_t)
    if findings:
        findings.sort(key=lambda finding: finding.t)
        return _violation(findings[0], counts)
    return Verdict(True, (
        f"{counts['cronjobs']} CronJob(s), {counts['jobs']} Job(s): each scheduled time started at most once and on its schedule, "
        f"Forbid never ran two ({counts['forbid_skips']} activation(s) skipped for an active Job), Replace never left two, "
        f"{counts['activations_judged']} activation(s) judged started ({counts['activations_not_judged']} not judged: the control plane could not act)"
    ), (), counts)


def _on_create(cron: _Cron, job: _Job, uid: str, t: float, lag_s: float) -> list[Finding]:
    where = f"cronjobs/{cron.key}"
    if job.scheduled is None:
        return []
    for other_uid, other in cron.jobs.items():
        if other_uid != uid and other.scheduled == job.scheduled:
            return [Finding("cronjob-once", t, where, f"CronJob {cron.key} started {job.scheduled_text} twice: {other.key} and {job.key}", {"jobs": [other.key, job.key]})]
    try:
        schedule = parse_schedule(cron.spec.get("schedule") or "")
        tz = zone(cron.spec.get("timeZone"))
    except (ScheduleError, KeyError, ValueError, OSError):
        return []
    moment = (protocol.EPOCH + _dt.timedelta(seconds=job.scheduled)).astimezone(tz)
    following = schedule.next(moment - _dt.timedelta(seconds=1))
    if following is None or abs(_virtual(following.astimezone(_dt.UTC)) - job.scheduled) > 1e-6:
        return [Finding("cronjob-schedule", t, where,
                        f"CronJob {cron.key} started {job.key} for {job.scheduled_text}, which is not an activation of {cron.spec.get('schedule')!r} in {cron.spec.get('timeZone') or 'UTC'}")]
    if t + 1e-3 < job.scheduled:
        return [Finding("cronjob-schedule", t, where, f"CronJob {cron.key} started {job.key} at t={t:.3f}, before its scheduled time {job.scheduled_text}")]
    deadline = cron.spec.get("startingDeadlineSeconds")
    if deadline is not None and t > job.scheduled + float(deadline) + lag_s:
        return [Finding("cronjob-starting-deadline", t, where,
                        f"CronJob {cron.key} started {job.key} {t - job.scheduled:.1f} s after its scheduled time {job.scheduled_text}, past startingDeadlineSeconds {deadline}")]
    if cron.policy() == "Forbid":
        running = [other for other in cron.active_at(t - lag_s, besides=uid) if other.ended_t > t]
        if running:
            return [Finding("cronjob-forbid", t, where,
                            f"CronJob {cron.key} (Forbid) started {job.key} while {running[0].key} had been running since t={running[0].created_t:.3f}",
                            {"started": job.key, "running": [other.key for other in running]})]
    return []


def _replaced(cron: _Cron, lag_s: float) -> list[Finding]:
    if cron.policy() != "Replace":
        return []
    findings = []
    for uid, job in cron.jobs.items():
        for other in cron.active_at(job.created_t, besides=uid):
            if other.created_t < job.created_t and other.ended_t > job.created_t + lag_s:
                findings.append(Finding("cronjob-replace", job.created_t + lag_s, f"cronjobs/{cron.key}",
                                        f"CronJob {cron.key} (Replace) started {job.key} and left {other.key} running {lag_s:g} s later",
                                        {"started": job.key, "left_running": other.key}))
    return findings


def _liveness(cron: _Cron, end_t: float, health: Any, lag_s: float, counts: dict[str, int]) -> list[Finding]:
    try:
        schedule = parse_schedule(cron.spec.get("schedule") or "")
        tz = zone(cron.spec.get("timeZone"))
    except (ScheduleError, KeyError, ValueError, OSError):
        return []
    started = {job.scheduled for job in cron.jobs.values() if job.scheduled is not None}
    moment: _dt.datetime | None = (protocol.EPOCH + _dt.timedelta(seconds=cron.created_t)).astimezone(tz)
    for _ in range(MAX_ACTIVATIONS):
        assert moment is not None
        moment = schedule.next(moment)
        if moment is None:
            break
        at = _virtual(moment.astimezone(_dt.UTC))
        if at + lag_s > min(end_t, cron.deleted_t):
            break
        if at in started:
            counts["activations_judged"] += 1
            continue
        if not health.healthy(at - lag_s, at + lag_s) or health.clock_fault(at - lag_s, at + lag_s) or cron.suspended_during(at, at + lag_s):
            counts["activations_not_judged"] += 1
            continue
        if cron.policy() == "Forbid" and any(job.created_t <= at + lag_s and job.ended_t > at for job in cron.jobs.values()):
            counts["forbid_skips"] += 1
            continue
        counts["activations_judged"] += 1
        return [Finding("cronjob-missed", at + lag_s, f"cronjobs/{cron.key}",
                        f"CronJob {cron.key} started no Job for {moment.isoformat()} ({cron.spec.get('schedule')!r} in {cron.spec.get('timeZone') or 'UTC'}) although a kube-controller-manager led and the control plane was healthy from it to {lag_s:g} s after",
                        {"scheduled": moment.isoformat()})]
    return []


def _history(cron: _Cron, store: StoreReplay, end_t: float) -> list[Finding]:
    limits = {"Complete": cron.spec.get("successfulJobsHistoryLimit"), "Failed": cron.spec.get("failedJobsHistoryLimit")}
    defaults = {"Complete": 3, "Failed": 1}
    kept: dict[str, list[str]] = {"Complete": [], "Failed": []}
    for key, job in store.objects("jobs").items():
        if _owner(job) == cron.uid and not is_deleting(job) and _finished(job) in kept:
            kept[_finished(job) or ""].append(key)
    findings = []
    for kind, keys in kept.items():
        limit = defaults[kind] if limits[kind] is None else int(limits[kind])
        if len(keys) > limit:
            findings.append(Finding("cronjob-history", end_t, f"cronjobs/{cron.key}",
                                    f"CronJob {cron.key} keeps {len(keys)} {kind} Jobs, over its {'successful' if kind == 'Complete' else 'failed'}JobsHistoryLimit {limit}",
                                    {"jobs": sorted(keys)}))
    return findings


def _violation(finding: Finding, counts: dict[str, int]) -> Verdict:
    return Verdict(False, finding.problem, (finding.to_json(),), {"rule": finding.rule, **counts})

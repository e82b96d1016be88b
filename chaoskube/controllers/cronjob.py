"""The CronJob controller, as kube-controller-manager's ``pkg/controller/cronjob``
(``cronjob_controllerv2.go``, ``utils.go``), on the simulated clock: virtual time 0 is
:data:`chaoskube.api.protocol.EPOCH` (2026-01-01T00:00:00Z, a Thursday), and schedules are
evaluated in the CronJob's ``timeZone`` (UTC when unset).

- :func:`most_recent_schedule_time` is ``mostRecentScheduleTime``, its quirks included (the
  number of missed schedules is estimated from the first two activations; more than 100 is
  "many"; a schedule whose first two activations are less than a second apart, such as
  ``59 23 31 2 *``, is an error); :func:`next_schedule_time_duration` adds
  ``nextScheduleDelta`` (100 ms) as upstream does.
- ``syncCronJob``: the Jobs it controls are reconciled with ``status.active`` (finished
  ones leave it, a Complete one sets ``lastSuccessfulTime``); a suspended or deleted
  CronJob does nothing more; the most recent unmet schedule time is started unless it is
  later than ``startingDeadlineSeconds`` allow (``MissSchedule``); ``concurrencyPolicy``
  Forbid skips it while a Job is active, Replace deletes the active Jobs first; the Job is
  named ``<cronjob>-<minutes since the epoch>`` (so the same time never starts twice) with
  the ``batch.kubernetes.io/cronjob-scheduled-timestamp`` annotation; then finished Jobs
  beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit`` are deleted, oldest
  first; the CronJob is requeued for its next activation.

Journal: ``cronjob`` {cronjob, event: job-created | missed-schedule | skipped-forbid |
replaced | history-deleted | too-many-missed, ...}.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.cron import Schedule, ScheduleError, parse_schedule, zone
from chaoskube.api.objects import CronJob, Job, ObjectMeta, ObjectReference, deep_copy
from chaoskube.api.protocol import DeleteOptions, parse_timestamp, timestamp
from chaoskube.api import protocol
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key, split_meta_namespace_key
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import controller_ref, new_controller_ref, work_loop

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "NEXT_SCHEDULE_DELTA_S",
    "CronJobController",
    "most_recent_schedule_time",
    "next_schedule_time_duration",
    "reconcile_active",
]

#: ``nextScheduleDelta``: requeue 100 ms after the activation, against clock skew.
NEXT_SCHEDULE_DELTA_S = 0.1
SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NONE_MISSED, FEW_MISSED, MANY_MISSED = "none", "few", "many"


def most_recent_schedule_time(
    creation: _dt.datetime, last_schedule: _dt.datetime | None, starting_deadline_s: int | None, now: _dt.datetime, schedule: Schedule, include_starting_deadline: bool
) -> tuple[_dt.datetime, _dt.datetime | None, str, str | None]:
    """``mostRecentScheduleTime``: (earliest time, most recent activation at or before
    ``now`` or None, missed: none / few / many, error or None)."""
    # Times compare and subtract on the absolute clock, as Go's do (Python compares two
    # datetimes of one zone by their wall clocks, fold ignored: wrong across a DST fall-back).
    earliest = last_schedule if last_schedule is not None else creation
    missed = NONE_MISSED
    if include_starting_deadline and starting_deadline_s is not None:
        deadline = _absolute_add(now, -starting_deadline_s)
        if _utc(deadline) > _utc(earliest):
            earliest = deadline
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1) if t1 is not None else None
    if t1 is not None and _utc(now) < _utc(t1):
        return earliest, None, missed, None
    if t2 is not None and _utc(now) < _utc(t2):
        return earliest, t1, missed, None
    between = round((_utc(t2) - _utc(t1)).total_seconds()) if t1 is not None and t2 is not None else 0
    if between < 1:
        return earliest, None, missed, "time difference between two schedules is less than 1 second"
    assert t1 is not None
    elapsed = int((_utc(now) - _utc(t1)).total_seconds())
    number_missed = elapsed // between + 1
    most_recent = None
    potential = _absolute_add(t1, (number_missed - 1 - 1) * between)
    t = schedule.next(potential)
    while t is not None and not _utc(t) > _utc(now):
        most_recent = t
        t = schedule.next(t)
    if number_missed > 100:
        missed = MANY_MISSED
    elif number_missed > 0:
        missed = FEW_MISSED
    return earliest, most_recent, missed, None


def _utc(moment: _dt.datetime) -> _dt.datetime:
    return moment.astimezone(_dt.UTC)


def _absolute_add(moment: _dt.datetime, seconds: float) -> _dt.datetime:
    """Go's ``t.Add``: seconds on the absolute clock, the answer in ``moment``'s zone."""
    assert moment.tzinfo is not None
    return (_utc(moment) + _dt.timedelta(seconds=seconds)).astimezone(moment.tzinfo)


def next_schedule_time_duration(creation: _dt.datetime, last_schedule: _dt.datetime | None, now: _dt.datetime, schedule: Schedule) -> float:
    """``nextScheduleTimeDuration`` in seconds (``nextScheduleDelta`` included)."""
    earliest, most_recent, missed, error = most_recent_schedule_time(creation, last_schedule, None, now, schedule, False)
    if error is not None:
        anchor = now
    elif most_recent is None:
        anchor = earliest if missed == NONE_MISSED else now
    else:
        anchor = most_recent
    following = schedule.next(anchor)
    if following is None:
        return 3600.0 * 24 * 365
    return (_utc(following) - _utc(now)).total_seconds() + NEXT_SCHEDULE_DELTA_S


def _moment(virtual_s: float, tz: _dt.tzinfo) -> _dt.datetime:
    return (protocol.EPOCH + _dt.timedelta(seconds=virtual_s)).astimezone(tz)


def _virtual(moment: _dt.datetime) -> float:
    return (moment - protocol.EPOCH).total_seconds()


def _finished(job: Job) -> str | None:
    for condition in job.status.conditions:
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return condition.type
    return None


def job_from_template(cron: CronJob, scheduled: _dt.datetime) -> Job:
    """``getJobFromTemplate2``: name ``<cronjob>-<minutes since 1970>``, the template's
    labels and annotations, the scheduled-timestamp annotation, the controller reference."""
    template = cron.spec.job_template
    minutes = int(scheduled.timestamp()) // 60
    annotations = {**template.metadata.annotations, SCHEDULED_TIMESTAMP_ANNOTATION: scheduled.isoformat().replace("+00:00", "Z")}
    meta = ObjectMeta(name=f"{cron.metadata.name}-{minutes}", namespace=cron.metadata.namespace, labels=dict(template.metadata.labels), annotations=annotations, owner_references=[new_controller_ref(cron)])
    return Job(metadata=meta, spec=deep_copy(template.spec))


def reconcile_active(status: Any, children: Sequence[Job]) -> list[ObjectReference]:
    """The reconciliation at the top of ``syncCronJob``: the references of
    ``status.active`` whose Job is gone or finished leave it (a Complete one moves
    ``lastSuccessfulTime``, set on ``status``), and every unfinished Job the CronJob controls
    that the status does not list joins it ("unexpected Job" -- the status may have been
    lost: a controller that died between creating a Job and writing the status)."""
    active = []
    for reference in status.active:
        job = next((j for j in children if j.metadata.uid == reference.uid), None)
        if job is None or _finished(job) is not None:
            if job is not None and _finished(job) == "Complete" and job.status.completion_time:
                if status.last_successful_time is None or parse_timestamp(job.status.completion_time) > parse_timestamp(status.last_successful_time):
                    status.last_successful_time = job.status.completion_time
            continue
        active.append(reference)
    for job in children:
        if _finished(job) is None and not any(reference.uid == job.metadata.uid for reference in active):
            active.append(ObjectReference(kind="Job", namespace=job.metadata.namespace, name=job.metadata.name, uid=job.metadata.uid, api_version="batch/v1", resource_version=job.metadata.resource_version))
    return active


class CronJobController:
    """``ControllerV2`` (see the module docstring); ``--concurrent-cron-job-syncs`` workers."""

    KIND = "CronJob"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "cronjob-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.queue = RateLimitingQueue(process)
        self.cronjobs = informers.informer("cronjobs")
        self.jobs = informers.informer("jobs")
        self.cronjobs.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._enqueue)
        self.jobs.add_event_handler(on_add=self._job_changed, on_update=lambda old, new: self._job_changed(new), on_delete=self._job_changed)

    def _enqueue(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.queue.add(meta_namespace_key(obj))

    def _job_changed(self, job: Any) -> None:
        job = job.obj if isinstance(job, DeletedFinalStateUnknown) else job
        reference = controller_ref(job)
        if reference is not None and reference.kind == self.KIND:
            self.queue.add(f"{job.metadata.namespace}/{reference.name}")

    async def run(self) -> None:
        for informer in (self.cronjobs, self.jobs):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_cron_job_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    def _jobs_of(self, cron: CronJob) -> list[Job]:
        return [job for job in self.jobs.indexer.list() if job.metadata.namespace == cron.metadata.namespace and (reference := controller_ref(job)) is not None and reference.uid == cron.metadata.uid]

    async def sync(self, key: str) -> None:
        namespace, name = split_meta_namespace_key(key)
        cron = self.cronjobs.indexer.get_by_key(key)
        if cron is None:
            return
        updated = deep_copy(cron)
        status = updated.status
        children = self._jobs_of(cron)
        children_names = {job.metadata.name for job in children}
        status.active = reconcile_active(status, children)
        requeue: float | None = None
        if cron.metadata.deletion_timestamp is None and not cron.spec.suspend:
            requeue = await self._schedule(cron, updated, children_names)
        await self._cleanup_history(cron, children)
        if msgspec.json.encode(updated.status) != msgspec.json.encode(cron.status):
            try:
                await self.client.update_status(updated)
            except ApiError as error:
                if error.code != 404:
                    raise
        if requeue is not None:
            self.queue.add_after(key, max(0.0, requeue))

    async def _schedule(self, cron: CronJob, updated: CronJob, existing: set[str]) -> float | None:
        try:
            schedule = parse_schedule(cron.spec.schedule)
            tz = zone(cron.spec.time_zone)
        except (ScheduleError, KeyError, ValueError, OSError):  # an unknown zone (ZoneInfoNotFoundError is a KeyError) answers like a bad schedule
            self._record(cron, "unparseable-schedule", schedule=cron.spec.schedule)
            return None
        now_s = self.process.now()
        now = _moment(now_s, tz)
        created = _moment(parse_timestamp(cron.metadata.creation_timestamp) if cron.metadata.creation_timestamp else 0.0, tz)
        last = _moment(parse_timestamp(updated.status.last_schedule_time), tz) if updated.status.last_schedule_time else None
        _, scheduled, missed, error = most_recent_schedule_time(created, last, cron.spec.starting_deadline_seconds, now, schedule, True)
        if missed == MANY_MISSED:
            self._record(cron, "too-many-missed")
        if scheduled is None or _utc(scheduled) > _utc(now):
            return next_schedule_time_duration(created, last, now, schedule)
        if cron.spec.starting_deadline_seconds is not None and _utc(scheduled) + _dt.timedelta(seconds=cron.spec.starting_deadline_seconds) < _utc(now):
            self._record(cron, "missed-schedule", scheduled=scheduled.isoformat())
            return next_schedule_time_duration(created, last, now, schedule)
        job = job_from_template(cron, scheduled.astimezone(_dt.timezone.utc))
        if job.metadata.name in existing:
            updated.status.last_schedule_time = timestamp(_virtual(scheduled.astimezone(_dt.timezone.utc)))
            return next_schedule_time_duration(created, scheduled, now, schedule)
        if cron.spec.concurrency_policy == "Forbid" and updated.status.active:
            self._record(cron, "skipped-forbid", scheduled=scheduled.isoformat())
            return next_schedule_time_duration(created, last, now, schedule)
        if cron.spec.concurrency_policy == "Replace":
            for reference in list(updated.status.active):
                try:
                    await self.client.delete("jobs", reference.namespace, reference.name, options=DeleteOptions(preconditions_uid=reference.uid))
                except ApiError as error:
                    if error.code not in (404, 409):
                        raise
                self._record(cron, "replaced", job=reference.name)
            updated.status.active = []
        try:
            made = await self.client.create(job)
        except ApiError as error:
            if error.code != 409:
                raise
            made = None
        if made is not None:
            updated.status.active = [*updated.status.active, ObjectReference(kind="Job", namespace=made.metadata.namespace, name=made.metadata.name, uid=made.metadata.uid, api_version="batch/v1", resource_version=made.metadata.resource_version)]
            self._record(cron, "job-created", job=made.metadata.name, scheduled=scheduled.isoformat())
        updated.status.last_schedule_time = timestamp(_virtual(scheduled.astimezone(_dt.timezone.utc)))
        return next_schedule_time_duration(created, scheduled, now, schedule)

    async def _cleanup_history(self, cron: CronJob, children: Sequence[Job]) -> None:
        """``cleanupFinishedJobs``: the oldest finished Jobs beyond the history limits."""
        for kind, limit in (("Complete", cron.spec.successful_jobs_history_limit), ("Failed", cron.spec.failed_jobs_history_limit)):
            if limit is None:
                continue
            finished = sorted((job for job in children if _finished(job) == kind), key=lambda job: (job.status.start_time is None, job.status.start_time or "", job.metadata.name))
            for job in finished[: max(0, len(finished) - limit)]:
                try:
                    await self.client.delete("jobs", job.metadata.namespace, job.metadata.name, options=DeleteOptions(preconditions_uid=job.metadata.uid))
                except ApiError as error:
                    if error.code not in (404, 409):
                        raise
                self._record(cron, "history-deleted", job=job.metadata.name, kind=kind)

    def _record(self, cron: CronJob, event: str, **fields: Any) -> None:
        self.process.world.record("cronjob", cronjob=meta_namespace_key(cron), event=event, controller=self.name, **fields)

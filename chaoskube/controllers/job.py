"""The Job controller (and its TTL-after-finished companion), as kube-controller-manager's
``pkg/controller/job`` and ``pkg/controller/ttlafterfinished``.

Upstream sources followed (kubernetes/kubernetes):

- ``pkg/controller/job/job_controller.go`` — ``syncJob``: pods are tracked with the
  ``batch.kubernetes.io/job-tracking`` finalizer, so a finished pod is counted exactly
  once even if it is deleted at once: its uid goes to ``status.uncountedTerminatedPods``,
  then its finalizer is removed, then it moves to ``succeeded`` / ``failed``
  (``trackJobStatusAndRemoveFinalizers``). A pod counts as failed when its phase is Failed
  or it is being deleted without having succeeded (``isPodFailed``). ``manageJob``: active
  = neither terminal nor being deleted; wanted active = ``parallelism`` capped by the
  completions left (a work queue, ``completions`` unset, wants none once one succeeded);
  surplus active pods are deleted, missing ones created in slow-start batches, each
  replacement of a failed pod waiting ``10 s × 2^(failures since the last success − 1)``
  up to 6 min (``backoffRecord``). The Job fails with ``BackoffLimitExceeded`` ("Job has
  reached the specified backoff limit") when failures exceed ``backoffLimit`` (with
  ``restartPolicy: OnFailure``, container restarts count too), with ``DeadlineExceeded``
  ("Job was active longer than specified deadline") after ``activeDeadlineSeconds`` from
  ``startTime``, with ``PodFailurePolicy`` when a failed pod matches a FailJob rule; then
  its active pods are deleted. It completes (``Complete``, ``completionTime``) when
  ``succeeded`` reaches ``completions`` (a work queue: once a pod succeeded and none is
  active). ``Indexed`` completion: one pod per index not yet succeeded (annotation and
  label ``batch.kubernetes.io/job-completion-index``, hostname ``<job>-<index>``),
  ``completedIndexes`` as ranges ("0-2,4");
- ``pkg/controller/job/pod_failure_policy.go`` — :func:`match_pod_failure_policy`, rule by
  rule: exit codes (non-zero, of regular then init containers; In / NotIn), or pod
  conditions; actions FailJob, Ignore (not counted), Count;
- ``pkg/controller/ttlafterfinished`` — a finished Job with ``ttlSecondsAfterFinished`` is
  deleted (background propagation) that long after it finished.

Journal: ``job`` {job, event: created-pod | deleted-pod | complete | failed | ttl-deleted, ...}.

Non-guarantees: ``successPolicy``, ``backoffLimitPerIndex`` / ``maxFailedIndexes`` and the
FailIndex action, ``podReplacementPolicy: Failed`` (replacement waits for terminal pods) and
suspension of a running Job are not modelled beyond their defaults; the
``FailureTarget``/``SuccessCriteriaMet`` interim conditions of 1.31 are not written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.objects import (
    PodFailurePolicyRule,
    Job,
    JobCondition,
    JobStatus,
    ObjectMeta,
    Pod,
    PodFailurePolicy,
    UncountedTerminatedPods,
    deep_copy,
    matches,
)
from chaoskube.api.protocol import DeleteOptions, parse_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory, meta_namespace_key, split_meta_namespace_key
from chaoskube.client.record import EventRecorder
from chaoskube.client.workqueue import RateLimitingQueue
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import (
    POD_CONTROLLER_UID_INDEX,
    ControllerExpectations,
    SLOW_START_INITIAL_BATCH_SIZE,
    add_index,
    controller_ref,
    new_controller_ref,
    pod_controller_uid_index,
    pods_of,
    slow_start_batch,
    work_loop,
)

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

__all__ = [
    "JOB_TRACKING_FINALIZER",
    "JobController",
    "JobPlan",
    "backoff_limit_exceeded",
    "completed_indexes",
    "match_pod_failure_policy",
    "plan_job",
    "pod_backoff_s",
]

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: ``DefaultJobPodFailureBackOff`` 10 s, ``MaxJobPodFailureBackOff`` 6 min.
POD_FAILURE_BACKOFF_S = 10.0
MAX_POD_FAILURE_BACKOFF_S = 360.0
#: ``MaxPodCreateDeletePerSync``.
MAX_POD_CREATE_DELETE_PER_SYNC = 500


def match_pod_failure_policy(policy: PodFailurePolicy | None, pod: Pod) -> tuple[str | None, bool, PodFailurePolicyRule | None]:
    """``matchPodFailurePolicy``: (FailJob message or None, count towards backoffLimit,
    the matched rule or None). Rules are tried in order; a rule with an unknown action or
    operator is skipped; successful containers (exit code 0) never match."""
    if policy is None:
        return None, True, None
    for index, rule in enumerate(policy.rules):
        if rule.action not in ("Ignore", "Count", "FailJob", "FailIndex"):
            continue
        if rule.on_exit_codes is not None:
            requirement = rule.on_exit_codes
            if requirement.operator not in ("In", "NotIn"):
                continue
            matched = None
            for statuses in (pod.status.container_statuses, pod.status.init_container_statuses):  # matchOnExitCodes' order
                for status in statuses:
                    terminated = status.state.terminated if status.state is not None else None
                    if terminated is None or terminated.exit_code == 0:
                        continue
                    if requirement.container_name is not None and requirement.container_name != status.name:
                        continue
                    inside = terminated.exit_code in requirement.values
                    if (requirement.operator == "In") == inside:
                        matched = status
                        break
                if matched is not None:
                    break
            if matched is None:
                continue
            if rule.action == "FailJob":
                assert matched.state is not None and matched.state.terminated is not None
                message = f"Container {matched.name} for pod {pod.metadata.namespace}/{pod.metadata.name} failed with exit code {matched.state.terminated.exit_code} matching FailJob rule at index {index}"
                return message, True, rule
            return None, rule.action != "Ignore", rule
        if rule.on_pod_conditions:
            condition = next((c for c in pod.status.conditions for pattern in rule.on_pod_conditions if c.type == pattern.type and c.status == (pattern.status or "True")), None)
            if condition is None:
                continue
            if rule.action == "FailJob":
                return f"Pod {pod.metadata.namespace}/{pod.metadata.name} has condition {condition.type} matching FailJob rule at index {index}", True, rule
            return None, rule.action != "Ignore", rule
    return None, True, None


def pod_backoff_s(failures_since_success: int) -> float:
    """``backoffRecord.getRemainingTime``'s delay: 10 s doubling per failure, at most 6 min."""
    if failures_since_success <= 0:
        return 0.0
    return min(MAX_POD_FAILURE_BACKOFF_S, POD_FAILURE_BACKOFF_S * 2 ** (failures_since_success - 1))


def completed_indexes(indexes: Sequence[int]) -> str:
    """``succeededIndexes.String()``: sorted ranges, "0-2,4"."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for index in ordered:
        if start is None:
            start = previous = index
        elif index == previous + 1:
            previous = index
        else:
            parts.append(f"{start}-{previous}" if start != previous else str(start))
            start = previous = index
    if start is not None:
        parts.append(f"{start}-{previous}" if start != previous else str(start))
    return ",".join(parts)


def _parse_indexes(text: str) -> set[int]:
    found: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def backoff_limit_exceeded(failed: int, backoff_limit: int) -> bool:
    """``pastBackoffLimitOnFailure`` / ``exceedsBackoffLimit`` (restartPolicy Never):
    ``backoffLimit`` is the number of retries, so the Job fails at ``backoffLimit + 1``
    failed pods ("The number of retries before marking this job failed")."""
    return failed > backoff_limit


def _finished(job: Job) -> str | None:
    for condition in job.status.conditions:
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return condition.type
    return None


def _pod_index(pod: Pod) -> int | None:
    value = pod.metadata.annotations.get(COMPLETION_INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _failed(pod: Pod) -> bool:
    """``isPodFailed`` (podReplacementPolicy TerminatingOrFailed)."""
    return pod.status.phase == "Failed" or (pod.metadata.deletion_timestamp is not None and pod.status.phase != "Succeeded")


@dataclass
class JobPlan:
    """What one sync does, in order: record newly finished pods as uncounted
    (``status``), release their finalizers, count them, then create / delete pods and set
    conditions."""

    status: JobStatus
    release: list[Pod] = field(default_factory=list)
    create_indexes: list[int | None] = field(default_factory=list)
    delete: list[Pod] = field(default_factory=list)
    requeue_after_s: float | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


def plan_job(job: Job, pods: Sequence[Pod], now: float, last_failure: tuple[int, float] = (0, -1e18)) -> JobPlan:
    """``syncJob`` as a pure decision (module docstring). ``last_failure`` is (failures
    since the last success, when the last one was seen), for the creation back-off."""
    spec = job.spec
    status = deep_copy(job.status)
    plan = JobPlan(status)
    uncounted = status.uncounted_terminated_pods or UncountedTerminatedPods()
    counted_uids = set(uncounted.succeeded) | set(uncounted.failed)
    live = {pod.metadata.uid: pod for pod in pods}
    fail_message: tuple[str, str] | None = None
    # 3. uncounted pods whose finalizer is gone (or which are gone) are counted now.
    remaining = UncountedTerminatedPods()
    for uid in uncounted.succeeded:
        pod = live.get(uid)
        if pod is None or JOB_TRACKING_FINALIZER not in pod.metadata.finalizers:
            status.succeeded += 1
        else:
            remaining.succeeded.append(uid)
    for uid in uncounted.failed:
        pod = live.get(uid)
        if pod is None or JOB_TRACKING_FINALIZER not in pod.metadata.finalizers:
            status.failed += 1
        else:
            remaining.failed.append(uid)
    # 1-2. newly finished pods with the finalizer: uncounted now, released.
    succeeded_indexes = _parse_indexes(status.completed_indexes)
    already_finished = _finished(job) is not None
    for pod in pods:
        if JOB_TRACKING_FINALIZER not in pod.metadata.finalizers or pod.metadata.uid in counted_uids:
            continue
        if already_finished and (pod.status.phase == "Succeeded" or _failed(pod)):
            # syncJob returns early for a finished Job ("if job was finished previously, we
            # don't want to redo the termination"): a pod that finishes afterwards only
            # loses its finalizer, it is not counted (found by job-invariants: a Job counted
            # 8 successes for 6 completions)
            plan.release.append(pod)
            continue
        if pod.status.phase == "Succeeded":
            index = _pod_index(pod)
            if spec.completion_mode == "Indexed":
                # an Indexed Job tracks its successes as completedIndexes, not as uncounted
                # uids (trackJobStatusAndRemoveFinalizers: newSucceededIndexes)
                if index is not None:
                    succeeded_indexes.add(index)
            else:
                remaining.succeeded.append(pod.metadata.uid)
            plan.release.append(pod)
        elif _failed(pod):
            message, count, _rule = match_pod_failure_policy(spec.pod_failure_policy, pod)
            if count:
                remaining.failed.append(pod.metadata.uid)
            plan.release.append(pod)
            if message is not None and fail_message is None:
                fail_message = ("PodFailurePolicy", message)
    status.uncounted_terminated_pods = remaining if (remaining.succeeded or remaining.failed) else UncountedTerminatedPods()
    if spec.completion_mode == "Indexed":
        status.completed_indexes = completed_indexes(list(succeeded_indexes))
        # ``job.Status.Succeeded = int32(succeededIndexes.total())``: indexes, not pods (a
        # duplicate pod of an index that also succeeds is not counted again)
        status.succeeded = len([index for index in succeeded_indexes if spec.completions is None or index < spec.completions])
    if _finished(job) is not None:
        return plan
    if spec.suspend:
        return plan
    if status.start_time is None:
        status.start_time = timestamp(now)
    active = [pod for pod in pods if pod.status.phase not in ("Succeeded", "Failed") and pod.metadata.deletion_timestamp is None]
    succeeded = status.succeeded + len(remaining.succeeded)
    failed = status.failed + len(remaining.failed)
    backoff_limit = 6 if spec.backoff_limit is None else spec.backoff_limit
    if fail_message is None:
        if spec.template.spec.restart_policy == "OnFailure":
            restarts = sum(s.restart_count for pod in active for s in pod.status.container_statuses)
            if backoff_limit == 0 and restarts > 0 or (backoff_limit > 0 and restarts + failed >= backoff_limit and restarts > 0):
                fail_message = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
        if fail_message is None and backoff_limit_exceeded(failed, backoff_limit):
            fail_message = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    if fail_message is None and spec.active_deadline_seconds is not None and status.start_time is not None:
        deadline = parse_timestamp(status.start_time) + spec.active_deadline_seconds
        if now >= deadline:
            fail_message = ("DeadlineExceeded", "Job was active longer than specified deadline")
        else:
            plan.requeue_after_s = deadline - now
    if fail_message is not None:
        reason, message = fail_message
        plan.delete.extend(active)
        status.conditions = [*status.conditions, JobCondition(type="Failed", status="True", reason=reason, message=message, last_probe_time=timestamp(now), last_transition_time=timestamp(now))]
        status.active = 0
        plan.events.append({"event": "failed", "reason": reason, "message": message})
        return plan
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    completions = spec.completions
    indexed = spec.completion_mode == "Indexed"
    if indexed:
        assert completions is not None
        complete = len(succeeded_indexes) >= completions
    elif completions is None:
        complete = succeeded > 0 and not active
    else:
        complete = succeeded >= completions
    if complete:
        plan.delete.extend(active)
        status.conditions = [*status.conditions, JobCondition(type="Complete", status="True", last_probe_time=timestamp(now), last_transition_time=timestamp(now))]
        status.completion_time = timestamp(now)
        status.active = 0
        plan.events.append({"event": "complete", "succeeded": succeeded})
        return plan
    if indexed:
        assert completions is not None
        active_indexes = {_pod_index(pod) for pod in active}
        wanted = [index for index in range(completions) if index not in succeeded_indexes and index not in active_indexes]
        room = max(0, parallelism - len(active))
        plan.create_indexes = list(wanted[:room])
        duplicates = {}
        for pod in sorted(active, key=lambda pod: pod.metadata.creation_timestamp or ""):
            index = _pod_index(pod)
            if index in duplicates or index in succeeded_indexes or index is None or index >= completions:
                plan.delete.append(pod)
            duplicates[index] = pod
    else:
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            want = max(0, min(parallelism, completions - succeeded))
        if len(active) > want:
            plan.delete.extend(sorted(active, key=lambda pod: (pod.spec.node_name != "", pod.status.phase == "Running", pod.metadata.creation_timestamp or ""))[: len(active) - want])
        else:
            plan.create_indexes = [None] * min(want - len(active), MAX_POD_CREATE_DELETE_PER_SYNC)
    failures, last_at = last_failure
    delay = pod_backoff_s(failures)
    if plan.create_indexes and delay and now < last_at + delay:
        plan.requeue_after_s = min(plan.requeue_after_s or 1e18, last_at + delay - now)
        plan.create_indexes = []
    status.active = len(active) - len([pod for pod in plan.delete if pod in active]) + len(plan.create_indexes)
    status.ready = sum(1 for pod in active if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions))
    return plan


def job_pod(job: Job, index: int | None) -> Pod:
    """A pod of the Job's template, with the tracking finalizer and, when Indexed, its index."""
    template = job.spec.template
    annotations = dict(template.metadata.annotations)
    labels = dict(template.metadata.labels)
    spec = deep_copy(template.spec)
    prefix = f"{job.metadata.name}-"
    if index is not None:
        annotations[COMPLETION_INDEX] = str(index)
        labels[COMPLETION_INDEX] = str(index)
        prefix = f"{job.metadata.name}-{index}-"
        if not spec.hostname:
            spec.hostname = f"{job.metadata.name}-{index}"
    meta = ObjectMeta(
        generate_name=prefix, namespace=job.metadata.namespace, labels=labels, annotations=annotations,
        finalizers=[*template.metadata.finalizers, JOB_TRACKING_FINALIZER], owner_references=[new_controller_ref(job)],
    )
    return Pod(metadata=meta, spec=spec)


class JobController:
    """``Controller`` of ``pkg/controller/job`` (see the module docstring)."""

    KIND = "Job"

    def __init__(self, process: Process, client: ApiClient, informers: SharedInformerFactory, config: ControllerManagerConfig, *, name: str = "job-controller") -> None:
        self.process = process
        self.client = client
        self.config = config
        self.name = name
        self.recorder = EventRecorder(client, name)
        self.queue = RateLimitingQueue(process)
        self.jobs = informers.informer("jobs")
        self.pods = informers.informer("pods")
        add_index(self.pods, POD_CONTROLLER_UID_INDEX, pod_controller_uid_index)
        self._failures: dict[str, tuple[int, float]] = {}
        self._failed_uids: dict[str, set[str]] = {}
        self.jobs.add_event_handler(on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new), on_delete=self._job_deleted)
        # ``ControllerExpectations`` (job_controller.go: ``jm.expectations``): a sync manages
        # pods only once the creations and deletions it made have been observed, so a cache
        # that has not yet seen its own creates does not create again (found by the
        # job-invariants checker: a new leader created eight pods for a Job of parallelism 2)
        self.expectations = ControllerExpectations()
        self.pods.add_event_handler(on_add=self._pod_added, on_update=lambda old, new: self._pod_updated(old, new), on_delete=self._pod_deleted)

    def _enqueue(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.queue.add(meta_namespace_key(obj))

    def _job_deleted(self, obj: Any) -> None:
        obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = meta_namespace_key(obj)
        self._failures.pop(key, None)
        self._failed_uids.pop(key, None)
        self.expectations.delete(key)
        self.queue.add(key)

    def _may_manage(self, key: str, now: float) -> bool:
        """``satisfiedExpectations``: the pods this controller created and deleted for the
        Job have all been observed (or the expectations expired)."""
        return self.expectations.satisfied(key, now)

    def _job_key_of(self, pod: Any) -> str | None:
        reference = controller_ref(pod)
        return f"{pod.metadata.namespace}/{reference.name}" if reference is not None and reference.kind == self.KIND else None

    def _pod_added(self, pod: Any) -> None:
        key = self._job_key_of(pod)
        if key is not None:
            if pod.metadata.deletion_timestamp is not None:
                self.expectations.deletion_observed(key, meta_namespace_key(pod))
            else:
                self.expectations.creation_observed(key)
        self._pod_changed(pod)

    def _pod_updated(self, old: Any, new: Any) -> None:
        key = self._job_key_of(new)
        if key is not None and new.metadata.deletion_timestamp is not None and old.metadata.deletion_timestamp is None:
            self.expectations.deletion_observed(key, meta_namespace_key(new))
        self._pod_changed(new)

    def _pod_deleted(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        key = self._job_key_of(pod)
        if key is not None:
            self.expectations.deletion_observed(key, meta_namespace_key(pod))
        self._pod_changed(obj)

    def _pod_changed(self, pod: Any) -> None:
        pod = pod.obj if isinstance(pod, DeletedFinalStateUnknown) else pod
        reference = controller_ref(pod)
        if reference is not None and reference.kind == self.KIND:
            key = f"{pod.metadata.namespace}/{reference.name}"
            if _failed(pod) or pod.status.phase == "Succeeded":
                self._note_finished(key, pod)
            job = self.jobs.indexer.get_by_key(key)
            if (job is None or job.metadata.uid != reference.uid) and JOB_TRACKING_FINALIZER in pod.metadata.finalizers:
                self.queue.add(("orphan", pod.metadata.namespace, pod.metadata.name))  # cleanupPodFinalizers
                return
            self.queue.add(key)

    def _note_finished(self, key: str, pod: Pod) -> None:
        """``backoffRecord``: failures since the last success, and when the last was seen."""
        seen = self._failed_uids.setdefault(key, set())
        if pod.metadata.uid in seen:
            return
        seen.add(pod.metadata.uid)
        if pod.status.phase == "Succeeded":
            self._failures[key] = (0, self.process.now())
        else:
            count, _ = self._failures.get(key, (0, 0.0))
            self._failures[key] = (count + 1, self.process.now())

    async def run(self) -> None:
        for informer in (self.jobs, self.pods):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            for _ in range(self.config.concurrent_job_syncs):
                nursery.start_soon(work_loop, self.queue, self.sync)

    def _pods_of(self, job: Job) -> list[Pod]:
        """The Job's pods by the controller-uid index (``getPodsForJob`` reads
        ``PodControllerUIDIndex``), those its selector still matches."""
        return [pod for pod in pods_of(self.pods, job, orphans=False) if matches(job.spec.selector, pod.metadata.labels)]

    async def _release_orphan(self, namespace: str, name: str) -> None:
        """``cleanupPodFinalizers``: a pod whose Job is gone loses the tracking finalizer."""
        pod = self.pods.indexer.get_by_key(f"{namespace}/{name}")
        if pod is None or JOB_TRACKING_FINALIZER not in pod.metadata.finalizers:
            return
        # syncOrphanPod: make sure the pod is still orphaned -- its Job may be in the cache
        # now (the pods informer can deliver a pod before the jobs informer lists its Job, as
        # at a new leader's start): "The pod was adopted. Do not remove finalizer." (found by
        # job-invariants: a failure lost across a failover, so a 4th pod for backoffLimit 2)
        reference = controller_ref(pod)
        if reference is not None and reference.kind == self.KIND:
            job = self.jobs.indexer.get_by_key(f"{namespace}/{reference.name}")
            if job is not None and job.metadata.uid == reference.uid and _finished(job) is None:
                return
        finalizers = [f for f in pod.metadata.finalizers if f != JOB_TRACKING_FINALIZER]
        try:
            await self.client.patch("pods", namespace, name, {"metadata": {"finalizers": finalizers, "resourceVersion": pod.metadata.resource_version}})
        except ApiError as error:
            if error.code != 404:
                raise

    async def sync(self, key: Any) -> None:
        if isinstance(key, tuple):
            await self._release_orphan(key[1], key[2])
            return
        namespace, name = split_meta_namespace_key(key)
        job = self.jobs.indexer.get_by_key(key)
        if job is None:
            return
        now = self.process.now()
        if await self._ttl(job, now):
            return
        if job.metadata.deletion_timestamp is not None:
            return
        pods = self._pods_of(job)
        plan = plan_job(job, pods, now, self._failures.get(key, (0, -1e18)))
        if not plan.events and not self._may_manage(key, now):
            # manageJob runs only with satisfied expectations; counting goes on
            plan.status.active += len(plan.delete) - len(plan.create_indexes)
            plan.create_indexes, plan.delete = [], []
        # the three steps of trackJobStatusAndRemoveFinalizers
        if plan.release:
            recorded = deep_copy(job)
            recorded.status.uncounted_terminated_pods = plan.status.uncounted_terminated_pods
            recorded.status.start_time = plan.status.start_time
            if job.spec.completion_mode == "Indexed":  # the indexes are recorded before the finalizers go
                recorded.status.completed_indexes = plan.status.completed_indexes
                recorded.status.succeeded = plan.status.succeeded
            job = await self._write_status(job, recorded.status)
            for pod in plan.release:
                finalizers = [f for f in pod.metadata.finalizers if f != JOB_TRACKING_FINALIZER]
                try:
                    await self.client.patch("pods", pod.metadata.namespace, pod.metadata.name, {"metadata": {"finalizers": finalizers, "resourceVersion": pod.metadata.resource_version}})
                except ApiError as error:
                    if error.code not in (404, 409):
                        raise
                    if error.code == 409:
                        self.queue.add_rate_limited(key)
            self.queue.add_after(key, 0.5)  # count them once the finalizers are gone
        if plan.delete:
            self.expectations.expect_deletions(key, [meta_namespace_key(pod) for pod in plan.delete], now)
        for pod in plan.delete:
            try:
                await self.client.delete("pods", pod.metadata.namespace, pod.metadata.name)
            except ApiError as error:
                if error.code != 404:
                    self.expectations.deletion_observed(key, meta_namespace_key(pod))
                    self.recorder.event(job, "Warning", "FailedDelete", f"Error deleting: {error.status.message}")
                    raise
            else:
                self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")  # controller_utils.go
            self._record(job, "deleted-pod", pod=pod.metadata.name)
        pending = list(plan.create_indexes)
        if pending:
            self.expectations.expect_creations(key, len(pending), now)

        async def create() -> None:
            index = pending.pop(0)
            try:
                created = await self.client.create(job_pod(job, index))
            except ApiError as error:
                self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {error.status.message}")
                raise
            self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created.metadata.name}")  # controller_utils.go
            self._record(job, "created-pod", pod=created.metadata.name)

        successes, error = await slow_start_batch(len(pending), SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(len(plan.create_indexes) - successes):
            self.expectations.creation_observed(key)  # never to be observed
        if successes < len(plan.create_indexes):
            plan.status.active -= len(plan.create_indexes) - successes
        await self._write_status(job, plan.status)
        for event in plan.events:
            self._record(job, event.pop("event"), **event)
        if plan.requeue_after_s is not None:
            self.queue.add_after(key, plan.requeue_after_s + 0.001)
        if error is not None:
            raise error

    async def _write_status(self, job: Job, status: JobStatus) -> Job:
        if msgspec.json.encode(status) == msgspec.json.encode(job.status):
            return job
        updated = deep_copy(job)
        updated.status = status
        try:
            return await self.client.update_status(updated)
        except ApiError as error:
            if error.code == 409:
                raise  # re-read and try again (rate limited)
            if error.code != 404:
                raise
            return job

    async def _ttl(self, job: Job, now: float) -> bool:
        """``ttlafterfinished``: True when the Job was deleted (or is waiting to be)."""
        ttl = job.spec.ttl_seconds_after_finished
        finished = _finished(job)
        if ttl is None or finished is None or job.metadata.deletion_timestamp is not None:
            return False
        condition = next(c for c in job.status.conditions if c.type == finished and c.status == "True")
        at = (parse_timestamp(condition.last_transition_time) if condition.last_transition_time else now) + ttl
        if now < at:
            self.queue.add_after(meta_namespace_key(job), at - now + 0.001)
            return False
        try:
            await self.client.delete("jobs", job.metadata.namespace, job.metadata.name, options=DeleteOptions(preconditions_uid=job.metadata.uid))
        except ApiError as error:
            if error.code not in (404, 409):
                raise
        self._record(job, "ttl-deleted")
        return True

    def _record(self, job: Job, event: str, **fields: Any) -> None:
        self.process.world.record("job", job=meta_namespace_key(job), event=event, controller=self.name, **fields)

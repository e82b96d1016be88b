"""The application kinds' oracles (issue 35) on small hand-made journals: each rule
answers false on the history that breaks it and true (or unknown) on its fixed twin."""

from __future__ import annotations

import json
from typing import Any

from chaoskube.checkers.statefulsets import check_statefulset_invariants, running_intervals

Event = dict[str, Any]


class Journal:
    """A journal built by hand: store writes (``raft-apply``) and other records, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.revision = 0

    def put(self, t: float, resource: str, key: str, value: dict[str, Any]) -> int:
        self.revision += 1
        self.events.append({"type": "raft-apply", "t": t, "revision": self.revision, "member": "etcd-1", "events": [["PUT", f"/registry/{resource}/{key}", json.dumps(value), self.revision]]})
        return self.revision

    def delete(self, t: float, resource: str, key: str) -> None:
        self.revision += 1
        self.events.append({"type": "raft-apply", "t": t, "revision": self.revision, "member": "etcd-1", "events": [["DELETE", f"/registry/{resource}/{key}", None, self.revision]]})

    def record(self, t: float, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, "t": t, **fields})


def stateful_set(replicas: int = 3, *, partition: int | None = None, current: str = "db-a", update: str = "db-a", policy: str = "OrderedReady", claims: bool = True) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": "RollingUpdate"}
    if partition is not None:
        strategy["rollingUpdate"] = {"partition": partition}
    spec: dict[str, Any] = {"replicas": replicas, "podManagementPolicy": policy, "updateStrategy": strategy, "selector": {"matchLabels": {"app": "db"}}}
    if claims:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}}]
    return {"metadata": {"name": "db", "namespace": "default", "uid": "sts-uid", "generation": 1}, "spec": spec,
            "status": {"currentRevision": current, "updateRevision": update, "observedGeneration": 1}}


def stateful_pod(ordinal: int, *, revision: str = "db-a", ready: bool = True, deleting: bool = False, uid: str = "", node: str = "node-1") -> dict[str, Any]:
    name = f"db-{ordinal}"
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"{name}-uid", "labels": {"app": "db", "controller-revision-hash": revision},
                            "ownerReferences": [{"kind": "StatefulSet", "name": "db", "uid": "sts-uid", "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node, "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{ordinal}"}}]},
            "status": {"phase": "Running" if ready else "Pending", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def claim(ordinal: int) -> dict[str, Any]:
    return {"metadata": {"name": f"data-db-{ordinal}", "namespace": "default", "uid": f"claim-{ordinal}"}}


def three_members(journal: Journal, *, first_ready: bool = True, **set_fields: Any) -> None:
    """db-0..db-2 created one after the other, each Ready before the next (or db-0 never Ready)."""
    journal.put(1.0, "statefulsets", "default/db", stateful_set(**set_fields))
    for ordinal in range(3):
        t = 2.0 + 4 * ordinal
        journal.put(t, "persistentvolumeclaims", f"default/data-db-{ordinal}", claim(ordinal))
        journal.put(t + 0.1, "pods", f"default/db-{ordinal}", stateful_pod(ordinal, ready=False, node=f"node-{ordinal + 1}"))
        journal.record(t + 1, "container-start", pod=f"default/db-{ordinal}", node=f"node-{ordinal + 1}", container="db")
        if ordinal or first_ready:
            journal.put(t + 1.5, "pods", f"default/db-{ordinal}", stateful_pod(ordinal, node=f"node-{ordinal + 1}"))


def test_statefulset_invariants_answer_unknown_without_a_statefulset():
    assert check_statefulset_invariants([]).valid is None


def test_ordered_creation_waits_for_each_predecessor_to_be_running_and_ready():
    good = Journal()
    three_members(good)
    verdict = check_statefulset_invariants(good.events)
    assert verdict.valid is True, verdict.reason
    bad = Journal()
    three_members(bad, first_ready=False)
    verdict = check_statefulset_invariants(bad.events)
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-ordered-creation", verdict.reason
    assert "db-0" in verdict.reason


def test_a_pod_created_before_its_claim_is_caught():
    journal = Journal()
    journal.put(1.0, "statefulsets", "default/db", stateful_set(replicas=1))
    journal.put(2.0, "pods", "default/db-0", stateful_pod(0))
    verdict = check_statefulset_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-claim"


def test_two_running_copies_of_one_identity_are_caught_unless_a_user_force_deleted_it():
    def history(force: bool) -> list[Event]:
        journal = Journal()
        three_members(journal)
        # node-1 is cut off: db-0 keeps running there; the pod leaves the store anyway
        if force:
            journal.record(40.0, "api-op", client="kubectl", op_id="1.1", phase="invoke", verb="delete", resource="pods", namespace="default", name="db-0", grace_s=0)
        journal.delete(40.1, "pods", "default/db-0")
        journal.put(41.0, "pods", "default/db-0", stateful_pod(0, uid="second", node="node-4", ready=False))
        journal.record(42.0, "container-start", pod="default/db-0", node="node-4", container="db")
        return journal.events

    verdict = check_statefulset_invariants(history(force=False))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-at-most-one", verdict.reason
    assert "node-1" in verdict.reason and "node-4" in verdict.reason
    verdict = check_statefulset_invariants(history(force=True))
    assert verdict.valid is True, verdict.reason
    assert verdict.details["force_deleted"] and "force deletion" in verdict.reason


def test_a_container_stops_with_its_node_and_comes_back_only_if_adopted():
    journal = Journal()
    journal.record(1.0, "container-start", pod="default/db-0", node="node-1", container="db")
    journal.record(5.0, "process", event="kill", process="node-1")
    journal.record(6.0, "container-start", pod="default/db-0", node="node-2", container="db")
    journal.record(20.0, "kubelet", event="start", node="node-1", adopted=[])
    intervals = running_intervals(journal.events)["default/db-0"]
    assert sorted(intervals) == [(1.0, 5.0, "node-1"), (6.0, float("inf"), "node-2")]
    journal.record(30.0, "process", event="kill", process="node-2")
    journal.record(31.0, "kubelet", event="start", node="node-2", adopted=["default/db-0"])
    journal.record(33.0, "container-exit", pod="default/db-0", node="node-2", container="db", exited_ago_s=1.0)
    assert sorted(running_intervals(journal.events)["default/db-0"])[-1] == (31.0, 32.0, "node-2")


def rolling_delete(journal: Journal, t: float, ordinal: int, *, revision: str) -> None:
    """The StatefulSet controller deletes db-<ordinal> (marks it), as the journal shows it."""
    written = journal.put(t, "pods", f"default/db-{ordinal}", stateful_pod(ordinal, revision=revision, deleting=True, node=f"node-{ordinal + 1}"))
    journal.record(t, "api-request", id="kube-controller-manager-1/controllers/1/9", verb="delete", resource="pods", namespace="default", name=f"db-{ordinal}", code=200, resource_version=str(written))
    journal.record(t + 0.01, "statefulset-pod", statefulset="default/db", pod=f"db-{ordinal}", action="delete", reason="rolling update")


def test_a_rolling_update_respects_the_partition_and_goes_one_pod_at_a_time():
    base = Journal()
    three_members(base, partition=1)
    base.put(30.0, "statefulsets", "default/db", stateful_set(partition=1, current="db-a", update="db-b"))
    ok = Journal()
    ok.events, ok.revision = list(base.events), base.revision
    rolling_delete(ok, 31.0, 2, revision="db-a")
    assert check_statefulset_invariants(ok.events).valid is True
    below = Journal()
    below.events, below.revision = list(base.events), base.revision
    rolling_delete(below, 31.0, 0, revision="db-a")
    verdict = check_statefulset_invariants(below.events)
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-partition", verdict.reason
    early = Journal()
    early.events, early.revision = list(base.events), base.revision
    rolling_delete(early, 31.0, 1, revision="db-a")  # db-2 is not updated yet
    verdict = check_statefulset_invariants(early.events)
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-rolling-update", verdict.reason


def test_a_pod_recreated_below_the_partition_keeps_the_current_revision():
    def history(revision: str) -> list[Event]:
        journal = Journal()
        three_members(journal, partition=1)
        journal.put(30.0, "statefulsets", "default/db", stateful_set(partition=1, current="db-a", update="db-b"))
        journal.delete(50.0, "pods", "default/db-0")
        journal.put(51.0, "pods", "default/db-0", stateful_pod(0, revision=revision, uid="again", ready=False))
        return journal.events

    assert check_statefulset_invariants(history("db-a")).valid is True
    verdict = check_statefulset_invariants(history("db-b"))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-partition" and "below the partition" in verdict.reason


def test_a_pod_created_after_a_template_rollback_the_status_has_not_caught_up_with_is_not_judged():
    """swarm-apps seed 19 (--buggify): the set rolls forward to db-b (status: current db-a,
    update db-b), then its template is rolled back to db-a's (generation 3) while the
    controller's pod creates fail and no status is written; the next sync computes the
    update revision from the rolled-back template -- getStatefulSetRevisions reuses the
    equal revision db-a -- and creates db-2 at db-a. The stored status (observedGeneration
    2) still names update db-b, but it was not computed from the spec the controller saw."""
    def history(rolled_back: bool) -> list[Event]:
        journal = Journal()
        three_members(journal, partition=0)
        journal.put(30.0, "statefulsets", "default/db", stateful_set(partition=0, current="db-a", update="db-b") | {"metadata": {"name": "db", "namespace": "default", "uid": "sts-uid", "generation": 2}}
                    | {"status": {"currentRevision": "db-a", "updateRevision": "db-b", "observedGeneration": 2}})
        journal.delete(31.0, "pods", "default/db-2")
        if rolled_back:  # spec back to db-a's template, the status not written since
            journal.put(40.0, "statefulsets", "default/db", stateful_set(partition=0, current="db-a", update="db-b") | {"metadata": {"name": "db", "namespace": "default", "uid": "sts-uid", "generation": 3}}
                        | {"status": {"currentRevision": "db-a", "updateRevision": "db-b", "observedGeneration": 2}})
        journal.put(55.0, "pods", "default/db-2", stateful_pod(2, revision="db-a", uid="again", ready=False))
        return journal.events

    verdict = check_statefulset_invariants(history(rolled_back=True))
    assert verdict.valid is True and verdict.details["unjudged_revision"] >= 1, verdict.reason
    # the same create with the spec as the status saw it is still a finding
    verdict = check_statefulset_invariants(history(rolled_back=False))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-partition" and "at or above the partition" in verdict.reason


def test_a_rolling_delete_is_judged_against_the_update_revision_of_its_own_spec_not_a_later_one():
    """swarm-apps seed 30: sts-1 rolls to 584cf8576c (generation 2); sts-1-1 is updated and
    Running and Ready at it when the controller deletes sts-1-0 at 122.68 s; 4.9 s later a
    new template (generation 3) makes 554b74cfb6 the update revision. The status that names
    554b74cfb6 was computed from a spec written after the delete, so it does not say which
    revision the delete was for; the one in effect (584cf8576c) does."""
    def history(updated_first: bool) -> list[Event]:
        journal = Journal()
        three_members(journal, partition=0)
        rolled = {"metadata": {"name": "db", "namespace": "default", "uid": "sts-uid", "generation": 2}}
        journal.put(30.0, "statefulsets", "default/db", stateful_set(partition=0, current="db-a", update="db-b") | rolled
                    | {"status": {"currentRevision": "db-a", "updateRevision": "db-b", "observedGeneration": 2}})
        rolling_delete(journal, 31.0, 2, revision="db-a")
        journal.delete(32.0, "pods", "default/db-2")
        journal.put(32.5, "pods", "default/db-2", stateful_pod(2, revision="db-b", uid="again", ready=False, node="node-3"))
        if updated_first:
            journal.put(35.0, "pods", "default/db-2", stateful_pod(2, revision="db-b", uid="again", node="node-3"))
        rolling_delete(journal, 36.0, 1, revision="db-a")
        newer = {"metadata": {"name": "db", "namespace": "default", "uid": "sts-uid", "generation": 3}}
        journal.put(40.9, "statefulsets", "default/db", stateful_set(partition=0, current="db-a", update="db-b") | newer
                    | {"status": {"currentRevision": "db-a", "updateRevision": "db-b", "observedGeneration": 2}})
        journal.put(40.95, "statefulsets", "default/db", stateful_set(partition=0, current="db-a", update="db-c") | newer
                    | {"status": {"currentRevision": "db-a", "updateRevision": "db-c", "observedGeneration": 3}})
        return journal.events

    verdict = check_statefulset_invariants(history(updated_first=True))
    assert verdict.valid is True, verdict.reason
    # db-1 deleted while db-2 was not yet Ready at db-b is still a finding
    verdict = check_statefulset_invariants(history(updated_first=False))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-rolling-update", verdict.reason
    assert verdict.evidence[0]["update_revisions"] == ["db-b"] and "db-2" in verdict.evidence[0]["successor"]


def test_scale_down_terminates_from_the_highest_ordinal():
    journal = Journal()
    three_members(journal)
    journal.put(30.0, "statefulsets", "default/db", stateful_set(replicas=1))
    rolling_delete(journal, 31.0, 1, revision="db-a")  # db-2 is still there
    verdict = check_statefulset_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-termination-order", verdict.reason


# =========================================================================== Jobs
from chaoskube.checkers.jobs import check_job_invariants  # noqa: E402


def job(*, parallelism: int = 2, completions: int | None = 3, backoff_limit: int = 2, status: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"parallelism": parallelism, "backoffLimit": backoff_limit, "template": {"spec": {"restartPolicy": "Never"}}}
    if completions is not None:
        spec["completions"] = completions
    return {"metadata": {"name": "work", "namespace": "default", "uid": "job-uid"}, "spec": spec, "status": status or {}}


def job_pod(name: str, *, phase: str = "Pending", finalizer: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"{name}-uid", "ownerReferences": [{"kind": "Job", "name": "work", "uid": "job-uid", "controller": True}],
                            "finalizers": ["batch.kubernetes.io/job-tracking"] if finalizer else []}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_job_invariants_answer_unknown_without_a_job():
    assert check_job_invariants([]).valid is None


def test_active_pods_above_parallelism_are_caught():
    journal = Journal()
    journal.put(1.0, "jobs", "default/work", job(parallelism=2))
    for index, name in enumerate(("work-a", "work-b", "work-c")):
        journal.put(2.0 + index, "pods", f"default/{name}", job_pod(name))
    verdict = check_job_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "job-parallelism", verdict.reason


def counting(succeeded_status: int) -> list[Event]:
    journal = Journal()
    journal.put(1.0, "jobs", "default/work", job(completions=3))
    journal.put(2.0, "pods", "default/work-a", job_pod("work-a"))
    journal.put(10.0, "pods", "default/work-a", job_pod("work-a", phase="Succeeded"))
    journal.put(10.5, "jobs", "default/work", job(completions=3, status={"uncountedTerminatedPods": {"succeeded": ["work-a-uid"]}}))
    journal.put(10.6, "pods", "default/work-a", job_pod("work-a", phase="Succeeded", finalizer=False))
    journal.put(11.0, "jobs", "default/work", job(completions=3, status={"succeeded": succeeded_status}))
    return journal.events


def test_a_finished_pod_counted_twice_is_caught():
    assert check_job_invariants(counting(1)).valid is True
    verdict = check_job_invariants(counting(2))
    assert verdict.valid is False and verdict.details["rule"] == "job-counted-twice", verdict.reason


def test_a_job_failed_before_its_backoff_limit_is_caught():
    def history(failures: int) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=1, completions=1, backoff_limit=2))
        for index in range(failures):
            name = f"work-{index}"
            journal.put(2.0 + 20 * index, "pods", f"default/{name}", job_pod(name))
            journal.put(4.0 + 20 * index, "pods", f"default/{name}", job_pod(name, phase="Failed", finalizer=False))
        journal.put(80.0, "jobs", "default/work", job(parallelism=1, completions=1, backoff_limit=2, status={"failed": failures, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}))
        return journal.events

    assert check_job_invariants(history(3)).valid is True
    verdict = check_job_invariants(history(2))
    assert verdict.valid is False and verdict.details["rule"] == "job-backoff-limit", verdict.reason


def test_a_create_admitted_before_the_finish_but_written_after_it_is_not_a_create_after_the_finish():
    """swarm-apps seed 19: the Job controller's create of job-failing-0-lgvf7 was admitted
    at 47.9 s (creationTimestamp 00:00:47) but its etcd write landed at 105.6 s, after the
    Job was stored Failed at 68.7 s; only a create admitted after the finish breaks it."""
    def history(stamp: str) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=1, completions=1, backoff_limit=0))
        journal.put(2.0, "pods", "default/work-0", job_pod("work-0"))
        journal.put(4.0, "pods", "default/work-0", job_pod("work-0", phase="Failed", finalizer=False))
        journal.put(60.0, "jobs", "default/work", job(parallelism=1, completions=1, backoff_limit=0, status={"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}))
        late = job_pod("work-late")
        late["metadata"]["creationTimestamp"] = stamp
        journal.put(105.0, "pods", "default/work-late", late)
        return journal.events

    assert check_job_invariants(history("2026-01-01T00:00:47Z")).valid is True
    verdict = check_job_invariants(history("2026-01-01T00:01:44Z"))
    assert verdict.valid is False and verdict.details["rule"] == "job-finished", verdict.reason


def _stamped(name: str, stamp: str, **fields: Any) -> dict[str, Any]:
    pod = job_pod(name, **fields)
    pod["metadata"]["creationTimestamp"] = stamp
    return pod


def test_parallelism_is_judged_as_of_the_admission_of_a_late_written_create():
    """manageJob counts the active pods of its cache when it decides a create: a create
    admitted at 10 s (creationTimestamp 00:00:10) whose etcd write lands at 68 s (an API
    server waiting on a paused member) was decided without the pod a new leader created at
    30 s -- which could not see it either. Only pods admitted no later than it count."""
    def history(other_stamp: str) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=1, completions=2))
        journal.put(30.0, "pods", "default/work-b", _stamped("work-b", other_stamp))
        journal.put(68.0, "pods", "default/work-a", _stamped("work-a", "2026-01-01T00:00:10Z"))
        return journal.events

    assert check_job_invariants(history("2026-01-01T00:00:30Z")).valid is True
    verdict = check_job_invariants(history("2026-01-01T00:00:05Z"))  # admitted before it: both counted
    assert verdict.valid is False and verdict.details["rule"] == "job-parallelism", verdict.reason


def test_the_parallelism_bound_reaches_back_from_the_admission():
    """A create admitted at 3 s, before parallelism went from 2 to 1 at 5 s, written at 70 s:
    the bound is the largest of the 60 s before its admission (2), not of those before its
    store write (1)."""
    def history(stamp: str) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=2, completions=4))
        journal.put(2.0, "pods", "default/work-a", _stamped("work-a", "2026-01-01T00:00:02Z"))
        journal.put(5.0, "jobs", "default/work", job(parallelism=1, completions=4))
        journal.put(70.0, "pods", "default/work-b", _stamped("work-b", stamp))
        return journal.events

    assert check_job_invariants(history("2026-01-01T00:00:03Z")).valid is True
    verdict = check_job_invariants(history("2026-01-01T00:01:09Z"))
    assert verdict.valid is False and verdict.details["rule"] == "job-parallelism", verdict.reason


def test_backoff_is_judged_as_of_the_admission_of_a_late_written_create():
    """syncJob checks the backoff limit before manageJob creates: a create admitted at 10 s,
    before its second failure (30 s), written at 70 s, did not ignore failures it could not
    have seen; one admitted at 45 s, two failures later, did."""
    def history(stamp: str) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=2, completions=3, backoff_limit=1))
        journal.put(2.0, "pods", "default/work-a", _stamped("work-a", "2026-01-01T00:00:02Z"))
        journal.put(4.0, "pods", "default/work-a", _stamped("work-a", "2026-01-01T00:00:02Z", phase="Failed"))
        journal.put(20.0, "pods", "default/work-b", _stamped("work-b", "2026-01-01T00:00:20Z"))
        journal.put(30.0, "pods", "default/work-b", _stamped("work-b", "2026-01-01T00:00:20Z", phase="Failed"))
        journal.put(70.0, "pods", "default/work-c", _stamped("work-c", stamp))
        return journal.events

    assert check_job_invariants(history("2026-01-01T00:00:10Z")).valid is True
    verdict = check_job_invariants(history("2026-01-01T00:00:45Z"))
    assert verdict.valid is False and verdict.details["rule"] == "job-backoff-limit", verdict.reason


def test_a_success_never_counted_is_caught_at_the_end():
    def history(counted: int) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "jobs", "default/work", job(parallelism=2, completions=2))
        for name in ("work-a", "work-b"):
            journal.put(2.0, "pods", f"default/{name}", job_pod(name))
            journal.put(9.0, "pods", f"default/{name}", job_pod(name, phase="Succeeded", finalizer=False))
        status = {"succeeded": counted, "conditions": [{"type": "Complete", "status": "True"}]}
        journal.put(10.0, "jobs", "default/work", job(parallelism=2, completions=2, status=status))
        journal.record(40.0, "phase", name="check")
        return journal.events

    assert check_job_invariants(history(2)).valid is True
    verdict = check_job_invariants(history(1))
    assert verdict.valid is False and verdict.details["rule"] == "job-count-lost", verdict.reason


# =========================================================================== CronJobs
from chaoskube.checkers.cronjobs import check_cronjob_invariants  # noqa: E402


def cronjob(policy: str = "Forbid", *, schedule: str = "*/1 * * * *", time_zone: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedule": schedule, "concurrencyPolicy": policy}
    if time_zone:
        spec["timeZone"] = time_zone
    return {"metadata": {"name": "report", "namespace": "default", "uid": "cron-uid", "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": spec}


def cron_job(minute: int, *, scheduled: str | None = None, uid: str = "", finished: bool = False) -> dict[str, Any]:
    stamp = scheduled or f"2026-01-01T00:{minute:02d}:00Z"
    status = {"conditions": [{"type": "Complete", "status": "True"}]} if finished else {}
    return {"metadata": {"name": f"report-{minute}", "namespace": "default", "uid": uid or f"job-{minute}",
                         "annotations": {"batch.kubernetes.io/cronjob-scheduled-timestamp": stamp},
                         "ownerReferences": [{"kind": "CronJob", "name": "report", "uid": "cron-uid", "controller": True}]}, "status": status}


def test_cronjob_invariants_answer_unknown_without_a_cronjob():
    assert check_cronjob_invariants([]).valid is None


def test_forbid_never_starts_a_second_run_beside_an_active_one():
    def history(first_done: bool) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "cronjobs", "default/report", cronjob("Forbid"))
        journal.put(60.1, "jobs", "default/report-1", cron_job(1))
        if first_done:
            journal.put(100.0, "jobs", "default/report-1", cron_job(1, finished=True))
        journal.put(120.1, "jobs", "default/report-2", cron_job(2))
        return journal.events

    assert check_cronjob_invariants(history(first_done=True)).valid is True
    verdict = check_cronjob_invariants(history(first_done=False))
    assert verdict.valid is False and verdict.details["rule"] == "cronjob-forbid", verdict.reason


def test_replace_leaves_no_run_beside_the_new_one():
    journal = Journal()
    journal.put(1.0, "cronjobs", "default/report", cronjob("Replace"))
    journal.put(60.1, "jobs", "default/report-1", cron_job(1))
    journal.put(120.1, "jobs", "default/report-2", cron_job(2))
    journal.record(200.0, "phase", name="check")
    verdict = check_cronjob_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "cronjob-replace", verdict.reason


def test_a_scheduled_time_started_twice_or_off_schedule_is_caught():
    twice = Journal()
    twice.put(1.0, "cronjobs", "default/report", cronjob("Allow"))
    twice.put(60.1, "jobs", "default/report-1", cron_job(1))
    twice.put(61.0, "jobs", "default/report-1b", cron_job(1, uid="again"))
    verdict = check_cronjob_invariants(twice.events)
    assert verdict.valid is False and verdict.details["rule"] == "cronjob-once", verdict.reason
    zoned = Journal()  # every 2 minutes in New York is every 2 minutes in UTC too; minute 3 is not one
    zoned.put(1.0, "cronjobs", "default/report", cronjob("Allow", schedule="*/2 * * * *", time_zone="America/New_York"))
    zoned.put(180.1, "jobs", "default/report-3", cron_job(3))
    verdict = check_cronjob_invariants(zoned.events)
    assert verdict.valid is False and verdict.details["rule"] == "cronjob-schedule", verdict.reason


def test_an_activation_lost_while_the_controller_manager_led_is_caught():
    def history(start_second: bool) -> list[Event]:
        journal = Journal()
        journal.record(0.5, "leader", event="start", lease="kube-system/kube-controller-manager", process="kube-controller-manager-1")
        journal.put(1.0, "cronjobs", "default/report", cronjob("Allow"))
        journal.put(60.1, "jobs", "default/report-1", cron_job(1, finished=False))
        if start_second:
            journal.put(120.1, "jobs", "default/report-2", cron_job(2))
        journal.record(150.0, "phase", name="check")
        return journal.events

    assert check_cronjob_invariants(history(True)).valid is True
    verdict = check_cronjob_invariants(history(False))
    assert verdict.valid is False and verdict.details["rule"] == "cronjob-missed", verdict.reason


# =========================================================================== DaemonSets
from chaoskube.checkers.daemonsets import check_daemonset_invariants  # noqa: E402


def daemon_set(*, max_surge: int | None = None) -> dict[str, Any]:
    rolling = {"maxUnavailable": 0 if max_surge else 1} | ({"maxSurge": max_surge} if max_surge else {})
    return {"metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "agent", "image": "a"}]}}},
            "status": {"desiredNumberScheduled": 2}}


def daemon_pod(name: str, node: str, *, ready: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid", "ownerReferences": [{"kind": "DaemonSet", "name": "agent", "uid": "ds-uid", "controller": True}]},
            "spec": {"nodeName": node, "containers": [{"name": "agent", "image": "a"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def ready_node(name: str, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"{name}-uid"}, "spec": {"taints": taints or []}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_daemonset_invariants_answer_unknown_without_a_daemonset():
    assert check_daemonset_invariants([]).valid is None


def test_a_daemon_pod_evicted_for_an_unreachable_node_is_caught():
    journal = Journal()
    journal.put(1.0, "daemonsets", "default/agent", daemon_set())
    journal.put(2.0, "nodes", "node-1", ready_node("node-1", [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]))
    journal.put(3.0, "pods", "default/agent-a", daemon_pod("agent-a", "node-1"))
    journal.record(350.0, "taint-eviction", pod="default/agent-a", node="node-1", after_s=300.0)
    verdict = check_daemonset_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "daemonset-evicted", verdict.reason


def test_two_pods_on_a_node_beyond_max_surge_are_caught():
    def history(max_surge: int | None) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "daemonsets", "default/agent", daemon_set(max_surge=max_surge))
        journal.put(2.0, "pods", "default/agent-a", daemon_pod("agent-a", "node-1"))
        journal.put(3.0, "pods", "default/agent-b", daemon_pod("agent-b", "node-1", ready=False))
        return journal.events

    assert check_daemonset_invariants(history(1)).valid is True
    verdict = check_daemonset_invariants(history(None))
    assert verdict.valid is False and verdict.details["rule"] == "daemonset-surge", verdict.reason


def test_at_the_end_every_node_that_should_run_it_has_exactly_one():
    def history(on_tainted: bool) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "nodes", "node-1", ready_node("node-1"))
        journal.put(1.1, "nodes", "gpu-1", ready_node("gpu-1", [{"key": "dedicated", "value": "gpu", "effect": "NoExecute"}]))
        journal.put(2.0, "daemonsets", "default/agent", daemon_set())
        journal.put(3.0, "pods", "default/agent-a", daemon_pod("agent-a", "node-1"))
        if on_tainted:
            journal.put(3.5, "pods", "default/agent-b", daemon_pod("agent-b", "gpu-1"))
        journal.record(60.0, "kubernetes", event="final", steady=True)
        return journal.events

    assert check_daemonset_invariants(history(False)).valid is True
    verdict = check_daemonset_invariants(history(True))
    assert verdict.valid is False and verdict.details["rule"] == "daemonset-placement" and "gpu-1" in verdict.reason, verdict.reason


# =========================================================================== namespaces
from chaoskube.checkers.namespaces import check_namespace_invariants  # noqa: E402


def namespace(name: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"{name}-uid"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    return {"metadata": meta, "spec": {"finalizers": ["kubernetes"]}}


def test_namespace_invariants_answer_unknown_without_a_deletion():
    journal = Journal()
    journal.put(1.0, "namespaces", "shop", namespace("shop"))
    assert check_namespace_invariants(journal.events).valid is None


def test_a_namespace_finalized_with_content_left_is_caught():
    def history(pod_gone_first: bool) -> list[Event]:
        journal = Journal()
        journal.put(1.0, "namespaces", "shop", namespace("shop"))
        journal.put(2.0, "pods", "shop/web", {"metadata": {"name": "web", "namespace": "shop"}})
        journal.put(10.0, "namespaces", "shop", namespace("shop", deleting=True))
        if pod_gone_first:
            journal.delete(20.0, "pods", "shop/web")
        journal.delete(21.0, "namespaces", "shop")
        return journal.events

    assert check_namespace_invariants(history(True)).valid is True
    verdict = check_namespace_invariants(history(False))
    assert verdict.valid is False and verdict.details["rule"] == "namespace-finalized-with-content", verdict.reason


def test_content_created_while_terminating_or_after_is_caught():
    journal = Journal()
    journal.put(1.0, "namespaces", "shop", namespace("shop"))
    journal.put(10.0, "namespaces", "shop", namespace("shop", deleting=True))
    journal.put(12.0, "leases", "shop/early", {"metadata": {"name": "early", "namespace": "shop"}})  # within the cache lag
    journal.put(25.0, "leases", "shop/late", {"metadata": {"name": "late", "namespace": "shop"}})
    verdict = check_namespace_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "namespace-create-while-terminating" and "late" in verdict.reason, verdict.reason
    after = Journal()
    after.put(1.0, "namespaces", "shop", namespace("shop"))
    after.put(10.0, "namespaces", "shop", namespace("shop", deleting=True))
    after.delete(11.0, "namespaces", "shop")
    after.put(12.0, "configmaps", "shop/cfg", {"metadata": {"name": "cfg", "namespace": "shop"}})
    verdict = check_namespace_invariants(after.events)
    assert verdict.valid is False and verdict.details["rule"] == "namespace-content-after-deletion", verdict.reason


# =========================================================================== resource quotas
from chaoskube.checkers.quotas import check_quota_invariants  # noqa: E402


def quota(hard: dict[str, str], *, scopes: list[str] | None = None, used: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"hard": hard}
    if scopes:
        spec["scopes"] = scopes
    status = {"hard": hard, "used": used} if used is not None else {}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute", "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:01Z"}, "spec": spec, "status": status}


def quota_pod(name: str, at_s: int, *, cpu: str = "500m", phase: str = "Pending") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "creationTimestamp": f"2026-01-01T00:00:{at_s:02d}Z"},
            "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}, "status": {"phase": phase}}


def test_quota_invariants_answer_unknown_without_a_quota():
    journal = Journal()
    journal.put(3.0, "pods", "shop/a", quota_pod("a", 3))
    assert check_quota_invariants(journal.events).valid is None


def test_a_create_past_a_quotas_hard_is_caught():
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2", "requests.cpu": "2"}))
    for index, name in enumerate("abc"):
        journal.put(3.0 + index, "pods", f"shop/{name}", quota_pod(name, 3 + index))
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "quota-exceeded", verdict.reason
    assert verdict.evidence[0]["resource"] == "count/pods" and verdict.evidence[0]["used"] == 3000


def test_creates_within_hard_after_deletes_and_terminal_pods_hold():
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2", "requests.cpu": "1"}))
    journal.put(3.0, "pods", "shop/a", quota_pod("a", 3))
    journal.put(4.0, "pods", "shop/b", quota_pod("b", 4))
    journal.delete(5.0, "pods", "shop/a")
    journal.put(6.0, "pods", "shop/c", quota_pod("c", 6))
    journal.put(7.0, "pods", "shop/b", quota_pod("b", 4, phase="Succeeded"))  # terminal: uses nothing
    journal.put(8.0, "pods", "shop/d", quota_pod("d", 8))
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is True and verdict.details["creates_checked"] == 4, verdict.reason


def test_objects_from_before_the_quota_and_raised_hard_are_not_alarms():
    journal = Journal()
    journal.put(0.5, "pods", "shop/old", quota_pod("old", 0))  # admitted before any quota
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "1"}))
    journal.put(3.0, "pods", "shop/a", quota_pod("a", 3))
    journal.put(4.0, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))  # raised
    journal.put(5.0, "pods", "shop/b", quota_pod("b", 5))
    journal.put(6.0, "resourcequotas", "shop/compute", quota({"count/pods": "1"}))  # lowered: no eviction
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is True, verdict.reason


def test_scoped_quotas_are_left_out_and_listed():
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "1"}, scopes=["BestEffort"]))
    journal.put(3.0, "pods", "shop/a", quota_pod("a", 3))
    journal.put(4.0, "pods", "shop/b", quota_pod("b", 4))
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is None and verdict.details["scoped_left_out"] == ["shop/compute"], verdict.reason


def _charged(journal: Journal, t: float, pods: int) -> None:
    """The quota as stored after a write of status.used (a charge raises it, a recalculation may lower it)."""
    journal.put(t, "resourcequotas", "shop/compute", quota({"count/pods": "2"}, used={"count/pods": str(pods)}))


def test_an_excess_within_what_a_recalculation_failed_to_count_is_excused_and_reported():
    # kubernetes#123434: the controller, syncing on a deletion, counts from a pod informer that
    # has not seen b (charged at 4.0, stored at 5.5): its write takes b's charge back, and c
    # is admitted on the headroom b already spent
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))
    _charged(journal, 2.0, 0)  # the controller's first status
    _charged(journal, 3.0, 1)
    journal.put(3.1, "pods", "shop/a", quota_pod("a", 3))
    _charged(journal, 4.0, 2)  # b charged, still being stored
    journal.record(4.0, "api-request", id="rs/7/quota", resource="resourcequotas", subresource="status", verb="update", code=200, resource_version=str(journal.revision))
    _charged(journal, 5.0, 1)  # the recalculation: a only
    journal.put(5.5, "pods", "shop/b", quota_pod("b", 4))
    journal.record(5.5, "api-request", id="rs/7", resource="pods", subresource="", verb="create", code=201, resource_version=str(journal.revision))
    _charged(journal, 6.0, 2)
    journal.put(6.1, "pods", "shop/c", quota_pod("c", 6))
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is True and "1 excess(es) excused" in verdict.reason and "kubernetes/kubernetes#123434" in verdict.reason, verdict.reason
    (excused,) = verdict.details["excused"]
    assert excused["resource"] == "count/pods" and excused["used"] == 3000 and excused["recalculations"] == [{"t": 5.0, "revision": 6, "wrote": "1", "should_count": "2"}]
    # without the charge before the recalculation (b admitted after it, uncharged) nothing is excused
    uncharged = [event for event in journal.events if event["type"] != "api-request"]
    assert check_quota_invariants(uncharged).valid is False


def test_an_uncharged_create_after_a_correct_recalculation_is_caught():
    # the recalculation counted what the store held; d was stored with no charge before it
    # (the admission bug of quota-admits-on-stale-status): nothing excuses the excess
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))
    _charged(journal, 2.0, 0)
    _charged(journal, 3.0, 1)
    journal.put(3.1, "pods", "shop/a", quota_pod("a", 3))
    _charged(journal, 3.5, 2)
    journal.put(3.6, "pods", "shop/b", quota_pod("b", 3))
    journal.delete(4.0, "pods", "shop/a")
    _charged(journal, 4.5, 1)  # the recalculation after a's deletion: b, right
    _charged(journal, 6.0, 2)
    journal.put(6.1, "pods", "shop/c", quota_pod("c", 6))
    journal.put(7.1, "pods", "shop/d", quota_pod("d", 7))  # admitted on a conflicting charge, never charged
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "quota-exceeded" and "shop/d" in verdict.reason, verdict.reason
    assert verdict.evidence[0]["excusable"] == 0 and verdict.details["recalculations"] == 2


def test_an_excess_larger_than_the_recalculations_missed_is_caught():
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))
    _charged(journal, 2.0, 0)
    _charged(journal, 3.0, 1)
    journal.put(3.1, "pods", "shop/a", quota_pod("a", 3))
    _charged(journal, 4.0, 2)
    journal.record(4.0, "api-request", id="rs/7/quota", resource="resourcequotas", subresource="status", verb="update", code=200, resource_version=str(journal.revision))
    _charged(journal, 5.0, 1)  # misses b, in flight: 1 excusable
    journal.put(5.5, "pods", "shop/b", quota_pod("b", 4))
    journal.record(5.5, "api-request", id="rs/7", resource="pods", subresource="", verb="create", code=201, resource_version=str(journal.revision))
    for index, name in enumerate("cd"):
        journal.put(7.0 + index, "pods", f"shop/{name}", quota_pod(name, 7 + index))  # two more, uncharged
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is False and verdict.evidence[0]["used"] == 4000 and verdict.evidence[0]["excusable"] == 1000, verdict.reason
    assert "more than the 1 the controller's recalculations failed to count" in verdict.reason


def test_a_recalculation_from_a_lagging_informer_excuses_what_it_missed():
    # b was stored before the recalculation, whose pod informer had not seen it yet
    journal = Journal()
    journal.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))
    _charged(journal, 2.0, 0)
    _charged(journal, 3.0, 1)
    journal.put(3.1, "pods", "shop/a", quota_pod("a", 3))
    _charged(journal, 4.0, 2)
    journal.put(4.1, "pods", "shop/b", quota_pod("b", 4))
    _charged(journal, 5.0, 1)  # counted a only
    _charged(journal, 6.0, 2)
    journal.put(6.1, "pods", "shop/c", quota_pod("c", 6))
    verdict = check_quota_invariants(journal.events)
    assert verdict.valid is True and verdict.details["excused"][0]["recalculations"][0]["should_count"] == "2", verdict.reason


def test_a_recalculation_that_counts_everything_ends_what_earlier_ones_excuse():
    # two lagging recalculations (b missed), then one that counted b: status.used was the
    # truth again, so d, stored later with no charge, is an admission bug
    healed = Journal()
    healed.put(1.5, "resourcequotas", "shop/compute", quota({"count/pods": "2"}))
    _charged(healed, 2.0, 0)
    _charged(healed, 3.0, 1)
    healed.put(3.1, "pods", "shop/a", quota_pod("a", 3))
    _charged(healed, 4.0, 2)
    healed.put(4.1, "pods", "shop/b", quota_pod("b", 4))
    _charged(healed, 5.0, 1)  # missed b: 1 excusable
    healed.delete(5.5, "pods", "shop/a")
    _charged(healed, 6.0, 0)  # lowers again, and misses b again: still excusable
    healed.put(6.5, "pods", "shop/a2", quota_pod("a2", 6))
    _charged(healed, 7.0, 2)  # a charge (raises)
    healed.delete(7.5, "pods", "shop/a2")
    _charged(healed, 8.0, 1)  # a recalculation that counts b: the truth
    healed.put(9.1, "pods", "shop/c", quota_pod("c", 9))
    healed.put(9.2, "pods", "shop/d", quota_pod("d", 9))  # b, c, d: one above hard, no charge
    verdict = check_quota_invariants(healed.events)
    assert verdict.valid is False and "shop/d" in verdict.reason and verdict.evidence[0]["excusable"] == 0, verdict.reason


# --------------------------------------------------------------------------- claim retention
def _retention_history(policy: dict[str, str] | None, *, collect: bool, final_at: float = 120.0) -> list[Event]:
    """db scaled 3 -> 1 at t=30: db-2 and db-1 leave the store; the garbage collector deletes
    their claims (``collect``) or nobody does; the run ends steady at ``final_at``."""
    journal = Journal()
    with_policy = stateful_set()
    if policy:
        with_policy["spec"]["persistentVolumeClaimRetentionPolicy"] = policy
    three_members(journal)
    journal.put(20.0, "statefulsets", "default/db", with_policy)
    scaled = json.loads(json.dumps(with_policy))
    scaled["spec"]["replicas"] = 1
    journal.put(30.0, "statefulsets", "default/db", scaled)
    for t, ordinal in ((31.0, 2), (35.0, 1)):
        rolling_delete(journal, t, ordinal, revision="db-a")
        journal.delete(t + 1.0, "pods", f"default/db-{ordinal}")
        journal.record(t + 0.5, "container-exit", pod=f"default/db-{ordinal}", node=f"node-{ordinal + 1}", container="db")
        if collect:
            journal.record(t + 2.0, "gc-delete", resource="persistentvolumeclaims", namespace="default", name=f"data-db-{ordinal}", owners=[f"db-{ordinal}-uid"])
            journal.delete(t + 2.1, "persistentvolumeclaims", f"default/data-db-{ordinal}")
    journal.record(final_at, "kubernetes", event="final", steady=True)
    return journal.events


def test_claims_are_collected_only_as_the_retention_policy_allows():
    verdict = check_statefulset_invariants(_retention_history({"whenDeleted": "Retain", "whenScaled": "Delete"}, collect=True))
    assert verdict.valid is True, verdict.reason
    assert verdict.details["retention_judged"] == 2
    verdict = check_statefulset_invariants(_retention_history(None, collect=True))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-claim-retention", verdict.reason
    assert "whenScaled Retain" in verdict.reason


def test_a_claim_retention_delete_leaves_behind_is_caught_at_a_settled_end():
    verdict = check_statefulset_invariants(_retention_history({"whenScaled": "Delete"}, collect=False))
    assert verdict.valid is False and verdict.details["rule"] == "statefulset-claim-retention", verdict.reason
    assert "data-db-1" in verdict.reason and "scaled-down ordinal 1" in verdict.reason
    verdict = check_statefulset_invariants(_retention_history({"whenScaled": "Delete"}, collect=False, final_at=50.0))
    assert verdict.valid is True, verdict.reason
    assert verdict.details["retention_unjudged"] == ["default/data-db-1", "default/data-db-2"]
    verdict = check_statefulset_invariants(_retention_history(None, collect=False))
    assert verdict.valid is True, verdict.reason  # Retain: the claims stay

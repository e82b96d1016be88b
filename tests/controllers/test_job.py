"""The Job controller's pure parts: the pod failure policy (upstream's table), backoff,
completed indexes, and :func:`plan_job` (completions, parallelism, backoffLimit,
activeDeadlineSeconds, FailJob)."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import Job, Pod, PodFailurePolicy
from chaoskube.api.protocol import timestamp
from chaoskube.controllers.job import JOB_TRACKING_FINALIZER, completed_indexes, match_pod_failure_policy, plan_job, pod_backoff_s

import msgspec


def _policy(*rules: dict[str, Any]) -> PodFailurePolicy:
    return msgspec.convert({"rules": list(rules)}, PodFailurePolicy)


def _exit(action: str, operator: str, values: list[int], name: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"action": action, "onExitCodes": {"operator": operator, "values": values}}
    if name is not None:
        rule["name"] = name
    return rule


def _cond(action: str, type_: str, status: str, name: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"action": action, "onPodConditions": [{"type": type_, "status": status}]}
    if name is not None:
        rule["name"] = name
    return rule


def _failed_pod(containers: list[tuple[str, int | None]] = (), init: list[tuple[str, int | None]] = (), conditions: list[tuple[str, str]] = ()) -> Pod:
    def statuses(entries: Any) -> list[dict[str, Any]]:
        return [{"name": name, **({"state": {"terminated": {"exitCode": code}}} if code is not None else {})} for name, code in entries]

    return from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default", "name": "mypod"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Failed", "containerStatuses": statuses(containers), "initContainerStatuses": statuses(init),
                   "conditions": [{"type": t, "status": s} for t, s in conditions]},
    })  # type: ignore[return-value]


# pkg/controller/job/pod_failure_policy_test.go, TestMatchPodFailurePolicy: every row.
# (name, policy, failed pod, want job failure message, want count failed, want action, want rule name)
MATCH_POD_FAILURE_POLICY = [
    ("unknown action for rule matching by exit codes - skip rule with unknown action",
     _policy(_exit("UnknownAction", "In", [1, 2]), _exit("FailJob", "In", [2, 3])), _failed_pod([("main-container", 2)]),
     "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1", True, "FailJob", None),
    ("unknown action for rule matching by pod conditions - skip rule with unknown action",
     _policy(_cond("UnkonwnAction", "DisruptionTarget", "True"), _cond("Ignore", "DisruptionTarget", "True")), _failed_pod(conditions=[("DisruptionTarget", "True")]),
     None, False, "Ignore", None),
    ("unknown operator - rule with unknown action is skipped for onExitCodes",
     _policy(_exit("Ignore", "UnknownOperator", [1, 2]), _exit("FailJob", "In", [2, 3])), _failed_pod([("main-container", 2)]),
     "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1", True, "FailJob", None),
    ("no policy rules", None, _failed_pod([("", 2)]), None, True, None, None),
    ("ignore rule matched for exit codes", _policy(_exit("Ignore", "In", [1, 2, 3])), _failed_pod([("", 2)]), None, False, "Ignore", None),
    ("ignore rule matched on negative exit codes - needed for Windows support",
     _policy(_exit("Ignore", "In", [-1073741676, -1073741510])), _failed_pod([("", -1073741510)]), None, False, "Ignore", None),
    ("FailJob rule matched for exit codes", _policy(_exit("FailJob", "In", [1, 2, 3])), _failed_pod([("main-container", 2)]),
     "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 0", True, "FailJob", None),
    ("successful containers are skipped by the rules", _policy(_exit("FailJob", "NotIn", [111])),
     _failed_pod([("main-container", 111), ("suppport-container", 0)], init=[("init-container", 0)]), None, True, None, None),
    ("FailIndex rule matched for exit codes", _policy(_exit("FailIndex", "In", [1, 2, 3])), _failed_pod([("", 2)]), None, True, "FailIndex", None),
    ("pod failure policy with NotIn operator and value 0", _policy(_exit("FailJob", "NotIn", [0])),
     _failed_pod([("main-container", 1), ("suppport-container", 0)]),
     "Container main-container for pod default/mypod failed with exit code 1 matching FailJob rule at index 0", True, "FailJob", None),
    ("second jobfail rule matched for exit codes", _policy(_exit("Count", "In", [1, 2, 3]), _exit("FailJob", "In", [4, 5, 6])),
     _failed_pod([("main-container", 6)]),
     "Container main-container for pod default/mypod failed with exit code 6 matching FailJob rule at index 1", True, "FailJob", None),
    ("count rule matched for exit codes", _policy(_exit("Count", "In", [1, 2, 3])), _failed_pod([("foo", None), ("bar", 2)]), None, True, "Count", None),
    ("FailIndex rule matched for pod conditions", _policy(_cond("FailIndex", "DisruptionTarget", "True")), _failed_pod(conditions=[("DisruptionTarget", "True")]),
     None, True, "FailIndex", None),
    ("ignore rule matched for pod conditions", _policy(_cond("Ignore", "DisruptionTarget", "True")), _failed_pod(conditions=[("DisruptionTarget", "True")]),
     None, False, "Ignore", None),
    ("ignore rule matches by the status=False", _policy(_cond("Ignore", "DisruptionTarget", "False")), _failed_pod(conditions=[("DisruptionTarget", "False")]),
     None, False, "Ignore", None),
    ("ignore rule matches by the status=Unknown", _policy(_cond("Ignore", "DisruptionTarget", "Unknown")), _failed_pod(conditions=[("DisruptionTarget", "Unknown")]),
     None, False, "Ignore", None),
    ("ignore rule does not match when status for pattern is False, but actual True", _policy(_cond("Ignore", "DisruptionTarget", "False")),
     _failed_pod(conditions=[("DisruptionTarget", "True")]), None, True, None, None),
    ("ignore rule does not match when status for pattern is True, but actual False", _policy(_cond("Ignore", "DisruptionTarget", "True")),
     _failed_pod(conditions=[("DisruptionTarget", "False")]), None, True, None, None),
    ("default - do not match condition with status=False", _policy(_cond("Ignore", "DisruptionTarget", "True")),
     _failed_pod(conditions=[("DisruptionTarget", "False")]), None, True, None, None),
    ("job fail rule matched for pod conditions", _policy(_cond("FailJob", "DisruptionTarget", "True")), _failed_pod(conditions=[("DisruptionTarget", "True")]),
     "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0", True, "FailJob", None),
    ("count rule matched for pod conditions", _policy(_cond("Count", "DisruptionTarget", "True")), _failed_pod(conditions=[("DisruptionTarget", "True")]),
     None, True, "Count", None),
    ("no rule matched",
     _policy(_exit("Count", "NotIn", [8]), _exit("Ignore", "In", [1, 2, 3]), _exit("FailJob", "NotIn", [5, 6, 7]),
             _cond("Count", "ResourceLimitExceeded", "True"), _cond("Ignore", "DisruptionTarget", "True")),
     _failed_pod([("", 32)]), None, True, "Count", None),
    ("expected matching rule returned",
     _policy(_cond("FailJob", "MaxFailedIndexesExceeded", "True", name="0"), _cond("Ignore", "DisruptionTarget", "True", name="HostMaintenanceRule")),
     _failed_pod(conditions=[("DisruptionTarget", "True")]), None, False, "Ignore", "HostMaintenanceRule"),
]


@pytest.mark.parametrize(("name", "policy", "pod", "message", "count", "action", "rule_name"), MATCH_POD_FAILURE_POLICY, ids=[row[0] for row in MATCH_POD_FAILURE_POLICY])
def test_match_pod_failure_policy(name: str, policy: Any, pod: Pod, message: str | None, count: bool, action: str | None, rule_name: str | None) -> None:
    got_message, got_count, rule = match_pod_failure_policy(policy, pod)
    assert got_message == message
    assert got_count == count
    assert (rule.action if rule is not None else None) == action
    assert (rule.name if rule is not None else None) == rule_name


def test_pod_backoff_doubles_from_ten_seconds_to_six_minutes() -> None:
    assert [pod_backoff_s(n) for n in (0, 1, 2, 3, 6, 7, 20)] == [0.0, 10.0, 20.0, 40.0, 320.0, 360.0, 360.0]


def test_completed_indexes_are_intervals() -> None:
    assert completed_indexes([]) == ""
    assert completed_indexes([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert completed_indexes([3, 1]) == "1,3"


# --------------------------------------------------------------------------- plan_job


def _job(**spec: Any) -> Job:
    return from_dict({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"namespace": "default", "name": "pi", "uid": "job-uid"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}, **spec},
    })  # type: ignore[return-value]


def _job_pod(name: str, phase: str = "Running", *, ready: bool = False, finalizer: bool = True, index: int | None = None) -> Pod:
    annotations = {"batch.kubernetes.io/job-completion-index": str(index)} if index is not None else {}
    return from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "default", "name": name, "uid": f"uid-{name}", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "finalizers": [JOB_TRACKING_FINALIZER] if finalizer else [], "annotations": annotations},
        "spec": {"nodeName": "node-1", "containers": [{"name": "pi", "image": "perl"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    })  # type: ignore[return-value]


def test_a_new_job_creates_parallelism_pods_capped_by_completions() -> None:
    assert len(plan_job(_job(parallelism=3, completions=5), [], now=10.0).create_indexes) == 3
    assert len(plan_job(_job(parallelism=3, completions=2), [], now=10.0).create_indexes) == 2
    plan = plan_job(_job(), [], now=10.0)  # parallelism 1, completions unset
    assert plan.create_indexes == [None] and plan.status.start_time == timestamp(10.0) and plan.status.active == 1


def test_finished_pods_are_uncounted_first_then_counted_once_released() -> None:
    job = _job(completions=2, parallelism=2)
    done = _job_pod("a", "Succeeded")
    plan = plan_job(job, [done, _job_pod("b")], now=10.0)
    assert plan.release == [done] and plan.status.uncounted_terminated_pods.succeeded == ["uid-a"] and plan.status.succeeded == 0
    job.status = plan.status
    released = _job_pod("a", "Succeeded", finalizer=False)
    plan = plan_job(job, [released, _job_pod("b")], now=11.0)
    assert plan.status.succeeded == 1 and not plan.status.uncounted_terminated_pods.succeeded
    assert plan.create_indexes == []  # one active, one to go


def test_completions_reached_completes_the_job() -> None:
    job = _job(completions=1)
    job.status.succeeded = 1
    plan = plan_job(job, [], now=20.0)
    assert [(c.type, c.status) for c in plan.status.conditions] == [("Complete", "True")]
    assert plan.status.completion_time == timestamp(20.0)


def test_backoff_limit_exceeded_fails_the_job_and_deletes_active_pods() -> None:
    job = _job(backoffLimit=1, parallelism=2, completions=4)
    job.status.failed = 2
    running = _job_pod("r")
    plan = plan_job(job, [running], now=30.0)
    failed = [c for c in plan.status.conditions if c.type == "Failed"]
    assert failed and failed[0].reason == "BackoffLimitExceeded" and failed[0].message == "Job has reached the specified backoff limit"
    assert plan.delete == [running]


def test_active_deadline_fails_the_job_or_requeues_for_it() -> None:
    job = _job(activeDeadlineSeconds=60)
    job.status.start_time = timestamp(0.0)
    waiting = plan_job(job, [_job_pod("r")], now=45.0)
    assert waiting.requeue_after_s == pytest.approx(15.0) and not waiting.status.conditions
    plan = plan_job(job, [_job_pod("r")], now=60.0)
    assert [(c.reason, c.message) for c in plan.status.conditions] == [("DeadlineExceeded", "Job was active longer than specified deadline")]


def test_a_fail_job_rule_fails_the_job_at_once() -> None:
    job = _job(podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]})
    pod = _job_pod("x", "Failed")
    pod.status.container_statuses = _failed_pod([("pi", 42)]).status.container_statuses
    plan = plan_job(job, [pod], now=5.0)
    assert [(c.type, c.reason) for c in plan.status.conditions] == [("Failed", "PodFailurePolicy")]
    assert plan.status.conditions[0].message == "Container pi for pod default/x failed with exit code 42 matching FailJob rule at index 0"


def test_an_ignored_failure_does_not_count_towards_the_backoff_limit() -> None:
    job = _job(backoffLimit=0, podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    pod = _job_pod("x", "Failed")
    pod.status.conditions = _failed_pod(conditions=[("DisruptionTarget", "True")]).status.conditions
    plan = plan_job(job, [pod], now=5.0)
    assert not plan.status.conditions and plan.release == [pod] and not plan.status.uncounted_terminated_pods.failed


def test_creation_backs_off_after_failures() -> None:
    plan = plan_job(_job(), [], now=105.0, last_failure=(2, 100.0))  # 20 s after the second failure
    assert plan.create_indexes == [] and plan.requeue_after_s == pytest.approx(15.0)


def test_indexed_jobs_create_the_missing_indexes() -> None:
    job = _job(completions=4, parallelism=3, completionMode="Indexed")
    job.status.completed_indexes = "0"
    plan = plan_job(job, [_job_pod("p1", index=1)], now=1.0)
    assert plan.create_indexes == [2, 3]

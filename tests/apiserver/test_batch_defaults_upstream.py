"""Kubernetes' batch/v1 defaulting tests, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/batch/v1/defaults_test.go`` (the v1.30 revision
with the ``JobPodReplacementPolicy`` gate and ``ManualSelector`` defaulted):
TestSetDefaultJob (15 rows) and TestSetDefaultCronJob (2 rows), against
:mod:`chaoskube.apiserver.admission`'s ``SetDefaults_Job`` / ``SetDefaults_CronJob`` (the
defaulting step of the API server). Each row's gate value is passed as upstream sets it.

17 rows: 17 pass. Fixed here: ``spec.manualSelector`` was not defaulted to false (every
TestSetDefaultJob row), and the pod replacement policy ignored the gate (3 rows run with it
off expect none).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.apiserver import admission

LABELS = {"default": "default"}
TEMPLATE = {"metadata": {"labels": LABELS}}
DISRUPTION = {"type": "DisruptionTarget", "status": "True"}


def job(spec: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "j", "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": TEMPLATE, **spec}}


def defaults(**spec: Any) -> dict[str, Any]:
    return {"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False, "manualSelector": False, **spec}


# (name, original, expected spec fields, expect labels copied from the template, gate JobPodReplacementPolicy)
DEFAULT_JOB = [
    ("Pod failure policy with some field values unspecified -> set default values",
     job({"podFailurePolicy": {"rules": [
         {"action": "FailJob", "onPodConditions": [DISRUPTION, {"type": "MemoryLimitExceeded", "status": "False"}, {"type": "DiskLimitExceeded"}]},
         {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}},
         {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
     defaults(podFailurePolicy={"rules": [
         {"action": "FailJob", "onPodConditions": [DISRUPTION, {"type": "MemoryLimitExceeded", "status": "False"}, {"type": "DiskLimitExceeded", "status": "True"}]},
         {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}},
         {"action": "FailJob", "onPodConditions": [DISRUPTION]}]}, podReplacementPolicy=None), True, False),
    ("Pod failure policy and defaulting for pod replacement policy",
     job({"podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}}),
     defaults(podReplacementPolicy="Failed", podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}), True, True),
    ("All unspecified and podReplacementPolicyEnabled -> sets all to default values", job({}), defaults(podReplacementPolicy="TerminatingOrFailed"), True, True),
    ("All unspecified -> sets all to default values", job({}), defaults(podReplacementPolicy=None), True, False),
    ("All unspecified, suspend job enabled -> sets all to default values", job({}), defaults(podReplacementPolicy=None), True, False),
    ("suspend set, everything else is defaulted", job({"suspend": True}), defaults(suspend=True, podReplacementPolicy=None), True, False),
    ("All unspecified -> all pointers are defaulted and no default labels", job({}, {"mylabel": "myvalue"}), defaults(podReplacementPolicy=None), False, False),
    ("WQ: Parallelism explicitly 0 and completions unset -> BackoffLimit is defaulted", job({"parallelism": 0}), defaults(completions=None, parallelism=0, podReplacementPolicy=None), True, False),
    ("WQ: Parallelism explicitly 2 and completions unset -> BackoffLimit is defaulted", job({"parallelism": 2}), defaults(completions=None, parallelism=2, podReplacementPolicy=None), True, False),
    ("Completions explicitly 2 and others unset -> parallelism and BackoffLimit are defaulted", job({"completions": 2}), defaults(completions=2, podReplacementPolicy=None), True, False),
    ("BackoffLimit explicitly 5 and others unset -> parallelism and completions are defaulted", job({"backoffLimit": 5}), defaults(backoffLimit=5, podReplacementPolicy=None), True, False),
    ("All set -> no change",
     job({"completions": 8, "parallelism": 9, "backoffLimit": 10, "completionMode": "NonIndexed", "suspend": False, "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}),
     defaults(completions=8, parallelism=9, backoffLimit=10, podReplacementPolicy="TerminatingOrFailed"), True, False),
    ("All set, flipped -> no change",
     job({"completions": 11, "parallelism": 10, "backoffLimit": 9, "completionMode": "Indexed", "suspend": True, "podReplacementPolicy": "Failed", "manualSelector": True}),
     defaults(completions=11, parallelism=10, backoffLimit=9, completionMode="Indexed", suspend=True, podReplacementPolicy="Failed", manualSelector=True), True, False),
    ("BackoffLimitPerIndex specified, but no BackoffLimit -> default BackoffLimit to max int32",
     job({"completions": 11, "parallelism": 10, "backoffLimitPerIndex": 1, "completionMode": "Indexed", "suspend": True, "manualSelector": False}),
     defaults(completions=11, parallelism=10, backoffLimit=math.floor(2**31 - 1), completionMode="Indexed", suspend=True, podReplacementPolicy=None), True, False),
    ("BackoffLimitPerIndex and BackoffLimit specified -> no change",
     job({"completions": 11, "parallelism": 10, "backoffLimit": 3, "backoffLimitPerIndex": 1, "completionMode": "Indexed", "suspend": True, "manualSelector": True}),
     defaults(completions=11, parallelism=10, backoffLimit=3, completionMode="Indexed", suspend=True, manualSelector=True, podReplacementPolicy=None), True, False),
]

_FIELDS = {"completions": "completions", "parallelism": "parallelism", "backoffLimit": "backoff_limit", "completionMode": "completion_mode", "suspend": "suspend",
           "manualSelector": "manual_selector", "podReplacementPolicy": "pod_replacement_policy"}


@pytest.mark.parametrize(("name", "original", "expected", "expect_labels", "gate"), [pytest.param(*row, id=row[0]) for row in DEFAULT_JOB])
def test_set_default_job(name: str, original: dict[str, Any], expected: dict[str, Any], expect_labels: bool, gate: bool) -> None:
    obj = from_dict(copy.deepcopy(original))
    admission._default_job(obj, pod_replacement_policy_gate=gate)
    got = {field: getattr(obj.spec, attribute) for field, attribute in _FIELDS.items()}
    assert got == {field: expected.get(field) for field in _FIELDS}
    if "podFailurePolicy" in expected:
        assert obj.spec.pod_failure_policy == from_dict(job({"podFailurePolicy": expected["podFailurePolicy"]})).spec.pod_failure_policy
    assert (obj.metadata.labels == obj.spec.template.metadata.labels) is expect_labels


DEFAULT_CRON_JOB = [
    ("empty batchv1.CronJob should default batchv1.ConcurrencyPolicy and Suspend", {}, ("Allow", False, 3, 1)),
    ("set fields should not be defaulted", {"concurrencyPolicy": "Forbid", "suspend": True, "successfulJobsHistoryLimit": 5, "failedJobsHistoryLimit": 5}, ("Forbid", True, 5, 5)),
]


@pytest.mark.parametrize(("name", "spec", "expected"), [pytest.param(*row, id=row[0]) for row in DEFAULT_CRON_JOB])
def test_set_default_cron_job(name: str, spec: dict[str, Any], expected: tuple[str, bool, int, int]) -> None:
    obj = from_dict({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "default"}, "spec": spec})
    admission._default_cron_job(obj)
    assert (obj.spec.concurrency_policy, obj.spec.suspend, obj.spec.successful_jobs_history_limit, obj.spec.failed_jobs_history_limit) == expected

"""Kubernetes' batch validation tests, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/batch/validation/validation_test.go`` at the v1.30
revision (the one with Job ``successPolicy``, ``managedBy`` and ``RequirePrefixedLabels``,
``timeZoneCorrect = "Europe/Rome"``). Every table of the file, every row:

- TestValidateJob: 16 success rows, 58 error rows (the first error's field and text);
- TestValidateJobUpdate: 42 rows (the exact error list, type and field);
- TestValidateJobUpdateStatus: 4 rows;
- TestValidateCronJob: 4 success rows (create and a no-op update), 21 error rows (create,
  and update from the same object without timeZone);
- TestValidateCronJobScheduleTZ: 4 rows; TestValidateCronJobSpec: 8 rows;
- TestTimeZones: the 595 zone names of go1.19 (one test over the list: each must load);
- TestValidateIndexesString: 13 rows; TestValidateFailedIndexesNotOverlapCompleted: 9 rows.

Objects are written in their batch/v1 JSON form and decoded with :func:`from_dict`; the
functions called are :mod:`chaoskube.apiserver.validation`'s ports of ``ValidateJob``,
``ValidateJobUpdate``, ``ValidateJobUpdateStatus``, ``ValidateCronJobCreate``,
``ValidateCronJobUpdate``, ``validateCronJobSpec``, ``validateTimeZone``,
``validateIndexesFormat`` and ``validateFailedIndexesNotOverlapCompleted``, with upstream's
options (``JobValidationOptions``; the status options all off, as the test passes them).

180 test items (179 rows and the time-zone list): all pass, none left as expected failures.
Before this module, 95 failed against the previous validation (41 of TestValidateJob's error
rows: pod failure policy values printed wrongly, success policy, managedBy, backoff limit per
index, generated-selector labels and uid; 21 update rows: no podFailurePolicy / successPolicy
/ backoffLimitPerIndex / managedBy immutability, no elastic Indexed Jobs or mutable scheduling
directives; the 4 status rows; 7 CronJob rows: timeZone "" and "Local", the job template's
selector and manualSelector, Always as restartPolicy, TZ= kept on update; the 22 index-string
rows, not modelled). All were fixed by porting ``validation.go`` function by function.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.apiserver import validation

NS = "default"
UID = "1a2b3c"
VALID_META = {"name": "myjob", "namespace": NS, "uid": UID}
MANUAL_SELECTOR = {"matchLabels": {"a": "b"}}
GENERATED_LABELS = {"batch.kubernetes.io/controller-uid": UID, "controller-uid": UID, "batch.kubernetes.io/job-name": "myjob", "job-name": "myjob"}
GENERATED_SELECTOR = {"matchLabels": GENERATED_LABELS}


def container(name: str) -> dict[str, Any]:
    """podtest.MakeContainer: image, pull policy and termination message policy set."""
    return {"name": name, "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}


def template(labels: dict[str, str] | None, restart: str = "OnFailure", *, init: bool = True, **spec: Any) -> dict[str, Any]:
    """getValidPodTemplateSpecFor{Manual,Generated}: podtest.MakePod's spec (DNSPolicy
    ClusterFirst) with containers ``abc`` (and init container ``def``)."""
    pod_spec: dict[str, Any] = {"restartPolicy": restart, "dnsPolicy": "ClusterFirst", "containers": [container("abc")], **spec}
    if init:
        pod_spec["initContainers"] = [container("def")]
    result: dict[str, Any] = {"spec": pod_spec}
    if labels is not None:
        result["metadata"] = {"labels": dict(labels)}
    return result


MANUAL_TEMPLATE = template({"a": "b"}, init=False)
GENERATED_TEMPLATE = template(GENERATED_LABELS)
NEVER_TEMPLATE = template(GENERATED_LABELS, "Never")
HOSTNET_TEMPLATE = copy.deepcopy(GENERATED_TEMPLATE)
HOSTNET_TEMPLATE["spec"]["hostNetwork"] = True
HOSTNET_TEMPLATE["spec"]["containers"][0]["ports"] = [{"containerPort": 12345, "protocol": "TCP"}]


def job(spec: dict[str, Any], meta: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job", "metadata": dict(VALID_META if meta is None else meta), "spec": spec}
    if status is not None:
        body["status"] = status
    return body


def generated(**spec: Any) -> dict[str, Any]:
    return {"selector": GENERATED_SELECTOR, "template": GENERATED_TEMPLATE, **spec}


def never(**spec: Any) -> dict[str, Any]:
    return {"selector": GENERATED_SELECTOR, "template": NEVER_TEMPLATE, **spec}


PREFIXED = {"require_prefixed_labels": True}
DISRUPTION = {"type": "DisruptionTarget", "status": "True"}


def exit_codes(operator: str, values: list[int], container_name: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"operator": operator, "values": values}
    if container_name is not None:
        body["containerName"] = container_name
    return body


# --- TestValidateJob ---------------------------------------------------------------------

# (name, options, job)
JOB_SUCCESS = [
    ("valid success policy", PREFIXED, job(never(completionMode="Indexed", completions=10, successPolicy={"rules": [{"succeededCount": 1, "succeededIndexes": "0,2,4"}, {"succeededIndexes": "1,3,5-9"}]}))),
    ("valid pod failure policy", PREFIXED, job(never(podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [DISRUPTION]},
        {"action": "FailJob", "onPodConditions": [{"type": "CustomConditionType", "status": "False"}]},
        {"action": "Count", "onExitCodes": exit_codes("In", [1, 2, 3], "abc")},
        {"action": "Ignore", "onExitCodes": exit_codes("In", [4], "def")},
        {"action": "FailJob", "onExitCodes": exit_codes("NotIn", [5, 6, 7])},
    ]}))),
    ("valid pod failure policy with FailIndex", {}, job(never(completionMode="Indexed", completions=2, backoffLimitPerIndex=1, manualSelector=True,
                                                              podFailurePolicy={"rules": [{"action": "FailIndex", "onExitCodes": exit_codes("In", [10])}]}))),
    ("valid manual selector", PREFIXED, job({"selector": MANUAL_SELECTOR, "manualSelector": True, "template": MANUAL_TEMPLATE}, {**VALID_META, "annotations": {"foo": "bar"}})),
    ("valid generated selector", PREFIXED, job(generated())),
    ("valid pod replacement", PREFIXED, job(generated(podReplacementPolicy="TerminatingOrFailed"))),
    ("valid pod replacement with failed", PREFIXED, job(generated(podReplacementPolicy="Failed"))),
    ("valid hostnet", PREFIXED, job({"selector": GENERATED_SELECTOR, "template": HOSTNET_TEMPLATE})),
    ("valid NonIndexed completion mode", PREFIXED, job(generated(completionMode="NonIndexed"))),
    ("valid Indexed completion mode", PREFIXED, job(generated(completionMode="Indexed", completions=2, parallelism=100000))),
    ("valid parallelism and maxFailedIndexes for high completions when backoffLimitPerIndex is used", PREFIXED,
     job(generated(completions=100_000, parallelism=100_000, maxFailedIndexes=100_000, backoffLimitPerIndex=1, completionMode="Indexed"))),
    ("valid parallelism and maxFailedIndexes for unlimited completions when backoffLimitPerIndex is used", PREFIXED,
     job(generated(completions=1_000_000_000, parallelism=10_000, maxFailedIndexes=10_000, backoffLimitPerIndex=1, completionMode="Indexed"))),
    ("valid job tracking annotation", PREFIXED, job(generated())),
    ("valid batch labels", PREFIXED, job(generated())),
    ("do not allow new batch labels", {"require_prefixed_labels": False},
     job({"selector": {"matchLabels": {"controller-uid": UID}}, "template": template({"controller-uid": UID, "job-name": "myjob"})})),
    ("valid managedBy field", PREFIXED, job(generated(managedBy="example.com/foo"))),
]

NEVER_ONFAILURE = template(GENERATED_LABELS, "OnFailure", init=False)


def rules(*items: dict[str, Any]) -> dict[str, Any]:
    return {"podFailurePolicy": {"rules": list(items)}}


# (key "field: text" as upstream writes it, options, job)
JOB_ERRORS = [
    ("spec.managedBy: Too long: may not be longer than 63", PREFIXED, job(generated(managedBy="example.com/" + "x" * 60))),
    ('spec.managedBy: Invalid value: "invalid custom controller name": must be a domain-prefixed path (such as "acme.io/foo")', PREFIXED, job(generated(managedBy="invalid custom controller name"))),
    ("spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{}}: requires indexed completion mode", PREFIXED, job(never(successPolicy={"rules": []}))),
    ("spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={}))),
    ("spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{}]}))),
    ('spec.successPolicy.rules[0].succeededIndexes: Invalid value: "invalid-format": error parsing succeededIndexes: cannot convert string to integer for index: "invalid"', PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededIndexes": "invalid-format"}]}))),
    ("spec.successPolicy.rules[0].succeededIndexes: Too long: must have at most 65536 bytes", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededIndexes": "1" * 65537}]}))),
    ("spec.successPolicy.rules[0].succeededCount: must be greater than or equal to 0", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededCount": -1}]}))),
    ("spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededCount": 6}]}))),
    ("spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededCount": 4, "succeededIndexes": "0-2"}]}))),
    ("spec.successPolicy.rules: Too many: 21: must have at most 20 items", PREFIXED,
     job(never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededCount": 5}] * 21}))),
    ("spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required", PREFIXED, job(never(**rules({"action": "FailJob"})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 11", PREFIXED, job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", [11, 11])})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items", PREFIXED,
     job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", list(range(256)))})))),
    ("spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items", PREFIXED,
     job(never(**rules(*({"action": "FailJob", "onExitCodes": exit_codes("In", [i + 1])} for i in range(21)))))),
    ("spec.podFailurePolicy.rules[0].onPodConditions: Too many: 21: must have at most 20 items", PREFIXED,
     job(never(**rules({"action": "FailJob", "onPodConditions": [{"type": f"CustomType_{i}", "status": "True"} for i in range(21)]})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 13", PREFIXED, job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", [12, 13, 13, 13])})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{19, 11}: must be ordered", PREFIXED, job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", [19, 11])})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{}: at least one value is required", PREFIXED, job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", [])})))),
    ('spec.podFailurePolicy.rules[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]', PREFIXED,
     job(never(**rules({"action": "", "onExitCodes": exit_codes("In", [1, 2, 3])})))),
    ('spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]', PREFIXED,
     job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("", [1, 2, 3])})))),
    ("spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported", PREFIXED,
     job(never(**rules({"action": "FailJob", "onExitCodes": exit_codes("In", [1, 2, 3], "abc"), "onPodConditions": [DISRUPTION]})))),
    ("spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator", PREFIXED,
     job(never(**rules({"action": "Ignore", "onExitCodes": exit_codes("In", [1, 0, 2])})))),
    ('spec.podFailurePolicy.rules[1].onExitCodes.containerName: Invalid value: "xyz": must be one of the container or initContainer names in the pod template', PREFIXED,
     job(never(**rules({"action": "Ignore", "onExitCodes": exit_codes("In", [1, 2, 3], "abc")}, {"action": "FailJob", "onExitCodes": exit_codes("In", [5, 6, 7], "xyz")})))),
    ('spec.podFailurePolicy.rules[0].action: Unsupported value: "UnknownAction": supported values: "Count", "FailIndex", "FailJob", "Ignore"', PREFIXED,
     job(never(**rules({"action": "UnknownAction", "onExitCodes": exit_codes("In", [1, 2, 3], "abc")})))),
    ('spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: "UnknownOperator": supported values: "In", "NotIn"', PREFIXED,
     job(never(**rules({"action": "Ignore", "onExitCodes": exit_codes("UnknownOperator", [1, 2, 3])})))),
    ('spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]', PREFIXED,
     job(never(**rules({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]})))),
    ('spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "UnknownStatus": supported values: "False", "True", "Unknown"', PREFIXED,
     job(never(**rules({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "UnknownStatus"}]})))),
    ('spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: "": name part must be non-empty', PREFIXED,
     job(never(**rules({"action": "Ignore", "onPodConditions": [{"type": "", "status": "True"}]})))),
    ("spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: \"Invalid Condition Type\": name part must consist of alphanumeric characters, '-', '_' or '.', "
     "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')", PREFIXED,
     job(never(**rules({"action": "Ignore", "onPodConditions": [{"type": "Invalid Condition Type", "status": "True"}]})))),
    ('spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"', PREFIXED,
     job(never(podReplacementPolicy="TerminatingOrFailed", **rules({"action": "Ignore", "onPodConditions": [DISRUPTION]})))),
    ('spec.podReplacementPolicy: Unsupported value: "": supported values: "Failed", "TerminatingOrFailed"', PREFIXED, job(never(podReplacementPolicy=""))),
    ('spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified', PREFIXED,
     job({"selector": GENERATED_SELECTOR, "template": NEVER_ONFAILURE, "podFailurePolicy": {"rules": []}})),
    ("spec.parallelism:must be greater than or equal to 0", PREFIXED, job(generated(parallelism=-1))),
    ("spec.backoffLimit:must be greater than or equal to 0", PREFIXED, job(generated(backoffLimit=-1))),
    ("spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode", PREFIXED, job(generated(backoffLimitPerIndex=1))),
    ("spec.backoffLimitPerIndex:must be greater than or equal to 0", PREFIXED, job(generated(backoffLimitPerIndex=-1, completionMode="Indexed"))),
    ("spec.maxFailedIndexes: Invalid value: 11: must be less than or equal to completions", PREFIXED,
     job(generated(completions=10, maxFailedIndexes=11, backoffLimitPerIndex=1, completionMode="Indexed"))),
    ("spec.maxFailedIndexes: Required value: must be specified when completions is above 100000", PREFIXED,
     job(generated(completions=100_001, backoffLimitPerIndex=1, completionMode="Indexed"))),
    ("spec.parallelism: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index", PREFIXED,
     job(generated(completions=100_001, parallelism=50_000, backoffLimitPerIndex=1, maxFailedIndexes=1, completionMode="Indexed"))),
    ("spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000", PREFIXED,
     job(generated(completions=100_001, backoffLimitPerIndex=1, maxFailedIndexes=100_001, completionMode="Indexed"))),
    ("spec.maxFailedIndexes: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index", PREFIXED,
     job(generated(completions=100_001, backoffLimitPerIndex=1, maxFailedIndexes=50_000, completionMode="Indexed"))),
    ("spec.maxFailedIndexes:must be greater than or equal to 0", PREFIXED, job(generated(backoffLimitPerIndex=1, maxFailedIndexes=-1, completionMode="Indexed"))),
    ("spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified", PREFIXED, job(generated(maxFailedIndexes=1, completionMode="Indexed"))),
    ("spec.completions:must be greater than or equal to 0", PREFIXED, job(generated(completions=-1))),
    ("spec.activeDeadlineSeconds:must be greater than or equal to 0", PREFIXED, job(generated(activeDeadlineSeconds=-1))),
    ("spec.selector:Required value", PREFIXED, job({"template": GENERATED_TEMPLATE})),
    ('spec.template.metadata.labels: Invalid value: map[string]string{"y":"z"}: `selector` does not match template `labels`', PREFIXED,
     job({"selector": MANUAL_SELECTOR, "manualSelector": True, "template": template({"y": "z"}, init=False)})),
    ('spec.template.metadata.labels: Invalid value: map[string]string{"controller-uid":"4d5e6f"}: `selector` does not match template `labels`', PREFIXED,
     job({"selector": MANUAL_SELECTOR, "manualSelector": True, "template": template({"controller-uid": "4d5e6f"}, init=False)})),
    ("spec.template.spec.restartPolicy: Required value", PREFIXED, job({"selector": MANUAL_SELECTOR, "manualSelector": True, "template": template({"a": "b"}, "Always", init=False)})),
    ("spec.template.spec.restartPolicy: Unsupported value", PREFIXED, job({"selector": MANUAL_SELECTOR, "manualSelector": True, "template": template({"a": "b"}, "Invalid", init=False)})),
    ("spec.ttlSecondsAfterFinished: must be greater than or equal to 0", PREFIXED, job(generated(ttlSecondsAfterFinished=-1))),
    ("spec.completions: Required value: when completion mode is Indexed", PREFIXED, job(generated(completionMode="Indexed"))),
    ("spec.parallelism: must be less than or equal to 100000 when completion mode is Indexed", PREFIXED, job(generated(completionMode="Indexed", completions=2, parallelism=100001))),
    ("spec.template.metadata.labels[controller-uid]: Required value: must be '1a2b3c'", {},
     job({"selector": {"matchLabels": {"controller-uid": UID}}, "template": template({"job-name": "myjob"})})),
    ("metadata.uid: Required value", {}, job({"selector": {"matchLabels": {"controller-uid": "test"}}, "template": template({"job-name": "myjob"})}, {"name": "myjob", "namespace": NS})),
    ('spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated', PREFIXED,
     job({"selector": MANUAL_SELECTOR, "template": GENERATED_TEMPLATE})),
    ("spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Required value: must be '1a2b3c'", PREFIXED,
     job({"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}, "template": template({"batch.kubernetes.io/job-name": "myjob", "controller-uid": UID, "job-name": "myjob"})})),
]


def _decode(body: dict[str, Any]) -> Any:
    return from_dict(copy.deepcopy(body))


def _field(error: str) -> str:
    return error.split(": ", 1)[0]


def _type(error: str) -> str:
    """The ``field.ErrorType`` of a cause: the words after the field."""
    return error.split(": ", 2)[1]


def _mark(name: str) -> list[pytest.MarkDecorator]:
    reason = EXPECTED_FAILURES.get(name)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _params(rows: list[tuple], prefix: str) -> list[Any]:
    return [pytest.param(*row, id=row[0], marks=_mark(f"{prefix}/{row[0]}")) for row in rows]


# Rows we do not pass, with the reason (also in docs/api-server.md, "Modelled limits").
EXPECTED_FAILURES: dict[str, str] = {}


@pytest.mark.parametrize(("name", "options", "body"), _params(JOB_SUCCESS, "TestValidateJob"))
def test_validate_job_success(name: str, options: dict[str, Any], body: dict[str, Any]) -> None:
    assert validation.validate_job(_decode(body), **options) == []


@pytest.mark.parametrize(("key", "options", "body"), _params(JOB_ERRORS, "TestValidateJob"))
def test_validate_job_errors(key: str, options: dict[str, Any], body: dict[str, Any]) -> None:
    errors = validation.validate_job(_decode(body), **options)
    assert errors, "expected failure"
    field, text = key.split(":", 1)
    assert _field(errors[0]) == field, errors
    assert text in errors[0], errors


# --- TestValidateJobUpdate ---------------------------------------------------------------

NODE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "value2"]}]}]}}}
AFFINITY_TEMPLATE = copy.deepcopy(GENERATED_TEMPLATE)
AFFINITY_TEMPLATE["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "value"]}]}]}}}
NEW_SELECTOR = {"matchLabels": {**GENERATED_LABELS, "foo": "bar"}}
NEW_SELECTOR_TEMPLATE = template(NEW_SELECTOR["matchLabels"])
TOLERATIONS = [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]
UPDATE_META = {"name": "abc", "namespace": NS}
MUTABLE_SCHEDULING = {"allow_mutable_scheduling_directives": True}
ELASTIC = {"allow_elastic_indexed_jobs": True}
PFP = {"rules": [{"action": "Ignore", "onPodConditions": [DISRUPTION]}]}


def _set(path: str, value: Any) -> Any:
    """An update: set the value at a dotted path of the JSON body (``None`` removes it)."""

    def apply(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = body
        for part in parents:
            target = target.setdefault(part, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = copy.deepcopy(value)

    return apply


def _all(*updates: Any) -> Any:
    def apply(body: dict[str, Any]) -> None:
        for update in updates:
            update(body)

    return apply


def _append(path: str, item: Any) -> Any:
    def apply(body: dict[str, Any]) -> None:
        target = body
        for part in path.split("."):
            target = target[part]
        target.append(copy.deepcopy(item))

    return apply


# (name, old spec, update, options, expected (type, field) or None)
JOB_UPDATE = [
    ("mutable fields", generated(parallelism=5, activeDeadlineSeconds=2, ttlSecondsAfterFinished=1),
     _all(_set("spec.parallelism", 2), _set("spec.activeDeadlineSeconds", 3), _set("spec.ttlSecondsAfterFinished", 2), _set("spec.manualSelector", True)), {}, None),
    ("invalid attempt to set managedBy field", generated(), _set("spec.managedBy", "example.com/custom-controller"), {}, ("Invalid value", "spec.managedBy")),
    ("invalid update of the managedBy field", generated(managedBy="example.com/custom-controller1"), _set("spec.managedBy", "example.com/custom-controller2"), {}, ("Invalid value", "spec.managedBy")),
    ("immutable completions for non-indexed jobs", generated(), _set("spec.completions", 1), {}, ("Invalid value", "spec.completions")),
    ("immutable completions for indexed job when AllowElasticIndexedJobs is false", generated(), _set("spec.completions", 1), {}, ("Invalid value", "spec.completions")),
    ("immutable selector", {"selector": GENERATED_SELECTOR, "template": NEW_SELECTOR_TEMPLATE}, _set("spec.selector", NEW_SELECTOR), {}, ("Invalid value", "spec.selector")),
    ("add success policy", never(completionMode="Indexed", completions=5), _set("spec.successPolicy", {"rules": [{"succeededCount": 2}]}), {}, ("Invalid value", "spec.successPolicy")),
    ("update success policy", never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededIndexes": "1-3"}]}),
     _append("spec.successPolicy.rules", {"succeededCount": 3}), {}, ("Invalid value", "spec.successPolicy")),
    ("remove success policy", never(completionMode="Indexed", completions=5, successPolicy={"rules": [{"succeededIndexes": "1-3"}]}), _set("spec.successPolicy", None), {},
     ("Invalid value", "spec.successPolicy")),
    ("add pod failure policy", never(), _set("spec.podFailurePolicy", PFP), {}, ("Invalid value", "spec.podFailurePolicy")),
    ("update pod failure policy", never(podFailurePolicy=PFP), _append("spec.podFailurePolicy.rules", {"action": "Count", "onPodConditions": [DISRUPTION]}), {},
     ("Invalid value", "spec.podFailurePolicy")),
    ("remove pod failure policy", never(podFailurePolicy=PFP), _set("spec.podFailurePolicy", None), {}, ("Invalid value", "spec.podFailurePolicy")),
    ("set backoff limit per index", never(completions=3, completionMode="Indexed"), _set("spec.backoffLimitPerIndex", 1), {}, ("Invalid value", "spec.backoffLimitPerIndex")),
    ("unset backoff limit per index", never(completions=3, completionMode="Indexed", backoffLimitPerIndex=1), _set("spec.backoffLimitPerIndex", None), {}, ("Invalid value", "spec.backoffLimitPerIndex")),
    ("update backoff limit per index", never(completions=3, completionMode="Indexed", backoffLimitPerIndex=1), _set("spec.backoffLimitPerIndex", 2), {}, ("Invalid value", "spec.backoffLimitPerIndex")),
    ("set max failed indexes", never(completions=3, completionMode="Indexed", backoffLimitPerIndex=1), _set("spec.maxFailedIndexes", 1), {}, None),
    ("unset max failed indexes", never(completions=3, completionMode="Indexed", backoffLimitPerIndex=1, maxFailedIndexes=1), _set("spec.maxFailedIndexes", None), {}, None),
    ("update max failed indexes", never(completions=3, completionMode="Indexed", backoffLimitPerIndex=1, maxFailedIndexes=1), _set("spec.maxFailedIndexes", 2), {}, None),
    ("immutable pod template", generated(completions=3, completionMode="Indexed"), _set("spec.template.spec.dnsPolicy", "ClusterFirstWithHostNet"), {}, ("Invalid value", "spec.template")),
    ("immutable completion mode", generated(completionMode="Indexed", completions=2), _set("spec.completionMode", "NonIndexed"), {}, ("Invalid value", "spec.completionMode")),
    ("immutable completions for non-indexed job when AllowElasticIndexedJobs is true", generated(completionMode="NonIndexed", completions=2), _set("spec.completions", 4), ELASTIC,
     ("Invalid value", "spec.completions")),
    ("immutable node affinity", generated(), _set("spec.template.spec.affinity", NODE_AFFINITY), {}, ("Invalid value", "spec.template")),
    ("add node affinity", generated(), _set("spec.template.spec.affinity", NODE_AFFINITY), MUTABLE_SCHEDULING, None),
    ("update node affinity", {"selector": GENERATED_SELECTOR, "template": AFFINITY_TEMPLATE}, _set("spec.template.spec.affinity", NODE_AFFINITY), MUTABLE_SCHEDULING, None),
    ("remove node affinity", {"selector": GENERATED_SELECTOR, "template": AFFINITY_TEMPLATE}, _set("spec.template.spec.affinity.nodeAffinity", None), MUTABLE_SCHEDULING, None),
    ("remove affinity", {"selector": GENERATED_SELECTOR, "template": AFFINITY_TEMPLATE}, _set("spec.template.spec.affinity", None), MUTABLE_SCHEDULING, None),
    ("immutable tolerations", generated(), _set("spec.template.spec.tolerations", TOLERATIONS), {}, ("Invalid value", "spec.template")),
    ("mutable tolerations", generated(), _set("spec.template.spec.tolerations", TOLERATIONS), MUTABLE_SCHEDULING, None),
    ("immutable node selector", generated(), _set("spec.template.spec.nodeSelector", {"foo": "bar"}), {}, ("Invalid value", "spec.template")),
    ("mutable node selector", generated(), _set("spec.template.spec.nodeSelector", {"foo": "bar"}), MUTABLE_SCHEDULING, None),
    ("immutable annotations", generated(), _set("spec.template.metadata.annotations", {"foo": "baz"}), {}, ("Invalid value", "spec.template")),
    ("mutable annotations", generated(), _set("spec.template.metadata.annotations", {"foo": "baz"}), MUTABLE_SCHEDULING, None),
    ("immutable labels", generated(), _set("spec.template.metadata.labels", {**GENERATED_LABELS, "bar": "baz"}), {}, ("Invalid value", "spec.template")),
    ("mutable labels", generated(), _set("spec.template.metadata.labels", {**GENERATED_LABELS, "bar": "baz"}), MUTABLE_SCHEDULING, None),
    ("immutable schedulingGates", generated(), _set("spec.template.spec.schedulingGates", [{"name": "gate"}]), {}, ("Invalid value", "spec.template")),
    ("mutable schedulingGates", generated(), _set("spec.template.spec.schedulingGates", [{"name": "gate"}]), MUTABLE_SCHEDULING, None),
    ("update completions and parallelism to same value is valid", generated(completions=1, parallelism=1, completionMode="Indexed"),
     _all(_set("spec.completions", 2), _set("spec.parallelism", 2)), ELASTIC, None),
    ("previous parallelism != previous completions, new parallelism == new completions", generated(completions=1, parallelism=2, completionMode="Indexed"),
     _all(_set("spec.completions", 3), _set("spec.parallelism", 3)), ELASTIC, None),
    ("indexed job updating completions and parallelism to different values is invalid", generated(completions=1, parallelism=1, completionMode="Indexed"),
     _all(_set("spec.completions", 2), _set("spec.parallelism", 3)), ELASTIC, ("Invalid value", "spec.completions")),
    ("indexed job with completions set updated to nil does not panic", generated(completions=1, parallelism=1, completionMode="Indexed"),
     _all(_set("spec.completions", None), _set("spec.parallelism", 3)), ELASTIC, ("Required value", "spec.completions")),
    ("indexed job with completions unchanged, parallelism reduced to less than completions", generated(completions=2, parallelism=2, completionMode="Indexed"),
     _all(_set("spec.completions", 2), _set("spec.parallelism", 1)), ELASTIC, None),
    ("indexed job with completions unchanged, parallelism increased higher than completions", generated(completions=2, parallelism=2, completionMode="Indexed"),
     _all(_set("spec.completions", 2), _set("spec.parallelism", 3)), ELASTIC, None),
]


@pytest.mark.parametrize(("name", "old_spec", "update", "options", "expected"), _params(JOB_UPDATE, "TestValidateJobUpdate"))
def test_validate_job_update(name: str, old_spec: dict[str, Any], update: Any, options: dict[str, Any], expected: tuple[str, str] | None) -> None:
    old_body = job(old_spec, {**UPDATE_META, "resourceVersion": "1"})
    new_body = copy.deepcopy(old_body)
    update(new_body)
    errors = validation.validate_job_update(_decode(new_body), _decode(old_body), **options)
    got = [(_type(error), _field(error)) for error in errors]
    assert got == ([expected] if expected else []), errors


# --- TestValidateJobUpdateStatus ---------------------------------------------------------

STATUS_META = {"name": "abc", "namespace": NS}
JOB_UPDATE_STATUS = [
    ("valid", {"active": 1, "succeeded": 2, "failed": 3, "terminating": 4}, {"active": 2, "succeeded": 3, "failed": 4, "ready": 1, "terminating": 4}, []),
    ("nil ready and terminating", {"active": 1, "succeeded": 2, "failed": 3}, {"active": 2, "succeeded": 3, "failed": 4}, []),
    ("negative counts", {"active": 1, "succeeded": 2, "failed": 3, "terminating": 4}, {"active": -1, "succeeded": -2, "failed": -3, "ready": -1, "terminating": -2},
     [("Invalid value", "status.active"), ("Invalid value", "status.succeeded"), ("Invalid value", "status.failed"), ("Invalid value", "status.ready"), ("Invalid value", "status.terminating")]),
    ("empty and duplicated uncounted pods", {}, {"uncountedTerminatedPods": {"succeeded": ["a", "b", "c", "a", ""], "failed": ["c", "d", "e", "d", ""]}},
     [("Duplicate value", "status.uncountedTerminatedPods.succeeded[3]"), ("Invalid value", "status.uncountedTerminatedPods.succeeded[4]"),
      ("Duplicate value", "status.uncountedTerminatedPods.failed[0]"), ("Duplicate value", "status.uncountedTerminatedPods.failed[3]"),
      ("Invalid value", "status.uncountedTerminatedPods.failed[4]")]),
]


@pytest.mark.parametrize(("name", "old_status", "new_status", "expected"), _params(JOB_UPDATE_STATUS, "TestValidateJobUpdateStatus"))
def test_validate_job_update_status(name: str, old_status: dict[str, Any], new_status: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    old = _decode({"apiVersion": "batch/v1", "kind": "Job", "metadata": {**STATUS_META, "resourceVersion": "1"}, "spec": {}, "status": old_status})
    new = _decode({"apiVersion": "batch/v1", "kind": "Job", "metadata": {**STATUS_META, "resourceVersion": "1"}, "spec": {}, "status": new_status})
    errors = validation.validate_job_update_status(new, old)
    assert [(_type(error), _field(error)) for error in errors] == expected, errors


# --- TestValidateCronJob -----------------------------------------------------------------

CRON_META = {"name": "mycronjob", "namespace": NS, "uid": UID}
CRON_TEMPLATE = template({})
CRON_HOSTNET = HOSTNET_TEMPLATE


def cron(schedule: str = "* * * * ?", *, meta: dict[str, Any] | None = None, job_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body_spec = {"schedule": schedule, "concurrencyPolicy": "Allow", "jobTemplate": {"spec": job_spec if job_spec is not None else {"template": CRON_TEMPLATE}}, **spec}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": dict(meta or CRON_META), "spec": body_spec}


CRON_SUCCESS = [
    ("basic scheduled job", cron()),
    ("hostnet job", cron(job_spec={"template": CRON_HOSTNET})),
    ("non-standard scheduled", cron("@hourly")),
    ("correct timeZone value", cron("0 * * * *", timeZone="Europe/Rome")),
]


@pytest.mark.parametrize(("name", "body"), _params(CRON_SUCCESS, "TestValidateCronJob"))
def test_validate_cron_job_success(name: str, body: dict[str, Any]) -> None:
    assert validation.validate_cron_job_create(_decode(body)) == []
    same = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
    assert validation.validate_cron_job_update(_decode(same), _decode(same)) == []


CRON_ERRORS = [
    ("spec.schedule: Invalid value", cron("error")),
    ("spec.schedule: Required value", cron("")),
    ("spec.timeZone: timeZone must be nil or non-empty string", cron("0 * * * *", timeZone="")),
    ("spec.timeZone: timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones", cron("0 * * * *", timeZone="LOCAL")),
    ('spec.timeZone: Invalid value: " Continent/Zone": unknown time zone  Continent/Zone', cron("0 * * * *", timeZone=" Europe/Rome")),
    ('spec.timeZone: Invalid value: "Continent/InvalidZone": unknown time zone  Continent/InvalidZone', cron("0 * * * *", timeZone="Europe/InvalidRome")),
    ('spec.timeZone: Invalid value: " ": unknown time zone  ', cron("0 * * * *", timeZone=" ")),
    ('spec.timeZone: Invalid value: "Continent/Zone ": unknown time zone Continent/Zone ', cron("0 * * * *", timeZone="Europe/Rome ")),
    ("spec.startingDeadlineSeconds:must be greater than or equal to 0", cron(startingDeadlineSeconds=-1)),
    ("spec.successfulJobsHistoryLimit: must be greater than or equal to 0", cron(successfulJobsHistoryLimit=-1)),
    ("spec.failedJobsHistoryLimit: must be greater than or equal to 0", cron(failedJobsHistoryLimit=-1)),
    ("spec.concurrencyPolicy: Required value", {**cron(), "spec": {k: v for k, v in cron()["spec"].items() if k != "concurrencyPolicy"}}),
    ("spec.jobTemplate.spec.parallelism:must be greater than or equal to 0", cron(job_spec={"parallelism": -1, "template": CRON_TEMPLATE})),
    ("spec.jobTemplate.spec.completions:must be greater than or equal to 0", cron(job_spec={"completions": -1, "template": CRON_TEMPLATE})),
    ("spec.jobTemplate.spec.activeDeadlineSeconds:must be greater than or equal to 0", cron(job_spec={"activeDeadlineSeconds": -1, "template": CRON_TEMPLATE})),
    ('spec.jobTemplate.spec.selector: Invalid value: {"matchLabels":{"a":"b"}}: `selector` will be auto-generated', cron(job_spec={"selector": MANUAL_SELECTOR, "template": CRON_TEMPLATE})),
    ("metadata.name: must be no more than 52 characters", cron(meta={**CRON_META, "name": "10000000002000000000300000000040000000005000000000123"})),
    ("spec.jobTemplate.spec.manualSelector: Unsupported value", cron(job_spec={"manualSelector": True, "template": CRON_TEMPLATE})),
    ("spec.jobTemplate.spec.template.spec.restartPolicy: Required value", cron(job_spec={"template": template(None, "Always", init=False)})),
    ("spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value", cron(job_spec={"template": template(None, "Invalid", init=False)})),
    ("spec.jobTemplate.spec.ttlSecondsAfterFinished:must be greater than or equal to 0", cron(job_spec={"ttlSecondsAfterFinished": -1, "template": CRON_TEMPLATE})),
]


def _check_first(errors: list[str], key: str) -> None:
    """TestValidateCronJob's check: ``strings.Split(k, ":")``: the first error's field is the
    first part and its text contains the second."""
    parts = key.split(":")
    assert errors, "expected failure"
    assert _field(errors[0]) == parts[0], errors
    assert parts[1] in errors[0], errors


@pytest.mark.parametrize(("key", "body"), _params(CRON_ERRORS, "TestValidateCronJob"))
def test_validate_cron_job_errors(key: str, body: dict[str, Any]) -> None:
    _check_first(validation.validate_cron_job_create(_decode(body)), key)
    old = copy.deepcopy(body)
    old["metadata"]["resourceVersion"] = "1"
    old["spec"].pop("timeZone", None)
    new = copy.deepcopy(body)
    new["metadata"]["resourceVersion"] = "2"
    errors = validation.validate_cron_job_update(_decode(new), _decode(old))
    if not errors and key == "metadata.name: must be no more than 52 characters":
        return
    _check_first(errors, key)


VALID_CRON = cron("0 * * * *", job_spec={"template": CRON_TEMPLATE})
TZ_CRON = cron("TZ=UTC 0 * * * *", job_spec={"template": CRON_TEMPLATE})

# (name, cronjob, create error, update, update error)
CRON_SCHEDULE_TZ = [
    ("update removing TZ should work", TZ_CRON, "cannot use TZ or CRON_TZ in schedule", _set("spec.schedule", "0 * * * *"), ""),
    ("update not modifying TZ should work", TZ_CRON, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead", _set("spec.schedule", "TZ=UTC 0 * * * *"), ""),
    ("update not modifying TZ but adding .spec.timeZone should fail", TZ_CRON, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead", _set("spec.timeZone", "UTC"),
     "cannot use both timeZone field and TZ or CRON_TZ in schedule"),
    ("update adding TZ should fail", VALID_CRON, "", _set("spec.schedule", "TZ=UTC 0 * * * *"), "cannot use TZ or CRON_TZ in schedule"),
]


@pytest.mark.parametrize(("name", "body", "create_error", "update", "update_error"), _params(CRON_SCHEDULE_TZ, "TestValidateCronJobScheduleTZ"))
def test_validate_cron_job_schedule_tz(name: str, body: dict[str, Any], create_error: str, update: Any, update_error: str) -> None:
    errors = validation.validate_cron_job_create(_decode(body))
    assert (create_error in errors[0]) if create_error else errors == [], errors
    old = copy.deepcopy(body)
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(body)
    new["metadata"]["resourceVersion"] = "2"
    update(new)
    errors = validation.validate_cron_job_update(_decode(new), _decode(old))
    assert (update_error in errors[0]) if update_error else errors == [], errors


def _cron_spec(time_zone: str | None) -> Any:
    return _decode(cron("0 * * * *", job_spec={"template": CRON_TEMPLATE}, **({} if time_zone is None else {"timeZone": time_zone}))).spec


# (name, old timeZone, new timeZone, expect error)
CRON_SPEC = [
    ("no validation because timeZone is nil for old and new", None, None, False),
    ("check validation because timeZone is different for new", None, "America/New_York", False),
    ("check validation because timeZone is different for new and invalid", None, "broken", True),
    ("old timeZone and new timeZone are valid", "America/New_York", "America/Chicago", False),
    ("old timeZone is valid, but new timeZone is invalid", "America/New_York", "broken", True),
    ("old timeZone and new timeZone are invalid, but unchanged", "broken", "broken", False),
    ("old timeZone and new timeZone are invalid, but different", "broken", "still broken", True),
    ("old timeZone is invalid, but new timeZone is valid", "broken", "America/New_York", False),
]


@pytest.mark.parametrize(("name", "old_zone", "new_zone", "expect_error"), _params(CRON_SPEC, "TestValidateCronJobSpec"))
def test_validate_cron_job_spec(name: str, old_zone: str | None, new_zone: str | None, expect_error: bool) -> None:
    errors = validation.validate_cron_job_spec(_cron_spec(new_zone), _cron_spec(old_zone), "spec")
    assert bool(errors) is expect_error, errors


# TestTimeZones: "all valid time zones as of go1.19 release on 2022-08-02"
TIME_ZONES = """
Africa/Abidjan Africa/Accra Africa/Addis_Ababa Africa/Algiers Africa/Asmara Africa/Asmera Africa/Bamako Africa/Bangui Africa/Banjul Africa/Bissau
Africa/Blantyre Africa/Brazzaville Africa/Bujumbura Africa/Cairo Africa/Casablanca Africa/Ceuta Africa/Conakry Africa/Dakar Africa/Dar_es_Salaam
Africa/Djibouti Africa/Douala Africa/El_Aaiun Africa/Freetown Africa/Gaborone Africa/Harare Africa/Johannesburg Africa/Juba Africa/Kampala
Africa/Khartoum Africa/Kigali Africa/Kinshasa Africa/Lagos Africa/Libreville Africa/Lome Africa/Luanda Africa/Lubumbashi Africa/Lusaka Africa/Malabo
Africa/Maputo Africa/Maseru Africa/Mbabane Africa/Mogadishu Africa/Monrovia Africa/Nairobi Africa/Ndjamena Africa/Niamey Africa/Nouakchott
Africa/Ouagadougou Africa/Porto-Novo Africa/Sao_Tome Africa/Timbuktu Africa/Tripoli Africa/Tunis Africa/Windhoek America/Adak America/Anchorage
America/Anguilla America/Antigua America/Araguaina America/Argentina/Buenos_Aires America/Argentina/Catamarca America/Argentina/ComodRivadavia
America/Argentina/Cordoba America/Argentina/Jujuy America/Argentina/La_Rioja America/Argentina/Mendoza America/Argentina/Rio_Gallegos
America/Argentina/Salta America/Argentina/San_Juan America/Argentina/San_Luis America/Argentina/Tucuman America/Argentina/Ushuaia America/Aruba
America/Asuncion America/Atikokan America/Atka America/Bahia America/Bahia_Banderas America/Barbados America/Belem America/Belize America/Blanc-Sablon
America/Boa_Vista America/Bogota America/Boise America/Buenos_Aires America/Cambridge_Bay America/Campo_Grande America/Cancun America/Caracas
America/Catamarca America/Cayenne America/Cayman America/Chicago America/Chihuahua America/Coral_Harbour America/Cordoba America/Costa_Rica
America/Creston America/Cuiaba America/Curacao America/Danmarkshavn America/Dawson America/Dawson_Creek America/Denver America/Detroit America/Dominica
America/Edmonton America/Eirunepe America/El_Salvador America/Ensenada America/Fort_Nelson America/Fort_Wayne America/Fortaleza America/Glace_Bay
America/Godthab America/Goose_Bay America/Grand_Turk America/Grenada America/Guadeloupe America/Guatemala America/Guayaquil America/Guyana
America/Halifax America/Havana America/Hermosillo America/Indiana/Indianapolis America/Indiana/Knox America/Indiana/Marengo America/Indiana/Petersburg
America/Indiana/Tell_City America/Indiana/Vevay America/Indiana/Vincennes America/Indiana/Winamac America/Indianapolis America/Inuvik America/Iqaluit
America/Jamaica America/Jujuy America/Juneau America/Kentucky/Louisville America/Kentucky/Monticello America/Knox_IN America/Kralendijk America/La_Paz
America/Lima America/Los_Angeles America/Louisville America/Lower_Princes America/Maceio America/Managua America/Manaus America/Marigot
America/Martinique America/Matamoros America/Mazatlan America/Mendoza America/Menominee America/Merida America/Metlakatla America/Mexico_City
America/Miquelon America/Moncton America/Monterrey America/Montevideo America/Montreal America/Montserrat America/Nassau America/New_York
America/Nipigon America/Nome America/Noronha America/North_Dakota/Beulah America/North_Dakota/Center America/North_Dakota/New_Salem America/Nuuk
America/Ojinaga America/Panama America/Pangnirtung America/Paramaribo America/Phoenix America/Port-au-Prince America/Port_of_Spain America/Porto_Acre
America/Porto_Velho America/Puerto_Rico America/Punta_Arenas America/Rainy_River America/Rankin_Inlet America/Recife America/Regina America/Resolute
America/Rio_Branco America/Rosario America/Santa_Isabel America/Santarem America/Santiago America/Santo_Domingo America/Sao_Paulo America/Scoresbysund
America/Shiprock America/Sitka America/St_Barthelemy America/St_Johns America/St_Kitts America/St_Lucia America/St_Thomas America/St_Vincent
America/Swift_Current America/Tegucigalpa America/Thule America/Thunder_Bay America/Tijuana America/Toronto America/Tortola America/Vancouver
America/Virgin America/Whitehorse America/Winnipeg America/Yakutat America/Yellowknife Antarctica/Casey Antarctica/Davis Antarctica/DumontDUrville
Antarctica/Macquarie Antarctica/Mawson Antarctica/McMurdo Antarctica/Palmer Antarctica/Rothera Antarctica/South_Pole Antarctica/Syowa Antarctica/Troll
Antarctica/Vostok Arctic/Longyearbyen Asia/Aden Asia/Almaty Asia/Amman Asia/Anadyr Asia/Aqtau Asia/Aqtobe Asia/Ashgabat Asia/Ashkhabad Asia/Atyrau
Asia/Baghdad Asia/Bahrain Asia/Baku Asia/Bangkok Asia/Barnaul Asia/Beirut Asia/Bishkek Asia/Brunei Asia/Calcutta Asia/Chita Asia/Choibalsan
Asia/Chongqing Asia/Chungking Asia/Colombo Asia/Dacca Asia/Damascus Asia/Dhaka Asia/Dili Asia/Dubai Asia/Dushanbe Asia/Famagusta Asia/Gaza Asia/Harbin
Asia/Hebron Asia/Ho_Chi_Minh Asia/Hong_Kong Asia/Hovd Asia/Irkutsk Asia/Istanbul Asia/Jakarta Asia/Jayapura Asia/Jerusalem Asia/Kabul Asia/Kamchatka
Asia/Karachi Asia/Kashgar Asia/Kathmandu Asia/Katmandu Asia/Khandyga Asia/Kolkata Asia/Krasnoyarsk Asia/Kuala_Lumpur Asia/Kuching Asia/Kuwait
Asia/Macao Asia/Macau Asia/Magadan Asia/Makassar Asia/Manila Asia/Muscat Asia/Nicosia Asia/Novokuznetsk Asia/Novosibirsk Asia/Omsk Asia/Oral
Asia/Phnom_Penh Asia/Pontianak Asia/Pyongyang Asia/Qatar Asia/Qostanay Asia/Qyzylorda Asia/Rangoon Asia/Riyadh Asia/Saigon Asia/Sakhalin
Asia/Samarkand Asia/Seoul Asia/Shanghai Asia/Singapore Asia/Srednekolymsk Asia/Taipei Asia/Tashkent Asia/Tbilisi Asia/Tehran Asia/Tel_Aviv
Asia/Thimbu Asia/Thimphu Asia/Tokyo Asia/Tomsk Asia/Ujung_Pandang Asia/Ulaanbaatar Asia/Ulan_Bator Asia/Urumqi Asia/Ust-Nera Asia/Vientiane
Asia/Vladivostok Asia/Yakutsk Asia/Yangon Asia/Yekaterinburg Asia/Yerevan Atlantic/Azores Atlantic/Bermuda Atlantic/Canary Atlantic/Cape_Verde
Atlantic/Faeroe Atlantic/Faroe Atlantic/Jan_Mayen Atlantic/Madeira Atlantic/Reykjavik Atlantic/South_Georgia Atlantic/St_Helena Atlantic/Stanley
Australia/ACT Australia/Adelaide Australia/Brisbane Australia/Broken_Hill Australia/Canberra Australia/Currie Australia/Darwin Australia/Eucla
Australia/Hobart Australia/LHI Australia/Lindeman Australia/Lord_Howe Australia/Melbourne Australia/North Australia/NSW Australia/Perth
Australia/Queensland Australia/South Australia/Sydney Australia/Tasmania Australia/Victoria Australia/West Australia/Yancowinna Brazil/Acre
Brazil/DeNoronha Brazil/East Brazil/West Canada/Atlantic Canada/Central Canada/Eastern Canada/Mountain Canada/Newfoundland Canada/Pacific
Canada/Saskatchewan Canada/Yukon CET Chile/Continental Chile/EasterIsland CST6CDT Cuba EET Egypt Eire EST EST5EDT Etc/GMT Etc/GMT+0 Etc/GMT+1
Etc/GMT+10 Etc/GMT+11 Etc/GMT+12 Etc/GMT+2 Etc/GMT+3 Etc/GMT+4 Etc/GMT+5 Etc/GMT+6 Etc/GMT+7 Etc/GMT+8 Etc/GMT+9 Etc/GMT-0 Etc/GMT-1 Etc/GMT-10
Etc/GMT-11 Etc/GMT-12 Etc/GMT-13 Etc/GMT-14 Etc/GMT-2 Etc/GMT-3 Etc/GMT-4 Etc/GMT-5 Etc/GMT-6 Etc/GMT-7 Etc/GMT-8 Etc/GMT-9 Etc/GMT0 Etc/Greenwich
Etc/UCT Etc/Universal Etc/UTC Etc/Zulu Europe/Amsterdam Europe/Andorra Europe/Astrakhan Europe/Athens Europe/Belfast Europe/Belgrade Europe/Berlin
Europe/Bratislava Europe/Brussels Europe/Bucharest Europe/Budapest Europe/Busingen Europe/Chisinau Europe/Copenhagen Europe/Dublin Europe/Gibraltar
Europe/Guernsey Europe/Helsinki Europe/Isle_of_Man Europe/Istanbul Europe/Jersey Europe/Kaliningrad Europe/Kiev Europe/Kirov Europe/Lisbon
Europe/Ljubljana Europe/London Europe/Luxembourg Europe/Madrid Europe/Malta Europe/Mariehamn Europe/Minsk Europe/Monaco Europe/Moscow Europe/Nicosia
Europe/Oslo Europe/Paris Europe/Podgorica Europe/Prague Europe/Riga Europe/Rome Europe/Samara Europe/San_Marino Europe/Sarajevo Europe/Saratov
Europe/Simferopol Europe/Skopje Europe/Sofia Europe/Stockholm Europe/Tallinn Europe/Tirane Europe/Tiraspol Europe/Ulyanovsk Europe/Uzhgorod
Europe/Vaduz Europe/Vatican Europe/Vienna Europe/Vilnius Europe/Volgograd Europe/Warsaw Europe/Zagreb Europe/Zaporozhye Europe/Zurich Factory GB
GB-Eire GMT GMT+0 GMT-0 GMT0 Greenwich Hongkong HST Iceland Indian/Antananarivo Indian/Chagos Indian/Christmas Indian/Cocos Indian/Comoro
Indian/Kerguelen Indian/Mahe Indian/Maldives Indian/Mauritius Indian/Mayotte Indian/Reunion Iran Israel Jamaica Japan Kwajalein Libya MET
Mexico/BajaNorte Mexico/BajaSur Mexico/General MST MST7MDT Navajo NZ NZ-CHAT Pacific/Apia Pacific/Auckland Pacific/Bougainville Pacific/Chatham
Pacific/Chuuk Pacific/Easter Pacific/Efate Pacific/Enderbury Pacific/Fakaofo Pacific/Fiji Pacific/Funafuti Pacific/Galapagos Pacific/Gambier
Pacific/Guadalcanal Pacific/Guam Pacific/Honolulu Pacific/Johnston Pacific/Kanton Pacific/Kiritimati Pacific/Kosrae Pacific/Kwajalein Pacific/Majuro
Pacific/Marquesas Pacific/Midway Pacific/Nauru Pacific/Niue Pacific/Norfolk Pacific/Noumea Pacific/Pago_Pago Pacific/Palau Pacific/Pitcairn
Pacific/Pohnpei Pacific/Ponape Pacific/Port_Moresby Pacific/Rarotonga Pacific/Saipan Pacific/Samoa Pacific/Tahiti Pacific/Tarawa Pacific/Tongatapu
Pacific/Truk Pacific/Wake Pacific/Wallis Pacific/Yap Poland Portugal PRC PST8PDT ROC ROK Singapore Turkey UCT Universal US/Alaska US/Aleutian
US/Arizona US/Central US/East-Indiana US/Eastern US/Hawaii US/Indiana-Starke US/Michigan US/Mountain US/Pacific US/Samoa UTC W-SU WET Zulu
""".split()


def test_time_zones() -> None:
    refused = [zone for zone in TIME_ZONES if validation.validate_time_zone(zone, "spec.timeZone")]
    assert refused == [], refused


# --- TestValidateIndexesString / TestValidateFailedIndexesNotOverlapCompleted --------------

INDEXES_STRING = [
    ("empty is valid", "", 6, 0, None),
    ("single number is valid", "1", 6, 1, None),
    ("single interval is valid", "1-3", 6, 3, None),
    ("mixed intervals valid", "0,1-3,5,7-10", 12, 9, None),
    ("invalid due to extra space", "0,1-3, 5", 6, 0, 'cannot convert string to integer for index: " 5"'),
    ("invalid due to too large index", "0,1-3,5", 5, 0, 'too large index: "5"'),
    ("invalid due to non-increasing order of intervals", "1-3,0,5", 6, 0, "non-increasing order, previous: 3, current: 0"),
    ("invalid due to non-increasing order between intervals", "0,0,5", 6, 0, "non-increasing order, previous: 0, current: 0"),
    ("invalid due to non-increasing order within interval", "0,1-1,5", 6, 0, "non-increasing order, previous: 1, current: 1"),
    ("invalid due to starting with '-'", "-1,0", 6, 0, 'cannot convert string to integer for index: ""'),
    ("invalid due to ending with '-'", "0,1-", 6, 0, 'cannot convert string to integer for index: ""'),
    ("invalid due to repeated '-'", "0,1--3", 6, 0, "the fragment \"1--3\" violates the requirement that an index interval can have at most two parts separated by '-'"),
    ("invalid due to repeated ','", "0,,1,3", 6, 0, 'cannot convert string to integer for index: ""'),
]


@pytest.mark.parametrize(("name", "text", "completions", "total", "error"), _params(INDEXES_STRING, "TestValidateIndexesString"))
def test_validate_indexes_string(name: str, text: str, completions: int, total: int, error: str | None) -> None:
    got_total, got_error = validation.validate_indexes_format(text, completions)
    assert got_error == error
    assert got_total == total


FAILED_NOT_OVERLAP = [
    ("empty intervals", "", "", 6, None),
    ("empty completed intervals", "", "1-3", 6, None),
    ("empty failed intervals", "1-2", "", 6, None),
    ("non-overlapping intervals", "0,2-4,6-8,12-19", "1,9-10", 20, None),
    ("overlapping intervals", "0,2-4,6-8,12-19", "1,8,9-10", 20, "failedIndexes and completedIndexes overlap at index: 8"),
    ("overlapping intervals, corrupted completed interval skipped", "0,2-4,x,6-8,12-19", "1,8,9-10", 20, "failedIndexes and completedIndexes overlap at index: 8"),
    ("overlapping intervals, corrupted failed interval skipped", "0,2-4,6-8,12-19", "1,y,8,9-10", 20, "failedIndexes and completedIndexes overlap at index: 8"),
    ("overlapping intervals, first corrupted intervals skipped", "x,0,2-4,6-8,12-19", "y,1,8,9-10", 20, "failedIndexes and completedIndexes overlap at index: 8"),
    ("non-overlapping intervals, last intervals corrupted", "0,2-4,6-8,12-19,x", "1,9-10,y", 20, None),
]


@pytest.mark.parametrize(("name", "completed", "failed", "completions", "error"), _params(FAILED_NOT_OVERLAP, "TestValidateFailedIndexesNotOverlapCompleted"))
def test_validate_failed_indexes_not_overlap_completed(name: str, completed: str, failed: str, completions: int, error: str | None) -> None:
    assert validation.validate_failed_indexes_not_overlap_completed(completed, failed, completions) == error

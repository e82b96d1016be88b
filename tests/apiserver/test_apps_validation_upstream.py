"""Kubernetes' apps validation tests for StatefulSets, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/apps/validation/validation_test.go`` (the 1.30-era
revision with ``mkStatefulSet`` tweaks, ordinals and the PVC retention policy). Taken here,
every row: TestValidateStatefulSet (9 success, 26 error rows: the exact error list, type and
field, sorted), TestValidateStatefulSetMinReadySeconds (4), TestValidateStatefulSetStatus
(13), TestValidateStatefulSetUpdate (10 success, 9 error rows).

Not taken (remaining in that file): TestValidateControllerRevision(Update), the DaemonSet
tables (TestValidateDaemonSet, -Update, -Status, -UpdateStrategy), the Deployment tables
(TestValidateDeployment, -Update, -Status, -Rollback, -Spec...), the ReplicaSet tables
(TestValidateReplicaSet, -Update, -Status, -ScaleUpdate...): the model's validation of those
kinds is the older, partial one.

Rows whose objects the model refuses at decoding (metadata labels and annotations are
checked when a body is decoded, with the decoder's message, before validation) are expected
failures, listed with the reason in :data:`EXPECTED_FAILURES` and in docs/api-server.md.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.apiserver import validation

VALID_LABELS = {"a": "b"}
INVALID_LABELS = {"NoUppercaseOrSpecialCharsLike=Equals": "b"}
CONTAINER = {"name": "abc", "image": "image", "imagePullPolicy": "IfNotPresent"}
VALID_TEMPLATE = {"metadata": {"labels": VALID_LABELS}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "containers": [CONTAINER]}}
HOSTNET_TEMPLATE = {"metadata": {"labels": VALID_LABELS}, "spec": {"hostNetwork": True, "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                                                                   "containers": [{**CONTAINER, "ports": [{"containerPort": 12345, "protocol": "TCP"}]}]}}
INVALID_TEMPLATE = {"metadata": {"labels": INVALID_LABELS}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}
INVALID_TEMPLATE_2 = {"metadata": {"labels": VALID_LABELS}, "spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "activeDeadlineSeconds": 60}}


def mk(template: dict[str, Any], *tweaks: Any) -> dict[str, Any]:
    """``mkStatefulSet``: name abc in default, OrderedReady, selector a=b, RollingUpdate."""
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "abc", "namespace": "default"},
            "spec": {"podManagementPolicy": "OrderedReady", "selector": {"matchLabels": VALID_LABELS}, "template": copy.deepcopy(template),
                     "updateStrategy": {"type": "RollingUpdate"}, "replicas": 0}}
    for tweak in tweaks:
        tweak(body)
    return body


def name(value: str) -> Any:
    return lambda b: b["metadata"].__setitem__("name", value)


def namespace(value: str) -> Any:
    return lambda b: b["metadata"].__setitem__("namespace", value)


def labels(key: str, value: str) -> Any:
    return lambda b: b["metadata"].setdefault("labels", {}).__setitem__(key, value)


def annotations(key: str, value: str) -> Any:
    return lambda b: b["metadata"].setdefault("annotations", {}).__setitem__(key, value)


def finalizers(*values: str) -> Any:
    return lambda b: b["metadata"].__setitem__("finalizers", list(values))


def spec(**fields: Any) -> Any:
    return lambda b: b["spec"].update(copy.deepcopy(fields))


def selector(match_labels: dict[str, str] | None) -> Any:
    def apply(b: dict[str, Any]) -> None:
        if match_labels is None:
            b["spec"].pop("selector", None)
        else:
            b["spec"]["selector"] = {"matchLabels": dict(match_labels)}

    return apply


def restart_policy(value: str) -> Any:
    return lambda b: b["spec"]["template"]["spec"].__setitem__("restartPolicy", value)


def strategy_type(value: str) -> Any:
    return lambda b: b["spec"]["updateStrategy"].__setitem__("type", value)


def rolling(**fields: Any) -> Any:
    return lambda b: b["spec"]["updateStrategy"].setdefault("rollingUpdate", {}).update(fields)


def pvc_policy(**fields: str) -> Any:
    return lambda b: b["spec"].__setitem__("persistentVolumeClaimRetentionPolicy", dict(fields))


def pvc_templates(*claims: dict[str, Any]) -> Any:
    return lambda b: b["spec"].__setitem__("volumeClaimTemplates", copy.deepcopy(list(claims)))


INV, REQ, NS, FORB = "Invalid value", "Required value", "Unsupported value", "Forbidden"

# (name, object, expected sorted (type, field) list)
VALIDATE = [
    ("alpha name", mk(VALID_TEMPLATE, name("abc")), []),
    ("alphanumeric name", mk(VALID_TEMPLATE, name("abc-123")), []),
    ("hostNetwork true", mk(HOSTNET_TEMPLATE), []),
    ("parallel pod management", mk(VALID_TEMPLATE, spec(podManagementPolicy="Parallel")), []),
    ("ordered ready pod management", mk(VALID_TEMPLATE, spec(podManagementPolicy="OrderedReady")), []),
    ("update strategy", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("RollingUpdate"), rolling(partition=2)), []),
    ("PVC policy [enable StatefulSetAutoDeletePVC]", mk(VALID_TEMPLATE, pvc_policy(whenDeleted="Delete", whenScaled="Retain")), []),
    ("maxUnavailable with parallel pod management", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("RollingUpdate"), rolling(partition=2, maxUnavailable=2)), []),
    ("ordinals.start positive value", mk(VALID_TEMPLATE, spec(replicas=3, ordinals={"start": 2})), []),
    ("zero-length name", mk(VALID_TEMPLATE, name("")), [(REQ, "metadata.name")]),
    ("name-with-dots", mk(VALID_TEMPLATE, name("abc.123")), [(INV, "metadata.name")]),
    ("long name", mk(VALID_TEMPLATE, name("a" * 64)), [(INV, "metadata.name")]),
    ("missing-namespace", mk(VALID_TEMPLATE, namespace("")), [(REQ, "metadata.namespace")]),
    ("empty selector", mk(VALID_TEMPLATE, selector(None)), [(REQ, "spec.selector"), (INV, "spec.template.metadata.labels")]),
    ("selector_doesnt_match", mk(VALID_TEMPLATE, selector({"foo": "bar"})), [(INV, "spec.template.metadata.labels")]),
    ("negative_replicas", mk(VALID_TEMPLATE, spec(replicas=-1)), [(INV, "spec.replicas")]),
    ("invalid_label", mk(VALID_TEMPLATE, labels("NoUppercaseOrSpecialCharsLike=Equals", "bar")), [(INV, "metadata.labels")]),
    ("invalid_label 2", mk(INVALID_TEMPLATE, labels("NoUppercaseOrSpecialCharsLike=Equals", "bar"), selector(INVALID_LABELS)),
     [(INV, "metadata.labels"), (INV, "spec.selector"), (INV, "spec.selector.matchLabels")]),
    ("invalid_annotation", mk(VALID_TEMPLATE, annotations("NoUppercaseOrSpecialCharsLike=Equals", "bar")), [(INV, "metadata.annotations")]),
    ("invalid restart policy 1", mk(VALID_TEMPLATE, restart_policy("OnFailure")), [(NS, "spec.template.spec.restartPolicy")]),
    ("invalid restart policy 2", mk(VALID_TEMPLATE, restart_policy("Never")), [(NS, "spec.template.spec.restartPolicy")]),
    ("empty restart policy", mk(VALID_TEMPLATE, restart_policy("")), [(NS, "spec.template.spec.restartPolicy")]),
    ("invalid update strategy", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("foo")), [(INV, "spec.updateStrategy")]),
    ("empty update strategy", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("")), [(REQ, "spec.updateStrategy")]),
    ("invalid rolling update", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("OnDelete"), rolling(partition=1)), [(INV, "spec.updateStrategy.rollingUpdate")]),
    ("negative partition", mk(VALID_TEMPLATE, spec(replicas=3), rolling(partition=-1)), [(INV, "spec.updateStrategy.rollingUpdate.partition")]),
    ("empty pod management policy", mk(VALID_TEMPLATE, spec(podManagementPolicy="", replicas=3)), [(REQ, "spec.podManagementPolicy")]),
    ("invalid pod management policy", mk(VALID_TEMPLATE, spec(podManagementPolicy="foo")), [(INV, "spec.podManagementPolicy")]),
    ("set active deadline seconds", mk(INVALID_TEMPLATE_2, spec(replicas=3)), [(FORB, "spec.template.spec.activeDeadlineSeconds")]),
    ("empty PersistentVolumeClaimRetentionPolicy [enable StatefulSetAutoDeletePVC]", mk(VALID_TEMPLATE, pvc_policy()),
     [(NS, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted"), (NS, "spec.persistentVolumeClaimRetentionPolicy.whenScaled")]),
    ("invalid PersistentVolumeClaimRetentionPolicy [enable StatefulSetAutoDeletePVC]",
     mk(VALID_TEMPLATE, pvc_policy(whenDeleted="invalid-retention-policy", whenScaled="invalid-retention-policy")),
     [(NS, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted"), (NS, "spec.persistentVolumeClaimRetentionPolicy.whenScaled")]),
    ("zero maxUnavailable", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("RollingUpdate"), rolling(maxUnavailable=0)), [(INV, "spec.updateStrategy.rollingUpdate.maxUnavailable")]),
    ("zero percent maxUnavailable", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("RollingUpdate"), rolling(maxUnavailable="0%")),
     [(INV, "spec.updateStrategy.rollingUpdate.maxUnavailable")]),
    ("greater than 100 percent maxUnavailable", mk(VALID_TEMPLATE, spec(replicas=3), strategy_type("RollingUpdate"), rolling(maxUnavailable="101%")),
     [(INV, "spec.updateStrategy.rollingUpdate.maxUnavailable")]),
    ("invalid ordinals.start", mk(VALID_TEMPLATE, spec(replicas=3, ordinals={"start": -2})), [(INV, "spec.ordinals.start")]),
]

DECODING = "metadata labels, annotations and selector labels are checked when the body is decoded (a 400 with the decoder's message), before validation's field errors"
NAMES = "names are checked when the body is decoded (a 400 with the decoder's message: missing, or not a DNS-1123 label), before validation's field errors"
EXPECTED_FAILURES = {
    "TestValidateStatefulSet/zero-length name": NAMES,
    "TestValidateStatefulSet/name-with-dots": NAMES,
    "TestValidateStatefulSet/long name": NAMES,
    "TestValidateStatefulSet/invalid_label": DECODING,
    "TestValidateStatefulSet/invalid_label 2": DECODING,
    "TestValidateStatefulSet/invalid_annotation": DECODING,
}


def _params(rows: list[tuple], table: str) -> list[Any]:
    out = []
    for row in rows:
        reason = EXPECTED_FAILURES.get(f"{table}/{row[0]}")
        out.append(pytest.param(*row, id=row[0], marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else []))
    return out


def _pairs(errors: list[str]) -> list[tuple[str, str]]:
    return sorted((error.split(": ", 2)[1], error.split(": ", 1)[0]) for error in errors)


@pytest.mark.parametrize(("name", "body", "expected"), _params(VALIDATE, "TestValidateStatefulSet"))
def test_validate_stateful_set(name: str, body: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    sts = from_dict(copy.deepcopy(body))
    errors = validation.validate_create(sts)
    assert _pairs(errors) == sorted(expected), errors


MIN_READY_SECONDS = [("valid : minReadySeconds enabled, zero", 0, False), ("invalid : minReadySeconds enabled, negative", -1, True),
                     ("valid : minReadySeconds enabled, very large value", 2147483647, False), ("invalid : minReadySeconds enabled, large negative", -2147483648, True)]


@pytest.mark.parametrize(("name", "seconds", "expect_error"), MIN_READY_SECONDS, ids=[row[0] for row in MIN_READY_SECONDS])
def test_validate_stateful_set_min_ready_seconds(name: str, seconds: int, expect_error: bool) -> None:
    body = mk(VALID_TEMPLATE, spec(replicas=3, minReadySeconds=seconds))
    errors = validation.validate_stateful_set_spec(from_dict(body).spec, "spec.minReadySeconds")
    assert bool(errors) is expect_error, errors


# (name, replicas, ready, current, updated, available, observedGeneration, collisionCount, expect error)
STATUS = [
    ("valid status", 3, 3, 2, 1, 0, None, None, False),
    ("invalid replicas", -1, 3, 2, 1, 0, None, None, True),
    ("invalid readyReplicas", 3, -1, 2, 1, 0, None, None, True),
    ("invalid currentReplicas", 3, 3, -1, 1, 0, None, None, True),
    ("invalid updatedReplicas", 3, 3, 2, -1, 0, None, None, True),
    ("invalid observedGeneration", 3, 3, 2, 1, 0, -1, None, True),
    ("invalid collisionCount", 3, 3, 2, 1, 0, None, -1, True),
    ("readyReplicas greater than replicas", 3, 4, 2, 1, 0, None, None, True),
    ("currentReplicas greater than replicas", 3, 3, 4, 1, 0, None, None, True),
    ("updatedReplicas greater than replicas", 3, 3, 2, 4, 0, None, None, True),
    ("invalid: number of available replicas", 3, 3, 2, 0, -1, None, None, True),
    ("invalid: available replicas greater than replicas", 3, 3, 2, 0, 4, None, None, True),
    ("invalid: available replicas greater than ready replicas", 3, 2, 2, 0, 3, None, None, True),
]


@pytest.mark.parametrize(("name", "replicas", "ready", "current", "updated", "available", "generation", "collisions", "expect_error"), STATUS, ids=[row[0] for row in STATUS])
def test_validate_stateful_set_status(name: str, replicas: int, ready: int, current: int, updated: int, available: int, generation: int | None, collisions: int | None,
                                      expect_error: bool) -> None:
    status: dict[str, Any] = {"replicas": replicas, "readyReplicas": ready, "currentReplicas": current, "updatedReplicas": updated, "availableReplicas": available}
    if generation is not None:
        status["observedGeneration"] = generation
    if collisions is not None:
        status["collisionCount"] = collisions
    sts = from_dict({**mk(VALID_TEMPLATE), "status": status})
    errors = validation.validate_stateful_set_status(sts.status)
    assert bool(errors) is expect_error, errors


ADD_CONTAINERS = copy.deepcopy(VALID_TEMPLATE)
ADD_CONTAINERS["spec"]["containers"].append({"name": "def", "image": "image2", "imagePullPolicy": "IfNotPresent"})
VALID_TEMPLATE_2 = {**copy.deepcopy(VALID_TEMPLATE), "metadata": {"labels": {"c": "d"}}}
PVC = {"metadata": {"name": "pvc-abc"}, "spec": {"storageClassName": "storage-class1", "resources": {"requests": {"storage": "1Gi"}}}}
PVC_SIZE = copy.deepcopy(PVC)
PVC_SIZE["spec"]["resources"]["requests"]["storage"] = "2Gi"
PVC_CLASS = copy.deepcopy(PVC)
PVC_CLASS["spec"]["storageClassName"] = "storage-class2"
PVC_2 = {"metadata": {"name": "pvc-abc2"}, "spec": {"storageClassName": "storage-class2", "resources": {"requests": {"storage": "2Gi"}}}}

# (name, old, update, expected)
UPDATE = [
    ("update replica count", mk(VALID_TEMPLATE), mk(VALID_TEMPLATE, spec(replicas=3)), []),
    ("update containers 1", mk(VALID_TEMPLATE), mk(ADD_CONTAINERS), []),
    ("update containers 2", mk(ADD_CONTAINERS), mk(VALID_TEMPLATE), []),
    ("update containers and pvc retention policy 1", mk(ADD_CONTAINERS), mk(VALID_TEMPLATE, pvc_policy(whenDeleted="Retain", whenScaled="Retain")), []),
    ("update containers and pvc retention policy 2", mk(VALID_TEMPLATE, pvc_policy(whenScaled="Retain")), mk(VALID_TEMPLATE), []),
    ("update update strategy", mk(VALID_TEMPLATE), mk(VALID_TEMPLATE, strategy_type("OnDelete")), []),
    ("update min ready seconds 1", mk(VALID_TEMPLATE), mk(VALID_TEMPLATE, spec(minReadySeconds=10)), []),
    ("update min ready seconds 2", mk(VALID_TEMPLATE, spec(minReadySeconds=5)), mk(VALID_TEMPLATE, spec(minReadySeconds=10)), []),
    ("update existing instance with now-invalid name", mk(VALID_TEMPLATE, finalizers("final")), mk(VALID_TEMPLATE, finalizers()), []),
    ("update existing instance with .spec.ordinals.start", mk(VALID_TEMPLATE), mk(VALID_TEMPLATE, spec(ordinals={"start": 3})), []),
    ("update name", mk(VALID_TEMPLATE, name("abc")), mk(VALID_TEMPLATE, name("abc2")), [(INV, "metadata.name")]),
    ("update namespace", mk(VALID_TEMPLATE, namespace("default")), mk(VALID_TEMPLATE, namespace("default1")), [(INV, "metadata.namespace")]),
    ("update selector", mk(VALID_TEMPLATE, selector(VALID_LABELS)), mk(VALID_TEMPLATE_2, selector({"c": "d"})), [(FORB, "spec")]),
    ("update pod management policy 1", mk(VALID_TEMPLATE, spec(podManagementPolicy="")), mk(VALID_TEMPLATE, spec(podManagementPolicy="OrderedReady")), [(FORB, "spec")]),
    ("update pod management policy 2", mk(VALID_TEMPLATE, spec(podManagementPolicy="Parallel")), mk(VALID_TEMPLATE, spec(podManagementPolicy="OrderedReady")), [(FORB, "spec")]),
    ("update to negative replicas", mk(VALID_TEMPLATE), mk(VALID_TEMPLATE, spec(replicas=-1)), [(INV, "spec.replicas")]),
    ("update pvc template size", mk(VALID_TEMPLATE, pvc_templates(PVC)), mk(VALID_TEMPLATE, pvc_templates(PVC_SIZE)), [(FORB, "spec")]),
    ("update pvc template storage class", mk(VALID_TEMPLATE, pvc_templates(PVC)), mk(VALID_TEMPLATE, pvc_templates(PVC_CLASS)), [(FORB, "spec")]),
    ("add new pvc template", mk(VALID_TEMPLATE, pvc_templates(PVC)), mk(VALID_TEMPLATE, pvc_templates(PVC, PVC_2)), [(FORB, "spec")]),
]


@pytest.mark.parametrize(("name", "old", "update", "expected"), _params(UPDATE, "TestValidateStatefulSetUpdate"))
def test_validate_stateful_set_update(name: str, old: dict[str, Any], update: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    old_body, new_body = copy.deepcopy(old), copy.deepcopy(update)
    old_body["metadata"]["resourceVersion"] = new_body["metadata"]["resourceVersion"] = "1"
    errors = validation.validate_stateful_set_update(from_dict(new_body), from_dict(old_body))
    assert _pairs(errors) == sorted(expected), errors

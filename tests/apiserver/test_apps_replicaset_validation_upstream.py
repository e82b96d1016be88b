"""Kubernetes' apps validation tests for ReplicaSets and DaemonSet surge, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/apps/validation/validation_test.go`` (the same
1.30-era revision as ``test_apps_validation_upstream.py``). Taken here, every row of
TestValidateReplicaSetUpdate (2 success, 3 error rows; upstream asserts the error count),
TestValidateReplicaSet (4 success, 12 error rows; upstream asserts "some error", each on a
field among its allowed ones, checked the same way) and TestDaemonSetUpdateMaxSurge (24 rows,
``ValidateRollingUpdateDaemonSet``).

45 rows: 39 pass, 6 are expected failures (:data:`EXPECTED_FAILURES`, in docs/api-server.md):
an empty name, invalid metadata labels or annotations, or an invalid selector key, refused when
the body is decoded (with the decoder's message) before validation runs.

The 21 ReplicaSet rows passed before the ValidateReplicaSetSpec port too (shim onto the old
``validate_create`` / ``validate_update``); the surge rows have no "before" (the function is
new; the old DaemonSet check allowed both maxSurge and maxUnavailable set, which 2 rows refuse).

Not taken (remaining in that file): TestValidateControllerRevision(Update),
TestValidateDeploymentRollback (not an apps/v1 kind).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaoskube.api.manifests import ManifestError, from_dict
from chaoskube.api.objects import RollingUpdateDaemonSet
from chaoskube.apiserver import validation

LABELS = {"a": "b"}
INVALID = {"NoUppercaseOrSpecialCharsLike=Equals": "b"}
CONTAINER = {"name": "ctr", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}
POD_SPEC = {"containers": [CONTAINER], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
HOSTNET = {"metadata": {"labels": LABELS}, "spec": {**POD_SPEC, "hostNetwork": True, "containers": [{**CONTAINER, "name": "abc", "ports": [{"containerPort": 12345, "protocol": "TCP"}]}]}}
READ_WRITE = {"metadata": {"labels": LABELS}, "spec": {**POD_SPEC, "volumes": [{"name": "gcepd", "gcePersistentDisk": {"pdName": "my-PD", "fsType": "ext4", "partition": 1, "readOnly": False}}]}}
NO_CONTAINERS_INVALID_LABELS = {"metadata": {"labels": INVALID}, "spec": {**POD_SPEC, "containers": []}}
INVALID_LABELS_TEMPLATE = {"metadata": {"labels": INVALID}, "spec": POD_SPEC}
NO_TEMPLATE = {"metadata": {}, "spec": {}}

DECODING = "metadata labels and annotations and label-selector keys are checked when a body is decoded: refused with the decoder's message before validation"
NAMES = "an empty name is refused when the body is decoded, before validation (upstream: ValidateObjectMeta's / -Update's metadata.name error)"
EXPECTED_FAILURES = {
    "TestValidateReplicaSetUpdate/invalid selector": NAMES,
    "TestValidateReplicaSetUpdate/invalid pod": NAMES,
    "TestValidateReplicaSet/zero-length ID": NAMES,
    "TestValidateReplicaSet/invalid_label": DECODING,
    "TestValidateReplicaSet/invalid_label 2": DECODING,
    "TestValidateReplicaSet/invalid_annotation": DECODING,
}


def _params(rows: list[tuple], table: str) -> list[Any]:
    out = []
    for row in rows:
        reason = EXPECTED_FAILURES.get(f"{table}/{row[0]}")
        out.append(pytest.param(*row, id=row[0], marks=[pytest.mark.xfail(strict=True, raises=(ManifestError, AssertionError), reason=reason)] if reason else []))
    return out


def rs(name: str = "abc", namespace: str = "default", replicas: int | None = None, selector: dict[str, str] | None = LABELS,
       template: dict[str, Any] = TEMPLATE, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": copy.deepcopy(template), "replicas": replicas if replicas is not None else 0}
    if selector is not None:
        spec["selector"] = {"matchLabels": dict(selector)}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {}),
                                                                       "annotations": dict(annotations or {})}, "spec": spec}


# (name, old, update, expected error count)
UPDATE = [
    ("positive replicas", rs(), rs(replicas=3), 0),
    ("Read-write volume verification", rs(), rs(replicas=3, template=READ_WRITE), 0),
    ("invalid selector", rs(""), rs(replicas=2, selector=INVALID), 3),
    ("invalid pod", rs(""), rs(replicas=2, template=NO_CONTAINERS_INVALID_LABELS), 4),
    ("negative replicas", rs(), rs(replicas=-1), 1),
]


@pytest.mark.parametrize(("name", "old", "update", "expected"), _params(UPDATE, "TestValidateReplicaSetUpdate"))
def test_validate_replica_set_update(name: str, old: dict[str, Any], update: dict[str, Any], expected: int) -> None:
    old_body, new_body = copy.deepcopy(old), copy.deepcopy(update)
    old_body["metadata"]["resourceVersion"], new_body["metadata"]["resourceVersion"] = "1", "2"
    errors = validation.validate_replica_set_update(from_dict(new_body), from_dict(old_body))
    assert len(errors) == expected, errors


# (name, object, expect error)
CREATE = [
    ("success abc", rs(), False),
    ("success abc-123", rs("abc-123"), False),
    ("success hostnet", rs("hostnet", template=HOSTNET), False),
    ("success read-write volume", rs("abc-123", replicas=1, template=READ_WRITE), False),
    ("zero-length ID", rs(""), True),
    ("missing-namespace", rs("abc-123", ""), True),
    ("empty selector", rs(selector=None), True),
    ("selector_doesnt_match", rs(selector={"foo": "bar"}), True),
    ("invalid manifest", rs(template=NO_TEMPLATE), True),
    ("read-write persistent disk with > 1 pod", rs("abc", "", replicas=2, template=READ_WRITE), True),
    ("negative_replicas", rs(replicas=-1, template=NO_TEMPLATE), True),
    ("invalid_label", rs("abc-123", labels={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid_label 2", rs("abc-123", selector=None, template=INVALID_LABELS_TEMPLATE, labels={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid_annotation", rs("abc-123", annotations={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid restart policy 1", rs("abc-123", template={"metadata": {"labels": LABELS}, "spec": {**POD_SPEC, "restartPolicy": "OnFailure"}}), True),
    ("invalid restart policy 2", rs("abc-123", template={"metadata": {"labels": LABELS}, "spec": {**POD_SPEC, "restartPolicy": "Never"}}), True),
]
FIELDS = ("metadata.name", "metadata.namespace", "spec.selector", "spec.template", "GCEPersistentDisk.ReadOnly", "spec.replicas", "spec.template.labels",
          "metadata.annotations", "metadata.labels", "status.replicas")


@pytest.mark.parametrize(("name", "body", "expect_error"), _params(CREATE, "TestValidateReplicaSet"))
def test_validate_replica_set(name: str, body: dict[str, Any], expect_error: bool) -> None:
    errors = validation.validate_replica_set(from_dict(copy.deepcopy(body)))
    assert bool(errors) is expect_error, errors
    for error in errors:
        field = error.split(": ", 1)[0]
        assert field.startswith("spec.template.") or field in FIELDS, error


# (name, maxUnavailable, maxSurge, expect error); None is intstr's zero value (the int 0)
MAX_SURGE = [
    ("invalid: unset", None, None, True),
    ("invalid: zero percent", "0%", None, True),
    ("invalid: zero", 0, None, True),
    ("valid: one", 1, None, False),
    ("valid: one percent", "1%", None, False),
    ("valid: 100%", "100%", None, False),
    ("invalid: greater than 100%", "101%", None, True),
    ("valid: surge and unavailable set", "1%", "1%", True),
    ("invalid: surge enabled, unavailable zero percent", "0%", None, True),
    ("invalid: surge enabled, unavailable zero", 0, None, True),
    ("valid: surge enabled, unavailable one", 1, None, False),
    ("valid: surge enabled, unavailable one percent", "1%", None, False),
    ("valid: surge enabled, unavailable 100%", "100%", None, False),
    ("invalid: surge enabled, unavailable greater than 100%", "101%", None, True),
    ("invalid: surge enabled, surge zero percent", None, "0%", True),
    ("invalid: surge enabled, surge zero", None, 0, True),
    ("valid: surge enabled, surge one", None, 1, False),
    ("valid: surge enabled, surge one percent", None, "1%", False),
    ("valid: surge enabled, surge 100%", None, "100%", False),
    ("invalid: surge enabled, surge greater than 100%", None, "101%", True),
    ("invalid: surge enabled, surge and unavailable set", "1%", "1%", True),
    ("invalid: surge enabled, surge and unavailable zero percent", "0%", "0%", True),
    ("invalid: surge enabled, surge and unavailable zero", 0, 0, True),
    ("invalid: surge enabled, surge and unavailable mixed zero", 0, "0%", True),
]


@pytest.mark.parametrize(("name", "unavailable", "surge", "expect_error"), _params(MAX_SURGE, "TestDaemonSetUpdateMaxSurge"))
def test_daemon_set_update_max_surge(name: str, unavailable: int | str | None, surge: int | str | None, expect_error: bool) -> None:
    rolling = RollingUpdateDaemonSet(max_unavailable=unavailable, max_surge=surge)
    errors = validation.validate_rolling_update_daemon_set(rolling, "spec.updateStrategy.rollingUpdate")
    assert bool(errors) is expect_error, errors

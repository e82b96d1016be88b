"""Kubernetes' apps validation tests for Deployments, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/apps/validation/validation_test.go`` (the same
1.30-era revision as ``test_apps_validation_upstream.py``: ``validDeployment`` and
``podtest.MakePodSpec``). Taken here, every row of TestValidateDeployment (2 success, 11 error
rows; upstream asserts that the first error contains the row's name, checked the same way) and
TestValidateDeploymentUpdate (2 success, 3 error rows; upstream asserts the error count).

18 rows: 13 pass, 5 are expected failures (:data:`EXPECTED_FAILURES`, in docs/api-server.md):
an empty name or an invalid percent string is refused when the body is decoded; apps/v1 has no
``spec.rollbackTo`` (upstream's internal type keeps it for extensions/v1beta1).

Not taken (remaining in that file): TestValidateDeploymentRollback (DeploymentRollback is not
an apps/v1 kind), TestValidateReplicaSet, TestValidateReplicaSetUpdate,
TestValidateControllerRevision(Update).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaoskube.api.manifests import ManifestError, from_dict
from chaoskube.apiserver import validation

CONTAINER = {"name": "ctr", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}
POD_SPEC = {"containers": [CONTAINER], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}


def valid_deployment(*tweaks: Any) -> dict[str, Any]:
    """``validDeployment`` (its RollbackTo has no apps/v1 field)."""
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "abc", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"name": "abc"}}, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                     "template": {"metadata": {"name": "abc", "namespace": "default", "labels": {"name": "abc"}}, "spec": copy.deepcopy(POD_SPEC)}}}
    for tweak in tweaks:
        tweak(body)
    return body


def hostnet(b: dict[str, Any]) -> None:
    b["spec"]["template"]["spec"]["hostNetwork"] = True
    b["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 12345, "protocol": "TCP"}]


def put(*path_and_value: Any) -> Any:
    *path, value = path_and_value

    def apply(b: dict[str, Any]) -> None:
        node = b
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = copy.deepcopy(value)

    return apply


# (name (upstream: a substring of the first error; or a success label), body, expect error)
VALIDATE = [
    ("success valid", valid_deployment(), False),
    ("success hostNetwork", valid_deployment(hostnet), False),
    ("metadata.name: Required value", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "", "namespace": "default"}}, True),
    ("`selector` does not match template `labels`", valid_deployment(put("spec", "selector", {"matchLabels": {"name": "def"}})), True),
    ('Unsupported value: "Never"', valid_deployment(put("spec", "template", "spec", "restartPolicy", "Never")), True),
    ('supported values: "Recreate", "RollingUpdate"', valid_deployment(put("spec", "strategy", "type", "randomType")), True),
    ("may not be specified when strategy `type` is 'Recreate'", valid_deployment(put("spec", "strategy", {"type": "Recreate", "rollingUpdate": {}})), True),
    ("a valid percent string must be", valid_deployment(put("spec", "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "20Percent"}})), True),
    ("may not be 0 when `maxSurge` is 0", valid_deployment(put("spec", "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 0}})), True),
    ("must not be greater than 100%", valid_deployment(put("spec", "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "110%"}})), True),
    ("must be greater than or equal to 0", valid_deployment(put("spec", "rollbackTo", {"revision": -3})), True),
    ("must be greater than minReadySeconds", valid_deployment(put("spec", "progressDeadlineSeconds", 600), put("spec", "minReadySeconds", 600)), True),
    ("ephemeral containers not allowed", valid_deployment(put("spec", "template", "spec", "ephemeralContainers", [{**CONTAINER, "name": "ec"}])), True),
]

NAMES = "an empty name is refused when the body is decoded, before validation (upstream: ValidateObjectMeta's / -Update's metadata.name error)"
DECODING = "an invalid percent string is refused when the body is decoded (the decoder's message), before validation"
ROLLBACK = ("apps/v1 has no spec.rollbackTo (upstream's internal Deployment keeps it for extensions/v1beta1): the field is dropped as unknown, "
            "so its negative revision is never seen")
EXPECTED_FAILURES = {
    "TestValidateDeployment/metadata.name: Required value": NAMES,
    "TestValidateDeployment/a valid percent string must be": DECODING,
    "TestValidateDeployment/must be greater than or equal to 0": ROLLBACK,
    "TestValidateDeploymentUpdate/invalid selector": NAMES,
    "TestValidateDeploymentUpdate/invalid pod": NAMES,
}


def _params(rows: list[tuple], table: str) -> list[Any]:
    out = []
    for row in rows:
        reason = EXPECTED_FAILURES.get(f"{table}/{row[0]}")
        out.append(pytest.param(*row, id=row[0], marks=[pytest.mark.xfail(strict=True, raises=(ManifestError, AssertionError), reason=reason)] if reason else []))
    return out


@pytest.mark.parametrize(("name", "body", "expect_error"), _params(VALIDATE, "TestValidateDeployment"))
def test_validate_deployment(name: str, body: dict[str, Any], expect_error: bool) -> None:
    errors = validation.validate_deployment(from_dict(copy.deepcopy(body)))
    assert bool(errors) is expect_error, errors
    if expect_error:
        assert name in errors[0], errors


LABELS = {"a": "b"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
READ_WRITE = {"metadata": {"labels": LABELS}, "spec": {**POD_SPEC, "volumes": [{"name": "gcepd", "gcePersistentDisk": {"pdName": "my-PD", "fsType": "ext4", "partition": 1, "readOnly": False}}]}}
INVALID_POD = {"metadata": {"labels": {"NoUppercaseOrSpecialCharsLike=Equals": "b"}}, "spec": {**POD_SPEC, "containers": []}}


def dep(name: str, replicas: int, template: dict[str, Any], selector: dict[str, str] = LABELS) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(selector)}, "template": copy.deepcopy(template), "strategy": {"type": "Recreate"}}}


# (name, old, update, expected error count)
UPDATE = [
    ("positive replicas", dep("abc", 0, TEMPLATE), dep("abc", 1, READ_WRITE), 0),
    ("Read-write volume verification", dep("abc", 0, TEMPLATE), dep("abc", 2, READ_WRITE), 0),
    ("invalid selector", dep("", 0, TEMPLATE), dep("abc", 2, TEMPLATE, {"NoUppercaseOrSpecialCharsLike=Equals": "b"}), 3),
    ("invalid pod", dep("", 0, TEMPLATE), dep("abc", 2, INVALID_POD), 4),
    ("negative replicas", dep("abc", 0, TEMPLATE), dep("abc", -1, READ_WRITE), 1),
]


@pytest.mark.parametrize(("name", "old", "update", "expected"), _params(UPDATE, "TestValidateDeploymentUpdate"))
def test_validate_deployment_update(name: str, old: dict[str, Any], update: dict[str, Any], expected: int) -> None:
    old_body, new_body = copy.deepcopy(old), copy.deepcopy(update)
    old_body["metadata"]["resourceVersion"], new_body["metadata"]["resourceVersion"] = "1", "2"
    errors = validation.validate_deployment_update(from_dict(new_body), from_dict(old_body))
    assert len(errors) == expected, errors

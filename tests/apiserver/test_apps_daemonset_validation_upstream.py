"""Kubernetes' apps validation tests for DaemonSets, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/apps/validation/validation_test.go`` (the same
1.30-era revision as ``test_apps_validation_upstream.py``: ``podtest.MakePodSpec`` templates).
Taken here, every row of:

* TestValidateDaemonSetStatusUpdate: 1 success, 9 error rows (upstream asserts "no error" /
  "some error");
* TestValidateDaemonSetUpdate: 7 success, 7 error rows (upstream asserts the error count);
* TestValidateDaemonSet: 3 success, 12 error rows (upstream asserts "some error", each on a
  field among its allowed prefixes, checked here the same way).

40 rows: 34 pass, 6 are expected failures (:data:`EXPECTED_FAILURES`, in docs/api-server.md):
an invalid name, metadata label or annotation, or selector key is refused when the body is
decoded (with the decoder's message), before validation runs. The internal
``spec.templateGeneration`` is apps/v1's ``deprecated.daemonset.template.generation``
annotation (as upstream's conversion carries it); the model's strategy does not maintain it,
so the server does not run the templateGeneration update rule (the ported
``validate_daemon_set_spec_update`` does, and is what these rows test).

Before this port 14 of the 34 passing rows failed (measured with a shim onto the old
``validate_create`` / ``validate_update``): the 9 status-update error rows (no DaemonSet status
validation), the 2 templateGeneration rows, the ephemeral-containers row, and 2 update rows
where the old path mixed in the apps/v1 strategy's selector immutability (upstream keeps that
in the strategy, as :func:`validation.validate_update` still does).

Not taken (remaining in that file): TestValidateControllerRevision(Update),
TestValidateDaemonSetUpdateStrategy (if present), the Deployment and ReplicaSet tables.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chaoskube.api.manifests import ManifestError, from_dict
from chaoskube.apiserver import validation

VALID = {"a": "b"}
VALID2 = {"c": "d"}
INVALID = {"NoUppercaseOrSpecialCharsLike=Equals": "b"}
GENERATION = validation.TEMPLATE_GENERATION_ANNOTATION


def ctr(name: str = "ctr", **extra: Any) -> dict[str, Any]:
    """``podtest.MakeContainer``."""
    return {"name": name, "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File", **extra}


def pod_spec(**fields: Any) -> dict[str, Any]:
    """``podtest.MakePodSpec``: one container, restartPolicy Always, dnsPolicy ClusterFirst."""
    return {"containers": [ctr()], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30, **fields}


def template(labels: dict[str, str] | None, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels)} if labels is not None else {}, "spec": spec}


ABC = template(VALID, pod_spec(containers=[ctr("abc")]))
ABC2 = template(VALID2, pod_spec(containers=[ctr("abc")]))
DEF = template(VALID2, pod_spec(containers=[ctr("def")]))
ABC_SEMANTICALLY_EQUAL = template(VALID, pod_spec(containers=[ctr("abc")], imagePullSecrets=[]))
NODE_SELECTOR = template(VALID, pod_spec(nodeSelector=dict(VALID), nodeName="xyz"))
NO_CONTAINERS = template(VALID, pod_spec(containers=[]))
READ_WRITE_VOLUME = template(VALID, pod_spec(volumes=[{"name": "gcepd", "gcePersistentDisk": {"pdName": "my-PD", "fsType": "ext4", "partition": 1, "readOnly": False}}]))
VALID_TEMPLATE = template(VALID, pod_spec())
HOSTNET = template(VALID, pod_spec(hostNetwork=True, containers=[ctr("abc", ports=[{"containerPort": 12345, "protocol": "TCP"}])]))
ON_DELETE = {"type": "OnDelete"}
ROLLING_1 = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}


def ds(name: str = "abc", namespace: str = "default", *, selector: dict[str, str] | None | dict = None, tmpl: dict[str, Any] | None = None,
       strategy: dict[str, Any] | None = None, generation: int | None = None, labels: dict[str, str] | None = None,
       annotations: dict[str, str] | None = None, status: dict[str, Any] | None = None, empty_selector: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {}), "annotations": dict(annotations or {})}
    if generation is not None:
        meta["annotations"][GENERATION] = str(generation)
    spec: dict[str, Any] = {"template": copy.deepcopy(tmpl) if tmpl is not None else {"metadata": {}, "spec": {}}, "updateStrategy": dict(strategy or {"type": ""})}
    if empty_selector:
        spec["selector"] = {}
    elif selector is not None:
        spec["selector"] = {"matchLabels": dict(selector)}
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta, "spec": spec}
    if status is not None:
        body["status"] = status
    return body


DECODING = ("labels, annotations and label-selector keys are checked when a body is decoded: the object is refused with the decoder's "
            "message before validation runs (upstream: the same refusal from ValidateObjectMeta / ValidateLabelSelector)")
NAMES = "an invalid or empty name is refused when the body is decoded, before validation (upstream: ValidateObjectMeta's metadata.name error)"
EXPECTED_FAILURES = {
    "TestValidateDaemonSetUpdate/invalid selector": DECODING,
    "TestValidateDaemonSetUpdate/change daemon name": NAMES,
    "TestValidateDaemonSet/zero-length ID": NAMES,
    "TestValidateDaemonSet/invalid_label": DECODING,
    "TestValidateDaemonSet/invalid_label 2": DECODING,
    "TestValidateDaemonSet/invalid_annotation": DECODING,
}


def _params(rows: list[tuple], table: str) -> list[Any]:
    out = []
    for row in rows:
        reason = EXPECTED_FAILURES.get(f"{table}/{row[0]}")
        out.append(pytest.param(*row, id=row[0], marks=[pytest.mark.xfail(strict=True, raises=(ManifestError, AssertionError), reason=reason)] if reason else []))
    return out


# --------------------------------------------------------------------------- status update

STATUS_OLD = {"currentNumberScheduled": 1, "numberMisscheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1, "observedGeneration": 3,
              "updatedNumberScheduled": 1, "numberAvailable": 1, "numberUnavailable": 2}
STATUS_NEW = {**STATUS_OLD, "numberMisscheduled": 1}
# (name, old status, new status, expect error)
STATUS_UPDATE = [
    ("success 0", {**STATUS_OLD, "observedGeneration": 0}, {**STATUS_NEW, "observedGeneration": 0}, False),
    ("negative values", STATUS_OLD, {"currentNumberScheduled": -1, "numberMisscheduled": -1, "desiredNumberScheduled": -3, "numberReady": -1,
                                     "observedGeneration": -3, "updatedNumberScheduled": -1, "numberAvailable": -1, "numberUnavailable": -2}, True),
    ("negative CurrentNumberScheduled", STATUS_OLD, {**STATUS_NEW, "currentNumberScheduled": -1}, True),
    ("negative NumberMisscheduled", STATUS_OLD, {**STATUS_NEW, "numberMisscheduled": -1}, True),
    ("negative DesiredNumberScheduled", STATUS_OLD, {**STATUS_NEW, "desiredNumberScheduled": -3}, True),
    ("negative NumberReady", STATUS_OLD, {**STATUS_NEW, "numberReady": -1}, True),
    ("negative ObservedGeneration", STATUS_OLD, {**STATUS_NEW, "observedGeneration": -3}, True),
    ("negative UpdatedNumberScheduled", STATUS_OLD, {**STATUS_NEW, "updatedNumberScheduled": -1}, True),
    ("negative NumberAvailable", STATUS_OLD, {**STATUS_NEW, "numberAvailable": -1}, True),
    ("negative NumberUnavailable", STATUS_OLD, {**STATUS_NEW, "numberUnavailable": -2}, True),
]


@pytest.mark.parametrize(("name", "old", "new", "expect_error"), _params(STATUS_UPDATE, "TestValidateDaemonSetStatusUpdate"))
def test_validate_daemon_set_status_update(name: str, old: dict[str, Any], new: dict[str, Any], expect_error: bool) -> None:
    errors = validation.validate_daemon_set_status_update(from_dict(ds(status=new)), from_dict(ds(status=old)))
    assert bool(errors) is expect_error, errors


# --------------------------------------------------------------------------- update

# (name, old, update, expected error count)
UPDATE = [
    ("no change", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), 0),
    ("change template and selector", ds(selector=VALID, generation=2, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID2, generation=3, tmpl=ABC2, strategy=ON_DELETE), 0),
    ("change template", ds(selector=VALID, generation=3, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=4, tmpl=NODE_SELECTOR, strategy=ON_DELETE), 0),
    ("change container image name", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID2, generation=2, tmpl=DEF, strategy=ON_DELETE), 0),
    ("change update strategy", ds(selector=VALID, generation=4, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=4, tmpl=ABC, strategy=ROLLING_1), 0),
    ("unchanged templateGeneration upon semantically equal template update", ds(selector=VALID, generation=4, tmpl=ABC, strategy=ON_DELETE),
     ds(selector=VALID, generation=4, tmpl=ABC_SEMANTICALLY_EQUAL, strategy=ROLLING_1), 0),
    ("Read-write volume verification", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=2, tmpl=READ_WRITE_VOLUME, strategy=ON_DELETE), 0),
    ("change daemon name", ds("", selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), 1),
    ("invalid selector", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=INVALID, generation=1, tmpl=ABC, strategy=ON_DELETE), 1),
    ("invalid pod", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=2, tmpl=NO_CONTAINERS, strategy=ON_DELETE), 1),
    ("invalid update strategy", ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=1, tmpl=ABC, strategy={"type": "Random"}), 1),
    ("negative templateGeneration", ds(selector=VALID, generation=-1, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=-1, tmpl=ABC, strategy=ON_DELETE), 1),
    ("decreased templateGeneration", ds(selector=VALID, generation=2, tmpl=ABC, strategy=ON_DELETE), ds(selector=VALID, generation=1, tmpl=ABC, strategy=ON_DELETE), 1),
    ("unchanged templateGeneration upon template update", ds(selector=VALID, generation=2, tmpl=ABC, strategy=ON_DELETE),
     ds(selector=VALID2, generation=2, tmpl=ABC2, strategy=ON_DELETE), 1),
]


@pytest.mark.parametrize(("name", "old", "update", "expected"), _params(UPDATE, "TestValidateDaemonSetUpdate"))
def test_validate_daemon_set_update(name: str, old: dict[str, Any], update: dict[str, Any], expected: int) -> None:
    old_body, new_body = copy.deepcopy(old), copy.deepcopy(update)
    old_body["metadata"]["resourceVersion"], new_body["metadata"]["resourceVersion"] = "1", "2"
    errors = validation.validate_daemon_set_update(from_dict(new_body), from_dict(old_body))
    assert len(errors) == expected, errors


# --------------------------------------------------------------------------- create

# (name, object, expect error)
CREATE = [
    ("success abc", ds(selector=VALID, tmpl=VALID_TEMPLATE, strategy=ON_DELETE), False),
    ("success abc-123", ds("abc-123", selector=VALID, tmpl=VALID_TEMPLATE, strategy=ON_DELETE), False),
    ("success hostnet", ds("hostnet", selector=VALID, tmpl=HOSTNET, strategy=ON_DELETE), False),
    ("zero-length ID", ds("", selector=VALID, tmpl=VALID_TEMPLATE), True),
    ("missing-namespace", ds("abc-123", "", selector=VALID, tmpl=VALID_TEMPLATE), True),
    ("nil selector", ds(tmpl=VALID_TEMPLATE), True),
    ("empty selector", ds(empty_selector=True, tmpl=VALID_TEMPLATE), True),
    ("selector_doesnt_match", ds(selector={"foo": "bar"}, tmpl=VALID_TEMPLATE), True),
    ("invalid template", ds(selector=VALID), True),
    ("invalid_label", ds("abc-123", selector=VALID, tmpl=VALID_TEMPLATE, labels={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid_label 2", ds("abc-123", tmpl=template(None, pod_spec()), labels={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid_annotation", ds("abc-123", selector=VALID, tmpl=VALID_TEMPLATE, annotations={"NoUppercaseOrSpecialCharsLike=Equals": "bar"}), True),
    ("invalid restart policy 1", ds("abc-123", selector=VALID, tmpl=template(None, pod_spec(restartPolicy="OnFailure"))), True),
    ("invalid restart policy 2", ds("abc-123", selector=VALID, tmpl=template(None, pod_spec(restartPolicy="Never"))), True),
    ("template may not contain ephemeral containers",
     ds(selector=VALID, tmpl=template(VALID, pod_spec(ephemeralContainers=[{"name": "debug", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}])),
        strategy=ON_DELETE), True),
]

#: upstream's check: every error's field starts with one of these, or is one of these
PREFIXES = ("spec.template.", "spec.updateStrategy")
FIELDS = ("metadata.name", "metadata.namespace", "spec.selector", "spec.template", "GCEPersistentDisk.ReadOnly", "spec.template.labels",
          "metadata.annotations", "metadata.labels")


@pytest.mark.parametrize(("name", "body", "expect_error"), _params(CREATE, "TestValidateDaemonSet"))
def test_validate_daemon_set(name: str, body: dict[str, Any], expect_error: bool) -> None:
    errors = validation.validate_daemon_set(from_dict(copy.deepcopy(body)))
    assert bool(errors) is expect_error, errors
    for error in errors:
        field = error.split(": ", 1)[0]
        assert field.startswith(PREFIXES) or field in FIELDS, error


def test_server_keeps_selector_immutable_and_skips_template_generation() -> None:
    """The server path: apps/v1's strategy refuses a changed selector; templateGeneration is
    not maintained by the model, so a template change without the annotation is accepted."""
    old = from_dict(ds(selector=VALID, tmpl=ABC, strategy=ROLLING_1))
    changed_template = from_dict(ds(selector=VALID, tmpl=template(VALID, pod_spec(containers=[ctr("xyz")])), strategy=ROLLING_1))
    assert validation.validate_update(old, changed_template) == []
    changed_selector = from_dict(ds(selector=VALID2, tmpl=ABC2, strategy=ROLLING_1))
    assert [error.split(": ", 1)[0] for error in validation.validate_update(old, changed_selector)] == ["spec.selector"]

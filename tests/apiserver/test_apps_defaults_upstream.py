"""Kubernetes' apps defaulting tests, transcribed as data.

Upstream: kubernetes/kubernetes ``pkg/apis/apps/v1beta2/defaults_test.go`` (the 1.30-era
revision with the ``MaxUnavailableStatefulSet`` and ``StatefulSetAutoDeletePVC`` gates). The
``SetDefaults_DaemonSet`` / ``_StatefulSet`` / ``_Deployment`` / ``_ReplicaSet`` it tests are
line for line those of ``pkg/apis/apps/v1/defaults.go`` (the apps/v1 test file itself was
not in the stored index; its tables are the same ones). Every table:

- TestSetDefaultDaemonSetSpec: 4 rows; TestSetDefaultStatefulSet: 9 rows (each with its gate
  values); TestSetDefaultDeployment: 5 rows; TestDefaultDeploymentAvailability: 1;
  TestSetDefaultReplicaSetReplicas: 3 rows; TestDefaultRequestIsNotSetForReplicaSet: 1.

Upstream compares the whole spec after a round trip (``Semantic.DeepEqual``); here the
workload's own fields are compared, and of the template the five pod-spec defaults the
expected template holds (DNS policy, restart policy, securityContext, grace period,
scheduler name; the model's pod-spec defaulting sets the same ones, tested elsewhere).

23 rows: 23 pass. Fixed here: a StatefulSet with an explicit RollingUpdate type and no
rollingUpdate block got one (upstream makes it only when it defaults the type), and the
PVC retention policy and maxUnavailable ignored their gates (8 StatefulSet rows failed).
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import scaled_value
from chaoskube.apiserver import admission

LABELS = {"foo": "bar"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
TEMPLATE_NO_LABEL = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
TEMPLATE_DEFAULTS = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {}, "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"}


def obj(kind: str, spec: dict[str, Any], labels: dict[str, str] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": "x", "namespace": "default"}
    if labels:
        metadata["labels"] = labels
    return from_dict({"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": copy.deepcopy(spec)})


def _spec(o: Any) -> dict[str, Any]:
    body = msgspec.to_builtins(o.spec)
    template = body.pop("template", {})
    pod_spec = template.get("spec", {})
    assert {key: pod_spec.get(key) for key in TEMPLATE_DEFAULTS} == TEMPLATE_DEFAULTS
    body.pop("selector", None)
    return body


DS_ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
# (name, spec, labels, expected spec without template)
DAEMON_SET = [
    ("Labels change/defaulting test", {"template": TEMPLATE}, None, {"updateStrategy": DS_ROLLING, "revisionHistoryLimit": 10}),
    ("Labels change/defaulting test 2", {"template": TEMPLATE, "revisionHistoryLimit": 1}, {"bar": "foo"}, {"updateStrategy": DS_ROLLING, "revisionHistoryLimit": 1}),
    ("OnDeleteDaemonSetStrategyType update strategy", {"template": TEMPLATE_NO_LABEL, "updateStrategy": {"type": "OnDelete"}}, None,
     {"updateStrategy": {"type": "OnDelete"}, "revisionHistoryLimit": 10}),
    ("Custom unique label key", {}, None, {"updateStrategy": DS_ROLLING, "revisionHistoryLimit": 10}),
]


@pytest.mark.parametrize(("name", "spec", "labels", "expected"), DAEMON_SET, ids=[row[0] for row in DAEMON_SET])
def test_set_default_daemon_set_spec(name: str, spec: dict[str, Any], labels: dict[str, str] | None, expected: dict[str, Any]) -> None:
    o = obj("DaemonSet", spec, labels)
    admission._default_daemon_set(o)
    assert _spec(o) == expected


def sts(update_strategy: dict[str, Any], policy: str = "OrderedReady", pvc: bool = False) -> dict[str, Any]:
    body = {"replicas": 1, "podManagementPolicy": policy, "updateStrategy": update_strategy, "revisionHistoryLimit": 10}
    if pvc:
        body["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Retain", "whenScaled": "Retain"}
    return body


ROLLING_0 = {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
# (name, spec, expected, MaxUnavailableStatefulSet, StatefulSetAutoDeletePVC)
STATEFUL_SET = [
    ("labels and default update strategy", {"template": TEMPLATE}, sts(ROLLING_0), False, False),
    ("Alternate update strategy", {"template": TEMPLATE, "updateStrategy": {"type": "OnDelete"}}, sts({"type": "OnDelete"}), False, False),
    ("Parallel pod management policy.", {"template": TEMPLATE, "podManagementPolicy": "Parallel"}, sts(ROLLING_0, "Parallel"), False, False),
    ("MaxUnavailable disabled, with maxUnavailable not specified", {"template": TEMPLATE}, sts(ROLLING_0), False, False),
    ("MaxUnavailable disabled, with default maxUnavailable specified", {"template": TEMPLATE, "updateStrategy": {"rollingUpdate": {"partition": 0, "maxUnavailable": 1}}},
     sts({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}), False, False),
    ("MaxUnavailable disabled, with non default maxUnavailable specified", {"template": TEMPLATE, "updateStrategy": {"rollingUpdate": {"partition": 42, "maxUnavailable": 3}}},
     sts({"type": "RollingUpdate", "rollingUpdate": {"partition": 42, "maxUnavailable": 3}}), False, False),
    ("MaxUnavailable enabled, with no maxUnavailable specified", {"template": TEMPLATE}, sts({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}), True, False),
    ("MaxUnavailable enabled, with non default maxUnavailable specified", {"template": TEMPLATE, "updateStrategy": {"rollingUpdate": {"partition": 42, "maxUnavailable": 3}}},
     sts({"type": "RollingUpdate", "rollingUpdate": {"partition": 42, "maxUnavailable": 3}}), True, False),
    ("StatefulSetAutoDeletePVC enabled", {"template": TEMPLATE}, sts(ROLLING_0, pvc=True), False, True),
]


@pytest.mark.parametrize(("name", "spec", "expected", "max_unavailable", "auto_delete"), STATEFUL_SET, ids=[row[0] for row in STATEFUL_SET])
def test_set_default_stateful_set(name: str, spec: dict[str, Any], expected: dict[str, Any], max_unavailable: bool, auto_delete: bool) -> None:
    o = obj("StatefulSet", spec)
    admission._default_stateful_set(o, max_unavailable_stateful_set=max_unavailable, stateful_set_auto_delete_pvc=auto_delete)
    got = _spec(o)
    got.pop("minReadySeconds", None)  # int32(0) both ways
    assert got == expected


def deployment(replicas: int, strategy: dict[str, Any], history: int = 10, deadline: int = 600) -> dict[str, Any]:
    return {"replicas": replicas, "strategy": strategy, "revisionHistoryLimit": history, "progressDeadlineSeconds": deadline}


DEPLOYMENT = [
    ("0", {}, deployment(1, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})),
    ("1", {"replicas": 5, "strategy": {"rollingUpdate": {"maxSurge": 5}}}, deployment(5, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 5, "maxUnavailable": "25%"}})),
    ("2", {"replicas": 3, "strategy": {"type": "RollingUpdate"}}, deployment(3, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}})),
    ("3", {"replicas": 5, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0}, deployment(5, {"type": "Recreate"}, history=0)),
    ("4", {"replicas": 5, "strategy": {"type": "Recreate"}, "progressDeadlineSeconds": 30, "revisionHistoryLimit": 2}, deployment(5, {"type": "Recreate"}, history=2, deadline=30)),
]


@pytest.mark.parametrize(("name", "spec", "expected"), DEPLOYMENT, ids=[row[0] for row in DEPLOYMENT])
def test_set_default_deployment(name: str, spec: dict[str, Any], expected: dict[str, Any]) -> None:
    o = obj("Deployment", {"template": TEMPLATE_NO_LABEL, **spec})
    admission._default_deployment(o)
    got = _spec(o)
    got.pop("minReadySeconds", None)
    got.pop("paused", None)
    assert got == expected


def test_default_deployment_availability() -> None:
    o = obj("Deployment", {"template": TEMPLATE_NO_LABEL})
    admission._default_deployment(o)
    max_unavailable = scaled_value(o.spec.strategy.rolling_update.max_unavailable, o.spec.replicas, round_up=False)
    assert o.spec.replicas - max_unavailable > 0, "the default value of maxUnavailable can lead to no active replicas during rolling update"


@pytest.mark.parametrize(("replicas", "expected"), [(None, 1), (0, 0), (3, 3)], ids=["unset", "0", "3"])
def test_set_default_replica_set_replicas(replicas: int | None, expected: int) -> None:
    spec: dict[str, Any] = {"template": {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    o = obj("ReplicaSet", spec)
    admission._default_replica_set(o)
    assert o.spec.replicas == expected


def test_default_request_is_not_set_for_replica_set() -> None:
    o = obj("ReplicaSet", {"replicas": 3, "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "100m"}}}]}}})
    admission._default_replica_set(o)
    assert "cpu" not in o.spec.template.spec.containers[0].resources.requests  # a request's zero value: "0"

"""Taints and tolerations as upstream tests them, transcribed as data.

Upstream (kubernetes/kubernetes):

- ``staging/src/k8s.io/api/core/v1/toleration_test.go`` (master, with the alpha
  ``TaintTolerationComparisonOperators`` Gt/Lt): TestTolerationToleratesTaint, 14 rows (each
  with its gate value), and TestCompareNumericValues, 30 rows. Its first six rows are also
  the whole TestTolerationToleratesTaint of earlier releases (``pkg/apis/core/v1/helper`` /
  ``k8s.io/api/core/v1`` up to v1.34).
- ``staging/src/k8s.io/api/core/v1/toleration_test.go`` / ``pkg/apis/core/v1/helper/helpers_test.go``:
  TestTolerationsTolerateTaintsWithFilter, 6 rows.
- ``pkg/apis/core/validation/validation_test.go`` at 1467b588060812a11c3e556f645ce0a949bb4b36,
  TestValidatePod's toleration rows: 7 success cases (lines 9646-9695) and 5 error cases
  (lines 10465-10506; the aggregate error must contain the field path).

62 rows: 62 pass. Fixed here: the model had three copies of ToleratesTaint, none with Gt/Lt
(the 8 gated rows and the 21 valid-value rows of TestCompareNumericValues failed: there was
no compareNumericValues), and validated no toleration at all (the 5 error rows failed: a
toleration with operator "In", a bad key, an Exists with a value, an empty key with Equal,
or tolerationSeconds without NoExecute were accepted; so was Gt/Lt, which upstream refuses
unless the alpha gate is on).
"""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import Taint, Toleration
from chaoskube.api.workloads import compare_numeric_values, toleration_tolerates_taint, tolerations_tolerate_taints_with_filter
from chaoskube.apiserver.validation import validate_create, validate_tolerations

SLA = "node.kubernetes.io/sla"

# (description, toleration, taint, expect tolerated, gate)
TOLERATES_TAINT = [
    ("toleration and taint have the same key and effect, and operator is Exists, and taint has no value, expect tolerated",
     Toleration(key="foo", operator="Exists", effect="NoSchedule"), Taint(key="foo", effect="NoSchedule"), True, False),
    ("toleration and taint have the same key and effect, and operator is Exists, and taint has some value, expect tolerated",
     Toleration(key="foo", operator="Exists", effect="NoSchedule"), Taint(key="foo", value="bar", effect="NoSchedule"), True, False),
    ("toleration and taint have the same effect, toleration has empty key and operator is Exists, means match all taints, expect tolerated",
     Toleration(key="", operator="Exists", effect="NoSchedule"), Taint(key="foo", value="bar", effect="NoSchedule"), True, False),
    ("toleration and taint have the same key, effect and value, and operator is Equal, expect tolerated",
     Toleration(key="foo", operator="Equal", value="bar", effect="NoSchedule"), Taint(key="foo", value="bar", effect="NoSchedule"), True, False),
    ("toleration and taint have the same key and effect, but different values, and operator is Equal, expect not tolerated",
     Toleration(key="foo", operator="Equal", value="value1", effect="NoSchedule"), Taint(key="foo", value="value2", effect="NoSchedule"), False, False),
    ("toleration and taint have the same key and value, but different effects, and operator is Equal, expect not tolerated",
     Toleration(key="foo", operator="Equal", value="bar", effect="NoSchedule"), Taint(key="foo", value="bar", effect="NoExecute"), False, False),
    ("toleration with Gt operator - taint value less than toleration value, expect not tolerated",
     Toleration(key=SLA, operator="Gt", value="950", effect="NoSchedule"), Taint(key=SLA, value="800", effect="NoSchedule"), False, True),
    ("toleration with Gt operator - taint value greater than toleration value, expect tolerated",
     Toleration(key=SLA, operator="Gt", value="750", effect="NoSchedule"), Taint(key=SLA, value="950", effect="NoSchedule"), True, True),
    ("toleration with Lt operator - taint value greater than toleration value, expect not tolerated",
     Toleration(key=SLA, operator="Lt", value="800", effect="NoSchedule"), Taint(key=SLA, value="950", effect="NoSchedule"), False, True),
    ("toleration with Lt operator - taint value less than toleration value, expect tolerated",
     Toleration(key=SLA, operator="Lt", value="950", effect="NoSchedule"), Taint(key=SLA, value="800", effect="NoSchedule"), True, True),
    ("toleration with Gt operator and taint with equal numeric value, expect not tolerated",
     Toleration(key=SLA, operator="Gt", value="950", effect="NoSchedule"), Taint(key=SLA, value="950", effect="NoSchedule"), False, True),
    ("toleration with Gt operator and taint with non-numeric value, expect not tolerated",
     Toleration(key=SLA, operator="Gt", value="950", effect="NoSchedule"), Taint(key=SLA, value="high", effect="NoSchedule"), False, True),
    ("toleration with Gt operator and negative numeric values - taint value less than threshold, expect not tolerated",
     Toleration(key="test-key", operator="Gt", value="-100", effect="NoSchedule"), Taint(key="test-key", value="-200", effect="NoSchedule"), False, True),
    ("toleration with Gt operator and large int64 values - taint value less than threshold, expect not tolerated",
     Toleration(key="test-key", operator="Gt", value="9223372036854775806", effect="NoSchedule"), Taint(key="test-key", value="100", effect="NoSchedule"), False, True),
]


@pytest.mark.parametrize(("description", "toleration", "taint", "expected", "gate"), TOLERATES_TAINT, ids=[row[0] for row in TOLERATES_TAINT])
def test_toleration_tolerates_taint(description: str, toleration: Toleration, taint: Taint, expected: bool, gate: bool) -> None:
    assert toleration_tolerates_taint(toleration, taint, gate) is expected


# (description, toleration value, taint value, operator, expected)
COMPARE_NUMERIC_VALUES = [
    ("Gt operator - taint value greater than toleration value, expect true", "100", "200", "Gt", True),
    ("Gt operator - taint value less than toleration value, expect false", "200", "100", "Gt", False),
    ("Gt operator - taint value equal to toleration value, expect false", "100", "100", "Gt", False),
    ("Gt operator - negative numbers, taint greater, expect true", "-100", "-50", "Gt", True),
    ("Gt operator - negative numbers, taint less, expect false", "-50", "-100", "Gt", False),
    ("Gt operator - zero and positive, expect true", "0", "1", "Gt", True),
    ("Gt operator - large int64 values, taint greater, expect true", "9223372036854775806", "9223372036854775807", "Gt", True),
    ("Lt operator - taint value less than toleration value, expect true", "200", "100", "Lt", True),
    ("Lt operator - taint value greater than toleration value, expect false", "100", "200", "Lt", False),
    ("Lt operator - taint value equal to toleration value, expect false", "100", "100", "Lt", False),
    ("Lt operator - negative numbers, taint less, expect true", "-50", "-100", "Lt", True),
    ("Lt operator - negative numbers, taint greater, expect false", "-100", "-50", "Lt", False),
    ("Lt operator - zero and negative, expect true", "0", "-1", "Lt", True),
    ("Gt operator - invalid toleration value (non-numeric), expect false", "abc", "100", "Gt", False),
    ("Gt operator - invalid toleration value (empty string), expect false", "", "100", "Gt", False),
    ("Gt operator - invalid toleration value (leading zero), expect false", "0100", "200", "Gt", False),
    ("Gt operator - invalid toleration value (plus sign), expect false", "+100", "200", "Gt", False),
    ("Gt operator - invalid toleration value (floating point), expect false", "100.5", "200", "Gt", False),
    ("Gt operator - invalid toleration value (just minus sign), expect false", "-", "100", "Gt", False),
    ("Gt operator - invalid taint value (non-numeric), expect false", "100", "xyz", "Gt", False),
    ("Gt operator - invalid taint value (empty string), expect false", "100", "", "Gt", False),
    ("Gt operator - invalid taint value (leading zero), expect false", "100", "0200", "Gt", False),
    ("Lt operator - invalid taint value (plus sign), expect false", "100", "+200", "Lt", False),
    ("Lt operator - invalid taint value (spaces), expect false", "100", " 200 ", "Lt", False),
    ("Equal operator (unsupported for numeric comparison), expect false", "100", "100", "Equal", False),
    ("Exists operator (unsupported for numeric comparison), expect false", "100", "100", "Exists", False),
    ("Gt operator - both zero, expect false", "0", "0", "Gt", False),
    ("Lt operator - both zero, expect false", "0", "0", "Lt", False),
    ("Gt operator - max int64 as taint, expect true", "0", "9223372036854775807", "Gt", True),
    ("Lt operator - min int64 as taint, expect true", "0", "-9223372036854775808", "Lt", True),
]


@pytest.mark.parametrize(("description", "toleration_value", "taint_value", "operator", "expected"), COMPARE_NUMERIC_VALUES, ids=[row[0] for row in COMPARE_NUMERIC_VALUES])
def test_compare_numeric_values(description: str, toleration_value: str, taint_value: str, operator: str, expected: bool) -> None:
    assert compare_numeric_values(toleration_value, taint_value, operator) is expected


FOO_EXISTS = Toleration(key="foo", operator="Exists", effect="NoSchedule")
# (description, tolerations, taints, filter, expect tolerated)
WITH_FILTER = [
    ("empty tolerations tolerate empty taints", [], [], lambda taint: True, True),
    ("non-empty tolerations tolerate empty taints", [FOO_EXISTS], [], lambda taint: True, True),
    ("tolerations match all taints, expect tolerated", [FOO_EXISTS], [Taint(key="foo", effect="NoSchedule")], lambda taint: True, True),
    ("tolerations don't match taints, but no taints apply to the filter, expect tolerated", [FOO_EXISTS], [Taint(key="bar", effect="NoSchedule")], lambda taint: False, True),
    ("no filterFunc indicated, means all taints apply to the filter, tolerations don't match taints, expect untolerated",
     [FOO_EXISTS], [Taint(key="bar", effect="NoSchedule")], None, False),
    ("tolerations match taints, expect tolerated", [Toleration(key="foo", operator="Exists", effect="NoExecute")],
     [Taint(key="foo", effect="NoExecute"), Taint(key="bar", effect="NoSchedule")], lambda taint: taint.effect == "NoExecute", True),
]


@pytest.mark.parametrize(("description", "tolerations", "taints", "apply_filter", "expected"), WITH_FILTER, ids=[row[0] for row in WITH_FILTER])
def test_tolerations_tolerate_taints_with_filter(description: str, tolerations: list[Toleration], taints: list[Taint], apply_filter: Any, expected: bool) -> None:
    assert tolerations_tolerate_taints_with_filter(tolerations, taints, apply_filter) is expected


def pod(tolerations: list[dict[str, Any]], name: str = "123") -> Any:
    """``extendPodSpecwithTolerations(validPodSpec(nil), ...)``."""
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                      "spec": {"containers": [{"name": "ctr", "image": "image", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}],
                               "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "tolerations": tolerations}})


VALIDATE_POD_SUCCESS = [
    ("populate forgiveness tolerations with exists operator in annotations.", [{"key": "foo", "operator": "Exists", "value": "", "effect": "NoExecute", "tolerationSeconds": 60}]),
    ("populate forgiveness tolerations with equal operator in annotations.", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute", "tolerationSeconds": 60}]),
    ("populate tolerations equal operator in annotations.", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}]),
    ("empty key with Exists operator is OK for toleration, empty toleration key means match all taint keys.", [{"operator": "Exists", "effect": "NoSchedule"}]),
    ("empty operator is OK for toleration, defaults to Equal.", [{"key": "foo", "value": "bar", "effect": "NoSchedule"}]),
    ("empty effect is OK for toleration, empty toleration effect means match all taint effects.", [{"key": "foo", "operator": "Equal", "value": "bar"}]),
    ("negative tolerationSeconds is OK for toleration.", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -2}]),
]


@pytest.mark.parametrize(("description", "tolerations"), VALIDATE_POD_SUCCESS, ids=[row[0] for row in VALIDATE_POD_SUCCESS])
def test_validate_pod_tolerations_success(description: str, tolerations: list[dict[str, Any]]) -> None:
    assert validate_create(pod(tolerations)) == []


VALIDATE_POD_ERRORS = [
    ("invalid toleration key", [{"key": "nospecialchars^=@", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}], "spec.tolerations[0].key"),
    ("invalid toleration operator", [{"key": "foo", "operator": "In", "value": "bar", "effect": "NoSchedule"}], "spec.tolerations[0].operator"),
    ("value must be empty when `operator` is 'Exists'", [{"key": "foo", "operator": "Exists", "value": "bar", "effect": "NoSchedule"}], "spec.tolerations[0].operator"),
    ("operator must be 'Exists' when `key` is empty", [{"operator": "Equal", "value": "bar", "effect": "NoSchedule"}], "spec.tolerations[0].operator"),
    ("effect must be 'NoExecute' when `TolerationSeconds` is set",
     [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 20}], "spec.tolerations[0].effect"),
]


@pytest.mark.parametrize(("description", "tolerations", "expected_error"), VALIDATE_POD_ERRORS, ids=[row[0] for row in VALIDATE_POD_ERRORS])
def test_validate_pod_tolerations_errors(description: str, tolerations: list[dict[str, Any]], expected_error: str) -> None:
    errors = validate_create(pod(tolerations))
    assert errors, "expected failure"
    assert expected_error in ", ".join(errors), errors


@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_comparison_operators_are_refused_while_their_alpha_gate_is_off(operator: str) -> None:
    """Upstream's default: the gate is off, so Gt/Lt is an unsupported operator (the model
    accepted it and then tolerated nothing with it)."""
    toleration = {"key": SLA, "operator": operator, "value": "900", "effect": "NoSchedule"}
    assert validate_create(pod([toleration])) == [f'spec.tolerations[0].operator: Unsupported value: "{operator}": supported values: "Equal", "Exists"']
    assert validate_tolerations([Toleration(**toleration)], "spec.tolerations", comparison_operators=True) == []

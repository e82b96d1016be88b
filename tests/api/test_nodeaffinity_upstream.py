"""Node affinity as upstream tests it, transcribed as data.

Upstream (kubernetes/kubernetes):

- ``staging/src/k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go``:
  TestNodeSelectorMatch (5 rows), TestPreferredSchedulingTermsScore (3),
  TestNodeSelectorRequirementsAsSelector (6), TestPodMatchesNodeSelectorAndAffinityTerms (27);
- ``pkg/apis/core/validation/validation_test.go`` at 1467b588060812a11c3e556f645ce0a949bb4b36,
  the node selector rows of TestValidatePod, as ``ValidateNodeSelector`` sees them: 2 success
  rows (lines 9458, 9508) and 6 error rows (lines 10089-10218; the aggregate error must
  contain the field path).

49 rows: 49 pass. Fixed here: a term whose requirement does not parse (an invalid label
value or key, Exists with values, Gt/Lt without exactly one integer, a field requirement
without exactly one value) matched anyway (it matches nothing upstream; 4 rows failed:
"invalid value in Affinity term", and NewNodeSelector / NewPreferredSchedulingTerms /
nodeSelectorRequirementsAsSelector reported no errors), a field requirement on another key
than metadata.name never matched, and the API server validated no node affinity at all (the
6 error rows failed: In without values, Exists with values, Gt/Lt without one value, an
invalid key, field selectors with two values, another operator or key, and no terms were
all accepted; an unknown operator was refused at decoding with the model's own words).
"""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import Node, NodeSelectorRequirement, ObjectMeta
from chaoskube.api.workloads import new_node_selector_errors, node_selector_matches, node_selector_requirements_as_selector, pod_fits_node_affinity, preferred_scheduling_terms_score
from chaoskube.apiserver.validation import validate_node_selector

NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
             "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def req(key: str, operator: str, *values: str) -> dict[str, Any]:
    body: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        body["values"] = list(values)
    return body


def pod(node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def selector(*terms: dict[str, Any]) -> Any:
    return pod(affinity=required(*terms)).spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution


def node(name: str = "", labels: dict[str, str] | None = None) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels=labels or {}))


HOST_1 = req("metadata.name", "In", "host_1")
LABEL_1 = req("label_1", "In", "label_1_val")
INVALID_TERMS = [{"matchFields": [req("metadata.name", "In", "host_1", "host_2")]}, {"matchExpressions": [LABEL_1], "matchFields": [HOST_1]},
                 {"matchExpressions": [req("invalid key", "In", "label_value")]}]

# (name, terms or None for a nil node, node, want errors, want match)
NODE_SELECTOR_MATCH = [
    ("nil node", [{"matchExpressions": [LABEL_1]}], None, [], False),
    ("invalid field selector and label selector", INVALID_TERMS, None,
     [("Invalid value", "nodeSelectorTerms[0].matchFields[0].values", "must have one element"), ("Invalid value", "nodeSelectorTerms[2].matchExpressions[0].key", NAME_PART)], False),
    ("node matches field selector, but not labels", [{"matchExpressions": [LABEL_1], "matchFields": [HOST_1]}], node("host_1"), [], False),
    ("node matches field selector and label selector", [{"matchExpressions": [LABEL_1], "matchFields": [HOST_1]}], node("host_1", {"label_1": "label_1_val"}), [], True),
    ("second term matches", [{"matchExpressions": [LABEL_1]}, {"matchFields": [HOST_1]}], node("host_1"), [], True),
]


@pytest.mark.parametrize(("name", "terms", "the_node", "errors", "match"), NODE_SELECTOR_MATCH, ids=[row[0] for row in NODE_SELECTOR_MATCH])
def test_node_selector_match(name: str, terms: list[dict[str, Any]], the_node: Node | None, errors: list[tuple[str, str, str]], match: bool) -> None:
    parsed = selector(*terms)
    assert new_node_selector_errors(parsed) == errors
    if errors:
        return
    got = the_node is not None and node_selector_matches(parsed, the_node.metadata.name, the_node.metadata.labels)
    assert got is match


def preferred(*terms: tuple[int, dict[str, Any]]) -> list[Any]:
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "preference": preference} for weight, preference in terms]}}
    return pod(affinity=affinity).spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution


PREFERRED_SCORE = [
    ("invalid field selector and label selector", preferred(*((1, term) for term in INVALID_TERMS)), None,
     [("Invalid value", "[0].matchFields[0].values", "must have one element"), ("Invalid value", "[2].matchExpressions[0].key", NAME_PART)], 0),
    ("invalid field selector but no weight, error not reported", preferred((0, {"matchFields": [req("metadata.name", "In", "host_1", "host_2")]})), node("host_1"), [], 0),
    ("first and third term match", preferred((5, {"matchFields": [HOST_1]}), (7, {"matchExpressions": [req("unknown_label", "In", "unknown_label_val")]}), (11, {"matchExpressions": [LABEL_1]})),
     node("host_1", {"label_1": "label_1_val"}), [], 16),
]


@pytest.mark.parametrize(("name", "terms", "the_node", "errors", "score"), PREFERRED_SCORE, ids=[row[0] for row in PREFERRED_SCORE])
def test_preferred_scheduling_terms_score(name: str, terms: list[Any], the_node: Node | None, errors: list[tuple[str, str, str]], score: int) -> None:
    the_node = the_node or node()
    got_score, got_errors = preferred_scheduling_terms_score(terms, the_node.metadata.name, the_node.metadata.labels)
    assert got_errors == errors
    if not errors:
        assert got_score == score


def requirement(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=list(values))


# (in, out as (key, operator, sorted values) or None for labels.Nothing(), errors)
AS_SELECTOR = [
    (None, None, []),
    ([], None, []),
    ([requirement("foo", "In", "bar", "baz")], [("foo", "In", ("bar", "baz"))], []),
    ([requirement("foo", "Exists", "bar", "baz")], None, [("Invalid value", "root[0].values", "values set must be empty for exists and does not exist")]),
    ([requirement("foo", "Gt", "1")], [("foo", "Gt", ("1",))], []),
    ([requirement("bar", "Lt", "7")], [("bar", "Lt", ("7",))], []),
]


@pytest.mark.parametrize(("requirements", "out", "errors"), AS_SELECTOR, ids=[str(i) for i in range(len(AS_SELECTOR))])
def test_node_selector_requirements_as_selector(requirements: list[NodeSelectorRequirement] | None, out: list[tuple] | None, errors: list[tuple[str, str, str]]) -> None:
    got, got_errors = node_selector_requirements_as_selector(requirements, "root")
    assert got_errors == errors
    assert (None if got is None else [(r.key, r.operator, tuple(sorted(r.values))) for r in got]) == out


GPU_EXISTS = req("GPU", "Exists")
# (name, pod, node labels, node name, want)
POD_MATCHES = [
    ("no selector", pod(), None, "", True),
    ("missing labels", pod({"foo": "bar"}), None, "", False),
    ("same labels", pod({"foo": "bar"}), {"foo": "bar"}, "", True),
    ("node labels are superset", pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, "", False),
    ("Pod with matchExpressions using In operator that matches the existing node", pod(affinity=required({"matchExpressions": [req("foo", "In", "bar", "value2")]})), {"foo": "bar"}, "", True),
    ("Pod with matchExpressions using Gt operator that matches the existing node", pod(affinity=required({"matchExpressions": [req("kernel-version", "Gt", "0204")]})),
     {"kernel-version": "0206"}, "", True),
    ("Pod with matchExpressions using NotIn operator that matches the existing node", pod(affinity=required({"matchExpressions": [req("mem-type", "NotIn", "DDR", "DDR2")]})),
     {"mem-type": "DDR3"}, "", True),
    ("Pod with matchExpressions using Exists operator that matches the existing node", pod(affinity=required({"matchExpressions": [GPU_EXISTS]})), {"GPU": "NVIDIA-GRID-K1"}, "", True),
    ("Pod with affinity that don't match node's labels won't schedule onto the node", pod(affinity=required({"matchExpressions": [req("foo", "In", "value1", "value2")]})),
     {"foo": "bar"}, "", False),
    ("Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node", pod(affinity=required()), {"foo": "bar"}, "", False),
    ("Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node", pod(affinity=required()), {"foo": "bar"}, "", False),
    ("Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node", pod(affinity=required({"matchExpressions": []})),
     {"foo": "bar"}, "", False),
    ("Pod with no Affinity will schedule onto a node", pod(), {"foo": "bar"}, "", True),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node", pod(affinity={"nodeAffinity": {}}), {"foo": "bar"}, "", True),
    ("Pod with multiple matchExpressions ANDed that matches the existing node", pod(affinity=required({"matchExpressions": [GPU_EXISTS, req("GPU", "NotIn", "AMD", "INTER")]})),
     {"GPU": "NVIDIA-GRID-K1"}, "", True),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node", pod(affinity=required({"matchExpressions": [GPU_EXISTS, req("GPU", "In", "AMD", "INTER")]})),
     {"GPU": "NVIDIA-GRID-K1"}, "", False),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
     pod(affinity=required({"matchExpressions": [req("foo", "In", "bar", "value2")]}, {"matchExpressions": [req("diffkey", "In", "wrong", "value2")]})), {"foo": "bar"}, "", True),
    ("Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
     pod({"foo": "bar"}, required({"matchExpressions": [req("foo", "Exists")]})), {"foo": "bar"}, "", True),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
     pod({"foo": "bar"}, required({"matchExpressions": [req("foo", "Exists")]})), {"foo": "barrrrrr"}, "", False),
    ("Pod with an invalid value in Affinity term won't be scheduled onto the node", pod(affinity=required({"matchExpressions": [req("foo", "NotIn", "invalid value: ___@#$%^")]})),
     {"foo": "bar"}, "", False),
    ("Pod with matchFields using In operator that matches the existing node", pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]})), None, "node_1", True),
    ("Pod with matchFields using In operator that does not match the existing node", pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]})), None, "node_2", False),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches",
     pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]}, {"matchExpressions": [req("foo", "In", "bar")]})), {"foo": "bar"}, "node_2", True),
    ("Pod with one term: matchFields does not match, but matchExpressions matches",
     pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")], "matchExpressions": [req("foo", "In", "bar")]})), {"foo": "bar"}, "node_2", False),
    ("Pod with one term: both matchFields and matchExpressions match",
     pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")], "matchExpressions": [req("foo", "In", "bar")]})), {"foo": "bar"}, "node_1", True),
    ("Pod with two terms: both matchFields and matchExpressions do not match",
     pod(affinity=required({"matchFields": [req("metadata.name", "In", "node_1")]}, {"matchExpressions": [req("foo", "In", "not-match-to-bar")]})), {"foo": "bar"}, "node_2", False),
]


@pytest.mark.parametrize(("name", "the_pod", "labels", "node_name", "want"), POD_MATCHES, ids=[row[0] for row in POD_MATCHES])
def test_pod_matches_node_selector_and_affinity_terms(name: str, the_pod: Any, labels: dict[str, str] | None, node_name: str, want: bool) -> None:
    assert pod_fits_node_affinity(the_pod.spec, node(node_name, labels)) is want


VALIDATE_SUCCESS = [
    ("serialized node affinity requirements", [{"matchExpressions": [req("key2", "In", "value1", "value2")], "matchFields": [req("metadata.name", "In", "host1")]}]),
    ("serialized node affinity requirements II", [{"matchExpressions": []}]),
]


@pytest.mark.parametrize(("name", "terms"), VALIDATE_SUCCESS, ids=[row[0] for row in VALIDATE_SUCCESS])
def test_validate_node_selector_success(name: str, terms: list[dict[str, Any]]) -> None:
    assert validate_node_selector(selector(*terms), "nodeSelector") == []


VALIDATE_ERRORS = [
    ("invalid node selector requirement in node affinity, operator can't be null", [{"matchExpressions": [{"key": "key1"}]}],
     "nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator"),
    ("invalid node selector requirement in node affinity, key is invalid", [{"matchExpressions": [req("invalid key ___@#", "Exists")]}],
     "nodeSelector.nodeSelectorTerms[0].matchExpressions[0].key"),
    ("invalid node field selector requirement in node affinity, more values for field selector", [{"matchFields": [req("metadata.name", "In", "host1", "host2")]}],
     "nodeSelector.nodeSelectorTerms[0].matchFields[0].values"),
    ("invalid node field selector requirement in node affinity, invalid operator", [{"matchFields": [req("metadata.name", "Exists")]}],
     "nodeSelector.nodeSelectorTerms[0].matchFields[0].operator"),
    ("invalid node field selector requirement in node affinity, invalid key", [{"matchFields": [req("metadata.namespace", "In", "ns1")]}],
     "nodeSelector.nodeSelectorTerms[0].matchFields[0].key"),
    ("invalid requiredDuringSchedulingIgnoredDuringExecution node selector, nodeSelectorTerms must have at least one term", [], "nodeSelector.nodeSelectorTerms"),
]


@pytest.mark.parametrize(("name", "terms", "expected"), VALIDATE_ERRORS, ids=[row[0] for row in VALIDATE_ERRORS])
def test_validate_node_selector_errors(name: str, terms: list[dict[str, Any]], expected: str) -> None:
    errors = validate_node_selector(selector(*terms), "nodeSelector")
    assert errors, "expected failure"
    assert expected in ", ".join(errors), errors


def test_a_pod_with_an_invalid_node_affinity_is_refused() -> None:
    """The API server runs ``validateNodeAffinity`` on every pod spec (Gt with two values was
    accepted, and matched no node)."""
    from chaoskube.apiserver.validation import validate_create

    bad = pod(affinity=required({"matchExpressions": [req("kernel-version", "Gt", "1", "2")]}))
    assert validate_create(bad) == ["spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
                                    "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"]
    weights = pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "preference": {"matchExpressions": [req("a", "Exists")]}}]}})
    assert validate_create(weights) == ["spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 101: must be in the range 1-100"]

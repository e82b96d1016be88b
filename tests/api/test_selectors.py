"""Label and field selectors: the string languages of apimachinery's labels/fields
packages, Kubernetes' error messages, and agreement with simple oracles."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.api.objects import (
    LabelSelector,
    LabelSelectorRequirement,
    Namespace,
    Node,
    NodeSpec,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    Service,
    _label_key_problem,
    matches as structured_matches,
)
from chaoskube.api.selectors import (
    FieldSelectorExpr,
    LabelSelectorExpr,
    SelectorError,
    matches,
    parse_field_selector,
    parse_label_selector,
    selectable_fields,
    selector_from_label_selector,
)

NAME_PART = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
VALUE = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"


def pod(name="p", namespace="default", labels=None, node="", phase="", **spec):
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace, labels=labels or {}), spec=PodSpec(node_name=node, **spec), status=PodStatus(phase=phase))


# --------------------------------------------------------------------------- label selectors
@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {}, True),
        ("", {"a": "b"}, True),
        ("a=b", {"a": "b"}, True),
        ("a=b", {"a": "c"}, False),
        ("a=b", {}, False),
        ("a==b", {"a": "b"}, True),
        ("a!=b", {"a": "b"}, False),
        ("a!=b", {"a": "c"}, True),
        ("a!=b", {}, True),  # a missing key is "not equal"
        ("a in (x,y)", {"a": "y"}, True),
        ("a in (x,y)", {"a": "z"}, False),
        ("a in (x,y)", {}, False),
        ("a notin (x)", {"a": "x"}, False),
        ("a notin (x)", {}, True),
        ("a", {"a": ""}, True),
        ("a", {"b": "a"}, False),
        ("!a", {}, True),
        ("!a", {"a": "x"}, False),
        ("a=b,c=d", {"a": "b", "c": "d"}, True),
        ("a=b,c=d", {"a": "b"}, False),
        ("a=", {"a": ""}, True),  # an empty value is a value
        ("a in (,x)", {"a": ""}, True),
        ("x in (foo,,baz),y,z notin ()", {"x": "", "y": "1"}, True),
        ("  a = b ,  c  ", {"a": "b", "c": "1"}, True),  # whitespace around tokens
        ("k in (in, notin)", {"k": "notin"}, True),  # keywords are values inside parentheses
        ("example.com/role=db", {"example.com/role": "db"}, True),
        ("a>3", {"a": "4"}, True),
        ("a>3", {"a": "3"}, False),
        ("a<3", {"a": "x"}, False),
        ("a<3", {}, False),
    ],
)
def test_label_selector_table(text, labels, expected):
    assert parse_label_selector(text).matches_labels(labels) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # messages as kube-apiserver answers them (seen in kubectl output and apiserver tests)
        ("app:monolith", f'unable to parse requirement: <nil>: Invalid value: "app:monolith": {NAME_PART}'),
        ("*bar", f'unable to parse requirement: <nil>: Invalid value: "*bar": {NAME_PART}'),
        ("a=@", f'unable to parse requirement: values[0][a]: Invalid value: "@": {VALUE}'),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a!!", "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"),
        ("a<x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("/a=b", 'unable to parse requirement: <nil>: Invalid value: "/a": prefix part must be non-empty'),
        ("a/=b", f'unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; {NAME_PART}'),
        ("a" * 64, f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": name part must be no more than 63 characters'),
    ],
)
def test_label_selector_errors_carry_kubernetes_messages(text, message):
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(text)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_a_key_with_two_slashes_and_a_bad_prefix_are_worded_as_content_is_label_key():
    with pytest.raises(SelectorError, match=r"a valid label key must consist of .* with an optional DNS subdomain prefix and '/' \(e.g. 'example.com/MyName'\)$"):
        parse_label_selector("a/b/c=d")
    with pytest.raises(SelectorError, match=r'"Example.com/a": prefix part a lowercase RFC 1123 subdomain must consist of'):
        parse_label_selector("Example.com/a")


def test_requirements_are_sorted_by_key_and_values_deduplicated():
    expr = parse_label_selector("z=1,a in (y,x,y),m")
    assert [requirement.key for requirement in expr.requirements] == ["a", "m", "z"]
    assert expr.requirements[0].values == ("x", "y")
    assert str(expr) == "a in (x,y),m,z=1"
    assert parse_label_selector(str(expr)) == expr


def test_empty_and_nothing():
    assert parse_label_selector("").empty
    assert not parse_label_selector("a").empty
    nothing = selector_from_label_selector(None)
    assert not nothing.empty and not nothing.matches_labels({})
    assert selector_from_label_selector(LabelSelector()).empty


@pytest.mark.parametrize("key", ["a", "a.b", "A-b_c.d", "example.com/x", "a/b/c", "/a", "a/", "-a", "a-", "Ex.com/a", "a" * 63, "a" * 64, "a@b", ""])
def test_label_key_validation_agrees_with_the_object_validation(key):
    """The selector parser and metadata.labels accept the same keys."""
    text = key or "=x"
    try:
        parse_label_selector(text)
        accepted = True
    except SelectorError:
        accepted = False
    assert accepted is (key != "" and _label_key_problem(key) is None)


def _random_structured(rng):
    keys = ["a", "b", "c"]
    match_labels = {key: rng.choice("xyz") for key in rng.sample(keys, rng.randrange(0, 3))}
    expressions = []
    for key in rng.sample(keys, rng.randrange(0, 3)):
        operator = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
        values = rng.sample(["x", "y", "z"], rng.randrange(1, 3)) if operator in ("In", "NotIn") else []
        expressions.append(LabelSelectorRequirement(key=key, operator=operator, values=values))
    return LabelSelector(match_labels=match_labels, match_expressions=expressions)


def test_structured_selectors_convert_to_the_same_answers_as_objects_matches():
    rng = random.Random(7)
    for _ in range(500):
        selector = _random_structured(rng)
        labels = {key: rng.choice("xyz") for key in rng.sample(["a", "b", "c"], rng.randrange(0, 4))}
        converted = selector_from_label_selector(selector)
        assert converted.matches_labels(labels) is structured_matches(selector, labels), (selector, labels)
        # and its string form parses back to the same meaning
        if not converted.empty:
            assert parse_label_selector(str(converted)).matches_labels(labels) is structured_matches(selector, labels)


OPERATORS = ["=", "==", "!=", "in", "notin", "exists", "!"]


def _oracle(requirements, labels):
    for key, operator, values in requirements:
        present = key in labels
        if operator in ("=", "==", "in") and not (present and labels[key] in values):
            return False
        if operator in ("!=", "notin") and present and labels[key] in values:
            return False
        if operator == "exists" and not present:
            return False
        if operator == "!" and present:
            return False
    return True


def _render(key, operator, values):
    if operator == "exists":
        return key
    if operator == "!":
        return "!" + key
    if operator in ("in", "notin"):
        return f"{key} {operator} ({','.join(values)})"
    return f"{key}{operator}{values[0]}"


requirement_strategy = st.tuples(
    st.sampled_from(["a", "b", "k8s.io/c"]),
    st.sampled_from(OPERATORS),
    st.lists(st.sampled_from(["x", "y", "1", ""]), min_size=1, max_size=3),
).map(lambda r: (r[0], r[1], r[2] if r[1] in ("in", "notin") else r[2][:1]))


@settings(max_examples=300, deadline=None)
@given(
    requirements=st.lists(requirement_strategy, max_size=4),
    labels=st.dictionaries(st.sampled_from(["a", "b", "k8s.io/c"]), st.sampled_from(["x", "y", "1", ""]), max_size=3),
)
def test_parsed_selectors_agree_with_a_naive_oracle(requirements, labels):
    text = ",".join(_render(*requirement) for requirement in requirements)
    assert parse_label_selector(text).matches_labels(labels) is _oracle(requirements, labels), text


# --------------------------------------------------------------------------- field selectors
def test_pod_fields_as_the_pod_strategy_exposes_them():
    subject = Pod(
        metadata=ObjectMeta(name="web-1", namespace="prod"),
        spec=PodSpec(node_name="n1", restart_policy="Always", scheduler_name="default-scheduler", service_account_name="sa", host_network=True),
        status=PodStatus(phase="Running", pod_ip="10.0.0.5", nominated_node_name="n2"),
    )
    assert selectable_fields(subject) == {
        "metadata.name": "web-1", "metadata.namespace": "prod", "spec.nodeName": "n1", "spec.restartPolicy": "Always",
        "spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "sa", "spec.hostNetwork": "true",
        "status.phase": "Running", "status.podIP": "10.0.0.5", "status.nominatedNodeName": "n2",
    }
    with_ips = Pod(metadata=ObjectMeta(name="x"), status=PodStatus(pod_ip="10.0.0.5", pod_ips=[{"ip": "10.0.0.9"}]))
    assert selectable_fields(with_ips)["status.podIP"] == "10.0.0.9"  # status.podIPs[0] wins, as upstream


@pytest.mark.parametrize(
    ("text", "subject", "expected"),
    [
        ("spec.nodeName=n1", pod(node="n1"), True),
        ("spec.nodeName=n1", pod(node="n2"), False),
        ("spec.nodeName==n1", pod(node="n1"), True),
        ("spec.nodeName!=n1", pod(node="n2"), True),
        ("spec.nodeName=", pod(), True),  # the scheduler's "unassigned pods"
        ("spec.nodeName!=", pod(node="n1"), True),
        ("status.phase!=Succeeded,status.phase!=Failed", pod(phase="Running"), True),
        ("status.phase!=Succeeded,status.phase!=Failed", pod(phase="Failed"), False),
        ("metadata.name=p,metadata.namespace=default", pod(), True),
        ("metadata.namespace=kube-system", pod(), False),
        ("spec.host=n1", pod(node="n1"), True),  # old v1 clients' spec.host means spec.nodeName
        ("status.podIPs=", pod(), True),  # accepted but not exposed: reads as ""
        ("", pod(), True),
    ],
)
def test_field_selector_table_for_pods(text, subject, expected):
    assert parse_field_selector(text, "pods").matches(subject) is expected


def test_node_namespace_and_service_fields():
    cordoned = Node(metadata=ObjectMeta(name="n1"), spec=NodeSpec(unschedulable=True))
    assert parse_field_selector("spec.unschedulable=true", "nodes").matches(cordoned)
    assert not parse_field_selector("spec.unschedulable=false", "nodes").matches(cordoned)
    assert parse_field_selector("metadata.name=n1", "nodes").matches(cordoned)
    active = Namespace(metadata=ObjectMeta(name="prod"))
    active.status.phase = "Active"
    assert parse_field_selector("status.phase=Active", "namespaces").matches(active)
    service = Service(metadata=ObjectMeta(name="web", namespace="prod"))
    service.spec.type = "ClusterIP"
    assert parse_field_selector("spec.type=ClusterIP,metadata.namespace=prod", "services").matches(service)


@pytest.mark.parametrize(
    ("text", "resource", "message"),
    [
        ("status.hostIP=1.2.3.4", "pods", "field label not supported: status.hostIP"),  # kubectl shows exactly this
        ("metadata.namespace=x", "nodes", "field label not supported: metadata.namespace"),
        ("spec.replicas=1", "deployments", '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
        ("status.phase", "pods", "invalid selector: 'status.phase'; can't understand 'status.phase'"),
        ("a=b,c", "pods", "invalid selector: 'a=b,c'; can't understand 'c'"),
        (r"metadata.name=a\x", "pods", r"invalid field selector: invalid escape sequence: \x"),
        ("metadata.name=a\\", "pods", "invalid field selector: invalid escape sequence: \\"),
        ("metadata.name=a=b", "pods", "invalid field selector: unescaped character in value: 61"),
        ("status.phase =Running", "pods", "field label not supported: status.phase "),  # no trimming
    ],
)
def test_field_selector_errors_carry_kubernetes_messages(text, resource, message):
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(text, resource)
    assert str(caught.value) == message


def test_escaped_values_and_sorted_terms():
    expr = parse_field_selector(r"metadata.name=a\,b\=c\\d,metadata.namespace!=x", "pods")
    assert [requirement.field for requirement in expr.requirements] == ["metadata.name", "metadata.namespace"]
    assert expr.requirements[0].value == "a,b=c\\d"
    assert parse_field_selector(str(expr), "pods") == expr
    assert parse_field_selector(",,", "pods").empty  # empty terms are skipped


def test_every_kind_supports_name_and_namespace():
    for resource in ("deployments", "replicasets", "leases", "roles", "poddisruptionbudgets", "endpointslices"):
        assert len(parse_field_selector("metadata.name=a,metadata.namespace=b", resource).requirements) == 2


def test_matches_combines_both_selectors():
    subject = pod(labels={"app": "web"}, node="n1")
    assert matches(subject, parse_label_selector("app=web"), parse_field_selector("spec.nodeName=n1", "pods"))
    assert not matches(subject, parse_label_selector("app=db"), parse_field_selector("spec.nodeName=n1", "pods"))
    assert not matches(subject, parse_label_selector("app=web"), parse_field_selector("spec.nodeName=n2", "pods"))
    assert matches(subject, None, None)
    assert matches(subject, LabelSelectorExpr(), FieldSelectorExpr())

"""Object types and the pure helpers: quantities, selectors, IntOrString, names."""

import importlib
from fractions import Fraction

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.api import (
    KINDS,
    Deployment,
    LabelSelector,
    LabelSelectorRequirement,
    ObjectMeta,
    Pod,
    deep_copy,
    format_milli,
    from_dict,
    matches,
    parse_quantity,
    registry_key,
    resolve_fenceposts,
    scaled_value,
    validate_name,
)
from chaoskube.api import objects


@pytest.mark.parametrize("module", ["chaoskube.api", "chaoskube.api.objects", "chaoskube.api.manifests"])
def test_modules_export_exactly_what_they_list(module):
    loaded = importlib.import_module(module)
    for name in loaded.__all__:
        assert hasattr(loaded, name), f"{module}.__all__ lists {name!r} but it is missing"
    assert loaded.__all__ == sorted(loaded.__all__), f"{module}.__all__ is not sorted"


# --------------------------------------------------------------------------- quantities

# Examples from the Kubernetes docs ("Resource units in Kubernetes", the Quantity reference)
# and from resource.Quantity's own tests, in milli-units.
QUANTITIES = [
    ("100m", 100),
    ("0.1", 100),  # "0.1 CPU is the same as 100m"
    (".5", 500),
    ("0.5", 500),
    (0.5, 500),
    (1, 1000),
    ("1", 1000),
    ("1.", 1000),
    ("+1", 1000),
    ("-1", -1000),
    ("500m", 500),
    ("1k", 1_000_000),
    ("128974848", 128974848000),  # memory: these five are the same amount, roughly
    ("129e6", 129_000_000_000),
    ("129M", 129_000_000_000),
    ("128974848000m", 128974848000),
    ("123Mi", 123 * 2**20 * 1000),
    ("1Ki", 1024_000),
    ("1Gi", 2**30 * 1000),
    ("1.5Gi", 3 * 2**29 * 1000),
    ("1Ti", 2**40 * 1000),
    ("1Pi", 2**50 * 1000),
    ("1Ei", 2**60 * 1000),
    ("1G", 10**12),
    ("1T", 10**15),
    ("1P", 10**18),
    ("1E", 10**21),  # E is exa, not an exponent, when no digits follow
    ("1e3", 1_000_000),
    ("1E3", 1_000_000),
    ("1e-3", 1),
    ("1e+3", 1_000_000),
    (1e-05, 1),  # str(1e-05) == "1e-05", finer than a milli: rounds up
    ("1u", 1),  # MilliValue rounds up
    ("1n", 1),
    ("1500u", 2),
    ("0", 0),
    ("0m", 0),
]


@pytest.mark.parametrize(("text", "milli"), QUANTITIES)
def test_parse_quantity(text, milli):
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["", "m", ".", "1.2.3", "1 Gi", "1gi", "1KI", "Gi", "1e", "1ee3", "abc", "--1", "1e999999", True, None, [1], float("nan"), float("inf")])
def test_parse_quantity_rejects(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


@given(st.integers(-(10**12), 10**12))
def test_format_milli_round_trips(milli):
    assert parse_quantity(format_milli(milli)) == milli


@given(st.integers(0, 10**9 - 1), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi"]))
def test_parse_quantity_matches_a_simple_oracle(number, suffix):
    factor = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[suffix]
    assert parse_quantity(f"{number}{suffix}") == number * factor * 1000
    assert parse_quantity(f"{number}m") == number
    assert parse_quantity(f"0.{number:09d}") == -(-Fraction(number, 10**9) * 1000 // 1)


def test_numeric_quantities_become_strings_and_bad_ones_name_the_field():
    pod = msgspec.convert({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 0.5, "memory": 1}}}]}}, Pod)
    assert pod.spec.containers[0].resources.requests == {"cpu": "0.5", "memory": "1"}
    with pytest.raises(msgspec.ValidationError, match=r"requests\.cpu.*invalid quantity"):
        msgspec.convert({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}, Pod)


# --------------------------------------------------------------------------- IntOrString

# intstr.GetScaledValueFromIntOrPercent, and the rounding a Deployment uses.
SCALED = [
    (3, 10, True, 3),
    (3, 10, False, 3),
    ("25%", 10, True, 3),  # 2.5 rounds up
    ("25%", 10, False, 2),  # 2.5 rounds down
    ("25%", 4, True, 1),
    ("25%", 4, False, 1),
    ("25%", 1, True, 1),
    ("25%", 1, False, 0),
    ("0%", 7, True, 0),
    ("100%", 7, False, 7),
    ("67%", 3, True, 3),  # 2.01 rounds up (the cockroachdb PDB's minAvailable)
    ("67%", 3, False, 2),
    ("150%", 2, True, 3),
    ("10%", 0, True, 0),
]


@pytest.mark.parametrize(("value", "total", "round_up", "expected"), SCALED)
def test_scaled_value(value, total, round_up, expected):
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize("value", ["25", "%", "x%", "-1%", "1.5%", True])
def test_scaled_value_rejects(value):
    with pytest.raises(ValueError):
        scaled_value(value, 10, round_up=True)


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        (None, None, 10, (3, 2)),  # apps/v1 defaults 25% / 25%
        (None, None, 1, (1, 0)),
        (0, 0, 5, (0, 1)),  # both zero: unavailable becomes 1 so the rollout progresses
        ("0%", "0%", 5, (0, 1)),
        (1, 0, 3, (1, 0)),
        ("50%", "50%", 3, (2, 1)),
    ],
)
def test_resolve_fenceposts(surge, unavailable, desired, expected):
    assert resolve_fenceposts(surge, unavailable, desired) == expected


@given(st.integers(0, 200), st.integers(0, 1000))
def test_percent_rounding_matches_exact_arithmetic(percent, total):
    exact = Fraction(percent * total, 100)
    assert scaled_value(f"{percent}%", total, round_up=True) == -(-exact.numerator // exact.denominator)
    assert scaled_value(f"{percent}%", total, round_up=False) == exact.numerator // exact.denominator


@pytest.mark.parametrize("bad", ["25", "abc", -1, "-5%"])
def test_rolling_update_rejects_bad_percentages(bad):
    with pytest.raises(msgspec.ValidationError, match="maxSurge"):
        msgspec.convert({"spec": {"strategy": {"rollingUpdate": {"maxSurge": bad}}}}, Deployment)


# --------------------------------------------------------------------------- selectors


def selector(match_labels=None, *expressions):
    return LabelSelector(match_labels=match_labels or {}, match_expressions=[LabelSelectorRequirement(key=k, operator=o, values=list(v)) for k, o, v in expressions])


SELECTORS = [
    (None, {"app": "a"}, False),  # no selector selects nothing
    (selector(), {}, True),  # the empty selector selects everything
    (selector(), {"app": "a"}, True),
    (selector({"app": "a"}), {"app": "a", "tier": "x"}, True),
    (selector({"app": "a"}), {"app": "b"}, False),
    (selector({"app": "a"}), {}, False),
    (selector({"app": "a", "tier": "x"}), {"app": "a"}, False),
    (selector(None, ("env", "In", ["prod", "qa"])), {"env": "qa"}, True),
    (selector(None, ("env", "In", ["prod"])), {"env": "dev"}, False),
    (selector(None, ("env", "In", ["prod"])), {}, False),
    (selector(None, ("env", "NotIn", ["prod"])), {"env": "dev"}, True),
    (selector(None, ("env", "NotIn", ["prod"])), {}, True),  # NotIn matches a missing key
    (selector(None, ("env", "NotIn", ["prod"])), {"env": "prod"}, False),
    (selector(None, ("env", "Exists", [])), {"env": ""}, True),
    (selector(None, ("env", "Exists", [])), {}, False),
    (selector(None, ("env", "DoesNotExist", [])), {}, True),
    (selector(None, ("env", "DoesNotExist", [])), {"env": "x"}, False),
    (selector({"app": "a"}, ("env", "Exists", [])), {"app": "a"}, False),  # AND of all
    (selector({"app": "a"}, ("env", "Exists", [])), {"app": "a", "env": "1"}, True),
]


@pytest.mark.parametrize(("sel", "labels", "expected"), SELECTORS)
def test_matches(sel, labels, expected):
    assert matches(sel, labels) is expected


def oracle(match_labels, expressions, labels):
    """Deliberately simple: the set semantics of the Kubernetes docs, written as sets."""
    pairs = set(labels.items())
    if not set(match_labels.items()) <= pairs:
        return False
    for key, operator, values in expressions:
        if operator == "In" and not any((key, value) in pairs for value in values):
            return False
        if operator == "NotIn" and any((key, value) in pairs for value in values):
            return False
        if operator == "Exists" and key not in {k for k, _ in pairs}:
            return False
        if operator == "DoesNotExist" and key in {k for k, _ in pairs}:
            return False
    return True


KEYS = st.sampled_from(["app", "env", "tier"])
VALUES = st.sampled_from(["a", "b", "c"])
EXPRESSIONS = st.one_of(
    st.tuples(KEYS, st.sampled_from(["In", "NotIn"]), st.lists(VALUES, min_size=1, max_size=3)),
    st.tuples(KEYS, st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
)


@settings(max_examples=300)
@given(st.dictionaries(KEYS, VALUES, max_size=2), st.lists(EXPRESSIONS, max_size=3), st.dictionaries(KEYS, VALUES, max_size=3))
def test_matches_agrees_with_the_oracle(match_labels, expressions, labels):
    assert matches(selector(match_labels, *expressions), labels) == oracle(match_labels, expressions, labels)


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ({"key": "a", "operator": "Equals", "values": ["x"]}, "operator"),
        ({"key": "a", "operator": "In", "values": []}, "values"),
        ({"key": "a", "operator": "Exists", "values": ["x"]}, "values"),
    ],
)
def test_selector_requirements_are_validated(requirement, message):
    with pytest.raises(msgspec.ValidationError, match=message):
        msgspec.convert({"matchExpressions": [requirement]}, LabelSelector)


# --------------------------------------------------------------------------- names, labels, kinds


@pytest.mark.parametrize(
    ("rule", "name", "ok"),
    [
        ("subdomain", "web-1", True),
        ("subdomain", "a.b.c", True),
        ("subdomain", "Web", False),
        ("subdomain", "-web", False),
        ("subdomain", "web_1", False),
        ("subdomain", "a" * 253, True),
        ("subdomain", "a" * 254, False),
        ("label", "kube-system", True),
        ("label", "a.b", False),
        ("label", "a" * 64, False),
        ("dns1035", "frontend", True),
        ("dns1035", "1frontend", False),
        ("path", "system:node-problem-detector", True),
        ("path", "a/b", False),
        ("path", "..", False),
        ("subdomain", "", False),
    ],
)
def test_validate_name(rule, name, ok):
    assert (validate_name(rule, name) is None) is ok


@pytest.mark.parametrize(
    "labels",
    [{"app": "x" * 64}, {"-app": "x"}, {"Example.com/app": "x"}, {"a/b/c": "x"}, {"app": "has space"}, {"": "x"}],
)
def test_bad_labels_are_rejected(labels):
    with pytest.raises(ValueError, match="labels"):
        ObjectMeta(name="x", labels=labels)


def test_good_labels_are_accepted():
    ObjectMeta(name="x", labels={"app.kubernetes.io/name": "web", "tier": "", "a_b.c-d": "V1.2_3"})


def test_every_kind_knows_where_it_is_stored():
    assert sorted(KINDS) == [
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "ControllerRevision", "CronJob",
        "CustomResourceDefinition", "DaemonSet", "Deployment", "EndpointSlice", "Endpoints", "Event",
        "HorizontalPodAutoscaler", "Ingress", "IngressClass", "Job", "Lease", "LimitRange",
        "MutatingWebhookConfiguration", "Namespace", "NetworkPolicy", "Node", "PersistentVolume",
        "PersistentVolumeClaim", "Pod", "PodDisruptionBudget", "PriorityClass", "ReplicaSet",
        "ReplicationController", "ResourceQuota", "Role", "RoleBinding", "Secret", "Service",
        "ServiceAccount", "StatefulSet", "StorageClass", "ValidatingWebhookConfiguration",
    ]  # fmt: skip
    cluster_scoped = {kind for kind, info in KINDS.items() if not info.namespaced}
    assert cluster_scoped == {
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "IngressClass", "MutatingWebhookConfiguration", "Namespace", "Node",
        "PersistentVolume", "PriorityClass", "StorageClass", "ValidatingWebhookConfiguration",
    }
    assert KINDS["PodDisruptionBudget"].resource == "poddisruptionbudgets"
    assert KINDS["PodDisruptionBudget"].api_version == "policy/v1"
    assert KINDS["Lease"].api_version == "coordination.k8s.io/v1"
    for kind, info in KINDS.items():
        assert info.type.__name__ == kind
        assert info.resource == info.resource.lower() and info.resource.endswith("s")


def test_registry_key():
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"}})
    assert registry_key(pod) == "/registry/pods/shop/web"
    node = from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert registry_key(node) == "/registry/nodes/n1"
    assert registry_key(Pod(metadata=ObjectMeta(name="x"))) == "/registry/pods/default/x"


def test_deep_copy_shares_nothing_mutable():
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}})
    copy = deep_copy(pod)
    assert copy == pod
    copy.metadata.labels["app"] = "b"
    copy.spec.containers[0].env[0]["value"] = "2"
    copy.status.phase = "Running"
    assert pod.metadata.labels == {"app": "a"}
    assert pod.spec.containers[0].env[0]["value"] == "1"
    assert pod.status.phase == ""


def test_json_names_follow_kubernetes():
    """Fields whose Go JSON tags are not plain camelCase keep their Kubernetes spelling."""
    names = {field.encode_name for cls in vars(objects).values() if isinstance(cls, type) and issubclass(cls, msgspec.Struct) for field in msgspec.structs.fields(cls)}
    for expected in ["podIP", "hostIP", "podIPs", "clusterIP", "externalIPs", "imageID", "containerID", "podCIDR", "providerID", "nonResourceURLs", "hostPID", "setHostnameAsFQDN", "requiredDuringSchedulingIgnoredDuringExecution"]:
        assert expected in names
    assert not {name for name in names if name.endswith(("Ip", "Ips", "Id", "Cidr", "Urls", "Pid", "Ipc", "Fqdn"))}

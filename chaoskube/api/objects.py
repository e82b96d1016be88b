"""Kubernetes object types, and the pure helpers the control plane computes with.

The types mirror the Kubernetes API (https://kubernetes.io/docs/reference/kubernetes-api/)
field for field, with the names exactly as they appear in JSON and YAML. docs/api-objects.md
lists what is modelled per kind and the reference pages followed.

Contract:

- Every struct forbids unknown fields: a misspelt or invented field is an error that names
  its path. Sub-objects the simulated control plane never interprets (volumes, env,
  securityContext, lifecycle, dnsConfig, ...) are declared by their Kubernetes name and typed
  as raw JSON (``RawObject`` / ``RawList``): they are kept verbatim, so real manifests load
  and round-trip, but their insides are not validated. msgspec has no "collect the unknown
  fields" mode, so a catch-all ``extra`` mapping is not practical; declaring every field name
  of the kinds we support is, and it still catches typos.
- Optional sub-objects that Go models as pointers (``affinity``, probes, ``rollingUpdate``)
  are ``None`` when absent. Value sub-objects (``metadata``, ``spec``, ``status``,
  ``resources``, ``template``, ``strategy``) are always present, as in Go.
- Quantities are strings after decoding: a number written in YAML (``cpu: 1``, ``cpu: 0.5``)
  becomes its decimal string (``"1"``, ``"0.5"``), as the API server's JSON decoder accepts
  numbers for ``resource.Quantity``. Parse them with :func:`parse_quantity`.
- Timestamps are RFC 3339 strings, kept as written (the simulation's clock is virtual; the
  component that writes a timestamp formats it).
- Objects are mutable, like client-go's. Objects handed out by a cache are shared: copy them
  with :func:`deep_copy` before changing them (client-go's ``DeepCopy`` rule).
- Constructing a struct validates what Kubernetes validates at decode time for the fields
  the control plane computes with (quantities, percentages, selector operators, label
  syntax); it raises ``ValueError`` (``msgspec.ValidationError`` with a path when decoding).

Non-guarantees: this is not the API server's validation. Defaults (``replicas: 1``,
``maxSurge: 25%``, ...) are not applied here, and cross-field rules (a Deployment's selector
must match its template's labels) are not checked here.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar, TypeAlias, Union

import msgspec

__all__ = [
    "Affinity",
    "AggregationRule",
    "ClusterRole",
    "ClusterRoleBinding",
    "Condition",
    "ConfigMap",
    "Container",
    "ContainerPort",
    "ContainerState",
    "ContainerStateRunning",
    "ContainerStateTerminated",
    "ContainerStateWaiting",
    "ContainerStatus",
    "ControllerRevision",
    "CronJob",
    "CronJobSpec",
    "CronJobStatus",
    "CrossVersionObjectReference",
    "CustomObject",
    "CustomResourceDefinition",
    "CustomResourceDefinitionCondition",
    "CustomResourceDefinitionNames",
    "CustomResourceDefinitionSpec",
    "CustomResourceDefinitionStatus",
    "CustomResourceDefinitionVersion",
    "CustomResourceSubresourceScale",
    "CustomResourceSubresources",
    "CustomResourceValidation",
    "DaemonSet",
    "DaemonSetCondition",
    "DaemonSetSpec",
    "DaemonSetStatus",
    "DaemonSetUpdateStrategy",
    "Deployment",
    "DeploymentCondition",
    "DeploymentSpec",
    "DeploymentStatus",
    "DeploymentStrategy",
    "Endpoint",
    "EndpointConditions",
    "EndpointPort",
    "EndpointSlice",
    "EndpointSubset",
    "Endpoints",
    "Event",
    "EventSeries",
    "EventSource",
    "ExecAction",
    "GRPCAction",
    "HTTPGetAction",
    "HTTPIngressPath",
    "HTTPIngressRuleValue",
    "HorizontalPodAutoscaler",
    "HorizontalPodAutoscalerSpec",
    "HorizontalPodAutoscalerStatus",
    "Ingress",
    "IngressBackend",
    "IngressClass",
    "IngressClassSpec",
    "IngressRule",
    "IngressServiceBackend",
    "IngressSpec",
    "IngressStatus",
    "Job",
    "JobCondition",
    "JobSpec",
    "JobStatus",
    "JobTemplateSpec",
    "KINDS",
    "KindInfo",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Lease",
    "LeaseSpec",
    "LimitRange",
    "LimitRangeItem",
    "LimitRangeSpec",
    "LocalSubjectAccessReview",
    "MatchCondition",
    "MutatingWebhook",
    "MutatingWebhookConfiguration",
    "Namespace",
    "NamespaceSpec",
    "NamespaceStatus",
    "NetworkPolicy",
    "NetworkPolicySpec",
    "Node",
    "NodeAddress",
    "NodeAffinity",
    "NodeCondition",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "NodeSpec",
    "NodeStatus",
    "Object",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimCondition",
    "PersistentVolumeClaimSpec",
    "PersistentVolumeClaimStatus",
    "PersistentVolumeClaimTemplate",
    "PersistentVolumeSpec",
    "PersistentVolumeStatus",
    "Pod",
    "PodAffinity",
    "PodAffinityTerm",
    "PodAntiAffinity",
    "PodCondition",
    "PodDisruptionBudget",
    "PodDisruptionBudgetSpec",
    "PodDisruptionBudgetStatus",
    "PodFailurePolicy",
    "PodFailurePolicyOnExitCodesRequirement",
    "PodFailurePolicyOnPodConditionsPattern",
    "PodFailurePolicyRule",
    "PodSpec",
    "PodStatus",
    "PodTemplateSpec",
    "PolicyRule",
    "PreferredSchedulingTerm",
    "PriorityClass",
    "Probe",
    "REVIEWS",
    "RawList",
    "RawObject",
    "ReplicaSet",
    "ReplicaSetCondition",
    "ReplicaSetSpec",
    "ReplicaSetStatus",
    "ReplicationController",
    "ReplicationControllerSpec",
    "ReplicationControllerStatus",
    "ResourceQuota",
    "ResourceQuotaSpec",
    "ResourceQuotaStatus",
    "ResourceRequirements",
    "Role",
    "RoleBinding",
    "RoleRef",
    "RollingUpdateDaemonSet",
    "RollingUpdateDeployment",
    "RollingUpdateStatefulSetStrategy",
    "RuleWithOperations",
    "Scale",
    "ScaleSpec",
    "ScaleStatus",
    "Secret",
    "SelfSubjectAccessReview",
    "SelfSubjectReview",
    "SelfSubjectRulesReview",
    "Service",
    "ServiceAccount",
    "ServiceBackendPort",
    "ServicePort",
    "ServiceReference",
    "ServiceSpec",
    "ServiceStatus",
    "StatefulSet",
    "StatefulSetCondition",
    "StatefulSetOrdinals",
    "StatefulSetPersistentVolumeClaimRetentionPolicy",
    "StatefulSetSpec",
    "StatefulSetStatus",
    "StatefulSetUpdateStrategy",
    "StorageClass",
    "Subject",
    "SubjectAccessReview",
    "TCPSocketAction",
    "Taint",
    "TokenReview",
    "Toleration",
    "TopologySpreadConstraint",
    "TypedLocalObjectReference",
    "UncountedTerminatedPods",
    "ValidatingWebhook",
    "ValidatingWebhookConfiguration",
    "VolumeNodeAffinity",
    "VolumeResourceRequirements",
    "WebhookClientConfig",
    "WeightedPodAffinityTerm",
    "custom_resource",
    "custom_type",
    "deep_copy",
    "format_milli",
    "is_custom",
    "matches",
    "parse_quantity",
    "registry_key",
    "resolve_fenceposts",
    "scaled_value",
    "validate_name",
]

#: A sub-object kept verbatim (its Kubernetes schema is not modelled here).
RawObject: TypeAlias = dict[str, Any]
#: A list of sub-objects kept verbatim.
RawList: TypeAlias = list[dict[str, Any]]
#: A ``resource.Quantity`` as written; a string once decoded (see the module docstring).
Quantity: TypeAlias = str | int | float
#: ``intstr.IntOrString``: an integer, or a string (a percentage "25%" or a port name).
IntOrString: TypeAlias = int | str
#: An RFC 3339 timestamp, as written.
Time: TypeAlias = str


class _Struct(msgspec.Struct, rename="camel", omit_defaults=True, forbid_unknown_fields=True, kw_only=True, gc=False):
    """Base of every type here: Kubernetes JSON names, unknown fields rejected, defaults omitted.

    ``gc=False``: instances are not tracked by the cyclic garbage collector (msgspec
    "Disabling Garbage Collection"). An object is a tree of JSON values and structs: it
    cannot be part of a reference cycle, so refcounting frees it; never store in one a
    reference back to something that holds it. A 50-node run keeps hundreds of thousands
    of these (caches, histories, informer stores of every node): tracking them made the
    collector's passes over a run's survivors cost ~2 s per seed (bench/explore.py)."""


def _field_error(field: str, text: str) -> ValueError:
    """The error __post_init__ raises; manifests.py joins ``field`` onto msgspec's path."""
    return ValueError(f"field `{field}`: {text}")


# =========================================================================== quantities

# Kubernetes' grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
#   <quantity> ::= <signedNumber><suffix>; <number> ::= <digits> | <digits>.<digits> |
#   <digits>. | .<digits>; <suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>.
_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)")
_SUFFIX = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
#: Bound on a decimal exponent, so "1e999999999" cannot make us compute a huge integer.
#: Every real quantity (an int64 of milli-units is below 10**19) fits well inside it.
_EXPONENT_MAX = 64


def parse_quantity(text: Quantity) -> int:
    """A quantity ("100m", "1Gi", "0.5", "1e3", 2) in integer milli-units.

    Memoized: a cluster parses the same few quantities millions of times (the scheduler's
    and kubelets' sums); the cache is bounded.

    Exact for every suffix Kubernetes accepts; values finer than a milli-unit round up, as
    ``Quantity.MilliValue()`` does ("1u" is 1 milli), away from zero for a negative one as
    MilliValue of an int64Amount does ("-0.5m" is -1: the sign stays exact, so that
    validation's ``Cmp`` with zero refuses it). The full type, with upstream's canonical
    forms and limits, is :mod:`chaoskube.api.quantity`. Raises ``ValueError`` for anything
    ``resource.ParseQuantity`` rejects. Unlike ``MilliValue()`` (an int64), the result does
    not overflow: "1E" is 10**21 milli-units.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"not a quantity: {text!r}")
    return _parse_quantity(type(text), text)


@functools.lru_cache(maxsize=4096)
def _parse_quantity(kind: type, text: Quantity) -> int:  # the type keeps 1 and 1.0 and "1" apart
    if isinstance(text, float) and not math.isfinite(text):
        raise ValueError(f"not a quantity: {text!r}")
    string = str(text) if not isinstance(text, str) else text
    match = _QUANTITY.fullmatch(string)
    if match is None:
        raise ValueError(f"invalid quantity {_short(string)}: must match <number><suffix> with suffix one of m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or e<exponent>")
    sign, number, suffix = match.groups()
    value = Fraction(number if not number.endswith(".") else number[:-1])
    if suffix in _SUFFIX:
        value *= _SUFFIX[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > _EXPONENT_MAX:
            raise ValueError(f"quantity {_short(string)} is out of range")
        value *= Fraction(10) ** exponent
    magnitude = math.ceil(value * 1000)
    return -magnitude if sign == "-" else magnitude


def format_milli(milli: int) -> str:
    """A milli-unit count as a quantity string: whole units plainly, else with "m"."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _normalize_resources(field: str, resources: dict[str, Quantity]) -> None:
    """Numbers become strings; every value must parse. Mutates ``resources`` in place."""
    for name, value in resources.items():
        try:
            parse_quantity(value)
        except ValueError as error:
            raise _field_error(f"{field}.{name}", str(error)) from None
        if not isinstance(value, str):
            resources[name] = str(value)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# =========================================================================== IntOrString

_PERCENT = re.compile(r"[0-9]+%")


def _check_percent(field: str, value: IntOrString | None) -> None:
    """maxSurge, maxUnavailable, minAvailable: an int >= 0 or "N%" (IsValidPercent)."""
    if value is None:
        return
    if isinstance(value, int):
        if value < 0:
            raise _field_error(field, f"must be greater than or equal to 0, not {value}")
        return
    if not _PERCENT.fullmatch(value):
        raise _field_error(field, f"must be an integer or a percentage like '25%', not {_short(value)}")


def scaled_value(value: IntOrString, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, "N%" of ``total``.

    Deployments round maxSurge up and maxUnavailable down (:func:`resolve_fenceposts`); the
    disruption controller rounds both of a PDB's minAvailable and maxUnavailable up.
    """
    assert total >= 0, total
    if isinstance(value, bool):
        raise ValueError(f"invalid IntOrString {value!r}")
    if isinstance(value, int):
        return value
    if not _PERCENT.fullmatch(value):
        raise ValueError(f"invalid value for IntOrString: {_short(value)} is not a percentage")
    percent = int(value[:-1])
    numerator = percent * total
    return -(-numerator // 100) if round_up else numerator // 100


def resolve_fenceposts(max_surge: IntOrString | None, max_unavailable: IntOrString | None, desired: int) -> tuple[int, int]:
    """``deploymentutil.ResolveFenceposts``: (surge, unavailable) for a rolling update.

    Absent values take the apps/v1 defaults (25%, 25%). If both come out 0, unavailable
    becomes 1, so that the rollout can make progress (as Kubernetes does).
    """
    surge = scaled_value("25%" if max_surge is None else max_surge, desired, round_up=True)
    unavailable = scaled_value("25%" if max_unavailable is None else max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


# =========================================================================== names and labels

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def validate_name(rule: str, name: str) -> str | None:
    """Why ``name`` breaks ``rule``, or None. Rules (k8s.io/apimachinery/pkg/util/validation):

    - ``"subdomain"``: DNS-1123 subdomain, at most 253 characters (most kinds);
    - ``"label"``: DNS-1123 label, at most 63 (Namespace);
    - ``"dns1035"``: DNS-1035 label, at most 63, starts with a letter (Service);
    - ``"path"``: any name but "." and ".." without "/" or "%" (RBAC kinds).
    """
    if not name:
        return "must not be empty"
    if rule == "subdomain":
        if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
            return "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters"
    elif rule == "label":
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            return "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
    elif rule == "dns1035":
        if len(name) > 63 or not _DNS_1035_LABEL.fullmatch(name):
            return "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, at most 63 characters"
    elif rule == "path":
        if name in (".", "..") or "/" in name or "%" in name:
            return "must not be '.' or '..' and must not contain '/' or '%'"
    else:
        raise AssertionError(f"unknown name rule {rule!r}")
    return None


def _label_key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "prefix must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return "name part must be at most 63 characters: letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


#: Label keys and values already found valid: every copy of an object (a decode) validates
#: its labels again, with the same few strings. Membership only (no order); cleared at the bound.
_VALID_LABEL_KEYS: set[str] = set()
_VALID_LABEL_VALUES: set[str] = set()
_VALID_LABELS_MAX = 65536


def _check_labels(field: str, labels: Mapping[str, str], *, values: bool = True) -> None:
    valid_keys, valid_values = _VALID_LABEL_KEYS, _VALID_LABEL_VALUES
    for key, value in labels.items():
        if key not in valid_keys:
            problem = _label_key_problem(key)
            if problem:
                raise _field_error(f"{field}.{key}", f"invalid label key: {problem}")
            if len(valid_keys) >= _VALID_LABELS_MAX:
                valid_keys.clear()
            valid_keys.add(key)
        if values and value and value not in valid_values:
            if len(value) > 63 or not _QUALIFIED_NAME.fullmatch(value):
                raise _field_error(f"{field}.{key}", f"invalid label value {_short(value)}: at most 63 characters: letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
            if len(valid_values) >= _VALID_LABELS_MAX:
                valid_values.clear()
            valid_values.add(value)


# =========================================================================== metadata


class OwnerReference(_Struct):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(_Struct):
    """metav1.ObjectMeta. ``generation`` and ``resourceVersion`` are set by the API server."""

    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    self_link: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    finalizers: list[str] = []
    managed_fields: RawList | None = None  # None: not sent; [] resets them (fieldmanager.go)

    def __post_init__(self) -> None:
        # (Each check is skipped when there is nothing to check: every decode of every
        # object runs this, ~2 % of a cluster run.)
        if self.labels:
            _check_labels("labels", self.labels)
        if self.annotations:  # annotation keys follow the label-key rule; values are free text
            _check_labels("annotations", self.annotations, values=False)


class ObjectReference(_Struct):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""
    field_path: str = ""


class Condition(_Struct):
    """metav1.Condition (PodDisruptionBudget status and newer APIs)."""

    type: str
    status: str
    observed_generation: int = 0
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


# =========================================================================== label selectors

_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class LabelSelectorRequirement(_Struct):
    key: str
    operator: str
    values: list[str] = []

    def __post_init__(self) -> None:
        if self.operator not in _SELECTOR_OPERATORS:
            raise _field_error("operator", f"must be one of {', '.join(_SELECTOR_OPERATORS)}, not {_short(self.operator)}")
        if self.operator in ("In", "NotIn") and not self.values:
            raise _field_error("values", f"must be non-empty for operator {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise _field_error("values", f"must be empty for operator {self.operator}")


class LabelSelector(_Struct):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []

    def __post_init__(self) -> None:
        _check_labels("matchLabels", self.match_labels)


def matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (``metav1.LabelSelectorAsSelector``).

    A missing selector (None) selects nothing; an empty selector selects everything. Every
    ``matchLabels`` pair and every ``matchExpressions`` requirement must hold (AND).
    """
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    for requirement in selector.match_expressions:
        present = requirement.key in labels
        if requirement.operator == "In":
            ok = present and labels[requirement.key] in requirement.values
        elif requirement.operator == "NotIn":
            ok = not present or labels[requirement.key] not in requirement.values
        elif requirement.operator == "Exists":
            ok = present
        else:
            assert requirement.operator == "DoesNotExist", requirement.operator
            ok = not present
        if not ok:
            return False
    return True


# =========================================================================== pods


class ResourceRequirements(_Struct):
    limits: dict[str, Quantity] = {}
    requests: dict[str, Quantity] = {}
    claims: RawList = []

    def __post_init__(self) -> None:
        if self.limits:
            _normalize_resources("limits", self.limits)
        if self.requests:
            _normalize_resources("requests", self.requests)


class ContainerPort(_Struct):
    container_port: int
    name: str = ""
    protocol: str = ""
    host_port: int = 0
    host_ip: str = msgspec.field(default="", name="hostIP")


class ExecAction(_Struct):
    command: list[str] = []


class HTTPGetAction(_Struct):
    port: IntOrString
    path: str = ""
    host: str = ""
    scheme: str = ""
    http_headers: RawList = []


class TCPSocketAction(_Struct):
    port: IntOrString
    host: str = ""


class GRPCAction(_Struct):
    port: int
    service: str | None = None


class Probe(_Struct):
    """A liveness, readiness or startup probe. Unset thresholds take the Kubernetes defaults
    (timeout 1 s, period 10 s, success 1, failure 3) where they are used, not here."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: int = 0
    timeout_seconds: int | None = None
    period_seconds: int | None = None
    success_threshold: int | None = None
    failure_threshold: int | None = None
    termination_grace_period_seconds: int | None = None


class Container(_Struct):
    name: str
    image: str = ""
    command: list[str] = []
    args: list[str] = []
    working_dir: str = ""
    ports: list[ContainerPort] = []
    env_from: RawList = []
    env: RawList = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    resize_policy: RawList = []
    restart_policy: str = ""
    volume_mounts: RawList = []
    volume_devices: RawList = []
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    lifecycle: RawObject | None = None
    termination_message_path: str = ""
    termination_message_policy: str = ""
    image_pull_policy: str = ""
    security_context: RawObject | None = None
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False


class Toleration(_Struct):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class NodeSelectorRequirement(_Struct):
    """Operators In, NotIn, Exists, DoesNotExist, Gt, Lt (against node labels or fields).
    Decoded as any string, as upstream decodes it; the API server's validation refuses an
    unknown operator (``ValidateNodeSelectorRequirement``) with upstream's message."""

    key: str
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(_Struct):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Struct):
    node_selector_terms: list[NodeSelectorTerm]


class PreferredSchedulingTerm(_Struct):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(_Struct):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Struct):
    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Struct):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Struct):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class PodAntiAffinity(_Struct):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Struct):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAntiAffinity | None = None


class TopologySpreadConstraint(_Struct):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PodSpec(_Struct):
    containers: list[Container] = []
    init_containers: list[Container] = []
    ephemeral_containers: RawList = []
    volumes: RawList = []
    restart_policy: str = ""
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str = ""
    node_selector: dict[str, str] = {}
    service_account_name: str = ""
    service_account: str = ""  # deprecated alias of serviceAccountName
    automount_service_account_token: bool | None = None
    node_name: str = ""
    host_network: bool = False
    host_pid: bool = msgspec.field(default=False, name="hostPID")
    host_ipc: bool = msgspec.field(default=False, name="hostIPC")
    share_process_namespace: bool | None = None
    security_context: RawObject | None = None
    image_pull_secrets: RawList = []
    hostname: str = ""
    subdomain: str = ""
    affinity: Affinity | None = None
    scheduler_name: str = ""
    tolerations: list[Toleration] = []
    host_aliases: RawList = []
    priority_class_name: str = ""
    priority: int | None = None
    dns_config: RawObject | None = None
    readiness_gates: RawList = []
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    preemption_policy: str | None = None
    overhead: dict[str, Quantity] = {}
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    set_hostname_as_fqdn: bool | None = msgspec.field(default=None, name="setHostnameAsFQDN")
    os: RawObject | None = None
    host_users: bool | None = None
    scheduling_gates: RawList = []
    resource_claims: RawList = []
    resources: ResourceRequirements | None = None

    def __post_init__(self) -> None:
        if self.overhead:
            _normalize_resources("overhead", self.overhead)


class PodCondition(_Struct):
    type: str
    status: str
    observed_generation: int | None = None
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class ContainerStateWaiting(_Struct):
    reason: str = ""
    message: str = ""


class ContainerStateRunning(_Struct):
    started_at: Time | None = None


class ContainerStateTerminated(_Struct):
    exit_code: int
    signal: int = 0
    reason: str = ""
    message: str = ""
    started_at: Time | None = None
    finished_at: Time | None = None
    container_id: str = msgspec.field(default="", name="containerID")


class ContainerState(_Struct):
    waiting: ContainerStateWaiting | None = None
    running: ContainerStateRunning | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(_Struct):
    name: str
    state: ContainerState | None = None
    last_state: ContainerState | None = None
    ready: bool = False
    restart_count: int = 0
    image: str = ""
    image_id: str = msgspec.field(default="", name="imageID")
    container_id: str = msgspec.field(default="", name="containerID")
    started: bool | None = None
    allocated_resources: dict[str, Quantity] = {}
    resources: ResourceRequirements | None = None
    volume_mounts: RawList = []
    user: RawObject | None = None
    allocated_resources_status: RawList = []
    stop_signal: str | None = None

    def __post_init__(self) -> None:
        if self.allocated_resources:
            _normalize_resources("allocatedResources", self.allocated_resources)


class PodStatus(_Struct):
    observed_generation: int | None = None
    phase: str = ""
    conditions: list[PodCondition] = []
    message: str = ""
    reason: str = ""
    nominated_node_name: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")
    host_ips: RawList = msgspec.field(default_factory=list, name="hostIPs")
    pod_ip: str = msgspec.field(default="", name="podIP")
    pod_ips: RawList = msgspec.field(default_factory=list, name="podIPs")
    start_time: Time | None = None
    init_container_statuses: list[ContainerStatus] = []
    container_statuses: list[ContainerStatus] = []
    ephemeral_container_statuses: list[ContainerStatus] = []
    qos_class: str = ""
    resize: str = ""
    resource_claim_statuses: RawList = []


class PodTemplateSpec(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


# =========================================================================== top-level kinds


class KindInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the API server needs to know about a kind: where it is served and stored."""

    kind: str
    api_version: str
    resource: str  # the plural resource name, as in /registry/<resource>/...
    namespaced: bool
    name_rule: str  # see validate_name
    type: type


class _Object(_Struct):
    """Base of the top-level kinds. ``apiVersion`` and ``kind`` come from the class."""

    API_VERSION: ClassVar[str]
    KIND: ClassVar[str]
    RESOURCE: ClassVar[str]
    NAMESPACED: ClassVar[bool]
    NAME_RULE: ClassVar[str] = "subdomain"

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)

    @property
    def api_version(self) -> str:
        return self.API_VERSION

    @property
    def kind(self) -> str:
        return self.KIND


class NamespaceSpec(_Struct):
    finalizers: list[str] = []


class NamespaceStatus(_Struct):
    phase: str = ""
    conditions: RawList = []


class Namespace(_Object):
    API_VERSION = "v1"
    KIND = "Namespace"
    RESOURCE = "namespaces"
    NAMESPACED = False
    NAME_RULE = "label"

    spec: NamespaceSpec = msgspec.field(default_factory=NamespaceSpec)
    status: NamespaceStatus = msgspec.field(default_factory=NamespaceStatus)


class Pod(_Object):
    API_VERSION = "v1"
    KIND = "Pod"
    RESOURCE = "pods"
    NAMESPACED = True

    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(_Struct):
    key: str
    effect: str
    value: str = ""
    time_added: Time | None = None


class NodeCondition(_Struct):
    type: str
    status: str
    last_heartbeat_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class NodeAddress(_Struct):
    type: str
    address: str


class NodeSpec(_Struct):
    pod_cidr: str = msgspec.field(default="", name="podCIDR")
    pod_cidrs: list[str] = msgspec.field(default_factory=list, name="podCIDRs")
    provider_id: str = msgspec.field(default="", name="providerID")
    unschedulable: bool = False
    taints: list[Taint] = []
    config_source: RawObject | None = None
    external_id: str = msgspec.field(default="", name="externalID")


class NodeStatus(_Struct):
    capacity: dict[str, Quantity] = {}
    allocatable: dict[str, Quantity] = {}
    phase: str = ""
    conditions: list[NodeCondition] = []
    addresses: list[NodeAddress] = []
    daemon_endpoints: RawObject | None = None
    node_info: RawObject | None = None
    images: RawList = []
    volumes_in_use: list[str] = []
    volumes_attached: RawList = []
    config: RawObject | None = None
    runtime_handlers: RawList = []
    features: RawObject | None = None

    def __post_init__(self) -> None:
        _normalize_resources("capacity", self.capacity)
        _normalize_resources("allocatable", self.allocatable)


class Node(_Object):
    API_VERSION = "v1"
    KIND = "Node"
    RESOURCE = "nodes"
    NAMESPACED = False

    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class RollingUpdateDeployment(_Struct):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None

    def __post_init__(self) -> None:
        _check_percent("maxUnavailable", self.max_unavailable)
        _check_percent("maxSurge", self.max_surge)


class DeploymentStrategy(_Struct):
    type: str = ""
    rolling_update: RollingUpdateDeployment | None = None


class DeploymentSpec(_Struct):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    strategy: DeploymentStrategy = msgspec.field(default_factory=DeploymentStrategy)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None
    paused: bool = False
    progress_deadline_seconds: int | None = None


class DeploymentCondition(_Struct):
    type: str
    status: str
    last_update_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class DeploymentStatus(_Struct):
    observed_generation: int = 0
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    terminating_replicas: int | None = None
    conditions: list[DeploymentCondition] = []
    collision_count: int | None = None


class Deployment(_Object):
    API_VERSION = "apps/v1"
    KIND = "Deployment"
    RESOURCE = "deployments"
    NAMESPACED = True

    spec: DeploymentSpec = msgspec.field(default_factory=DeploymentSpec)
    status: DeploymentStatus = msgspec.field(default_factory=DeploymentStatus)


class ReplicaSetSpec(_Struct):
    replicas: int | None = None
    min_ready_seconds: int = 0
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class ReplicaSetCondition(_Struct):
    type: str
    status: str
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class ReplicaSetStatus(_Struct):
    replicas: int = 0
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    terminating_replicas: int | None = None
    observed_generation: int = 0
    conditions: list[ReplicaSetCondition] = []


class ReplicaSet(_Object):
    API_VERSION = "apps/v1"
    KIND = "ReplicaSet"
    RESOURCE = "replicasets"
    NAMESPACED = True

    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)
    status: ReplicaSetStatus = msgspec.field(default_factory=ReplicaSetStatus)


class ServicePort(_Struct):
    port: int
    name: str = ""
    protocol: str = ""
    app_protocol: str | None = None
    target_port: IntOrString | None = None
    node_port: int = 0


class ServiceSpec(_Struct):
    ports: list[ServicePort] = []
    selector: dict[str, str] = {}
    cluster_ip: str = msgspec.field(default="", name="clusterIP")
    cluster_ips: list[str] = msgspec.field(default_factory=list, name="clusterIPs")
    type: str = ""
    external_ips: list[str] = msgspec.field(default_factory=list, name="externalIPs")
    session_affinity: str = ""
    load_balancer_ip: str = msgspec.field(default="", name="loadBalancerIP")
    load_balancer_source_ranges: list[str] = []
    external_name: str = ""
    external_traffic_policy: str = ""
    health_check_node_port: int = 0
    publish_not_ready_addresses: bool = False
    session_affinity_config: RawObject | None = None
    ip_families: list[str] = []
    ip_family_policy: str | None = None
    allocate_load_balancer_node_ports: bool | None = None
    load_balancer_class: str | None = None
    internal_traffic_policy: str | None = None
    traffic_distribution: str | None = None

    def __post_init__(self) -> None:
        _check_labels("selector", self.selector)


class ServiceStatus(_Struct):
    load_balancer: RawObject = {}
    conditions: list[Condition] = []


class Service(_Object):
    API_VERSION = "v1"
    KIND = "Service"
    RESOURCE = "services"
    NAMESPACED = True
    NAME_RULE = "dns1035"

    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)
    status: ServiceStatus = msgspec.field(default_factory=ServiceStatus)


class EndpointConditions(_Struct):
    ready: bool | None = None
    serving: bool | None = None
    terminating: bool | None = None


class Endpoint(_Struct):
    addresses: list[str]
    conditions: EndpointConditions = msgspec.field(default_factory=EndpointConditions)
    hostname: str | None = None
    target_ref: ObjectReference | None = None
    node_name: str | None = None
    zone: str | None = None
    hints: RawObject | None = None


class EndpointPort(_Struct):
    name: str | None = None
    protocol: str | None = None
    port: int | None = None
    app_protocol: str | None = None


class EndpointSlice(_Object):
    API_VERSION = "discovery.k8s.io/v1"
    KIND = "EndpointSlice"
    RESOURCE = "endpointslices"
    NAMESPACED = True

    address_type: str = ""
    endpoints: list[Endpoint] = []
    ports: list[EndpointPort] = []


class PodDisruptionBudgetSpec(_Struct):
    min_available: IntOrString | None = None
    selector: LabelSelector | None = None
    max_unavailable: IntOrString | None = None
    unhealthy_pod_eviction_policy: str | None = None

    def __post_init__(self) -> None:
        _check_percent("minAvailable", self.min_available)
        _check_percent("maxUnavailable", self.max_unavailable)


class PodDisruptionBudgetStatus(_Struct):
    observed_generation: int = 0
    disrupted_pods: dict[str, Time] = {}
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    conditions: list[Condition] = []


class PodDisruptionBudget(_Object):
    API_VERSION = "policy/v1"
    KIND = "PodDisruptionBudget"
    RESOURCE = "poddisruptionbudgets"
    NAMESPACED = True

    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class LeaseSpec(_Struct):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: Time | None = None  # MicroTime
    renew_time: Time | None = None  # MicroTime
    lease_transitions: int | None = None
    strategy: str | None = None
    preferred_holder: str | None = None


class Lease(_Object):
    API_VERSION = "coordination.k8s.io/v1"
    KIND = "Lease"
    RESOURCE = "leases"
    NAMESPACED = True

    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)


class PriorityClass(_Object):
    API_VERSION = "scheduling.k8s.io/v1"
    KIND = "PriorityClass"
    RESOURCE = "priorityclasses"
    NAMESPACED = False

    value: int = 0
    global_default: bool = False
    description: str = ""
    preemption_policy: str | None = None


class ServiceAccount(_Object):
    API_VERSION = "v1"
    KIND = "ServiceAccount"
    RESOURCE = "serviceaccounts"
    NAMESPACED = True

    secrets: list[ObjectReference] = []
    image_pull_secrets: RawList = []
    automount_service_account_token: bool | None = None


class PolicyRule(_Struct):
    verbs: list[str]
    api_groups: list[str] = []
    resources: list[str] = []
    resource_names: list[str] = []
    non_resource_urls: list[str] = msgspec.field(default_factory=list, name="nonResourceURLs")


class AggregationRule(_Struct):
    cluster_role_selectors: list[LabelSelector] = []


class Role(_Object):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "Role"
    RESOURCE = "roles"
    NAMESPACED = True
    NAME_RULE = "path"

    rules: list[PolicyRule] = []


class ClusterRole(_Object):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "ClusterRole"
    RESOURCE = "clusterroles"
    NAMESPACED = False
    NAME_RULE = "path"

    rules: list[PolicyRule] = []
    aggregation_rule: AggregationRule | None = None


class Subject(_Struct):
    kind: str
    name: str
    api_group: str = ""
    namespace: str = ""


class RoleRef(_Struct):
    api_group: str
    kind: str
    name: str


class RoleBinding(_Object):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "RoleBinding"
    RESOURCE = "rolebindings"
    NAMESPACED = True
    NAME_RULE = "path"

    role_ref: RoleRef | None = None  # required by validation; optional here so errors name it
    subjects: list[Subject] = []


class ClusterRoleBinding(_Object):
    API_VERSION = "rbac.authorization.k8s.io/v1"
    KIND = "ClusterRoleBinding"
    RESOURCE = "clusterrolebindings"
    NAMESPACED = False
    NAME_RULE = "path"

    role_ref: RoleRef | None = None
    subjects: list[Subject] = []


class ServiceReference(_Struct):
    namespace: str
    name: str
    path: str | None = None
    port: int | None = None


class WebhookClientConfig(_Struct):
    url: str | None = None
    service: ServiceReference | None = None
    ca_bundle: str = ""  # base64, as in JSON


class RuleWithOperations(_Struct):
    operations: list[str] = []
    api_groups: list[str] = []
    api_versions: list[str] = []
    resources: list[str] = []
    scope: str | None = None


class MatchCondition(_Struct):
    name: str
    expression: str


class ValidatingWebhook(_Struct):
    """Unset ``failurePolicy`` means Fail and unset ``timeoutSeconds`` means 10 (v1 defaults)."""

    name: str
    client_config: WebhookClientConfig
    admission_review_versions: list[str] = []
    side_effects: str | None = None
    rules: list[RuleWithOperations] = []
    failure_policy: str | None = None
    match_policy: str | None = None
    namespace_selector: LabelSelector | None = None
    object_selector: LabelSelector | None = None
    timeout_seconds: int | None = None
    match_conditions: list[MatchCondition] = []


class MutatingWebhook(ValidatingWebhook):
    """As :class:`ValidatingWebhook`, plus ``reinvocationPolicy`` (default Never)."""

    reinvocation_policy: str | None = None


class ValidatingWebhookConfiguration(_Object):
    API_VERSION = "admissionregistration.k8s.io/v1"
    KIND = "ValidatingWebhookConfiguration"
    RESOURCE = "validatingwebhookconfigurations"
    NAMESPACED = False

    webhooks: list[ValidatingWebhook] = []


class MutatingWebhookConfiguration(_Object):
    API_VERSION = "admissionregistration.k8s.io/v1"
    KIND = "MutatingWebhookConfiguration"
    RESOURCE = "mutatingwebhookconfigurations"
    NAMESPACED = False

    webhooks: list[MutatingWebhook] = []


# =========================================================================== core/v1: configuration


class ConfigMap(_Object):
    """ConfigMap (v1): ``data`` (UTF-8 strings) and ``binaryData`` (base64), keys valid
    config keys (``[-._a-zA-Z0-9]+``), together at most 1 MiB (validated by the API server)."""

    API_VERSION = "v1"
    KIND = "ConfigMap"
    RESOURCE = "configmaps"
    NAMESPACED = True

    data: dict[str, str] = {}
    binary_data: dict[str, str] = {}
    immutable: bool | None = None


class Secret(_Object):
    """Secret (v1). ``stringData`` is write-only: the API server merges it into ``data``
    (base64) on write, as the v1 conversion does; ``type`` defaults to Opaque."""

    API_VERSION = "v1"
    KIND = "Secret"
    RESOURCE = "secrets"
    NAMESPACED = True

    data: dict[str, str] = {}
    string_data: dict[str, str] = {}
    type: str = ""
    immutable: bool | None = None


class EndpointSubset(_Struct):
    addresses: RawList = []
    not_ready_addresses: RawList = []
    ports: RawList = []


class Endpoints(_Object):
    """Endpoints (v1), the legacy form of a Service's backends: stored and served (a
    selector-less Service's hand-written Endpoints), not mirrored into EndpointSlices."""

    API_VERSION = "v1"
    KIND = "Endpoints"
    RESOURCE = "endpoints"
    NAMESPACED = True

    subsets: list[EndpointSubset] = []


# =========================================================================== core/v1: Event


class EventSource(_Struct):
    component: str = ""
    host: str = ""


class EventSeries(_Struct):
    """``series`` of an Event that repeats (the events.k8s.io recorder's form): how many
    times, and when it was last seen (a MicroTime)."""

    count: int = 0
    last_observed_time: Time = ""


class Event(_Object):
    """Event (v1), stored under ``/registry/events/<namespace>/<name>`` with an etcd lease of
    the API server's ``--event-ttl`` (default 1 h). ``events.k8s.io/v1`` Event is a view of
    the same objects (the front converts: ``regarding`` is ``involvedObject``, ``note`` is
    ``message``, ``reportingController`` is ``reportingComponent``,
    ``deprecatedCount``/``deprecatedFirstTimestamp``/``deprecatedLastTimestamp``/
    ``deprecatedSource`` are ``count``/``firstTimestamp``/``lastTimestamp``/``source``:
    ``pkg/apis/events/v1/conversion.go``). ``count`` and ``lastTimestamp`` grow as client-go's
    EventRecorder correlates repeats (``tools/record/events_cache.go``)."""

    API_VERSION = "v1"
    KIND = "Event"
    RESOURCE = "events"
    NAMESPACED = True

    involved_object: ObjectReference = msgspec.field(default_factory=ObjectReference)
    reason: str = ""
    message: str = ""
    source: EventSource = msgspec.field(default_factory=EventSource)
    first_timestamp: Time | None = None
    last_timestamp: Time | None = None
    count: int = 0
    type: str = ""
    event_time: Time | None = None
    series: EventSeries | None = None
    action: str = ""
    related: ObjectReference | None = None
    reporting_component: str = ""
    reporting_instance: str = ""


# =========================================================================== core/v1: ReplicationController


class ReplicationControllerSpec(_Struct):
    replicas: int | None = None
    min_ready_seconds: int = 0
    selector: dict[str, str] = {}
    template: PodTemplateSpec | None = None

    def __post_init__(self) -> None:
        _check_labels("selector", self.selector)


class ReplicationControllerStatus(_Struct):
    replicas: int = 0
    fully_labeled_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    observed_generation: int = 0
    conditions: list[ReplicaSetCondition] = []


class ReplicationController(_Object):
    """ReplicationController (v1): a ReplicaSet with an equality-based ``selector`` map
    (served by the ReplicaSet controller's logic, as upstream's
    ``pkg/controller/replication`` wraps ``replicaset``)."""

    API_VERSION = "v1"
    KIND = "ReplicationController"
    RESOURCE = "replicationcontrollers"
    NAMESPACED = True

    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)
    status: ReplicationControllerStatus = msgspec.field(default_factory=ReplicationControllerStatus)


# =========================================================================== storage


class TypedLocalObjectReference(_Struct):
    kind: str
    name: str
    api_group: str | None = None


class VolumeResourceRequirements(_Struct):
    limits: dict[str, Quantity] = {}
    requests: dict[str, Quantity] = {}

    def __post_init__(self) -> None:
        if self.limits:
            _normalize_resources("limits", self.limits)
        if self.requests:
            _normalize_resources("requests", self.requests)


class PersistentVolumeClaimSpec(_Struct):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(default_factory=VolumeResourceRequirements)
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    data_source: TypedLocalObjectReference | None = None
    data_source_ref: RawObject | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimCondition(_Struct):
    type: str
    status: str
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class PersistentVolumeClaimStatus(_Struct):
    phase: str = ""
    access_modes: list[str] = []
    capacity: dict[str, Quantity] = {}
    conditions: list[PersistentVolumeClaimCondition] = []
    allocated_resources: dict[str, Quantity] = {}
    allocated_resource_statuses: dict[str, str] = {}
    current_volume_attributes_class_name: str | None = None
    modify_volume_status: RawObject | None = None

    def __post_init__(self) -> None:
        _normalize_resources("capacity", self.capacity)


class PersistentVolumeClaim(_Object):
    API_VERSION = "v1"
    KIND = "PersistentVolumeClaim"
    RESOURCE = "persistentvolumeclaims"
    NAMESPACED = True

    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(_Struct):
    required: NodeSelector | None = None


class PersistentVolumeSpec(_Struct):
    """The volume sources are kept raw (which one it is matters, not its settings)."""

    capacity: dict[str, Quantity] = {}
    access_modes: list[str] = []
    claim_ref: ObjectReference | None = None
    persistent_volume_reclaim_policy: str = ""
    storage_class_name: str = ""
    mount_options: list[str] = []
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    aws_elastic_block_store: RawObject | None = msgspec.field(default=None, name="awsElasticBlockStore")
    azure_disk: RawObject | None = None
    azure_file: RawObject | None = None
    cephfs: RawObject | None = None
    cinder: RawObject | None = None
    csi: RawObject | None = None
    fc: RawObject | None = None
    flex_volume: RawObject | None = None
    flocker: RawObject | None = None
    gce_persistent_disk: RawObject | None = None
    glusterfs: RawObject | None = None
    host_path: RawObject | None = None
    iscsi: RawObject | None = None
    local: RawObject | None = None
    nfs: RawObject | None = None
    photon_persistent_disk: RawObject | None = None
    portworx_volume: RawObject | None = None
    quobyte: RawObject | None = None
    rbd: RawObject | None = None
    scale_io: RawObject | None = msgspec.field(default=None, name="scaleIO")
    storageos: RawObject | None = None
    vsphere_volume: RawObject | None = None

    def __post_init__(self) -> None:
        _normalize_resources("capacity", self.capacity)


class PersistentVolumeStatus(_Struct):
    phase: str = ""
    message: str = ""
    reason: str = ""
    last_phase_transition_time: Time | None = None


class PersistentVolume(_Object):
    API_VERSION = "v1"
    KIND = "PersistentVolume"
    RESOURCE = "persistentvolumes"
    NAMESPACED = False

    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class StorageClass(_Object):
    API_VERSION = "storage.k8s.io/v1"
    KIND = "StorageClass"
    RESOURCE = "storageclasses"
    NAMESPACED = False

    provisioner: str = ""  # required by validation; optional here so the error names it
    parameters: dict[str, str] = {}
    reclaim_policy: str | None = None
    mount_options: list[str] = []
    allow_volume_expansion: bool | None = None
    volume_binding_mode: str | None = None
    allowed_topologies: RawList = []


# =========================================================================== policy: LimitRange, ResourceQuota


class LimitRangeItem(_Struct):
    type: str
    max: dict[str, Quantity] = {}
    min: dict[str, Quantity] = {}
    default: dict[str, Quantity] = {}
    default_request: dict[str, Quantity] = {}
    max_limit_request_ratio: dict[str, Quantity] = {}

    def __post_init__(self) -> None:
        for name in ("max", "min", "default", "default_request", "max_limit_request_ratio"):
            _normalize_resources(name, getattr(self, name))


class LimitRangeSpec(_Struct):
    limits: list[LimitRangeItem] = []


class LimitRange(_Object):
    API_VERSION = "v1"
    KIND = "LimitRange"
    RESOURCE = "limitranges"
    NAMESPACED = True

    spec: LimitRangeSpec = msgspec.field(default_factory=LimitRangeSpec)


class ResourceQuotaSpec(_Struct):
    hard: dict[str, Quantity] = {}
    scopes: list[str] = []
    scope_selector: RawObject | None = None

    def __post_init__(self) -> None:
        _normalize_resources("hard", self.hard)


class ResourceQuotaStatus(_Struct):
    hard: dict[str, Quantity] = {}
    used: dict[str, Quantity] = {}

    def __post_init__(self) -> None:
        _normalize_resources("hard", self.hard)
        _normalize_resources("used", self.used)


class ResourceQuota(_Object):
    API_VERSION = "v1"
    KIND = "ResourceQuota"
    RESOURCE = "resourcequotas"
    NAMESPACED = True

    spec: ResourceQuotaSpec = msgspec.field(default_factory=ResourceQuotaSpec)
    status: ResourceQuotaStatus = msgspec.field(default_factory=ResourceQuotaStatus)


# =========================================================================== apps/v1: StatefulSet, DaemonSet, ControllerRevision


class RollingUpdateStatefulSetStrategy(_Struct):
    partition: int | None = None
    max_unavailable: IntOrString | None = None

    def __post_init__(self) -> None:
        _check_percent("maxUnavailable", self.max_unavailable)


class StatefulSetUpdateStrategy(_Struct):
    type: str = ""
    rolling_update: RollingUpdateStatefulSetStrategy | None = None


class StatefulSetPersistentVolumeClaimRetentionPolicy(_Struct):
    when_deleted: str = ""
    when_scaled: str = ""


class StatefulSetOrdinals(_Struct):
    start: int = 0


class PersistentVolumeClaimTemplate(_Struct):
    """A ``volumeClaimTemplates`` entry: a PersistentVolumeClaim without kind (its
    ``apiVersion``/``kind``, when written, are accepted and ignored, as the API server's
    decoder does for an embedded object)."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)
    api_version: str = ""
    kind: str = ""


class StatefulSetSpec(_Struct):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    volume_claim_templates: list[PersistentVolumeClaimTemplate] = []
    service_name: str = ""
    pod_management_policy: str = ""
    update_strategy: StatefulSetUpdateStrategy = msgspec.field(default_factory=StatefulSetUpdateStrategy)
    revision_history_limit: int | None = None
    min_ready_seconds: int = 0
    persistent_volume_claim_retention_policy: StatefulSetPersistentVolumeClaimRetentionPolicy | None = None
    ordinals: StatefulSetOrdinals | None = None


class StatefulSetCondition(_Struct):
    type: str
    status: str
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class StatefulSetStatus(_Struct):
    observed_generation: int = 0
    replicas: int = 0
    ready_replicas: int = 0
    current_replicas: int = 0
    updated_replicas: int = 0
    current_revision: str = ""
    update_revision: str = ""
    collision_count: int | None = None
    conditions: list[StatefulSetCondition] = []
    available_replicas: int = 0


class StatefulSet(_Object):
    API_VERSION = "apps/v1"
    KIND = "StatefulSet"
    RESOURCE = "statefulsets"
    NAMESPACED = True
    NAME_RULE = "label"  # ValidateStatefulSetName: apimachineryvalidation.NameIsDNSLabel (its pods' hostnames)

    spec: StatefulSetSpec = msgspec.field(default_factory=StatefulSetSpec)
    status: StatefulSetStatus = msgspec.field(default_factory=StatefulSetStatus)


class RollingUpdateDaemonSet(_Struct):
    max_unavailable: IntOrString | None = None
    max_surge: IntOrString | None = None

    def __post_init__(self) -> None:
        _check_percent("maxUnavailable", self.max_unavailable)
        _check_percent("maxSurge", self.max_surge)


class DaemonSetUpdateStrategy(_Struct):
    type: str = ""
    rolling_update: RollingUpdateDaemonSet | None = None


class DaemonSetSpec(_Struct):
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    update_strategy: DaemonSetUpdateStrategy = msgspec.field(default_factory=DaemonSetUpdateStrategy)
    min_ready_seconds: int = 0
    revision_history_limit: int | None = None


class DaemonSetCondition(_Struct):
    type: str
    status: str
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class DaemonSetStatus(_Struct):
    current_number_scheduled: int = 0
    number_misscheduled: int = 0
    desired_number_scheduled: int = 0
    number_ready: int = 0
    observed_generation: int = 0
    updated_number_scheduled: int = 0
    number_available: int = 0
    number_unavailable: int = 0
    collision_count: int | None = None
    conditions: list[DaemonSetCondition] = []


class DaemonSet(_Object):
    API_VERSION = "apps/v1"
    KIND = "DaemonSet"
    RESOURCE = "daemonsets"
    NAMESPACED = True

    spec: DaemonSetSpec = msgspec.field(default_factory=DaemonSetSpec)
    status: DaemonSetStatus = msgspec.field(default_factory=DaemonSetStatus)


class ControllerRevision(_Object):
    """ControllerRevision (apps/v1): an immutable snapshot of a StatefulSet's or DaemonSet's
    pod template (``data`` is the patch the controllers apply, kept raw)."""

    API_VERSION = "apps/v1"
    KIND = "ControllerRevision"
    RESOURCE = "controllerrevisions"
    NAMESPACED = True

    data: RawObject | None = None
    revision: int = 0


# =========================================================================== batch/v1: Job, CronJob


class PodFailurePolicyOnExitCodesRequirement(_Struct):
    operator: str
    values: list[int]
    container_name: str | None = None


class PodFailurePolicyOnPodConditionsPattern(_Struct):
    type: str
    status: str = ""


class PodFailurePolicyRule(_Struct):
    action: str
    name: str | None = None  # JobPodFailurePolicyRuleName (alpha): defaults to the rule's index
    on_exit_codes: PodFailurePolicyOnExitCodesRequirement | None = None
    on_pod_conditions: list[PodFailurePolicyOnPodConditionsPattern] = []


class PodFailurePolicy(_Struct):
    rules: list[PodFailurePolicyRule] = []


class JobSpec(_Struct):
    parallelism: int | None = None
    completions: int | None = None
    active_deadline_seconds: int | None = None
    pod_failure_policy: PodFailurePolicy | None = None
    success_policy: RawObject | None = None
    backoff_limit: int | None = None
    backoff_limit_per_index: int | None = None
    max_failed_indexes: int | None = None
    selector: LabelSelector | None = None
    manual_selector: bool | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    ttl_seconds_after_finished: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    pod_replacement_policy: str | None = None
    managed_by: str | None = None


class JobCondition(_Struct):
    type: str
    status: str
    last_probe_time: Time | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class UncountedTerminatedPods(_Struct):
    succeeded: list[str] = []
    failed: list[str] = []


class JobStatus(_Struct):
    conditions: list[JobCondition] = []
    start_time: Time | None = None
    completion_time: Time | None = None
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int | None = None
    completed_indexes: str = ""
    failed_indexes: str | None = None
    uncounted_terminated_pods: UncountedTerminatedPods | None = None
    ready: int | None = None


class Job(_Object):
    API_VERSION = "batch/v1"
    KIND = "Job"
    RESOURCE = "jobs"
    NAMESPACED = True

    spec: JobSpec = msgspec.field(default_factory=JobSpec)
    status: JobStatus = msgspec.field(default_factory=JobStatus)


class JobTemplateSpec(_Struct):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class CronJobSpec(_Struct):
    schedule: str = ""  # required by validation
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str = ""
    suspend: bool | None = None
    job_template: JobTemplateSpec = msgspec.field(default_factory=JobTemplateSpec)
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None


class CronJobStatus(_Struct):
    active: list[ObjectReference] = []
    last_schedule_time: Time | None = None
    last_successful_time: Time | None = None


class CronJob(_Object):
    API_VERSION = "batch/v1"
    KIND = "CronJob"
    RESOURCE = "cronjobs"
    NAMESPACED = True

    spec: CronJobSpec = msgspec.field(default_factory=CronJobSpec)
    status: CronJobStatus = msgspec.field(default_factory=CronJobStatus)


# =========================================================================== networking.k8s.io/v1


class ServiceBackendPort(_Struct):
    name: str = ""
    number: int = 0


class IngressServiceBackend(_Struct):
    name: str
    port: ServiceBackendPort = msgspec.field(default_factory=ServiceBackendPort)


class IngressBackend(_Struct):
    service: IngressServiceBackend | None = None
    resource: TypedLocalObjectReference | None = None


class HTTPIngressPath(_Struct):
    backend: IngressBackend
    path: str = ""
    path_type: str | None = None


class HTTPIngressRuleValue(_Struct):
    paths: list[HTTPIngressPath] = []


class IngressRule(_Struct):
    host: str = ""
    http: HTTPIngressRuleValue | None = None


class IngressSpec(_Struct):
    ingress_class_name: str | None = None
    default_backend: IngressBackend | None = None
    tls: RawList = []
    rules: list[IngressRule] = []


class IngressStatus(_Struct):
    load_balancer: RawObject = {}


class Ingress(_Object):
    API_VERSION = "networking.k8s.io/v1"
    KIND = "Ingress"
    RESOURCE = "ingresses"
    NAMESPACED = True

    spec: IngressSpec = msgspec.field(default_factory=IngressSpec)
    status: IngressStatus = msgspec.field(default_factory=IngressStatus)


class IngressClassSpec(_Struct):
    controller: str = ""
    parameters: RawObject | None = None


class IngressClass(_Object):
    API_VERSION = "networking.k8s.io/v1"
    KIND = "IngressClass"
    RESOURCE = "ingressclasses"
    NAMESPACED = False

    spec: IngressClassSpec = msgspec.field(default_factory=IngressClassSpec)


class NetworkPolicySpec(_Struct):
    pod_selector: LabelSelector | None = None  # required by validation ({} selects every pod)
    ingress: RawList = []
    egress: RawList = []
    policy_types: list[str] = []


class NetworkPolicy(_Object):
    API_VERSION = "networking.k8s.io/v1"
    KIND = "NetworkPolicy"
    RESOURCE = "networkpolicies"
    NAMESPACED = True

    spec: NetworkPolicySpec = msgspec.field(default_factory=NetworkPolicySpec)


# =========================================================================== autoscaling/v2


class CrossVersionObjectReference(_Struct):
    kind: str
    name: str
    api_version: str = ""


class HorizontalPodAutoscalerSpec(_Struct):
    scale_target_ref: CrossVersionObjectReference | None = None  # required by validation
    min_replicas: int | None = None
    max_replicas: int = 0
    metrics: RawList = []
    behavior: RawObject | None = None


class HorizontalPodAutoscalerStatus(_Struct):
    observed_generation: int | None = None
    last_scale_time: Time | None = None
    current_replicas: int = 0
    desired_replicas: int = 0
    current_metrics: RawList = []
    conditions: RawList = []


class HorizontalPodAutoscaler(_Object):
    """HorizontalPodAutoscaler (autoscaling/v2): stored, defaulted and validated; nothing
    here scales on metrics (no metrics pipeline is simulated)."""

    API_VERSION = "autoscaling/v2"
    KIND = "HorizontalPodAutoscaler"
    RESOURCE = "horizontalpodautoscalers"
    NAMESPACED = True

    spec: HorizontalPodAutoscalerSpec = msgspec.field(default_factory=HorizontalPodAutoscalerSpec)
    status: HorizontalPodAutoscalerStatus = msgspec.field(default_factory=HorizontalPodAutoscalerStatus)


# =========================================================================== apiextensions.k8s.io/v1


class CustomResourceDefinitionNames(_Struct):
    plural: str = ""
    kind: str = ""
    singular: str = ""
    short_names: list[str] = []
    list_kind: str = ""
    categories: list[str] = []


class CustomResourceValidation(_Struct):
    open_apiv3_schema: RawObject | None = msgspec.field(default=None, name="openAPIV3Schema")


class CustomResourceSubresourceScale(_Struct):
    spec_replicas_path: str = ""
    status_replicas_path: str = ""
    label_selector_path: str | None = None


class CustomResourceSubresources(_Struct):
    status: RawObject | None = None
    scale: CustomResourceSubresourceScale | None = None


class CustomResourceDefinitionVersion(_Struct):
    name: str
    served: bool = False
    storage: bool = False
    deprecated: bool = False
    deprecation_warning: str | None = None
    schema: CustomResourceValidation | None = None
    subresources: CustomResourceSubresources | None = None
    additional_printer_columns: RawList = []
    selectable_fields: RawList = []


class CustomResourceDefinitionSpec(_Struct):
    group: str = ""
    names: CustomResourceDefinitionNames = msgspec.field(default_factory=CustomResourceDefinitionNames)
    scope: str = ""
    versions: list[CustomResourceDefinitionVersion] = []
    conversion: RawObject | None = None
    preserve_unknown_fields: bool = False


class CustomResourceDefinitionCondition(_Struct):
    type: str
    status: str
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


class CustomResourceDefinitionStatus(_Struct):
    conditions: list[CustomResourceDefinitionCondition] = []
    accepted_names: CustomResourceDefinitionNames | None = None
    stored_versions: list[str] = []


class CustomResourceDefinition(_Object):
    API_VERSION = "apiextensions.k8s.io/v1"
    KIND = "CustomResourceDefinition"
    RESOURCE = "customresourcedefinitions"
    NAMESPACED = False

    spec: CustomResourceDefinitionSpec = msgspec.field(default_factory=CustomResourceDefinitionSpec)
    status: CustomResourceDefinitionStatus = msgspec.field(default_factory=CustomResourceDefinitionStatus)


class CustomObject(_Object):
    """An object of a custom resource (a CustomResourceDefinition's kind), as the
    "unstructured" objects of client-go's dynamic client: ``metadata`` typed, everything
    else (``spec``, ``status``, any other top-level field) in ``content`` as JSON.

    Each custom kind is a subclass made by :func:`custom_type` (cached by its signature:
    apiVersion, kind, plural resource, scope), so the class variables the control plane
    reads (``KIND``, ``RESOURCE``, ...) work as for the built-in kinds. Its Kubernetes JSON
    is flat (``content`` spread at the top level): :func:`chaoskube.api.manifests.to_dict`
    and the API server's storage write it so; never ``msgspec``-encode one for the wire.
    """

    API_VERSION: ClassVar[str] = ""
    KIND: ClassVar[str] = ""
    RESOURCE: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True
    GROUP: ClassVar[str] = ""

    content: dict[str, Any] = {}


class ScaleSpec(_Struct):
    replicas: int = 0


class ScaleStatus(_Struct):
    replicas: int = 0
    selector: str = ""


class Scale(_Object):
    """autoscaling/v1 Scale: what the ``scale`` subresource of a scalable kind (Deployment,
    ReplicaSet, StatefulSet, ReplicationController, a CRD with ``subresources.scale``)
    answers and accepts. Not stored: it is a view of its parent (not in :data:`KINDS`)."""

    API_VERSION = "autoscaling/v1"
    KIND = "Scale"
    RESOURCE = "scale"
    NAMESPACED = True

    spec: ScaleSpec = msgspec.field(default_factory=ScaleSpec)
    status: ScaleStatus = msgspec.field(default_factory=ScaleStatus)


class _Review(_Object):
    """A review (authorization.k8s.io/v1 access reviews, authentication.k8s.io/v1 token
    and self-subject reviews): created, answered with its ``status``, never stored (not in
    :data:`KINDS`). ``spec`` and ``status`` are kept as JSON (their schemas are upstream's:
    ``k8s.io/api/authorization/v1/types.go``, ``authentication/v1/types.go``)."""

    NAMESPACED = False
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {}


class SelfSubjectAccessReview(_Review):
    API_VERSION = "authorization.k8s.io/v1"
    KIND = "SelfSubjectAccessReview"
    RESOURCE = "selfsubjectaccessreviews"


class SubjectAccessReview(_Review):
    API_VERSION = "authorization.k8s.io/v1"
    KIND = "SubjectAccessReview"
    RESOURCE = "subjectaccessreviews"


class LocalSubjectAccessReview(_Review):
    API_VERSION = "authorization.k8s.io/v1"
    KIND = "LocalSubjectAccessReview"
    RESOURCE = "localsubjectaccessreviews"
    NAMESPACED = True


class SelfSubjectRulesReview(_Review):
    API_VERSION = "authorization.k8s.io/v1"
    KIND = "SelfSubjectRulesReview"
    RESOURCE = "selfsubjectrulesreviews"


class TokenReview(_Review):
    API_VERSION = "authentication.k8s.io/v1"
    KIND = "TokenReview"
    RESOURCE = "tokenreviews"


class SelfSubjectReview(_Review):
    API_VERSION = "authentication.k8s.io/v1"
    KIND = "SelfSubjectReview"
    RESOURCE = "selfsubjectreviews"


#: The review kinds by resource: served for ``create`` only.
REVIEWS: dict[str, KindInfo] = {
    cls.RESOURCE: KindInfo(kind=cls.KIND, api_version=cls.API_VERSION, resource=cls.RESOURCE, namespaced=cls.NAMESPACED, name_rule="subdomain", type=cls)
    for cls in (LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectReview, SelfSubjectRulesReview, SubjectAccessReview, TokenReview)
}


_CUSTOM_TYPES: dict[tuple[str, str, str, bool], type[CustomObject]] = {}


def custom_resource(plural: str, group: str) -> str:
    """The resource name a custom kind is served and stored under: ``<plural>.<group>``
    (``kubectl get widgets.example.com``), so it never collides with a built-in one."""
    return f"{plural}.{group}"


def custom_type(api_version: str, kind: str, resource: str, namespaced: bool) -> type[CustomObject]:
    """The :class:`CustomObject` subclass of one custom kind; the same arguments give the
    same class (a process-wide cache, bounded by the kinds ever defined)."""
    key = (api_version, kind, resource, namespaced)
    found = _CUSTOM_TYPES.get(key)
    if found is None:
        group = api_version.rpartition("/")[0]
        found = type(kind, (CustomObject,), {"API_VERSION": api_version, "KIND": kind, "RESOURCE": resource, "NAMESPACED": namespaced, "GROUP": group, "__module__": __name__})
        _CUSTOM_TYPES[key] = found
    return found


def is_custom(obj: Any) -> bool:
    return isinstance(obj, CustomObject)


def custom_kinds(crds: Any) -> dict[tuple[str, str], type[CustomObject]]:
    """(apiVersion, kind) -> type, for every served version of every CRD in ``crds``
    (CustomResourceDefinition objects; later ones win on a clash)."""
    out: dict[tuple[str, str], type[CustomObject]] = {}
    for crd in crds:
        spec = crd.spec
        if not spec.group or not spec.names.kind or not spec.names.plural:
            continue
        resource = custom_resource(spec.names.plural, spec.group)
        namespaced = spec.scope != "Cluster"
        for version in spec.versions:
            if version.served:
                api_version = f"{spec.group}/{version.name}"
                out[(api_version, spec.names.kind)] = custom_type(api_version, spec.names.kind, resource, namespaced)
    return out


Object: TypeAlias = Union[
    ClusterRole,
    ClusterRoleBinding,
    ConfigMap,
    ControllerRevision,
    CronJob,
    CustomResourceDefinition,
    DaemonSet,
    Deployment,
    EndpointSlice,
    Endpoints,
    Event,
    HorizontalPodAutoscaler,
    Ingress,
    IngressClass,
    Job,
    Lease,
    LimitRange,
    MutatingWebhookConfiguration,
    Namespace,
    NetworkPolicy,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    ResourceQuota,
    Role,
    RoleBinding,
    Secret,
    Service,
    ServiceAccount,
    StatefulSet,
    StorageClass,
    ValidatingWebhookConfiguration,
]

#: Every supported kind by name, in alphabetical order.
KINDS: dict[str, KindInfo] = {
    cls.KIND: KindInfo(kind=cls.KIND, api_version=cls.API_VERSION, resource=cls.RESOURCE, namespaced=cls.NAMESPACED, name_rule=cls.NAME_RULE, type=cls)
    for cls in sorted(Object.__args__, key=lambda cls: cls.KIND)
}
assert len({info.resource for info in KINDS.values()}) == len(KINDS)


def registry_key(obj: Object) -> str:
    """Where the API server stores ``obj``: ``/registry/<resource>/<namespace>/<name>``, or
    ``/registry/<resource>/<name>`` for a cluster-scoped kind (DESIGN.md). An empty
    namespace means "default", as kubectl fills in. (Kubernetes itself keeps two historical
    exceptions, nodes under "minions" and services under "services/specs"; we do not.)"""
    assert obj.metadata.name, "an object is stored under its name"
    if obj.NAMESPACED:
        return f"/registry/{obj.RESOURCE}/{obj.metadata.namespace or 'default'}/{obj.metadata.name}"
    return f"/registry/{obj.RESOURCE}/{obj.metadata.name}"


def deep_copy(obj: Any) -> Any:
    """A copy that shares nothing mutable with ``obj`` (client-go's ``DeepCopy``).

    A struct goes through msgspec's JSON codec (about 10x faster than copying field by
    field); what JSON cannot carry (non-string keys, tuples) is copied field by field."""
    if isinstance(obj, msgspec.Struct):
        try:
            return msgspec.json.decode(msgspec.json.encode(obj), type=type(obj))
        except (TypeError, msgspec.ValidationError):
            pass
        return msgspec.structs.replace(obj, **{field: deep_copy(getattr(obj, field)) for field in obj.__struct_fields__})
    if isinstance(obj, dict):
        return {key: deep_copy(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [deep_copy(value) for value in obj]
    return obj

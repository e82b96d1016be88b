"""The API server's validation step, between mutating and validating admission.

Types, enums of decoding, label syntax, quantities and percentages are already checked when
an object is decoded (:mod:`chaoskube.api.objects`). What is left are the rules of
``pkg/apis/*/validation/validation.go`` (core, apps, batch, networking, storage,
autoscaling, policy; ``apiextensions-apiserver``'s for CRDs in :mod:`crd`) with Kubernetes'
field paths and wording (``field.Required``, ``field.Invalid``, ``field.NotSupported``,
``field.Duplicate``, ``field.Forbidden``, ``field.TooLong``), values printed as Go's ``%#v``
prints them (``Invalid value: -3``, ``Invalid value: "Sometimes"``), and the immutability
rules of updates.

:func:`validate_create` and :func:`validate_update` return the causes (empty: valid); the
server answers 422 Invalid with them (``protocol.invalid``). Not modelled: the rules of
fields no component here reads (volumes' sources, security contexts, probe handlers, env).
The whole object's size is bounded by etcd (``--max-request-bytes``, 1.5 MiB:
``etcdserver: request is too large``), not here.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from chaoskube.api.cron import ScheduleError, parse_schedule, valid_time_zone
from chaoskube.api.objects import (
    ConfigMap,
    CronJob,
    CustomResourceDefinition,
    DaemonSet,
    Deployment,
    Event,
    HorizontalPodAutoscaler,
    Ingress,
    IngressBackend,
    IngressClass,
    Job,
    JobSpec,
    LabelSelector,
    LimitRange,
    MutatingWebhookConfiguration,
    NetworkPolicy,
    Object,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    ResourceQuota,
    Secret,
    StatefulSet,
    StorageClass,
    ValidatingWebhookConfiguration,
    matches,
    parse_quantity,
    validate_name,
)
from chaoskube.api.fields import go_value
from chaoskube.apiserver.crd import validate_crd, validate_crd_update
from chaoskube.apiserver.webhooks import unsupported_features, validate_configuration

__all__ = ["GENERATION_KINDS", "validate_create", "validate_update"]

# Kinds whose spec changes bump metadata.generation (their strategies' PrepareForUpdate).
GENERATION_KINDS = frozenset({
    "Deployment", "ReplicaSet", "PodDisruptionBudget", "EndpointSlice", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    "StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicationController", "HorizontalPodAutoscaler", "Ingress", "NetworkPolicy",
    "CustomResourceDefinition", "IngressClass",
})

#: ``apimachineryvalidation.TotalAnnotationSizeLimitB``: 256 KiB of annotation keys and values.
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024
#: ``corevalidation.MaxSecretSize`` and the ConfigMap bound (``core.MaxSecretSize``): 1 MiB.
MAX_SECRET_SIZE = 1024 * 1024
#: ``batchvalidation``: a CronJob's name leaves room for the 11-character suffix of its Jobs.
CRONJOB_NAME_MAX = 52
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_CONFIG_KEY_MESSAGE = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_VOLUME_SOURCES = (
    "aws_elastic_block_store", "azure_disk", "azure_file", "cephfs", "cinder", "csi", "fc", "flex_volume", "flocker",
    "gce_persistent_disk", "glusterfs", "host_path", "iscsi", "local", "nfs", "photon_persistent_disk", "portworx_volume",
    "quobyte", "rbd", "scale_io", "storageos", "vsphere_volume",
)


# =========================================================================== messages


def _required(path: str, what: str = "") -> str:
    return f"{path}: Required value" + (f": {what}" if what else "")


def _invalid(path: str, value: object, why: str) -> str:
    return f"{path}: Invalid value: {go_value(value)}: {why}"


def _unsupported(path: str, value: object, supported: Iterable[str]) -> str:
    return f"{path}: Unsupported value: {go_value(value)}: supported values: {', '.join(go_value(item) for item in supported)}"


def _forbidden(path: str, why: str) -> str:
    return f"{path}: Forbidden: {why}"


def _non_negative(path: str, value: int | None) -> list[str]:
    """``ValidateNonnegativeField``."""
    if value is not None and value < 0:
        return [_invalid(path, value, "must be greater than or equal to 0")]
    return []


def _immutable(path: str, value: object) -> str:
    return _invalid(path, value, "field is immutable")


# =========================================================================== metadata


def _metadata(obj: Object) -> list[str]:
    """``ValidateObjectMeta``: name, namespace presence, annotation size, owner references."""
    causes = []
    meta = obj.metadata
    problem = validate_name(obj.NAME_RULE, meta.name) if meta.name else None
    if not meta.name:
        causes.append(_required("metadata.name", "name or generateName is required"))
    elif problem:
        causes.append(_invalid("metadata.name", meta.name, problem))
    if obj.NAMESPACED and not meta.namespace:
        causes.append(_required("metadata.namespace"))
    if not obj.NAMESPACED and meta.namespace:
        causes.append("metadata.namespace: Forbidden: not allowed on this type")
    size = sum(len(key) + len(value) for key, value in meta.annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        causes.append(f"metadata.annotations: Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT_B} bytes")
    controllers = [reference for reference in meta.owner_references if reference.controller]
    for index, reference in enumerate(meta.owner_references):
        where = f"metadata.ownerReferences[{index}]"
        for field, value in (("apiVersion", reference.api_version), ("kind", reference.kind), ("name", reference.name), ("uid", reference.uid)):
            if not value:
                causes.append(_invalid(f"{where}.{field}", value, f"{field} must not be empty"))
    if len(controllers) > 1:
        names = ", ".join(f"{reference.kind}/{reference.name}" for reference in controllers)
        causes.append(_invalid("metadata.ownerReferences", "", f'Only one reference can have Controller set to true. Found "true" in references for {names}'))
    for index, finalizer in enumerate(meta.finalizers):
        if not finalizer:
            causes.append(_required(f"metadata.finalizers[{index}]"))
    return causes


# =========================================================================== pods


_RESTART_POLICIES = ("Always", "OnFailure", "Never")


def _resources(container: Any, where: str) -> list[str]:
    """``ValidateResourceRequirements``: no negative quantity; a request not above its limit."""
    causes = []
    requests, limits = container.resources.requests, container.resources.limits
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, value in sorted(values.items()):
            if parse_quantity(value) < 0:
                causes.append(_invalid(f"{where}.resources.{kind}[{name}]", value, "must be greater than or equal to 0"))
    for name, value in sorted(requests.items()):
        if name in limits and parse_quantity(value) > parse_quantity(limits[name]):
            causes.append(_invalid(f"{where}.resources.requests", value, f"must be less than or equal to {name} limit of {limits[name]}"))
    return causes


def _pod_spec(spec: PodSpec, path: str) -> list[str]:
    """``ValidatePodSpec``: containers required, names DNS labels and unique, images set,
    restartPolicy known, resources sane, grace period not negative."""
    causes = []
    if not spec.containers:
        causes.append(_required(f"{path}.containers"))
    seen: set[str] = set()
    for group, containers in (("initContainers", spec.init_containers), ("containers", spec.containers)):
        for index, container in enumerate(containers):
            where = f"{path}.{group}[{index}]"
            if not container.name:
                causes.append(_required(f"{where}.name"))
            elif validate_name("label", container.name):
                causes.append(_invalid(f"{where}.name", container.name, validate_name("label", container.name)))
            elif container.name in seen:
                causes.append(f"{where}.name: Duplicate value: {go_value(container.name)}")
            seen.add(container.name)
            if not container.image:
                causes.append(_required(f"{where}.image"))
            causes.extend(_resources(container, where))
    if spec.restart_policy and spec.restart_policy not in _RESTART_POLICIES:
        causes.append(_unsupported(f"{path}.restartPolicy", spec.restart_policy, _RESTART_POLICIES))
    if spec.termination_grace_period_seconds is not None and spec.termination_grace_period_seconds < 0:
        causes.append(_invalid(f"{path}.terminationGracePeriodSeconds", spec.termination_grace_period_seconds, "must be greater than or equal to 0"))
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        causes.append(_invalid(f"{path}.activeDeadlineSeconds", spec.active_deadline_seconds, "must be greater than or equal to 1"))
    causes.extend(validate_tolerations(spec.tolerations, f"{path}.tolerations"))
    if spec.affinity is not None and spec.affinity.node_affinity is not None:
        causes.extend(validate_node_affinity(spec.affinity.node_affinity, f"{path}.affinity.nodeAffinity"))
    return causes


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def label_value_problems(value: str) -> list[str]:
    """``validation.IsValidLabelValue``'s messages."""
    problems = []
    if len(value) > 63:
        problems.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        problems.append("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    return problems


def validate_tolerations(tolerations: Iterable[Any], path: str, *, comparison_operators: bool = False) -> list[str]:
    """``ValidateTolerations`` (``pkg/apis/core/validation``): a qualified-name key; an empty
    key only with Exists; tolerationSeconds only with NoExecute; Equal (or "") with a label
    value, Exists with none; any other operator refused (Gt/Lt only with the alpha
    ``TaintTolerationComparisonOperators`` gate, off as in upstream's default); a known effect."""
    causes = []
    for index, toleration in enumerate(tolerations):
        where = f"{path}[{index}]"
        if toleration.key:
            causes.extend(_invalid(f"{where}.key", toleration.key, problem) for problem in qualified_name_problems(toleration.key))
        if not toleration.key and toleration.operator != "Exists":
            causes.append(_invalid(f"{where}.operator", toleration.operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if toleration.toleration_seconds is not None and toleration.effect != "NoExecute":
            causes.append(_invalid(f"{where}.effect", toleration.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if toleration.operator in ("Equal", ""):
            problems = label_value_problems(toleration.value)
            if problems:
                causes.append(_invalid(f"{where}.operator", toleration.value, ";".join(problems)))
        elif toleration.operator == "Exists":
            if toleration.value:
                causes.append(f"{where}.operator: Invalid value: core.Toleration{{Key:{go_value(toleration.key)}, Operator:{go_value(toleration.operator)}, Value:{go_value(toleration.value)}, "
                              f"Effect:{go_value(toleration.effect)}, TolerationSeconds:{'(*int64)(nil)' if toleration.toleration_seconds is None else '(*int64)(...)'}}}: value must be empty when `operator` is 'Exists'")
        elif comparison_operators and toleration.operator in ("Gt", "Lt"):
            if re.fullmatch(r"-?(0|[1-9][0-9]*)", toleration.value) is None:
                causes.append(_invalid(f"{where}.value", toleration.value, "value must be a valid integer for Gt and Lt operators"))
        else:
            supported = ("Equal", "Exists", "Gt", "Lt") if comparison_operators else ("Equal", "Exists")
            causes.append(_unsupported(f"{where}.operator", toleration.operator, supported))
        if toleration.effect and toleration.effect not in _TAINT_EFFECTS:
            causes.append(_unsupported(f"{where}.effect", toleration.effect, _TAINT_EFFECTS))
    return causes


def validate_node_selector_requirement(requirement: Any, path: str) -> list[str]:
    """``ValidateNodeSelectorRequirement``: values by operator, a qualified-name key."""
    causes = []
    if requirement.operator in ("In", "NotIn"):
        if not requirement.values:
            causes.append(_required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif requirement.operator in ("Exists", "DoesNotExist"):
        if requirement.values:
            causes.append(_forbidden(f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif requirement.operator in ("Gt", "Lt"):
        if len(requirement.values) != 1:
            causes.append(_required(f"{path}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        causes.append(_invalid(f"{path}.operator", requirement.operator, "not a valid selector operator"))
    causes.extend(_invalid(f"{path}.key", requirement.key, problem) for problem in qualified_name_problems(requirement.key))
    return causes


def validate_node_field_selector_requirement(requirement: Any, path: str) -> list[str]:
    """``ValidateNodeFieldSelectorRequirement``: In/NotIn with one value, on ``metadata.name``
    (a valid node name)."""
    causes = []
    if requirement.operator in ("In", "NotIn"):
        if len(requirement.values) != 1:
            causes.append(_required(f"{path}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        causes.append(_invalid(f"{path}.operator", requirement.operator, "not a valid selector operator"))
    if requirement.key != "metadata.name":
        causes.append(_invalid(f"{path}.key", requirement.key, "not a valid field selector key"))
    else:
        for index, value in enumerate(requirement.values):
            causes.extend(_invalid(f"{path}.values[{index}]", value, problem) for problem in _subdomain_problems(value))
    return causes


def validate_node_selector_term(term: Any, path: str) -> list[str]:
    causes = []
    for index, requirement in enumerate(term.match_expressions):
        causes.extend(validate_node_selector_requirement(requirement, f"{path}.matchExpressions[{index}]"))
    for index, requirement in enumerate(term.match_fields):
        causes.extend(validate_node_field_selector_requirement(requirement, f"{path}.matchFields[{index}]"))
    return causes


def validate_node_selector(selector: Any, path: str) -> list[str]:
    """``ValidateNodeSelector``: at least one term, each term valid."""
    if not selector.node_selector_terms:
        return [_required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    causes = []
    for index, term in enumerate(selector.node_selector_terms):
        causes.extend(validate_node_selector_term(term, f"{path}.nodeSelectorTerms[{index}]"))
    return causes


def validate_node_affinity(node_affinity: Any, path: str) -> list[str]:
    """``validateNodeAffinity``: the required selector, and the preferred terms' weights
    (1-100) and preferences."""
    causes = []
    if node_affinity.required_during_scheduling_ignored_during_execution is not None:
        causes.extend(validate_node_selector(node_affinity.required_during_scheduling_ignored_during_execution, f"{path}.requiredDuringSchedulingIgnoredDuringExecution"))
    for index, term in enumerate(node_affinity.preferred_during_scheduling_ignored_during_execution):
        where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{index}]"
        if term.weight <= 0 or term.weight > 100:
            causes.append(_invalid(f"{where}.weight", term.weight, "must be in the range 1-100"))
        causes.extend(validate_node_selector_term(term.preference, f"{where}.preference"))
    return causes


def _template(template: PodTemplateSpec | None, path: str, restart_policies: tuple[str, ...]) -> list[str]:
    """``ValidatePodTemplateSpec`` plus the controller's restartPolicy rule."""
    if template is None:
        return [_required(path)]
    causes = _pod_spec(template.spec, f"{path}.spec")
    policy = template.spec.restart_policy or "Always"
    if policy not in restart_policies:
        causes.append(_unsupported(f"{path}.spec.restartPolicy", policy, restart_policies))
    return causes


def _selector_matches(selector: LabelSelector | None, template: PodTemplateSpec, path: str = "spec") -> list[str]:
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return [_required(f"{path}.selector")]
    if not matches(selector, template.metadata.labels):
        return [_invalid(f"{path}.template.metadata.labels", template.metadata.labels, "`selector` does not match template `labels`")]
    return []


def _percent_or_int(path: str, value: int | str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return int(value[:-1]) if value.endswith("%") else None


# =========================================================================== apps


def validate_pod_template_spec_for_replica_set(template: PodTemplateSpec, selector: LabelSelector | None, path: str, kind: str = "ReplicaSet") -> list[str]:
    """``ValidatePodTemplateSpecForReplicaSet``: a non-empty selector matches the template's
    labels (a nil one is labels.Nothing(): it matches none), the template is valid, restartPolicy
    Always, no activeDeadlineSeconds."""
    causes = []
    if selector is None or selector.match_labels or selector.match_expressions:
        if selector is None or not matches(selector, template.metadata.labels):
            causes.append(_invalid(f"{path}.metadata.labels", template.metadata.labels, "`selector` does not match template `labels`"))
    causes.extend(validate_pod_template_spec(template, path))
    if template.spec.restart_policy != "Always":
        causes.append(_unsupported(f"{path}.spec.restartPolicy", template.spec.restart_policy, ("Always",)))
    if template.spec.active_deadline_seconds is not None:
        causes.append(_forbidden(f"{path}.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return causes


def _replica_set_selector(selector: LabelSelector | None, path: str) -> list[str]:
    """The selector half of ``ValidateDeploymentSpec`` / ``ValidateReplicaSetSpec`` (keys and
    values are checked when a body is decoded)."""
    if selector is None:
        return [_required(f"{path}.selector")]
    if not selector.match_labels and not selector.match_expressions:
        return [_invalid(f"{path}.selector", "", "empty selector is invalid for deployment")]
    return []


def validate_rolling_update_deployment(rolling: Any, path: str) -> list[str]:
    """``ValidateRollingUpdateDeployment``."""
    causes = validate_positive_int_or_percent(rolling.max_unavailable, f"{path}.maxUnavailable")
    causes += validate_positive_int_or_percent(rolling.max_surge, f"{path}.maxSurge")
    if _int_or_percent_value(rolling.max_unavailable) == 0 and _int_or_percent_value(rolling.max_surge) == 0:
        causes.append(_invalid(f"{path}.maxUnavailable", rolling.max_unavailable or 0, "may not be 0 when `maxSurge` is 0"))
    causes += _not_more_than_100_percent(rolling.max_unavailable, f"{path}.maxUnavailable")
    return causes


def validate_deployment_strategy(strategy: Any, path: str) -> list[str]:
    """``ValidateDeploymentStrategy`` (run after defaulting: an empty type is refused)."""
    if strategy.type == "Recreate":
        return [_forbidden(f"{path}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")] if strategy.rolling_update is not None else []
    if strategy.type == "RollingUpdate":
        if strategy.rolling_update is None:
            return [_required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        return validate_rolling_update_deployment(strategy.rolling_update, f"{path}.rollingUpdate")
    return [_unsupported(path, strategy.type, ("Recreate", "RollingUpdate"))]


def validate_deployment_spec(spec: Any, path: str = "spec") -> list[str]:
    """``ValidateDeploymentSpec`` (apps/v1 has no rollbackTo)."""
    causes = _non_negative(f"{path}.replicas", spec.replicas or 0)
    causes += _replica_set_selector(spec.selector, path)
    causes += validate_pod_template_spec_for_replica_set(spec.template, spec.selector, f"{path}.template")
    causes += validate_deployment_strategy(spec.strategy, f"{path}.strategy")
    causes += _non_negative(f"{path}.minReadySeconds", spec.min_ready_seconds)
    if spec.revision_history_limit is not None:
        causes += _non_negative(f"{path}.revisionHistoryLimit", spec.revision_history_limit)
    if spec.progress_deadline_seconds is not None:
        causes += _non_negative(f"{path}.progressDeadlineSeconds", spec.progress_deadline_seconds)
        if spec.progress_deadline_seconds <= spec.min_ready_seconds:
            causes.append(_invalid(f"{path}.progressDeadlineSeconds", spec.progress_deadline_seconds, "must be greater than minReadySeconds"))
    return causes


def validate_replica_set_spec(spec: Any, path: str = "spec") -> list[str]:
    """``ValidateReplicaSetSpec``."""
    causes = _non_negative(f"{path}.replicas", spec.replicas or 0) + _non_negative(f"{path}.minReadySeconds", spec.min_ready_seconds)
    causes += _replica_set_selector(spec.selector, path)
    causes += validate_pod_template_spec_for_replica_set(spec.template, spec.selector, f"{path}.template")
    return causes


def _workload(obj: Deployment | ReplicaSet) -> list[str]:
    """``ValidateDeploymentSpec`` / ``ValidateReplicaSetSpec``."""
    return validate_deployment_spec(obj.spec) if isinstance(obj, Deployment) else validate_replica_set_spec(obj.spec)


def validate_deployment(obj: Deployment) -> list[str]:
    """``ValidateDeployment``: metadata and spec."""
    return _metadata(obj) + validate_deployment_spec(obj.spec)


def validate_deployment_update(new: Deployment, old: Deployment) -> list[str]:
    """``ValidateDeploymentUpdate``: the metadata update and the new spec (the selector's
    immutability is apps/v1's strategy's, in :func:`validate_update`)."""
    return _metadata_update(old, new) + validate_deployment_spec(new.spec)


def validate_replica_set(obj: ReplicaSet) -> list[str]:
    """``ValidateReplicaSet``: metadata and spec."""
    return _metadata(obj) + validate_replica_set_spec(obj.spec)


def validate_replica_set_update(new: ReplicaSet, old: ReplicaSet) -> list[str]:
    """``ValidateReplicaSetUpdate``: the metadata update and the new spec (the selector's
    immutability is apps/v1's strategy's, in :func:`validate_update`)."""
    return _metadata_update(old, new) + validate_replica_set_spec(new.spec)


def _replication_controller(rc: ReplicationController) -> list[str]:
    """``ValidateReplicationControllerSpec``: the selector map must be non-empty and select
    the template's labels."""
    causes = _non_negative("spec.replicas", rc.spec.replicas) + _non_negative("spec.minReadySeconds", rc.spec.min_ready_seconds)
    if not rc.spec.selector:
        causes.append(_required("spec.selector"))
    elif rc.spec.template is not None and any(rc.spec.template.metadata.labels.get(key) != value for key, value in rc.spec.selector.items()):
        causes.append(_invalid("spec.template.metadata.labels", rc.spec.template.metadata.labels, "`selector` does not match template `labels`"))
    causes.extend(_template(rc.spec.template, "spec.template", ("Always",)))
    return causes


_POD_MANAGEMENT = ("OrderedReady", "Parallel")
_STATEFUL_UPDATES = ("OnDelete", "RollingUpdate")


def validate_stateful_set_spec(spec: Any, path: str = "spec") -> list[str]:
    """``ValidateStatefulSetSpec`` (``pkg/apis/apps/validation/validation.go``, v1.30). As
    upstream, the pod template's spec is not validated (its TODO: the volumes would fail),
    only the selector against its labels; the restart policy must be Always, and
    activeDeadlineSeconds is forbidden."""
    causes = []
    if spec.pod_management_policy == "":
        causes.append(_required(f"{path}.podManagementPolicy"))
    elif spec.pod_management_policy not in _POD_MANAGEMENT:
        causes.append(_invalid(f"{path}.podManagementPolicy", spec.pod_management_policy, "must be 'OrderedReady' or 'Parallel'"))
    strategy = spec.update_strategy
    if strategy.type == "":
        causes.append(_required(f"{path}.updateStrategy"))
    elif strategy.type == "OnDelete":
        if strategy.rolling_update is not None:
            causes.append(_invalid(f"{path}.updateStrategy.rollingUpdate", "", "only allowed for updateStrategy 'RollingUpdate'"))
    elif strategy.type == "RollingUpdate":
        if strategy.rolling_update is not None:
            rolling, where = strategy.rolling_update, f"{path}.updateStrategy.rollingUpdate"
            causes.extend(_non_negative(f"{where}.partition", rolling.partition or 0))
            if rolling.max_unavailable is not None:
                value = rolling.max_unavailable
                number = _percent_or_int("", value)
                if number is not None and number < 0:
                    causes.append(_invalid(f"{where}.maxUnavailable", value, "must be greater than or equal to 0"))
                if number == 0:
                    causes.append(_invalid(f"{where}.maxUnavailable", value, "cannot be 0"))
                if isinstance(value, str) and number is not None and number > 100:
                    causes.append(_invalid(f"{where}.maxUnavailable", value, "must not be greater than 100%"))
    else:
        causes.append(_invalid(f"{path}.updateStrategy", "", "must be 'RollingUpdate' or 'OnDelete'"))
    if spec.persistent_volume_claim_retention_policy is not None:
        policy = spec.persistent_volume_claim_retention_policy
        for field, value in (("whenDeleted", policy.when_deleted), ("whenScaled", policy.when_scaled)):
            if value not in ("Retain", "Delete"):
                causes.append(_unsupported(f"{path}.persistentVolumeClaimRetentionPolicy.{field}", value, ("Retain", "Delete")))
    causes.extend(_non_negative(f"{path}.replicas", spec.replicas or 0))
    causes.extend(_non_negative(f"{path}.minReadySeconds", spec.min_ready_seconds))
    if spec.ordinals is not None:
        causes.extend(_non_negative(f"{path}.ordinals.start", spec.ordinals.start))
    if spec.selector is None:
        causes.append(_required(f"{path}.selector"))
    elif not spec.selector.match_labels and not spec.selector.match_expressions:
        causes.append(_invalid(f"{path}.selector", "", "empty selector is invalid for statefulset"))
    # LabelSelectorAsSelector(nil) is labels.Nothing(): it matches no labels
    if spec.selector is None or not matches(spec.selector, spec.template.metadata.labels):
        causes.append(_invalid(f"{path}.template.metadata.labels", spec.template.metadata.labels, "`selector` does not match template `labels`"))
    if spec.template.spec.restart_policy != "Always":
        causes.append(_unsupported(f"{path}.template.spec.restartPolicy", spec.template.spec.restart_policy, ("Always",)))
    if spec.template.spec.active_deadline_seconds is not None:
        causes.append(_forbidden(f"{path}.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in StatefulSet is not Supported"))
    return causes


def _stateful_set(sts: StatefulSet) -> list[str]:
    """``ValidateStatefulSetSpec`` (``validate_stateful_set_spec``)."""
    return validate_stateful_set_spec(sts.spec)


def validate_stateful_set_status(status: Any, path: str = "status") -> list[str]:
    """``ValidateStatefulSetStatus``: counts not negative and not above replicas; available
    not above ready."""
    causes = []
    for field, value in (("replicas", status.replicas), ("readyReplicas", status.ready_replicas), ("currentReplicas", status.current_replicas),
                         ("updatedReplicas", status.updated_replicas), ("availableReplicas", status.available_replicas),
                         ("observedGeneration", status.observed_generation), ("collisionCount", status.collision_count)):
        causes.extend(_non_negative(f"{path}.{field}", value))
    for field, value in (("readyReplicas", status.ready_replicas), ("currentReplicas", status.current_replicas), ("updatedReplicas", status.updated_replicas),
                         ("availableReplicas", status.available_replicas)):
        if value > status.replicas:
            causes.append(_invalid(f"{path}.{field}", value, "cannot be greater than status.replicas"))
    if status.available_replicas > status.ready_replicas:
        causes.append(_invalid(f"{path}.availableReplicas", status.available_replicas, "cannot be greater than status.readyReplicas"))
    return causes


def _metadata_update(old: Object, new: Object) -> list[str]:
    """``ValidateObjectMetaUpdate``'s name and namespace immutability."""
    causes = []
    if new.metadata.name != old.metadata.name:
        causes.append(_immutable("metadata.name", new.metadata.name))
    if new.metadata.namespace != old.metadata.namespace:
        causes.append(_immutable("metadata.namespace", new.metadata.namespace))
    return causes


def validate_stateful_set_update(new: StatefulSet, old: StatefulSet) -> list[str]:
    """``ValidateStatefulSetUpdate``: the metadata update (the name is not validated again:
    upstream once allowed DNS subdomains), the new spec, and only replicas, ordinals,
    template, updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and
    minReadySeconds may change."""
    causes = _metadata_update(old, new) + validate_stateful_set_spec(new.spec)
    causes.extend(_stateful_set_update(old, new))
    return causes


def _stateful_set_update(old: StatefulSet, new: StatefulSet) -> list[str]:
    """``ValidateStatefulSetUpdate``: only replicas, ordinals, template, updateStrategy,
    persistentVolumeClaimRetentionPolicy and minReadySeconds may change."""
    relaxed = msgspec.structs.replace(
        new.spec, replicas=old.spec.replicas, ordinals=old.spec.ordinals, template=old.spec.template, update_strategy=old.spec.update_strategy,
        persistent_volume_claim_retention_policy=old.spec.persistent_volume_claim_retention_policy, min_ready_seconds=old.spec.min_ready_seconds,
        revision_history_limit=old.spec.revision_history_limit,
    )
    if msgspec.json.encode(relaxed) != msgspec.json.encode(old.spec):
        return [_forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")]
    return []


_DAEMON_UPDATES = ("RollingUpdate", "OnDelete")
#: apps/v1 carries the internal ``spec.templateGeneration`` in this annotation (the v1
#: conversion reads and writes it); the model's strategy does not maintain it.
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
_PERCENT = re.compile(r"^[0-9]+%$")


def daemon_set_template_generation(ds: DaemonSet) -> int:
    """The internal ``spec.templateGeneration`` as apps/v1's conversion reads it (0 when the
    annotation is absent or not an integer)."""
    try:
        return int(ds.metadata.annotations.get(TEMPLATE_GENERATION_ANNOTATION, "0"))
    except ValueError:
        return 0


def validate_positive_int_or_percent(value: int | str | None, path: str) -> list[str]:
    """``ValidatePositiveIntOrPercent``: a percent string ``[0-9]+%`` or a non-negative int."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [_invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]
        return []
    return _non_negative(path, value or 0)


def _int_or_percent_value(value: int | str | None) -> int:
    """``getIntOrPercentValue`` (an unset IntOrString is the int 0)."""
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.match(value) else 0
    return value or 0


def _not_more_than_100_percent(value: int | str | None, path: str) -> list[str]:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        return [_invalid(path, value, "must not be greater than 100%")]
    return []


def validate_rolling_update_daemon_set(rolling: Any, path: str) -> list[str]:
    """``ValidateRollingUpdateDaemonSet``: both int-or-percent, neither above 100%, exactly
    one of maxSurge and maxUnavailable non-zero."""
    causes = validate_positive_int_or_percent(rolling.max_unavailable, f"{path}.maxUnavailable")
    causes += validate_positive_int_or_percent(rolling.max_surge, f"{path}.maxSurge")
    causes += _not_more_than_100_percent(rolling.max_unavailable, f"{path}.maxUnavailable")
    causes += _not_more_than_100_percent(rolling.max_surge, f"{path}.maxSurge")
    has_unavailable, has_surge = _int_or_percent_value(rolling.max_unavailable) != 0, _int_or_percent_value(rolling.max_surge) != 0
    if has_unavailable and has_surge:
        causes.append(_invalid(f"{path}.maxSurge", rolling.max_surge, "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        causes.append(_required(f"{path}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return causes


def validate_daemon_set_update_strategy(strategy: Any, path: str) -> list[str]:
    """``ValidateDaemonSetUpdateStrategy`` (run after defaulting: an empty type is refused)."""
    if strategy.type == "OnDelete":
        return []
    if strategy.type == "RollingUpdate":
        if strategy.rolling_update is None:
            return [_required(f"{path}.rollingUpdate")]
        return validate_rolling_update_daemon_set(strategy.rolling_update, f"{path}.rollingUpdate")
    return [_unsupported(path, strategy.type, _DAEMON_UPDATES)]


def validate_daemon_set_spec(spec: Any, path: str = "spec", template_generation: int = 0) -> list[str]:
    """``ValidateDaemonSetSpec`` (selector keys and values are checked when a body is decoded)."""
    causes = []
    # LabelSelectorAsSelector(nil) is labels.Nothing(): it matches no labels
    if spec.selector is None or not matches(spec.selector, spec.template.metadata.labels):
        causes.append(_invalid(f"{path}.template.metadata.labels", spec.template.metadata.labels, "`selector` does not match template `labels`"))
    if spec.selector is not None and not spec.selector.match_labels and not spec.selector.match_expressions:
        causes.append(_invalid(f"{path}.selector", "", "empty selector is invalid for daemonset"))
    causes.extend(validate_pod_template_spec(spec.template, f"{path}.template"))
    if spec.template.spec.restart_policy != "Always":
        causes.append(_unsupported(f"{path}.template.spec.restartPolicy", spec.template.spec.restart_policy, ("Always",)))
    if spec.template.spec.active_deadline_seconds is not None:
        causes.append(_forbidden(f"{path}.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in DaemonSet is not Supported"))
    causes.extend(_non_negative(f"{path}.minReadySeconds", spec.min_ready_seconds))
    causes.extend(_non_negative(f"{path}.templateGeneration", template_generation))
    causes.extend(validate_daemon_set_update_strategy(spec.update_strategy, f"{path}.updateStrategy"))
    if spec.revision_history_limit is not None:
        causes.extend(_non_negative(f"{path}.revisionHistoryLimit", spec.revision_history_limit))
    return causes


def validate_pod_template_spec(template: PodTemplateSpec, path: str) -> list[str]:
    """``ValidatePodTemplateSpec``: the pod spec, no ephemeral containers (the template's
    labels and annotations are checked when a body is decoded)."""
    causes = _pod_spec(template.spec, f"{path}.spec")
    if template.spec.ephemeral_containers:
        causes.append(_forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return causes


def _daemon_set(ds: DaemonSet) -> list[str]:
    """``ValidateDaemonSet``'s spec half."""
    return validate_daemon_set_spec(ds.spec, "spec", daemon_set_template_generation(ds))


def validate_daemon_set(ds: DaemonSet) -> list[str]:
    """``ValidateDaemonSet``: metadata and spec."""
    return _metadata(ds) + _daemon_set(ds)


def validate_daemon_set_spec_update(new: DaemonSet, old: DaemonSet, path: str = "spec") -> list[str]:
    """``ValidateDaemonSetSpecUpdate``: templateGeneration never decremented, incremented when
    and only when the template changes."""
    causes = []
    new_generation, old_generation = daemon_set_template_generation(new), daemon_set_template_generation(old)
    if new_generation < old_generation:
        causes.append(_invalid(f"{path}.templateGeneration", new_generation, "must not be decremented"))
    # apiequality.Semantic.DeepEqual: an empty and a nil list are equal (the model decodes both to [])
    template_updated = _encoded(new.spec.template) != _encoded(old.spec.template)
    if new_generation == old_generation and template_updated:
        causes.append(_invalid(f"{path}.templateGeneration", new_generation, "must be incremented upon template update"))
    elif new_generation > old_generation and not template_updated:
        causes.append(_invalid(f"{path}.templateGeneration", new_generation, "must not be incremented without template update"))
    return causes


def validate_daemon_set_update(new: DaemonSet, old: DaemonSet) -> list[str]:
    """``ValidateDaemonSetUpdate``: the metadata update, the spec update (templateGeneration)
    and the new spec. The selector's immutability is the strategy's (apps/v1), in
    :func:`validate_update`."""
    return _metadata_update(old, new) + validate_daemon_set_spec_update(new, old) + _daemon_set(new)


def validate_daemon_set_status_update(new: DaemonSet, old: DaemonSet) -> list[str]:
    """``ValidateDaemonSetStatusUpdate``: the metadata update, every count not negative, the
    collision count never decremented."""
    status, path = new.status, "status"
    causes = _metadata_update(old, new)
    for field, value in (("currentNumberScheduled", status.current_number_scheduled), ("numberMisscheduled", status.number_misscheduled),
                         ("desiredNumberScheduled", status.desired_number_scheduled), ("numberReady", status.number_ready),
                         ("observedGeneration", status.observed_generation), ("updatedNumberScheduled", status.updated_number_scheduled),
                         ("numberAvailable", status.number_available), ("numberUnavailable", status.number_unavailable)):
        causes.extend(_non_negative(f"{path}.{field}", value))
    if status.collision_count is not None:
        causes.extend(_non_negative(f"{path}.collisionCount", status.collision_count))
    causes.extend(_collision_count_decremented(status.collision_count, old.status.collision_count, path))
    return causes


def validate_deployment_status(status: Any, path: str = "status") -> list[str]:
    """``ValidateDeploymentStatus``: counts not negative, none above replicas, available not
    above ready."""
    causes = []
    for field, value in (("observedGeneration", status.observed_generation), ("replicas", status.replicas), ("updatedReplicas", status.updated_replicas),
                         ("readyReplicas", status.ready_replicas), ("availableReplicas", status.available_replicas),
                         ("unavailableReplicas", status.unavailable_replicas)):
        causes.extend(_non_negative(f"{path}.{field}", value))
    if status.collision_count is not None:
        causes.extend(_non_negative(f"{path}.collisionCount", status.collision_count))
    for field, value in (("updatedReplicas", status.updated_replicas), ("readyReplicas", status.ready_replicas), ("availableReplicas", status.available_replicas)):
        if value > status.replicas:
            causes.append(_invalid(f"{path}.{field}", value, "cannot be greater than status.replicas"))
    if status.available_replicas > status.ready_replicas:
        causes.append(_invalid(f"{path}.availableReplicas", status.available_replicas, "cannot be greater than readyReplicas"))
    return causes


def _collision_count_decremented(new: int | None, old: int | None, path: str) -> list[str]:
    """``apivalidation.IsDecremented``: unset after set, or smaller."""
    if old is not None and (new is None or new < old):
        return [_invalid(f"{path}.collisionCount", new or 0, "cannot be decremented")]
    return []


def validate_deployment_status_update(new: Deployment, old: Deployment) -> list[str]:
    """``ValidateDeploymentStatusUpdate``: the metadata update, the status, the collision count
    never decremented."""
    return _metadata_update(old, new) + validate_deployment_status(new.status) + _collision_count_decremented(new.status.collision_count, old.status.collision_count, "status")


def validate_replica_set_status(status: Any, path: str = "status") -> list[str]:
    """``ValidateReplicaSetStatus``: counts not negative, none above replicas, available not
    above ready."""
    causes = []
    for field, value in (("replicas", status.replicas), ("fullyLabeledReplicas", status.fully_labeled_replicas), ("readyReplicas", status.ready_replicas),
                         ("availableReplicas", status.available_replicas), ("observedGeneration", status.observed_generation)):
        causes.extend(_non_negative(f"{path}.{field}", value))
    for field, value in (("fullyLabeledReplicas", status.fully_labeled_replicas), ("readyReplicas", status.ready_replicas),
                         ("availableReplicas", status.available_replicas)):
        if value > status.replicas:
            causes.append(_invalid(f"{path}.{field}", value, "cannot be greater than status.replicas"))
    if status.available_replicas > status.ready_replicas:
        causes.append(_invalid(f"{path}.availableReplicas", status.available_replicas, "cannot be greater than readyReplicas"))
    return causes


def validate_replica_set_status_update(new: ReplicaSet, old: ReplicaSet) -> list[str]:
    """``ValidateReplicaSetStatusUpdate``: the metadata update and the status."""
    return _metadata_update(old, new) + validate_replica_set_status(new.status)


# =========================================================================== batch
#
# ``pkg/apis/batch/validation/validation.go`` (v1.30), function for function; the options
# are upstream's ``JobValidationOptions`` (the server passes what the Job strategy passes:
# prefixed labels on create, elastic Indexed Jobs, mutable scheduling directives only while
# the Job is suspended and has never started). Tested row by row against upstream's own
# tables in ``tests/apiserver/test_batch_validation_upstream.py``.

_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_EXIT_CODE_OPERATORS = ("In", "NotIn")
_CONDITION_STATUSES = ("False", "True", "Unknown")
_POD_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS = 10_000
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES = 255
MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS = 20
MAX_MANAGED_BY_LENGTH = 63
MAX_SUCCEEDED_INDEXES_BYTES = 64 * 1024
MAX_SUCCESS_POLICY_RULES = 20
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
_DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _omit(path: str, why: str) -> str:
    """``field.Invalid(path, field.OmitValueType{}, why)``: no value printed."""
    return f"{path}: Invalid value: {why}"


def _quoted_list(values: Iterable[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_value(value) for value in values) + "]"


def _int32s(values: list[int]) -> str:
    return "[]int32{" + ", ".join(str(value) for value in values) + "}"


def _go_selector(selector: LabelSelector) -> str:
    """``%#v`` of a ``metav1.LabelSelector``."""
    labels = go_value(selector.match_labels) if selector.match_labels else "map[string]string(nil)"
    expressions = "[]v1.LabelSelectorRequirement(nil)" if not selector.match_expressions else "[]v1.LabelSelectorRequirement{" + ", ".join(
        f"v1.LabelSelectorRequirement{{Key:{go_value(r.key)}, Operator:{go_value(r.operator)}, Values:{'[]string(nil)' if not r.values else go_value(r.values)}}}" for r in selector.match_expressions) + "}"
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"


def qualified_name_problems(value: str) -> list[str]:
    """``validation.IsQualifiedName``'s messages (``prefix/name``, the name at most 63)."""
    problems = []
    prefix, slash, name = value.rpartition("/")
    if value.count("/") > 1:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + problem for problem in _subdomain_problems(prefix))
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
    return problems


def _subdomain_problems(value: str) -> list[str]:
    """``validation.IsDNS1123Subdomain``'s messages."""
    problems = []
    if len(value) > 253:
        problems.append("must be no more than 253 characters")
    if not _DNS_1123_SUBDOMAIN.fullmatch(value):
        problems.append("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                        "(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    return problems


def _domain_prefixed_path(path: str, value: str) -> list[str]:
    """``validation.IsDomainPrefixedPath``."""
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [_invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    causes = [_invalid(path, host, problem) for problem in _subdomain_problems(host)]
    if not _HTTP_PATH.fullmatch(rest):
        causes.append(_invalid(path, rest, "Invalid path must match the regex [A-Za-z0-9/\\-._~%!$&'()*+,;=:]+ (e.g. '/', or '/foo')"))
    return causes


def _has_label(labels: Mapping[str, str], path: str, key: str, expected: str) -> list[str]:
    """``ValidateHasLabel``."""
    if key not in labels:
        return [_required(f"{path}.labels[{key}]", f"must be '{expected}'")]
    if labels[key] != expected:
        return [_invalid(f"{path}.labels[{key}]", dict(labels), f"must be '{expected}'")]
    return []


def _validate_generated_selector(job: Job, require_prefixed_labels: bool) -> list[str]:
    """``validateGeneratedSelector``: unless ``manualSelector``, the pod template carries the
    Job's uid and name labels and the selector selects exactly those."""
    if job.spec.manual_selector or job.spec.selector is None:
        return []
    causes = []
    uid, name = job.metadata.uid, job.metadata.name
    if not uid:
        causes.append(_required("metadata.uid"))
    labels = job.spec.template.metadata.labels
    where = "spec.template.metadata"
    causes += _has_label(labels, where, LEGACY_JOB_UID_LABEL, uid) + _has_label(labels, where, LEGACY_JOB_NAME_LABEL, name)
    expected = {}
    if require_prefixed_labels:
        causes += _has_label(labels, where, JOB_UID_LABEL, uid) + _has_label(labels, where, JOB_NAME_LABEL, name)
        expected = {JOB_UID_LABEL: uid, JOB_NAME_LABEL: name}
    expected.update({LEGACY_JOB_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name})
    if not matches(job.spec.selector, expected):
        causes.append(f"spec.selector: Invalid value: {_go_selector(job.spec.selector)}: `selector` not auto-generated")
    return causes


def validate_indexes_format(text: str, completions: int) -> tuple[int, str | None]:
    """``validateIndexesFormat``: (number of indexes, error message or None)."""
    if not text:
        return 0, None
    last: int | None = None
    total = 0
    for interval in text.split(","):
        low, high, error = _parse_index_interval(interval, completions)
        if error is not None:
            return 0, error
        if last is not None and last >= low:
            return 0, f"non-increasing order, previous: {last}, current: {low}"
        total += high - low + 1
        last = high
    return total, None


def _atoi(text: str) -> int | None:
    """Go's ``strconv.Atoi`` (64-bit): None where it errs (syntax, or out of range)."""
    if not re.fullmatch(r"[+-]?[0-9]+", text) or len(text.lstrip("+-").lstrip("0")) > 19:
        return None
    number = int(text)
    return number if -(1 << 63) <= number < (1 << 63) else None


def _parse_index_interval(text: str, completions: int) -> tuple[int, int, str | None]:
    """``parseIndexInterval``."""
    limits = text.split("-")
    if len(limits) > 2:
        return 0, 0, f"the fragment {go_value(text)} violates the requirement that an index interval can have at most two parts separated by '-'"
    low = _atoi(limits[0])
    if low is None:
        return 0, 0, f"cannot convert string to integer for index: {go_value(limits[0])}"
    if low >= completions:
        return 0, 0, f"too large index: {go_value(limits[0])}"
    if len(limits) == 1:
        return low, low, None
    high = _atoi(limits[1])
    if high is None:
        return 0, 0, f"cannot convert string to integer for index: {go_value(limits[1])}"
    if high >= completions:
        return 0, 0, f"too large index: {go_value(limits[1])}"
    if low >= high:
        return 0, 0, f"non-increasing order, previous: {low}, current: {high}"
    return low, high, None


def validate_failed_indexes_not_overlap_completed(completed: str, failed: str, completions: int) -> str | None:
    """``validateFailedIndexesNotOverlapCompleted``: intervals that do not parse are skipped
    (their format is reported elsewhere)."""
    if not completed or not failed:
        return None
    completed_intervals, failed_intervals = completed.split(","), failed.split(",")
    c_pos = f_pos = 0
    c_low, c_high, c_error = _parse_index_interval(completed_intervals[0], completions)
    f_low, f_high, f_error = _parse_index_interval(failed_intervals[0], completions)
    while c_pos < len(completed_intervals) and f_pos < len(failed_intervals):
        if c_error is not None or (f_error is None and c_low <= f_low and not (c_low <= f_high and f_low <= c_high)):
            c_pos += 1
            if c_pos < len(completed_intervals):
                c_low, c_high, c_error = _parse_index_interval(completed_intervals[c_pos], completions)
        elif f_error is not None or not (c_low <= f_high and f_low <= c_high):
            f_pos += 1
            if f_pos < len(failed_intervals):
                f_low, f_high, f_error = _parse_index_interval(failed_intervals[f_pos], completions)
        else:
            return f"failedIndexes and completedIndexes overlap at index: {max(c_low, f_low)}"
    return None


def _success_policy_value(policy: Mapping[str, Any]) -> str:
    rules = policy.get("rules") or []
    inner = ", ".join("batch.SuccessPolicyRule{...}" for _ in rules)
    return f"batch.SuccessPolicy{{Rules:[]batch.SuccessPolicyRule{{{inner}}}}}"


def _validate_success_policy(spec: JobSpec, path: str) -> list[str]:
    """``validateSuccessPolicy`` and ``validateSuccessPolicyRule``."""
    assert spec.success_policy is not None
    causes = []
    rules = spec.success_policy.get("rules") or []
    if not rules:
        causes.append(_required(f"{path}.rules", "at least one rules must be specified when the successPolicy is specified"))
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        causes.append(f"{path}.rules: Too many: {len(rules)}: must have at most {MAX_SUCCESS_POLICY_RULES} items")
    completions = spec.completions or 0
    for index, rule in enumerate(rules):
        where = f"{path}.rules[{index}]"
        count, indexes = rule.get("succeededCount"), rule.get("succeededIndexes")
        if count is None and indexes is None:
            causes.append(_required(where, "at least one of succeededCount or succeededIndexes must be specified"))
        total = 0
        if indexes is not None:
            if len(indexes) > MAX_SUCCEEDED_INDEXES_BYTES:
                causes.append(f"{where}.succeededIndexes: Too long: must have at most {MAX_SUCCEEDED_INDEXES_BYTES} bytes")
            total, error = validate_indexes_format(indexes, completions)
            if error is not None:
                causes.append(_invalid(f"{where}.succeededIndexes", indexes, f"error parsing succeededIndexes: {error}"))
        if count is not None:
            causes.extend(_non_negative(f"{where}.succeededCount", count))
            if count > completions:
                causes.append(_invalid(f"{where}.succeededCount", count, f"must be less than or equal to {completions} (the number of specified completions)"))
            if indexes is not None and count > total:
                causes.append(_invalid(f"{where}.succeededCount", count, f"must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"))
    return causes


def _validate_pod_failure_policy(spec: JobSpec, path: str) -> list[str]:
    """``validatePodFailurePolicy`` and its rules."""
    assert spec.pod_failure_policy is not None
    causes = []
    rules_path = f"{path}.rules"
    rules = spec.pod_failure_policy.rules
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        causes.append(f"{rules_path}: Too many: {len(rules)}: must have at most {MAX_POD_FAILURE_POLICY_RULES} items")
    containers = {c.name for c in spec.template.spec.containers} | {c.name for c in spec.template.spec.init_containers}
    for index, rule in enumerate(rules):
        where = f"{rules_path}[{index}]"
        if rule.action == "":
            causes.append(_required(f"{where}.action", f"valid values: {_quoted_list(_FAILURE_ACTIONS)}"))
        elif rule.action == "FailIndex":
            if spec.backoff_limit_per_index is None:
                causes.append(_invalid(f"{where}.action", rule.action, "requires the backoffLimitPerIndex to be set"))
        elif rule.action not in _FAILURE_ACTIONS:
            causes.append(_unsupported(f"{where}.action", rule.action, _FAILURE_ACTIONS))
        if rule.on_exit_codes is not None:
            codes, codes_path = rule.on_exit_codes, f"{where}.onExitCodes"
            if codes.operator == "":
                causes.append(_required(f"{codes_path}.operator", f"valid values: {_quoted_list(_EXIT_CODE_OPERATORS)}"))
            elif codes.operator not in _EXIT_CODE_OPERATORS:
                causes.append(_unsupported(f"{codes_path}.operator", codes.operator, _EXIT_CODE_OPERATORS))
            if codes.container_name is not None and codes.container_name not in containers:
                causes.append(_invalid(f"{codes_path}.containerName", codes.container_name, "must be one of the container or initContainer names in the pod template"))
            if not codes.values:
                causes.append(f"{codes_path}.values: Invalid value: {_int32s(codes.values)}: at least one value is required")
            elif len(codes.values) > MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES:
                causes.append(f"{codes_path}.values: Too many: {len(codes.values)}: must have at most {MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES} items")
            ordered, seen = True, set()
            for position, code in enumerate(codes.values):
                if codes.operator == "In" and code == 0:
                    causes.append(_invalid(f"{codes_path}.values[{position}]", 0, "must not be 0 for the In operator"))
                if code in seen:
                    causes.append(f"{codes_path}.values[{position}]: Duplicate value: {code}")
                seen.add(code)
                if position > 0 and codes.values[position - 1] > code:
                    ordered = False
            if not ordered:
                causes.append(f"{codes_path}.values: Invalid value: {_int32s(codes.values)}: must be ordered")
        if rule.on_pod_conditions:
            patterns_path = f"{where}.onPodConditions"
            if len(rule.on_pod_conditions) > MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS:
                causes.append(f"{patterns_path}: Too many: {len(rule.on_pod_conditions)}: must have at most {MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS} items")
            for position, pattern in enumerate(rule.on_pod_conditions):
                causes.extend(_invalid(f"{patterns_path}[{position}].type", pattern.type, problem) for problem in qualified_name_problems(pattern.type))
                if pattern.status == "":
                    causes.append(_required(f"{patterns_path}[{position}].status", f"valid values: {_quoted_list(_CONDITION_STATUSES)}"))
                elif pattern.status not in _CONDITION_STATUSES:
                    causes.append(_unsupported(f"{patterns_path}[{position}].status", pattern.status, _CONDITION_STATUSES))
        if rule.on_exit_codes is not None and rule.on_pod_conditions:
            causes.append(_omit(where, "specifying both OnExitCodes and OnPodConditions is not supported"))
        if rule.on_exit_codes is None and not rule.on_pod_conditions:
            causes.append(_omit(where, "specifying one of OnExitCodes and OnPodConditions is required"))
    return causes


def _job_spec_fields(spec: JobSpec, path: str) -> list[str]:
    """``validateJobSpec``: the spec without the selector rules."""
    causes = []
    for field, value in (("parallelism", spec.parallelism), ("completions", spec.completions), ("activeDeadlineSeconds", spec.active_deadline_seconds),
                         ("backoffLimit", spec.backoff_limit), ("ttlSecondsAfterFinished", spec.ttl_seconds_after_finished), ("backoffLimitPerIndex", spec.backoff_limit_per_index)):
        causes.extend(_non_negative(f"{path}.{field}", value))
    if spec.max_failed_indexes is not None:
        causes.extend(_non_negative(f"{path}.maxFailedIndexes", spec.max_failed_indexes))
        if spec.backoff_limit_per_index is None:
            causes.append(_required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if spec.managed_by is not None:
        causes.extend(_domain_prefixed_path(f"{path}.managedBy", spec.managed_by))
        if len(spec.managed_by) > MAX_MANAGED_BY_LENGTH:
            causes.append(f"{path}.managedBy: Too long: may not be longer than {MAX_MANAGED_BY_LENGTH}")
    if spec.completion_mode is not None:
        if spec.completion_mode not in ("NonIndexed", "Indexed"):
            causes.append(_unsupported(f"{path}.completionMode", spec.completion_mode, ("NonIndexed", "Indexed")))
        if spec.completion_mode == "Indexed":
            if spec.completions is None:
                causes.append(_required(f"{path}.completions", "when completion mode is Indexed"))
            if spec.parallelism is not None and spec.parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
                causes.append(_invalid(f"{path}.parallelism", spec.parallelism, f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"))
            if spec.completions is not None and spec.max_failed_indexes is not None and spec.max_failed_indexes > spec.completions:
                causes.append(_invalid(f"{path}.maxFailedIndexes", spec.max_failed_indexes, "must be less than or equal to completions"))
            if spec.max_failed_indexes is not None and spec.max_failed_indexes > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
                causes.append(_invalid(f"{path}.maxFailedIndexes", spec.max_failed_indexes, f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"))
            if spec.completions is not None and spec.completions > COMPLETIONS_SOFT_LIMIT and spec.backoff_limit_per_index is not None:
                if spec.max_failed_indexes is None:
                    causes.append(_required(f"{path}.maxFailedIndexes", f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"))
                if spec.parallelism is not None and spec.parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
                    causes.append(_invalid(f"{path}.parallelism", spec.parallelism,
                                           f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"))
                if spec.max_failed_indexes is not None and spec.max_failed_indexes > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
                    causes.append(_invalid(f"{path}.maxFailedIndexes", spec.max_failed_indexes,
                                           f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"))
    if spec.completion_mode in (None, "NonIndexed"):
        if spec.backoff_limit_per_index is not None:
            causes.append(_invalid(f"{path}.backoffLimitPerIndex", spec.backoff_limit_per_index, "requires indexed completion mode"))
        if spec.max_failed_indexes is not None:
            causes.append(_invalid(f"{path}.maxFailedIndexes", spec.max_failed_indexes, "requires indexed completion mode"))
    if spec.pod_failure_policy is not None:
        causes.extend(_validate_pod_failure_policy(spec, f"{path}.podFailurePolicy"))
    if spec.success_policy is not None:
        if spec.completion_mode != "Indexed":
            causes.append(f"{path}.successPolicy: Invalid value: {_success_policy_value(spec.success_policy)}: requires indexed completion mode")
        else:
            causes.extend(_validate_success_policy(spec, f"{path}.successPolicy"))
    if spec.pod_replacement_policy is not None:
        if spec.pod_failure_policy is not None:
            if spec.pod_replacement_policy != "Failed":
                causes.append(_unsupported(f"{path}.podReplacementPolicy", spec.pod_replacement_policy, ("Failed",)))
        elif spec.pod_replacement_policy not in _POD_REPLACEMENT_POLICIES:
            causes.append(_unsupported(f"{path}.podReplacementPolicy", spec.pod_replacement_policy, _POD_REPLACEMENT_POLICIES))
    causes.extend(_pod_spec(spec.template.spec, f"{path}.template.spec"))
    policy = spec.template.spec.restart_policy
    if policy in ("Always", ""):
        causes.append(_required(f"{path}.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        causes.append(_unsupported(f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never")))
    elif spec.pod_failure_policy is not None and policy != "Never":
        causes.append(_invalid(f"{path}.template.spec.restartPolicy", policy, 'only "Never" is supported when podFailurePolicy is specified'))
    return causes


def _job_spec(spec: JobSpec, path: str) -> list[str]:
    """``ValidateJobSpec``: the fields, a selector, and a template the selector selects."""
    causes = _job_spec_fields(spec, path)
    if spec.selector is None:
        causes.append(_required(f"{path}.selector"))
    elif not matches(spec.selector, spec.template.metadata.labels):
        causes.append(_invalid(f"{path}.template.metadata.labels", spec.template.metadata.labels, "`selector` does not match template `labels`"))
    return causes


def validate_job(job: Job, *, require_prefixed_labels: bool = False) -> list[str]:
    """``ValidateJob`` (the server passes ``require_prefixed_labels=True``, as the Job
    strategy does on create)."""
    causes = _metadata(job)
    causes += _validate_generated_selector(job, require_prefixed_labels)
    causes += _job_spec(job.spec, "spec")
    if job.spec.completion_mode == "Indexed" and job.spec.completions is not None and job.spec.completions > 0:
        hostname = f"{job.metadata.name}-{job.spec.completions - 1}"
        if len(hostname) > 63 or not _DNS_1123_LABEL.fullmatch(hostname):
            causes.append(_invalid("metadata.name", job.metadata.name, f"will not able to create pod with invalid DNS label: {hostname}"))
    return causes


def _encoded(value: object) -> bytes:
    return msgspec.json.encode(value)


def _template_update(new: JobSpec, old: JobSpec, path: str, allow_mutable_scheduling_directives: bool) -> list[str]:
    """``validatePodTemplateUpdate``: the template is immutable, but for the scheduling
    directives (node affinity, node selector, tolerations, labels, annotations, scheduling
    gates) while the Job is suspended and has never started."""
    template, old_template = new.template, old.template
    if allow_mutable_scheduling_directives:
        new_affinity, old_affinity = template.spec.affinity, old_template.spec.affinity
        if new_affinity is None and old_affinity is not None:
            old_affinity = msgspec.structs.replace(old_affinity, node_affinity=None)
            if old_affinity == type(old_affinity)():
                old_affinity = None
        elif new_affinity is not None and old_affinity is None:
            old_affinity = type(new_affinity)(node_affinity=new_affinity.node_affinity)
        elif new_affinity is not None and old_affinity is not None:
            old_affinity = msgspec.structs.replace(old_affinity, node_affinity=new_affinity.node_affinity)
        old_template = msgspec.structs.replace(
            old_template,
            metadata=msgspec.structs.replace(old_template.metadata, labels=template.metadata.labels, annotations=template.metadata.annotations),
            spec=msgspec.structs.replace(old_template.spec, affinity=old_affinity, node_selector=template.spec.node_selector, tolerations=template.spec.tolerations,
                                         scheduling_gates=template.spec.scheduling_gates),
        )
    if _encoded(template) != _encoded(old_template):
        return [_immutable(f"{path}.template", "")]
    return []


def _completions_update(new: JobSpec, old: JobSpec, path: str, allow_elastic_indexed_jobs: bool) -> list[str]:
    """``validateCompletions``: immutable, but an Indexed Job's may change together with
    parallelism (elastic Indexed Jobs)."""
    if not allow_elastic_indexed_jobs or new.completion_mode != "Indexed":
        return [] if new.completions == old.completions else [_immutable(path, new.completions)]
    if new.completions == old.completions or new.completions is None:
        return []
    if new.completions != new.parallelism:
        return [_invalid(path, new.completions, "can only be modified in tandem with spec.parallelism")]
    return []


def validate_job_update(new: Job, old: Job, *, allow_mutable_scheduling_directives: bool = False, allow_elastic_indexed_jobs: bool = False) -> list[str]:
    """``ValidateJobUpdate``: the spec as on create (without the generated-selector rules)
    and the immutable fields."""
    causes = _metadata(new)
    spec, old_spec = new.spec, old.spec
    causes += _job_spec(spec, "spec")
    causes += _completions_update(spec, old_spec, "spec.completions", allow_elastic_indexed_jobs)
    if _encoded(spec.selector) != _encoded(old_spec.selector):
        causes.append(_immutable("spec.selector", ""))
    causes += _template_update(spec, old_spec, "spec", allow_mutable_scheduling_directives)
    for field, value, old_value in (("completionMode", spec.completion_mode, old_spec.completion_mode), ("podFailurePolicy", spec.pod_failure_policy, old_spec.pod_failure_policy),
                                    ("backoffLimitPerIndex", spec.backoff_limit_per_index, old_spec.backoff_limit_per_index), ("managedBy", spec.managed_by, old_spec.managed_by),
                                    ("successPolicy", spec.success_policy, old_spec.success_policy)):
        if _encoded(value) != _encoded(old_value):
            causes.append(_immutable(f"spec.{field}", value if isinstance(value, (str, int)) else ""))
    return causes


def validate_job_update_status(new: Job, old: Job) -> list[str]:
    """``ValidateJobUpdateStatus`` with the options all off (the status strategy's
    stricter checks of finished Jobs are not modelled): counts not negative, uncounted pod
    uids not empty and not repeated."""
    status = new.status
    causes = []
    for field, value in (("active", status.active), ("succeeded", status.succeeded), ("failed", status.failed), ("ready", status.ready), ("terminating", status.terminating)):
        causes.extend(_non_negative(f"status.{field}", value))
    if status.uncounted_terminated_pods is not None:
        seen: set[str] = set()
        for group in ("succeeded", "failed"):
            for index, uid in enumerate(getattr(status.uncounted_terminated_pods, group)):
                where = f"status.uncountedTerminatedPods.{group}[{index}]"
                if uid == "":
                    causes.append(_invalid(where, uid, "must not be empty"))
                elif uid in seen:
                    causes.append(f"{where}: Duplicate value: {go_value(uid)}")
                else:
                    seen.add(uid)
    return causes


_CONCURRENCY = ("Allow", "Forbid", "Replace")


def validate_time_zone(time_zone: str | None, path: str) -> list[str]:
    """``validateTimeZone``: an IANA name (not ``Local``) that loads."""
    if time_zone is None:
        return []
    if time_zone == "":
        return [_invalid(path, time_zone, "timeZone must be nil or non-empty string")]
    for part in time_zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.fullmatch(part):
            return [_invalid(path, time_zone, f"unknown time zone {time_zone}")]
    causes = []
    if time_zone.lower() == "local":
        causes.append(_invalid(path, time_zone, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
    if not valid_time_zone(time_zone) or time_zone != "Local" and time_zone.lower() == "local":
        causes.append(_invalid(path, time_zone, f"unknown time zone {time_zone}"))
    return causes


def _schedule_format(schedule: str, allow_tz_in_schedule: bool, time_zone: str | None, path: str) -> list[str]:
    """``validateScheduleFormat``: robfig's ParseStandard, and ``TZ=`` refused (kept on an
    update of a schedule that had it, unless timeZone is set too)."""
    causes = []
    try:
        parse_schedule(schedule)
    except ScheduleError as error:
        causes.append(_invalid(path, schedule, str(error)))
    if allow_tz_in_schedule and "TZ" in schedule and time_zone is not None:
        causes.append(_invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz_in_schedule and "TZ" in schedule:
        causes.append(_invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return causes


def _job_template_spec(template: Any, path: str) -> list[str]:
    """``ValidateJobTemplateSpec``: the Job spec; the selector is generated, so none given."""
    causes = _job_spec_fields(template.spec, f"{path}.spec")
    if template.spec.selector is not None:
        causes.append(f"{path}.spec.selector: Invalid value: {_go_selector(template.spec.selector)}: `selector` will be auto-generated")
    if template.spec.manual_selector:
        causes.append(f'{path}.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"')
    return causes


def validate_cron_job_spec(spec: Any, old_spec: Any | None, path: str) -> list[str]:
    """``validateCronJobSpec`` (``old_spec`` None on create)."""
    causes = []
    if not spec.schedule:
        causes.append(_required(f"{path}.schedule"))
    else:
        allow_tz = old_spec is not None and "TZ" in old_spec.schedule
        causes += _schedule_format(spec.schedule, allow_tz, spec.time_zone, f"{path}.schedule")
    causes += _non_negative(f"{path}.startingDeadlineSeconds", spec.starting_deadline_seconds)
    if old_spec is None or old_spec.time_zone != spec.time_zone:
        causes += validate_time_zone(spec.time_zone, f"{path}.timeZone")
    if spec.concurrency_policy == "":
        causes.append(_required(f"{path}.concurrencyPolicy"))
    elif spec.concurrency_policy not in _CONCURRENCY:
        causes.append(_unsupported(f"{path}.concurrencyPolicy", spec.concurrency_policy, _CONCURRENCY))
    causes += _job_template_spec(spec.job_template, f"{path}.jobTemplate")
    causes += _non_negative(f"{path}.successfulJobsHistoryLimit", spec.successful_jobs_history_limit)
    causes += _non_negative(f"{path}.failedJobsHistoryLimit", spec.failed_jobs_history_limit)
    return causes


def validate_cron_job_create(cron: CronJob) -> list[str]:
    """``ValidateCronJobCreate``: the metadata, the spec, and a name short enough for the
    Jobs' (``<name>-<minutes>``, at most 52 characters)."""
    causes = _metadata(cron) + validate_cron_job_spec(cron.spec, None, "spec")
    if len(cron.metadata.name) > CRONJOB_NAME_MAX:
        causes.append(_invalid("metadata.name", cron.metadata.name, f"must be no more than {CRONJOB_NAME_MAX} characters"))
    return causes


def validate_cron_job_update(new: CronJob, old: CronJob) -> list[str]:
    """``ValidateCronJobUpdate``: no name-length rule (old CronJobs stay updatable)."""
    return _metadata(new) + validate_cron_job_spec(new.spec, old.spec, "spec")


# =========================================================================== core: config and storage


def _config_keys(kind: str, keys: Iterable[str], field: str) -> list[str]:
    causes = []
    for key in keys:
        if not _CONFIG_KEY.fullmatch(key) or key in (".", "..") or len(key) > 253:
            causes.append(_invalid(f"{field}[{key}]", key, _CONFIG_KEY_MESSAGE))
    return causes


def _config_map(cm: ConfigMap) -> list[str]:
    """``ValidateConfigMap``: keys valid and not in both data and binaryData, at most 1 MiB."""
    causes = _config_keys("ConfigMap", cm.data, "data") + _config_keys("ConfigMap", cm.binary_data, "binaryData")
    for key in sorted(set(cm.data) & set(cm.binary_data)):
        causes.append(_invalid("data", key, "duplicate of key present in binaryData"))
    size = sum(len(key) + len(value.encode()) for key, value in cm.data.items()) + sum(len(key) + len(value) * 3 // 4 for key, value in cm.binary_data.items())
    if size > MAX_SECRET_SIZE:
        causes.append(f"[]: Too long: must have at most {MAX_SECRET_SIZE} bytes")
    return causes


def _secret(secret: Secret) -> list[str]:
    """``ValidateSecret``: keys valid, values base64, at most 1 MiB, and the keys its
    type requires (tls, basic-auth, dockerconfigjson, service-account-token)."""
    causes = _config_keys("Secret", secret.data, "data")
    total = 0
    for key, value in sorted(secret.data.items()):
        try:
            total += len(key) + len(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            causes.append(_invalid(f"data[{key}]", "<secret contents redacted>", "illegal base64 data"))
    if total > MAX_SECRET_SIZE:
        causes.append(f"data: Too long: must have at most {MAX_SECRET_SIZE} bytes")
    required = {
        "kubernetes.io/tls": ("tls.crt", "tls.key"),
        "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
        "kubernetes.io/dockercfg": (".dockercfg",),
    }.get(secret.type, ())
    for key in required:
        if key not in secret.data:
            causes.append(_required(f"data[{key}]"))
    if secret.type == "kubernetes.io/service-account-token" and not secret.metadata.annotations.get("kubernetes.io/service-account.name"):
        causes.append(_required("metadata.annotations[kubernetes.io/service-account.name]"))
    if secret.type == "kubernetes.io/basic-auth" and "username" not in secret.data and "password" not in secret.data:
        causes.append(_required("data[username]"))
    return causes


def _immutable_data(old: ConfigMap | Secret, new: ConfigMap | Secret) -> list[str]:
    causes = []
    if old.immutable and not new.immutable:
        causes.append(_forbidden("immutable", "field is immutable when `immutable` is set"))
    if old.immutable and old.data != new.data:
        causes.append(_forbidden("data", "field is immutable when `immutable` is set"))
    if isinstance(old, ConfigMap) and old.immutable and old.binary_data != new.binary_data:
        causes.append(_forbidden("binaryData", "field is immutable when `immutable` is set"))
    if isinstance(old, Secret) and isinstance(new, Secret) and old.type != new.type:
        causes.append(_immutable("type", new.type))
    return causes


def _claim_spec(spec: PersistentVolumeClaimSpec, path: str) -> list[str]:
    """``ValidatePersistentVolumeClaimSpec``."""
    causes = []
    if not spec.access_modes:
        causes.append(_required(f"{path}.accessModes", "at least 1 access mode is required"))
    for mode in spec.access_modes:
        if mode not in ACCESS_MODES:
            causes.append(_unsupported(f"{path}.accessModes", mode, ACCESS_MODES))
    if "ReadWriteOncePod" in spec.access_modes and len(spec.access_modes) > 1:
        causes.append(_forbidden(f"{path}.accessModes", "may not use ReadWriteOncePod with other access modes"))
    storage = spec.resources.requests.get("storage")
    if storage is None:
        causes.append(_required(f"{path}.resources[storage]"))
    elif parse_quantity(storage) <= 0:
        causes.append(_invalid(f"{path}.resources[storage]", storage, "must be greater than zero"))
    if spec.volume_mode is not None and spec.volume_mode not in ("Block", "Filesystem"):
        causes.append(_unsupported(f"{path}.volumeMode", spec.volume_mode, ("Block", "Filesystem")))
    return causes


def _claim_update(old: PersistentVolumeClaim, new: PersistentVolumeClaim) -> list[str]:
    """``ValidatePersistentVolumeClaimUpdate``: the spec is immutable but for binding
    (``volumeName`` set once) and a storage request growing (expansion)."""
    relaxed = msgspec.structs.replace(new.spec, resources=old.spec.resources, volume_name=new.spec.volume_name if not old.spec.volume_name else old.spec.volume_name)
    if old.spec.volume_name == "" and new.spec.volume_name:
        relaxed = msgspec.structs.replace(relaxed, volume_name="")
    if msgspec.json.encode(relaxed) != msgspec.json.encode(msgspec.structs.replace(old.spec, volume_name="" if not old.spec.volume_name else old.spec.volume_name)):
        return [_forbidden("spec", "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")]
    old_storage, new_storage = old.spec.resources.requests.get("storage"), new.spec.resources.requests.get("storage")
    if old_storage is not None and new_storage is not None and parse_quantity(new_storage) < parse_quantity(old_storage):
        return [_forbidden("spec.resources.requests.storage", "field can not be less than previous value")]
    return []


def _volume(pv: PersistentVolume) -> list[str]:
    """``ValidatePersistentVolume``: capacity storage, access modes, one volume source,
    reclaim policy."""
    spec = pv.spec
    causes = []
    storage = spec.capacity.get("storage")
    if storage is None:
        causes.append(_required("spec.capacity[storage]"))
    if not spec.access_modes:
        causes.append(_required("spec.accessModes"))
    for mode in spec.access_modes:
        if mode not in ACCESS_MODES:
            causes.append(_unsupported("spec.accessModes", mode, ACCESS_MODES))
    sources = [name for name in _VOLUME_SOURCES if getattr(spec, name) is not None]
    if not sources:
        causes.append(_required("spec", "must specify a volume type"))
    elif len(sources) > 1:
        causes.append(_forbidden("spec", "may not specify more than 1 volume type"))
    if spec.persistent_volume_reclaim_policy and spec.persistent_volume_reclaim_policy not in ("Delete", "Recycle", "Retain"):
        causes.append(_unsupported("spec.persistentVolumeReclaimPolicy", spec.persistent_volume_reclaim_policy, ("Delete", "Recycle", "Retain")))
    if spec.local is not None and (spec.node_affinity is None or spec.node_affinity.required is None):
        causes.append(_required("spec.nodeAffinity", "Local volume requires node affinity"))
    return causes


def _storage_class(sc: StorageClass) -> list[str]:
    """``ValidateStorageClass``."""
    causes = []
    if not sc.provisioner:
        causes.append(_required("provisioner"))
    if sc.reclaim_policy is not None and sc.reclaim_policy not in ("Delete", "Retain"):
        causes.append(_unsupported("reclaimPolicy", sc.reclaim_policy, ("Delete", "Retain")))
    if sc.volume_binding_mode is not None and sc.volume_binding_mode not in ("Immediate", "WaitForFirstConsumer"):
        causes.append(_unsupported("volumeBindingMode", sc.volume_binding_mode, ("Immediate", "WaitForFirstConsumer")))
    return causes


def _storage_class_update(old: StorageClass, new: StorageClass) -> list[str]:
    causes = []
    if old.parameters != new.parameters:
        causes.append(_forbidden("parameters", "updates to parameters are forbidden."))
    if old.provisioner != new.provisioner:
        causes.append(_forbidden("provisioner", "updates to provisioner are forbidden."))
    if old.reclaim_policy != new.reclaim_policy:
        causes.append(_forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if old.volume_binding_mode != new.volume_binding_mode:
        causes.append(_forbidden("volumeBindingMode", "updates to volumeBindingMode are forbidden."))
    return causes


_LIMIT_TYPES = ("Container", "Pod", "PersistentVolumeClaim")


def _limit_range(lr: LimitRange) -> list[str]:
    """``ValidateLimitRange``: known types, each default and defaultRequest within min and max."""
    causes = []
    for index, item in enumerate(lr.spec.limits):
        where = f"spec.limits[{index}]"
        if item.type not in _LIMIT_TYPES:
            causes.append(_unsupported(f"{where}.type", item.type, _LIMIT_TYPES))
        if item.type == "Pod" and (item.default or item.default_request):
            causes.append(_forbidden(f"{where}.default", "may not be specified when `type` is 'Pod'"))
        for name in sorted(set(item.max) | set(item.min) | set(item.default) | set(item.default_request)):
            low = parse_quantity(item.min[name]) if name in item.min else None
            high = parse_quantity(item.max[name]) if name in item.max else None
            if low is not None and high is not None and low > high:
                causes.append(_invalid(f"{where}.min[{name}]", item.min[name], f"min value {item.min[name]} is greater than max value {item.max[name]}"))
            for field, values in (("default", item.default), ("defaultRequest", item.default_request)):
                if name not in values:
                    continue
                value = parse_quantity(values[name])
                if high is not None and value > high:
                    causes.append(_invalid(f"{where}.{field}[{name}]", values[name], f"{field} value {values[name]} is greater than max value {item.max[name]}"))
                if low is not None and value < low:
                    causes.append(_invalid(f"{where}.{field}[{name}]", values[name], f"min value {item.min[name]} is greater than {field} value {values[name]}"))
            if name in item.default_request and name in item.default and parse_quantity(item.default_request[name]) > parse_quantity(item.default[name]):
                causes.append(_invalid(f"{where}.defaultRequest[{name}]", item.default_request[name], f"default request value {item.default_request[name]} is greater than default limit value {item.default[name]}"))
    return causes


def _resource_quota(quota: ResourceQuota) -> list[str]:
    causes = []
    for name, value in sorted(quota.spec.hard.items()):
        if parse_quantity(value) < 0:
            causes.append(_invalid(f"spec.hard[{name}]", value, "must be greater than or equal to 0"))
    for index, scope in enumerate(quota.spec.scopes):
        known = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity")
        if scope not in known:
            causes.append(_unsupported(f"spec.scopes[{index}]", scope, known))
    return causes


# =========================================================================== networking, autoscaling


_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _backend(backend: IngressBackend, path: str) -> list[str]:
    """``validateIngressBackend``."""
    if backend.service is not None and backend.resource is not None:
        return [_invalid(path, "", "cannot set both resource and service backends")]
    if backend.service is None and backend.resource is None:
        return [_required(path, "one of `service` or `resource` must be specified")]
    causes = []
    if backend.service is not None:
        service = backend.service
        if validate_name("dns1035", service.name):
            causes.append(_invalid(f"{path}.service.name", service.name, validate_name("dns1035", service.name)))
        if service.port.name and service.port.number:
            causes.append(_invalid(f"{path}.service.port", "", "cannot set both port name & port number"))
        elif not service.port.name and not service.port.number:
            causes.append(_invalid(f"{path}.service.port", "", "port name or number is required"))
        elif service.port.number and not 0 < service.port.number < 65536:
            causes.append(_invalid(f"{path}.service.port.number", service.port.number, "must be between 1 and 65535, inclusive"))
    return causes


def _ingress(ingress: Ingress) -> list[str]:
    """``ValidateIngressSpec`` (``pkg/apis/networking/validation/validation.go``)."""
    spec = ingress.spec
    causes = []
    if spec.default_backend is None and not spec.rules:
        causes.append(_invalid("spec", "", "either `defaultBackend` or `rules` must be specified"))
    if spec.default_backend is not None:
        causes.extend(_backend(spec.default_backend, "spec.defaultBackend"))
    for index, rule in enumerate(spec.rules):
        where = f"spec.rules[{index}]"
        if rule.host and (rule.host.startswith("*.") and validate_name("subdomain", rule.host[2:]) or not rule.host.startswith("*.") and validate_name("subdomain", rule.host)):
            causes.append(_invalid(f"{where}.host", rule.host, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"))
        if rule.http is None:
            continue
        if not rule.http.paths:
            causes.append(_required(f"{where}.http.paths"))
        for position, http_path in enumerate(rule.http.paths):
            at = f"{where}.http.paths[{position}]"
            if http_path.path_type is None:
                causes.append(_required(f"{at}.pathType", "pathType must be specified"))
            elif http_path.path_type not in _PATH_TYPES:
                causes.append(_unsupported(f"{at}.pathType", http_path.path_type, _PATH_TYPES))
            if http_path.path_type in ("Exact", "Prefix") and not http_path.path.startswith("/"):
                causes.append(_invalid(f"{at}.path", http_path.path, "must be an absolute path"))
            causes.extend(_backend(http_path.backend, f"{at}.backend"))
    if spec.ingress_class_name is not None and validate_name("subdomain", spec.ingress_class_name):
        causes.append(_invalid("spec.ingressClassName", spec.ingress_class_name, validate_name("subdomain", spec.ingress_class_name)))
    return causes


def _ingress_class(ic: IngressClass) -> list[str]:
    controller = ic.spec.controller
    if not controller:
        return [_required("spec.controller")]
    if "/" not in controller or len(controller) > 250:
        return [_invalid("spec.controller", controller, "must be a domain-prefixed path (such as \"acme.io/foo\")")]
    return []


def _network_policy(np: NetworkPolicy) -> list[str]:
    causes = []
    for index, kind in enumerate(np.spec.policy_types):
        if kind not in ("Ingress", "Egress"):
            causes.append(_unsupported(f"spec.policyTypes[{index}]", kind, ("Egress", "Ingress")))
    if len(np.spec.policy_types) > 2:
        causes.append(_forbidden("spec.policyTypes", "may not specify more than two policyTypes"))
    return causes


def _hpa(hpa: HorizontalPodAutoscaler) -> list[str]:
    """``ValidateHorizontalPodAutoscalerSpec`` (``pkg/apis/autoscaling/validation``)."""
    spec = hpa.spec
    causes = []
    if spec.scale_target_ref is None:
        causes.append(_required("spec.scaleTargetRef"))
    else:
        if not spec.scale_target_ref.kind:
            causes.append(_required("spec.scaleTargetRef.kind"))
        if not spec.scale_target_ref.name:
            causes.append(_required("spec.scaleTargetRef.name"))
        elif validate_name("path", spec.scale_target_ref.name):
            causes.append(_invalid("spec.scaleTargetRef.name", spec.scale_target_ref.name, validate_name("path", spec.scale_target_ref.name)))
    minimum = spec.min_replicas if spec.min_replicas is not None else 1
    if minimum < 1:
        causes.append(_invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
    if spec.max_replicas < 1:
        causes.append(_invalid("spec.maxReplicas", spec.max_replicas, "must be greater than 0"))
    if spec.max_replicas < minimum:
        causes.append(_invalid("spec.maxReplicas", spec.max_replicas, "must be greater than or equal to `minReplicas`"))
    for index, metric in enumerate(spec.metrics):
        kind = metric.get("type")
        known = ("ContainerResource", "External", "Object", "Pods", "Resource")
        if kind not in known:
            causes.append(_unsupported(f"spec.metrics[{index}].type", kind, known))
    return causes


def _event(event: Event) -> list[str]:
    """``legacyValidateEvent`` (``pkg/apis/core/validation/events.go``): the Event's namespace
    agrees with its involved object's (a cluster-scoped object's Events live in "default");
    an Event with ``eventTime`` (the events.k8s.io recorder's) names its reporting
    controller and instance, its action and its reason."""
    causes: list[str] = []
    involved = event.involved_object.namespace
    namespace = event.metadata.namespace
    if not event.event_time:
        if (not involved and namespace not in ("", "default")) or (involved and namespace != involved):
            causes.append(_invalid("involvedObject.namespace", involved, "does not match event.namespace"))
        return causes
    if not involved and namespace not in ("default", "kube-system"):
        causes.append(_invalid("involvedObject.namespace", involved, "does not match event.namespace"))
    for path, value in (("reportingComponent", event.reporting_component), ("reportingInstance", event.reporting_instance), ("action", event.action), ("reason", event.reason)):
        if not value:
            causes.append(_required(path))
    return causes


def _pdb(pdb: PodDisruptionBudget) -> list[str]:
    """``ValidatePodDisruptionBudgetSpec``: not both minAvailable and maxUnavailable; a
    percentage at most 100%."""
    causes = []
    if pdb.spec.min_available is not None and pdb.spec.max_unavailable is not None:
        causes.append(_invalid("spec", "", "minAvailable and maxUnavailable cannot be both set"))
    for field, value in (("minAvailable", pdb.spec.min_available), ("maxUnavailable", pdb.spec.max_unavailable)):
        if isinstance(value, str) and value.endswith("%") and int(value[:-1]) > 100:
            causes.append(_invalid(f"spec.{field}", value, "must not be greater than 100%"))
    policy = pdb.spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
        causes.append(_unsupported("spec.unhealthyPodEvictionPolicy", policy, ("AlwaysAllow", "IfHealthyBudget")))
    return causes


# =========================================================================== entry points


def validate_create(obj: Object) -> list[str]:
    causes = _metadata(obj)
    if isinstance(obj, Pod):
        causes.extend(_pod_spec(obj.spec, "spec"))
    elif isinstance(obj, (Deployment, ReplicaSet)):
        causes.extend(_workload(obj))
    elif isinstance(obj, ReplicationController):
        causes.extend(_replication_controller(obj))
    elif isinstance(obj, StatefulSet):
        causes.extend(_stateful_set(obj))
    elif isinstance(obj, DaemonSet):
        causes.extend(_daemon_set(obj))
    elif isinstance(obj, Job):
        causes.extend(validate_job(obj, require_prefixed_labels=True))
    elif isinstance(obj, CronJob):
        causes.extend(validate_cron_job_create(obj))
    elif isinstance(obj, PodDisruptionBudget):
        causes.extend(_pdb(obj))
    elif isinstance(obj, Event):
        causes.extend(_event(obj))
    elif isinstance(obj, ConfigMap):
        causes.extend(_config_map(obj))
    elif isinstance(obj, Secret):
        causes.extend(_secret(obj))
    elif isinstance(obj, PersistentVolumeClaim):
        causes.extend(_claim_spec(obj.spec, "spec"))
    elif isinstance(obj, PersistentVolume):
        causes.extend(_volume(obj))
    elif isinstance(obj, StorageClass):
        causes.extend(_storage_class(obj))
    elif isinstance(obj, LimitRange):
        causes.extend(_limit_range(obj))
    elif isinstance(obj, ResourceQuota):
        causes.extend(_resource_quota(obj))
    elif isinstance(obj, Ingress):
        causes.extend(_ingress(obj))
    elif isinstance(obj, IngressClass):
        causes.extend(_ingress_class(obj))
    elif isinstance(obj, NetworkPolicy):
        causes.extend(_network_policy(obj))
    elif isinstance(obj, HorizontalPodAutoscaler):
        causes.extend(_hpa(obj))
    elif isinstance(obj, CustomResourceDefinition):
        causes.extend(validate_crd(obj))
    elif isinstance(obj, (MutatingWebhookConfiguration, ValidatingWebhookConfiguration)):
        # A configuration the dispatcher could not call is refused when it is written, not
        # on every request it would apply to.
        causes.extend(validate_configuration(obj))
        causes.extend(unsupported_features(obj))
    return causes


def _selector_key(selector: LabelSelector | None) -> object:
    return None if selector is None else (sorted(selector.match_labels.items()), [(r.key, r.operator, sorted(r.values)) for r in selector.match_expressions])


def _pod_update(old: Pod, new: Pod) -> list[str]:
    """``ValidatePodUpdate``: only images, activeDeadlineSeconds, added tolerations and
    terminationGracePeriodSeconds (a negative one becomes 1) may change in a pod's spec."""
    relaxed = msgspec.structs.replace(
        new.spec,
        containers=[msgspec.structs.replace(c, image=o.image) for c, o in zip(new.spec.containers, old.spec.containers)] if len(new.spec.containers) == len(old.spec.containers) else new.spec.containers,
        init_containers=[msgspec.structs.replace(c, image=o.image) for c, o in zip(new.spec.init_containers, old.spec.init_containers)] if len(new.spec.init_containers) == len(old.spec.init_containers) else new.spec.init_containers,
        active_deadline_seconds=old.spec.active_deadline_seconds,
        tolerations=old.spec.tolerations if new.spec.tolerations[: len(old.spec.tolerations)] == old.spec.tolerations else new.spec.tolerations,
        termination_grace_period_seconds=old.spec.termination_grace_period_seconds,
    )
    if relaxed != old.spec:
        return ["spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations), `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"]
    return []


def validate_update(old: Object, new: Object) -> list[str]:
    causes = validate_create(new)
    if isinstance(new, Pod):
        causes.extend(_pod_update(old, new))
    elif isinstance(new, (Deployment, ReplicaSet, DaemonSet)) and _selector_key(new.spec.selector) != _selector_key(old.spec.selector):
        # apps/v1: the selector is immutable (ValidateDeploymentUpdate and the others).
        causes.append(_invalid("spec.selector", "", "field is immutable"))
    if isinstance(new, StatefulSet):
        # ValidateStatefulSetUpdate: a changed selector is the spec's Forbidden, not a second error
        causes.extend(_metadata_update(old, new) + _stateful_set_update(old, new))
    elif isinstance(new, Job):
        # The Job strategy's ValidateUpdate (and ValidateStatusUpdate: the status of a main-
        # resource update is the old one): elastic Indexed Jobs (GA), mutable scheduling
        # directives while suspended and never started.
        causes = validate_job_update(new, old, allow_mutable_scheduling_directives=bool(old.spec.suspend) and old.status.start_time is None,
                                     allow_elastic_indexed_jobs=True) + validate_job_update_status(new, old)
    elif isinstance(new, CronJob):
        causes = validate_cron_job_update(new, old)
    elif isinstance(new, (ConfigMap, Secret)):
        causes.extend(_immutable_data(old, new))
    elif isinstance(new, PersistentVolumeClaim):
        causes.extend(_claim_update(old, new))
    elif isinstance(new, StorageClass):
        causes.extend(_storage_class_update(old, new))
    elif isinstance(new, IngressClass) and old.spec.controller != new.spec.controller:
        causes.append(_immutable("spec.controller", new.spec.controller))
    elif isinstance(new, CustomResourceDefinition):
        causes = _metadata(new) + validate_crd_update(old, new)
    return causes

"""The API server's validation step, between mutating and validating admission.

Types, enums, label syntax, quantities and percentages are already checked when an object
is decoded (:mod:`chaoskube.api.objects`). What is left are the cross-field rules of
``pkg/apis/*/validation/validation.go`` that the simulated control plane depends on, with
Kubernetes' field paths and wording (``field.Required``, ``field.Invalid``,
``field.Duplicate``, ``field.Forbidden``), and the immutability rules of updates.

:func:`validate_create` and :func:`validate_update` return the causes (empty: valid); the
server answers 422 Invalid with them (``protocol.invalid``). Not modelled: the many rules
of kinds' fields no component here reads (volumes, security contexts, probes' handlers).
"""

from __future__ import annotations

from chaoskube.api.objects import (
    Deployment,
    LabelSelector,
    MutatingWebhookConfiguration,
    Object,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    ReplicaSet,
    ValidatingWebhookConfiguration,
    matches,
    validate_name,
)
from chaoskube.apiserver.webhooks import unsupported_features, validate_configuration

__all__ = ["validate_create", "validate_update"]

# Kinds whose spec changes bump metadata.generation (their strategies' PrepareForUpdate).
GENERATION_KINDS = frozenset({"Deployment", "ReplicaSet", "PodDisruptionBudget", "EndpointSlice", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})


def _required(path: str, what: str = "") -> str:
    return f"{path}: Required value" + (f": {what}" if what else "")


def _invalid(path: str, value: object, why: str) -> str:
    return f"{path}: Invalid value: {value!r}: {why}"


def _metadata(obj: Object) -> list[str]:
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
    return causes


def _pod_spec(spec: PodSpec, path: str) -> list[str]:
    """``ValidatePodSpec``: containers required, names DNS labels and unique, images set."""
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
                causes.append(f"{where}.name: Duplicate value: {container.name!r}")
            seen.add(container.name)
            if not container.image:
                causes.append(_required(f"{where}.image"))
    if spec.termination_grace_period_seconds is not None and spec.termination_grace_period_seconds < 0:
        causes.append(_invalid(f"{path}.terminationGracePeriodSeconds", spec.termination_grace_period_seconds, "must be greater than or equal to 0"))
    return causes


def _workload(obj: Deployment | ReplicaSet) -> list[str]:
    """``ValidateDeploymentSpec`` / ``ValidateReplicaSetSpec``: a non-empty selector that
    selects the template's labels; replicas not negative."""
    causes = []
    spec = obj.spec
    if spec.replicas is not None and spec.replicas < 0:
        causes.append(_invalid("spec.replicas", spec.replicas, "must be greater than or equal to 0"))
    if spec.selector is None or (not spec.selector.match_labels and not spec.selector.match_expressions):
        causes.append(_required("spec.selector"))
    elif not matches(spec.selector, spec.template.metadata.labels):
        causes.append(_invalid("spec.template.metadata.labels", spec.template.metadata.labels, "`selector` does not match template `labels`"))
    causes.extend(_pod_spec(spec.template.spec, "spec.template.spec"))
    return causes


def _pdb(pdb: PodDisruptionBudget) -> list[str]:
    """``ValidatePodDisruptionBudgetSpec``: not both minAvailable and maxUnavailable."""
    if pdb.spec.min_available is not None and pdb.spec.max_unavailable is not None:
        return [_invalid("spec", "", "minAvailable and maxUnavailable cannot be both set")]
    return []


def validate_create(obj: Object) -> list[str]:
    causes = _metadata(obj)
    if isinstance(obj, Pod):
        causes.extend(_pod_spec(obj.spec, "spec"))
    elif isinstance(obj, (Deployment, ReplicaSet)):
        causes.extend(_workload(obj))
    elif isinstance(obj, PodDisruptionBudget):
        causes.extend(_pdb(obj))
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
    import msgspec

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
    elif isinstance(new, (Deployment, ReplicaSet)) and _selector_key(new.spec.selector) != _selector_key(old.spec.selector):
        # apps/v1: the selector is immutable (ValidateDeploymentUpdate).
        causes.append(_invalid("spec.selector", "", "field is immutable"))
    return causes

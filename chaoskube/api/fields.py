"""Field errors and unknown fields, as ``k8s.io/apimachinery`` words and handles them.

**Field errors** (``k8s.io/apimachinery/pkg/util/validation/field``):
``field.Error.Error()`` is ``<path>: <type>: <value>: <detail>``; the value is printed with
Go's ``%#v`` (strings quoted with double quotes, numbers bare). Validation everywhere
(the API server's, CustomResourceDefinitions') builds its causes with these, so messages
read exactly as ``kubectl`` prints them (``spec.replicas: Invalid value: -3: must be greater
than or equal to 0``).

**Unknown fields in a request body**, as the API server's ``fieldValidation`` handles them.
Server-side field validation (KEP-2885, GA in 1.27; ``metav1.CreateOptions.FieldValidation``,
https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation): a body
with a field the kind does not have is refused with ``Strict`` (400 BadRequest, "strict
decoding error: unknown field "spec.foo""), accepted with the field dropped and a warning
per field with ``Warn`` (the default), and accepted silently with ``Ignore``.

The kinds of :mod:`chaoskube.api.objects` forbid unknown fields when decoded, so a body
is first pruned here against its struct: :func:`prune_unknown` returns the body without
the fields the type does not declare, and their paths, in document order. Raw sub-objects
(``RawObject`` / ``RawList``) keep whatever they hold, as the kinds keep them verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import msgspec

__all__ = [
    "FIELD_VALIDATIONS",
    "REQUIRED_FIELDS",
    "duplicate",
    "emit_required",
    "forbidden",
    "go_value",
    "invalid",
    "prune_unknown",
    "required",
    "too_long",
    "too_many",
    "unknown_field_message",
    "unsupported",
]


def go_value(value: Any) -> str:
    """A value as ``field.Error`` prints it (Go's ``%#v`` for the common kinds)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Mapping):
        return "map[string]string{" + ", ".join(f"{go_value(key)}:{go_value(item)}" for key, item in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[]string{" + ", ".join(go_value(item) for item in value) + "}"
    if hasattr(value, "__struct_fields__"):
        return f"{type(value).__name__}{{...}}"
    return str(value)


def required(path: str, detail: str = "") -> str:
    """``field.Required``."""
    return f"{path}: Required value" + (f": {detail}" if detail else "")


def invalid(path: str, value: Any, detail: str) -> str:
    """``field.Invalid``."""
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def unsupported(path: str, value: Any, supported: Iterable[str]) -> str:
    """``field.NotSupported``."""
    return f"{path}: Unsupported value: {go_value(value)}: supported values: {', '.join(go_value(item) for item in supported)}"


def forbidden(path: str, detail: str) -> str:
    """``field.Forbidden``."""
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: Any) -> str:
    """``field.Duplicate``."""
    return f"{path}: Duplicate value: {go_value(value)}"


def too_long(path: str, limit: int) -> str:
    """``field.TooLong`` (``must have at most N bytes``)."""
    return f"{path}: Too long: must have at most {limit} bytes"


def too_many(path: str, actual: int, limit: int) -> str:
    """``field.TooMany``."""
    return f"{path}: Too many: {actual}: must have at most {limit} items"


# ----------------------------------------------------------------------------- unknown fields
FIELD_VALIDATIONS = ("Ignore", "Warn", "Strict")
_TOP_LEVEL = frozenset({"apiVersion", "kind"})


def prune_unknown(document: Any, cls: type) -> tuple[Any, list[str]]:
    """(``document`` without the fields ``cls`` does not declare, their dotted paths).
    ``apiVersion`` and ``kind`` are known at the top. Pure."""
    unknown: list[str] = []
    info = _type_info(cls)
    if not isinstance(document, dict):
        return document, unknown
    top = {key: value for key, value in document.items() if key in _TOP_LEVEL}
    rest = {key: value for key, value in document.items() if key not in _TOP_LEVEL}
    pruned = _prune(rest, info, "", unknown)
    return {**top, **pruned}, unknown


def unknown_field_message(paths: list[str]) -> str:
    """``strict decoding error: unknown field "a", unknown field "b"`` (apimachinery's
    ``runtime.NewStrictDecodingError``)."""
    return "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in paths)


def _unwrap(info: Any) -> list[Any]:
    if isinstance(info, msgspec.inspect.UnionType):
        return [member for member in info.types if not isinstance(member, msgspec.inspect.NoneType)]
    return [info]


def _prune(value: Any, info: Any, path: str, unknown: list[str]) -> Any:
    for member in _unwrap(info):
        if isinstance(member, msgspec.inspect.StructType) and isinstance(value, dict):
            fields = {field.encode_name: field.type for field in member.fields}
            out = {}
            for key, item in value.items():
                where = f"{path}.{key}" if path else key
                if key not in fields:
                    unknown.append(where)
                    continue
                out[key] = _prune(item, fields[key], where, unknown)
            return out
        if isinstance(member, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType)) and isinstance(value, list):
            return [_prune(item, member.item_type, f"{path}[{index}]", unknown) for index, item in enumerate(value)]
        if isinstance(member, msgspec.inspect.DictType) and isinstance(value, dict):
            return {key: _prune(item, member.value_type, f"{path}.{key}", unknown) for key, item in value.items()}
    return value


# ----------------------------------------------------------------------------- required fields
#: Fields Go always writes (``json:"name"`` without ``omitempty`` in k8s.io/api and
#: apimachinery), by struct class and JSON name. The kinds here omit every field at its
#: default when encoded (stored objects stay small); clients that require these fields
#: (the official Python client's models refuse a V1Condition without ``message``, a
#: V1ContainerStatus without ``imageID``) get them from :func:`emit_required`, which the
#: HTTP front applies to what it sends. Sources: ``meta/v1/types.go`` (Condition,
#: OwnerReference), ``core/v1/types.go`` (ContainerStatus, ContainerStateTerminated,
#: ContainerPort, ServicePort, Taint, PodIP, HostIP, NodeAddress, NodeSystemInfo,
#: ReplicaSetStatus in ``apps/v1``), ``discovery/v1/types.go`` (EndpointSlice, Endpoint), the
#: common kinds' (below; the Python client's models list the same as required),
#: ``policy/v1/types.go`` (PodDisruptionBudgetStatus), ``rbac/v1/types.go`` (PolicyRule,
#: RoleRef, Subject), ``admissionregistration/v1/types.go`` (webhooks).
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "Condition": ("type", "status", "reason", "message"),
    "OwnerReference": ("apiVersion", "kind", "name", "uid"),
    "ContainerStatus": ("name", "ready", "restartCount", "image", "imageID"),
    "ContainerStateTerminated": ("exitCode",),
    "ContainerPort": ("containerPort",),
    "ServicePort": ("port",),
    "Taint": ("key", "effect"),
    "PodIP": ("ip",),
    "HostIP": ("ip",),
    "NodeAddress": ("type", "address"),
    "NodeSystemInfo": ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture"),
    "ReplicaSetStatus": ("replicas",),
    "EndpointSlice": ("addressType", "endpoints"),
    "Endpoint": ("addresses",),
    "PodDisruptionBudgetStatus": ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"),
    "PolicyRule": ("verbs",),
    "RoleRef": ("apiGroup", "kind", "name"),
    "Subject": ("kind", "name"),
    "ValidatingWebhook": ("name", "clientConfig", "sideEffects", "admissionReviewVersions"),
    "MutatingWebhook": ("name", "clientConfig", "sideEffects", "admissionReviewVersions"),
    # the common kinds: apps/v1 (StatefulSetStatus, DaemonSetStatus), core/v1
    # (ReplicationControllerStatus, LimitRangeSpec), autoscaling/v1 ScaleStatus and v2
    # HorizontalPodAutoscalerStatus, batch/v1 PodFailurePolicy, networking/v1
    # HTTPIngressRuleValue, apiextensions/v1 CustomResourceDefinitionVersion
    "StatefulSetStatus": ("replicas",),
    "DaemonSetStatus": ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"),
    "ReplicationControllerStatus": ("replicas",),
    "ScaleStatus": ("replicas",),
    "HorizontalPodAutoscalerStatus": ("desiredReplicas",),
    "LimitRangeSpec": ("limits",),
    "PodFailurePolicy": ("rules",),
    "HTTPIngressRuleValue": ("paths",),
    "CustomResourceDefinitionVersion": ("name", "served", "storage"),
}


def _default_of(field: Any) -> Any:
    if field.default is not msgspec.NODEFAULT:
        value = field.default
    elif field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        return msgspec.NODEFAULT
    return msgspec.to_builtins(value)


def emit_required(document: Any, cls: type) -> Any:
    """``document`` (a JSON form of ``cls``, changed in place and returned) with every
    field of :data:`REQUIRED_FIELDS` present, at its default when it was omitted."""
    _emit(document, _type_info(cls))
    return document


@cache
def _type_info(cls: type) -> Any:
    """``msgspec.inspect.type_info`` of a kind, once: it walks every nested type and
    resolves their annotations (about 37 ms for a Pod; every object the HTTPS front wrote
    paid it, 11 s for a list of 1,000 pods)."""
    return msgspec.inspect.type_info(cls)


def _emit(value: Any, info: Any) -> None:
    for member in _unwrap(info):
        if isinstance(member, msgspec.inspect.StructType) and isinstance(value, dict):
            walk, fill = _emit_plan(member)
            for name, field_type in walk:
                if name in value:
                    _emit(value[name], field_type)
            for name, field in fill:
                if name not in value:
                    value[name] = _default_of(field)  # a fresh copy each time
            return
        if isinstance(member, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)) and isinstance(value, list):
            for item in value:
                _emit(item, member.item_type)
            return
        if isinstance(member, msgspec.inspect.DictType) and isinstance(value, dict):
            for item in value.values():
                _emit(item, member.value_type)
            return


_EMIT_PLANS: dict[type, tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]] = {}


def _emit_plan(member: Any) -> tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """Per struct: the fields worth walking into (their types can hold a struct with
    required fields) and the required fields with a default to write. Computed once per
    struct (walking every field of every object cost 0.25 ms a Pod)."""
    plan = _EMIT_PLANS.get(member.cls)
    if plan is None:
        always = REQUIRED_FIELDS.get(member.cls.__name__, ())
        walk = tuple((field.encode_name, field.type) for field in member.fields if _reaches_required(field.type, set()))
        fill = []
        for field in member.fields:
            if field.encode_name in always:
                default = _default_of(field)
                if default is not msgspec.NODEFAULT and default is not None:
                    fill.append((field.encode_name, field))
        plan = _EMIT_PLANS[member.cls] = (walk, tuple(fill))
    return plan


def _reaches_required(info: Any, seen: set[type]) -> bool:
    """Whether a value of type ``info`` can hold a struct of :data:`REQUIRED_FIELDS` (a
    struct being looked at higher up counts as reaching: walking more is always safe)."""
    for member in _unwrap(info):
        if isinstance(member, msgspec.inspect.StructType):
            if member.cls.__name__ in REQUIRED_FIELDS or member.cls in seen:
                return True
            seen.add(member.cls)
            if any(_reaches_required(field.type, seen) for field in member.fields):
                return True
        elif isinstance(member, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)):
            if _reaches_required(member.item_type, seen):
                return True
        elif isinstance(member, msgspec.inspect.DictType):
            if _reaches_required(member.value_type, seen):
                return True
    return False

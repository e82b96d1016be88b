"""Unknown fields in a request body, as the API server's ``fieldValidation`` handles them.

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

from typing import Any

import msgspec

__all__ = ["FIELD_VALIDATIONS", "REQUIRED_FIELDS", "emit_required", "prune_unknown", "unknown_field_message"]

FIELD_VALIDATIONS = ("Ignore", "Warn", "Strict")
_TOP_LEVEL = frozenset({"apiVersion", "kind"})


def prune_unknown(document: Any, cls: type) -> tuple[Any, list[str]]:
    """(``document`` without the fields ``cls`` does not declare, their dotted paths).
    ``apiVersion`` and ``kind`` are known at the top. Pure."""
    unknown: list[str] = []
    info = msgspec.inspect.type_info(cls)
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
#: ReplicaSetStatus in ``apps/v1``), ``discovery/v1/types.go`` (EndpointSlice, Endpoint),
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
    _emit(document, msgspec.inspect.type_info(cls))
    return document


def _emit(value: Any, info: Any) -> None:
    for member in _unwrap(info):
        if isinstance(member, msgspec.inspect.StructType) and isinstance(value, dict):
            required = REQUIRED_FIELDS.get(member.cls.__name__, ())
            for field in member.fields:
                name = field.encode_name
                if name in value:
                    _emit(value[name], field.type)
                elif name in required:
                    default = _default_of(field)
                    if default is not msgspec.NODEFAULT and default is not None:
                        value[name] = default
            return
        if isinstance(member, (msgspec.inspect.ListType, msgspec.inspect.VarTupleType)) and isinstance(value, list):
            for item in value:
                _emit(item, member.item_type)
            return
        if isinstance(member, msgspec.inspect.DictType) and isinstance(value, dict):
            for item in value.values():
                _emit(item, member.value_type)
            return

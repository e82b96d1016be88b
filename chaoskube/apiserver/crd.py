"""CustomResourceDefinitions, as kube-apiserver's apiextensions-apiserver serves them: pure
functions over a CRD and the JSON of its custom objects.

Upstream sources (``staging/src/k8s.io/apiextensions-apiserver/pkg/``):

- ``apis/apiextensions/validation/validation.go`` — what a CRD must look like
  (:func:`validate_crd`): group with a dot, scope, names (DNS-1035 plural/singular, kind,
  listKind), exactly one storage version, unique version names, a schema per version
  (``apiextensions.k8s.io/v1``: "schemas are required"), subresource paths;
- ``apiserver/schema/validation.go`` — a *structural* schema (:func:`structural_problems`):
  every specified field and array item has a ``type`` (unless it is
  ``x-kubernetes-int-or-string`` or ``x-kubernetes-preserve-unknown-fields``), arrays have
  ``items``, ``properties`` and ``additionalProperties`` exclude each other, ``metadata``
  at the root restricts at most ``name`` and ``generateName``;
- ``apiserver/schema/pruning/algorithm.go`` — :func:`prune`: unknown fields are dropped
  (never an error), except under ``x-kubernetes-preserve-unknown-fields: true``, and
  ``apiVersion``/``kind``/``metadata`` of the root and of ``x-kubernetes-embedded-resource``
  objects are kept;
- ``apiserver/schema/defaulting/algorithm.go`` — :func:`default`: ``default`` values of
  missing fields (and of nulls in non-nullable places) are filled in, deep-copied;
- ``apiserver/validation`` over kube-openapi's validator — :func:`validate_value`: type,
  nullable, enum, required, bounds, lengths, pattern, items, properties, uniqueItems,
  multipleOf, formats int32/int64/byte/date-time (a subset), ``x-kubernetes-int-or-string``,
  ``allOf``/``anyOf``/``oneOf``/``not``; messages as kubectl prints them
  (``spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10``);
- ``apiserver/customresource_handler.go`` / ``registry/customresource/strategy.go`` — the
  order on every write: prune, default, validate; with a ``status`` subresource the main
  resource keeps the stored status and ``status`` changes only status; ``generation`` moves
  on changes outside metadata (and status, with the subresource).

Non-guarantees: CEL rules (``x-kubernetes-validations``) are not evaluated (a CRD with them is
served; :func:`unenforced_features` names what is ignored so the server can say so);
conversion webhooks are not called (versions convert with the ``None`` strategy: only
``apiVersion`` changes); ``x-kubernetes-list-type``/``map-keys`` are not enforced.
"""

from __future__ import annotations

import base64
import copy
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from chaoskube.api.fields import go_value
from chaoskube.api.objects import CustomResourceDefinition, CustomResourceDefinitionVersion, validate_name

__all__ = [
    "DEFAULT_MAX_CUSTOM_OBJECTS",
    "crd_established",
    "default",
    "prune",
    "prune_nulls",
    "schema_of",
    "served_version",
    "serving_version",
    "status_subresource",
    "structural_problems",
    "unenforced_features",
    "validate_crd",
    "validate_value",
]

#: Bound on what one CRD may hold, so a loop creating custom objects cannot fill memory.
DEFAULT_MAX_CUSTOM_OBJECTS = 100_000

Schema = Mapping[str, Any]
_META_FIELDS = ("apiVersion", "kind", "metadata")


# =========================================================================== the CRD itself


def _dns1035(value: str) -> str | None:
    return validate_name("dns1035", value)


def validate_crd(crd: CustomResourceDefinition) -> list[str]:
    """``ValidateCustomResourceDefinition`` (v1): field errors in Kubernetes' words."""
    causes: list[str] = []
    spec = crd.spec
    names = spec.names
    if names.plural and spec.group and crd.metadata.name != f"{names.plural}.{spec.group}":
        causes.append(f"metadata.name: Invalid value: {go_value(crd.metadata.name)}: must be spec.names.plural+\".\"+spec.group")
    if not spec.group:
        causes.append("spec.group: Required value")
    elif validate_name("subdomain", spec.group):
        causes.append(f"spec.group: Invalid value: {go_value(spec.group)}: {validate_name('subdomain', spec.group)}")
    elif "." not in spec.group:
        causes.append(f"spec.group: Invalid value: {go_value(spec.group)}: should be a domain with at least one dot")
    if not spec.scope:
        causes.append("spec.scope: Required value")
    elif spec.scope not in ("Cluster", "Namespaced"):
        causes.append(f'spec.scope: Unsupported value: "{spec.scope}": supported values: "Cluster", "Namespaced"')
    if not spec.versions:
        causes.append("spec.versions: Invalid value: null: must have exactly one version marked as storage version")
    seen: set[str] = set()
    unique = True
    for index, version in enumerate(spec.versions):
        if version.name in seen:
            unique = False
        seen.add(version.name)
        problem = _dns1035(version.name)
        if problem:
            causes.append(f"spec.versions[{index}].name: Invalid value: {go_value(version.name)}: {problem}")
        schema = version.schema.open_apiv3_schema if version.schema is not None else None
        where = f"spec.versions[{index}].schema.openAPIV3Schema"
        if schema is None:
            causes.append(f"{where}: Required value: schemas are required")
        else:
            causes.extend(structural_problems(schema, where))
            if version.subresources is not None and version.subresources.scale is not None:
                scale = version.subresources.scale
                if not scale.spec_replicas_path:
                    causes.append(f"spec.versions[{index}].subresources.scale.specReplicasPath: Required value")
                elif not scale.spec_replicas_path.startswith(".spec."):
                    causes.append(f"spec.versions[{index}].subresources.scale.specReplicasPath: Invalid value: {go_value(scale.spec_replicas_path)}: should be a json path under .spec")
                if not scale.status_replicas_path:
                    causes.append(f"spec.versions[{index}].subresources.scale.statusReplicasPath: Required value")
                elif not scale.status_replicas_path.startswith(".status."):
                    causes.append(f"spec.versions[{index}].subresources.scale.statusReplicasPath: Invalid value: {go_value(scale.status_replicas_path)}: should be a json path under .status")
    if spec.versions:
        if not unique:
            causes.append("spec.versions: Invalid value: versions: must contain unique version names")
        if sum(1 for version in spec.versions if version.storage) != 1:
            causes.append("spec.versions: Invalid value: versions: must have exactly one version marked as storage version")
    for field, value in (("plural", names.plural), ("singular", names.singular), ("kind", names.kind), ("listKind", names.list_kind)):
        if not value:
            causes.append(f"spec.names.{field}: Required value")
    for field, value in (("plural", names.plural), ("singular", names.singular)):
        if value and _dns1035(value):
            causes.append(f"spec.names.{field}: Invalid value: {go_value(value)}: {_dns1035(value)}")
    for field, value in (("kind", names.kind), ("listKind", names.list_kind)):
        if value and _dns1035(value.lower()):
            causes.append(f"spec.names.{field}: Invalid value: {go_value(value)}: may have mixed case, but should otherwise match: {_dns1035(value.lower())}")
    if names.kind and names.kind == names.list_kind:
        causes.append(f"spec.names.listKind: Invalid value: {go_value(names.list_kind)}: kind and listKind may not be the same")
    for index, short in enumerate(names.short_names):
        if _dns1035(short):
            causes.append(f"spec.names.shortNames[{index}]: Invalid value: {go_value(short)}: {_dns1035(short)}")
    return causes


def validate_crd_update(old: CustomResourceDefinition, new: CustomResourceDefinition) -> list[str]:
    """``ValidateCustomResourceDefinitionSpecUpdate``: group and plural never change; scope
    and kind not once established."""
    causes = validate_crd(new)
    if new.spec.group != old.spec.group:
        causes.append("spec.group: Invalid value: " + go_value(new.spec.group) + ": field is immutable")
    if new.spec.names.plural != old.spec.names.plural:
        causes.append("spec.names.plural: Invalid value: " + go_value(new.spec.names.plural) + ": field is immutable")
    if crd_established(old):
        if new.spec.scope != old.spec.scope:
            causes.append("spec.scope: Invalid value: " + go_value(new.spec.scope) + ": field is immutable")
        if new.spec.names.kind != old.spec.names.kind:
            causes.append("spec.names.kind: Invalid value: " + go_value(new.spec.names.kind) + ": field is immutable")
    return causes


def structural_problems(schema: Schema, path: str = "openAPIV3Schema") -> list[str]:
    """Why ``schema`` is not a structural schema (``schema/validation.go``), plus the v1
    schema rules of ``ValidateCustomResourceDefinitionOpenAPISchema``; empty if it is."""
    causes: list[str] = []
    if not isinstance(schema, Mapping):
        return [f"{path}: Invalid value: {go_value(schema)}: must be an object"]
    _structural(schema, path, causes, root=True, context="root")
    return causes


def _structural(schema: Schema, path: str, causes: list[str], *, root: bool, context: str) -> None:
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    if preserve is False:
        causes.append(f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined")
    kind = schema.get("type", "")
    if int_or_string:
        if kind:
            causes.append(f"{path}.type: Invalid value: {go_value(kind)}: must be empty if x-kubernetes-int-or-string is true")
    elif not kind and preserve is not True:
        reason = {"root": "must not be empty at the root", "items": "must not be empty for specified array items"}.get(context, "must not be empty for specified object fields")
        causes.append(f"{path}.type: Required value: {reason}")
    if kind == "null":
        causes.append(f"{path}.type: Forbidden: type cannot be set to null")
    elif kind and kind not in ("object", "array", "string", "integer", "number", "boolean"):
        causes.append(f'{path}.type: Unsupported value: "{kind}": supported values: "array", "boolean", "integer", "number", "object", "string"')
    if schema.get("uniqueItems") is True:
        causes.append(f"{path}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic")
    for forbidden in ("patternProperties", "additionalItems", "definitions", "dependencies", "$ref", "id"):
        if forbidden in schema:
            causes.append(f"{path}.{forbidden}: Forbidden: {forbidden} is not supported")
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if properties and additional is not None and (additional is False or isinstance(additional, Mapping)):
        causes.append(f"{path}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive")
    if kind == "array" and "items" not in schema:
        causes.append(f"{path}.items: Required value: must be specified")
    if "items" in schema and not isinstance(schema["items"], Mapping):
        causes.append(f"{path}.items: Forbidden: items must be a schema object and not an array")
    if root:
        meta = properties.get("metadata") if isinstance(properties, Mapping) else None
        if isinstance(meta, Mapping):
            extra = sorted(key for key in meta if key not in ("type", "properties", "description"))
            meta_props = meta.get("properties") or {}
            if extra or any(name not in ("name", "generateName") for name in meta_props):
                causes.append(f"{path}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")
    for name, child in sorted(properties.items()) if isinstance(properties, Mapping) else ():
        if isinstance(child, Mapping):
            _structural(child, f"{path}.properties[{name}]", causes, root=False, context="property")
    if isinstance(additional, Mapping):
        _structural(additional, f"{path}.additionalProperties", causes, root=False, context="property")
    if isinstance(schema.get("items"), Mapping):
        _structural(schema["items"], f"{path}.items", causes, root=False, context="items")
    for combinator in ("allOf", "anyOf", "oneOf"):
        for index, child in enumerate(schema.get(combinator) or ()):
            if isinstance(child, Mapping) and "type" in child and child.get("type") != kind:
                causes.append(f"{path}.{combinator}[{index}].type: Forbidden: must be empty to be structural")


def unenforced_features(crd: CustomResourceDefinition) -> list[str]:
    """Schema features this simulation accepts but does not enforce (module docstring)."""
    found: list[str] = []

    def walk(schema: Any, path: str) -> None:
        if not isinstance(schema, Mapping):
            return
        if "x-kubernetes-validations" in schema:
            found.append(f"{path}.x-kubernetes-validations (CEL rules are not evaluated)")
        for name, child in sorted((schema.get("properties") or {}).items()):
            walk(child, f"{path}.properties[{name}]")
        walk(schema.get("additionalProperties"), f"{path}.additionalProperties")
        walk(schema.get("items"), f"{path}.items")

    for index, version in enumerate(crd.spec.versions):
        if version.schema is not None:
            walk(version.schema.open_apiv3_schema, f"spec.versions[{index}].schema.openAPIV3Schema")
    if crd.spec.conversion and crd.spec.conversion.get("strategy") == "Webhook":
        found.append("spec.conversion.strategy Webhook (versions convert with strategy None)")
    return found


# =========================================================================== serving helpers


def crd_established(crd: CustomResourceDefinition) -> bool:
    return any(condition.type == "Established" and condition.status == "True" for condition in crd.status.conditions)


def serving_version(crd: CustomResourceDefinition, name: str | None = None) -> CustomResourceDefinitionVersion | None:
    """The version ``name`` if it is served, else (``name`` None) the storage version."""
    for version in crd.spec.versions:
        if name is None and version.storage:
            return version
        if name is not None and version.name == name and version.served:
            return version
    return None


def served_version(crd: CustomResourceDefinition, requested: str = "") -> CustomResourceDefinitionVersion | None:
    """The version a request at ``requested`` is served at, or None: 404 NotFound.

    As upstream's ``crdHandler.ServeHTTP``
    (``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go``):
    ``if !apiextensionshelpers.HasServedCRDVersion(crd, requestInfo.APIVersion)`` the request
    goes to the delegate, whose answer is 404 "the server could not find the requested
    resource" -- a version absent from ``spec.versions`` and one with ``served: false``
    alike, whatever its ``storage`` flag ("Each version can be enabled/disabled by Served
    flag", "Versions in CustomResourceDefinitions"). ``requested`` "" is an in-process
    client, which names no version: it addresses the storage version while that is served,
    else the first served version (the one discovery would have shown it)."""
    if requested:
        return serving_version(crd, requested)
    storage = serving_version(crd)
    if storage is not None and storage.served:
        return storage
    return next((version for version in crd.spec.versions if version.served), None)


def schema_of(crd: CustomResourceDefinition, version_name: str | None = None) -> Schema | None:
    version = serving_version(crd, version_name)
    if version is None or version.schema is None:
        return None
    return version.schema.open_apiv3_schema


def status_subresource(crd: CustomResourceDefinition) -> bool:
    version = serving_version(crd)
    return version is not None and version.subresources is not None and version.subresources.status is not None


# =========================================================================== pruning


def prune(value: Any, schema: Schema | None, *, root: bool = True) -> list[str]:
    """``pruning.PruneWithOptions``: remove, in place, every object field ``schema`` does
    not specify; the pruned paths, sorted (``a.b``, ``[1].c``). At the ``root`` (and in
    ``x-kubernetes-embedded-resource`` objects) ``apiVersion``, ``kind`` and ``metadata`` stay."""
    pruned: list[str] = []
    if root:
        schema = {**(schema or {}), "x-kubernetes-embedded-resource": True}
    _prune(value, schema, "", pruned)
    return sorted(pruned)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _prune(value: Any, schema: Schema | None, path: str, pruned: list[str]) -> None:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        _skip_prune(value, schema, path, pruned)
        return
    if isinstance(value, dict):
        if schema is None:
            for key in sorted(value):
                pruned.append(_join(path, key))
            value.clear()
            return
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in sorted(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in properties:
                _prune(value[key], properties[key], _join(path, key), pruned)
            elif additional is not None:
                # upstream: prune(v, s.AdditionalProperties.Structural) -- nil for a bool
                _prune(value[key], additional if isinstance(additional, Mapping) else None, _join(path, key), pruned)
            else:
                if key not in _META_FIELDS or path:  # upstream records no root meta field
                    pruned.append(_join(path, key))
                del value[key]
    elif isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        for index, item in enumerate(value):
            _prune(item, items, f"{path}[{index}]", pruned)


def _skip_prune(value: Any, schema: Schema, path: str, pruned: list[str]) -> None:
    if isinstance(value, dict):
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in sorted(value):
            if embedded and key in _META_FIELDS:
                continue
            if key in properties:
                _prune(value[key], properties[key], _join(path, key), pruned)
            elif additional is not None:
                _prune(value[key], additional if isinstance(additional, Mapping) else None, _join(path, key), pruned)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _skip_prune(item, items, f"{path}[{index}]", pruned)


def prune_nulls(value: Any, schema: Schema | None) -> None:
    """``PruneNonNullableNullsWithoutDefaults``: a null where the schema is not nullable
    and has no default is dropped from objects (lists keep their nulls for validation)."""
    if schema is None or not isinstance(value, dict):
        if isinstance(value, list) and schema is not None and isinstance(schema.get("items"), Mapping):
            for item in value:
                prune_nulls(item, schema["items"])
        return
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key in sorted(value):
        child = properties.get(key) if key in properties else (additional if isinstance(additional, Mapping) else None)
        if child is None:
            continue
        if value[key] is None and not child.get("nullable") and "default" not in child:
            del value[key]
        else:
            prune_nulls(value[key], child)


# =========================================================================== defaulting


def _non_nullable_null(value: Any, schema: Schema | None) -> bool:
    return value is None and schema is not None and not schema.get("nullable", False)


def default(value: Any, schema: Schema | None) -> None:
    """``defaulting.Default``: fill in, in place, the defaults of missing properties (and of
    nulls where the schema is not nullable), deep-copied, then recurse."""
    if schema is None:
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in sorted(properties):
            prop = properties[key]
            if not isinstance(prop, Mapping) or "default" not in prop:
                continue
            if key not in value or _non_nullable_null(value[key], prop):
                value[key] = copy.deepcopy(prop["default"])
        additional = schema.get("additionalProperties")
        for key in sorted(value):
            if key in properties:
                default(value[key], properties[key])
            elif isinstance(additional, Mapping):
                if _non_nullable_null(value[key], additional) and "default" in additional:
                    value[key] = copy.deepcopy(additional["default"])
                default(value[key], additional)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return
        for index in range(len(value)):
            if _non_nullable_null(value[index], items) and "default" in items:
                value[index] = copy.deepcopy(items["default"])
            default(value[index], items)


# =========================================================================== validation

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _show(value: Any) -> str:
    """How field errors print a value: Go's %#v of a JSON value, near enough."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return '"' + type(value).__name__.replace("dict", "object").replace("list", "array") + '"'
    return str(value)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_matches(expected: str, value: Any) -> bool:
    actual = _type_of(value)
    return actual == expected or (expected == "number" and actual == "integer")


def validate_value(value: Any, schema: Schema | None, path: str = "") -> list[str]:
    """The schema's field errors for ``value`` (empty when valid). ``path`` is the value's
    field path (``spec``); the root object is validated with ``path=""``."""
    causes: list[str] = []
    if schema is not None:
        _validate(value, schema, path, causes)
    return causes


def _invalid(path: str, value: Any, why: str) -> str:
    where = path or "<root>"
    return f"{where}: Invalid value: {_show(value)}: {where} in body {why}"


def _validate(value: Any, schema: Schema, path: str, causes: list[str]) -> None:
    where = path or "<root>"
    if value is None:
        if schema.get("nullable") is True or not schema.get("type"):
            return
        causes.append(f'{where}: Invalid value: "null": {where} in body must be of type {schema["type"]}: "null"')
        return
    kind = schema.get("type", "")
    if schema.get("x-kubernetes-int-or-string") is True:
        if not (isinstance(value, str) or (_type_of(value) == "integer")):
            causes.append(f"{where}: Invalid value: {_show(value)}: {where} in body must be of type integer,string: {_show(value)}")
            return
    elif kind and not _type_matches(kind, value):
        causes.append(f"{where}: Invalid value: {_show(value)}: {where} in body must be of type {kind}: {_show(value)}")
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(_show(item) for item in enum)
        causes.append(f"{where}: Unsupported value: {_show(value)}: supported values: {supported}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _number(value, schema, path, causes)
    if isinstance(value, str):
        _string(value, schema, path, causes)
    if isinstance(value, list):
        _array(value, schema, path, causes)
    if isinstance(value, dict):
        _object(value, schema, path, causes)
    for index, child in enumerate(schema.get("allOf") or ()):
        _validate(value, child, path, causes)
    any_of = schema.get("anyOf")
    if any_of and not any(not validate_value(value, child, path) for child in any_of):
        causes.append(f"{where}: Invalid value: {_show(value)}: {where} in body must validate at least one schema (anyOf)")
    one_of = schema.get("oneOf")
    if one_of and sum(1 for child in one_of if not validate_value(value, child, path)) != 1:
        causes.append(f"{where}: Invalid value: {_show(value)}: {where} in body must validate one and only one schema (oneOf)")
    if "not" in schema and isinstance(schema["not"], Mapping) and not validate_value(value, schema["not"], path):
        causes.append(f"{where}: Invalid value: {_show(value)}: {where} in body must not validate the schema (not)")


def _number(value: float, schema: Schema, path: str, causes: list[str]) -> None:
    maximum, minimum = schema.get("maximum"), schema.get("minimum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and not value < maximum:
            causes.append(_invalid(path, value, f"should be less than {_show(maximum)}"))
        elif not schema.get("exclusiveMaximum") and value > maximum:
            causes.append(_invalid(path, value, f"should be less than or equal to {_show(maximum)}"))
    if minimum is not None:
        if schema.get("exclusiveMinimum") and not value > minimum:
            causes.append(_invalid(path, value, f"should be greater than {_show(minimum)}"))
        elif not schema.get("exclusiveMinimum") and value < minimum:
            causes.append(_invalid(path, value, f"should be greater than or equal to {_show(minimum)}"))
    multiple = schema.get("multipleOf")
    if multiple:
        quotient = value / multiple
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            causes.append(_invalid(path, value, f"should be a multiple of {_show(multiple)}"))
    fmt = schema.get("format")
    if fmt == "int32" and not -(2**31) <= value < 2**31:
        causes.append(_invalid(path, value, "must be of type int32"))


def _string(value: str, schema: Schema, path: str, causes: list[str]) -> None:
    length = len(value)
    if schema.get("maxLength") is not None and length > schema["maxLength"]:
        causes.append(_invalid(path, value, f"should be at most {schema['maxLength']} chars long"))
    if schema.get("minLength") is not None and length < schema["minLength"]:
        causes.append(_invalid(path, value, f"should be at least {schema['minLength']} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None:
        try:
            found = re.search(pattern, value) is not None
        except re.error:
            found = True  # a pattern Python cannot compile is not judged here
        if not found:
            causes.append(_invalid(path, value, f"should match '{pattern}'"))
    fmt = schema.get("format")
    if fmt == "date-time" and not _RFC3339.match(value):
        causes.append(_invalid(path, value, "must be of type date-time"))
    elif fmt == "byte":
        try:
            base64.b64decode(value, validate=True)
        except ValueError:
            causes.append(_invalid(path, value, "must be of type byte"))


def _array(value: list[Any], schema: Schema, path: str, causes: list[str]) -> None:
    where = path or "<root>"
    if schema.get("maxItems") is not None and len(value) > schema["maxItems"]:
        causes.append(f"{where}: Too many: {len(value)}: must have at most {schema['maxItems']} items")
    if schema.get("minItems") is not None and len(value) < schema["minItems"]:
        causes.append(_invalid(path, value, f"should have at least {schema['minItems']} items"))
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                causes.append(f"{where}: Duplicate value: {_show(item)}")
                break
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _validate(item, items, f"{path}[{index}]", causes)


def _object(value: dict[str, Any], schema: Schema, path: str, causes: list[str]) -> None:
    where = path or "<root>"
    if schema.get("maxProperties") is not None and len(value) > schema["maxProperties"]:
        causes.append(f"{where}: Too many: {len(value)}: must have at most {schema['maxProperties']} items")
    if schema.get("minProperties") is not None and len(value) < schema["minProperties"]:
        causes.append(_invalid(path, value, f"should have at least {schema['minProperties']} properties"))
    for name in schema.get("required") or ():
        if name not in value:
            causes.append(f"{_join(path, name)}: Required value")
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key in sorted(value):
        child = properties.get(key)
        if child is None and isinstance(additional, Mapping):
            child = additional
        if isinstance(child, Mapping):
            if path == "" and key == "metadata":
                continue  # ObjectMeta is validated as every object's is
            _validate(value[key], child, _join(path, key), causes)


def validate_object(obj: Mapping[str, Any], schema: Schema | None) -> list[str]:
    """A whole custom object (Kubernetes JSON) against its version's schema; the root's
    ``apiVersion``, ``kind`` and ``metadata`` are the API server's to check."""
    if schema is None:
        return []
    body = {key: value for key, value in obj.items() if key not in _META_FIELDS}
    trimmed = dict(schema)
    trimmed["properties"] = {key: value for key, value in (schema.get("properties") or {}).items() if key not in _META_FIELDS}
    trimmed["required"] = [name for name in schema.get("required") or () if name not in _META_FIELDS]
    return validate_value(body, trimmed, "")


def names_conflict(crd: CustomResourceDefinition, others: Iterable[CustomResourceDefinition]) -> str | None:
    """``NamingConditionController``: why ``crd``'s names are not accepted (another CRD of
    the group already serves that plural or kind), or None."""
    for other in others:
        if other.metadata.name == crd.metadata.name or other.spec.group != crd.spec.group:
            continue
        accepted = other.status.accepted_names or other.spec.names
        if accepted.plural == crd.spec.names.plural:
            return f'"{crd.spec.names.plural}" is already in use'
        if accepted.kind == crd.spec.names.kind:
            return f'"{crd.spec.names.kind}" is already in use'
    return None


__all__ += ["names_conflict", "validate_crd_update", "validate_object"]

"""``metadata.managedFields`` and server-side apply for objects: apimachinery's field
manager (``k8s.io/apimachinery/pkg/util/managedfields/internal``) over the merge of
:mod:`chaoskube.api.fieldpath`.

A :class:`FieldManager` serves one kind at one API version (and subresource). It works on
objects in their JSON form and is pure (the time is passed in):

- :meth:`FieldManager.update` — a create, update or non-apply patch by ``manager``: the
  fields it added or changed become its own (an ``Update`` entry per manager, API version
  and subresource; a later write by the same manager merges into its entry:
  ``managedFieldsUpdater``). The request's ``managedFields`` replace the stored ones when
  they decode and are not empty; ``[]`` (or one empty entry) resets them
  (``decodeLiveOrNew``, ``isResetManagedFields``); a subresource ignores the request's. An
  object that has none and already exists is not tracked (``skipNonApplied``); at most 10
  Update entries, the oldest folded into ``ancient-changes`` (``capManagers``); metadata
  that nobody owns is stripped (``stripMeta``).
- :meth:`FieldManager.apply` — an apply (``application/apply-patch+yaml``) by ``manager``:
  the configuration merged into the live object, fields the manager applied before and not
  now removed unless another manager owns them, ownership moved, and
  :class:`ApplyConflict` (409, upstream's message and causes) when the configuration
  changes fields other managers own, unless ``force``. The first apply to an object without
  managedFields attributes its existing fields to ``before-first-apply``.

The schema of a kind (which lists are maps keyed by what, which are sets or atomic, which
structs and maps are atomic) comes from :func:`builtin_schema` for the built-in kinds —
their msgspec types plus the list/struct/map markers of ``k8s.io/api`` v0.26.15
(:data:`LIST_TYPES`, :data:`ATOMIC_STRUCTS`, :data:`ATOMIC_MAPS`) and their patch metadata
(``patchMergeKey`` makes a map-list, ``patchStrategy=merge`` alone a set, as kube-openapi's
``schemaconv`` reads them) — or from :func:`custom_schema` for a CRD's structural schema
(``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``,
``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-int-or-string``).

The chain is upstream's, layer for layer (:func:`default_chain`; each layer a class with
``update`` and ``apply``), so apimachinery's tests run on the layers they compose.

Versions: a field manager serves one API version (``api_version``, the request's) and
holds objects at a hub version (``hub_version``: what the caller stores and passes in, the
storage version here). As upstream's ``structuredMergeManager`` (``toVersioned`` /
``toUnversioned``), objects are converted to the request's version on the way in and
back to the hub on the way out, so each manager's entry is recorded at the version of the
request that wrote it (``managedFields[].apiVersion``), its set in that version's schema
(``type_for``); on a later write the other managers' sets are compared in their own
versions (SMD's ``Updater`` converts the objects with ``convert``:
:class:`NoneConversion` for a CRD, ``versionconverter.go``). An Apply entry is keyed
without its version (``BuildManagerIdentifier``), so a manager that applies at another
version keeps one entry, at the new version; Update entries are keyed with it.
Built-in kinds are served at one version here, so their entries are never converted (an
entry at another version is compared in the kind's one schema).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import msgspec
import orjson

from chaoskube.api import fieldpath as fp
from chaoskube.api.strategic import PATCH_META, struct_info

__all__ = [
    "ApplyConflict", "ApplyError", "FieldManager", "LAST_APPLIED_ANNOTATION", "NoneConversion", "builtin_schema",
    "custom_schema", "decode_managed_fields", "default_chain", "encode_managed_fields", "manager_identifier", "sort_encoded_managed_fields", "typed_form",
    "manager_or_user_agent", "scale_to_parent", "scale_to_subresource", "validate_field_manager",
]

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10  # DefaultMaxUpdateManagers
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"

#: (struct, field) -> (list type, keys): ``+listType`` / ``+listMapKey`` markers of
#: k8s.io/api v0.26.15 ``*/v1/types.go`` (extracted from the files, for the types served here).
LIST_TYPES: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("CertificateSigningRequestStatus", "conditions"): ("map", ("type",)),
    ("Container", "ports"): ("map", ("containerPort", "protocol")),
    ("CronJobStatus", "active"): ("atomic", ()),
    ("Endpoint", "addresses"): ("set", ()),
    ("EndpointSlice", "endpoints"): ("atomic", ()),
    ("EndpointSlice", "ports"): ("atomic", ()),
    ("EphemeralContainerCommon", "ports"): ("map", ("containerPort", "protocol")),
    ("HTTPIngressRuleValue", "paths"): ("atomic", ()),
    ("IngressSpec", "rules"): ("atomic", ()),
    ("IngressSpec", "tls"): ("atomic", ()),
    ("IngressTLS", "hosts"): ("atomic", ()),
    ("JobStatus", "conditions"): ("atomic", ()),
    ("NetworkPolicyStatus", "conditions"): ("map", ("type",)),
    ("PodDisruptionBudgetStatus", "conditions"): ("map", ("type",)),
    ("PodFailurePolicy", "rules"): ("atomic", ()),
    ("PodFailurePolicyOnExitCodesRequirement", "values"): ("set", ()),
    ("PodFailurePolicyRule", "onPodConditions"): ("atomic", ()),
    ("PodSpec", "resourceClaims"): ("map", ("name",)),
    ("PodSpec", "schedulingGates"): ("map", ("name",)),
    ("PodSpec", "topologySpreadConstraints"): ("map", ("topologyKey", "whenUnsatisfiable")),
    ("ResourceRequirements", "claims"): ("map", ("name",)),
    ("Rule", "apiGroups"): ("atomic", ()),
    ("Rule", "apiVersions"): ("atomic", ()),
    ("Rule", "resources"): ("atomic", ()),
    ("RuleWithOperations", "operations"): ("atomic", ()),
    ("ServiceSpec", "clusterIPs"): ("atomic", ()),
    ("ServiceSpec", "ipFamilies"): ("atomic", ()),
    ("ServiceSpec", "ports"): ("map", ("port", "protocol")),
    ("ServiceStatus", "conditions"): ("map", ("type",)),
    ("TopologySpreadConstraint", "matchLabelKeys"): ("atomic", ()),
    ("UncountedTerminatedPods", "failed"): ("set", ()),
    ("UncountedTerminatedPods", "succeeded"): ("set", ()),
    # meta/v1 ObjectMeta (+listType=set / +listType=map +listMapKey=uid in newer types.go)
    ("ObjectMeta", "finalizers"): ("set", ()),
    ("ObjectMeta", "ownerReferences"): ("map", ("uid",)),
}
#: ``+structType=atomic`` (k8s.io/api v0.26.15 and apimachinery meta/v1).
ATOMIC_STRUCTS = frozenset({
    "EndpointPort", "Subject", "RoleRef", "CrossVersionObjectReference", "SecretReference", "ObjectFieldSelector",
    "ResourceFieldSelector", "ConfigMapKeySelector", "SecretKeySelector", "NodeSelector", "NodeSelectorTerm",
    "TopologySelectorTerm", "EndpointAddress", "ObjectReference", "LocalObjectReference", "TypedLocalObjectReference",
    "ScopeSelector", "OwnerReference", "LabelSelector",
})
#: ``+mapType=atomic``.
ATOMIC_MAPS = frozenset({("PodSpec", "nodeSelector"), ("ReplicationControllerSpec", "selector"), ("Scheduling", "nodeSelector"), ("ServiceSpec", "selector")})
#: Key fields with a default (``+default="TCP"`` on ContainerPort and ServicePort protocol):
#: an item that omits the key is keyed by the default (``getAssociativeKeyDefault``).
KEY_DEFAULTS = {("ContainerPort", "protocol"): "TCP", ("ServicePort", "protocol"): "TCP"}


# ----------------------------------------------------------------------------- schemas
def _unwrap(info: Any) -> Any:
    if isinstance(info, msgspec.inspect.UnionType):
        members = [member for member in info.types if not isinstance(member, msgspec.inspect.NoneType)]
        if len(members) == 1:
            return members[0]
        if all(isinstance(member, (msgspec.inspect.StrType, msgspec.inspect.IntType, msgspec.inspect.FloatType, msgspec.inspect.BoolType)) for member in members):
            return msgspec.inspect.StrType()  # IntOrString, Quantity: a scalar
        return msgspec.inspect.AnyType()
    return info


_SCALARS = (msgspec.inspect.StrType, msgspec.inspect.IntType, msgspec.inspect.FloatType, msgspec.inspect.BoolType, msgspec.inspect.LiteralType, msgspec.inspect.EnumType)


class _BuiltinTypes:
    """Named SMD types for msgspec structs, built as they are first resolved."""

    def __init__(self) -> None:
        self.classes: dict[str, type] = {}

    def ref(self, info: Any, owner: str = "", field: str = "") -> fp.TypeRef:
        info = _unwrap(info)
        if isinstance(info, msgspec.inspect.StructType):
            self.classes[info.cls.__name__] = info.cls
            return fp.TypeRef(named=info.cls.__name__)
        if isinstance(info, _SCALARS):
            return fp.TypeRef(inline=fp.Atom(scalar="untyped"))
        if isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType, msgspec.inspect.VarTupleType)):
            element = self.ref(info.item_type)
            kind, keys = LIST_TYPES.get((owner, field), ("", ()))
            if not kind:
                meta = PATCH_META.get((owner, field))
                if meta is not None and "merge" in meta.strategies:
                    kind, keys = ("map", (meta.merge_key,)) if meta.merge_key else ("set", ())
                else:
                    kind = "atomic"
            relationship = "atomic" if kind == "atomic" else "associative"
            if kind == "set" and isinstance(_unwrap(info.item_type), msgspec.inspect.StructType):
                relationship = "atomic"  # a set holds scalars only
            return fp.TypeRef(inline=fp.Atom(list=fp.ListType(element, relationship, keys if kind == "map" else ())))
        if isinstance(info, msgspec.inspect.DictType):
            value = _unwrap(info.value_type)
            if isinstance(value, msgspec.inspect.AnyType):
                return fp.TypeRef(named=fp.UNTYPED_DEDUCED)
            relationship = "atomic" if (owner, field) in ATOMIC_MAPS else "separable"
            return fp.TypeRef(inline=fp.Atom(map=fp.MapType(element=self.ref(value), relationship=relationship)))
        return fp.TypeRef(named=fp.UNTYPED_DEDUCED)

    def build(self, name: str) -> fp.Atom | None:
        cls = self.classes.get(name)
        if cls is None:
            return None
        info = struct_info(cls)
        fields = tuple((field.encode_name, self.ref(field.type, name, field.encode_name)) for field in info.fields)
        defaults = tuple((field_name, value) for (owner, field_name), value in KEY_DEFAULTS.items() if owner == name)
        return fp.Atom(map=fp.MapType(fields, None, "atomic" if name in ATOMIC_STRUCTS else "separable", defaults))


@lru_cache(maxsize=None)
def _struct_fields(cls: type) -> tuple[tuple[str, str, type], ...]:
    """The struct-typed fields of ``cls``: (JSON name, "struct" for a non-optional one,
    "optional", "list" or "dict" of structs, the struct class)."""
    out = []
    for field in struct_info(cls).fields:
        info = field.type
        optional = isinstance(info, msgspec.inspect.UnionType)
        info = _unwrap(info)
        if isinstance(info, msgspec.inspect.StructType):
            out.append((field.encode_name, "optional" if optional else "struct", info.cls))
        elif isinstance(info, msgspec.inspect.ListType) and isinstance(_unwrap(info.item_type), msgspec.inspect.StructType):
            out.append((field.encode_name, "list", _unwrap(info.item_type).cls))
        elif isinstance(info, msgspec.inspect.DictType) and isinstance(_unwrap(info.value_type), msgspec.inspect.StructType):
            out.append((field.encode_name, "dict", _unwrap(info.value_type).cls))
    return tuple(out)


_JSON_DECODER = msgspec.json.Decoder()


def json_form(obj: Any) -> dict[str, Any]:
    """A built-in object's JSON form for the field manager, through msgspec's encoder and
    decoder (a few times faster than ``to_dict``): the same as ``to_dict(obj)`` but for a
    struct field that equals its default, written ``{}`` (recursively) where ``to_dict``
    leaves it out -- which :func:`typed_form` adds anyway, so the typed forms the merge
    compares are the same. Shares nothing with ``obj``."""
    document = {"apiVersion": obj.API_VERSION, "kind": obj.KIND}
    document.update(_JSON_DECODER.decode(msgspec.json.encode(obj)))
    return document


def typed_form(document: Any, cls: type) -> Any:
    """The JSON form of a built-in object as upstream's typed conversion sees it
    (``runtime.DefaultUnstructuredConverter.ToUnstructured`` of the Go struct): a
    non-pointer struct field is there, ``{}`` when empty (``omitempty`` does not omit a
    struct), where chaoskube's JSON form leaves it out. In place; returns ``document``."""
    if not isinstance(document, dict):
        return document
    for name, kind, sub in _struct_fields(cls):
        value = document.get(name)
        if kind == "struct":
            if value is None and name not in document:
                value = document[name] = {}
            typed_form(value, sub)
        elif kind == "optional":
            typed_form(value, sub)
        elif kind == "list" and isinstance(value, list):
            for item in value:
                typed_form(item, sub)
        elif kind == "dict" and isinstance(value, dict):
            for item in value.values():
                typed_form(item, sub)
    return document


@lru_cache(maxsize=None)
def builtin_schema(cls: type) -> tuple[fp.Schema, fp.TypeRef]:
    """The SMD schema and root type of a built-in kind's struct class."""
    types = _BuiltinTypes()
    root = types.ref(struct_info(cls))
    return fp.Schema(lazy=types.build), root


class _CustomTypes:
    def __init__(self) -> None:
        self.count = 0
        self.types: dict[str, fp.Atom] = {}

    def ref(self, node: Any) -> fp.TypeRef:
        if not isinstance(node, dict):
            return fp.TypeRef(named=fp.UNTYPED_DEDUCED)
        if node.get("x-kubernetes-int-or-string") or node.get("type") in ("string", "integer", "number", "boolean"):
            return fp.TypeRef(inline=fp.Atom(scalar="untyped"))
        if node.get("type") == "array":
            element = self.ref(node.get("items"))
            kind = node.get("x-kubernetes-list-type", "atomic")
            if kind == "map":
                return fp.TypeRef(inline=fp.Atom(list=fp.ListType(element, "associative", tuple(node.get("x-kubernetes-list-map-keys") or ()))))
            return fp.TypeRef(inline=fp.Atom(list=fp.ListType(element, "associative" if kind == "set" else "atomic")))
        properties = node.get("properties")
        additional = node.get("additionalProperties")
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if node.get("type") == "object" or properties or additional or preserve or node.get("x-kubernetes-embedded-resource"):
            relationship = "atomic" if node.get("x-kubernetes-map-type") == "atomic" else "separable"
            fields = tuple((name, self.ref(child)) for name, child in (properties or {}).items())
            if node.get("x-kubernetes-embedded-resource"):
                fields = tuple((name, ref) for name, ref in fields if name not in ("apiVersion", "kind", "metadata"))
                fields += (("apiVersion", fp.TypeRef(inline=fp.Atom(scalar="untyped"))), ("kind", fp.TypeRef(inline=fp.Atom(scalar="untyped"))), ("metadata", fp.TypeRef(named="ObjectMeta")))
            element = None
            if isinstance(additional, dict):
                element = self.ref(additional)
            elif preserve or additional is True:
                element = fp.TypeRef(named=fp.UNTYPED_DEDUCED)
            # only scalar defaults: SMD reads them for an associative list's key fields,
            # which are scalars; an object or list default (``default: {}``, common in CRDs)
            # would make the frozen, hashed schema unhashable
            defaults = tuple((name, child["default"]) for name, child in (properties or {}).items() if isinstance(child, dict) and "default" in child and not isinstance(child["default"], (dict, list)))
            return fp.TypeRef(inline=fp.Atom(map=fp.MapType(fields, element, relationship, defaults)))
        return fp.TypeRef(named=fp.UNTYPED_DEDUCED)


def _object_meta() -> type:
    from chaoskube.api.objects import ObjectMeta

    return ObjectMeta


_CUSTOM_CACHE: dict[str, tuple[fp.Schema, fp.TypeRef]] = {}


def custom_schema(structural: dict[str, Any] | None) -> tuple[fp.Schema, fp.TypeRef]:
    """The SMD schema of a custom kind from its CRD's structural schema (None: untyped,
    every list atomic, as upstream treats a CRD without a schema). ``metadata`` is the
    built-in ObjectMeta's. Cached by the schema's text."""
    key = orjson.dumps(structural, option=orjson.OPT_SORT_KEYS).decode()
    cached = _CUSTOM_CACHE.get(key)
    if cached is not None:
        return cached
    meta_schema, meta_root = builtin_schema(_object_meta())
    types = _CustomTypes()
    root = types.ref(structural if isinstance(structural, dict) else {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    atom = root.inline
    assert atom is not None and atom.map is not None
    fields = tuple((name, ref) for name, ref in atom.map.fields if name not in ("metadata", "apiVersion", "kind"))
    fields += (("metadata", meta_root), ("apiVersion", fp.TypeRef(inline=fp.Atom(scalar="untyped"))), ("kind", fp.TypeRef(inline=fp.Atom(scalar="untyped"))))
    root = fp.TypeRef(inline=fp.Atom(map=fp.MapType(fields, atom.map.element, atom.map.relationship, atom.map.defaults)))
    schema = fp.Schema(lazy=lambda name: meta_schema.resolve(fp.TypeRef(named=name)))
    if len(_CUSTOM_CACHE) > 256:
        _CUSTOM_CACHE.clear()
    _CUSTOM_CACHE[key] = (schema, root)
    return schema, root


# ----------------------------------------------------------------------------- managed fields
class ApplyError(ValueError):
    """A bad apply or bad managedFields: ``code`` 400 (or 422) with upstream's message."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


class ApplyConflict(Exception):
    """``NewConflictError``: 409 with ``message`` and one cause per conflicting field:
    (``field``, ``message``)."""

    def __init__(self, conflicts: list[fp.Conflict]) -> None:
        self.conflicts = conflicts
        self.causes = tuple((fp.path_string(c.path), f"conflict with {print_manager(c.manager)}") for c in conflicts)
        super().__init__(conflict_message(conflicts))


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


def print_manager(manager: str) -> str:
    """``printManager``: a manager identifier as the conflict message names it."""
    try:
        entry = orjson.loads(manager)
        assert isinstance(entry, dict)
    except (orjson.JSONDecodeError, AssertionError):
        return _go_quote(manager)
    text = _go_quote(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f" with subresource {_go_quote(entry['subresource'])}"
    if entry.get("operation") == "Update":
        if entry.get("time"):
            return f"{text} using {entry.get('apiVersion', '')} at {entry['time']}"
        return f"{text} using {entry.get('apiVersion', '')}"
    return text


def conflict_message(conflicts: list[fp.Conflict]) -> str:
    """``getConflictMessage``."""
    if len(conflicts) == 1:
        return f"Apply failed with 1 conflict: conflict with {print_manager(conflicts[0].manager)}: {fp.path_string(conflicts[0].path)}"
    by_manager: dict[str, list] = {}
    for conflict in conflicts:
        by_manager.setdefault(conflict.manager, []).append(conflict.path)
    lines = []
    for manager in sorted(by_manager):
        lines.append(f"conflicts with {print_manager(manager)}:")
        lines.extend(f"- {fp.path_string(path)}" for path in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def manager_identifier(manager: str, operation: str, api_version: str = "", subresource: str = "") -> str:
    """``BuildManagerIdentifier``: the entry as JSON without its fields and time (and
    without apiVersion for an Apply), in ManagedFieldsEntry's field order."""
    entry: dict[str, str] = {"manager": manager} if manager else {}
    if operation:
        entry["operation"] = operation
    if api_version and operation != "Apply":
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return orjson.dumps(entry).decode()


class Managed:
    """``managedStruct``: manager identifier -> VersionedSet, and -> time."""

    def __init__(self, fields: dict[str, fp.VersionedSet] | None = None, times: dict[str, str | None] | None = None) -> None:
        self.fields = fields if fields is not None else {}
        self.times = times if times is not None else {}


def decode_managed_fields(entries: Any) -> Managed:
    """``DecodeManagedFields``; raises ApplyError on an invalid entry."""
    managed = Managed()
    for index, entry in enumerate(entries or ()):
        if not isinstance(entry, dict):
            raise ApplyError(f"managed fields entry {index} is not an object")
        if entry.get("operation") not in ("Apply", "Update"):
            raise ApplyError("operation must be `Apply` or `Update`")
        if not entry.get("apiVersion"):
            raise ApplyError("apiVersion must not be empty")
        if entry.get("fieldsType", "") == "":
            raise ApplyError(f"missing fieldsType in managed fields entry {index}")
        if entry["fieldsType"] != "FieldsV1":
            raise ApplyError(f'invalid fieldsType "{entry["fieldsType"]}" in managed fields entry {index}')
        identifier = manager_identifier(entry.get("manager", ""), entry["operation"], entry["apiVersion"], entry.get("subresource", ""))
        try:
            paths = fp.set_from_fields_v1(entry.get("fieldsV1") or {})
        except (ValueError, TypeError) as error:
            raise ApplyError(f"error decoding versioned set from entry {index}: {error}") from None
        managed.fields[identifier] = fp.VersionedSet(paths, entry["apiVersion"], entry["operation"] == "Apply")
        managed.times[identifier] = entry.get("time")
    return managed


def encode_managed_fields(managed: Managed) -> list[dict[str, Any]] | None:
    """``encodeManagedFields``: entries sorted by operation, time, manager, apiVersion,
    subresource (``sortEncodedManagedFields``); None when there are none."""
    if not managed.fields:
        return None
    entries = []
    for identifier, versioned in managed.fields.items():
        entry: dict[str, Any] = dict(orjson.loads(identifier))
        out: dict[str, Any] = {}
        if entry.get("manager"):
            out["manager"] = entry["manager"]
        out["operation"] = "Apply" if versioned.applied else entry.get("operation", "Update")
        out["apiVersion"] = versioned.api_version
        if managed.times.get(identifier):
            out["time"] = managed.times[identifier]
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = fp.fields_v1(versioned.set)
        if entry.get("subresource"):
            out["subresource"] = entry["subresource"]
        entries.append(out)
    return sort_encoded_managed_fields(entries)


def sort_encoded_managed_fields(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """``sortEncodedManagedFields``: by operation (Apply before Update), time in whole
    seconds (none first), manager, apiVersion, subresource. Times are RFC 3339 UTC with
    whole seconds (metav1.Time's form), which order as their seconds do."""
    if entries is None:
        return None
    return sorted(entries, key=lambda e: (e.get("operation", ""), _seconds(e.get("time")), e.get("manager", ""), e.get("apiVersion", ""), e.get("subresource", "")))


def _is_reset(entries: Any) -> bool:
    """``isResetManagedFields``: ``[]`` or ``[{}]``."""
    if entries is None:
        return False
    if len(entries) == 0:
        return True
    return len(entries) == 1 and entries[0] == {}


def manager_or_user_agent(manager: str, user_agent: str) -> str:
    """``managerOrUserAgent`` (``endpoints/handlers/rest.go``): the fieldManager, else the
    user agent up to its first "/" (``kubectl/v1.32.0 (linux/amd64) ...`` -> ``kubectl``)."""
    if manager:
        return manager
    return user_agent.split("/")[0]


def validate_field_manager(manager: str) -> str:
    """``ValidateFieldManager``: the cause of a bad fieldManager, or ""."""
    if len(manager) > 128:
        return "fieldManager: Too long: may not be longer than 128"
    if any(not character.isprintable() for character in manager):
        return f"fieldManager: Invalid value: {_go_quote(manager)}: may only contain printable characters"
    return ""


#: ``stripMetaManager``'s set: fields of metadata and type no manager owns.
STRIPPED = frozenset({
    (("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),), (("f", "metadata"), ("f", "name")),
    (("f", "metadata"), ("f", "namespace")), (("f", "metadata"), ("f", "creationTimestamp")),
    (("f", "metadata"), ("f", "selfLink")), (("f", "metadata"), ("f", "uid")), (("f", "metadata"), ("f", "clusterName")),
    (("f", "metadata"), ("f", "generation")), (("f", "metadata"), ("f", "managedFields")),
    (("f", "metadata"), ("f", "resourceVersion")),
})


def _typed(document: Any, struct: type | None) -> Any:
    if struct is None or not isinstance(document, dict):
        return _without_managed_fields(document)
    return typed_form(orjson.loads(orjson.dumps(_without_managed_fields(document))), struct)  # a deep copy, faster


def _without_managed_fields(document: dict[str, Any] | None) -> Any:
    """The object as the typed merge sees it: its managedFields (stripped from every set,
    nobody's) left out, so that they never count as a change."""
    if not isinstance(document, dict):
        return document
    meta = document.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        document = dict(document)
        document["metadata"] = {key: value for key, value in meta.items() if key != "managedFields"}
    return document


# ----------------------------------------------------------------------------- the managers
# Each layer is one of apimachinery's ``internal.Manager``s: ``update(live, new, managed,
# manager)`` and ``apply(live, applied, managed, manager, force)`` answer (object, Managed);
# an apply's object is None when nothing changed (structuredMergeManager).


class StructuredMergeManager:
    """``structuredMergeManager``: the typed merge of one kind at one version
    (``api_version``). ``type_for(version)`` is the kind's type at another version and
    ``convert(object, from, to)`` converts between them (SMD's ``Converter``; None: one
    version, identity); ``ignored`` (``resetFields``) is the set to ignore at
    ``api_version``, or a dict of sets by version."""

    def __init__(self, schema: fp.Schema, root: fp.TypeRef, api_version: str, struct: type | None = None, ignored: frozenset | dict = frozenset(), *, type_for: Any = None, convert: Any = None) -> None:
        self.api_version = api_version
        self.struct = struct  # a built-in kind's class: objects take its typed form
        by_version = dict(ignored) if isinstance(ignored, dict) else ({api_version: ignored} if ignored else {})
        self.updater = fp.Updater(schema, type_for or (lambda version: root), convert, ignored={version: paths for version, paths in by_version.items() if paths} or None)

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        _, fields = self.updater.update(_typed(live, self.struct), _typed(new, self.struct), self.api_version, dict(managed.fields), manager)
        return new, Managed(fields, managed.times)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        version = str(applied.get("apiVersion") or "")
        if version != self.api_version:
            raise ApplyError(f"Incorrect version specified in apply patch. Specified patch version: {version}, expected: {self.api_version}")
        if (applied.get("metadata") or {}).get("managedFields") is not None:
            raise ApplyError("metadata.managedFields must be nil")
        try:
            new, fields = self.updater.apply(_typed(live, self.struct), applied, self.api_version, dict(managed.fields), manager, force)
        except fp.ListItemError as error:
            raise ApplyError(f"failed to create typed patch object ({_gvk(applied)}): {error}", 500) from None
        managed = Managed(fields, managed.times)
        if new is fp.NO_CHANGE:
            return None, managed
        return (new if isinstance(new, dict) else {}), managed


class StripMetaManager:
    """``stripMetaManager``: the fields of :data:`STRIPPED` belong to nobody."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        new, managed = self.inner.update(live, new, managed, manager)
        _strip(managed.fields, manager)
        return new, managed

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        new, managed = self.inner.apply(live, applied, managed, manager, force)
        _strip(managed.fields, manager)
        return new, managed


def _strip(fields: dict, manager: str) -> None:
    entry = fields.get(manager)
    if entry is not None:
        remaining = entry.set - STRIPPED
        if remaining:
            fields[manager] = fp.VersionedSet(remaining, entry.api_version, entry.applied)
        else:
            del fields[manager]


class ManagedFieldsUpdater:
    """``managedFieldsUpdater``: an update's fields merge into its manager's entry, and a
    write that changed something stamps its manager's time (``clock()``)."""

    def __init__(self, inner: Any, clock: Any) -> None:
        self.inner = inner
        self.clock = clock

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        current = "current-operation"
        new, managed = self.inner.update(live, new, managed, current)
        if current in managed.fields:
            entry = managed.fields.pop(current)
            previous = managed.fields.get(manager)
            managed.fields[manager] = fp.VersionedSet(entry.set | previous.set, entry.api_version, entry.applied) if previous is not None else entry
            managed.times[manager] = self.clock()
        return new, managed

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        new, managed = self.inner.apply(live, applied, managed, manager, force)
        if new is not None:
            managed.times[manager] = self.clock()
        else:
            new = copy.deepcopy(_without_managed_fields(live))
        return new, managed


class BuildManagerInfoManager:
    """``buildManagerInfoManager``: the manager's name becomes its identifier (operation,
    API version for an Update, subresource); "" is "unknown"."""

    def __init__(self, inner: Any, api_version: str, subresource: str = "") -> None:
        self.inner = inner
        self.api_version = api_version
        self.subresource = subresource

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        return self.inner.update(live, new, managed, manager_identifier(manager or "unknown", "Update", self.api_version, self.subresource))

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        return self.inner.apply(live, applied, managed, manager_identifier(manager or "unknown", "Apply", self.api_version, self.subresource), force)


class CapManagersManager:
    """``capManagersManager``: past ``max_update_managers`` Update entries, the oldest are
    folded into ``ancient-changes`` (one bucket per API version)."""

    def __init__(self, inner: Any, max_update_managers: int = MAX_UPDATE_MANAGERS) -> None:
        self.inner = inner
        self.max_update_managers = max_update_managers

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        new, managed = self.inner.update(live, new, managed, manager)
        return new, self.cap(managed)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        return self.inner.apply(live, applied, managed, manager, force)

    def cap(self, managed: Managed) -> Managed:
        updaters = [manager for manager, entry in managed.fields.items() if not entry.applied]
        if len(updaters) <= self.max_update_managers:
            return managed
        updaters.sort(key=lambda manager: (_seconds(managed.times.get(manager)), manager))
        first_of_version: dict[str, str] = {}
        length = len(updaters)
        for manager in updaters:
            if length <= self.max_update_managers:
                break
            entry = managed.fields[manager]
            time = managed.times.get(manager)
            bucket = manager_identifier(ANCIENT_CHANGES, "Update", entry.api_version)
            if entry.api_version in first_of_version:
                if bucket not in managed.fields:
                    managed.fields[bucket] = managed.fields.pop(first_of_version[entry.api_version])
                managed.fields[bucket] = fp.VersionedSet(entry.set | managed.fields[bucket].set, entry.api_version, entry.applied)
                del managed.fields[manager]
                length -= 1
                managed.times[bucket] = time
            else:
                first_of_version[entry.api_version] = manager
        return managed


def _seconds(time: str | None) -> str:
    return time or ""  # RFC 3339 UTC, whole seconds: orders as the Unix seconds do


class SkipNonAppliedManager:
    """``skipNonAppliedManager``: an object without managedFields is tracked by an update
    only when it is being created (no uid) and ``track_creates`` (upstream's
    ``DefaultTrackOnCreateProbability`` is 1: always; ``NewSkipNonAppliedManager``: never);
    its first apply gives what exists to ``before-first-apply``."""

    def __init__(self, inner: Any, api_version: str, kind: str, track_creates: bool = True) -> None:
        self.inner = inner
        self.api_version = api_version
        self.kind = kind
        self.track_creates = track_creates

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        if not managed.fields:
            if ((live or {}).get("metadata") or {}).get("uid") or not self.track_creates:
                return new, managed
        return self.inner.update(live, new, managed, manager)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        if not managed.fields:
            empty = {"apiVersion": str(applied.get("apiVersion") or self.api_version), "kind": str(applied.get("kind") or self.kind)}
            live, managed = self.inner.update(empty, live, managed, BEFORE_FIRST_APPLY)
        return self.inner.apply(live, applied, managed, manager, force)


class LastAppliedUpdater:
    """``lastAppliedUpdater``: an apply by "kubectl" to an object that carries kubectl's
    ``last-applied-configuration`` annotation rewrites it to the applied configuration
    (without the annotation), so a later client-side apply computes from the right base; an
    annotation too large for the 256 KiB limit is dropped (``SetLastApplied``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        return self.inner.update(live, new, managed, manager)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        new, managed = self.inner.apply(live, applied, managed, manager, force)
        if manager == "kubectl" and new is not None and (((new.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION)):
            config = copy.deepcopy(applied)
            annotations = (config.get("metadata") or {}).get("annotations")
            if isinstance(annotations, dict):
                annotations.pop(LAST_APPLIED_ANNOTATION, None)
            new = dict(new)
            meta = dict(new.get("metadata") or {})
            annotations = dict(meta.get("annotations") or {})
            annotations[LAST_APPLIED_ANNOTATION] = orjson.dumps(config).decode()
            if sum(len(key) + len(value) for key, value in annotations.items()) > TOTAL_ANNOTATION_SIZE_LIMIT_B:
                del annotations[LAST_APPLIED_ANNOTATION]
            meta["annotations"] = annotations
            new["metadata"] = meta
        return new, managed


class LastAppliedManager:
    """``lastAppliedManager``: the upgrade from client-side to server-side apply. An apply by
    "kubectl" whose conflicts are all fields of the live object's
    ``last-applied-configuration`` annotation that still hold the values it gives (the fields
    client-side apply set and nobody changed since) goes through, forced; other conflicts
    stay (without the allowed ones). Any manager other than "kubectl" opts out."""

    def __init__(self, inner: Any, schema: fp.Schema, root: fp.TypeRef, api_version: str, struct: type | None = None) -> None:
        self.inner = inner
        self.schema = schema
        self.root = root
        self.api_version = api_version
        self.struct = struct

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        return self.inner.update(live, new, managed, manager)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        try:
            return self.inner.apply(live, applied, managed, manager, force)
        except fp.ConflictError as error:
            if manager != "kubectl":
                raise
            allowed = self._allowed(live)
            if allowed is None:
                raise
            remaining = [conflict for conflict in error.conflicts if conflict.path not in allowed]
            if remaining:
                raise fp.ConflictError(remaining) from None
        return self.inner.apply(live, applied, managed, manager, True)

    def _allowed(self, live: Any) -> frozenset | None:
        """``allowedConflictsFromLastApplied``: the annotation's fields whose values the live
        object still has; None when there is no usable annotation."""
        text = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION, "")
        if not text:
            return None
        try:
            last = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(last, dict) or last.get("apiVersion") != self.api_version:
            return None
        try:
            paths = fp.to_field_set(last, self.schema, self.root)
            comparison = fp.compare(last, _typed(live, self.struct), self.schema, self.root)
        except (fp.ListItemError, ValueError):
            return None
        return paths - comparison.modified - comparison.added - comparison.removed


#: ``ValidateAnnotationsSize``: the annotations of an object hold at most 256 KiB.
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * 1024


class VersionCheckManager:
    """``versionCheckManager``: an apply's configuration must be of this kind and version."""

    def __init__(self, inner: Any, api_version: str, kind: str) -> None:
        self.inner = inner
        self.api_version = api_version
        self.kind = kind

    def update(self, live: Any, new: Any, managed: Managed, manager: str) -> tuple[Any, Managed]:
        return self.inner.update(live, new, managed, manager)

    def apply(self, live: Any, applied: dict[str, Any], managed: Managed, manager: str, force: bool) -> tuple[Any, Managed]:
        if applied.get("apiVersion") != self.api_version or applied.get("kind") != self.kind:
            raise ApplyError(f"invalid object type: {_gvk(applied)}")
        return self.inner.apply(live, applied, managed, manager, force)


def default_chain(schema: fp.Schema, root: fp.TypeRef, api_version: str, kind: str, subresource: str = "", *, ignored: frozenset | dict = frozenset(), struct: type | None = None, clock: Any = lambda: None, max_update_managers: int | None = MAX_UPDATE_MANAGERS, track_creates: bool = True, type_for: Any = None, convert: Any = None) -> Any:
    """``NewDefaultFieldManager``'s chain, outermost first: versionCheck, lastAppliedUpdater,
    lastAppliedManager, skipNonApplied, capManagers, buildManagerInfo,
    managedFieldsUpdater, stripMeta, structuredMerge. ``max_update_managers`` None leaves
    capManagers out (as the test harness of ``internal/testing`` does)."""
    chain: Any = StructuredMergeManager(schema, root, api_version, struct, ignored, type_for=type_for, convert=convert)
    chain = StripMetaManager(chain)
    chain = ManagedFieldsUpdater(chain, clock)
    chain = BuildManagerInfoManager(chain, api_version, subresource)
    if max_update_managers is not None:
        chain = CapManagersManager(chain, max_update_managers)
    chain = SkipNonAppliedManager(chain, api_version, kind, track_creates)
    chain = LastAppliedManager(chain, schema, root, api_version, struct)
    chain = LastAppliedUpdater(chain)
    return VersionCheckManager(chain, api_version, kind)


class FieldManager:
    """``internal.FieldManager`` around a chain of managers (by default
    :func:`default_chain` for the kind at ``api_version``, with reset fields ``ignored``);
    ``clock()`` gives the time written into entries (RFC 3339).

    ``hub_version`` (with ``convert``) is the version the caller's objects are at when it
    is not ``api_version``: live and new objects are converted to ``api_version`` before
    the chain and the result back to the hub (``structuredMergeManager.toVersioned`` /
    ``toUnversioned``); an apply's configuration stays at its own version, which the
    chain checks. ``type_for`` gives the kind's type at the other versions entries name."""

    def __init__(self, schema: fp.Schema | None = None, root: fp.TypeRef | None = None, api_version: str = "", kind: str = "", subresource: str = "", ignored: frozenset | dict = frozenset(), max_update_managers: int | None = MAX_UPDATE_MANAGERS, struct: type | None = None, *, chain: Any = None, clock: Any = None, hub_version: str = "", type_for: Any = None, convert: Any = None) -> None:
        self.api_version = api_version
        self.kind = kind
        self.subresource = subresource
        self.hub_version = hub_version or api_version
        self.convert = convert
        self._now: str | None = None
        self.clock = clock or (lambda: self._now)
        if chain is None:
            assert schema is not None and root is not None
            chain = default_chain(schema, root, api_version, kind, subresource, ignored=ignored, struct=struct, clock=self.clock, max_update_managers=max_update_managers, type_for=type_for, convert=convert)
        self.chain = chain

    def _to_version(self, document: Any, version: str) -> Any:
        """``document`` converted to ``version`` (the hub's objects to the request's and
        back); identity for one version."""
        if self.convert is None or not isinstance(document, dict):
            return document
        current = str(document.get("apiVersion") or "")
        if not current or current == version:
            return document
        return self.convert(document, current, version)

    # ------------------------------------------------------------------ update
    def update(self, live: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str | None = None) -> dict[str, Any]:
        """``FieldManager.Update``: ``new`` with its managedFields set; raises ApplyError.
        ``live`` is None (or has no uid) for a create."""
        self._now = now
        live = live if live is not None else {"apiVersion": self.api_version, "kind": self.kind}
        managed = self._decode_live_or_new((live.get("metadata") or {}).get("managedFields"), (new.get("metadata") or {}).get("managedFields"))
        new = dict(new)
        new["metadata"] = {key: value for key, value in (new.get("metadata") or {}).items() if key != "managedFields"}
        obj, managed = self.chain.update(self._to_version(live, self.api_version), self._to_version(new, self.api_version), managed, manager)
        return self._to_version(self._encode(obj, managed), self.hub_version)

    def update_no_errors(self, live: dict[str, Any] | None, new: dict[str, Any], manager: str, now: str | None = None) -> dict[str, Any]:
        """``FieldManager.UpdateNoErrors``: on an error, ``new`` with the live object's
        managedFields ("[SHOULD NOT HAPPEN]" upstream)."""
        try:
            return self.update(live, new, manager, now)
        except (ApplyError, fp.ListItemError, ValueError):
            out = dict(new)
            meta = {key: value for key, value in (new.get("metadata") or {}).items() if key != "managedFields"}
            entries = ((live or {}).get("metadata") or {}).get("managedFields")
            if entries is not None:
                meta["managedFields"] = entries
            out["metadata"] = meta
            return out

    def _decode_live_or_new(self, live_entries: Any, new_entries: Any) -> Managed:
        """``decodeLiveOrNew``: a subresource ignores the request's entries; ``[]`` resets;
        entries that do not decode, or none, fall back to the live object's."""
        if self.subresource:
            return self._decode_or_empty(live_entries)
        if _is_reset(new_entries):
            return Managed()
        try:
            managed = decode_managed_fields(new_entries)
        except ApplyError:
            managed = Managed()
        if not managed.fields:
            return self._decode_or_empty(live_entries)
        return managed

    @staticmethod
    def _decode_or_empty(entries: Any) -> Managed:
        try:
            return decode_managed_fields(entries)
        except ApplyError:
            return Managed()

    # ------------------------------------------------------------------ apply
    def apply(self, live: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool, now: str | None = None) -> dict[str, Any]:
        """``FieldManager.Apply``: the new object with its managedFields (the live object
        with new managedFields when no value changes). ``live`` is None when the object does
        not exist yet. Raises ApplyConflict, ApplyError."""
        self._now = now
        live = live if live is not None else {"apiVersion": self.api_version, "kind": self.kind}
        try:
            managed = decode_managed_fields((live.get("metadata") or {}).get("managedFields"))
        except ApplyError as error:
            raise ApplyError(f"failed to decode managed fields: {error}", 500) from None
        try:
            obj, managed = self.chain.apply(self._to_version(live, self.api_version), applied, managed, manager, force)
        except fp.ConflictError as error:
            raise ApplyConflict(error.conflicts) from None
        return self._to_version(self._encode(obj, managed), self.hub_version)

    @staticmethod
    def _encode(document: dict[str, Any], managed: Managed) -> dict[str, Any]:
        """``EncodeObjectManagedFields``."""
        out = dict(document)
        meta = dict(out.get("metadata") or {})
        entries = encode_managed_fields(managed)
        if entries is None:
            meta.pop("managedFields", None)
        else:
            meta["managedFields"] = entries
        out["metadata"] = meta
        return out


class NoneConversion:
    """A CRD's conversion strategy ``None`` as the field manager's converter sees it
    (``versionconverter.go`` ``newCRDVersionConverter`` over apiextensions' ``crConverter``
    and ``nopConverter``, ``pkg/apiserver/conversion/converter.go``): only ``apiVersion``
    changes, between the group/versions of the CRD's ``spec.versions`` (served or not).
    Any other version is an error, not a missing version (``crConverter`` answers a plain
    error, which ``IsMissingVersionError`` does not recognise): an object with a
    managedFields entry at a version the CRD no longer lists cannot be applied to (500
    ``request to convert CR to an invalid group/version``) and its updates keep their
    managedFields unchanged (``UpdateNoErrors``) -- upstream's open kubernetes#111937."""

    def __init__(self, versions: frozenset[str]) -> None:
        self.versions = versions

    def __call__(self, document: Any, from_version: str, to_version: str) -> Any:
        if to_version not in self.versions:
            raise ApplyError(f"request to convert CR to an invalid group/version: {to_version}", 500)
        if from_version not in self.versions:
            raise ApplyError(f"request to convert CR from an invalid group/version: {from_version}", 500)
        if not isinstance(document, dict) or from_version == to_version:
            return document
        return {**document, "apiVersion": to_version}


# ----------------------------------------------------------------------------- scale
SCALE_API_VERSION = "autoscaling/v1"
REPLICAS_IN_SCALE = (("f", "spec"), ("f", "replicas"))


def scale_to_subresource(parent_entries: Any, mappings: dict[str, tuple | None]) -> list[dict[str, Any]] | None:
    """``ScaleHandler.ToSubresource``: the parent's entries that own its replicas path (by
    API version, ``mappings``), as entries of the ``autoscaling/v1`` Scale owning
    ``spec.replicas``; entries at an unknown version are dropped."""
    managed = decode_managed_fields(parent_entries)
    out = Managed()
    for manager, entry in managed.fields.items():
        path = mappings.get(entry.api_version)
        if path and path in entry.set:
            out.fields[manager] = fp.VersionedSet(frozenset({REPLICAS_IN_SCALE}), SCALE_API_VERSION, entry.applied)
            out.times[manager] = managed.times.get(manager)
    return encode_managed_fields(out)


def scale_to_parent(parent_entries: Any, scale_entries: Any, api_version: str, mappings: dict[str, tuple | None]) -> list[dict[str, Any]] | None:
    """``ScaleHandler.ToParent``: the parent's entries after a write of its Scale: a parent
    entry owning the replicas path keeps it only if its manager still owns the Scale's
    ``spec.replicas``; a Scale manager that does becomes a parent entry at ``api_version``
    owning the replicas path; parent entries at an unknown version are dropped."""
    parent = decode_managed_fields(parent_entries)
    scale = dict(decode_managed_fields(scale_entries).fields)
    out = Managed()
    for manager, entry in parent.fields.items():
        if entry.api_version not in mappings:
            continue
        path = mappings[entry.api_version]
        if path is None or path not in entry.set:
            out.fields[manager] = entry
            out.times[manager] = parent.times.get(manager)
            continue
        if manager not in scale:
            remaining = entry.set - {path}
            if remaining:
                out.fields[manager] = fp.VersionedSet(remaining, entry.api_version, entry.applied)
                out.times[manager] = parent.times.get(manager)
        else:
            out.fields[manager] = entry
            out.times[manager] = parent.times.get(manager)
            del scale[manager]
    for manager, entry in scale.items():
        if REPLICAS_IN_SCALE not in entry.set:
            continue
        out.fields[manager] = fp.VersionedSet(frozenset({mappings[api_version]}), api_version, entry.applied)
        out.times[manager] = parent.times.get(manager)
    return encode_managed_fields(out)


def _gvk(document: dict[str, Any]) -> str:
    version = str(document.get("apiVersion") or "")
    group, _, version = version.rpartition("/")
    return f"{group}/{version}, Kind={document.get('kind', '')}"


def without_managed_fields(document: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(_without_managed_fields(document))


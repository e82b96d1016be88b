"""Strategic merge patch (``application/strategic-merge-patch+json``), as
``k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`` applies it for the built-in kinds.

A strategic merge patch is a JSON merge patch (RFC 7386) that knows, from the Go types'
struct tags, which lists are merged element by element instead of replaced:
``patchStrategy:"merge"`` with a ``patchMergeKey`` (``containers`` by ``name``), a
``merge`` list of primitives (``finalizers``: the union), and maps that are replaced but
for the keys a ``retainKeys`` strategy keeps (``Deployment.spec.strategy``). This is what
``kubectl apply``, ``kubectl patch`` (its default type) and ``kubectl drain``'s cordon send.

The directives (``strategicpatch/patch.go`` constants), all honoured here:

- ``{"$patch": "replace"}`` in a map: the map becomes the patch's map; in a list of maps:
  the list becomes the patch's other elements. ``{"$patch": "delete"}`` in a map deletes
  it; in an element of a merged list, deletes the element with that merge key.
  ``{"$patch": "merge"}`` is the default and is dropped.
- ``$retainKeys``: the keys of the map that survive; the others are cleared first.
- ``$deleteFromPrimitiveList/<field>``: values removed from a merged primitive list.
- ``$setElementOrder/<field>``: the order of a merged list after the patch (elements the
  order does not name keep their place relative to the ones it names, after them).
- ``null``: deletes the key, as in a JSON merge patch.

Patch metadata is the table :data:`PATCH_META`, keyed by the struct's class name and the
field's JSON name; it is transcribed from the ``patchStrategy``/``patchMergeKey`` tags of
``k8s.io/api`` (``core/v1/types.go``, ``apps/v1/types.go``, ``policy/v1/types.go``,
``admissionregistration/v1/types.go``, ``meta/v1/types.go``). A field not in it behaves as
upstream's untagged fields: maps merge, lists are replaced. Kinds added to
``chaoskube.api.objects`` get strategic merge patch without more work, and list merging as
soon as their tagged fields are added here. The OpenAPI documents of the HTTP front
publish the same table as ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``,
so ``kubectl apply`` computes its patches with the metadata the server applies them with.

Custom resources have no Go types: upstream answers 415 to a strategic merge patch of one
(``Patch`` in ``handlers/patch.go``), and so does the front.

Non-guarantees: ``$setElementOrder`` places elements it does not name after the named
ones (upstream interleaves them by their original positions, ``normalizeElementOrder``);
the result is the same set of elements.
"""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any

import msgspec

from chaoskube.api.patch import PatchError

__all__ = ["PATCH_META", "PatchMeta", "field_type", "patch_meta", "strategic_merge_patch"]

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


class PatchMeta(typing.NamedTuple):
    strategies: tuple[str, ...]  # "merge", "retainKeys"
    merge_key: str = ""


_MERGE = ("merge",)
#: (struct class name, JSON field) -> patch metadata, from k8s.io/api's struct tags.
PATCH_META: dict[tuple[str, str], PatchMeta] = {
    # meta/v1 ObjectMeta
    ("ObjectMeta", "finalizers"): PatchMeta(_MERGE),
    ("ObjectMeta", "ownerReferences"): PatchMeta(_MERGE, "uid"),
    # core/v1 PodSpec
    ("PodSpec", "volumes"): PatchMeta(("merge", "retainKeys"), "name"),
    ("PodSpec", "initContainers"): PatchMeta(_MERGE, "name"),
    ("PodSpec", "containers"): PatchMeta(_MERGE, "name"),
    ("PodSpec", "ephemeralContainers"): PatchMeta(_MERGE, "name"),
    ("PodSpec", "imagePullSecrets"): PatchMeta(_MERGE, "name"),
    ("PodSpec", "hostAliases"): PatchMeta(_MERGE, "ip"),
    ("PodSpec", "topologySpreadConstraints"): PatchMeta(_MERGE, "topologyKey"),
    ("PodSpec", "resourceClaims"): PatchMeta(("merge", "retainKeys"), "name"),
    ("PodSpec", "schedulingGates"): PatchMeta(_MERGE, "name"),
    # core/v1 Container
    ("Container", "ports"): PatchMeta(_MERGE, "containerPort"),
    ("Container", "env"): PatchMeta(_MERGE, "name"),
    ("Container", "volumeMounts"): PatchMeta(_MERGE, "mountPath"),
    ("Container", "volumeDevices"): PatchMeta(_MERGE, "devicePath"),
    # core/v1 PodStatus, NodeSpec, NodeStatus, ServiceSpec, ServiceStatus, NamespaceStatus
    ("PodStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("PodStatus", "podIPs"): PatchMeta(_MERGE, "ip"),
    ("PodStatus", "hostIPs"): PatchMeta(_MERGE, "ip"),
    ("NodeSpec", "podCIDRs"): PatchMeta(_MERGE),
    ("NodeStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("NodeStatus", "addresses"): PatchMeta(_MERGE, "type"),
    ("ServiceSpec", "ports"): PatchMeta(_MERGE, "port"),
    ("ServiceStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("NamespaceStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # apps/v1
    ("DeploymentSpec", "strategy"): PatchMeta(("retainKeys",)),
    ("DeploymentStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("ReplicaSetStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # policy/v1
    ("PodDisruptionBudgetStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # admissionregistration/v1
    ("ValidatingWebhookConfiguration", "webhooks"): PatchMeta(_MERGE, "name"),
    ("MutatingWebhookConfiguration", "webhooks"): PatchMeta(_MERGE, "name"),
}


# ----------------------------------------------------------------------------- types
@lru_cache(maxsize=None)
def _fields(cls: type) -> dict[str, Any]:
    """JSON field name -> its msgspec type info, for a struct class."""
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType), cls
    return {field.encode_name: field.type for field in info.fields}


def _unwrap(info: Any) -> Any:
    """The one non-None member of an optional type."""
    if isinstance(info, msgspec.inspect.UnionType):
        members = [member for member in info.types if not isinstance(member, msgspec.inspect.NoneType)]
        if len(members) == 1:
            return members[0]
    return info


def field_type(info: Any, name: str) -> Any:
    """The type info of field ``name`` of a struct type info (None when unknown)."""
    info = _unwrap(info)
    if isinstance(info, msgspec.inspect.StructType):
        return _fields(info.cls).get(name)
    return None


def patch_meta(info: Any, name: str) -> PatchMeta:
    info = _unwrap(info)
    if isinstance(info, msgspec.inspect.StructType):
        return PATCH_META.get((info.cls.__name__, name), PatchMeta(()))
    return PatchMeta(())


def _item_type(info: Any) -> Any:
    info = _unwrap(info)
    if isinstance(info, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType, msgspec.inspect.VarTupleType)):
        return info.item_type
    return None


def _value_type(info: Any) -> Any:
    info = _unwrap(info)
    if isinstance(info, msgspec.inspect.DictType):
        return info.value_type
    return None


# ----------------------------------------------------------------------------- applying
def strategic_merge_patch(document: Any, patch: Any, cls: type) -> Any:
    """``StrategicMergePatch(original, patch, dataStruct)`` on JSON values: ``document``
    (the object's JSON form) patched by ``patch`` with the metadata of struct ``cls``.
    Pure: the arguments are not changed. Raises :class:`PatchError`."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch is a JSON object")
    if not isinstance(document, dict):
        raise PatchError("a strategic merge patch applies to a JSON object")
    return _merge_map(_copy(document), patch, msgspec.inspect.type_info(cls))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _strip(value: Any) -> Any:
    """A patch value stored as it is (no original to merge into): directives removed."""
    if isinstance(value, dict):
        if value.get(DIRECTIVE) == "delete":
            return None
        out = {}
        for key, item in value.items():
            if key == DIRECTIVE or key == RETAIN_KEYS or key.startswith(DELETE_FROM_PRIMITIVE) or key.startswith(SET_ELEMENT_ORDER):
                continue
            if item is None:
                continue
            out[key] = _strip(item)
        return out
    if isinstance(value, list):
        kept = [_strip(item) for item in value if not (isinstance(item, dict) and item.get(DIRECTIVE) in ("delete", "replace"))]
        return [item for item in kept if item is not None]
    return value


def _merge_map(original: dict[str, Any], patch: dict[str, Any], info: Any) -> dict[str, Any] | None:
    directive = patch.get(DIRECTIVE)
    if directive == "replace":
        return _strip({key: value for key, value in patch.items() if key != DIRECTIVE})
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"unknown patch directive {directive!r} (replace, merge, delete)")
    if RETAIN_KEYS in patch:
        retained = patch[RETAIN_KEYS]
        if not isinstance(retained, list):
            raise PatchError(f"{RETAIN_KEYS} must be a list of keys, not {retained!r}")
        keep = set(retained)
        original = {key: value for key, value in original.items() if key in keep}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(DELETE_FROM_PRIMITIVE):
            field = key.removeprefix(DELETE_FROM_PRIMITIVE)
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [item for item in current if item not in value]
        elif key.startswith(SET_ELEMENT_ORDER):
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            orders[key.removeprefix(SET_ELEMENT_ORDER)] = value
    for key, value in patch.items():
        if key in (DIRECTIVE, RETAIN_KEYS) or key.startswith(DELETE_FROM_PRIMITIVE) or key.startswith(SET_ELEMENT_ORDER):
            continue
        if value is None:
            original.pop(key, None)
            continue
        sub = field_type(info, key)
        meta = patch_meta(info, key)
        current = original.get(key)
        if isinstance(value, dict):
            # A ``retainKeys`` field is merged too: kubectl sends the ``$retainKeys``
            # directive with it, which the merge honours.
            if isinstance(current, dict):
                merged = _merge_map(current, value, sub if sub is not None else _value_type(info))
            else:
                merged = _strip(value)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            if "merge" in meta.strategies:
                original[key] = _merge_list(current if isinstance(current, list) else [], value, meta.merge_key, _item_type(sub))
            else:
                original[key] = _strip(value)
        else:
            original[key] = value
    for field, order in orders.items():
        if isinstance(original.get(field), list):
            original[field] = _ordered(original[field], order, patch_meta(info, field).merge_key)
    return original


def _merge_list(original: list[Any], patch: list[Any], merge_key: str, item_info: Any) -> list[Any]:
    if any(isinstance(item, dict) and item.get(DIRECTIVE) == "replace" for item in patch):
        return _strip([item for item in patch if not (isinstance(item, dict) and item.get(DIRECTIVE) == "replace")])
    if not merge_key:
        # A merged list of primitives: the union, in order (``mergeSliceWithoutSpecialElements``).
        out = list(original)
        for item in patch:
            if isinstance(item, dict):
                raise PatchError("a merge list without a merge key holds primitives, not objects")
            if item not in out:
                out.append(item)
        return out
    out = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"the elements of a list merged by {merge_key!r} are objects, not {item!r}")
        if merge_key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {merge_key}")
        key = item[merge_key]
        index = next((i for i, existing in enumerate(out) if isinstance(existing, dict) and existing.get(merge_key) == key), None)
        if item.get(DIRECTIVE) == "delete":
            out = [existing for existing in out if not (isinstance(existing, dict) and existing.get(merge_key) == key)]
            continue
        if index is None:
            stripped = _strip(item)
            out.append(stripped)
        else:
            merged = _merge_map(out[index], item, item_info)
            if merged is None:
                out.pop(index)
            else:
                out[index] = merged
    return out


def _ordered(items: list[Any], order: list[Any], merge_key: str) -> list[Any]:
    def identity(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    rank = {}
    for position, entry in enumerate(order):
        key = identity(entry)
        if isinstance(key, (str, int, float, bool)) and key not in rank:
            rank[key] = position
    named = sorted((item for item in items if identity(item) in rank), key=lambda item: rank[identity(item)])
    others = [item for item in items if identity(item) not in rank]
    return named + others

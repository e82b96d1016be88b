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
``k8s.io/api`` (``core/v1/types.go``, ``apps/v1/types.go``, ``batch/v1/types.go``,
``policy/v1/types.go``, ``admissionregistration/v1/types.go``, ``meta/v1/types.go``). Pod
templates (a StatefulSet's, DaemonSet's, Job's, CronJob's ``jobTemplate``) are a
``PodSpec`` too, so their containers merge by name as a Deployment's do. A field not in it behaves as
upstream's untagged fields: maps merge, lists are replaced. Kinds added to
``chaoskube.api.objects`` get strategic merge patch without more work, and list merging as
soon as their tagged fields are added here. The OpenAPI documents of the HTTP front
publish the same table as ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``,
so ``kubectl apply`` computes its patches with the metadata the server applies them with.

Custom resources have no Go types: upstream answers 415 to a strategic merge patch of one
(``Patch`` in ``handlers/patch.go``), and so does the front.

The application is ``patch.go``'s, function for function (``mergeMap``, ``mergeSlice``,
``mergePatchIntoOriginal``, ``normalizeElementOrder``, ...), with its error messages;
apimachinery's own test tables pass in ``tests/api/test_strategicpatch_upstream.py``.
"""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any

import msgspec

from chaoskube.api.patch import PatchError

__all__ = ["PATCH_META", "PatchMeta", "field_type", "patch_meta", "strategic_merge_patch", "struct_info"]

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
    ("StatefulSetStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("DaemonSetStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # core/v1 (the common kinds)
    ("ReplicationControllerStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("PersistentVolumeClaimStatus", "conditions"): PatchMeta(_MERGE, "type"),
    ("ServiceAccount", "secrets"): PatchMeta(_MERGE, "name"),
    # batch/v1
    ("JobStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # policy/v1
    ("PodDisruptionBudgetStatus", "conditions"): PatchMeta(_MERGE, "type"),
    # admissionregistration/v1
    ("ValidatingWebhookConfiguration", "webhooks"): PatchMeta(_MERGE, "name"),
    ("MutatingWebhookConfiguration", "webhooks"): PatchMeta(_MERGE, "name"),
}


# ----------------------------------------------------------------------------- types
_STRUCT_INFOS: dict[type, Any] = {}


def struct_info(cls: type) -> Any:
    """``msgspec.inspect.type_info`` of a struct class, remembered with every struct type
    nested in it: one call walks the whole tree of types (a few ms for a Pod), so each
    ``StructType`` of its answer is kept rather than walked again for a nested class."""
    info = _STRUCT_INFOS.get(cls)
    if info is None:
        info = msgspec.inspect.type_info(cls)
        seen: set[int] = set()
        stack = [info]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, msgspec.inspect.StructType):
                _STRUCT_INFOS.setdefault(node.cls, node)
                stack.extend(field.type for field in node.fields)
            elif isinstance(node, msgspec.inspect.UnionType):
                stack.extend(node.types)
            elif isinstance(node, msgspec.inspect.DictType):
                stack.extend((node.key_type, node.value_type))
            elif isinstance(node, msgspec.inspect.TupleType):
                stack.extend(node.item_types)
            elif isinstance(node, (msgspec.inspect.ListType, msgspec.inspect.SetType, msgspec.inspect.FrozenSetType, msgspec.inspect.VarTupleType)):
                stack.append(node.item_type)
        _STRUCT_INFOS.setdefault(cls, info)
    return info


@lru_cache(maxsize=None)
def _fields(cls: type) -> dict[str, Any]:
    """JSON field name -> its msgspec type info, for a struct class."""
    info = struct_info(cls)
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
# ``StrategicMergeMapPatchUsingLookupPatchMeta`` (``patch.go``), function for function, with
# its options for applying a patch (``MergeParallelList`` and ``IgnoreUnmatchedNulls`` on).
# Go iterates a patch map in random order; the helpers below are order-independent for
# well-formed patches, as upstream's (its tests run each case ten times for that reason).


def strategic_merge_patch(document: Any, patch: Any, cls: type) -> Any:
    """``StrategicMergePatch(original, patch, dataStruct)`` on JSON values: ``document``
    (the object's JSON form) patched by ``patch`` with the metadata of struct ``cls``.
    Pure: the arguments are not changed. Raises :class:`PatchError` with upstream's
    messages (``The order in patch list: ... doesn't match $setElementOrder list``)."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch is a JSON object")
    if not isinstance(document, dict):
        raise PatchError("a strategic merge patch applies to a JSON object")
    return _merge_map(_copy(document), _copy(patch), struct_info(cls))


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _go(value: Any) -> str:
    """Go's ``%v`` of a JSON value, for error messages."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_go(item)}" for key, item in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _no_merge_key(item: dict[str, Any], merge_key: str) -> PatchError:
    return PatchError(f"map: {_go(item)} does not contain declared merge key: {merge_key}")


def _strategy(meta: PatchMeta) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy besides ``retainKeys``."""
    others = [strategy for strategy in meta.strategies if strategy != "retainKeys"]
    if len(others) > 1:
        raise PatchError(f"unexpected patch strategy: {list(meta.strategies)}")
    return others[0] if others else ""


def _slice_item_type(info: Any, name: str) -> Any:
    """``LookupPatchMetadataForSlice``'s schema: the list's element type, or the field's own
    struct type when the field is not a list."""
    sub = field_type(info, name)
    item = _item_type(sub)
    if item is not None:
        return item
    return sub if sub is not None else _value_type(info)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``removeDirectives``: (value, keep): a map with ``$patch`` is dropped."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        out = {}
        for key, item in value.items():
            kept, keep = _remove_directives(item)
            if keep:
                out[key] = kept
        return out, True
    if isinstance(value, list):
        return [kept for kept, keep in (_remove_directives(item) for item in value) if keep], True
    return value, True


def _discard_nulls(value: Any) -> None:
    """``discardNullValuesFromPatch``."""
    if isinstance(value, dict):
        for key in [key for key, item in value.items() if item is None]:
            del value[key]
        for item in value.values():
            _discard_nulls(item)
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _element_kind(*lists: list[Any]) -> str:
    """``sliceElementType``: "map" or "scalar" (lists of lists refused), "" when empty."""
    kind = ""
    first: Any = None
    for items in lists:
        for item in items:
            if isinstance(item, list):
                raise PatchError("lists of lists are not supported")
            this = "map" if isinstance(item, dict) else type(item).__name__
            if not kind:
                kind, first = this, item
            elif kind != this and not (isinstance(item, (int, float)) and isinstance(first, (int, float)) and not isinstance(item, bool) and not isinstance(first, bool)):
                raise PatchError(f"list element types are not identical: {_go(list(lists))}")
    if not kind:
        raise PatchError("no elements in any of the given slices")
    return "map" if kind == "map" else "scalar"


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], info: Any) -> dict[str, Any]:
    """``mergeMap``."""
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            return {key: value for key, value in patch.items() if key != DIRECTIVE}
        if directive == "delete":
            return {}  # handleDirectiveInMergeMap: the map is emptied (the key stays)
        raise PatchError(f"unknown patch type: {_go(directive)} in map: {_go(patch)}")
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_set_element_orders(original, patch, info)
    for key, value in list(patch.items()):
        is_delete_list = False
        if key.startswith(DELETE_FROM_PRIMITIVE.rstrip("/")):
            parts = key.split("/", 1)
            if len(parts) <= 1 or parts[0] != DELETE_FROM_PRIMITIVE.rstrip("/"):
                raise PatchError("invalid patch format of primitive list")
            key, is_delete_list = parts[1], True
        if value is None:
            original.pop(key, None)
            continue
        if key not in original:
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
            continue
        current = original[key]
        if type(current) is not type(value) and not (isinstance(current, dict) and isinstance(value, dict)) and not (isinstance(current, list) and isinstance(value, list)):
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    del original[key]
            continue
        if isinstance(current, dict):
            meta = patch_meta(info, key)
            sub = field_type(info, key)
            if _strategy(meta) == "replace":
                original[key] = value
            else:
                original[key] = _merge_map(current, value, sub if sub is not None else _value_type(info))
        elif isinstance(current, list):
            meta = patch_meta(info, key)
            if _strategy(meta) == "merge" or is_delete_list:
                original[key] = _merge_slice(current, value, _slice_item_type(info, key), meta.merge_key, is_delete_list)
            else:
                original[key] = value
        else:
            kept, keep = _remove_directives(value)
            if keep:
                original[key] = kept
            else:
                del original[key]
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``applyRetainKeysDirective``: keys absent from ``$retainKeys`` are cleared; a patch
    that sets a key it does not retain is refused."""
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list):
        raise PatchError("invalid patch format of retainKeys")
    keep = {_hashable(item) for item in retained}
    for key, value in patch.items():
        if value is None or key.startswith(DELETE_FROM_PRIMITIVE.rstrip("/")) or key.startswith(SET_ELEMENT_ORDER.rstrip("/")):
            continue
        if key not in keep:
            raise PatchError("invalid patch format of retainKeys")
    for key in [key for key in original if key not in keep]:
        del original[key]


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def _merge_set_element_orders(original: dict[str, Any], patch: dict[str, Any], info: Any) -> None:
    """``mergePatchIntoOriginal``: each ``$setElementOrder/<list>`` with its list, merged,
    then ordered as the directive says (``normalizeElementOrder``)."""
    for directive_key in [key for key in patch if key.startswith(SET_ELEMENT_ORDER.rstrip("/"))]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise PatchError("invalid patch format of setElementOrder list")
        parts = directive_key.split("/", 1)
        if len(parts) <= 1 or parts[0] != SET_ELEMENT_ORDER.rstrip("/"):
            raise PatchError("invalid patch format of setElementOrder list")
        field = parts[1]
        found_original, found_patch = field in original, field in patch
        original_list = original.get(field) if found_original else None
        patch_list = patch.get(field) if found_patch else None
        if found_original and not isinstance(original_list, list):
            raise PatchError(f"expected a []interface {{}}, but received a {type(original_list).__name__}")
        if found_patch and not isinstance(patch_list, list):
            raise PatchError(f"expected a []interface {{}}, but received a {type(patch_list).__name__}")
        meta = patch_meta(info, field)
        strategy = _strategy(meta)
        _validate_patch_with_set_order_list(patch_list or [], order, meta.merge_key)
        if found_original and not found_patch:
            merged = original_list
        elif not found_original and found_patch:
            merged, keep = _remove_directives(patch_list)
            if not keep:
                continue
        elif found_original and found_patch:
            assert original_list is not None and patch_list is not None
            merged = _merge_slice(original_list, patch_list, _slice_item_type(info, field), meta.merge_key, False) if strategy == "merge" else patch_list
        else:
            continue
        assert merged is not None
        if meta.merge_key:
            patch_items, server_only = _partition_maps(merged, order, meta.merge_key)
        else:
            patch_items, server_only = _partition_primitives(merged, order)
        kind = _element_kind(original_list or [], patch_list or [])
        server_order = _aliased_server_order(original_list, patch_list, meta.merge_key) if found_original and found_patch and strategy == "merge" and kind == "map" else original_list or []
        original[field] = _normalize_element_order(patch_items, server_only, order, server_order, meta.merge_key, kind)
        patch.pop(field, None)


def _aliased_server_order(original_list: Any, patch_list: Any, merge_key: str) -> list[Any]:
    """The original list as ``mergePatchIntoOriginal`` sees it after the merge. Upstream's
    ``mergeSlice`` deletes (``append(original[:k], original[k+1:]...)``) and appends in
    place in the decoded slice's backing array, which ``originalFieldValue`` shares: its
    view of the list is left shifted by the deletions and tailed by the first appended
    elements (or stale ones). That view is the server order the elements are placed by, so
    it decides where a new element lands next to a deleted one. ``encoding/json`` grows a
    decoded array by appends: its capacity is the next power of two of its length."""
    length = len(original_list)
    capacity = 1 << (length - 1).bit_length() if length else 0
    array = [*original_list, *([None] * (capacity - length))]
    size = length
    plain = []
    for item in patch_list:
        if isinstance(item, dict) and item.get(DIRECTIVE) == "delete" and merge_key in item:
            while True:
                index = next((k for k in range(size) if isinstance(array[k], dict) and merge_key in array[k] and array[k][merge_key] == item[merge_key]), None)
                if index is None:
                    break
                array[index:size - 1] = array[index + 1:size]
                size -= 1
        elif isinstance(item, dict) and item.get(DIRECTIVE) == "replace":
            return array[:length]  # the merge then works on the patch's own list
        elif not (isinstance(item, dict) and DIRECTIVE in item):
            plain.append(item)
    for item in plain:
        if any(isinstance(array[k], dict) and array[k].get(merge_key) == item.get(merge_key) for k in range(size)):
            continue  # merged in place: same merge key
        if size >= capacity:
            break  # append reallocates: the shared array sees no more writes
        array[size] = item
        size += 1
    return array[:length]


def _validate_patch_with_set_order_list(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """``validatePatchWithSetOrderList``: the patch list's elements appear in the order the
    directive gives them."""
    if not order or not patch_list:
        return
    non_delete = [item for item in patch_list if not (isinstance(item, dict) and item.get(DIRECTIVE) == "delete")] if merge_key else patch_list
    patch_index = order_index = 0
    while patch_index < len(non_delete) and order_index < len(order):
        if isinstance(non_delete[patch_index], dict) and DIRECTIVE in non_delete[patch_index]:
            patch_index += 1
            continue
        if _merge_key_value_equal(non_delete[patch_index], order[order_index], merge_key):
            patch_index += 1
        order_index += 1
    if patch_index < len(non_delete) and order_index >= len(order):
        raise PatchError(f"The order in patch list:\n{_go(patch_list)}\n doesn't match {SET_ELEMENT_ORDER.rstrip('/')} list:\n{_go(order)}\n")


def _merge_key_value_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return left == right
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise PatchError(f"expected a map[string]interface {{}}, but received a {type(left).__name__}")
    if merge_key not in left:
        raise _no_merge_key(left, merge_key)
    if merge_key not in right:
        raise _no_merge_key(right, merge_key)
    return left[merge_key] == right[merge_key]


def _partition_primitives(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = {_hashable(item) for item in by}
    return [item for item in items if _hashable(item) in present], [item for item in items if _hashable(item) not in present]


def _partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    patch_items, server_only = [], []
    for item in items:
        if not isinstance(item, dict):
            raise PatchError(f"expected a map[string]interface {{}}, but received a {type(item).__name__}")
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        found = any(isinstance(entry, dict) and entry.get(merge_key) == item[merge_key] for entry in by)
        (patch_items if found else server_only).append(item)
    return patch_items, server_only


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    def key(item: Any) -> Any:
        if kind == "map":
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    wanted = key(value)
    for position, item in enumerate(items):
        if key(item) == wanted:
            return position
    return -1


def _normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeSliceOrder``: ``sort.SliceStable`` with upstream's less (an element the
    order does not name is "less" than anything), delete directives last. Go's SliceStable
    is an insertion sort for up to 20 elements; it is reproduced as such (for longer lists,
    whose orders are consistent in practice, the result is the same)."""
    to_delete: list[Any] = []
    if kind == "map":
        for item in [*to_sort, *order]:
            if isinstance(item, dict) and merge_key not in item:
                raise _no_merge_key(item, merge_key)
        to_delete = [item for item in to_sort if isinstance(item, dict) and item.get(DIRECTIVE) == "delete"]
        to_sort = [item for item in to_sort if not (isinstance(item, dict) and item.get(DIRECTIVE) == "delete")]

    def less(a: Any, b: Any) -> bool:
        ia = _index(order, a, merge_key, kind)
        if ia >= 0:
            ib = _index(order, b, merge_key, kind)
            if ib >= 0:
                return ia < ib
        return True

    items = list(to_sort)
    for i in range(1, len(items)):
        j = i
        while j > 0 and less(items[j], items[j - 1]):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1
    return items + to_delete


def _normalize_element_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any], server_order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeElementOrder``: the patch's elements in the patch's order, the server-only
    ones in the server's order, merged by their positions in the server's list."""
    left = _normalize_slice_order(server_only, server_order, merge_key, kind)
    right = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, ri = _index(server_order, left[i], merge_key, kind), _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _merge_slice(original: list[Any], patch: list[Any], item_info: Any, merge_key: str, is_delete_list: bool) -> list[Any]:
    """``mergeSlice``."""
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind != "map":
        if is_delete_list:
            drop = {_hashable(item) for item in patch}
            return [item for item in original if _hashable(item) not in drop]
        merged: list[Any] = []
        for item in [*original, *patch]:  # deduplicateScalars keeps the first, in order
            if item not in merged:
                merged.append(item)
    else:
        if not merge_key:
            raise PatchError("cannot merge lists without merge key")
        original, patch = _merge_slice_with_special_elements(original, patch, merge_key)
        merged = _merge_slice_without_special_elements(original, patch, merge_key, item_info)
    if merge_key:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    else:
        patch_items, server_only = _partition_primitives(merged, patch)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _merge_slice_with_special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """``mergeSliceWithSpecialElements``: ``$patch: delete`` elements delete by merge key,
    ``$patch: replace`` makes the list the patch's other elements."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict) or DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            original = [existing for existing in original if not (isinstance(existing, dict) and merge_key in existing and existing[merge_key] == item[merge_key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise PatchError(f"unknown patch type: {_go(directive)} in map: {_go(item)}")
    if replace:
        return plain, []
    return original, plain


def _merge_slice_without_special_elements(original: list[Any], patch: list[Any], merge_key: str, item_info: Any) -> list[Any]:
    """``mergeSliceWithoutSpecialElements``: each patch element merged into the original
    element with its merge key, or appended."""
    original = list(original)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        position = next((index for index, existing in enumerate(original) if isinstance(existing, dict) and merge_key in existing and existing[merge_key] == item[merge_key]), None)
        if position is not None:
            original[position] = _merge_map(original[position], item, item_info)
        else:
            original.append(item)
    return original

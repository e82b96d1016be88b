"""Patches the HTTPS front served, judged against an independent model of the patch
semantics: the object the store held after each PATCH is what the patch makes of the
object it held before.

The models (kept small and separate from :mod:`chaoskube.api.patch` and
:mod:`chaoskube.api.strategic`, which they check):

- **JSON merge patch**, RFC 7386 (https://www.rfc-editor.org/rfc/rfc7386): an object
  merges key by key, ``null`` deletes, anything else (lists included) replaces.
- **JSON patch**, RFC 6902 (https://www.rfc-editor.org/rfc/rfc6902): add, remove,
  replace, move, copy, test on JSON pointers (RFC 6901); a failed ``test`` refuses the
  whole patch. It applies to the object as Go encodes it (apiserver ``handlers/patch.go``,
  ``jsonPatcher``): a field without ``omitempty`` is there at its zero value (a CRD
  version's ``served: false``) though the store's JSON leaves it out, so before and after
  are judged with those fields filled in (:data:`chaoskube.api.fields.REQUIRED_FIELDS`).
- **Strategic merge patch** (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/;
  apimachinery ``util/strategicpatch/patch.go``; the ``patchMergeKey`` /
  ``patchStrategy`` tags of ``k8s.io/api``): a merge patch whose lists with a merge key
  merge element by element (:data:`MERGE_KEYS`), whose merged lists of primitives
  (``finalizers``) are unions, with the directives ``$patch: delete`` / ``replace`` (in
  maps and list elements) and ``$deleteFromPrimitiveList/<list>``; ``$setElementOrder``
  only orders (merged lists are compared by key, not order); a patch with ``$retainKeys``
  is not judged.

Input: the front's ``api-patch`` events (:mod:`chaoskube.apiserver.http.front`: client,
resource, key, ``patch_type``, the ``patch`` document as the server applied it, the
answered ``resource_version``, ``call`` time) and the store's history from the
``raft-apply`` events. The object after is the store's version at the answered
resourceVersion; before is the version just before it (or the same version when the patch
changed nothing: it was written before the call).

Compared on what the patch touches, not the whole object: the server defaults fields
(a container the patch adds gets its ``imagePullPolicy``), admission mutates, and the
strategy resets ``status`` and server-owned metadata (``resourceVersion``, ``generation``,
``managedFields``, ``uid``, ``creationTimestamp``), so those paths are skipped and every
value the model expects must be present in the object after (extra defaulted keys
allowed), every key the patch deletes absent, every list the same length (merged lists:
the same merge keys).

Answers False with the first patch whose result differs (evidence: the patch, the path,
what the model expected and what the store held), unknown when the front served no such
patch (nothing to judge), True otherwise with counts.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from chaoskube.api.fields import emit_required
from chaoskube.api.objects import KINDS
from chaoskube.checkers.replay import StoreHistory
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["MERGE_KEYS", "check_api_patch", "json_patch", "merge_patch", "strategic_patch"]

Event = dict[str, Any]

#: List fields that merge by key (the ``patchMergeKey`` tags of ``k8s.io/api/core/v1``,
#: ``apps/v1``, ``meta/v1``); ``ports`` is a container's (``containerPort``) or a
#: Service's (``port``), told apart by its elements.
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name", "volumes": "name",
    "volumeMounts": "mountPath", "volumeDevices": "devicePath", "imagePullSecrets": "name", "hostAliases": "ip",
    "ownerReferences": "uid", "conditions": "type", "resourceClaims": "name", "ports": "containerPort",
}
#: Lists of primitives with ``patchStrategy:"merge"``: a patch's values are added.
MERGED_PRIMITIVES = ("finalizers",)
#: Paths the server owns, skipped in the comparison.
SKIPPED = {("status",), ("metadata", "resourceVersion"), ("metadata", "generation"), ("metadata", "managedFields"),
           ("metadata", "uid"), ("metadata", "creationTimestamp"), ("metadata", "selfLink")}


class Unjudged(Exception):
    """A patch the model does not cover ($retainKeys)."""


class Refused(Exception):
    """The model refuses the patch (a failed JSON patch ``test``, a missing path)."""


# =========================================================================== the models
def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 §2 MergePatch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise Refused(f"bad pointer {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise Refused(f"no such path {'/'.join(tokens)}")
    return node, tokens[-1]


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    node, last = _parent(doc, tokens)
    if isinstance(node, dict) and last in node:
        return node[last]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        return node[int(last)]
    raise Refused(f"no such path {'/'.join(tokens)}")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    node, last = _parent(doc, tokens)
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list):
        if last == "-":
            node.append(value)
        elif last.isdigit() and int(last) <= len(node):
            node.insert(int(last), value)
        else:
            raise Refused(f"index {last} out of range")
    else:
        raise Refused("add into a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    node, last = _parent(doc, tokens)
    if isinstance(node, dict) and last in node:
        del node[last]
    elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
        del node[int(last)]
    else:
        raise Refused(f"no such path {'/'.join(tokens)}")
    return doc


def json_patch(target: Any, operations: list[dict[str, Any]]) -> Any:
    """RFC 6902 §4: the operations in order, on a copy; Refused when one fails."""
    doc = copy.deepcopy(target)
    for op in operations:
        kind, tokens = op.get("op"), _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens)
            doc = _add(_remove(doc, tokens), tokens, copy.deepcopy(op.get("value"))) if tokens else copy.deepcopy(op.get("value"))
        elif kind == "move":
            source = _pointer(op.get("from", ""))
            value = _get(doc, source)
            doc = _add(_remove(doc, source), tokens, value)
        elif kind == "copy":
            doc = _add(doc, tokens, copy.deepcopy(_get(doc, _pointer(op.get("from", "")))))
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise Refused(f"test failed at {op.get('path')}")
        else:
            raise Refused(f"unknown op {kind!r}")
    return doc


def _merge_key(field: str, elements: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if field == "ports" and not any(isinstance(item, dict) and "containerPort" in item for item in elements):
        return "port"  # a Service's ports (patchMergeKey "port")
    return key


def strategic_patch(target: Any, patch: Any) -> Any:
    """The strategic merge patch model (module docstring)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if "$retainKeys" in patch:
        raise Unjudged("$retainKeys")
    directive = patch.get("$patch")
    if directive == "delete":
        return {}
    if directive == "replace":
        return {key: copy.deepcopy(value) for key, value in patch.items() if key != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch" or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [item for item in result[field] if item not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _strategic_list(key, result.get(key), value)
        else:
            result[key] = strategic_patch(result.get(key), value)
    return result


def _strategic_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current = current if isinstance(current, list) else []
    if field in MERGED_PRIMITIVES:
        return [*current, *(item for item in patch if item not in current)]
    merge_key = _merge_key(field, [*current, *patch])
    if merge_key is None or not all(isinstance(item, dict) for item in patch):
        return copy.deepcopy(patch)  # an atomic list: replaced
    if any(item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(item) for item in patch if "$patch" not in item]
    result = copy.deepcopy(current)
    for item in patch:
        at = next((index for index, old in enumerate(result) if isinstance(old, dict) and old.get(merge_key) == item.get(merge_key)), None)
        if item.get("$patch") == "delete":
            result = [old for old in result if not (isinstance(old, dict) and old.get(merge_key) == item.get(merge_key))]
        elif at is None:
            result.append(strategic_patch({}, item))
        else:
            result[at] = strategic_patch(result[at], item)
    return result


# =========================================================================== the comparison
def _contained(expected: Any, actual: Any, path: tuple[str, ...]) -> tuple[tuple[str, ...], Any, Any] | None:
    """Where ``expected`` is not within ``actual`` (extra keys in actual allowed)."""
    if path in SKIPPED:
        return None
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return path, expected, actual
        for key, value in expected.items():
            if key not in actual:
                if (*path, key) not in SKIPPED:
                    return (*path, key), value, "<absent>"
                continue
            found = _contained(value, actual[key], (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return path, expected, actual
        merge_key = _merge_key(path[-1], expected) if path else None
        if merge_key is not None and all(isinstance(item, dict) for item in expected + actual):
            by_key = {item.get(merge_key): item for item in actual}
            for item in expected:
                if item.get(merge_key) not in by_key:
                    return path, expected, actual
                found = _contained(item, by_key[item.get(merge_key)], (*path, str(item.get(merge_key))))
                if found is not None:
                    return found
            return None
        if path and path[-1] in MERGED_PRIMITIVES:
            return None if sorted(map(str, expected)) == sorted(map(str, actual)) else (path, expected, actual)
        for index, (item, other) in enumerate(zip(expected, actual, strict=True)):
            found = _contained(item, other, (*path, str(index)))
            if found is not None:
                return found
        return None
    return None if expected == actual else (path, expected, actual)


def _touched(patch: Any, patch_type: str) -> list[tuple[str, ...]]:
    """The top paths a patch writes: each JSON patch op's parent, a merge or strategic
    patch's leaves (a list or scalar) and deletions."""
    if patch_type == "json":
        paths = []
        for op in patch:
            for pointer in (op.get("path"), op.get("from")):
                if pointer:
                    tokens = tuple(_pointer(pointer))
                    paths.append(tokens[:-1] if tokens and (tokens[-1].isdigit() or tokens[-1] == "-") else tokens)
        return paths
    paths = []

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict) and "$patch" not in node:
            for key, value in node.items():
                if key.startswith("$"):
                    field = key.split("/", 1)[-1]
                    paths.append((*path, field))
                else:
                    walk(value, (*path, key))
        else:
            paths.append(path)

    walk(patch, ())
    return paths


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    node = doc
    for token in path:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _ABSENT
    return node


_ABSENT = object()


def _skipped(path: tuple[str, ...]) -> bool:
    return any(path[: len(skip)] == skip for skip in SKIPPED)


def judge_patch(before: Any, patch: Any, patch_type: str, after: Any) -> tuple[tuple[str, ...], Any, Any] | None:
    """Where ``after`` is not what ``patch`` makes of ``before`` (None: it is)."""
    model = {"merge": merge_patch, "json": json_patch, "strategic": strategic_patch}[patch_type]
    expected = model(before, patch)
    for path in _touched(patch, patch_type):
        if _skipped(path):
            continue
        want, got = _at(expected, path), _at(after, path)
        if want is _ABSENT or got is _ABSENT:
            if (want is _ABSENT) != (got is _ABSENT):
                return path, "<absent>" if want is _ABSENT else want, "<absent>" if got is _ABSENT else got
            continue
        found = _contained(want, got, path)
        if found is not None:
            return found
        if isinstance(want, dict) and isinstance(got, dict):
            removed = set(_at(before, path) if isinstance(_at(before, path), dict) else ()) - set(want)
            lingering = sorted(key for key in removed & set(got) if not _skipped((*path, key)))
            if lingering:
                return (*path, lingering[0]), "<absent>", got[lingering[0]]
    return None


# =========================================================================== the checker
_TYPES_BY_RESOURCE = {info.resource: info.type for info in KINDS.values()}


def _as_go_encodes(resource: str, document: Any) -> Any:
    """A copy of the stored ``document`` as Go encodes it (module docstring: JSON patch);
    a custom resource's as it is (unstructured: nothing but what was stored)."""
    cls = _TYPES_BY_RESOURCE.get(resource)
    return emit_required(copy.deepcopy(document), cls) if cls is not None and isinstance(document, dict) else document


def check_api_patch(events: Sequence[Event]) -> Verdict:
    """Judge every merge, JSON and strategic merge patch the HTTPS front served (module
    docstring)."""
    patches = [event for event in events if event.get("type") == "api-patch"]
    counts = {"patches": len(patches), "judged": 0, "unjudged": 0}
    if not patches:
        return nothing_to_judge("the HTTPS front served no merge, JSON or strategic merge patch: nothing to judge", (), counts)
    store = StoreHistory(events)
    for event in patches:
        resource, key, revision = event["resource"], event["key"], int(event["resource_version"])
        after_version = store.live_at(resource, key, revision)
        if after_version is None:
            counts["unjudged"] += 1
            continue
        if after_version.t < event["call"]:
            before_version = after_version  # nothing written: the patch changed nothing
        else:
            before_version = store.live_at(resource, key, after_version.revision - 1)
        if before_version is None:
            counts["unjudged"] += 1
            continue
        before, after = store.object(resource, key, before_version), store.object(resource, key, after_version)
        if event["patch_type"] == "json":
            before, after = _as_go_encodes(resource, before), _as_go_encodes(resource, after)
        try:
            found = judge_patch(before, event["patch"], event["patch_type"], after)
        except Unjudged:
            counts["unjudged"] += 1
            continue
        except Refused as refused:
            return Verdict(False, f"{event['client']}: a {event['patch_type']} patch of {resource}/{key} was applied, but its semantics refuse it ({refused})", (event,), counts)
        counts["judged"] += 1
        if found is not None:
            path, want, got = found
            return Verdict(
                False,
                f"{event['client']}: a {event['patch_type']} patch of {resource}/{key} left {'.'.join(path) or '<root>'} = {got!r}; the patch semantics say {want!r}",
                (event, {"type": "store", "object": f"{resource}/{key}", "before": before_version.revision, "after": after_version.revision}), counts,
            )
    return Verdict(True, f"{counts['judged']} patch(es) left what their semantics say ({counts['unjudged']} not judged)", (), counts)

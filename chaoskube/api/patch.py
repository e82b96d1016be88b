"""Patches on plain JSON values: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

``kubectl patch --type merge`` sends a merge patch; a mutating admission webhook answers with
a JSON patch (``AdmissionReview.response.patch``, ``patchType: JSONPatch``). Both apply to the
object's JSON form (:func:`chaoskube.api.to_dict`), and the result is decoded again with
:func:`chaoskube.api.from_dict`.

Contract:

- Every function is pure: it never mutates its arguments and shares nothing mutable with them
  (the result is a fresh value; values taken from a patch are copied).
- JSON values are ``dict`` (string keys), ``list``, ``str``, ``int``, ``float``, ``bool`` and
  ``None``. Equality is JSON's: ``True`` is not ``1`` and ``"1"`` is not ``1``; ``1`` equals
  ``1.0`` (one number).
- :func:`apply_patch` is atomic: either every operation applies, or :class:`PatchError` is
  raised (with a one-line message naming the operation's index, op and path) and nothing is
  returned. As the RFC says, members of an operation other than the ones its op uses are
  ignored (appendix A.11).
- :func:`create_patch` and :func:`create_merge_patch` are the inverses used for admission
  results and tests: ``apply_patch(a, create_patch(a, b)) == b`` for all JSON values, and
  ``merge_patch(a, create_merge_patch(a, b)) == b`` when ``b`` holds no ``null`` inside an
  object (a merge patch cannot set a member to null: RFC 7386 section 1).

Non-guarantees: :func:`create_patch` is correct, not minimal (it does not look for moves in
arrays, as ``jsonpatch.make_patch`` tries to).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "PatchError",
    "apply_patch",
    "create_merge_patch",
    "create_patch",
    "escape_pointer_token",
    "json_equal",
    "merge_patch",
    "parse_pointer",
]

#: Bound on the number of operations of one JSON patch (the API server bounds request bodies
#: to 3 MiB; a patch with more operations than this is refused, not applied slowly).
MAX_OPERATIONS = 10_000


class PatchError(ValueError):
    """A patch that cannot be applied, or is not a patch. ``str()`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


# =========================================================================== JSON values


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values (RFC 6902 section 4.6): booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    return a == b


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


# =========================================================================== RFC 7386


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 ``MergePatch(Target, Patch)``: the patched value; arguments untouched.

    An object patch merges member by member, ``null`` removes a member; any other patch
    replaces the target whole (arrays are replaced, never merged).
    """
    if not isinstance(patch, dict):
        return _copy(patch)
    result = _copy(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


def create_merge_patch(source: Any, target: Any) -> Any:
    """A merge patch that turns ``source`` into ``target`` (see the module contract)."""
    if not (isinstance(source, dict) and isinstance(target, dict)):
        return _copy(target)
    patch: dict[str, Any] = {}
    for name in source:
        if name not in target:
            patch[name] = None
    for name, value in target.items():
        if name not in source:
            patch[name] = _copy(value)
        elif not json_equal(source[name], value):
            patch[name] = create_merge_patch(source[name], value)
    return patch


# =========================================================================== JSON pointer (RFC 6901)


def escape_pointer_token(token: str) -> str:
    """One reference token of a JSON pointer: "~" as "~0", "/" as "~1"."""
    return token.replace("~", "~0").replace("/", "~1")


def parse_pointer(pointer: str) -> list[str]:
    """The reference tokens of an RFC 6901 pointer ("" is the whole document)."""
    if not isinstance(pointer, str):
        raise PatchError(f"a JSON pointer must be a string, not {_short(pointer)}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {_short(pointer)} must be empty or start with '/'")
    tokens = pointer[1:].split("/")
    for token in tokens:
        # "~" must be followed by 0 or 1 (RFC 6901 section 3).
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise PatchError(f"JSON pointer {_short(pointer)} has an invalid escape (only ~0 and ~1)")
    # ~1 first, then ~0, so "~01" becomes "~1" and not "/" (RFC 6901 section 4; RFC 6902 A.14).
    return [token.replace("~1", "/").replace("~0", "~") for token in tokens]


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _index(token: str, length: int, *, allow_end: bool, pointer: str) -> int:
    """An array index token: digits without leading zeros, or "-" (the end) where allowed."""
    if token == "-":
        if allow_end:
            return length
        raise PatchError(f"path {_short(pointer)}: '-' names no existing element")
    if not token.isdigit() or not token.isascii() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"path {_short(pointer)}: {_short(token)} is not an array index")
    index = int(token)
    limit = length if allow_end else length - 1
    if index > limit:
        raise PatchError(f"path {_short(pointer)}: index {index} is out of bounds (array of {length})")
    return index


def _resolve(document: Any, tokens: list[str], pointer: str) -> Any:
    """The value at ``tokens``; PatchError if it does not exist."""
    value = document
    for depth, token in enumerate(tokens):
        if isinstance(value, dict):
            if token not in value:
                raise PatchError(f"path {_short(pointer)} does not exist")
            value = value[token]
        elif isinstance(value, list):
            value = value[_index(token, len(value), allow_end=False, pointer=pointer)]
        else:
            where = "/" + "/".join(escape_pointer_token(t) for t in tokens[:depth])
            raise PatchError(f"path {_short(pointer)} does not exist: {_short(where)} is not an object or array")
    return value


# =========================================================================== RFC 6902


def _add(document: Any, tokens: list[str], value: Any, pointer: str) -> Any:
    if not tokens:
        return value
    parent = _resolve(document, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), allow_end=True, pointer=pointer), value)
    else:
        raise PatchError(f"path {_short(pointer)}: the parent is not an object or array")
    return document


def _remove(document: Any, tokens: list[str], pointer: str) -> tuple[Any, Any]:
    """(document, removed value)."""
    if not tokens:
        raise PatchError("cannot remove the whole document (path \"\")")
    parent = _resolve(document, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {_short(pointer)} does not exist")
        return document, parent.pop(last)
    if isinstance(parent, list):
        return document, parent.pop(_index(last, len(parent), allow_end=False, pointer=pointer))
    raise PatchError(f"path {_short(pointer)} does not exist: the parent is not an object or array")


def _member(operation: dict[str, Any], name: str) -> Any:
    if name not in operation:
        raise PatchError(f"missing member {name!r}")
    return operation[name]


def _apply_one(document: Any, operation: Any) -> Any:
    if not isinstance(operation, dict):
        raise PatchError(f"an operation must be an object, not {_short(operation)}")
    op = _member(operation, "op")
    path = _member(operation, "path")
    tokens = parse_pointer(path)
    if op == "add":
        return _add(document, tokens, _copy(_member(operation, "value")), path)
    if op == "remove":
        return _remove(document, tokens, path)[0]
    if op == "replace":
        value = _copy(_member(operation, "value"))
        _resolve(document, tokens, path)  # the target must exist (section 4.3)
        if not tokens:
            return value
        document, _ = _remove(document, tokens, path)
        return _add(document, tokens, value, path)
    if op in ("move", "copy"):
        source = _member(operation, "from")
        source_tokens = parse_pointer(source)
        if op == "move":
            if source_tokens == tokens:
                _resolve(document, tokens, path)
                return document
            if tokens[: len(source_tokens)] == source_tokens:
                raise PatchError(f"cannot move {_short(source)} into its own child {_short(path)}")
            document, value = _remove(document, source_tokens, source)
        else:
            value = _copy(_resolve(document, source_tokens, source))
        return _add(document, tokens, value, path)
    if op == "test":
        expected = _member(operation, "value")
        actual = _resolve(document, tokens, path)
        if not json_equal(actual, expected):
            raise PatchError(f"test failed: value at {_short(path)} is {_short(actual)}, not {_short(expected)}")
        return document
    raise PatchError(f"unknown op {_short(op)} (add, remove, replace, move, copy, test)")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise PatchError(f"duplicate member {key!r} in a JSON object")
        out[key] = value
    return out


def apply_patch(document: Any, patch: list[dict[str, Any]] | str | bytes) -> Any:
    """RFC 6902: ``document`` with the operations of ``patch`` applied in order.

    ``patch`` is a list of operation objects, or its JSON text; in text, an object with a
    member named twice (appendix A.13: two "op") is an error, as the RFC's SHOULD asks.
    """
    if isinstance(patch, (str, bytes)):
        try:
            patch = json.loads(patch, object_pairs_hook=_reject_duplicates)
        except PatchError:
            raise
        except ValueError as error:
            raise PatchError(f"not valid JSON: {error}") from None
    if not isinstance(patch, list):
        raise PatchError(f"a JSON patch must be an array of operations, not {type(patch).__name__}")
    if len(patch) > MAX_OPERATIONS:
        raise PatchError(f"a JSON patch may hold at most {MAX_OPERATIONS} operations, not {len(patch)}")
    result = _copy(document)
    for number, operation in enumerate(patch):
        try:
            result = _apply_one(result, operation)
        except PatchError as error:
            op = operation.get("op") if isinstance(operation, dict) else None
            path = operation.get("path") if isinstance(operation, dict) else None
            label = f"operation {number}"
            if isinstance(op, str) and isinstance(path, str):
                label += f" ({op[:20]} {_short(path)})"
            raise PatchError(f"{label}: {error}") from None
    return result


def create_patch(source: Any, target: Any) -> list[dict[str, Any]]:
    """A JSON patch that turns ``source`` into ``target`` (see the module contract)."""
    operations: list[dict[str, Any]] = []
    _diff(source, target, "", operations)
    return operations


def _diff(source: Any, target: Any, path: str, out: list[dict[str, Any]]) -> None:
    if json_equal(source, target):
        return
    if isinstance(source, dict) and isinstance(target, dict):
        for key in source:
            if key not in target:
                out.append({"op": "remove", "path": f"{path}/{escape_pointer_token(key)}"})
        for key, value in target.items():
            child = f"{path}/{escape_pointer_token(key)}"
            if key in source:
                _diff(source[key], value, child, out)
            else:
                out.append({"op": "add", "path": child, "value": _copy(value)})
        return
    if isinstance(source, list) and isinstance(target, list):
        for index in range(min(len(source), len(target))):
            _diff(source[index], target[index], f"{path}/{index}", out)
        for index in reversed(range(len(target), len(source))):
            out.append({"op": "remove", "path": f"{path}/{index}"})
        for index in range(len(source), len(target)):
            out.append({"op": "add", "path": f"{path}/{index}", "value": _copy(target[index])})
        return
    out.append({"op": "replace", "path": path, "value": _copy(target)})

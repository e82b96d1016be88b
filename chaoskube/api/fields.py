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

__all__ = ["FIELD_VALIDATIONS", "prune_unknown", "unknown_field_message"]

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

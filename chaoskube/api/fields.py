"""Field errors as ``k8s.io/apimachinery/pkg/util/validation/field`` words them.

``field.Error.Error()`` is ``<path>: <type>: <value>: <detail>``; the value is printed with
Go's ``%#v`` (strings quoted with double quotes, numbers bare). Validation everywhere
(the API server's, CustomResourceDefinitions') builds its causes with these, so messages
read exactly as ``kubectl`` prints them (``spec.replicas: Invalid value: -3: must be greater
than or equal to 0``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["duplicate", "forbidden", "go_value", "invalid", "required", "too_long", "too_many", "unsupported"]


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

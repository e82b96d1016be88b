"""Kubernetes' protobuf encoding (``application/vnd.kubernetes.protobuf``) of the API's JSON
forms, from the message classes generated from upstream's ``generated.proto`` files
(``k8spb/``, made by ``tools/k8s_protobuf.py``; Kubernetes 1.32, k8s.io/api v0.32.9).

The wire format (``k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go``): the
four bytes ``k8s\\x00``, then a ``runtime.Unknown`` whose ``typeMeta`` names the apiVersion
and kind, ``raw`` holds the object's own message, ``contentEncoding`` and ``contentType`` are
empty. A watch stream (``pkg/endpoints/handlers/watch.go``; ``LengthDelimitedFramer``) is a
sequence of frames, each a 4-byte big-endian length then a ``metav1.WatchEvent`` (type, and
``object``: a ``runtime.RawExtension`` whose ``raw`` is the enveloped object), the event
itself written without the envelope (the ``RawSerializer``).

Between the JSON forms and the messages there is one converter, driven by the message
descriptors (the same walk for every kind). Field names: go-to-protobuf names a field by its
JSON name, except where that is no identifier (``$ref``, ``$schema``,
``x-kubernetes-*``: JSONSchemaProps). The types whose JSON is not their message's shape
(each has a custom ``MarshalJSON`` upstream):

- ``metav1.Time`` / ``MicroTime`` ``{seconds, nanos}``: RFC 3339 strings (whole seconds;
  microseconds); the zero time is JSON ``null`` (left out);
- ``metav1.Duration`` ``{duration}`` (nanoseconds): a Go duration string (``"1h2m3s"``);
- ``resource.Quantity`` ``{string}``: the string; ``intstr.IntOrString`` ``{type, intVal,
  strVal}``: a number or a string;
- ``runtime.RawExtension``, ``apiextensions.JSON``, ``metav1.FieldsV1`` ``{raw}``: the JSON
  value the bytes hold (a RawExtension holding an enveloped protobuf object is decoded);
- ``JSONSchemaPropsOrArray`` / ``OrBool`` / ``OrStringArray``: a schema, or an array of
  schemas / a boolean / an array of strings;
- a message whose one field is ``repeated ... items`` (``ExtraValue``, ``Verbs``: Go named
  slices): the array;
- ``bytes`` fields (``Secret.data``, ``ConfigMap.binaryData``): base64 strings.

What protobuf cannot carry: the difference between an empty and a missing list or map (Go's
nil and empty slices; JSON ``[]`` comes back missing), and the TypeMeta of nested objects
(list items carry none in either encoding).
"""

from __future__ import annotations

import base64
import datetime as _dt
import re
import struct
from functools import cache
from typing import Any

import orjson

__all__ = [
    "MAGIC",
    "PROTOBUF",
    "ProtoError",
    "decode",
    "encode",
    "encode_watch_frame",
    "from_message",
    "message_class",
    "supports",
    "to_message",
]

PROTOBUF = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

_MODULES = (
    "apimachinery_resource", "apimachinery_intstr", "apimachinery_runtime", "apimachinery_runtime_schema", "apimachinery_meta_v1",
    "api_core_v1", "api_apps_v1", "api_batch_v1", "api_autoscaling_v1", "api_autoscaling_v2", "api_coordination_v1", "api_discovery_v1",
    "api_networking_v1", "api_policy_v1", "api_rbac_v1", "api_scheduling_v1", "api_storage_v1", "api_admissionregistration_v1",
    "api_events_v1", "api_authorization_v1", "api_authentication_v1", "apiextensions_apiextensions_v1",
)


class ProtoError(ValueError):
    """A body that is not a protobuf object of a known kind, or a JSON form no message of
    the kind can hold (``path``: where)."""


@cache
def _pool() -> Any:
    """The descriptor pool with every generated module loaded (lazily: JSON-only runs never
    pay for it)."""
    import importlib

    from google.protobuf import descriptor_pool

    for name in _MODULES:
        importlib.import_module(f"chaoskube.apiserver.http.k8spb.{name}_pb2")
    return descriptor_pool.Default()


def _packages(api_version: str) -> tuple[str, ...]:
    """The proto packages that may define a kind of ``api_version`` (metav1's kinds —
    Status, WatchEvent, DeleteOptions, PartialObjectMetadata — are in every group)."""
    group, _, version = api_version.rpartition("/")
    if group == "apiextensions.k8s.io":
        own = f"k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.{version}"
    elif group == "meta.k8s.io":
        own = f"k8s.io.apimachinery.pkg.apis.meta.{version}"
    else:
        own = f"k8s.io.api.{group.split('.')[0] if group else 'core'}.{version}"
    return (own, _META) if own != _META else (own,)


@cache
def message_class(api_version: str, kind: str) -> Any:
    """The generated message class of ``kind`` in ``api_version``, or None (no protobuf
    form: custom resources, or a kind with no schema here)."""
    from google.protobuf import message_factory

    pool = _pool()
    for package in _packages(api_version):
        try:
            descriptor = pool.FindMessageTypeByName(f"{package}.{kind}")
        except KeyError:
            continue
        return message_factory.GetMessageClass(descriptor)
    return None


def supports(api_version: str, kind: str) -> bool:
    return message_class(api_version, kind) is not None


# ----------------------------------------------------------------------------- the walk
_SPECIAL_TIME = {f"{_META}.Time", f"{_META}.MicroTime", f"{_META}.Timestamp"}
_RAW = {"k8s.io.apimachinery.pkg.runtime.RawExtension", "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON", f"{_META}.FieldsV1"}
_QUANTITY = {"k8s.io.apimachinery.pkg.api.resource.Quantity", "k8s.io.apimachinery.pkg.api.resource.QuantityValue"}
_INTSTR = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_DURATION = f"{_META}.Duration"
_SCHEMA = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
_OR_ARRAY, _OR_BOOL, _OR_STRINGS = (f"{_SCHEMA}OrArray", f"{_SCHEMA}OrBool", f"{_SCHEMA}OrStringArray")


# Per field, how it is filled and read (computed once per descriptor): a scalar, a
# message, repeated scalars, repeated messages, a map to scalars, a map to messages.
_SCALAR, _MESSAGE, _SCALARS, _MESSAGES, _MAP_SCALARS, _MAP_MESSAGES = range(6)
# Scalar kinds, by what JSON holds them.
_STRING, _BOOL, _FLOAT, _BYTES, _INT = range(5)


def _scalar_kind(field: Any) -> int:
    from google.protobuf.descriptor import FieldDescriptor as F

    return {F.TYPE_STRING: _STRING, F.TYPE_BOOL: _BOOL, F.TYPE_DOUBLE: _FLOAT, F.TYPE_FLOAT: _FLOAT, F.TYPE_BYTES: _BYTES}.get(field.type, _INT)


def _mode(field: Any) -> tuple[int, int]:
    """(how the field is held, the scalar kind of it or of its map values)."""
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        value = message.fields_by_name["value"]
        return (_MAP_MESSAGES, 0) if value.message_type is not None else (_MAP_SCALARS, _scalar_kind(value))
    if field.is_repeated:
        return (_MESSAGES, 0) if message is not None else (_SCALARS, _scalar_kind(field))
    return (_MESSAGE, 0) if message is not None else (_SCALAR, _scalar_kind(field))


@cache
def _plan(descriptor: Any) -> dict[str, tuple[tuple[str, ...], str, int, int]]:
    """JSON name -> (the embedding fields' names, the field's name, its mode, its scalar
    kind). A field of an embedded Go struct (``json:",inline"``) is reached through the
    embedding fields. Names from the Go types' struct tags (``k8spb/json_names.py``)
    where they differ from the proto names."""
    from chaoskube.apiserver.http.k8spb.json_names import JSON_NAMES

    renamed = JSON_NAMES.get(descriptor.full_name, {})
    plan: dict[str, tuple[tuple[str, ...], str, int, int]] = {}
    for field in descriptor.fields:
        name = renamed.get(field.name, field.name)
        if name == "" and field.message_type is not None:
            for inner, (chain, leaf, mode, scalar) in _plan(field.message_type).items():
                plan.setdefault(inner, ((field.name, *chain), leaf, mode, scalar))
        else:
            plan[name] = ((), field.name, *_mode(field))
    return plan


@cache
def _reading(descriptor: Any) -> dict[str, tuple[str, int, int]]:
    """Proto field name -> (JSON name, "" for an embedded struct; mode; scalar kind)."""
    from chaoskube.apiserver.http.k8spb.json_names import JSON_NAMES

    renamed = JSON_NAMES.get(descriptor.full_name, {})
    return {field.name: (renamed.get(field.name, field.name), *_mode(field)) for field in descriptor.fields}


@cache
def _items_wrapper(descriptor: Any) -> bool:
    """A Go named slice (``ExtraValue``, ``Verbs``): one repeated field ``items``."""
    fields = descriptor.fields
    return len(fields) == 1 and fields[0].name == "items" and fields[0].is_repeated


@cache
def _special(descriptor: Any) -> bool:
    full = descriptor.full_name
    return full in _SPECIAL_TIME or full in _RAW or full in _QUANTITY or full in (_INTSTR, _DURATION, _OR_ARRAY, _OR_BOOL, _OR_STRINGS) or _items_wrapper(descriptor)


def to_message(data: Any, cls: Any) -> Any:
    """The message of class ``cls`` holding the JSON form ``data`` (top-level ``apiVersion``
    and ``kind`` go to the envelope, not here). Raises ProtoError."""
    message = cls()
    _fill(message, data, "")
    return message


def _fill(message: Any, data: Any, path: str) -> None:
    descriptor = message.DESCRIPTOR
    if _special(descriptor):
        _fill_special(message, data, path)
        return
    if not isinstance(data, dict):
        raise ProtoError(f"{path or '.'}: expected an object for {descriptor.name}, got {type(data).__name__}")
    plan = _plan(descriptor)
    for key, value in data.items():
        if value is None:
            continue
        entry = plan.get(key)
        if entry is None:
            if key in ("apiVersion", "kind"):
                continue  # TypeMeta: in the envelope (or nowhere, for nested objects), as in Go
            raise ProtoError(f"{path}.{key}: {descriptor.full_name} has no such field" if path else f"{key}: {descriptor.full_name} has no such field")
        chain, name, mode, scalar = entry
        target = message
        for embedded in chain:
            target = getattr(target, embedded)
            target.SetInParent()
        if mode == _SCALAR:
            setattr(target, name, _scalar_in(scalar, value, path, key))
        elif mode == _MESSAGE:
            child = getattr(target, name)
            child.SetInParent()
            _fill(child, value, f"{path}.{key}" if path else key)
        else:
            _fill_many(getattr(target, name), mode, scalar, value, f"{path}.{key}" if path else key)


def _fill_many(target: Any, mode: int, scalar: int, value: Any, where: str) -> None:
    if mode == _MESSAGES or mode == _SCALARS:
        if not isinstance(value, list):
            raise ProtoError(f"{where}: expected an array, got {type(value).__name__}")
        if mode == _MESSAGES:
            for index, item in enumerate(value):
                _fill(target.add(), item, f"{where}[{index}]")
        else:
            target.extend([_scalar_in(scalar, item, where, index) for index, item in enumerate(value)])
        return
    if not isinstance(value, dict):
        raise ProtoError(f"{where}: expected an object (a map), got {type(value).__name__}")
    for key, item in value.items():
        if mode == _MAP_MESSAGES:
            child = target[key]
            if item is not None:
                _fill(child, item, f"{where}.{key}")
        elif item is not None:
            target[key] = _scalar_in(scalar, item, where, key)


def _scalar_in(kind: int, value: Any, path: str, key: Any) -> Any:
    if kind == _STRING:
        if value.__class__ is str:
            return value
        expected = "a string"
    elif kind == _INT:
        if value.__class__ is int:
            return value
        if value.__class__ is float and value.is_integer():
            return int(value)
        expected = "an integer"
    elif kind == _BOOL:
        if value.__class__ is bool:
            return value
        expected = "a boolean"
    elif kind == _FLOAT:
        if value.__class__ in (int, float):
            return float(value)
        expected = "a number"
    else:
        if value.__class__ is str:
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                raise ProtoError(f"{_where(path, key)}: not valid base64") from None
        expected = "a base64 string"
    raise ProtoError(f"{_where(path, key)}: expected {expected}, got {type(value).__name__}")


def _where(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _fill_special(message: Any, data: Any, path: str) -> None:
    full = message.DESCRIPTOR.full_name
    message.SetInParent()
    if full in _SPECIAL_TIME:
        if not isinstance(data, str):
            raise ProtoError(f"{path}: expected an RFC 3339 time, got {type(data).__name__}")
        try:
            moment = _dt.datetime.fromisoformat(data.replace("Z", "+00:00"))
        except ValueError:
            raise ProtoError(f"{path}: not an RFC 3339 time: {data!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=_dt.timezone.utc)
        delta = moment - _EPOCH
        message.seconds = delta.days * 86400 + delta.seconds
        message.nanos = delta.microseconds * 1000
    elif full in _RAW:
        raw = orjson.dumps(data)
        if full.endswith("FieldsV1"):
            message.Raw = raw
        else:
            message.raw = raw
    elif full in _QUANTITY:
        if isinstance(data, bool) or not isinstance(data, (str, int, float)):
            raise ProtoError(f"{path}: expected a quantity, got {type(data).__name__}")
        message.string = data if isinstance(data, str) else (str(int(data)) if float(data).is_integer() else repr(data))
    elif full == _INTSTR:
        if isinstance(data, str):
            message.type, message.strVal = 1, data
        elif isinstance(data, int) and not isinstance(data, bool):
            message.type, message.intVal = 0, data
        else:
            raise ProtoError(f"{path}: expected an integer or a string, got {type(data).__name__}")
    elif full == _DURATION:
        message.duration = _parse_duration(data, path)
    elif full == _OR_ARRAY:
        if isinstance(data, list):
            for index, item in enumerate(data):
                _fill(message.jSONSchemas.add(), item, f"{path}[{index}]")
        else:
            _fill(message.schema, data, path)
    elif full == _OR_BOOL:
        if isinstance(data, bool):
            message.allows = data
        else:
            message.allows = True
            _fill(message.schema, data, path)
    elif full == _OR_STRINGS:
        if isinstance(data, list):
            message.property.extend([_scalar_in(_STRING, item, path, index) for index, item in enumerate(data)])
        else:
            _fill(message.schema, data, path)
    else:  # a named slice
        field = message.DESCRIPTOR.fields[0]
        if not isinstance(data, list):
            raise ProtoError(f"{path}: expected an array, got {type(data).__name__}")
        if field.message_type is not None:
            for index, item in enumerate(data):
                _fill(message.items.add(), item, f"{path}[{index}]")
        else:
            message.items.extend([_scalar_in(_scalar_kind(field), item, path, index) for index, item in enumerate(data)])


def from_message(message: Any) -> Any:
    """The JSON form of ``message`` (the fields it carries)."""
    descriptor = message.DESCRIPTOR
    if _special(descriptor):
        return _special_out(message)
    out: dict[str, Any] = {}
    reading = _reading(descriptor)
    for field, value in message.ListFields():
        name, mode, scalar = reading[field.name]
        if mode == _SCALAR:
            out[name] = value if scalar in (_STRING, _INT, _BOOL) else _scalar_out(scalar, value)
        elif mode == _MESSAGE:
            converted = from_message(value)
            if name == "":
                out.update(converted)  # an embedded struct: its fields are the parent's
            elif converted is not None:
                out[name] = converted
        elif mode == _MESSAGES:
            out[name] = [from_message(item) for item in value]
        elif mode == _SCALARS:
            out[name] = list(value) if scalar in (_STRING, _INT, _BOOL) else [_scalar_out(scalar, item) for item in value]
        elif mode == _MAP_MESSAGES:
            out[name] = {key: from_message(item) for key, item in value.items()}
        else:
            out[name] = dict(value) if scalar in (_STRING, _INT, _BOOL) else {key: _scalar_out(scalar, item) for key, item in value.items()}
    return out


def _scalar_out(kind: int, value: Any) -> Any:
    if kind == _BYTES:
        return base64.b64encode(value).decode()
    if kind == _FLOAT and value.is_integer() and abs(value) < 2**53:
        return int(value)  # Go's encoding/json writes float64 1 as 1
    return value


def _special_out(message: Any) -> Any:
    full = message.DESCRIPTOR.full_name
    if full in _SPECIAL_TIME:
        if not message.seconds and not message.nanos:
            return None  # the zero time: null
        moment = _EPOCH + _dt.timedelta(seconds=message.seconds, microseconds=message.nanos // 1000)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if full.endswith("MicroTime") else "%Y-%m-%dT%H:%M:%SZ")
    if full in _RAW:
        raw = message.Raw if full.endswith("FieldsV1") else message.raw
        if not raw:
            return None
        if raw.startswith(MAGIC):
            return decode(raw)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ProtoError(f"{message.DESCRIPTOR.name}: raw bytes are neither JSON nor an enveloped object") from None
    if full in _QUANTITY:
        return message.string
    if full == _INTSTR:
        return message.strVal if message.type == 1 else message.intVal
    if full == _DURATION:
        return _format_duration(message.duration)
    if full == _OR_ARRAY:
        return [from_message(item) for item in message.jSONSchemas] if message.jSONSchemas else from_message(message.schema)
    if full == _OR_BOOL:
        return from_message(message.schema) if message.HasField("schema") else bool(message.allows)
    if full == _OR_STRINGS:
        return list(message.property) if message.property else from_message(message.schema)
    field = message.DESCRIPTOR.fields[0]
    return [from_message(item) for item in message.items] if field.message_type is not None else [_scalar_out(_scalar_kind(field), item) for item in message.items]


_UNITS = (("h", 3600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("us", 10**3), ("µs", 10**3), ("ns", 1))


def _parse_duration(text: Any, path: str) -> int:
    """Go's ``time.ParseDuration`` (as ``metav1.Duration``'s JSON): ``"1h2m3.5s"``."""
    if not isinstance(text, str):
        raise ProtoError(f"{path}: expected a duration string, got {type(text).__name__}")
    sign, rest = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if rest == "0":
        return 0
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|us|µs|ns|m|s)", rest)
    if not parts or "".join(number + unit for number, unit in parts) != rest:
        raise ProtoError(f"{path}: not a duration: {text!r}")
    scale = dict(_UNITS)
    return sign * round(sum(float(number) * scale[unit] for number, unit in parts))


def _format_duration(nanos: int) -> str:
    """Go's ``time.Duration.String``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if nanos >= size:
                return sign + _decimal(nanos, size) + unit
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if hours or minutes else "") + _decimal(rest, 10**9) + "s"
    return sign + text


def _decimal(value: int, size: int) -> str:
    whole, fraction = divmod(value, size)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(size)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


# ----------------------------------------------------------------------------- envelope
def encode(data: dict[str, Any], *, api_version: str = "", kind: str = "") -> bytes:
    """``k8s\\x00`` + ``runtime.Unknown`` of the JSON form ``data`` (its ``apiVersion`` and
    ``kind`` unless given). Raises ProtoError for a kind with no protobuf form."""
    api_version = api_version or data.get("apiVersion") or ""
    kind = kind or data.get("kind") or ""
    cls = message_class(api_version, kind)
    if cls is None:
        raise ProtoError(f"{api_version} {kind} has no protobuf form")
    envelope = _unknown_class()()
    envelope.typeMeta.apiVersion = api_version
    envelope.typeMeta.kind = kind
    envelope.raw = to_message(data, cls).SerializeToString(deterministic=True)  # map keys sorted, as Go writes them
    envelope.contentEncoding = ""  # Go writes the empty strings too
    envelope.contentType = ""
    return MAGIC + envelope.SerializeToString()


@cache
def _unknown_class() -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(_pool().FindMessageTypeByName("k8s.io.apimachinery.pkg.runtime.Unknown"))


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form (``apiVersion`` and ``kind`` from the envelope) of an enveloped
    object. Raises ProtoError with upstream's words."""
    from google.protobuf.message import DecodeError

    if not body:
        raise ProtoError("empty data")
    if not body.startswith(MAGIC):
        raise ProtoError(f"provided data does not appear to be a protobuf message, expected prefix {list(MAGIC)}")
    if len(body) == len(MAGIC):
        raise ProtoError("empty body")
    envelope = _unknown_class()()
    try:
        envelope.ParseFromString(body[len(MAGIC):])
    except DecodeError as error:
        raise ProtoError(f"the envelope is not a runtime.Unknown: {error}") from None
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if not kind:
        raise ProtoError("Object 'Kind' is missing in the protobuf envelope")
    if not api_version:
        raise ProtoError("Object 'apiVersion' is missing in the protobuf envelope")
    cls = message_class(api_version, kind)
    if cls is None:
        raise ProtoError(f"no kind \"{kind}\" is registered for version \"{api_version}\"")
    message = cls()
    try:
        message.ParseFromString(envelope.raw)
    except DecodeError as error:
        raise ProtoError(f"{kind} in version {api_version!r}: {error}") from None
    return {"apiVersion": api_version, "kind": kind, **from_message(message)}


def encode_watch_frame(event_type: str, enveloped: bytes) -> bytes:
    """One frame of a protobuf watch stream: the length, then a ``metav1.WatchEvent``
    without the envelope whose object holds the enveloped object."""
    event = message_class("meta.k8s.io/v1", "WatchEvent")()
    event.type = event_type
    event.object.raw = enveloped
    payload = event.SerializeToString()
    return struct.pack(">I", len(payload)) + payload

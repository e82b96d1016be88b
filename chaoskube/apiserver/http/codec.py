"""Between HTTP and the wire protocol: request bodies and query parameters in, objects,
lists, watch events and ``Status`` out, as kube-apiserver encodes them (JSON).

Pure functions; :mod:`chaoskube.apiserver.http.front` does the I/O.

- Objects are the kinds' JSON forms (:func:`chaoskube.api.manifests.to_dict`); list items
  carry no ``apiVersion``/``kind`` (Go's typed lists omit their items' TypeMeta).
- A failure is a ``metav1.Status`` with ``details`` (name, group, kind as the resource,
  causes, retryAfterSeconds) as ``apimachinery/pkg/api/errors`` fills them.
- Content negotiation (``handlers/negotiation/negotiate.go``): the first acceptable entry
  of ``Accept`` wins; ``as=Table`` (``g=meta.k8s.io``, ``v=v1`` or ``v1beta1``) gives a
  Table, ``as=PartialObjectMetadata[List]`` metadata only; protobuf is not served (a client
  that accepts only protobuf gets 406 NotAcceptable; kubectl and client-go also accept JSON).
- Bodies: JSON, or YAML (``application/yaml``) as the server also decodes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from chaoskube.api.fields import FIELD_VALIDATIONS, emit_required, prune_unknown, unknown_field_message
from chaoskube.api.manifests import ManifestError, from_dict, to_dict
from chaoskube.api.objects import KindInfo, Object
from chaoskube.api.protocol import Binding, DeleteOptions, Eviction, Status, StatusError, WatchEvent, bad_request

__all__ = [
    "MediaType",
    "decode_body",
    "decode_object",
    "delete_options",
    "dumps",
    "encode_list",
    "encode_object",
    "encode_status",
    "encode_watch_event",
    "negotiate",
    "parse_accept",
]

#: Markers the simulated client adds to a Status (chaoskube.client): not the server's.
_CLIENT_MARKERS = ("ambiguous", "connection-refused")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


@dataclass(frozen=True)
class MediaType:
    type: str  # "application/json"
    params: dict[str, str]

    @property
    def as_(self) -> str:
        return self.params.get("as", "")


def parse_accept(header: str) -> list[MediaType]:
    """``Accept`` entries in order (quality values are not used by Kubernetes clients)."""
    out = []
    for entry in header.split(","):
        parts = [part.strip() for part in entry.split(";") if part.strip()]
        if not parts:
            continue
        params = {}
        for part in parts[1:]:
            key, _, value = part.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        out.append(MediaType(parts[0].lower(), params))
    return out or [MediaType("application/json", {})]


_JSON_TYPES = ("application/json", "application/*", "*/*", "application/yaml")


def negotiate(header: str, *, table: bool = True) -> MediaType | None:
    """The entry of ``Accept`` to answer with, or None (406). ``table``: Tables and partial
    metadata may be served (resource reads)."""
    for media in parse_accept(header):
        if media.type not in _JSON_TYPES:
            continue
        if not media.as_:
            return media
        group, version = media.params.get("g", ""), media.params.get("v", "")
        if table and media.as_ in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList") and group == "meta.k8s.io" and version in ("v1", "v1beta1"):
            return media
    return None


# ----------------------------------------------------------------------------- encoding
def encode_object(obj: Object) -> dict[str, Any]:
    """The object's JSON as Go writes it: its fields, and the required ones even when empty."""
    return emit_required(to_dict(obj), type(obj))


def encode_list(info: KindInfo, items: list[dict[str, Any]], resource_version: str, *, continue_token: str = "", remaining: int | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    stripped = [{key: value for key, value in item.items() if key not in ("apiVersion", "kind")} for item in items]
    return {"kind": f"{info.kind}List", "apiVersion": info.api_version, "metadata": metadata, "items": stripped}


def _cause(text: str) -> dict[str, str]:
    """A cause "spec.replicas: Invalid value: -1: must be ..." as ``metav1.StatusCause``."""
    field, sep, message = text.partition(": ")
    if sep and " " not in field:
        reason = "FieldValueRequired" if message.startswith("Required value") else "FieldValueInvalid" if message.startswith("Invalid value") else "FieldValueForbidden" if message.startswith("Forbidden") else "FieldValueNotSupported" if message.startswith("Unsupported value") else ""
        cause = {"message": message, "field": field}
        if reason:
            cause["reason"] = reason
        return cause
    return {"message": text}


def encode_status(status: Status, *, name: str = "", group: str = "", resource: str = "") -> dict[str, Any]:
    """``metav1.Status`` of a failure."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    causes = [_cause(cause) for cause in status.causes if cause not in _CLIENT_MARKERS]
    if causes:
        details["causes"] = causes
    if status.retry_after_seconds:
        details["retryAfterSeconds"] = status.retry_after_seconds
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": status.message, "reason": status.reason}
    if details:
        out["details"] = details
    out["code"] = status.code
    return out


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    out["code"] = code
    return out


def encode_watch_event(info: KindInfo, event: WatchEvent) -> dict[str, Any]:
    """``metav1.WatchEvent``: BOOKMARK carries an empty object of the kind with only its
    resourceVersion; ERROR carries a Status."""
    if event.type == "ERROR":
        assert event.status is not None
        return {"type": "ERROR", "object": encode_status(event.status)}
    if event.type == "BOOKMARK" or event.object is None:
        return {"type": "BOOKMARK", "object": {"kind": info.kind, "apiVersion": info.api_version, "metadata": {"resourceVersion": event.resource_version}}}
    return {"type": event.type, "object": encode_object(event.object)}


# ----------------------------------------------------------------------------- decoding
def decode_body(body: bytes, content_type: str) -> Any:
    """The body as JSON values (JSON or YAML); raises StatusError 400."""
    media = content_type.split(";")[0].strip().lower()
    if "protobuf" in media or "cbor" in media:
        raise StatusError(Status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (not {media}: the chaoskube front serves JSON only)"))
    try:
        if media in ("application/yaml", "application/apply-patch+yaml"):
            return yaml.safe_load(body.decode("utf-8"))
        return orjson.loads(body) if body else None
    except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as error:
        raise StatusError(bad_request(f"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({str(error).splitlines()[0]})")) from None


def decode_object(data: Any, info: KindInfo, field_validation: str) -> tuple[Object, tuple[str, ...]]:
    """The typed object of a create or update body, and the warnings of dropped unknown
    fields. ``field_validation``: Strict, Warn (the default) or Ignore. Raises StatusError:
    400 for a body that is not an object of the kind (or has unknown fields, Strict),
    422 for a missing or malformed name."""
    if field_validation not in FIELD_VALIDATIONS:
        raise StatusError(bad_request(f"fieldValidation must be one of {', '.join(FIELD_VALIDATIONS)}, not {field_validation!r}"))
    handled = f"{info.kind} in version \"{info.api_version.rpartition('/')[2]}\" cannot be handled as a {info.kind}"
    if not isinstance(data, dict):
        raise StatusError(bad_request(f"{handled}: the body is not a JSON object"))
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if kind not in (None, "", info.kind):
        raise StatusError(bad_request(f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"))
    if api_version not in (None, "", info.api_version):
        raise StatusError(bad_request(f"the API version in the data ({api_version}) does not match the expected API version ({info.api_version})"))
    data = {**data, "apiVersion": info.api_version, "kind": info.kind}
    pruned, unknown = prune_unknown(data, info.type)
    if unknown and field_validation == "Strict":
        raise StatusError(bad_request(f"{handled}: {unknown_field_message(unknown)}"))
    warnings = tuple(f'unknown field "{path}"' for path in unknown) if field_validation == "Warn" else ()
    try:
        obj = from_dict(pruned, f"{info.resource}")
    except ManifestError as error:
        field = error.field or ""
        if field.startswith("metadata.name") or field.startswith("metadata.generateName") or field.startswith("metadata.namespace"):
            name = ((pruned.get("metadata") or {}).get("name")) or ""
            kind_name = f"{info.kind}.{info.api_version.rpartition('/')[0]}" if "/" in info.api_version else info.kind
            raise StatusError(Status(422, "Invalid", f'{kind_name} "{name}" is invalid: {field}: {error.reason}', causes=(f"{field}: {error.reason}",))) from None
        raise StatusError(bad_request(f"{handled}: {field + ': ' if field else ''}{error.reason}")) from None
    return obj, warnings


def delete_options(query: dict[str, str], body: Any) -> tuple[DeleteOptions | None, bool]:
    """``metav1.DeleteOptions`` from the body and the query (the query wins, as
    ``handlers/delete.go`` decodes it after the body); and dryRun."""
    grace: int | None = None
    uid = resource_version = ""
    dry_run = False
    if isinstance(body, dict):
        if body.get("gracePeriodSeconds") is not None:
            grace = int(body["gracePeriodSeconds"])
        preconditions = body.get("preconditions") or {}
        uid = preconditions.get("uid") or ""
        resource_version = preconditions.get("resourceVersion") or ""
        dry_run = "All" in (body.get("dryRun") or [])
    if "gracePeriodSeconds" in query:
        try:
            grace = int(query["gracePeriodSeconds"])
        except ValueError:
            raise StatusError(bad_request(f"gracePeriodSeconds: invalid value {query['gracePeriodSeconds']!r}")) from None
    if query.get("dryRun") == "All":
        dry_run = True
    if grace is None and not uid and not resource_version:
        return None, dry_run
    return DeleteOptions(grace_period_seconds=grace, preconditions_uid=uid, preconditions_resource_version=resource_version), dry_run


def decode_eviction(data: Any, namespace: str, name: str) -> Eviction:
    if not isinstance(data, dict) or data.get("kind") not in (None, "Eviction"):
        raise StatusError(bad_request("the body of pods/eviction must be a policy/v1 Eviction"))
    meta = data.get("metadata") or {}
    options, _ = delete_options({}, data.get("deleteOptions"))
    return Eviction(name=meta.get("name") or name, namespace=meta.get("namespace") or namespace, delete_options=options)


def decode_binding(data: Any, namespace: str, name: str) -> Binding:
    if not isinstance(data, dict) or data.get("kind") not in (None, "Binding"):
        raise StatusError(bad_request("the body of pods/binding must be a v1 Binding"))
    meta = data.get("metadata") or {}
    target = data.get("target") or {}
    if not target.get("name"):
        raise StatusError(Status(422, "Invalid", f'Binding "{name}" is invalid: target.name: Required value', causes=("target.name: Required value",)))
    return Binding(name=meta.get("name") or name, namespace=meta.get("namespace") or namespace, target_node=target["name"])

"""Between HTTP and the wire protocol: request bodies and query parameters in, objects,
lists, watch events and ``Status`` out, as kube-apiserver encodes them (JSON, protobuf).

Pure functions; :mod:`chaoskube.apiserver.http.front` does the I/O.

- Objects are the kinds' JSON forms (:func:`chaoskube.api.manifests.to_dict`); list items
  carry no ``apiVersion``/``kind`` (Go's typed lists omit their items' TypeMeta).
- A failure is a ``metav1.Status`` with ``details`` (name, group, kind as the resource,
  causes, retryAfterSeconds) as ``apimachinery/pkg/api/errors`` fills them.
- Content negotiation (``handlers/negotiation/negotiate.go``): the most preferred
  acceptable entry of ``Accept`` wins (q-values, then concrete before wildcard types);
  ``as=Table`` (``g=meta.k8s.io``, ``v=v1`` or ``v1beta1``) gives a Table (JSON only),
  ``as=PartialObjectMetadata[List]`` metadata only; ``application/vnd.kubernetes.protobuf``
  (:mod:`~chaoskube.apiserver.http.kubeproto`) for every built-in kind, not for custom
  ones (their CRDs have no protobuf schema: JSON is chosen from the rest of ``Accept``,
  and an ``Accept`` of protobuf alone is 406).
- Bodies: JSON, YAML (``application/yaml``) or protobuf, as the server decodes them; any
  other type is 415.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from chaoskube.api.fields import FIELD_VALIDATIONS, emit_required, prune_unknown, unknown_field_message
from chaoskube.api.manifests import ManifestError, from_dict, to_dict
from chaoskube.api.objects import CustomObject, KindInfo, Object
from chaoskube.api.protocol import Binding, DeleteOptions, Eviction, Status, StatusError, WatchEvent, bad_request
from chaoskube.apiserver.http import kubeproto

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
    "render",
]

#: Markers the simulated client adds to a Status (chaoskube.client): not the server's.
_CLIENT_MARKERS = ("ambiguous", "connection-refused")


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


@dataclass(frozen=True)
class MediaType:
    type: str  # "application/json"
    params: dict[str, str]
    q: float = 1.0

    @property
    def as_(self) -> str:
        return self.params.get("as", "")

    @property
    def protobuf(self) -> bool:
        return self.type == kubeproto.PROTOBUF


def parse_accept(header: str) -> list[MediaType]:
    """``Accept`` entries by preference (JSON if none)."""
    return _clauses(header) or [MediaType("application/json", {})]


def _clauses(header: str) -> list[MediaType]:
    """``Accept`` entries by preference, as ``goautoneg.ParseAccept`` (which kube-apiserver's
    negotiation uses) orders them: by quality value, then concrete types before ``*``
    wildcards; entries otherwise keep their order (Go sorts these short lists by insertion).
    An entry that is no media range (``application``) is left out."""
    out = []
    for entry in header.split(","):
        parts = [part.strip() for part in entry.split(";")]
        media = parts[0].lower()
        if not media:
            continue
        if "/" not in media:
            if media != "*":
                continue
            media = "*/*"
        params = {}
        q = 1.0
        for part in parts[1:]:
            key, sep, value = part.partition("=")
            if not sep:
                continue
            if key.strip() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
            else:
                params[key.strip().lower()] = value.strip().strip('"')
        out.append(MediaType(media, params, q))
    # goautoneg's accept_slice.Less, applied as Go's insertion sort applies it
    def less(a: MediaType, b: MediaType) -> bool:
        if a.q > b.q:
            return True
        a_type, _, a_sub = a.type.partition("/")
        b_type, _, b_sub = b.type.partition("/")
        return (a_type != "*" and b_type == "*") or (a_sub != "*" and b_sub == "*")

    for i in range(1, len(out)):
        j = i
        while j > 0 and less(out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return out


#: What the API server serves a built-in kind in, in its order (``*/*`` is the first):
#: ``k8s.io/apiserver/pkg/server/genericapiserver``'s codec factory: JSON, YAML, protobuf.
#: YAML is answered as JSON here (a JSON document is YAML).
_SERVED = ("application/json", "application/yaml", kubeproto.PROTOBUF)
_TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")


def negotiate(header: str, *, table: bool = True, protobuf: bool = True, stream: bool = False, served: tuple[str, ...] = _SERVED) -> MediaType | None:
    """The media type to answer with (``type`` is what is served: JSON or protobuf), or
    None (406), as ``handlers/negotiation/negotiate.go`` ``NegotiateMediaTypeOptions``
    chooses it. ``table``: Tables and partial metadata may be served (resource reads);
    ``protobuf``: the kind has a protobuf form (custom resources have none: the CRD handler
    leaves protobuf out of its ``StandardSerializers``, so a plain object is not served in
    it, while PartialObjectMetadata may be; ``rest.go`` ``AllowsMediaTypeTransform``);
    ``stream``: a watch (YAML has no stream serializer). ``served``: the server's types,
    in order (upstream's negotiation tests vary them)."""
    if not header.strip() and served:
        return MediaType(served[0], {})
    for clause in _clauses(header):
        kind, _, sub = clause.type.partition("/")
        for served_type in served:
            served_kind = served_type.partition("/")[0]
            if not (clause.type == served_type or (kind == served_kind and sub == "*") or clause.type == "*/*"):
                continue
            if stream and served_type == "application/yaml":
                continue
            if clause.params.get("stream") not in (None, "", "watch") or (clause.params.get("stream") and served_type == "application/yaml"):
                continue
            if clause.as_ or clause.params.get("g") or clause.params.get("v"):
                group, version = clause.params.get("g", ""), clause.params.get("v", "")
                if not table or group != "meta.k8s.io" or version not in ("v1", "v1beta1") or clause.as_ not in _TRANSFORMS:
                    continue
                if clause.as_ == "Table" and served_type == kubeproto.PROTOBUF:
                    continue  # Tables are JSON and YAML only
            elif served_type == kubeproto.PROTOBUF and not protobuf:
                continue
            return MediaType("application/json" if served_type == "application/yaml" else served_type, clause.params, clause.q)
    return None


def render(payload: dict[str, Any], media: MediaType | None) -> tuple[bytes, str]:
    """The bytes and Content-Type of a JSON form answered as ``media`` (JSON if None)."""
    if media is not None and media.protobuf:
        return kubeproto.encode(payload), kubeproto.PROTOBUF
    return dumps(payload), "application/json"


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
    if issubclass(info.type, CustomObject):
        stripped = items  # unstructured lists keep their items' apiVersion and kind
    else:
        stripped = [{key: value for key, value in item.items() if key not in ("apiVersion", "kind")} for item in items]
    return {"kind": f"{info.kind}List", "apiVersion": info.api_version, "metadata": metadata, "items": stripped}


def _cause(text: str) -> dict[str, str]:
    """A cause "spec.replicas: Invalid value: -1: must be ..." as ``metav1.StatusCause``."""
    field, sep, message = text.partition(": ")
    if sep and " " not in field:
        reason = "FieldManagerConflict" if message.startswith("conflict with ") else "FieldValueRequired" if message.startswith("Required value") else "FieldValueInvalid" if message.startswith("Invalid value") else "FieldValueForbidden" if message.startswith("Forbidden") else "FieldValueNotSupported" if message.startswith("Unsupported value") else ""
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
#: Request bodies the server decodes (``NegotiateInputSerializer``), and the patch types.
_BODY_TYPES = ("application/json", "application/yaml", kubeproto.PROTOBUF)
_PATCH_BODY_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml")


def decode_body(body: bytes, content_type: str, kind: KindInfo | None = None) -> Any:
    """The body as JSON values (JSON, YAML, or a protobuf object's JSON form); raises
    StatusError: 415 for a media type the server does not decode, 400 for a body that is
    not what its type says. ``kind``: the endpoint's kind (a custom kind decodes no
    protobuf: 400 as upstream's protobuf serializer refuses an Unstructured)."""
    media = content_type.split(";")[0].strip().lower() or "application/json"
    if media not in _BODY_TYPES and media not in _PATCH_BODY_TYPES:
        raise StatusError(Status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - accepted media types include: {', '.join(_BODY_TYPES)}"))
    if media == kubeproto.PROTOBUF:
        handled = f"{kind.kind} in version \"{kind.api_version.rpartition('/')[2]}\" cannot be handled as a {kind.kind}" if kind is not None else "the object provided is unrecognized"
        if kind is not None and issubclass(kind.type, CustomObject):
            # apiextensions-apiserver lists protobuf but decodes into Unstructured, which
            # protobuf cannot fill (serializer/protobuf: errNotMarshalable; rest.go
            # transformDecodeError: 400).
            raise StatusError(bad_request(f"{handled}: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be decoded from a protobuf message"))
        try:
            return kubeproto.decode(body)
        except kubeproto.ProtoError as error:
            raise StatusError(bad_request(f"{handled}: {error}")) from None
    try:
        if media in ("application/yaml", "application/apply-patch+yaml"):
            return yaml.safe_load(body.decode("utf-8"))
        return orjson.loads(body) if body else None
    except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as error:
        raise StatusError(bad_request(f"the body of the request was in an unknown format - accepted media types include: {', '.join(_BODY_TYPES)} ({str(error).splitlines()[0]})")) from None


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
    if issubclass(info.type, CustomObject):
        # A custom object has no Go type: the API server prunes it against its CRD's
        # schema (and warns of what it pruned).
        try:
            return from_dict(data, info.resource, custom={(info.api_version, info.kind): info.type}), ()
        except ManifestError as error:
            raise StatusError(bad_request(f"{handled}: {(error.field + ': ') if error.field else ''}{error.reason}")) from None
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

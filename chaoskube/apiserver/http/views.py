"""Kinds served at a second group/version as a view of a stored kind, converted by the front
on the way in and out, as kube-apiserver serves one internal type at several versions.

``events.k8s.io/v1`` Event is the core/v1 Event (both are stored under
``/registry/events``: ``pkg/registry/events/rest/storage_events.go`` uses the core event
storage). The conversion renames fields (``pkg/apis/events/v1/conversion.go``):

=====================  ===========================
events.k8s.io/v1       core/v1
=====================  ===========================
regarding              involvedObject
note                   message
reportingController    reportingComponent
deprecatedSource       source
deprecatedFirstTimestamp  firstTimestamp
deprecatedLastTimestamp   lastTimestamp
deprecatedCount        count
=====================  ===========================

and its field selectors are ``AddFieldLabelConversionsForEvent``'s
(:data:`chaoskube.api.selectors.EVENTS_V1_FIELDS`): ``regarding.name`` selects on
``involvedObject.name``, ``reportingController`` on ``reportingComponent``.
"""

from __future__ import annotations

from typing import Any

from chaoskube.api.objects import KINDS, CustomObject, Event, KindInfo
from chaoskube.api.protocol import Status, StatusError
from chaoskube.api.selectors import EVENTS_V1_FIELDS

__all__ = ["EVENTS_V1", "VIEWS", "field_selector_in", "is_view", "object_in", "object_out", "patch_in", "stored_kind"]

#: events.k8s.io/v1 Event: a view of the stored core/v1 Event.
EVENTS_V1 = KindInfo(kind="Event", api_version="events.k8s.io/v1", resource="events", namespaced=True, name_rule="subdomain", type=Event)

#: Every view, in the order discovery lists them.
VIEWS: tuple[KindInfo, ...] = (EVENTS_V1,)

_EVENTS_V1_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_CORE_TO_EVENTS_V1 = {core: view for view, core in _EVENTS_V1_TO_CORE.items()}


def is_view(kind: KindInfo | None) -> bool:
    return kind is not None and any(kind == view for view in VIEWS)


def stored_kind(kind: KindInfo) -> KindInfo:
    """The kind a view's objects are stored as (``kind`` itself when it is no view)."""
    return KINDS[kind.kind] if is_view(kind) else kind


def object_in(kind: KindInfo, document: Any) -> Any:
    """A request body of the view ``kind`` as the stored kind's JSON."""
    if not is_view(kind) or not isinstance(document, dict):
        return document
    out = {_EVENTS_V1_TO_CORE.get(key, key): value for key, value in document.items() if key not in _CORE_TO_EVENTS_V1}
    if document.get("apiVersion") == kind.api_version:
        out["apiVersion"] = kind.type.API_VERSION
    return out


def object_out(kind: KindInfo, document: Any) -> Any:
    """The stored kind's JSON as the view ``kind`` answers it; a custom object stored at
    its CRD's storage version as the version ``kind`` names (conversion strategy None: "the
    apiVersion is changed, nothing else",
    https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/#specify-multiple-versions)."""
    if isinstance(document, dict) and issubclass(kind.type, CustomObject) and document.get("kind") == kind.kind and document.get("apiVersion") not in (None, kind.api_version):
        return {**document, "apiVersion": kind.api_version}
    if not is_view(kind) or not isinstance(document, dict):
        return document
    out = {_CORE_TO_EVENTS_V1.get(key, key): value for key, value in document.items()}
    if "apiVersion" in out:
        out["apiVersion"] = kind.api_version
    return out


def patch_in(kind: KindInfo, patch: Any) -> Any:
    """A merge or JSON patch written against the view, against the stored kind."""
    if not is_view(kind):
        return patch
    if isinstance(patch, dict):
        return object_in(kind, patch)
    if isinstance(patch, list):
        converted = []
        for op in patch:
            if isinstance(op, dict):
                op = dict(op)
                for field in ("path", "from"):
                    if isinstance(op.get(field), str):
                        head, slash, rest = op[field].lstrip("/").partition("/")
                        op[field] = "/" + _EVENTS_V1_TO_CORE.get(head, head) + slash + rest
            converted.append(op)
        return converted
    return patch


def field_selector_in(kind: KindInfo, text: str) -> str:
    """A field selector of the view in the stored kind's field names; an unknown field is
    400 with upstream's message."""
    if not is_view(kind) or not text:
        return text
    terms = []
    for term in text.split(","):
        for operator in ("!=", "==", "="):
            field, found, value = term.partition(operator)
            if found:
                break
        else:
            return text  # malformed: the server's parser says why
        if field not in EVENTS_V1_FIELDS:
            raise StatusError(Status(400, "BadRequest", f"field label not supported: {field}"))
        terms.append(f"{EVENTS_V1_FIELDS[field]}{operator}{value}")
    return ",".join(terms)

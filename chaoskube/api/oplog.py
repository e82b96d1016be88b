"""The journal's shape of an API request, shared by every API client: the simulated one
(:mod:`chaoskube.client.client`) and the HTTPS front acting for outside programs
(:mod:`chaoskube.apiserver.http.front`). The checkers (``api-linearizability``,
``graceful-termination``, ``garbage-collection``) read these fields the same way whoever
sent the request; the contract is the client module's docstring, "Journal".

Pure functions of a :class:`~chaoskube.api.protocol.Request` and its
:class:`~chaoskube.api.protocol.Response`: nothing here journals by itself."""

from __future__ import annotations

from typing import Any

import msgspec

from chaoskube.api.objects import Object
from chaoskube.api.protocol import Request, Response


def object_key(obj: Object) -> str:
    """``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


def op_fields(client: str, request: Request) -> dict[str, Any]:
    """What every ``api-op`` event of ``request`` carries: who, the verb and the object."""
    name = request.name
    if not name and request.body is not None and hasattr(request.body, "metadata"):
        name = request.body.metadata.name
    return {"client": client, "verb": request.verb, "resource": request.resource, "subresource": request.subresource, "namespace": request.namespace, "name": name}


def preconditions(request: Request) -> dict[str, Any]:
    """The preconditions (and deletion options) a mutating request carries, for its
    ``api-op`` invoke: only the ones it has."""
    found: dict[str, Any] = {}
    body = request.body
    if request.verb == "update" and isinstance(body, msgspec.Struct) and hasattr(body, "metadata"):
        if body.metadata.resource_version:
            found["precondition_rv"] = body.metadata.resource_version
        if body.metadata.uid:
            found["precondition_uid"] = body.metadata.uid
    elif request.verb == "patch":
        demanded = ""
        if request.patch_type in ("merge", "strategic", "apply") and isinstance(body, dict):
            demanded = (body.get("metadata") or {}).get("resourceVersion") or ""
        elif isinstance(body, list):
            demanded = next((op.get("value") for op in body if isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" and op.get("op") in ("add", "replace", "test")), "") or ""
        if demanded:
            found["precondition_rv"] = str(demanded)
    elif request.verb == "delete" and request.delete_options is not None:
        options = request.delete_options
        if options.preconditions_resource_version:
            found["precondition_rv"] = options.preconditions_resource_version
        if options.preconditions_uid:
            found["precondition_uid"] = options.preconditions_uid
        if options.grace_period_seconds is not None:
            found["grace_s"] = options.grace_period_seconds
        propagation = getattr(options, "propagation_policy", "")
        if propagation:
            found["propagation"] = propagation
    return found


def end_fields(response: Response) -> dict[str, Any]:
    """What an ``api-op`` ``ok`` / ``fail`` / ``info`` adds from the answer: the object's
    ``resource_version`` and ``uid`` on ``ok`` (and its ``name``, for the caller to use
    when the request had none), the Status ``message`` of a 404 or 409."""
    fields: dict[str, Any] = {"code": response.code, "reason": response.status.reason if response.status is not None else ""}
    if response.ok and response.object is not None:
        fields["resource_version"] = response.object.metadata.resource_version
        fields["uid"] = response.object.metadata.uid
        fields["answered_name"] = response.object.metadata.name
    elif not response.ok and response.code in (404, 409) and response.status is not None:
        fields["message"] = response.status.message
    return fields


def read_fields(client: str, request: Request, response: Response | None, started: float, phase: str, server: str = "") -> dict[str, Any]:
    """One ``api-read`` event for a get or list (the client module's docstring, "Journal");
    ``response`` None: no answer came (code 0, from ``server``)."""
    fields: dict[str, Any] = {
        "client": client, "verb": request.verb, "resource": request.resource, "namespace": request.namespace,
        "name": request.name, "call": round(started, 9), "phase": phase, "code": response.code if response is not None else 0,
        "server": response.server if response is not None else server,
        "request_rv": request.resource_version, "rv_match": request.resource_version_match,
    }
    if request.label_selector:
        fields["label_selector"] = request.label_selector
    if request.field_selector:
        fields["field_selector"] = request.field_selector
    if response is not None and response.ok:
        if request.verb == "get" and response.object is not None:
            fields["resource_version"] = response.object.metadata.resource_version
            fields["uid"] = response.object.metadata.uid
        elif request.verb == "list":
            fields["resource_version"] = response.resource_version
            fields["items"] = [[object_key(item), item.metadata.resource_version] for item in response.items]
    return fields

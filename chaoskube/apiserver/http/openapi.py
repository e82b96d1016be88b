"""OpenAPI documents, generated from the kinds registry and their msgspec types.

What clients use them for:

- ``kubectl apply`` (``pkg/cmd/apply/patcher.go``) computes its strategic merge patch
  from the OpenAPI v3 document of the kind's group-version when the kind's PATCH
  operation accepts ``application/strategic-merge-patch+json``: it finds the schema with
  ``x-kubernetes-group-version-kind`` and reads ``x-kubernetes-patch-strategy`` /
  ``x-kubernetes-patch-merge-key`` on its fields (apimachinery ``strategicpatch/meta.go``
  ``PatchMetaFromOpenAPIV3``). The same table the server applies patches with
  (:data:`chaoskube.api.strategic.PATCH_META`) is published here, so both sides agree.
- ``kubectl create/apply --validate=strict`` (the default) asks the server to validate
  fields when the kind's PATCH operation lists the ``fieldValidation`` query parameter
  (cli-runtime ``resource/query_param_verifier_v3.go``); it does here, so kubectl sends
  ``?fieldValidation=Strict`` instead of validating against a schema itself.
- ``kubectl explain`` reads the schemas.

Documents: ``GET /openapi/v3`` is the root (``{"paths": {"api/v1": {"serverRelativeURL":
"/openapi/v3/api/v1?hash=..."}}}``, client-go ``openapi/client.go``); ``/openapi/v3/<gv path>``
is one group-version's OpenAPI 3.0 document (paths and ``components.schemas``);
``/openapi/v2`` is the Swagger 2.0 document in JSON (client-go asks for it in protobuf,
which is not served: kubectl then falls back to its built-in types).

Schemas come from ``msgspec.json.schema_components`` of the kinds' types, so a kind added
to the registry is described without more work. Sub-objects the kinds keep verbatim are
``type: object`` with ``x-kubernetes-preserve-unknown-fields: true`` (their insides are
not described).

Custom resources (``custom``: the established CRDs of the answering replica) are
described by their CRD's ``openAPIV3Schema`` (with ``apiVersion``, ``kind`` and
``metadata`` added, and ``x-kubernetes-group-version-kind``), as apiextensions-apiserver's
``builder.BuildOpenAPIV3`` does; their PATCH accepts JSON patch and merge patch only (no
strategic merge patch for custom resources), so ``kubectl apply`` sends a merge patch.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import msgspec
import orjson

from chaoskube.api.objects import KINDS, REVIEWS, KindInfo
from chaoskube.api.strategic import PATCH_META
from chaoskube.apiserver.http.routes import CustomKind, group_version, group_versions, subresources_of, url_resource

__all__ = ["v2_document", "v3_document", "v3_root"]

_REF = "#/components/schemas/{name}"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(info: KindInfo) -> dict[str, str]:
    group, version = group_version(info)
    return {"group": group, "version": version, "kind": info.kind}


def _annotate(name: str, schema: dict[str, Any]) -> None:
    """Patch extensions on the fields of struct ``name``; raw objects marked as such."""
    for field, prop in (schema.get("properties") or {}).items():
        meta = PATCH_META.get((name, field))
        if meta is not None and meta.strategies:
            if "$ref" in prop:
                ref = prop.pop("$ref")
                prop["allOf"] = [{"$ref": ref}]
            prop["x-kubernetes-patch-strategy"] = ",".join(meta.strategies)
            if meta.merge_key:
                prop["x-kubernetes-patch-merge-key"] = meta.merge_key
        _mark_raw(prop)


def _mark_raw(prop: dict[str, Any]) -> None:
    if prop.get("type") == "object" and "properties" not in prop and "$ref" not in prop and "additionalProperties" not in prop:
        prop["x-kubernetes-preserve-unknown-fields"] = True
    items = prop.get("items")
    if isinstance(items, dict):
        _mark_raw(items)


@lru_cache(maxsize=8)
def _components(kinds: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """(component schemas, kind -> its schema's name) for the kinds named."""
    types = [_SCHEMA_KINDS[kind].type for kind in kinds]
    refs, components = msgspec.json.schema_components(types, ref_template=_REF)
    names = {}
    for kind, ref in zip(kinds, refs):
        names[kind] = ref["$ref"].rsplit("/", 1)[1]
    for name, schema in components.items():
        _annotate(name, schema)
    for kind, name in names.items():
        info = _SCHEMA_KINDS[kind]
        schema = components[name]
        properties = schema.setdefault("properties", {})
        properties = {"apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                      "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}, **properties}
        schema["properties"] = properties
        schema["x-kubernetes-group-version-kind"] = [_gvk(info)]
    return components, names


def _parameter(name: str, description: str, type_: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": True}}


_WRITE_PARAMETERS = [
    _parameter("dryRun", "When present, indicates that modifications should not be persisted. The only valid value is All."),
    _parameter("fieldManager", "A name associated with the actor or entity that is making these changes."),
    _parameter("fieldValidation", "Ignore, Warn (the default) or Strict: what to do with unknown fields in the body."),
]
_LIST_PARAMETERS = [
    _parameter(name, description, type_) for name, description, type_ in (
        ("allowWatchBookmarks", "Requests watch events with type BOOKMARK.", "boolean"),
        ("continue", "The continue option from a previous paginated list.", "string"),
        ("fieldSelector", "A selector to restrict the list of returned objects by their fields.", "string"),
        ("labelSelector", "A selector to restrict the list of returned objects by their labels.", "string"),
        ("limit", "The maximum number of responses to return for a list call.", "integer"),
        ("resourceVersion", "Sets a constraint on what resource versions a request may be served from.", "string"),
        ("resourceVersionMatch", "How resourceVersion is applied to list calls.", "string"),
        ("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
        ("watch", "Watch for changes to the described resources.", "boolean"),
    )
]


def _operation(info: KindInfo, action: str, ref: str, *, subresource: str = "", patch_types: list[str] | None = None, write: bool = False, listing: bool = False) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": f"{action}{info.kind}{subresource.capitalize()}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(info),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}},
    }
    parameters: list[dict[str, Any]] = []
    if write:
        parameters += _WRITE_PARAMETERS
    if listing:
        parameters += _LIST_PARAMETERS
    if parameters:
        operation["parameters"] = parameters
    if patch_types is not None:
        operation["requestBody"] = {"content": {media: {"schema": {"type": "object"}} for media in patch_types}, "required": True}
    elif action in ("post", "put"):
        operation["requestBody"] = {"content": {"application/json": {"schema": {"$ref": ref}}}, "required": True}
    return operation


def _paths(info: KindInfo, ref: str, custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    group, version = group_version(info)
    base = "/" + _gv_path(group, version)
    plural = url_resource(info)
    collection = f"{base}/namespaces/{{namespace}}/{plural}" if info.namespaced else f"{base}/{plural}"
    item = f"{collection}/{{name}}"
    patch_types = ["application/json-patch+json", "application/merge-patch+json"]
    if not any(kind.info.resource == info.resource for kind in custom):
        patch_types.append("application/strategic-merge-patch+json")
    paths: dict[str, Any] = {
        collection: {"get": _operation(info, "list", ref, listing=True), "post": _operation(info, "post", ref, write=True), "delete": _operation(info, "deletecollection", ref, write=True)},
        item: {
            "get": _operation(info, "get", ref),
            "put": _operation(info, "put", ref, write=True),
            "patch": _operation(info, "patch", ref, patch_types=patch_types, write=True),
            "delete": _operation(info, "delete", ref, write=True),
        },
    }
    if info.namespaced:
        paths[f"{base}/{plural}"] = {"get": _operation(info, "list", ref, listing=True)}
    for subresource in subresources_of(info, custom):
        if subresource in ("status", "finalize"):
            entry = {"get": _operation(info, "get", ref, subresource=subresource), "put": _operation(info, "put", ref, subresource=subresource, write=True)}
            if subresource == "status":
                entry["patch"] = _operation(info, "patch", ref, subresource=subresource, patch_types=patch_types, write=True)
            paths[f"{item}/{subresource}"] = entry
        elif subresource in ("eviction", "binding"):
            paths[f"{item}/{subresource}"] = {"post": {**_operation(info, "post", ref, subresource=subresource, write=True), "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}}}
        elif subresource == "scale":
            paths[f"{item}/scale"] = {
                "get": _operation(info, "get", ref, subresource="scale"),
                "put": _operation(info, "put", ref, subresource="scale", write=True),
                "patch": _operation(info, "patch", ref, subresource="scale", patch_types=["application/json-patch+json", "application/merge-patch+json"], write=True),
            }
    return paths


#: The kinds with a schema: the registry's and the reviews (created, never stored).
_SCHEMA_KINDS: dict[str, KindInfo] = {**KINDS, **{info.kind: info for info in REVIEWS.values()}}


def _kinds_key() -> tuple[str, ...]:
    return tuple(_SCHEMA_KINDS)


@lru_cache(maxsize=64)
def _v3(gv_path: str, kinds: tuple[str, ...]) -> dict[str, Any] | None:
    infos = [info for (group, version), members in group_versions().items() if _gv_path(group, version) == gv_path for info in members]
    if not infos:
        return None
    components, names = _components(kinds)
    paths: dict[str, Any] = {}
    for info in infos:
        if REVIEWS.get(info.resource) == info:
            base = "/" + _gv_path(*group_version(info))
            collection = f"{base}/namespaces/{{namespace}}/{info.resource}" if info.namespaced else f"{base}/{info.resource}"
            paths[collection] = {"post": _operation(info, "post", _REF.format(name=names[info.kind]), write=True)}
            continue
        paths.update(_paths(info, _REF.format(name=names[info.kind])))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (chaoskube)", "version": "v1.32.0"},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": components},
    }


def _custom_components(kinds: Sequence[CustomKind]) -> tuple[dict[str, Any], dict[str, str]]:
    """(component schemas, wire resource -> its schema's name) of custom kinds: each CRD's
    schema as ``<reversed group>.<version>.<Kind>`` (upstream's naming), ``metadata`` an
    ObjectMeta reference."""
    from chaoskube.api.objects import ObjectMeta

    (meta_ref,), components = msgspec.json.schema_components([ObjectMeta], ref_template=_REF)
    for name, schema in components.items():
        _annotate(name, schema)
    names = {}
    for kind in kinds:
        group, version = group_version(kind.info)
        name = ".".join([*reversed(group.split(".")), version, kind.info.kind])
        schema = copy.deepcopy(kind.schema) if kind.schema else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        properties = dict(schema.get("properties") or {})
        properties.pop("metadata", None)
        schema["properties"] = {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
            "metadata": {"allOf": [meta_ref]},
            **properties,
        }
        schema["x-kubernetes-group-version-kind"] = [_gvk(kind.info)]
        components[name] = schema
        names[kind.info.resource] = name
    return components, names


def v3_document(gv_path: str, custom: Sequence[CustomKind] = ()) -> dict[str, Any] | None:
    """The OpenAPI v3 document of ``api/v1`` or ``apis/<group>/<version>`` (built-in kinds
    and the custom kinds of ``custom`` served there), or None."""
    gv_path = gv_path.split("?")[0].strip("/")
    mine = [kind for kind in custom if _gv_path(*group_version(kind.info)) == gv_path]
    document = _v3(gv_path, _kinds_key())
    if not mine:
        return document
    components, names = _custom_components(mine)
    paths: dict[str, Any] = {}
    for kind in mine:
        paths.update(_paths(kind.info, _REF.format(name=names[kind.info.resource]), custom))
    if document is None:
        document = {"openapi": "3.0.0", "info": {"title": "Kubernetes (chaoskube)", "version": "v1.32.0"}, "paths": {}, "components": {"schemas": {}}}
    return {
        **document,
        "paths": dict(sorted({**document["paths"], **paths}.items())),
        "components": {"schemas": {**document["components"]["schemas"], **components}},
    }


def _all_group_versions(custom: Sequence[CustomKind]) -> list[tuple[str, str]]:
    return sorted(group_versions(custom))


def v3_root(custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    paths = {}
    for group, version in _all_group_versions(custom):
        path = _gv_path(group, version)
        document = v3_document(path, custom)
        digest = hashlib.sha512(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def v2_document(custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    """Swagger 2.0 in JSON: every path and definition of the v3 documents."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for group, version in _all_group_versions(custom):
        document = v3_document(_gv_path(group, version), custom)
        assert document is not None
        paths.update(document["paths"])
        definitions.update(document["components"]["schemas"])
    text = orjson.dumps({"paths": paths, "definitions": definitions}).replace(b"#/components/schemas/", b"#/definitions/")
    converted = orjson.loads(text)
    return {"swagger": "2.0", "info": {"title": "Kubernetes (chaoskube)", "version": "v1.32.0"}, "paths": converted["paths"], "definitions": converted["definitions"]}

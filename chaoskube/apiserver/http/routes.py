"""Which resource a URL names: kube-apiserver's ``RequestInfo``
(``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``), generated from the kinds
registry (:data:`chaoskube.api.objects.KINDS`) and the views of stored kinds at another
group (:data:`chaoskube.apiserver.http.views.VIEWS`: events.k8s.io/v1 Event), so a kind added there is served at its
paths with no change here, and from the established CustomResourceDefinitions
(:class:`CustomKind`: ``/apis/{group}/{version}/[namespaces/{ns}/]{plural}``).

Resource paths::

    /api/v1/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
    /apis/{group}/{version}/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]
    /api/v1/watch/...   (the deprecated watch prefix: a watch of the same resource)

``/api/v1/namespaces/{name}`` is the namespace itself (and ``.../status``, ``.../finalize``
its subresources). Verbs from the method (``requestinfo.go``): GET is ``get`` with a name,
``list`` without, ``watch`` with ``?watch=true|1``; POST ``create``; PUT ``update``; PATCH
``patch``; DELETE ``delete`` (``deletecollection`` without a name).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskube.api.objects import KINDS, REVIEWS, KindInfo, custom_resource, custom_type
from chaoskube.apiserver.http.views import VIEWS

__all__ = [
    "SUBRESOURCES",
    "CustomKind",
    "RequestInfo",
    "custom_kinds",
    "group_version",
    "group_versions",
    "kind_at",
    "parse_path",
    "subresources_of",
]

#: Subresources per kind (besides ``status`` for every kind the server splits status of).
SUBRESOURCES: dict[str, tuple[str, ...]] = {
    "Pod": ("binding", "eviction", "status"),
    "Namespace": ("finalize", "status"),
    "Deployment": ("scale", "status"),
    "ReplicaSet": ("scale", "status"),
    "StatefulSet": ("scale", "status"),
    "ReplicationController": ("scale", "status"),
}


@dataclass(frozen=True)
class CustomKind:
    """A kind an established CustomResourceDefinition serves, as one replica sees it (the
    replica's answer to a discovery request carries its established CRDs, as each
    kube-apiserver's discovery of custom resources follows its own CRD informer).
    ``info.resource`` is the wire name ``<plural>.<group>``; URLs use ``plural``."""

    info: KindInfo
    plural: str
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    #: ``additionalPrinterColumns`` of the served version (name, type, format,
    #: description, priority, jsonPath), for Tables.
    columns: tuple[dict[str, Any], ...] = ()
    #: The served version's ``openAPIV3Schema``, for the OpenAPI documents.
    schema: dict[str, Any] | None = None


def custom_kinds(crds: Iterable[Any]) -> list[CustomKind]:
    """The kinds the established CRDs ``crds`` serve: one per version marked ``served``
    (upstream's ``crdHandler`` serves each, discovery lists each, and a version with
    ``served: false`` -- the storage version too -- is neither: 404 NotFound,
    ``customresource_handler.go``), sorted by group, version and plural. Objects are
    stored at the storage version and answered at the version asked (conversion strategy
    None: only ``apiVersion`` changes)."""
    from chaoskube.apiserver import crd as crd_rules

    found = []
    for crd in crds:
        spec = crd.spec
        if crd_rules.serving_version(crd) is None or not spec.group or not spec.names.plural or not spec.names.kind or not crd_rules.crd_established(crd):
            continue
        for version in spec.versions:
            if not version.served:
                continue
            api_version = f"{spec.group}/{version.name}"
            resource = custom_resource(spec.names.plural, spec.group)
            namespaced = spec.scope != "Cluster"
            info = KindInfo(kind=spec.names.kind, api_version=api_version, resource=resource, namespaced=namespaced, name_rule="subdomain", type=custom_type(api_version, spec.names.kind, resource, namespaced))
            subresources = []
            if version.subresources is not None and version.subresources.scale is not None:
                subresources.append("scale")
            if version.subresources is not None and version.subresources.status is not None:
                subresources.append("status")
            found.append(CustomKind(
                info=info, plural=spec.names.plural, singular=spec.names.singular or spec.names.kind.lower(),
                short_names=tuple(spec.names.short_names), categories=tuple(spec.names.categories), subresources=tuple(subresources),
                columns=tuple(column for column in version.additional_printer_columns if isinstance(column, dict)),
                schema=crd_rules.schema_of(crd, version.name),
            ))
    return sorted(found, key=lambda kind: (group_version(kind.info), kind.plural))


def subresources_of(info: KindInfo, custom: Sequence[CustomKind] = ()) -> tuple[str, ...]:
    from chaoskube.apiserver.server import STATUS_KINDS

    for kind in sorted(custom, key=lambda kind: kind.info != info):  # this version's first
        if kind.info.resource == info.resource:
            return kind.subresources
    found = set(SUBRESOURCES.get(info.kind, ()))
    if info.kind in STATUS_KINDS:
        found.add("status")
    return tuple(sorted(found))


def url_resource(info: KindInfo) -> str:
    """The resource as URLs name it: the plural (a custom kind's wire name is
    ``<plural>.<group>``)."""
    group = group_version(info)[0]
    if group and info.resource.endswith("." + group):
        return info.resource[: -len(group) - 1]
    return info.resource


def group_version(info: KindInfo) -> tuple[str, str]:
    """("", "v1") for core kinds, ("apps", "v1") for apps/v1."""
    group, _, version = info.api_version.rpartition("/")
    return group, version


def group_versions(custom: Sequence[CustomKind] = ()) -> dict[tuple[str, str], list[KindInfo]]:
    """(group, version) -> its kinds, in the order of KINDS (alphabetical by kind), then
    the custom kinds of ``custom``."""
    out: dict[tuple[str, str], list[KindInfo]] = {}
    for info in KINDS.values():
        out.setdefault(group_version(info), []).append(info)
    for info in VIEWS:
        out.setdefault(group_version(info), []).append(info)
    for info in REVIEWS.values():
        out.setdefault(group_version(info), []).append(info)
    for kind in custom:
        out.setdefault(group_version(kind.info), []).append(kind.info)
    return out


def kind_at(group: str, version: str, resource: str, custom: Sequence[CustomKind] = ()) -> KindInfo | None:
    for info in KINDS.values():
        if info.resource == resource and group_version(info) == (group, version):
            return info
    for info in VIEWS:
        if info.resource == resource and group_version(info) == (group, version):
            return info
    review = REVIEWS.get(resource)
    if review is not None and group_version(review) == (group, version):
        return review
    for kind in custom:
        if kind.plural == resource and group_version(kind.info) == (group, version):
            return kind.info
    return None


@dataclass(frozen=True)
class RequestInfo:
    """A parsed request path. ``resource_request`` is False for everything else
    (``/version``, ``/api``, ``/apis/apps``, ``/openapi/v3``...)."""

    resource_request: bool
    path: str
    verb: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    kind: KindInfo | None = None


def parse_path(method: str, path: str, watch: bool, custom: Sequence[CustomKind] = ()) -> RequestInfo:
    """The :class:`RequestInfo` of ``method path`` (``watch``: the query asked for one);
    ``custom``: the custom kinds served besides the registry's."""
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(False, path)
    if not rest:
        return RequestInfo(False, path)
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
        if not rest:
            return RequestInfo(False, path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        # /namespaces/{ns}/{resource}...; /namespaces/{name} and /namespaces/{name}/{sub}
        # (status, finalize) are the namespace itself.
        if len(rest) == 3 and rest[2] in ("status", "finalize"):
            pass
        else:
            namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if len(rest) > 3:
        return RequestInfo(False, path)
    verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method.upper(), "")
    if verb == "get" and not name:
        verb = "watch" if watch else "list"
    elif verb == "get" and watch:
        verb = "watch"  # a watch of one object (GET .../watch/.../name): a field selector on the name
    elif verb == "delete" and not name:
        verb = "deletecollection"
    info = kind_at(group, version, resource, custom)
    return RequestInfo(True, path, verb, group, version, resource, namespace, name, subresource, info)

"""Which resource a URL names: kube-apiserver's ``RequestInfo``
(``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``), generated from the kinds
registry (:data:`chaoskube.api.objects.KINDS`), so a kind added there is served at its
paths with no change here.

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

from dataclasses import dataclass

from chaoskube.api.objects import KINDS, KindInfo

__all__ = [
    "SUBRESOURCES",
    "RequestInfo",
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
}


def subresources_of(info: KindInfo) -> tuple[str, ...]:
    from chaoskube.apiserver.server import STATUS_KINDS

    found = set(SUBRESOURCES.get(info.kind, ()))
    if info.kind in STATUS_KINDS:
        found.add("status")
    return tuple(sorted(found))


def group_version(info: KindInfo) -> tuple[str, str]:
    """("", "v1") for core kinds, ("apps", "v1") for apps/v1."""
    group, _, version = info.api_version.rpartition("/")
    return group, version


def group_versions() -> dict[tuple[str, str], list[KindInfo]]:
    """(group, version) -> its kinds, in the order of KINDS (alphabetical by kind)."""
    out: dict[tuple[str, str], list[KindInfo]] = {}
    for info in KINDS.values():
        out.setdefault(group_version(info), []).append(info)
    return out


def kind_at(group: str, version: str, resource: str) -> KindInfo | None:
    for info in KINDS.values():
        if info.resource == resource and group_version(info) == (group, version):
            return info
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


def parse_path(method: str, path: str, watch: bool) -> RequestInfo:
    """The :class:`RequestInfo` of ``method path`` (``watch``: the query asked for one)."""
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
    info = kind_at(group, version, resource)
    return RequestInfo(True, path, verb, group, version, resource, namespace, name, subresource, info)

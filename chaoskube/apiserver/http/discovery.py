"""Discovery documents, generated from the kinds registry: what ``kubectl`` and client-go
read before anything else.

- Aggregated discovery (KEP-3352; ``apidiscovery.k8s.io/v2``, and ``v2beta1`` for kubectl
  1.26-1.29): ``GET /api`` and ``GET /apis`` with ``Accept:
  application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`` answer every
  group, version, resource and subresource in one ``APIGroupDiscoveryList``
  (``k8s.io/api/apidiscovery/v2/types.go``; client-go ``discovery/discovery_client.go``
  ``downloadAPIs`` reads it by the response's Content-Type).
- Unaggregated discovery otherwise: ``/api`` (``APIVersions``), ``/apis`` (``APIGroupList``),
  ``/apis/{group}`` (``APIGroup``), ``/api/v1`` and ``/apis/{group}/{version}``
  (``APIResourceList``, subresources as ``pods/status`` entries), as the Python client and
  kopf read them.

Verbs: every kind serves create, delete, deletecollection, get, list, patch, update, watch;
the reviews (access and token reviews) create only. Short names and
categories are upstream's for the built-in kinds (``kubectl api-resources``); a kind added to
the registry appears with none until it is listed in :data:`SHORT_NAMES` / :data:`CATEGORIES`.

Custom resources (``custom``: the established CRDs of the replica that answers) appear in
their group and served version with the CRD's plural, singular, short names, categories
and subresources, as apiextensions-apiserver's ``DiscoveryController`` publishes them.
"""

from __future__ import annotations

import re

from collections.abc import Sequence
from typing import Any

from chaoskube.api.objects import REVIEWS, KindInfo
from chaoskube.apiserver.http.routes import CustomKind, group_version, group_versions, subresources_of, url_resource

__all__ = [
    "AGGREGATED_TYPES",
    "CATEGORIES",
    "SHORT_NAMES",
    "aggregated",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
]

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SHORT_NAMES: dict[str, list[str]] = {
    "Pod": ["po"], "Node": ["no"], "Namespace": ["ns"], "Service": ["svc"], "Deployment": ["deploy"],
    "ReplicaSet": ["rs"], "PodDisruptionBudget": ["pdb"], "ServiceAccount": ["sa"], "PriorityClass": ["pc"],
    "ConfigMap": ["cm"], "StatefulSet": ["sts"], "DaemonSet": ["ds"], "CronJob": ["cj"],
    "PersistentVolumeClaim": ["pvc"], "PersistentVolume": ["pv"], "StorageClass": ["sc"], "Ingress": ["ing"],
    "Endpoints": ["ep"], "ReplicationController": ["rc"], "ResourceQuota": ["quota"], "LimitRange": ["limits"],
    "CustomResourceDefinition": ["crd", "crds"], "Event": ["ev"], "HorizontalPodAutoscaler": ["hpa"], "NetworkPolicy": ["netpol"],
}
CATEGORIES: dict[str, list[str]] = {
    "Pod": ["all"], "Service": ["all"], "Deployment": ["all"], "ReplicaSet": ["all"], "StatefulSet": ["all"],
    "DaemonSet": ["all"], "Job": ["all"], "CronJob": ["all"], "ReplicationController": ["all"],
    "HorizontalPodAutoscaler": ["all"], "CustomResourceDefinition": ["api-extensions"],
    "MutatingWebhookConfiguration": ["api-extensions"], "ValidatingWebhookConfiguration": ["api-extensions"],
}
#: The response kind and verbs of each subresource.
_SUBRESOURCE_KINDS: dict[str, tuple[str, str, str | None, list[str]]] = {
    # subresource -> (group, version, kind or None for the parent's, verbs)
    "status": ("", "", None, ["get", "patch", "update"]),
    "scale": ("autoscaling", "v1", "Scale", ["get", "patch", "update"]),
    "eviction": ("policy", "v1", "Eviction", ["create"]),
    "binding": ("", "v1", "Binding", ["create"]),
    "finalize": ("", "", None, ["update"]),
}
#: Media types of aggregated discovery this server answers (``Accept`` parameters).
AGGREGATED_TYPES = ("v2", "v2beta1")


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _subresource(info: KindInfo, name: str) -> tuple[dict[str, str], list[str]]:
    group, version, kind, verbs = _SUBRESOURCE_KINDS.get(name, ("", "", None, ["get"]))
    if kind is None:
        parent_group, parent_version = group_version(info)
        return _gvk(parent_group, parent_version, info.kind), verbs
    return _gvk(group, version, kind), verbs


def _names(info: KindInfo, custom: Sequence[CustomKind]) -> tuple[str, list[str], list[str]]:
    """(singular, short names, categories) of a kind."""
    for kind in custom:
        if kind.info.resource == info.resource:
            return kind.singular, list(kind.short_names), list(kind.categories)
    return info.kind.lower(), list(SHORT_NAMES.get(info.kind, [])), list(CATEGORIES.get(info.kind, []))


def _verbs(info: KindInfo) -> list[str]:
    """A review (an access or token review) is created and answered, nothing else."""
    return ["create"] if info.resource in REVIEWS and REVIEWS[info.resource] == info else list(VERBS)


def _resource_discovery(info: KindInfo, custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    group, version = group_version(info)
    singular, short_names, categories = _names(info, custom)
    entry: dict[str, Any] = {
        "resource": url_resource(info),
        "responseKind": _gvk(group, version, info.kind),
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": singular,
        "verbs": _verbs(info),
    }
    if short_names:
        entry["shortNames"] = short_names
    if categories:
        entry["categories"] = categories
    subresources = []
    for name in subresources_of(info, custom):
        kind, verbs = _subresource(info, name)
        subresources.append({"subresource": name, "responseKind": kind, "verbs": verbs})
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated(core: bool, version: str = "v2", custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` of ``/api`` (``core``) or ``/apis``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for (group, gv_version), infos in sorted(group_versions(custom).items()):
        if (group == "") != core:
            continue
        resources = [_resource_discovery(info, custom) for info in sorted(infos, key=url_resource)]
        groups.setdefault(group, []).append({"version": gv_version, "resources": resources, "freshness": "Current"})
    items = [{"metadata": {"name": group, "creationTimestamp": None}, "versions": sorted(versions, key=lambda entry: version_priority(entry["version"]))} for group, versions in groups.items()]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}", "metadata": {}, "items": items}


def api_versions(server_address: str) -> dict[str, Any]:
    """``GET /api`` unaggregated."""
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


#: apimachinery ``kubeVersionRegex`` (Go's ``\d`` and ``$`` are ASCII digits and the very end:
#: ``[0-9]`` and ``fullmatch`` here: a non-ASCII digit or a trailing newline is not kube-like).
_KUBE_VERSION = re.compile(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?")


def version_priority(version: str) -> tuple[int, int, int, int, str]:
    """A sort key putting the most preferred version first, as
    ``version.CompareKubeAwareVersionStrings`` (apimachinery ``pkg/version/helpers.go``)
    orders them, descending: GA before beta before alpha, then the higher major, then the
    higher minor (v2, v1, v1beta2, v1beta1, v1alpha1); versions not of that form after
    them, alphabetically. Upstream's discovery of a CRD's group sorts its served versions
    so (``sortGroupDiscoveryByKubeAwareVersion``) and prefers the first."""
    match = _KUBE_VERSION.fullmatch(version)
    if match is None:
        return (1, 0, 0, 0, version)
    rank = {"alpha": 0, "beta": 1, None: 2}[match.group(2)]
    return (0, -rank, -int(match.group(1)), -int(match.group(3) or 0), "")


def api_group(group: str, custom: Sequence[CustomKind] = ()) -> dict[str, Any] | None:
    versions = sorted((version for (name, version) in group_versions(custom) if name == group), key=version_priority)
    if not group or not versions:
        return None
    entries = [{"groupVersion": f"{group}/{version}", "version": version} for version in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(custom: Sequence[CustomKind] = ()) -> dict[str, Any]:
    """``GET /apis`` unaggregated."""
    groups = sorted({group for group, _ in group_versions(custom) if group})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(group, custom) for group in groups]}


def api_resource_list(group: str, version: str, custom: Sequence[CustomKind] = ()) -> dict[str, Any] | None:
    """``GET /api/v1`` or ``/apis/{group}/{version}``: ``APIResourceList``."""
    infos = group_versions(custom).get((group, version))
    if not infos:
        return None
    resources: list[dict[str, Any]] = []
    for info in sorted(infos, key=url_resource):
        singular, short_names, categories = _names(info, custom)
        plural = url_resource(info)
        entry: dict[str, Any] = {
            "name": plural, "singularName": singular, "namespaced": info.namespaced,
            "kind": info.kind, "verbs": _verbs(info),
        }
        if short_names:
            entry["shortNames"] = short_names
        if categories:
            entry["categories"] = categories
        resources.append(entry)
        for name in subresources_of(info, custom):
            kind, verbs = _subresource(info, name)
            sub: dict[str, Any] = {"name": f"{plural}/{name}", "singularName": "", "namespaced": info.namespaced, "kind": kind["kind"], "verbs": verbs}
            if (kind["group"], kind["version"]) != (group, version):
                sub["group"], sub["version"] = kind["group"], kind["version"]
            resources.append(sub)
    group_version_text = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version_text, "resources": resources}

"""Builders shared by the scheduler tests: Nodes and Pods as a manifest would write them."""

from __future__ import annotations

from typing import Any

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import Node, Pod

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> Node:
    node_labels = {HOSTNAME: name, **({ZONE: zone} if zone else {}), **(labels or {})}
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }
    node = from_dict(body)
    assert isinstance(node, Node)
    return node


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    priority_class: str = "",
    preemption_policy: str | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    spread: list[dict[str, Any]] | None = None,
    start_time: str | None = None,
    nominated: str = "",
    deleting: bool = False,
    conditions: list[dict[str, Any]] | None = None,
    uid: str = "",
) -> Pod:
    requests = {key: value for key, value in (("cpu", cpu), ("memory", memory)) if value is not None}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": requests} if requests else {}}],
        "schedulerName": "default-scheduler",
    }
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if uid:
        metadata["uid"] = uid
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    status: dict[str, Any] = {}
    if start_time:
        status["startTime"] = start_time
    if nominated:
        status["nominatedNodeName"] = nominated
    if conditions:
        status["conditions"] = conditions
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status})
    assert isinstance(pod, Pod)
    return pod


def anti_affinity(labels: dict[str, str], topology_key: str = HOSTNAME) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key}]}}


def pod_affinity(labels: dict[str, str], topology_key: str = ZONE) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": topology_key}]}}


def spread_constraint(labels: dict[str, str], *, key: str = ZONE, max_skew: int = 1, when: str = "DoNotSchedule", min_domains: int | None = None) -> dict[str, Any]:
    constraint: dict[str, Any] = {
        "maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": {"matchLabels": labels},
    }
    if min_domains is not None:
        constraint["minDomains"] = min_domains
    return constraint

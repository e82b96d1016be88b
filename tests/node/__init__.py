"""Tests of the node components: the simulated runtime, the kubelet and kube-proxy.

Shared scenario helpers: kubelets in node processes (named after their nodes) against
the API servers of :func:`tests.apiserver.apiserver_harness.run_api`, and pods as manifests."""

from __future__ import annotations

from typing import Any

from chaoskube.api.identity import admin_credentials, node_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.client.client import ApiClient
from chaoskube.config import KubeletConfig
from chaoskube.node.kubelet import Kubelet, KubeletNode

API_SERVERS = ("kube-apiserver-1",)


def node_spec(name: str, index: int = 1, **fields: Any) -> KubeletNode:
    return KubeletNode(name=name, zone=f"zone-{index}", address=f"10.0.0.{10 + index}", pod_cidr=f"10.244.{index}.0/24", **fields)


def kubelet_process(spec: KubeletNode, registry: dict[str, Kubelet], config: KubeletConfig | None = None):
    """A node process's main: a kubelet with the node's credentials (one per incarnation)."""

    async def main(process):
        client = ApiClient(process, API_SERVERS, node_credentials(spec.name))
        kubelet = registry[spec.name] = Kubelet(process, client, spec, config)
        await kubelet.run()

    return main


def admin(process) -> ApiClient:
    return ApiClient(process, API_SERVERS, admin_credentials(), name=f"{process.name}/admin")


def pod_manifest(name: str, node: str, *, annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None, restart_policy: str = "Always", grace_s: int | None = None, **container: Any):
    """A pod bound to ``node`` (as if scheduled) with one container "app"."""
    spec: dict[str, Any] = {"nodeName": node, "restartPolicy": restart_policy, "containers": [{"name": "app", "image": "registry.k8s.io/app:1.0", **container}]}
    if grace_s is not None:
        spec["terminationGracePeriodSeconds"] = grace_s
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {"app": name}}
    if annotations:
        metadata["annotations"] = annotations
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def events(world, kind: str, **match: Any) -> list[dict[str, Any]]:
    return [event for event in world.journal.of_type(kind) if all(event.get(key) == value for key, value in match.items())]


def condition(pod, kind: str):
    return next((c for c in pod.status.conditions if c.type == kind), None)

"""The node components of the simulated cluster: kubelet (with a simulated container
runtime) and kube-proxy (with a traffic probe)."""

from chaoskube.node.kubelet import DrainResult, Kubelet, KubeletNode, cordon, drain
from chaoskube.node.proxy import EndpointRule, KubeProxy, ServiceRule, TrafficProbe, compute_rules, pick_endpoint
from chaoskube.node.runtime import TRAFFIC_PORT, ContainerBehaviour, ContainerRuntime, TrafficRequest

__all__ = [
    "ContainerBehaviour",
    "ContainerRuntime",
    "DrainResult",
    "EndpointRule",
    "KubeProxy",
    "Kubelet",
    "KubeletNode",
    "ServiceRule",
    "TRAFFIC_PORT",
    "TrafficProbe",
    "TrafficRequest",
    "compute_rules",
    "cordon",
    "drain",
    "pick_endpoint",
]

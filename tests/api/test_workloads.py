"""chaoskube.api.workloads: the workload rules checkers share with the controllers, over
typed objects and over the store's JSON."""

from __future__ import annotations

from chaoskube.api.manifests import from_dict
from chaoskube.api.workloads import (
    daemon_pod_node,
    desired_pods,
    node_should_run_daemon_pod,
    stateful_claim_name,
    stateful_pod_ordinal,
    volume_references,
    workload_settled,
)

DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system", "generation": 1},
      "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}},
               "spec": {"nodeSelector": {"pool": "general"}, "containers": [{"name": "a", "image": "agent:1"}]}}}}


def node(name: str, labels: dict[str, str], taints: list[dict[str, str]] = ()) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": {"taints": list(taints)}}


def test_daemon_rules_on_json_and_typed_objects_agree() -> None:
    cases = [
        (node("n1", {"pool": "general"}), (True, True)),
        (node("n2", {"pool": "gpu"}), (False, False)),
        (node("n3", {"pool": "general"}, [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]), (False, True)),
        (node("n4", {"pool": "general"}, [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]), (True, True)),
    ]
    for the_node, expected in cases:
        assert node_should_run_daemon_pod(the_node, DS) == expected
        assert node_should_run_daemon_pod(from_dict(the_node), from_dict(DS)) == expected


def test_daemon_pod_node_from_name_or_affinity() -> None:
    pinned = {"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}}}}}
    assert daemon_pod_node(pinned) == "node-3"
    assert daemon_pod_node({"spec": {"nodeName": "node-1", **pinned["spec"]}}) == "node-1"
    assert daemon_pod_node({"spec": {}}) == ""


def test_stateful_names() -> None:
    assert stateful_pod_ordinal("web", "web-3") == 3 and stateful_pod_ordinal("web", "web-x") is None and stateful_pod_ordinal("web", "api-1") is None
    assert stateful_claim_name("data", "web", 3) == "data-web-3"


def test_desired_pods_and_settled_per_kind() -> None:
    assert desired_pods({"kind": "StatefulSet", "spec": {}}) == 1
    assert desired_pods({"kind": "StatefulSet", "spec": {"replicas": 0}}) == 0
    assert desired_pods({"kind": "DaemonSet", "status": {"desiredNumberScheduled": 4}}) == 4
    assert desired_pods({"kind": "Job", "spec": {"parallelism": 3, "completions": 5}, "status": {"succeeded": 4}}) == 1
    assert desired_pods({"kind": "Job", "spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}) == 0
    settled, why = workload_settled({"kind": "StatefulSet", "metadata": {"name": "db", "namespace": "d", "generation": 2}, "spec": {"replicas": 3},
                                     "status": {"observedGeneration": 1}})
    assert not settled and why


def test_volume_references_cover_volumes_and_projections() -> None:
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {
        "containers": [{"name": "c", "image": "i", "envFrom": [{"configMapRef": {"name": "cm1"}}],
                        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k", "optional": True}}}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "all", "projected": {"sources": [{"configMap": {"name": "cm2"}}, {"secret": {"name": "s2"}}]}}]}})
    found = {(ref.kind, ref.name, ref.optional) for ref in volume_references(pod.spec.volumes)}
    assert ("persistentvolumeclaim", "claim", False) in found
    assert ("configmap", "cm2", False) in found and ("secret", "s2", False) in found


def test_env_and_pod_references() -> None:
    from chaoskube.api.workloads import env_references, pod_references

    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {
        "imagePullSecrets": [{"name": "registry"}],
        "initContainers": [{"name": "i", "image": "i", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
        "containers": [{"name": "c", "image": "i", "envFrom": [{"configMapRef": {"name": "cm1", "optional": True}}],
                        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "password"}}}, {"name": "Y", "value": "plain"}]}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}]}})
    assert [tuple(ref) for ref in env_references(pod.spec.containers[0])] == [("configmap", "configmaps", "cm1", "", True), ("secret", "secrets", "s1", "password", False)]
    assert sorted(pod_references(pod.spec)) == [("configmaps", "cm1"), ("persistentvolumeclaims", "claim"), ("secrets", "init-secret"), ("secrets", "registry"), ("secrets", "s1")]

"""What workloads mean, as pure functions both sides of the API compute with: the objects a
pod's volumes reference, and what each kind of workload wants (its desired pods, its
selector, whether it is settled), over typed objects and over their Kubernetes JSON (the
checkers read the store's JSON: ``chaoskube.checkers`` may import this module).

Sources: ``pkg/api/v1/pod/util.go`` (``VisitPodSecretNames``, ``VisitPodConfigmapNames``),
``pkg/controller/statefulset``, ``daemon``, ``job``, ``replicaset``/``replication`` and
``deployment`` (what "at its spec" means for each), ``kubectl rollout status``
(``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "WORKLOAD_KINDS",
    "VolumeReference",
    "desired_pods",
    "is_workload",
    "pod_selector",
    "pod_template",
    "volume_references",
    "workload_settled",
]

#: Kinds that own pods through a template, by kind: (resource, what "desired" counts).
WORKLOAD_KINDS: dict[str, str] = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "ReplicationController": "replicationcontrollers",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "Job": "jobs",
}

Obj = Mapping[str, Any]


class VolumeReference(tuple):
    """(kind, resource, name, volume, optional): an API object a pod volume mounts."""

    __slots__ = ()

    def __new__(cls, kind: str, resource: str, name: str, volume: str, optional: bool) -> VolumeReference:
        return super().__new__(cls, (kind, resource, name, volume, optional))

    @property
    def kind(self) -> str:
        return self[0]

    @property
    def resource(self) -> str:
        return self[1]

    @property
    def name(self) -> str:
        return self[2]

    @property
    def volume(self) -> str:
        return self[3]

    @property
    def optional(self) -> bool:
        return self[4]


def volume_references(volumes: Any) -> list[VolumeReference]:
    """The ConfigMaps, Secrets and PersistentVolumeClaims ``volumes`` (a pod spec's
    ``volumes``, raw JSON) mount, projected sources included, in order."""
    found: list[VolumeReference] = []

    def add(entry: Mapping[str, Any], volume: str) -> None:
        config_map = entry.get("configMap")
        if isinstance(config_map, dict) and config_map.get("name"):
            found.append(VolumeReference("configmap", "configmaps", config_map["name"], volume, bool(config_map.get("optional"))))
        secret = entry.get("secret")
        if isinstance(secret, dict) and (secret.get("secretName") or secret.get("name")):
            found.append(VolumeReference("secret", "secrets", secret.get("secretName") or secret.get("name"), volume, bool(secret.get("optional"))))
        claim = entry.get("persistentVolumeClaim")
        if isinstance(claim, dict) and claim.get("claimName"):
            found.append(VolumeReference("persistentvolumeclaim", "persistentvolumeclaims", claim["claimName"], volume, False))

    for volume in volumes or ():
        if not isinstance(volume, Mapping):
            continue
        name = str(volume.get("name", ""))
        add(volume, name)
        projected = volume.get("projected")
        if isinstance(projected, dict):
            for entry in projected.get("sources") or ():
                if isinstance(entry, dict):
                    add(entry, name)
    return found


# =========================================================================== workloads, as JSON


def is_workload(obj: Obj) -> bool:
    return obj.get("kind") in WORKLOAD_KINDS


def pod_template(obj: Obj) -> Obj:
    """The pod template of a workload's JSON (``{}`` when absent)."""
    return ((obj.get("spec") or {}).get("template")) or {}


def pod_selector(obj: Obj) -> Obj | None:
    """The workload's label selector as ``metav1.LabelSelector`` JSON (a
    ReplicationController's map becomes ``matchLabels``; its default is the template's labels)."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if obj.get("kind") == "ReplicationController":
        labels = selector or ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        return {"matchLabels": dict(labels)}
    return selector


def desired_pods(obj: Obj, *, eligible_nodes: int | None = None) -> int:
    """How many pods a workload wants running: ``spec.replicas`` (default 1) for
    Deployments, ReplicaSets, ReplicationControllers and StatefulSets; a DaemonSet's
    ``status.desiredNumberScheduled`` (or ``eligible_nodes`` when given); a Job's
    ``parallelism`` capped by the completions still to go (0 once it finished)."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind in ("Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"):
        replicas = spec.get("replicas")
        return 1 if replicas is None else int(replicas)
    if kind == "DaemonSet":
        return eligible_nodes if eligible_nodes is not None else int(status.get("desiredNumberScheduled") or 0)
    if kind == "Job":
        if any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in status.get("conditions") or ()):
            return 0
        if spec.get("suspend"):
            return 0
        parallelism = spec.get("parallelism")
        parallelism = 1 if parallelism is None else int(parallelism)
        completions = spec.get("completions")
        if completions is None:
            return parallelism if not status.get("succeeded") else 0
        return max(0, min(parallelism, int(completions) - int(status.get("succeeded") or 0)))
    return 0


def workload_settled(obj: Obj) -> tuple[bool, str]:
    """``kubectl rollout status`` for each kind: (settled, why not). A Job is settled when
    it completed; a workload whose controller has not observed its generation is not."""
    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    generation = int(meta.get("generation") or 0)
    observed = int(status.get("observedGeneration") or 0)
    name = f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name')}"
    if kind == "Job":
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        if conditions.get("Complete") == "True":
            return True, ""
        if conditions.get("Failed") == "True":
            return False, f"{name} failed"
        return False, f"{name}: {int(status.get('succeeded') or 0)}/{spec.get('completions', 1)} completions"
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController") and observed < generation:
        return False, f"{name}: generation {generation} not observed yet"
    want = desired_pods(obj)
    if kind == "DaemonSet":
        ready, updated = int(status.get("numberReady") or 0), int(status.get("updatedNumberScheduled") or 0)
        available = int(status.get("numberAvailable") or 0)
        if updated < want or available < want or ready < want:
            return False, f"{name}: {ready}/{want} ready, {updated} updated, {available} available"
        return True, ""
    ready = int(status.get("readyReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    if kind == "StatefulSet":
        updated = int(status.get("updatedReplicas") or 0)
        strategy = spec.get("updateStrategy") or {}
        partition = int(((strategy.get("rollingUpdate") or {}).get("partition")) or 0) if strategy.get("type", "RollingUpdate") == "RollingUpdate" else 0
        if ready < want:
            return False, f"{name}: {ready}/{want} ready"
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and updated < want - partition:
            return False, f"{name}: {updated}/{want - partition} updated"
        return True, ""
    if ready < want or available < want:
        return False, f"{name}: {ready}/{want} ready, {available} available"
    return True, ""


# =========================================================================== nodes: taints and affinity
# ``k8s.io/component-helpers/scheduling/corev1`` (used by the scheduler, the DaemonSet
# controller and the volume binder alike).


def toleration_tolerates_taint(toleration: Any, taint: Any) -> bool:
    """``Toleration.ToleratesTaint`` (``k8s.io/api/core/v1/toleration.go``)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator or "Equal"
    if operator == "Equal":
        return toleration.value == taint.value
    return operator == "Exists"


def find_untolerated_taint(taints: Any, tolerations: Any, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> Any | None:
    """``FindMatchingUntoleratedTaint`` over the taints with one of ``effects``."""
    for taint in taints:
        if taint.effect in effects and not any(toleration_tolerates_taint(toleration, taint) for toleration in tolerations):
            return taint
    return None


def _requirement_matches(requirement: Any, values: Mapping[str, str]) -> bool:
    key, operator = requirement.key, requirement.operator
    present = key in values
    if operator == "In":
        return present and values[key] in requirement.values
    if operator == "NotIn":
        return not present or values[key] not in requirement.values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        if not present or len(requirement.values) != 1:
            return False
        try:
            label, bound = int(values[key]), int(requirement.values[0])
        except ValueError:
            return False
        return label > bound if operator == "Gt" else label < bound
    return False


def node_selector_term_matches(term: Any, node_name: str, labels: Mapping[str, str]) -> bool:
    """A term ANDs its label expressions and its fields (``metadata.name``); an empty term
    matches nothing."""
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(_requirement_matches(expression, labels) for expression in term.match_expressions):
        return False
    fields = {"metadata.name": node_name}
    return all(requirement.key == "metadata.name" and _requirement_matches(requirement, fields) for requirement in term.match_fields)


def node_selector_matches(selector: Any, node_name: str, labels: Mapping[str, str]) -> bool:
    """A required ``NodeSelector``: one of its terms matches (None matches every node)."""
    if selector is None:
        return True
    return any(node_selector_term_matches(term, node_name, labels) for term in selector.node_selector_terms)


def pod_fits_node_affinity(spec: Any, node: Any) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: ``nodeSelector`` and the required terms."""
    labels = node.metadata.labels
    for key, value in spec.node_selector.items():
        if labels.get(key) != value:
            return False
    affinity = spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if affinity is not None and affinity.node_affinity is not None else None
    return node_selector_matches(required, node.metadata.name, labels)


__all__ += ["find_untolerated_taint", "node_selector_matches", "node_selector_term_matches", "pod_fits_node_affinity", "toleration_tolerates_taint"]

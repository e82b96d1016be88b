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

import re
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


class EnvReference(tuple):
    """(kind, resource, name, key, optional): an API object a container's environment reads
    (``envFrom``: key ""; ``env[].valueFrom.*KeyRef``: the key)."""

    __slots__ = ()

    def __new__(cls, kind: str, resource: str, name: str, key: str, optional: bool) -> EnvReference:
        return super().__new__(cls, (kind, resource, name, key, optional))

    kind = property(lambda self: self[0])
    resource = property(lambda self: self[1])
    name = property(lambda self: self[2])
    key = property(lambda self: self[3])
    optional = property(lambda self: self[4])


def env_references(container: Any) -> list[EnvReference]:
    """The ConfigMaps and Secrets a container's ``envFrom`` and ``env[].valueFrom`` read, in
    order (``makeEnvironmentVariables`` reads them in this order)."""
    found: list[EnvReference] = []
    for source in getattr(container, "env_from", None) or ():
        if not isinstance(source, Mapping):
            continue
        for field, kind, resource in (("configMapRef", "configmap", "configmaps"), ("secretRef", "secret", "secrets")):
            ref = source.get(field)
            if isinstance(ref, Mapping) and ref.get("name"):
                found.append(EnvReference(kind, resource, str(ref["name"]), "", bool(ref.get("optional"))))
    for variable in getattr(container, "env", None) or ():
        value_from = variable.get("valueFrom") if isinstance(variable, Mapping) else None
        if not isinstance(value_from, Mapping):
            continue
        for field, kind, resource in (("configMapKeyRef", "configmap", "configmaps"), ("secretKeyRef", "secret", "secrets")):
            ref = value_from.get(field)
            if isinstance(ref, Mapping) and ref.get("name"):
                found.append(EnvReference(kind, resource, str(ref["name"]), str(ref.get("key", "")), bool(ref.get("optional"))))
    return found


def pod_references(spec: Any) -> list[tuple[str, str]]:
    """(resource, name) of every ConfigMap, Secret and claim a pod spec references — its
    volumes, its containers' (init and ephemeral too) environment and its image pull
    secrets — as the Node authorizer's graph (``VisitPodSecretNames``,
    ``VisitPodConfigmapNames``) records them."""
    found = [(reference.resource, reference.name) for reference in volume_references(spec.volumes)]
    for container in (*spec.init_containers, *spec.containers):
        found.extend((reference.resource, reference.name) for reference in env_references(container))
    for ephemeral in getattr(spec, "ephemeral_containers", None) or ():
        if isinstance(ephemeral, Mapping):
            for source in ephemeral.get("envFrom") or ():
                for field, resource in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
                    ref = source.get(field) if isinstance(source, Mapping) else None
                    if isinstance(ref, Mapping) and ref.get("name"):
                        found.append((resource, str(ref["name"])))
    for secret in getattr(spec, "image_pull_secrets", None) or ():
        if isinstance(secret, Mapping) and secret.get("name"):
            found.append(("secrets", str(secret["name"])))
    return found


__all__ += ["EnvReference", "env_references", "pod_references"]
__all__ += ["TAINT_TOLERATION_COMPARISON_OPERATORS", "compare_numeric_values", "tolerations_tolerate_taints_with_filter"]


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


#: ``TaintTolerationComparisonOperators`` (alpha in 1.35, off by default): tolerations with
#: Gt/Lt. Off, such a toleration tolerates nothing (and the API server refuses it).
TAINT_TOLERATION_COMPARISON_OPERATORS = False
_NUMERIC = re.compile(r"-?(0|[1-9][0-9]*)")


def compare_numeric_values(toleration_value: str, taint_value: str, operator: str) -> bool:
    """``compareNumericValues``: both values canonical decimal int64s (no sign "+", no
    leading zero, no spaces), the taint's greater (Gt) or less (Lt) than the toleration's;
    anything else is not tolerated."""
    numbers = []
    for text in (toleration_value, taint_value):
        if _NUMERIC.fullmatch(text) is None or not -(1 << 63) <= int(text) < (1 << 63):
            return False
        numbers.append(int(text))
    bound, value = numbers
    if operator == "Gt":
        return value > bound
    if operator == "Lt":
        return value < bound
    return False


def toleration_tolerates_taint(toleration: Any, taint: Any, comparison_operators: bool = TAINT_TOLERATION_COMPARISON_OPERATORS) -> bool:
    """``Toleration.ToleratesTaint`` (``k8s.io/api/core/v1/toleration.go``): the effects
    match (empty tolerates all), the keys match (empty tolerates all), and operator Exists,
    or Equal (the default) with the same value, or, with the comparison-operators gate, Gt/Lt
    on integer values. The scheduler, the DaemonSet controller and the node lifecycle
    controller all use this one."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    operator = toleration.operator
    if operator in ("", "Equal"):
        return toleration.value == taint.value
    if operator == "Exists":
        return True
    if operator in ("Gt", "Lt"):
        return comparison_operators and compare_numeric_values(toleration.value, taint.value, operator)
    return False


def tolerations_tolerate_taints_with_filter(tolerations: Any, taints: Any, apply_filter: Any = None) -> bool:
    """``TolerationsTolerateTaintsWithFilter``: every taint the filter keeps (all when none)
    is tolerated by some toleration."""
    return all(any(toleration_tolerates_taint(toleration, taint) for toleration in tolerations) for taint in taints if apply_filter is None or apply_filter(taint))


def find_untolerated_taint(taints: Any, tolerations: Any, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> Any | None:
    """``FindMatchingUntoleratedTaint`` over the taints with one of ``effects``."""
    for taint in taints:
        if taint.effect in effects and not any(toleration_tolerates_taint(toleration, taint) for toleration in tolerations):
            return taint
    return None


# ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: a term is parsed once into a
# label selector (``labels.NewRequirement`` for each expression) and a field selector; a term
# that does not parse matches nothing (its errors are reported, the other terms still count).
# Errors are (type, field, detail), as ``field.Error`` holds them.

FieldError = tuple[str, str, str]


def _new_requirement(key: str, operator: str, values: list[str], path: str) -> list[FieldError]:
    """``labels.NewRequirement``'s errors for a node selector requirement."""
    from chaoskube.api.selectors import _int64, label_key_problems, label_value_problems

    errors: list[FieldError] = []
    problems = label_key_problems(key)
    if problems:
        errors.append(("Invalid value", f"{path}.key", "; ".join(problems)))
    if operator in ("In", "NotIn") and not values:
        errors.append(("Invalid value", f"{path}.values", "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in ("Exists", "DoesNotExist") and values:
        errors.append(("Invalid value", f"{path}.values", "values set must be empty for exists and does not exist"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(("Invalid value", f"{path}.values", "for 'Gt', 'Lt' operators, exactly one value is required"))
        errors.extend(("Invalid value", f"{path}.values[{index}]", "for 'Gt', 'Lt' operators, the value must be an integer") for index, value in enumerate(values) if _int64(value) is None)
    for index, value in enumerate(values):
        problems = label_value_problems(value)
        if problems:
            errors.append(("Invalid value", f"{path}.values[{index}][{key}]", "; ".join(problems)))
    return errors


def node_selector_requirements_as_selector(requirements: Any, path: str) -> tuple[list[Any] | None, list[FieldError]]:
    """``nodeSelectorRequirementsAsSelector``: the requirements (None: ``labels.Nothing()``
    for none) or the errors."""
    if not requirements:
        return None, []
    errors: list[FieldError] = []
    for index, requirement in enumerate(requirements):
        where = f"{path}[{index}]"
        if requirement.operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            errors.append(("Unsupported value", f"{where}.operator", ""))
            continue
        errors.extend(_new_requirement(requirement.key, requirement.operator, list(requirement.values), where))
    return (None, errors) if errors else (list(requirements), [])


def node_selector_requirements_as_field_selector(requirements: Any, path: str) -> tuple[list[Any] | None, list[FieldError]]:
    """``nodeSelectorRequirementsAsFieldSelector``: In / NotIn with exactly one value."""
    if not requirements:
        return None, []
    errors: list[FieldError] = []
    for index, requirement in enumerate(requirements):
        where = f"{path}[{index}]"
        if requirement.operator in ("In", "NotIn"):
            if len(requirement.values) != 1:
                errors.append(("Invalid value", f"{where}.values", "must have one element"))
        else:
            errors.append(("Unsupported value", f"{where}.operator", 'supported values: "In", "NotIn"'))
    return (None, errors) if errors else (list(requirements), [])


def _requirement_matches(requirement: Any, values: Mapping[str, str]) -> bool:
    """A parsed requirement against labels (``labels.Requirement.Matches``)."""
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
    if not present:
        return False
    try:  # Gt / Lt: a label that is not an int64 does not match
        label, bound = int(values[key]), int(requirement.values[0])
    except ValueError:
        return False
    return label > bound if operator == "Gt" else label < bound


def node_selector_requirement_matches(requirement: Any, values: Mapping[str, str]) -> bool:
    """One requirement against labels, or nothing if it does not parse."""
    if node_selector_requirements_as_selector([requirement], "")[1]:
        return False
    return _requirement_matches(requirement, values)


def _is_empty_term(term: Any) -> bool:
    return not term.match_expressions and not term.match_fields


def parse_node_selector_term(term: Any, path: str) -> tuple[list[Any] | None, list[Any] | None, list[FieldError]]:
    """``newNodeSelectorTerm``: (label requirements, field requirements, parse errors)."""
    labels, label_errors = node_selector_requirements_as_selector(term.match_expressions, f"{path}.matchExpressions")
    fields, field_errors = node_selector_requirements_as_field_selector(term.match_fields, f"{path}.matchFields")
    return labels, fields, label_errors + field_errors


def _parsed_term_matches(parsed: tuple[list[Any] | None, list[Any] | None, list[FieldError]], labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
    """``nodeSelectorTerm.match``."""
    label_requirements, field_requirements, errors = parsed
    if errors:
        return False
    if label_requirements is not None and not all(_requirement_matches(requirement, labels) for requirement in label_requirements):
        return False
    if field_requirements is not None and fields:
        for requirement in field_requirements:
            value = fields.get(requirement.key, "")
            if (value == requirement.values[0]) != (requirement.operator == "In"):
                return False
    return True


def _node_fields(node_name: str) -> dict[str, str]:
    """``extractNodeFields``: ``metadata.name`` when the node has one."""
    return {"metadata.name": node_name} if node_name else {}


def node_selector_term_matches(term: Any, node_name: str, labels: Mapping[str, str]) -> bool:
    """A term ANDs its label expressions and its fields; an empty term, or one that does not
    parse, matches nothing."""
    if _is_empty_term(term):
        return False
    return _parsed_term_matches(parse_node_selector_term(term, ""), labels, _node_fields(node_name))


def new_node_selector_errors(selector: Any) -> list[FieldError]:
    """``NewNodeSelector``'s errors (empty terms are skipped)."""
    errors: list[FieldError] = []
    for index, term in enumerate(selector.node_selector_terms):
        if not _is_empty_term(term):
            errors.extend(parse_node_selector_term(term, f"nodeSelectorTerms[{index}]")[2])
    return errors


def node_selector_matches(selector: Any, node_name: str, labels: Mapping[str, str]) -> bool:
    """``LazyErrorNodeSelector.Match``: one of its terms matches (None matches every node)."""
    if selector is None:
        return True
    fields = _node_fields(node_name)
    return any(_parsed_term_matches(parse_node_selector_term(term, ""), labels, fields) for term in selector.node_selector_terms if not _is_empty_term(term))


def preferred_scheduling_terms_score(terms: Any, node_name: str, labels: Mapping[str, str]) -> tuple[int, list[FieldError]]:
    """``NewPreferredSchedulingTerms`` then ``Score``: the weights of the terms the node
    matches; terms with weight 0 or empty are skipped, even when they would not parse."""
    errors: list[FieldError] = []
    parsed = []
    for index, term in enumerate(terms):
        if term.weight == 0 or _is_empty_term(term.preference):
            continue
        one = parse_node_selector_term(term.preference, f"[{index}]")
        if one[2]:
            errors.extend(one[2])
        else:
            parsed.append((term.weight, one))
    if errors:
        return 0, errors
    fields = _node_fields(node_name)
    return sum(weight for weight, one in parsed if _parsed_term_matches(one, labels, fields)), []


def pod_fits_node_affinity(spec: Any, node: Any) -> bool:
    """``GetRequiredNodeAffinity(pod).Match(node)``: ``nodeSelector`` and the required terms."""
    labels = node.metadata.labels
    for key, value in spec.node_selector.items():
        if labels.get(key) != value:
            return False
    affinity = spec.affinity
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if affinity is not None and affinity.node_affinity is not None else None
    return node_selector_matches(required, node.metadata.name, labels)


__all__ += ["new_node_selector_errors", "node_selector_requirements_as_field_selector", "node_selector_requirements_as_selector", "parse_node_selector_term",
            "preferred_scheduling_terms_score"]
__all__ += ["find_untolerated_taint", "node_selector_matches", "node_selector_term_matches", "pod_fits_node_affinity", "toleration_tolerates_taint"]


# =========================================================================== StatefulSet and DaemonSet rules
# Shared by the controllers and the checkers (typed objects or their JSON).

_ORDINAL = re.compile(r"(.*)-([0-9]+)$")


def stateful_pod_ordinal(set_name: str, pod_name: str) -> int | None:
    """``getParentNameAndOrdinal``: the ordinal if ``pod_name`` is ``<set_name>-<n>``."""
    match = _ORDINAL.fullmatch(pod_name)
    if match is None or match.group(1) != set_name:
        return None
    return int(match.group(2))


def stateful_claim_name(template: str, set_name: str, ordinal: int) -> str:
    """``getPersistentVolumeClaimName``: ``<template>-<set>-<ordinal>``."""
    return f"{template}-{set_name}-{ordinal}"


#: ``AddOrUpdateDaemonPodTolerations`` (``pkg/controller/daemon/util/daemonset_util.go``):
#: (key, effect), operator Exists, no tolerationSeconds; network-unavailable for hostNetwork.
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)


def daemon_tolerations(tolerations: Any, host_network: bool) -> list[Any]:
    """``AddOrUpdateDaemonPodTolerations``: the daemon tolerations (Exists, no seconds)
    replace any of the same key and effect."""
    from chaoskube.api.objects import Toleration

    wanted = list(DAEMON_TOLERATIONS)
    if host_network:
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    result = [t for t in tolerations if (t.key, t.effect) not in set(wanted)]
    result.extend(Toleration(key=key, operator="Exists", effect=effect) for key, effect in wanted)
    return result


def _typed(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        from chaoskube.api.manifests import from_dict

        return from_dict(dict(obj))
    return obj


def node_should_run_daemon_pod(node: Any, ds: Any) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run, should continue running) for a Node and a
    DaemonSet, typed or as their JSON. The pod's ``nodeName`` (if set) must be the node, its
    node selector and required affinity must match, and no NoSchedule or NoExecute taint may
    go untolerated (with the daemon tolerations); an untolerated NoSchedule taint still lets
    a running pod stay."""
    import msgspec

    from chaoskube.api.objects import Pod

    node, ds = _typed(node), _typed(ds)
    spec = ds.spec.template.spec
    if spec.node_name and spec.node_name != node.metadata.name:
        return False, False
    probe = Pod(spec=msgspec.structs.replace(spec, tolerations=daemon_tolerations(spec.tolerations, spec.host_network)))
    if not pod_fits_node_affinity(probe.spec, node):
        return False, False
    taints = node.spec.taints
    if find_untolerated_taint(taints, probe.spec.tolerations, ("NoExecute",)) is not None:
        return False, False
    if find_untolerated_taint(taints, probe.spec.tolerations, ("NoSchedule",)) is not None:
        return False, True
    return True, True


def daemon_pod_node(pod: Any) -> str:
    """The node a daemon pod runs on or is pinned to by its required affinity
    (``metadata.name In [node]``), typed or JSON; "" if neither."""
    if isinstance(pod, Mapping):
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            return str(spec["nodeName"])
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        fields = [(r.get("key"), r.get("operator"), r.get("values") or []) for term in terms for r in term.get("matchFields") or []]
    else:
        if pod.spec.node_name:
            return pod.spec.node_name
        affinity = pod.spec.affinity
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution if affinity is not None and affinity.node_affinity is not None else None
        terms = required.node_selector_terms if required is not None else []
        fields = [(r.key, r.operator, r.values) for term in terms for r in term.match_fields]
    for key, operator, values in fields:
        if key == "metadata.name" and operator == "In" and len(values) == 1:
            return str(values[0])
    return ""


__all__ += ["DAEMON_TOLERATIONS", "daemon_pod_node", "daemon_tolerations", "node_should_run_daemon_pod", "stateful_claim_name", "stateful_pod_ordinal"]

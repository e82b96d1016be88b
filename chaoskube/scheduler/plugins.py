"""The default kube-scheduler plugins, each at the extension points it implements upstream.

Filter order and score weights are the default profile's
(``pkg/scheduler/apis/config/v1/default_plugins.go``): NodeUnschedulable, NodeName,
TaintToleration (weight 3), NodeAffinity (2), NodeResourcesFit (1), VolumeBinding, VolumeZone
(both in :mod:`chaoskube.scheduler.volumebinding`), PodTopologySpread (2),
InterPodAffinity (filter only here), DefaultPreemption (PostFilter, in
:mod:`chaoskube.scheduler.preemption`), NodeResourcesBalancedAllocation (1), DefaultBinder.
Each plugin cites its source file under ``pkg/scheduler/framework/plugins/``; reasons are
upstream's strings, word for word, because they make up the FailedScheduling message.

Contract: every method is pure except :meth:`DefaultBinder.bind` (one API call). Plugins
read the pod and the :class:`~chaoskube.scheduler.framework.NodeInfo` they are given and
keep per-cycle data only in the :class:`~chaoskube.scheduler.framework.CycleState`.

Not modelled: NodePorts, the volume plugins but VolumeBinding and VolumeZone (VolumeRestrictions,
NodeVolumeLimits), ImageLocality, InterPodAffinity scoring
(preferred terms), PodTopologySpread's system default constraints (``defaultConstraints``
with selectors from Services and ReplicaSets), NodeAffinity's ``addedAffinity`` args and
PreFilterResult narrowing. Taint-toleration comparison operators (Gt/Lt) follow upstream's
alpha gate, off: :data:`chaoskube.api.workloads.TAINT_TOLERATION_COMPARISON_OPERATORS`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.objects import LabelSelector, Node, NodeSelectorTerm, Pod, Taint, Toleration, matches
from chaoskube.api.workloads import pod_fits_node_affinity
from chaoskube.api.workloads import node_selector_term_matches as workload_term_matches
from chaoskube.api.workloads import toleration_tolerates_taint as workload_tolerates
from chaoskube.client.client import ApiError
from chaoskube.scheduler.framework import (
    LABEL_HOSTNAME,
    MAX_NODE_SCORE,
    SUCCESS,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    NodeInfo,
    PodInfo,
    Snapshot,
    Status,
    count_pods_match_selector,
    default_normalize_score,
    selector_key,
)
from chaoskube.scheduler.preemption import DefaultPreemption
from chaoskube.scheduler.volumebinding import VolumeBinding, VolumeZone

__all__ = [
    "DefaultBinder",
    "InsufficientResource",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "SpreadConstraint",
    "TaintToleration",
    "balanced_resource_score",
    "count_pods_match_selector",
    "default_plugins",
    "find_matching_untolerated_taint",
    "fits_request",
    "least_requested_score",
    "node_selector_term_matches",
    "required_node_affinity_matches",
    "spread_constraints",
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
]

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHEDULABLE = Code.UNSCHEDULABLE
SKIP = Status(Code.SKIP)
#: ``v1.TaintNodeUnschedulable``.
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def _node_event(action: ActionType) -> ClusterEvent:
    return ClusterEvent(EventResource.NODE, action)


def _assigned_pod_event(action: ActionType) -> ClusterEvent:
    return ClusterEvent(EventResource.ASSIGNED_POD, action)


# =========================================================================== taints and tolerations
def toleration_tolerates_taint(toleration: Toleration, taint: Taint) -> bool:
    """``Toleration.ToleratesTaint``: :func:`chaoskube.api.workloads.toleration_tolerates_taint`."""
    return workload_tolerates(toleration, taint)


def tolerations_tolerate_taint(tolerations: Sequence[Toleration], taint: Taint) -> bool:
    return any(toleration_tolerates_taint(toleration, taint) for toleration in tolerations)


def _do_not_schedule(taint: Taint) -> bool:
    """``helper.DoNotScheduleTaintsFilterFunc``: NoSchedule and NoExecute taints."""
    return taint.effect in ("NoSchedule", "NoExecute")


def find_matching_untolerated_taint(taints: Sequence[Taint], tolerations: Sequence[Toleration], inclusion: Any = _do_not_schedule) -> Taint | None:
    """``FindMatchingUntoleratedTaint``: the first taint (of those ``inclusion`` keeps)
    that no toleration tolerates."""
    for taint in taints:
        if inclusion(taint) and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


class NodeUnschedulable:
    """``nodeunschedulable/node_unschedulable.go``: a cordoned node (``spec.unschedulable``)
    takes only pods tolerating ``node.kubernetes.io/unschedulable:NoSchedule``."""

    name = "NodeUnschedulable"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.of(UNRESOLVABLE, "node(s) had unknown conditions")
        if not node.spec.unschedulable:
            return SUCCESS
        if tolerations_tolerate_taint(pod.spec.tolerations, Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")):
            return SUCCESS
        return Status.of(UNRESOLVABLE, "node(s) were unschedulable")

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (_node_event(ActionType.ADD | ActionType.UPDATE_NODE_TAINT),)


class NodeName:
    """``nodename/node_name.go``: a pod that names a node fits only there."""

    name = "NodeName"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if pod.spec.node_name and pod.spec.node_name != node_info.name:
            return Status.of(UNRESOLVABLE, "node(s) didn't match the requested node name")
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (_node_event(ActionType.ADD | ActionType.update()),)


class _TolerationsState:
    def __init__(self, tolerations: list[Toleration]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _TolerationsState:
        return self


class TaintToleration:
    """``tainttoleration/taint_toleration.go``. Filter: the first untolerated NoSchedule
    or NoExecute taint rejects, UnschedulableAndUnresolvable, "node(s) had untolerated
    taint {key: value}". Score: the number of PreferNoSchedule taints not tolerated by the
    pod's PreferNoSchedule (or effect-less) tolerations, normalized in reverse."""

    name = "TaintToleration"
    _key = "PreScoreTaintToleration"

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        node = node_info.node
        assert node is not None
        taint = find_matching_untolerated_taint(node.spec.taints, pod.spec.tolerations)
        if taint is None:
            return SUCCESS
        return Status.of(UNRESOLVABLE, f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        prefer = [t for t in pod.spec.tolerations if not t.effect or t.effect == "PreferNoSchedule"]
        state.write(self._key, _TolerationsState(prefer))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        saved = state.read(self._key)
        tolerations = saved.tolerations if saved is not None else pod.spec.tolerations
        node = node_info.node
        assert node is not None
        count = sum(
            1 for taint in node.spec.taints
            if taint.effect == "PreferNoSchedule" and not tolerations_tolerate_taint(tolerations, taint)
        )
        return count, SUCCESS

    def normalize_score(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> Status:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (_node_event(ActionType.ADD | ActionType.UPDATE_NODE_TAINT),)


# =========================================================================== node affinity
def node_selector_term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """A term ANDs its expressions (on labels) and fields; an empty term, or one that does
    not parse, matches nothing (:func:`chaoskube.api.workloads.node_selector_term_matches`)."""
    return workload_term_matches(term, node.metadata.name, node.metadata.labels)


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: every ``nodeSelector``
    pair, and (if any) one of the required affinity terms."""
    return pod_fits_node_affinity(pod.spec, node)


class NodeAffinity:
    """``nodeaffinity/node_affinity.go``. Filter: ``nodeSelector`` and the required terms,
    UnschedulableAndUnresolvable "node(s) didn't match Pod's node affinity/selector".
    Score: the sum of the weights of the preferred terms the node matches, normalized
    (``DefaultNormalizeScore``, not reversed). PreFilter / PreScore answer Skip when the
    pod has nothing to check."""

    name = "NodeAffinity"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        affinity = pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity is not None else None
        if not pod.spec.node_selector and (node_affinity is None or node_affinity.required_during_scheduling_ignored_during_execution is None):
            return SKIP
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        node = node_info.node
        assert node is not None
        if required_node_affinity_matches(pod, node):
            return SUCCESS
        return Status.of(UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector")

    @staticmethod
    def _preferred(pod: Pod) -> list[Any]:
        affinity = pod.spec.affinity
        node_affinity = affinity.node_affinity if affinity is not None else None
        return list(node_affinity.preferred_during_scheduling_ignored_during_execution) if node_affinity is not None else []

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        return SUCCESS if self._preferred(pod) else SKIP

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        node = node_info.node
        assert node is not None
        total = sum(term.weight for term in self._preferred(pod) if term.weight and node_selector_term_matches(term.preference, node))
        return total, SUCCESS

    def normalize_score(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> Status:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (_node_event(ActionType.ADD | ActionType.UPDATE_NODE_LABEL),)


# =========================================================================== resources
@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """``noderesources.InsufficientResource``; ``unresolvable``: the pod asks for more
    than the node's whole allocatable, so preemption cannot help."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def fits_request(pod_request: PodInfo, node_info: NodeInfo) -> list[InsufficientResource]:
    """``fitsRequest`` (``noderesources/fit.go``): pod slots, then CPU, memory,
    ephemeral-storage and extended resources (``Insufficient nvidia.com/gpu``) against
    allocatable minus what the node's pods (assumed ones too) request."""
    insufficient: list[InsufficientResource] = []
    allowed = node_info.allocatable.allowed_pod_number
    if len(node_info.pods) + 1 > allowed:
        insufficient.append(InsufficientResource("pods", "Too many pods", 1, len(node_info.pods), allowed))
    request = pod_request.requests
    if request.milli_cpu == 0 and request.memory == 0 and not request.scalar:
        return insufficient
    allocatable, requested = node_info.allocatable, node_info.requested
    if request.milli_cpu > 0 and request.milli_cpu > allocatable.milli_cpu - requested.milli_cpu:
        insufficient.append(InsufficientResource(
            "cpu", "Insufficient cpu", request.milli_cpu, requested.milli_cpu, allocatable.milli_cpu,
            unresolvable=request.milli_cpu > allocatable.milli_cpu,
        ))
    if request.memory > 0 and request.memory > allocatable.memory - requested.memory:
        insufficient.append(InsufficientResource(
            "memory", "Insufficient memory", request.memory, requested.memory, allocatable.memory,
            unresolvable=request.memory > allocatable.memory,
        ))
    # ephemeral-storage and the scalar (extended) resources, in name order
    for name, want in sorted((request.scalar or {}).items()):
        if want == 0:
            continue
        capacity = (allocatable.scalar or {}).get(name, 0)
        used = (requested.scalar or {}).get(name, 0)
        if want > capacity - used:
            insufficient.append(InsufficientResource(name, f"Insufficient {name}", want, used, capacity, unresolvable=want > capacity))
    return insufficient


def least_requested_score(requested: int, capacity: int) -> int:
    """``leastRequestedScore``: the unused share of ``capacity``, 0..100 (integer)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: ``(1 - std) * 100`` of the requested fractions (each
    capped at 1; resources with no allocatable skipped); for two resources the standard
    deviation is ``|f1 - f2| / 2``."""
    fractions = [min(1.0, r / a) for r, a in zip(requested, allocatable) if a != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


class NodeResourcesFit:
    """``noderesources/fit.go`` with the default LeastAllocated scoring strategy (cpu and
    memory, weight 1 each; ``least_allocated.go``). Filter reasons: "Too many pods",
    "Insufficient cpu", "Insufficient memory" (all of them at once, as one status);
    UnschedulableAndUnresolvable when a request exceeds the node's whole allocatable.
    Scoring counts containers without requests as 100m / 200 MiB (``NonZeroRequested``)."""

    name = "NodeResourcesFit"
    #: ScoringStrategy LeastAllocated's default resources: (name, weight).
    resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        insufficient = fits_request(state.pod_info(pod), node_info)
        if not insufficient:
            return SUCCESS
        code = UNRESOLVABLE if any(item.unresolvable for item in insufficient) else UNSCHEDULABLE
        return Status(code, tuple(item.reason for item in insufficient))

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        request = state.pod_info(pod).non_zero_requests
        used = node_info.non_zero_requested
        values = {
            "cpu": (used.milli_cpu + request.milli_cpu, node_info.allocatable.milli_cpu),
            "memory": (used.memory + request.memory, node_info.allocatable.memory),
        }
        total = weights = 0
        for resource, weight in self.resources:
            requested, capacity = values[resource]
            total += least_requested_score(requested, capacity) * weight
            weights += weight
        return (total // weights if weights else 0), SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            _assigned_pod_event(ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
            _node_event(ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        )


class NodeResourcesBalancedAllocation:
    """``noderesources/balanced_allocation.go``: favours nodes whose CPU and memory would
    be used in equal shares, from actual requests (``useRequested``); PreScore answers
    Skip for a best-effort pod (no requests at all)."""

    name = "NodeResourcesBalancedAllocation"

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        request = state.pod_info(pod).requests
        return SKIP if request.milli_cpu == 0 and request.memory == 0 else SUCCESS

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        request = state.pod_info(pod).requests
        used, allocatable = node_info.requested, node_info.allocatable
        score = balanced_resource_score(
            (used.milli_cpu + request.milli_cpu, used.memory + request.memory),
            (allocatable.milli_cpu, allocatable.memory),
        )
        return score, SUCCESS


# =========================================================================== topology spread
#: ``systemDefaultConstraints`` (``podtopologyspread/plugin.go``): (maxSkew, topologyKey), ScheduleAnyway.
SYSTEM_DEFAULT_SPREAD = ((3, LABEL_HOSTNAME), (5, "topology.kubernetes.io/zone"))


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """``topologySpreadConstraint``: one constraint with its defaults applied
    (minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore; ``common.go``)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    #: ``selector_key(selector)``, computed once: every node is asked for its count.
    selector_key: tuple = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "selector_key", selector_key(self.selector))

    def includes_node(self, pod: Pod, node: Node) -> bool:
        """``matchNodeInclusionPolicies``."""
        if self.node_affinity_policy == "Honor" and not required_node_affinity_matches(pod, node):
            return False
        if self.node_taints_policy == "Honor" and find_matching_untolerated_taint(node.spec.taints, pod.spec.tolerations) is not None:
            return False
        return True


def spread_constraints(pod: Pod, action: str) -> list[SpreadConstraint]:
    """``filterTopologySpreadConstraints``: the pod's constraints with ``whenUnsatisfiable``
    == ``action``; ``matchLabelKeys`` are ANDed into the selector with the pod's values."""
    result = []
    for constraint in pod.spec.topology_spread_constraints:
        if constraint.when_unsatisfiable != action:
            continue
        selector = constraint.label_selector
        extra = {key: pod.metadata.labels[key] for key in constraint.match_label_keys if key in pod.metadata.labels}
        if extra and selector is not None:
            selector = LabelSelector(match_labels={**selector.match_labels, **extra}, match_expressions=selector.match_expressions)
        result.append(SpreadConstraint(
            max_skew=constraint.max_skew,
            topology_key=constraint.topology_key,
            selector=selector,
            min_domains=constraint.min_domains if constraint.min_domains is not None else 1,
            node_affinity_policy=constraint.node_affinity_policy or "Honor",
            node_taints_policy=constraint.node_taints_policy or "Ignore",
        ))
    return result


def _has_all_keys(labels: Any, constraints: Sequence[SpreadConstraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``."""
    return all(constraint.topology_key in labels for constraint in constraints)


@dataclass(slots=True)
class _SpreadFilterState:
    constraints: list[SpreadConstraint]
    match_num: list[dict[str, int]] = field(default_factory=list)

    def clone(self) -> _SpreadFilterState:
        return _SpreadFilterState(self.constraints, [dict(counts) for counts in self.match_num])

    def min_match_num(self, index: int) -> float:
        """``minMatchNum``: the smallest count of an eligible domain; 0 when there are
        fewer eligible domains than ``minDomains``."""
        counts = self.match_num[index]
        if len(counts) < self.constraints[index].min_domains:
            return 0
        return min(counts.values(), default=math.inf)


@dataclass(slots=True)
class _SpreadScoreState:
    constraints: list[SpreadConstraint]
    ignored_nodes: set[str]
    counts: list[dict[str, int]]
    weights: list[float]

    def clone(self) -> _SpreadScoreState:
        return self


class PodTopologySpread:
    """``podtopologyspread/{filtering,scoring}.go``.

    Filter (``whenUnsatisfiable: DoNotSchedule``): for each constraint, a node without the
    topology label is UnschedulableAndUnresolvable ("... (missing required label)"); else
    ``matching pods in the node's domain + (1 if the pod matches its own selector) - the
    global minimum`` must not exceed ``maxSkew`` (Unschedulable "node(s) didn't match pod
    topology spread constraints"). Domains and counts come from the nodes that carry every
    constraint's key and pass the inclusion policies.

    Score (``ScheduleAnyway``): per constraint ``count * log(domains + 2) + maxSkew - 1``,
    summed and rounded; normalized so the lowest count gets 100
    (``100 * (max + min - s) / max``); nodes missing a key score 0."""

    name = "PodTopologySpread"
    _filter_key = "PreFilterPodTopologySpread"
    _score_key = "PreScorePodTopologySpread"
    reason_not_match = "node(s) didn't match pod topology spread constraints"
    reason_missing_label = reason_not_match + " (missing required label)"

    # -- filtering ------------------------------------------------------------------------
    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        constraints = spread_constraints(pod, "DoNotSchedule")
        if not constraints:
            return SKIP
        spread = _SpreadFilterState(constraints, [{} for _ in constraints])
        for info in snapshot.list():
            node = info.node
            if node is None or not _has_all_keys(node.metadata.labels, constraints):
                continue
            for index, constraint in enumerate(constraints):
                if not constraint.includes_node(pod, node):
                    continue
                value = node.metadata.labels[constraint.topology_key]
                counts = spread.match_num[index]
                counts[value] = counts.get(value, 0) + info.count_matching(constraint.selector, constraint.selector_key, pod.metadata.namespace)
        state.write(self._filter_key, spread)
        return SUCCESS

    def _update_with_pod(self, state: CycleState, updated: Pod, preemptor: Pod, node_info: NodeInfo, delta: int) -> Status:
        spread: _SpreadFilterState | None = state.read(self._filter_key)
        node = node_info.node
        if spread is None or node is None or updated.metadata.namespace != preemptor.metadata.namespace:
            return SUCCESS
        if not _has_all_keys(node.metadata.labels, spread.constraints):
            return SUCCESS
        for index, constraint in enumerate(spread.constraints):
            if not matches(constraint.selector, updated.metadata.labels) or not constraint.includes_node(preemptor, node):
                continue
            value = node.metadata.labels[constraint.topology_key]
            counts = spread.match_num[index]
            counts[value] = counts.get(value, 0) + delta
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo, node_info: NodeInfo) -> Status:
        return self._update_with_pod(state, pod_to_add.pod, pod, node_info, 1)

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status:
        return self._update_with_pod(state, pod_to_remove.pod, pod, node_info, -1)

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        spread: _SpreadFilterState | None = state.read(self._filter_key)
        if spread is None or not spread.constraints:
            return SUCCESS
        labels = node_info.labels
        for index, constraint in enumerate(spread.constraints):
            if constraint.topology_key not in labels:
                return Status.of(UNRESOLVABLE, self.reason_missing_label)
            self_match = 1 if matches(constraint.selector, pod.metadata.labels) else 0
            match_num = spread.match_num[index].get(labels[constraint.topology_key], 0)
            if match_num + self_match - spread.min_match_num(index) > constraint.max_skew:
                return Status.of(UNSCHEDULABLE, self.reason_not_match)
        return SUCCESS

    # -- system defaults ------------------------------------------------------------------
    framework: Any = None

    def attach(self, framework: Any) -> None:
        self.framework = framework

    def _system_default_constraints(self, pod: Pod) -> list[SpreadConstraint]:
        """``buildDefaultConstraints`` with ``defaultingType: System``: for a pod with no
        constraints of its own, ``maxSkew`` 3 over hostnames and 5 over zones, both
        ScheduleAnyway, selecting what ``helper.DefaultSelector`` gives (the selectors of
        the Services, ReplicationController, ReplicaSet or StatefulSet that select it); no
        constraints when that selector is empty."""
        handle = getattr(self.framework, "handle", None)
        selector_of = getattr(handle, "default_selector", None)
        selector = selector_of(pod) if selector_of is not None else None
        if selector is None:
            return []
        return [SpreadConstraint(max_skew=skew, topology_key=key, selector=selector) for skew, key in SYSTEM_DEFAULT_SPREAD]

    # -- scoring --------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        # The scorer also needs every node of the cluster, not only the feasible ones.
        snapshot = state.snapshot
        constraints = spread_constraints(pod, "ScheduleAnyway")
        require_all_topologies = True
        if not pod.spec.topology_spread_constraints:
            constraints = self._system_default_constraints(pod)
            require_all_topologies = False  # system defaults also score nodes lacking a key
        if not constraints or snapshot is None:
            return SKIP
        ignored: set[str] = set()
        counts: list[dict[str, int]] = [{} for _ in constraints]
        sizes = [0] * len(constraints)
        for info in nodes:
            if require_all_topologies and not _has_all_keys(info.labels, constraints):
                ignored.add(info.name)
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key == LABEL_HOSTNAME:
                    continue
                value = info.labels.get(constraint.topology_key, "")
                if value not in counts[index]:
                    counts[index][value] = 0
                    sizes[index] += 1
        weights = []
        for index, constraint in enumerate(constraints):
            size = len(nodes) - len(ignored) if constraint.topology_key == LABEL_HOSTNAME else sizes[index]
            weights.append(math.log(size + 2))  # topologyNormalizingWeight
        for info in snapshot.list():
            node = info.node
            if node is None or (require_all_topologies and not _has_all_keys(node.metadata.labels, constraints)):
                continue
            for index, constraint in enumerate(constraints):
                if not constraint.includes_node(pod, node):
                    continue
                value = node.metadata.labels.get(constraint.topology_key, "")
                if value not in counts[index]:
                    continue
                counts[index][value] += info.count_matching(constraint.selector, constraint.selector_key, pod.metadata.namespace)
        state.write(self._score_key, _SpreadScoreState(constraints, ignored, counts, weights))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]:
        spread: _SpreadScoreState | None = state.read(self._score_key)
        if spread is None or node_info.name in spread.ignored_nodes:
            return 0, SUCCESS
        labels = node_info.labels
        score = 0.0
        for index, constraint in enumerate(spread.constraints):
            if constraint.topology_key not in labels:
                continue
            if constraint.topology_key == LABEL_HOSTNAME:
                count = node_info.count_matching(constraint.selector, constraint.selector_key, pod.metadata.namespace)
            else:
                count = spread.counts[index][labels[constraint.topology_key]]
            score += count * spread.weights[index] + (constraint.max_skew - 1)  # scoreForCount
        return math.floor(score + 0.5), SUCCESS  # Go's math.Round for non-negative values

    def normalize_score(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> Status:
        spread: _SpreadScoreState | None = state.read(self._score_key)
        if spread is None:
            return SUCCESS
        considered = [score for name, score in scores.items() if name not in spread.ignored_nodes]
        lowest, highest = min(considered, default=0), max(considered, default=0)
        for name, score in scores.items():
            if name in spread.ignored_nodes:
                scores[name] = 0
            elif highest == 0:
                scores[name] = MAX_NODE_SCORE
            else:
                scores[name] = MAX_NODE_SCORE * (highest + lowest - score) // highest
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            _assigned_pod_event(ActionType.all()),
            _node_event(ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
        )


# =========================================================================== inter-pod affinity
Pair = tuple[str, str]


def _bump(counts: dict[Pair, int], node: Node, topology_key: str, delta: int) -> None:
    """``topologyToMatchedTermCount.update``: entries that reach zero are dropped."""
    value = node.metadata.labels.get(topology_key)
    if value is None:
        return
    pair = (topology_key, value)
    counts[pair] = counts.get(pair, 0) + delta
    if counts[pair] == 0:
        del counts[pair]


@dataclass(slots=True)
class _AffinityState:
    pod_info: PodInfo
    namespace_labels: Any
    existing_anti_affinity: dict[Pair, int] = field(default_factory=dict)
    affinity: dict[Pair, int] = field(default_factory=dict)
    anti_affinity: dict[Pair, int] = field(default_factory=dict)

    def clone(self) -> _AffinityState:
        return _AffinityState(self.pod_info, self.namespace_labels, dict(self.existing_anti_affinity), dict(self.affinity), dict(self.anti_affinity))

    def update_with_pod(self, other: PodInfo, node: Node, delta: int) -> None:
        """``preFilterState.updateWithPod``."""
        incoming = self.pod_info
        for term in other.required_anti_affinity_terms:
            if term.matches(incoming.pod, self.namespace_labels):
                _bump(self.existing_anti_affinity, node, term.topology_key, delta)
        terms = incoming.required_affinity_terms
        if terms and all(term.matches(other.pod, self.namespace_labels) for term in terms):
            for term in terms:
                _bump(self.affinity, node, term.topology_key, delta)
        for term in incoming.required_anti_affinity_terms:
            if term.matches(other.pod, self.namespace_labels):
                _bump(self.anti_affinity, node, term.topology_key, delta)


class InterPodAffinity:
    """``interpodaffinity/filtering.go`` (required terms; scoring not modelled).

    Filter, in upstream's order: the pod's required affinity (every term's topology
    domain on the node must hold a pod matching all the terms; a pod that matches its own
    terms may go first when no pod anywhere matches) — UnschedulableAndUnresolvable
    "node(s) didn't match pod affinity rules"; the pod's required anti-affinity —
    Unschedulable "node(s) didn't match pod anti-affinity rules"; existing pods'
    required anti-affinity against this pod — Unschedulable "node(s) didn't satisfy
    existing pods anti-affinity rules"."""

    name = "InterPodAffinity"
    _key = "PreFilterInterPodAffinity"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        incoming = state.pod_info(pod)
        with_anti = [info for info in snapshot.list() if info.node is not None and info.pods_with_required_anti_affinity()]
        if not with_anti and not incoming.required_affinity_terms and not incoming.required_anti_affinity_terms:
            return SKIP
        affinity_state = _AffinityState(incoming, snapshot.namespace_labels)
        for info in with_anti:
            assert info.node is not None
            for existing in info.pods_with_required_anti_affinity():
                for term in existing.required_anti_affinity_terms:
                    if term.matches(pod, snapshot.namespace_labels):
                        _bump(affinity_state.existing_anti_affinity, info.node, term.topology_key, 1)
        if incoming.required_affinity_terms or incoming.required_anti_affinity_terms:
            for info in snapshot.list():
                if info.node is None:
                    continue
                for existing in info.pods:
                    terms = incoming.required_affinity_terms
                    if terms and all(term.matches(existing.pod, snapshot.namespace_labels) for term in terms):
                        for term in terms:
                            _bump(affinity_state.affinity, info.node, term.topology_key, 1)
                    for term in incoming.required_anti_affinity_terms:
                        if term.matches(existing.pod, snapshot.namespace_labels):
                            _bump(affinity_state.anti_affinity, info.node, term.topology_key, 1)
        state.write(self._key, affinity_state)
        return SUCCESS

    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo, node_info: NodeInfo) -> Status:
        affinity_state: _AffinityState | None = state.read(self._key)
        if affinity_state is not None and node_info.node is not None:
            affinity_state.update_with_pod(pod_to_add, node_info.node, 1)
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status:
        affinity_state: _AffinityState | None = state.read(self._key)
        if affinity_state is not None and node_info.node is not None:
            affinity_state.update_with_pod(pod_to_remove, node_info.node, -1)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        affinity_state: _AffinityState | None = state.read(self._key)
        if affinity_state is None:
            return SUCCESS
        labels = node_info.labels
        if not self._satisfies_pod_affinity(affinity_state, labels):
            return Status.of(UNRESOLVABLE, "node(s) didn't match pod affinity rules")
        for term in affinity_state.pod_info.required_anti_affinity_terms:
            value = labels.get(term.topology_key)
            if value is not None and affinity_state.anti_affinity.get((term.topology_key, value), 0) > 0:
                return Status.of(UNSCHEDULABLE, "node(s) didn't match pod anti-affinity rules")
        if any(affinity_state.existing_anti_affinity.get((key, value), 0) > 0 for key, value in labels.items()):
            return Status.of(UNSCHEDULABLE, "node(s) didn't satisfy existing pods anti-affinity rules")
        return SUCCESS

    @staticmethod
    def _satisfies_pod_affinity(affinity_state: _AffinityState, labels: Any) -> bool:
        """``satisfyPodAffinity``."""
        terms = affinity_state.pod_info.required_affinity_terms
        pods_exist = True
        for term in terms:
            value = labels.get(term.topology_key)
            if value is None:
                return False  # every topology label must exist on the node
            if affinity_state.affinity.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        pod = affinity_state.pod_info.pod
        return not affinity_state.affinity and all(term.matches(pod, affinity_state.namespace_labels) for term in terms)

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            _assigned_pod_event(ActionType.all()),
            _node_event(ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        )


# =========================================================================== binding
class DefaultBinder:
    """``defaultbinder/default_binder.go``: POST the Binding (``pods/<name>/binding``)."""

    name = "DefaultBinder"

    def __init__(self, client: Any) -> None:
        self.client = client

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        try:
            await self.client.bind(pod.metadata.namespace, pod.metadata.name, node_name)
        except ApiError as error:
            return Status.error(str(error))
        return SUCCESS


# =========================================================================== the default profile
def default_plugins(client: Any) -> list[tuple[Any, int]]:
    """The default profile's plugins that are modelled, in upstream's order, with their
    score weights (``getDefaultPlugins``, ``apis/config/v1/default_plugins.go``; a weight
    only matters for score plugins)."""
    return [
        (NodeUnschedulable(), 0),
        (NodeName(), 0),
        (TaintToleration(), 3),
        (NodeAffinity(), 2),
        (NodeResourcesFit(), 1),
        (VolumeBinding(), 0),
        (VolumeZone(), 0),
        (PodTopologySpread(), 2),
        (InterPodAffinity(), 2),
        (DefaultPreemption(), 0),
        (NodeResourcesBalancedAllocation(), 1),
        (DefaultBinder(client), 0),
    ]

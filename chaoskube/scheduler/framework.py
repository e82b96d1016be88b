"""The kube-scheduler framework: statuses, cluster events, the scheduler's cache and
snapshot, the extension-point protocols, and one scheduling attempt as a pure function.

Upstream: ``pkg/scheduler/framework/interface.go`` (extension points, ``Code``,
``Status``), ``framework/types.go`` (``NodeInfo``, ``PodInfo``, ``FitError``,
``ClusterEvent``), ``framework/runtime/framework.go`` (``RunFilterPluginsWithNominatedPods``,
``RunScorePlugins``), ``backend/cache/cache.go`` and ``node_tree.go`` (formerly
``internal/cache``; assumed pods, the zone-interleaved node order) and ``schedule_one.go``
(``schedulePod``, ``findNodesThatFitPod``, ``numFeasibleNodesToFind``, ``selectHost``).

Contract:

- Everything here is pure: no awaits except :meth:`Framework.run_bind_plugins`, no clock
  (callers pass ``now``), no global randomness (callers pass a ``random.Random``).
  Iteration order never depends on set or hash order: nodes are listed in the node tree's
  order (zones by name, interleaved; nodes by name within a zone), pods in the order
  they were added to a node.
- :class:`Status` codes are a closed set: SUCCESS, ERROR, UNSCHEDULABLE,
  UNSCHEDULABLE_AND_UNRESOLVABLE and SKIP (upstream's ``Skip``, which PreFilter and
  PreScore plugins answer to say "nothing to do for this pod"). ``Wait`` and ``Pending``
  (Permit plugins, scheduling gates) are not modelled.
- :class:`SchedulerCache` counts assumed pods exactly like bound ones; ``forget_pod`` of
  a pod that is not assumed is refused (:class:`CacheError`), as upstream's ``ForgetPod``;
  assumed pods never expire (``durationToExpireAssumedPod`` is 0 in current releases).
- :func:`schedule_pod` is ``schedulePod``: PreFilter, the nominated node first, then
  Filter over the nodes from ``next_start_index`` until ``num_feasible_nodes_to_find``
  feasible nodes are found, PreScore/Score/NormalizeScore with plugin weights, and the
  seeded tie break of ``selectHost``. It raises :class:`FitError`, whose ``str`` is
  Kubernetes' FailedScheduling message, when no node fits.

Non-guarantees: no Permit, PostBind or PreEnqueue extension points; no
PreFilterResult narrowing of the node list; no extenders; no parallelism (plugins run one
node after another, so a run is deterministic without locks).
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chaoskube.api.objects import LabelSelector, Node, Pod, PodAffinityTerm, matches, parse_quantity

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "ActionType",
    "AffinityTerm",
    "BindPlugin",
    "CacheError",
    "ClusterEvent",
    "Code",
    "Cursor",
    "CycleState",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "Diagnosis",
    "EnqueueExtensions",
    "EventResource",
    "FilterPlugin",
    "FitError",
    "Framework",
    "FrameworkError",
    "Handle",
    "LABEL_HOSTNAME",
    "LABEL_ZONE",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "NODE_ADD",
    "NODE_DELETE",
    "NoNodesAvailable",
    "NodeInfo",
    "NodeToStatus",
    "NominatingInfo",
    "PodInfo",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreScorePlugin",
    "ReservePlugin",
    "Resource",
    "ScheduleResult",
    "SchedulerCache",
    "ScoreExtensions",
    "ScorePlugin",
    "Snapshot",
    "StateData",
    "Status",
    "UNSCHEDULABLE_TIMEOUT",
    "assigned_pod_update_event",
    "default_normalize_score",
    "find_nodes_that_pass_filters",
    "node_tree_order",
    "node_update_event",
    "num_feasible_nodes_to_find",
    "pod_key",
    "pod_priority",
    "pod_requests",
    "reasons_histogram",
    "schedule_pod",
    "select_host",
]

#: ``framework.MaxNodeScore`` / ``MinNodeScore`` (interface.go).
MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
#: ``schedutil.DefaultMilliCPURequest`` / ``DefaultMemoryRequest`` (pkg/scheduler/util):
#: what a container without a request counts for in LeastAllocated scoring.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
#: schedule_one.go: below this many nodes every node is evaluated; the adaptive
#: percentage never goes under 5 %.
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
#: ``v1.LabelHostname`` / ``v1.LabelTopologyZone``.
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"


# =========================================================================== statuses
class Code(enum.Enum):
    """``framework.Code``, the closed set this model uses (module docstring)."""

    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    SKIP = "Skip"


@dataclass(frozen=True, slots=True)
class Status:
    """``framework.Status``: a code, the reasons (each one a line of the FailedScheduling
    histogram) and the plugin that answered it."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def of(cls, code: Code, *reasons: str) -> Status:
        return cls(code, tuple(reasons))

    @classmethod
    def error(cls, message: str) -> Status:
        return cls(Code.ERROR, (message,))

    def is_success(self) -> bool:
        return self.code is Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code is Code.SKIP

    def is_rejected(self) -> bool:
        """Unschedulable or UnschedulableAndUnresolvable (``Status.IsRejected``)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def message(self) -> str:
        """``Status.Message``: the reasons joined by ", "."""
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()


# =========================================================================== cluster events
class ActionType(enum.Flag):
    """``framework.ActionType`` (the subset this model raises)."""

    ADD = enum.auto()
    DELETE = enum.auto()
    UPDATE_NODE_ALLOCATABLE = enum.auto()
    UPDATE_NODE_LABEL = enum.auto()
    UPDATE_NODE_TAINT = enum.auto()
    UPDATE_NODE_CONDITION = enum.auto()
    UPDATE_NODE_ANNOTATION = enum.auto()
    UPDATE_POD_LABEL = enum.auto()
    UPDATE_POD_SCALE_DOWN = enum.auto()
    UPDATE_POD_TOLERATION = enum.auto()
    UPDATE_POD_OTHER = enum.auto()

    @classmethod
    def update(cls) -> ActionType:
        """``Update``: every kind of update."""
        return (
            cls.UPDATE_NODE_ALLOCATABLE | cls.UPDATE_NODE_LABEL | cls.UPDATE_NODE_TAINT | cls.UPDATE_NODE_CONDITION
            | cls.UPDATE_NODE_ANNOTATION | cls.UPDATE_POD_LABEL | cls.UPDATE_POD_SCALE_DOWN | cls.UPDATE_POD_TOLERATION
            | cls.UPDATE_POD_OTHER
        )

    @classmethod
    def all(cls) -> ActionType:
        return cls.ADD | cls.DELETE | cls.update()


class EventResource(enum.Enum):
    NODE = "Node"
    PVC = "PersistentVolumeClaim"
    PV = "PersistentVolume"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    POD = "Pod"  # matches AssignedPod and UnscheduledPod
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """``framework.ClusterEvent``. ``matches(incoming)`` is ``MatchClusterEvents``: the
    registered event (self) matches an incoming one that is the same or more specific."""

    resource: EventResource
    action: ActionType
    label: str = ""

    def is_wildcard(self) -> bool:
        return self.resource is EventResource.WILDCARD and self.action == ActionType.all()

    def matches(self, incoming: ClusterEvent) -> bool:
        if self.is_wildcard():
            return True
        resource_ok = (
            self.resource is EventResource.WILDCARD
            or self.resource is incoming.resource
            or (self.resource is EventResource.POD and incoming.resource in (EventResource.ASSIGNED_POD, EventResource.UNSCHEDULED_POD))
        )
        return resource_ok and bool(self.action & incoming.action)


#: The events the scheduler raises (``framework/events.go``).
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
#: ``EventUnschedulableTimeout`` / ``EventForceActivate``: wildcards that move every pod.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.all(), "UnschedulableTimeout")


def node_update_event(old: Node, new: Node) -> ClusterEvent | None:
    """``nodeSchedulingPropertiesChange`` (``framework/events.go``): the update event of a
    node, or None when nothing the scheduler looks at changed."""
    action = ActionType(0)
    if new.spec.unschedulable != old.spec.unschedulable or new.spec.taints != old.spec.taints:
        action |= ActionType.UPDATE_NODE_TAINT
    if new.metadata.labels != old.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if new.status.allocatable != old.status.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if [(c.type, c.status) for c in new.status.conditions] != [(c.type, c.status) for c in old.status.conditions]:
        action |= ActionType.UPDATE_NODE_CONDITION
    if new.metadata.annotations != old.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if not action:
        return None
    return ClusterEvent(EventResource.NODE, action, "NodeUpdate")


def assigned_pod_update_event(old: Pod, new: Pod) -> ClusterEvent:
    """``PodSchedulingPropertiesChange`` for an assigned pod: labels, scale down, other."""
    action = ActionType(0)
    if new.metadata.labels != old.metadata.labels:
        action |= ActionType.UPDATE_POD_LABEL
    old_cpu, old_memory = pod_requests(old)
    new_cpu, new_memory = pod_requests(new)
    if new_cpu < old_cpu or new_memory < old_memory:
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    if not action:
        action = ActionType.UPDATE_POD_OTHER
    return ClusterEvent(EventResource.ASSIGNED_POD, action, "AssignedPodUpdate")


# =========================================================================== pods and resources
def pod_key(pod: Pod) -> str:
    """``<namespace>/<name>``: the queue's and the cache's key of a pod."""
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def selector_key(selector: LabelSelector | None) -> tuple:
    """A hashable value equal for selectors with the same requirements in the same order."""
    if selector is None:
        return ()
    return (
        tuple(sorted(selector.match_labels.items())),
        tuple((requirement.key, requirement.operator, tuple(requirement.values)) for requirement in selector.match_expressions),
    )


def count_pods_match_selector(pods: Sequence[PodInfo], selector: LabelSelector | None, namespace: str) -> int:
    """``countPodsMatchSelector``: terminating pods do not count (#87621)."""
    return sum(
        1 for info in pods
        if info.pod.metadata.deletion_timestamp is None and info.pod.metadata.namespace == namespace
        and matches(selector, info.pod.metadata.labels)
    )


def pod_priority(pod: Pod) -> int:
    """``corev1helpers.PodPriority``: ``spec.priority``, 0 when unset."""
    return pod.spec.priority if pod.spec.priority is not None else 0


def _bytes(quantity: Any) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return -(-parse_quantity(quantity) // 1000)


def pod_requests(pod: Pod, *, non_zero: bool = False) -> tuple[int, int]:
    """``resourcehelper.PodRequests``: (milli-CPU, memory bytes) — the sum over containers,
    at least the largest init container, plus ``spec.overhead``. With ``non_zero``, a
    container without a CPU (memory) request counts 100m (200 MiB) (``NonMissingContainerRequests``,
    used by LeastAllocated scoring)."""

    def of(container: Any) -> tuple[int, int]:
        requests = container.resources.requests
        cpu = parse_quantity(requests["cpu"]) if "cpu" in requests else (DEFAULT_MILLI_CPU_REQUEST if non_zero else 0)
        memory = _bytes(requests["memory"]) if "memory" in requests else (DEFAULT_MEMORY_REQUEST if non_zero else 0)
        return cpu, memory

    cpu = memory = 0
    for container in pod.spec.containers:
        c, m = of(container)
        cpu, memory = cpu + c, memory + m
    for container in pod.spec.init_containers:
        c, m = of(container)
        cpu, memory = max(cpu, c), max(memory, m)
    overhead = pod.spec.overhead
    if "cpu" in overhead:
        cpu += parse_quantity(overhead["cpu"])
    if "memory" in overhead:
        memory += _bytes(overhead["memory"])
    return cpu, memory


@dataclass(slots=True)
class Resource:
    """``framework.Resource``: milli-CPU, memory bytes, (for allocatable) pod slots, and
    ``scalar``: ephemeral-storage and extended resources (``nvidia.com/gpu``, hugepages),
    in milli-units, as ``EphemeralStorage`` and ``ScalarResources``."""

    milli_cpu: int = 0
    memory: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] | None = None

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.allowed_pod_number, dict(self.scalar) if self.scalar else None)


#: Resources of a node's allocatable the scheduler does not treat as scalar resources.
_NOT_SCALAR = frozenset({"cpu", "memory", "pods"})


def node_allocatable(node: Node) -> Resource:
    allocatable = node.status.allocatable
    scalar = {name: parse_quantity(value) for name, value in allocatable.items() if name not in _NOT_SCALAR}
    return Resource(
        milli_cpu=parse_quantity(allocatable["cpu"]) if "cpu" in allocatable else 0,
        memory=_bytes(allocatable["memory"]) if "memory" in allocatable else 0,
        allowed_pod_number=_bytes(allocatable["pods"]) if "pods" in allocatable else 0,
        scalar=scalar or None,
    )


def pod_scalar_requests(pod: Pod) -> dict[str, int] | None:
    """The requests of ephemeral-storage and extended resources (milli-units), summed as
    ``PodRequests`` sums cpu and memory; None when the pod asks for none."""
    total: dict[str, int] = {}
    for container in pod.spec.containers:
        for name, value in container.resources.requests.items():
            if name not in _NOT_SCALAR:
                total[name] = total.get(name, 0) + parse_quantity(value)
    for container in pod.spec.init_containers:
        for name, value in container.resources.requests.items():
            if name not in _NOT_SCALAR:
                total[name] = max(total.get(name, 0), parse_quantity(value))
    for name, value in pod.spec.overhead.items():
        if name not in _NOT_SCALAR:
            total[name] = total.get(name, 0) + parse_quantity(value)
    return total or None


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """``framework.AffinityTerm``: a pod (anti-)affinity term with its namespaces resolved
    (``getNamespacesFromPodAffinityTerm``: none listed and no selector means the pod's own)."""

    namespaces: frozenset[str]
    selector: LabelSelector | None
    topology_key: str
    namespace_selector: LabelSelector | None

    def matches(self, pod: Pod, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        """``AffinityTerm.Matches``: the pod's namespace is selected and its labels match."""
        namespace = pod.metadata.namespace
        selected = namespace in self.namespaces or (
            self.namespace_selector is not None and matches(self.namespace_selector, namespace_labels.get(namespace, {}))
        )
        return selected and matches(self.selector, pod.metadata.labels)


def affinity_terms(pod: Pod, terms: Sequence[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
    result = []
    for term in terms:
        if not term.namespaces and term.namespace_selector is None:
            namespaces = frozenset({pod.metadata.namespace})
        else:
            namespaces = frozenset(term.namespaces)
        selector = term.label_selector
        if term.match_label_keys and selector is not None:
            # matchLabelKeys: AND the incoming pod's values of those keys into the selector.
            extra = {key: pod.metadata.labels[key] for key in term.match_label_keys if key in pod.metadata.labels}
            selector = LabelSelector(match_labels={**selector.match_labels, **extra}, match_expressions=selector.match_expressions)
        result.append(AffinityTerm(namespaces, selector, term.topology_key, term.namespace_selector))
    return tuple(result)


class PodInfo:
    """``framework.PodInfo``: a pod with what the plugins compute from it once."""

    __slots__ = ("pod", "key", "requests", "non_zero_requests", "required_affinity_terms", "required_anti_affinity_terms")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.key = pod_key(pod)
        cpu, memory = pod_requests(pod)
        self.requests = Resource(cpu, memory, scalar=pod_scalar_requests(pod))
        nz_cpu, nz_memory = pod_requests(pod, non_zero=True)
        self.non_zero_requests = Resource(nz_cpu, nz_memory)
        affinity = pod.spec.affinity
        pod_affinity = affinity.pod_affinity if affinity is not None else None
        anti = affinity.pod_anti_affinity if affinity is not None else None
        self.required_affinity_terms = affinity_terms(pod, pod_affinity.required_during_scheduling_ignored_during_execution if pod_affinity else [])
        self.required_anti_affinity_terms = affinity_terms(pod, anti.required_during_scheduling_ignored_during_execution if anti else [])

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


# =========================================================================== node info
class NodeInfo:
    """``framework.NodeInfo``: a node, the pods on it (bound and assumed) and the sums of
    their requests. ``node`` is None for a node deleted while pods still point at it."""

    __slots__ = ("node", "name", "pods", "requested", "non_zero_requested", "allocatable", "generation", "_matching", "_anti")

    def __init__(self, node: Node | None, name: str = "", generation: int = 0) -> None:
        self.node = node
        self.name = node.metadata.name if node is not None else name
        self.pods: list[PodInfo] = []
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = node_allocatable(node) if node is not None else Resource()
        self.generation = generation
        #: Derived from ``pods`` and dropped whenever they change: the counts of
        #: ``count_matching`` by (namespace, selector), and the pods with required
        #: anti-affinity. A cycle asks every node the same questions, and between two
        #: cycles only the nodes a pod was placed on or removed from change.
        self._matching: dict[tuple, int] = {}
        self._anti: list[PodInfo] | None = None

    def set_node(self, node: Node | None) -> None:
        self.node = node
        self.allocatable = node_allocatable(node) if node is not None else Resource()

    @property
    def labels(self) -> Mapping[str, str]:
        return self.node.metadata.labels if self.node is not None else {}

    def add_pod(self, info: PodInfo) -> None:
        self.pods.append(info)
        self._account(info, 1)
        self._matching, self._anti = {}, None

    def remove_pod(self, key: str) -> PodInfo | None:
        for index, info in enumerate(self.pods):
            if info.key == key:
                del self.pods[index]
                self._account(info, -1)
                self._matching, self._anti = {}, None
                return info
        return None

    def count_matching(self, selector: LabelSelector | None, key: tuple, namespace: str) -> int:
        """``countPodsMatchSelector`` over this node's pods: the pods of ``namespace`` that
        ``selector`` (whose :func:`selector_key` is ``key``) selects, terminating pods not
        counted (#87621). Remembered until the pods change."""
        if selector is None:
            return 0
        key = (namespace, key)
        count = self._matching.get(key)
        if count is None:
            count = self._matching[key] = count_pods_match_selector(self.pods, selector, namespace)
        return count

    def _account(self, info: PodInfo, sign: int) -> None:
        self.requested.milli_cpu += sign * info.requests.milli_cpu
        self.requested.memory += sign * info.requests.memory
        if info.requests.scalar:
            scalar = self.requested.scalar if self.requested.scalar is not None else {}
            for name, value in info.requests.scalar.items():
                scalar[name] = scalar.get(name, 0) + sign * value
            self.requested.scalar = scalar
        self.non_zero_requested.milli_cpu += sign * info.non_zero_requests.milli_cpu
        self.non_zero_requested.memory += sign * info.non_zero_requests.memory

    def pods_with_required_anti_affinity(self) -> list[PodInfo]:
        if self._anti is None:
            self._anti = [info for info in self.pods if info.required_anti_affinity_terms]
        return self._anti

    def clone(self) -> NodeInfo:
        """``NodeInfo.Snapshot``: shares the pods, copies the lists and the sums."""
        copy = NodeInfo.__new__(NodeInfo)
        copy.node, copy.name, copy.generation = self.node, self.name, self.generation
        copy.pods = list(self.pods)
        copy.requested = self.requested.clone()
        copy.non_zero_requested = self.non_zero_requested.clone()
        copy.allocatable = self.allocatable.clone()
        copy._matching, copy._anti = dict(self._matching), self._anti
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={[info.key for info in self.pods]})"


class FrameworkError(Exception):
    """A plugin answered Error: the attempt fails with SchedulerError (not unschedulable)."""


class CacheError(Exception):
    """A cache operation that upstream refuses with an error (assume an assumed pod,
    forget a pod that is not assumed, ...)."""


class Snapshot:
    """``cache.Snapshot``: the node infos of one scheduling cycle, in node-tree order, and
    the namespaces' labels (for affinity terms with a ``namespaceSelector``)."""

    def __init__(self, node_infos: Sequence[NodeInfo], namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.node_infos = list(node_infos)
        self._by_name = {info.name: info for info in self.node_infos}
        self.namespace_labels: Mapping[str, Mapping[str, str]] = namespace_labels or {}

    @classmethod
    def of(cls, nodes: Iterable[Node], pods: Iterable[Pod] = (), namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> Snapshot:
        """A snapshot built directly (tests): pods are placed by ``spec.nodeName``."""
        cache = SchedulerCache()
        for node in nodes:
            cache.add_node(node)
        for pod in pods:
            cache.add_pod(pod)
        return cache.snapshot(namespace_labels)

    def get(self, name: str) -> NodeInfo | None:
        return self._by_name.get(name)

    def list(self) -> list[NodeInfo]:
        return self.node_infos

    def __len__(self) -> int:
        return len(self.node_infos)


def node_tree_order(nodes: Iterable[Node]) -> list[str]:
    """``nodeTree.list``: nodes grouped by zone (``region:\\x00:zone``), taking one node from
    each zone in turn. Zones and nodes within a zone are ordered by name here (upstream
    uses insertion order, which a simulation cannot make deterministic across relists)."""
    zones: dict[str, list[str]] = {}
    for node in nodes:
        labels = node.metadata.labels
        zone = f"{labels.get(LABEL_REGION, '')}:\x00:{labels.get(LABEL_ZONE, '')}"
        zones.setdefault(zone, []).append(node.metadata.name)
    columns = [sorted(zones[zone]) for zone in sorted(zones)]
    order: list[str] = []
    for index in range(max((len(column) for column in columns), default=0)):
        order.extend(column[index] for column in columns if index < len(column))
    return order


@dataclass(slots=True)
class _PodState:
    pod: Pod
    assumed: bool
    binding_finished: bool = False


class SchedulerCache:
    """``backend/cache/cache.go``: nodes and the pods on them, bound or assumed.

    ``assume_pod`` counts a pod on its chosen node before the binding is written;
    ``add_pod`` (the informer saw it bound) confirms it; ``forget_pod`` (the binding
    failed) takes it back. Snapshots are incremental: a node info is cloned again only
    when its generation changed (``UpdateSnapshot``)."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._generation = 0
        self._snapshot: dict[str, NodeInfo] = {}
        self._order: list[str] | None = None

    # -- nodes ----------------------------------------------------------------------------
    def _bump(self, info: NodeInfo) -> None:
        self._generation += 1
        info.generation = self._generation

    def _node_info(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(None, name)
        return info

    def add_node(self, node: Node) -> None:
        info = self._node_info(node.metadata.name)
        info.set_node(node)
        self._bump(info)
        self._order = None

    def update_node(self, node: Node) -> None:
        self.add_node(node)

    def remove_node(self, name: str) -> None:
        """A node with pods stays as a ghost (no Node) until its pods are gone."""
        info = self._nodes.get(name)
        if info is None:
            return
        if info.pods:
            info.set_node(None)
            self._bump(info)
        else:
            del self._nodes[name]
        self._order = None

    def node_count(self) -> int:
        return sum(1 for info in self._nodes.values() if info.node is not None)

    # -- pods -----------------------------------------------------------------------------
    def _place(self, pod: Pod) -> None:
        info = self._node_info(pod.spec.node_name)
        info.add_pod(PodInfo(pod))
        self._bump(info)

    def _unplace(self, key: str, node_name: str) -> None:
        info = self._nodes.get(node_name)
        if info is None:
            return
        info.remove_pod(key)
        self._bump(info)
        if info.node is None and not info.pods:
            del self._nodes[node_name]
            self._order = None

    def assume_pod(self, pod: Pod) -> None:
        """``AssumePod``: ``pod`` carries the chosen ``spec.nodeName``."""
        assert pod.spec.node_name, "an assumed pod names its node"
        key = pod_key(pod)
        if key in self._pods:
            raise CacheError(f"pod {key} is in the cache, so can't be assumed")
        self._place(pod)
        self._pods[key] = _PodState(pod, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        state = self._pods.get(pod_key(pod))
        if state is not None and state.assumed:
            state.binding_finished = True

    def forget_pod(self, pod: Pod) -> None:
        """``ForgetPod``: only an assumed pod can be forgotten."""
        key = pod_key(pod)
        state = self._pods.get(key)
        if state is None or not state.assumed:
            raise CacheError(f"pod {key} wasn't assumed so cannot be forgotten")
        if state.pod.spec.node_name != pod.spec.node_name:
            raise CacheError(f"pod {key} was assumed on {state.pod.spec.node_name} but assigned to {pod.spec.node_name}")
        self._unplace(key, state.pod.spec.node_name)
        del self._pods[key]

    def is_assumed(self, pod: Pod) -> bool:
        state = self._pods.get(pod_key(pod))
        return state is not None and state.assumed

    def add_pod(self, pod: Pod) -> None:
        """``AddPod``: a bound pod from the informer; confirms an assumed one."""
        key = pod_key(pod)
        state = self._pods.get(key)
        if state is not None:
            self._unplace(key, state.pod.spec.node_name)
        self._place(pod)
        self._pods[key] = _PodState(pod, assumed=False)

    def update_pod(self, pod: Pod) -> None:
        self.add_pod(pod)

    def remove_pod(self, pod: Pod) -> None:
        key = pod_key(pod)
        state = self._pods.pop(key, None)
        if state is not None:
            self._unplace(key, state.pod.spec.node_name)

    def get_pod(self, key: str) -> Pod | None:
        state = self._pods.get(key)
        return state.pod if state is not None else None

    def pod_count(self) -> int:
        return len(self._pods)

    # -- snapshots ------------------------------------------------------------------------
    def snapshot(self, namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> Snapshot:
        """``UpdateSnapshot``: node infos of live nodes, cloned where they changed."""
        if self._order is None:
            self._order = node_tree_order(info.node for info in self._nodes.values() if info.node is not None)
        fresh: dict[str, NodeInfo] = {}
        for name in self._order:
            info = self._nodes[name]
            cached = self._snapshot.get(name)
            fresh[name] = cached if cached is not None and cached.generation == info.generation else info.clone()
        self._snapshot = fresh
        return Snapshot([fresh[name] for name in self._order], namespace_labels)


# =========================================================================== cycle state
@runtime_checkable
class StateData(Protocol):
    def clone(self) -> StateData: ...


class CycleState:
    """``framework.CycleState``: what plugins compute in one cycle, by key; ``clone`` clones
    every entry (preemption evaluates each node on its own copy)."""

    def __init__(self, snapshot: Snapshot | None = None) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        #: The cycle's snapshot (PodTopologySpread scoring counts over every node).
        self.snapshot = snapshot
        self._pod_info: PodInfo | None = None

    def pod_info(self, pod: Pod) -> PodInfo:
        """The pod's :class:`PodInfo`, computed once per cycle (``framework.PodInfo`` is
        built once per queued pod upstream)."""
        if self._pod_info is None or self._pod_info.pod is not pod:
            self._pod_info = PodInfo(pod)
        return self._pod_info

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def clone(self) -> CycleState:
        copy = CycleState(self.snapshot)
        copy._pod_info = self._pod_info
        copy._data = {key: (value.clone() if isinstance(value, StateData) else value) for key, value in self._data.items()}
        copy.skip_filter_plugins = set(self.skip_filter_plugins)
        copy.skip_score_plugins = set(self.skip_score_plugins)
        return copy


# =========================================================================== extension points
class Handle(Protocol):
    """What plugins may ask the framework for (``framework.Handle``, reduced)."""

    def snapshot(self) -> Snapshot: ...

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    def pod_disruption_budgets(self) -> list[Any]: ...

    def get_pod(self, key: str) -> Pod | None: ...

    def now(self) -> float: ...

    def random(self) -> random.Random: ...


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: Pod, pod_to_add: PodInfo, node_info: NodeInfo) -> Status: ...

    def remove_pod(self, state: CycleState, pod: Pod, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status: ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status: ...


@dataclass(frozen=True, slots=True)
class NominatingInfo:
    """``framework.NominatingInfo``: ``override`` False is ModeNoop (keep what the pod has)."""

    node_name: str = ""
    override: bool = False


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """``framework.PostFilterResult`` plus the victims DefaultPreemption chose (which the
    scheduler then deletes: upstream's ``prepareCandidate``)."""

    nominating: NominatingInfo
    victims: tuple[Pod, ...] = ()


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: Pod, statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status]: ...


@runtime_checkable
class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> Status: ...


@runtime_checkable
class ReservePlugin(Protocol):
    """Reserve / Unreserve; ``unreserve`` must be idempotent and never fail."""

    name: str

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PreBindPlugin(Protocol):
    """PreBind (``framework.PreBindPlugin``): runs in the binding cycle before Bind; a
    failure fails the binding (Unreserve, then the pod is requeued)."""

    name: str

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    def events_to_register(self) -> tuple[ClusterEvent, ...]: ...


def default_normalize_score(max_priority: int, reverse: bool, scores: dict[str, int]) -> None:
    """``helper.DefaultNormalizeScore``: scale to [0, max] by the highest score (integer
    division); ``reverse`` flips it. All zero: 0 each, or ``max`` each when reversed."""
    highest = max(scores.values(), default=0)
    if highest == 0:
        if reverse:
            for name in scores:
                scores[name] = max_priority
        return
    for name, score in scores.items():
        scaled = max_priority * score // highest
        scores[name] = max_priority - scaled if reverse else scaled


# =========================================================================== diagnosis and FitError
class NodeToStatus:
    """``framework.NodeToStatus``: the status of each node that was evaluated, and the
    status of the nodes that are absent (not evaluated)."""

    def __init__(self, statuses: dict[str, Status] | None = None, absent: Status | None = None) -> None:
        self.statuses: dict[str, Status] = dict(statuses or {})
        self.absent = absent or Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def get(self, name: str) -> Status:
        return self.statuses.get(name, self.absent)

    def set(self, name: str, status: Status) -> None:
        self.statuses[name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def nodes_for_code(self, snapshot: Snapshot, code: Code) -> list[NodeInfo]:
        """``NodesForStatusCode``: nodes with that code (absent nodes take the absent code)."""
        return [info for info in snapshot.list() if self.get(info.name).code is code]


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


class FitError(Exception):
    """``framework.FitError``; ``str()`` is ``FitError.Error()`` (types.go):
    ``"0/N nodes are available: <PreFilterMsg>. <sorted 'count reason' histogram>. <PostFilterMsg>"``."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__(pod_key(pod))

    def __str__(self) -> str:
        return self.message()

    def message(self) -> str:
        text = f"0/{self.num_all_nodes} nodes are available:"
        diagnosis = self.diagnosis
        if diagnosis.pre_filter_msg:
            text += f" {diagnosis.pre_filter_msg}."
        else:
            histogram = reasons_histogram(diagnosis.node_to_status, self.num_all_nodes)
            if histogram:
                text += f" {', '.join(histogram)}."
        if diagnosis.post_filter_msg:
            text += f" {diagnosis.post_filter_msg}"
        return text


def reasons_histogram(statuses: NodeToStatus, num_all_nodes: int) -> list[str]:
    """The "count reason" strings, sorted as strings (``sortReasonsHistogram``); absent
    nodes count with the absent status's reasons."""
    counts: dict[str, int] = {}
    for status in statuses.statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = num_all_nodes - len(statuses)
    if absent > 0:
        for reason in statuses.absent.reasons:
            counts[reason] = counts.get(reason, 0) + absent
    return sorted(f"{count} {reason}" for reason, count in counts.items())


# =========================================================================== the framework
@dataclass(slots=True)
class _Weighted:
    plugin: Any
    weight: int


class Framework:
    """``frameworkImpl`` for one profile: the plugins of each extension point in order,
    with score weights. Plugins are any objects implementing the protocols above;
    ``plugins`` is a list of (plugin, score weight) in the profile's order."""

    def __init__(self, plugins: Sequence[tuple[Any, int]], handle: Handle | None = None) -> None:
        self.handle = handle
        self.plugins = [_Weighted(plugin, weight) for plugin, weight in plugins]
        names = [entry.plugin.name for entry in self.plugins]
        assert len(names) == len(set(names)), f"plugin names must be unique: {names}"
        self.pre_filter = [p.plugin for p in self.plugins if isinstance(p.plugin, PreFilterPlugin)]
        self.filter = [p.plugin for p in self.plugins if isinstance(p.plugin, FilterPlugin)]
        self.post_filter = [p.plugin for p in self.plugins if isinstance(p.plugin, PostFilterPlugin)]
        self.pre_score = [p.plugin for p in self.plugins if isinstance(p.plugin, PreScorePlugin)]
        self.score = [p for p in self.plugins if isinstance(p.plugin, ScorePlugin)]
        for entry in self.score:
            assert entry.weight > 0, f"score plugin {entry.plugin.name} needs a positive weight"
        self.reserve = [p.plugin for p in self.plugins if isinstance(p.plugin, ReservePlugin)]
        self.bind = [p.plugin for p in self.plugins if isinstance(p.plugin, BindPlugin)]
        self.pre_bind = [p.plugin for p in self.plugins if isinstance(p.plugin, PreBindPlugin)]
        for entry in self.plugins:
            attach = getattr(entry.plugin, "attach", None)
            if attach is not None:  # plugins that need the framework (``New(..., fh)``)
                attach(self)

    def plugin(self, name: str) -> Any:
        return next(entry.plugin for entry in self.plugins if entry.plugin.name == name)

    def events_to_register(self) -> dict[str, tuple[ClusterEvent, ...]]:
        """Each plugin's ``EventsToRegister``: the events that may make a pod it rejected
        schedulable (the queue moves pods only on these)."""
        return {
            entry.plugin.name: tuple(entry.plugin.events_to_register())
            for entry in self.plugins
            if isinstance(entry.plugin, EnqueueExtensions)
        }

    # -- PreFilter / Filter ---------------------------------------------------------------
    def run_pre_filter_plugins(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        """``RunPreFilterPlugins``: the first rejection stops; Skip marks the plugin's
        Filter as skipped for this cycle."""
        for plugin in self.pre_filter:
            status = plugin.pre_filter(state, pod, snapshot)
            if status.is_skip():
                state.skip_filter_plugins.add(plugin.name)
                continue
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_filter_plugins(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """``RunFilterPlugins``: the first plugin that does not answer Success decides."""
        for plugin in self.filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            status = plugin.filter(state, pod, node_info)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, to_add: PodInfo, node_info: NodeInfo) -> Status:
        for plugin in self.pre_filter:
            if plugin.name in state.skip_filter_plugins or not hasattr(plugin, "add_pod"):
                continue
            status = plugin.add_pod(state, pod, to_add, node_info)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, to_remove: PodInfo, node_info: NodeInfo) -> Status:
        for plugin in self.pre_filter:
            if plugin.name in state.skip_filter_plugins or not hasattr(plugin, "remove_pod"):
                continue
            status = plugin.remove_pod(state, pod, to_remove, node_info)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def _add_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[bool, CycleState, NodeInfo]:
        """``addNominatedPods``: pods nominated to this node with a priority at least the
        pod's are counted as if they were there."""
        if self.handle is None:
            return False, state, node_info
        nominated = [
            other for other in self.handle.nominated_pods_for_node(node_info.name)
            if pod_key(other) != pod_key(pod) and pod_priority(other) >= pod_priority(pod)
        ]
        if not nominated:
            return False, state, node_info
        state_out, info_out = state.clone(), node_info.clone()
        for other in nominated:
            other_info = PodInfo(other)
            info_out.add_pod(other_info)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, other_info, info_out)
            if not status.is_success():
                raise FrameworkError(status.message)
        return True, state_out, info_out

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """``RunFilterPluginsWithNominatedPods``: filters run with the higher-or-equal
        priority nominated pods added; if that passes and pods were added, again without
        them (inter-pod affinity may only pass thanks to them)."""
        try:
            added, state_with, info_with = self._add_nominated_pods(state, pod, node_info)
        except FrameworkError as error:
            return Status.error(str(error))
        status = self.run_filter_plugins(state_with, pod, info_with)
        if not status.is_success() or not added:
            return status
        return self.run_filter_plugins(state, pod, node_info)

    # -- PostFilter -----------------------------------------------------------------------
    def run_post_filter_plugins(self, state: CycleState, pod: Pod, statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """``RunPostFilterPlugins``: the first Success or Error ends; otherwise the last
        rejection (with every plugin's message) is returned."""
        result: PostFilterResult | None = None
        reasons: list[str] = []
        for plugin in self.post_filter:
            outcome, status = plugin.post_filter(state, pod, statuses)
            if status.is_success() or status.code is Code.ERROR:
                return outcome, status.with_plugin(plugin.name)
            if outcome is not None:
                result = outcome
            reasons.extend(status.reasons)
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons))

    # -- scoring --------------------------------------------------------------------------
    def run_pre_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status:
        for plugin in self.pre_score:
            status = plugin.pre_score(state, pod, nodes)
            if status.is_skip():
                state.skip_score_plugins.add(plugin.name)
                continue
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_score_plugins(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> tuple[dict[str, int], Status]:
        """``RunScorePlugins``: per plugin, score each node, normalize, check the range
        [0, 100], multiply by the weight; the total per node, in the nodes' order."""
        totals = {info.name: 0 for info in nodes}
        for entry in self.score:
            plugin = entry.plugin
            if plugin.name in state.skip_score_plugins:
                continue
            scores: dict[str, int] = {}
            for info in nodes:
                score, status = plugin.score(state, pod, info)
                if not status.is_success():
                    return {}, status.with_plugin(plugin.name)
                scores[info.name] = score
            if isinstance(plugin, ScoreExtensions):
                status = plugin.normalize_score(state, pod, scores)
                if not status.is_success():
                    return {}, status.with_plugin(plugin.name)
            for name, score in scores.items():
                if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                    return {}, Status.error(f"plugin {plugin.name!r} returns an invalid score {score}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing")
                totals[name] += score * entry.weight
        return totals, SUCCESS

    # -- Reserve / Bind ---------------------------------------------------------------------
    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """``RunReservePluginsUnreserve``: in reverse order."""
        for plugin in reversed(self.reserve):
            plugin.unreserve(state, pod, node_name)

    async def run_pre_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """``RunPreBindPlugins``: every plugin in order; the first failure stops."""
        for plugin in self.pre_bind:
            status = await plugin.pre_bind(state, pod, node_name)
            if not status.is_success() and not status.is_skip():
                return status.with_plugin(plugin.name)
        return SUCCESS

    async def run_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """``RunBindPlugins``: the first plugin that does not Skip binds."""
        for plugin in self.bind:
            status = await plugin.bind(state, pod, node_name)
            if status.is_skip():
                continue
            return status.with_plugin(plugin.name) if not status.is_success() else status
        return Status.error("no bind plugin bound the pod")


# =========================================================================== one attempt
@dataclass(frozen=True, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: all nodes below 100; else the percentage (0 = adaptive
    ``50 - n/125``, at least 5 %) of them, at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(totals: dict[str, int], rng: random.Random) -> str:
    """``selectHost``: the highest total; ties broken uniformly at random by reservoir
    sampling over the nodes in order (here with the scheduler's seeded generator)."""
    assert totals, "empty priority list"
    selected, best, count = "", -math.inf, 0
    for name, score in totals.items():
        if score > best:
            selected, best, count = name, score, 1
        elif score == best:
            count += 1
            if rng.randrange(count) == 0:
                selected = name
    return selected


@dataclass(slots=True)
class Cursor:
    """``sched.nextStartNodeIndex``: where the next cycle starts filtering."""

    next_start_index: int = 0


def find_nodes_that_pass_filters(
    framework: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis, nodes: Sequence[NodeInfo],
    num_to_find: int, start: int,
) -> list[NodeInfo]:
    """``findNodesThatPassFilters``: from ``start`` round the list, stop at ``num_to_find``."""
    feasible: list[NodeInfo] = []
    for offset in range(len(nodes)):
        if len(feasible) >= num_to_find:
            break
        info = nodes[(start + offset) % len(nodes)]
        status = framework.run_filter_plugins_with_nominated_pods(state, pod, info)
        if status.code is Code.ERROR:
            raise FrameworkError(status.message)
        if status.is_success():
            feasible.append(info)
        else:
            diagnosis.node_to_status.set(info.name, status)
            diagnosis.unschedulable_plugins.add(status.plugin)
    return feasible


def schedule_pod(
    framework: Framework,
    state: CycleState,
    pod: Pod,
    snapshot: Snapshot,
    rng: random.Random,
    *,
    percentage_of_nodes_to_score: int = 0,
    cursor: Cursor | None = None,
) -> ScheduleResult:
    """``schedulePod`` (schedule_one.go). Raises :class:`FitError` when no node fits
    (after which the caller runs PostFilter), :class:`NoNodesAvailable` when there are no
    nodes, :class:`FrameworkError` when a plugin errs."""
    cursor = cursor if cursor is not None else Cursor()
    state.snapshot = snapshot
    nodes = snapshot.list()
    if not nodes:
        raise NoNodesAvailable("no nodes available to schedule pods")
    diagnosis = Diagnosis()
    status = framework.run_pre_filter_plugins(state, pod, snapshot)
    if status.code is Code.ERROR:
        raise FrameworkError(status.message)
    if not status.is_success():
        # Every node gets the PreFilter's status (findNodesThatFitPod).
        diagnosis.node_to_status = NodeToStatus({}, status)
        diagnosis.pre_filter_msg = status.message
        diagnosis.unschedulable_plugins.add(status.plugin)
        raise FitError(pod, len(nodes), diagnosis)
    feasible: list[NodeInfo] = []
    nominated = pod.status.nominated_node_name
    if nominated and snapshot.get(nominated) is not None:
        # evaluateNominatedNode: the node preemption made room on is tried first.
        feasible = find_nodes_that_pass_filters(framework, state, pod, Diagnosis(), [snapshot.get(nominated)], 1, 0)
    if not feasible:
        num_to_find = num_feasible_nodes_to_find(percentage_of_nodes_to_score, len(nodes))
        feasible = find_nodes_that_pass_filters(framework, state, pod, diagnosis, nodes, num_to_find, cursor.next_start_index)
        processed = len(feasible) + len(diagnosis.node_to_status)
        cursor.next_start_index = (cursor.next_start_index + processed) % len(nodes)
    if not feasible:
        raise FitError(pod, len(nodes), diagnosis)
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    status = framework.run_pre_score_plugins(state, pod, feasible)
    if not status.is_success():
        raise FrameworkError(status.message)
    totals, status = framework.run_score_plugins(state, pod, feasible)
    if not status.is_success():
        raise FrameworkError(status.message)
    return ScheduleResult(select_host(totals, rng), evaluated, len(feasible))


class NoNodesAvailable(Exception):
    """``ErrNoNodesAvailable``: "no nodes available to schedule pods"."""

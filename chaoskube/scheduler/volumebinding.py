"""The VolumeBinding plugin (``pkg/scheduler/framework/plugins/volumebinding``), with the
scheduler's listers of claims, volumes and storage classes as its handle.

- **PreFilter**: every claim a pod mounts must exist (``persistentvolumeclaim "data" not
  found``) and not be being deleted; a claim that is not bound and whose class binds
  ``Immediate`` (or has no class) makes the pod wait for the binder: "pod has unbound
  immediate PersistentVolumeClaims". All UnschedulableAndUnresolvable, as upstream.
- **Filter**: a bound claim's volume must accept the node (its ``nodeAffinity``): "node(s)
  had volume node affinity conflict"; an unbound WaitForFirstConsumer claim needs an
  available matching volume that accepts the node, or a class that can provision there
  (``allowedTopologies``): "node(s) didn't find available persistent volumes to bind".
- **PreBind** (in the binding cycle): each unbound WaitForFirstConsumer claim is annotated
  ``volume.kubernetes.io/selected-node: <node>`` (the binder and the provisioner then act),
  and the binding waits until every claim is Bound, checking every second, at most
  ``bindTimeoutSeconds`` (600 s): "binding volumes: context deadline exceeded".

Non-guarantees: a claim that names its volume (``spec.volumeName``) counts as bound even
before the binder completes it, so a missing volume makes the pod unschedulable at once
("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"; upstream
would schedule it and time out in PreBind after 600 s: either way it stays Pending); the scheduler's own in-memory assumption of static volumes
(``AssumePodVolumes``) is left to the binder; CSI storage capacity and volume limits
(``NodeVolumeLimits``) are not modelled.
"""

from __future__ import annotations

from typing import Any

from chaoskube.api.objects import Pod, matches, parse_quantity
from chaoskube.api.workloads import node_selector_matches, volume_references
from chaoskube.client.client import ApiError
from chaoskube.scheduler.framework import SUCCESS, ActionType, ClusterEvent, Code, CycleState, EventResource, NodeInfo, Snapshot, Status

__all__ = ["BIND_TIMEOUT_S", "SELECTED_NODE", "VolumeBinding", "VolumeZone"]

SELECTED_NODE = "volume.kubernetes.io/selected-node"
#: ``bindTimeoutSeconds`` (the plugin's default args).
BIND_TIMEOUT_S = 600.0
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_NO_VOLUMES = "node(s) didn't find available persistent volumes to bind"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"  # static volumes only
ERR_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


class _State:
    __slots__ = ("bound", "delayed")

    def __init__(self, bound: list[Any], delayed: list[Any]) -> None:
        self.bound = bound
        self.delayed = delayed

    def clone(self) -> _State:
        return self


def _volume_accepts(volume: Any, node: Any) -> bool:
    affinity = volume.spec.node_affinity
    required = affinity.required if affinity is not None else None
    return node_selector_matches(required, node.metadata.name, node.metadata.labels)


def _class_topology_allows(storage_class: Any, node: Any) -> bool:
    """``allowedTopologies``: one term whose every label expression the node satisfies."""
    terms = storage_class.allowed_topologies if storage_class is not None else []
    if not terms:
        return True
    labels = node.metadata.labels
    for term in terms:
        expressions = term.get("matchLabelExpressions") or []
        if all(labels.get(expression.get("key")) in (expression.get("values") or []) for expression in expressions):
            return True
    return False


class VolumeBinding:
    """See the module docstring. ``handle`` has ``claim(ns, name)``, ``volume(name)``,
    ``storage_class(name)``, ``all_volumes()``, ``client`` and ``process``."""

    name = "VolumeBinding"

    def __init__(self) -> None:
        self.framework: Any = None

    def attach(self, framework: Any) -> None:
        self.framework = framework

    @property
    def _handle(self) -> Any:
        return self.framework.handle if self.framework is not None else None

    def _key(self) -> str:
        return "VolumeBinding"

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        handle = self._handle
        references = [reference for reference in volume_references(pod.spec.volumes) if reference.kind == "persistentvolumeclaim"]
        if not references or handle is None or not hasattr(handle, "claim"):
            state.write(self._key(), _State([], []))
            return SUCCESS
        bound, delayed = [], []
        for reference in references:
            claim = handle.claim(pod.metadata.namespace, reference.name)
            if claim is None:
                return Status.of(UNRESOLVABLE, f'persistentvolumeclaim "{reference.name}" not found')
            if claim.metadata.deletion_timestamp is not None:
                return Status.of(UNRESOLVABLE, f'persistentvolumeclaim "{reference.name}" is being deleted')
            if claim.spec.volume_name:
                bound.append(claim)
                continue
            storage_class = handle.storage_class(claim.spec.storage_class_name) if claim.spec.storage_class_name else None
            if storage_class is None or (storage_class.volume_binding_mode or "Immediate") != "WaitForFirstConsumer":
                return Status.of(UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE)
            delayed.append(claim)
        state.write(self._key(), _State(bound, delayed))
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        data = state.read(self._key())
        if data is None or (not data.bound and not data.delayed):
            return SUCCESS
        node = node_info.node
        if node is None:
            return Status.of(UNRESOLVABLE, "node not found")
        handle = self._handle
        for claim in data.bound:
            volume = handle.volume(claim.spec.volume_name)
            if volume is None:
                return Status.of(UNRESOLVABLE, ERR_PV_NOT_EXIST)
            if not _volume_accepts(volume, node):
                return Status.of(UNRESOLVABLE, ERR_NODE_CONFLICT)
        for claim in data.delayed:
            if self._static_match(claim, node) is not None:
                continue
            storage_class = handle.storage_class(claim.spec.storage_class_name)
            if storage_class is None or storage_class.provisioner in ("", NOT_SUPPORTED_PROVISIONER) or not _class_topology_allows(storage_class, node):
                return Status.of(UNRESOLVABLE, ERR_NO_VOLUMES)
        return SUCCESS

    def _static_match(self, claim: Any, node: Any) -> Any | None:
        want = parse_quantity(claim.spec.resources.requests.get("storage", "0"))
        for volume in sorted(self._handle.all_volumes(), key=lambda v: (parse_quantity(v.spec.capacity.get("storage", "0")), v.metadata.name)):
            if volume.spec.claim_ref is not None or volume.status.phase not in ("Available", ""):
                continue
            if (volume.spec.storage_class_name or "") != (claim.spec.storage_class_name or ""):
                continue
            if parse_quantity(volume.spec.capacity.get("storage", "0")) < want or not all(mode in volume.spec.access_modes for mode in claim.spec.access_modes):
                continue
            if claim.spec.selector is not None and not matches(claim.spec.selector, volume.metadata.labels):
                continue
            if _volume_accepts(volume, node):
                return volume
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        data = state.read(self._key())
        if data is None or not data.delayed:
            return SUCCESS
        handle = self._handle
        client, process = handle.client, handle.process
        for claim in data.delayed:
            if claim.metadata.annotations.get(SELECTED_NODE) == node_name:
                continue
            try:
                await client.patch("persistentvolumeclaims", claim.metadata.namespace, claim.metadata.name, {"metadata": {"annotations": {SELECTED_NODE: node_name}}})
            except ApiError as error:
                return Status.error(f"binding volumes: {error}")
        deadline = process.now() + BIND_TIMEOUT_S
        while True:
            pending = [claim for claim in data.delayed if not self._bound(claim)]
            if not pending:
                return SUCCESS
            if process.now() >= deadline:
                return Status.error("binding volumes: context deadline exceeded")
            await process.sleep(1.0)

    def _bound(self, claim: Any) -> bool:
        current = self._handle.claim(claim.metadata.namespace, claim.metadata.name)
        return current is not None and current.status.phase == "Bound" and bool(current.spec.volume_name)

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            ClusterEvent(EventResource.PVC, ActionType.ADD | ActionType.update()),
            ClusterEvent(EventResource.PV, ActionType.ADD | ActionType.update()),
            ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD | ActionType.update()),
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        )


# =========================================================================== VolumeZone
ERR_ZONE_CONFLICT = "node(s) had no available volume zone"
#: ``volumezone.topologyLabels``: the deprecated beta labels and the GA ones.
TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
)
_GA_OF_BETA = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


class VolumeZone:
    """The VolumeZone plugin (``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``),
    a default Filter after VolumeBinding: a bound volume's zone and region labels (a value
    may name several zones, ``__``-separated: ``LabelZonesToSet``) must name the node's
    (a beta label on the volume matches the node's GA label too); a node with none of those
    labels is not constrained. PreFilter skips unbound WaitForFirstConsumer claims (their
    volume is chosen for the node) and leaves a missing claim, an unbound Immediate one or
    a missing volume to VolumeBinding, which refuses them first (issue 32: the scheduling
    checker models both, chaoskube/checkers/scheduling.py)."""

    name = "VolumeZone"

    def __init__(self) -> None:
        self.framework: Any = None

    def attach(self, framework: Any) -> None:
        self.framework = framework

    def pre_filter(self, state: CycleState, pod: Pod, snapshot: Snapshot) -> Status:
        handle = self.framework.handle if self.framework is not None else None
        topologies: list[tuple[str, frozenset[str]]] = []
        if handle is not None and hasattr(handle, "claim"):
            for reference in volume_references(pod.spec.volumes):
                if reference.kind != "persistentvolumeclaim":
                    continue
                claim = handle.claim(pod.metadata.namespace, reference.name)
                if claim is None or not claim.spec.volume_name:
                    continue
                volume = handle.volume(claim.spec.volume_name)
                if volume is None:
                    continue
                for key in TOPOLOGY_LABELS:
                    value = volume.metadata.labels.get(key)
                    if value is not None:
                        topologies.append((key, frozenset(value.split("__"))))
        state.write(self.name, topologies)
        return SUCCESS

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        topologies = state.read(self.name)
        if not topologies:
            return SUCCESS
        node = node_info.node
        if node is None:
            return Status.of(UNRESOLVABLE, "node not found")
        labels = node.metadata.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return SUCCESS  # a node without topology labels is not constrained
        for key, values in topologies:
            value = labels.get(key)
            if value is None:
                value = labels.get(_GA_OF_BETA.get(key, key))
            if value is None or value not in values:
                return Status.of(UNRESOLVABLE, ERR_ZONE_CONFLICT)
        return SUCCESS

    def events_to_register(self) -> tuple[ClusterEvent, ...]:
        return (
            ClusterEvent(EventResource.PVC, ActionType.ADD | ActionType.update()),
            ClusterEvent(EventResource.PV, ActionType.ADD | ActionType.update()),
            ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
        )

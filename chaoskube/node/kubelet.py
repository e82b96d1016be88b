"""The kubelet: registers its Node, renews its node Lease, runs the pods bound to it
through the simulated runtime (:mod:`chaoskube.node.runtime`), reports their status, and
terminates them gracefully. Also :func:`drain`, the ``kubectl drain`` helper.

A :class:`Kubelet` runs inside its node's process, with an
:class:`~chaoskube.client.client.ApiClient` authenticated as the node
(``node_credentials(name)``: the Node authorizer and NodeRestriction admission limit it to
its own Node, Lease and pods). What it does, after ``pkg/kubelet``:

1. **Registration** (``kubelet_node_status.go`` ``registerWithAPIServer``): create the Node
   with its labels (``kubernetes.io/hostname``, ``kubernetes.io/os``,
   ``kubernetes.io/arch``, ``topology.kubernetes.io/zone``, then the spec's labels),
   ``--register-with-taints``, capacity and allocatable, addresses and a Ready condition;
   on 409 AlreadyExists get it and patch the kubelet's default labels if they differ.
   Attempts are 100 ms apart, doubling up to 7 s, until one succeeds. ``spec.podCIDR`` is
   set from the node's pod CIDR, as the node IPAM controller would have (there is none).
   Labels under ``kubernetes.io`` / ``k8s.io`` that are not kubelet labels are refused by
   NodeRestriction, as in Kubernetes.
2. **Node status** (``tryUpdateNodeStatus``): every ``node_status_update_frequency_s``
   (10 s, ``wait.JitterUntil`` with jitter 0.04, sliding) get the Node (the first try from
   the watch cache), compute the status (``nodestatus/setters.go``: MemoryPressure,
   DiskPressure, PIDPressure False and Ready True with reason ``KubeletReady``; a
   condition's ``lastTransitionTime`` moves only when its status changes, its
   ``lastHeartbeatTime`` every time) and patch ``nodes/status`` only if it changed
   (ignoring heartbeats) or ``node_status_report_frequency_s`` (5 min) passed since the
   last report; at most 5 tries (``nodeStatusUpdateRetry``). Allocatable is capacity less
   the default hard eviction threshold ``memory.available<100Mi``
   (``pkg/kubelet/apis/config/v1beta1/defaults_linux.go``).
3. **Node lease** (``component-helpers/apimachinery/lease/controller.go``, used by
   ``pkg/kubelet/kubelet.go``): ``kube-node-lease/<node>`` with ``holderIdentity`` the
   node, ``leaseDurationSeconds`` 40, an owner reference to the Node; renewed every 25 % of
   the duration (10 s, ``renewIntervalFraction``; jitter 0.04) by an update of the last
   Lease written, falling back to get-or-create with back-off 100 ms doubling to 7 s
   (``backoffEnsureLease``); at most 5 update tries per renewal (``maxUpdateRetries``).
4. **Pods**: an informer on pods with field selector ``spec.nodeName=<node>``; one worker
   per pod UID (``pod_workers.go``) runs ``syncPod``: sandbox (pod IP), init containers,
   image pulls, containers, restarts under ``restartPolicy`` with CrashLoopBackOff,
   startup / readiness / liveness probes (a liveness or startup failure kills and restarts
   the container), and the pod status (below). Workers wake on pod updates and on the next
   due event (a probe tick, a planned exit, the end of a back-off), and at least every
   ``syncFrequency`` (1 min). Probe tickers start when the worker starts, after a random
   part of the period if the kubelet started less than a period ago (``worker.run``).
5. **Pod status** (``kubelet_pods.go`` ``generateAPIPodStatus``, ``status/generate.go``,
   ``status/status_manager.go``): phase (``getPhase``), conditions Initialized, Ready,
   ContainersReady, PodScheduled (other conditions kept; ``lastTransitionTime`` kept while
   a condition's status does not change), containerStatuses (state, lastState, ready,
   started, restartCount, ids), podIP(s), hostIP(s), startTime, qosClass; sent as a merge
   patch of ``pods/status`` (with the pod's UID as precondition) computed against the
   freshest copy of the pod the kubelet has, only when something changed. A failed patch
   is retried after 10 s (the status manager's ``syncPeriod``).
6. **Termination**: a pod with a ``deletionTimestamp`` (or gone from the API) gets its
   containers stopped with its ``deletionGracePeriodSeconds`` (each exits after its
   ``chaoskube.io/shutdown-s``, default 1 s, or is killed when the grace ends), its sandbox
   stopped, its terminal status patched, and is then deleted with
   ``DeleteOptions(grace_period_seconds=0, preconditions_uid=uid)`` as the status manager
   does (``canBeDeleted``). Sandboxes on the node whose pod is gone from the API are
   cleaned up by housekeeping every 2 s (``housekeepingPeriod``).
7. **Restart**: the runtime's state is on the process's disk, so a killed and restarted
   kubelet re-adopts the containers that kept running (same ids, start times and restart
   counts). What lived only in the kubelet's memory is lost, as upstream: probe results
   (readiness is Failure until the first probe after the restart), restart back-off
   (the next crash restarts at once), the last status sent.
8. **Traffic**: the node's process answers :class:`~chaoskube.node.runtime.TrafficRequest`
   messages on ``TRAFFIC_PORT`` for its pods' IPs, as the pod's application would: a pod
   whose containers all run answers (whether or not its readiness probe passes: readiness
   only steers Services); a pod with a container not running refuses (nothing listens); a
   hung process (``chaoskube.io/fail-liveness-after``) does not answer; an IP with no live
   sandbox on the node is dropped (no answer). The answer is computed from the runtime's
   records, so it does not depend on the kubelet running (item 9). While the node's process
   is down the simulated network refuses the connection: the process stands for the whole
   machine on the network, even though its containers survive a kubelet restart.
9. **Stop and start** (``systemctl stop kubelet`` / ``start``): :class:`KubeletSwitch`, kept
   in the process's memory (:func:`kubelet_switch`), turns only the kubelet off: its
   registration, node status and lease loops, informers, pod workers and housekeeping are
   cancelled, while the process (the machine) stays up, its containers keep running on
   the runtime (exits planned before the stop still happen; nothing restarts them) and
   keep answering traffic, and kube-proxy keeps its rules. The node controller then sees
   no heartbeat: the Ready condition turns Unknown after ``--node-monitor-grace-period``
   (40 s), the node gets the ``unreachable`` taints and its pods are evicted after their
   ``tolerationSeconds`` (300 s) ("Node status", https://kubernetes.io/docs/reference/node/node-status/;
   ``pkg/controller/nodelifecycle``). Turned on again, the kubelet starts with fresh memory
   exactly as after a process restart (item 7) and re-adopts the running containers.
   A restarted process starts with the switch on (a fault that keeps the kubelet off
   turns it off again: faults/kinds.py ``kubelet-stop``).

Journal (sparse): ``kubelet`` (event start / stop / registered / adopted / orphan), ``pod-phase``
(pod, node, phase) when a reported phase changes, ``container-start`` (pod, node,
container, restart_count, container_id), ``container-exit`` (exit_code, reason, cause) once
per instance, ``container-term`` (pod, uid, node, container, grace_s, exit_after_s,
exit_code: 137 when it is to be SIGKILLed at the end of the grace) when termination sends a
running container SIGTERM, ``container-kill`` (cause liveness / startup, after_s), ``probe``
(container, probe, result) when a running container's probe result changes,
``pod-deleted`` when the kubelet removes a terminated pod, ``drain`` per drain step.

Events (``chaoskube.client.record``, source ``kubelet`` on the node): Pulling / Pulled
(``images/image_manager.go``; "already present on machine" without a pull), Failed /
ErrImageNeverPull, Created / Started (``kuberuntime_container.go``), Killing (a deletion's
SIGTERM, or "failed liveness probe, will be restarted"), Unhealthy at every failed probe
(``prober/prober.go``), BackOff (``kuberuntime_manager.go``), FailedMount (the volume
manager's message).

Non-guarantees: no pod admission (capacity is not checked: the scheduler's job), no
eviction manager, no static or mirror pods, no volumes, no ``Evicted`` event (no eviction
manager), no
``activeDeadlineSeconds``, no ``PodReadyToStartContainers`` condition, no graceful node
shutdown; pod status is diffed against the informer's copy, not read again from etcd.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from chaoskube.api.manifests import to_dict
from chaoskube.api.objects import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    Lease,
    LeaseSpec,
    Node,
    NodeAddress,
    NodeCondition,
    NodeSpec,
    NodeStatus,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodCondition,
    PodStatus,
    Taint,
    parse_quantity,
)
from chaoskube.api.patch import create_merge_patch
from chaoskube.api.workloads import env_references, volume_references
from chaoskube.api.protocol import DeleteOptions, micro_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import DeletedFinalStateUnknown, SharedInformerFactory
from chaoskube.client.record import EventRecorder
from chaoskube.config import KubeletConfig
from chaoskube.node.runtime import (
    TRAFFIC_PORT,
    BackoffEntry,
    BehaviourError,
    ContainerBehaviour,
    ContainerRecord,
    ContainerRuntime,
    ImagePullError,
    IpExhausted,
    ProbeResult,
    ProbeSpec,
    ProbeState,
    SandboxRecord,
    Terminated,
    TrafficRequest,
    backoff_in_effect,
    backoff_next,
    image_id_of,
    pod_phase,
    probe_initial,
    probe_tick,
    should_restart,
    stop_plan,
)
from chaoskube.sim.buggify import maybe_sleep
from chaoskube.sim.process import Process, Wake

__all__ = [
    "DrainResult",
    "KUBELET_SWITCH_KEY",
    "Kubelet",
    "KubeletNode",
    "KubeletSwitch",
    "NODE_LEASE_NAMESPACE",
    "allocatable_of",
    "cordon",
    "drain",
    "generate_pod_status",
    "initial_node",
    "kubelet_switch",
    "node_conditions",
    "node_status_changed",
    "pods_to_evict",
    "qos_class",
]

NODE_LEASE_NAMESPACE = "kube-node-lease"  # corev1.NamespaceNodeLease
#: ``renewIntervalFraction``: the lease is renewed every quarter of its duration.
RENEW_INTERVAL_FRACTION = 0.25
#: ``wait.JitterUntil(..., 0.04, ...)`` of the lease controller and node status loop.
JITTER_FACTOR = 0.04
#: ``nodeStatusUpdateRetry`` / lease ``maxUpdateRetries``.
STATUS_UPDATE_RETRIES = 5
#: ``registerWithAPIServer`` / ``backoffEnsureLease``: 100 ms doubling to 7 s.
RETRY_INITIAL_S = 0.1
RETRY_MAX_S = 7.0
#: Bound on one ``backoffEnsureLease`` (upstream loops forever; the next renewal retries).
ENSURE_LEASE_ATTEMPTS = 20
#: ``--sync-frequency``: every pod worker syncs at least this often.
SYNC_FREQUENCY_S = 60.0
#: ``status_manager.go`` ``syncPeriod``: a failed status update is retried after this.
STATUS_RETRY_S = 10.0
#: ``housekeepingPeriod``.
HOUSEKEEPING_S = 2.0
#: ``DefaultEvictionHard`` ``memory.available``: held back from allocatable memory.
EVICTION_HARD_MEMORY = "100Mi"
#: A worker wakes this long after a planned event, so that the event has happened.
WAKE_EPSILON_S = 1e-6
#: Bound on the UIDs of torn-down pods the kubelet remembers; at the bound the oldest go.
MAX_FINISHED_PODS = 10_000
DEFAULT_GRACE_S = 30.0  # terminationGracePeriodSeconds default
DEFAULT_CAPACITY = (("cpu", "4"), ("memory", "8Gi"), ("pods", "110"))
KUBELET_VERSION = "v1.30.0"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
_KUBELET_CONDITIONS = ("Initialized", "Ready", "ContainersReady", "PodScheduled")  # PodConditionsByKubelet


# =========================================================================== the node
def _hash(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeletNode:
    """The node a kubelet runs: its flags and machine. ``address`` (the InternalIP,
    ``--node-ip``) and ``pod_cidr`` (``--pod-cidr``) default to values derived from a hash
    of the name; a cluster should assign them (two names may hash alike)."""

    name: str
    zone: str = ""
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    address: str = ""
    pod_cidr: str = ""

    def __post_init__(self) -> None:
        assert self.name, "a node has a name"
        number = _hash(self.name)
        if not self.address:
            object.__setattr__(self, "address", f"10.0.{(number >> 8) % 256}.{number % 254 + 1}")
        if not self.pod_cidr:
            object.__setattr__(self, "pod_cidr", f"10.{244 + (number >> 16) % 8}.{(number >> 8) % 256}.0/24")
        for name in ("cpu", "memory", "pods"):
            if name not in self.capacity:
                raise ValueError(f"node {self.name}: capacity needs {name}")
            parse_quantity(self.capacity[name])


def node_labels(spec: KubeletNode) -> dict[str, str]:
    """``initialNode``'s labels, then ``--node-labels``."""
    labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    if spec.zone:
        labels["topology.kubernetes.io/zone"] = spec.zone
    labels.update(spec.labels)
    return labels


def _format_bytes(milli: int) -> str:
    value = milli // 1000
    return f"{value // 1024}Ki" if value % 1024 == 0 else str(value)


def allocatable_of(capacity: Mapping[str, str]) -> dict[str, str]:
    """Capacity less the hard eviction thresholds (no kube/system reserved): memory less
    ``memory.available<100Mi``, ephemeral-storage less ``nodefs.available<10%`` (the
    kubelet's ``evictionHard`` defaults); extended resources as they are."""
    allocatable = dict(capacity)
    memory = parse_quantity(capacity["memory"]) - parse_quantity(EVICTION_HARD_MEMORY)
    allocatable["memory"] = _format_bytes(max(0, memory))
    if "ephemeral-storage" in capacity:
        storage = parse_quantity(capacity["ephemeral-storage"])
        allocatable["ephemeral-storage"] = _format_bytes(storage - storage // 10 // 1000 * 1000)
    return allocatable


_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_conditions(old: Iterable[NodeCondition], now: float) -> list[NodeCondition]:
    """The setters of ``nodestatus/setters.go``: heartbeat now; transition now only when the
    status changes. Conditions the kubelet does not own are kept after its own."""
    by_type = {condition.type: condition for condition in old}
    stamp = timestamp(now)
    out = []
    for kind, status, reason, message in _CONDITIONS:
        previous = by_type.pop(kind, None)
        transition = previous.last_transition_time if previous is not None and previous.status == status else stamp
        out.append(NodeCondition(type=kind, status=status, reason=reason, message=message, last_heartbeat_time=stamp, last_transition_time=transition))
    return out + [by_type[kind] for kind in sorted(by_type)]


def _node_status(spec: KubeletNode, old: NodeStatus, now: float) -> NodeStatus:
    status = msgspec.structs.replace(
        old,
        capacity=dict(spec.capacity),
        allocatable=allocatable_of(spec.capacity),
        conditions=node_conditions(old.conditions, now),
        addresses=[NodeAddress(type="InternalIP", address=spec.address), NodeAddress(type="Hostname", address=spec.name)],
        node_info=_node_info(spec.name),
    )
    return status


def _node_info(name: str) -> dict[str, str]:
    """``NodeSystemInfo``, every field a kubelet reports (``core/v1/types.go``; clients such
    as the Python client require all ten). The ids are derived from the node's name."""
    import hashlib

    digest = hashlib.sha256(name.encode()).hexdigest()
    return {
        "machineID": digest[:32], "systemUUID": f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}",
        "bootID": digest[32:40] + "-0000-0000-0000-" + digest[40:52], "kernelVersion": "6.1.0-chaoskube", "osImage": "chaoskube simulated node",
        "containerRuntimeVersion": "containerd://chaoskube", "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
        "operatingSystem": "linux", "architecture": "amd64",
    }


def initial_node(spec: KubeletNode, now: float) -> Node:
    """``initialNode`` with ``setNodeStatus``."""
    return Node(
        metadata=ObjectMeta(name=spec.name, labels=node_labels(spec)),
        spec=NodeSpec(pod_cidr=spec.pod_cidr, pod_cidrs=[spec.pod_cidr], taints=list(spec.taints)),
        status=_node_status(spec, NodeStatus(), now),
    )


def node_status_changed(old: NodeStatus, new: NodeStatus) -> bool:
    """``nodeStatusHasChanged``: anything but the conditions' heartbeat times differs."""

    def plain(status: NodeStatus) -> NodeStatus:
        conditions = [msgspec.structs.replace(c, last_heartbeat_time=None) for c in status.conditions]
        return msgspec.structs.replace(status, conditions=conditions)

    old, new = plain(old), plain(new)
    # Equal structs have equal JSON; unequal ones may still (a default written out).
    return old != new and to_dict(Node(status=old)).get("status", {}) != to_dict(Node(status=new)).get("status", {})


# =========================================================================== pod status
def qos_class(pod: Pod) -> str:
    """``GetPodQOS`` (``pkg/apis/core/v1/helper/qos/qos.go``), for cpu and memory."""
    any_set, guaranteed = False, True
    for container in [*pod.spec.init_containers, *pod.spec.containers]:
        resources = container.resources
        for name in ("cpu", "memory"):
            request, limit = resources.requests.get(name), resources.limits.get(name)
            if request is None and limit is not None:
                request = limit  # the API server defaults requests from limits
            if (request is not None and parse_quantity(request) != 0) or (limit is not None and parse_quantity(limit) != 0):
                any_set = True
            if limit is None or request is None or parse_quantity(request) != parse_quantity(limit):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _go_list(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"


def _terminated_state(terminated: Terminated | None) -> ContainerState | None:
    if terminated is None:
        return None
    return ContainerState(
        terminated=ContainerStateTerminated(
            exit_code=terminated.exit_code, reason=terminated.reason, started_at=timestamp(terminated.started_at),
            finished_at=timestamp(terminated.finished_at), container_id=terminated.container_id,
        )
    )


def _probe_passed(container: Container, kind: str, record: ContainerRecord, probes: Mapping[tuple[str, str], ProbeState]) -> bool:
    """No probe of ``kind``: passed. Else its result for this very container instance."""
    if getattr(container, f"{kind}_probe") is None:
        return True
    state = probes.get((container.name, kind))
    return state is not None and state.container_id == record.container_id and state.result is ProbeResult.SUCCESS


@dataclass(slots=True)
class _Counts:
    running: int = 0
    waiting: int = 0
    codes: list[int] = field(default_factory=list)
    unready: list[str] = field(default_factory=list)


def _container_status(container: Container, sandbox: SandboxRecord | None, probes: Mapping[tuple[str, str], ProbeState], waiting: Mapping[str, tuple[str, str]], default_reason: str, now: float, counts: _Counts) -> ContainerStatus:
    record = sandbox.container(container.name) if sandbox is not None else None
    if record is None:
        reason, message = waiting.get(container.name, (default_reason, ""))
        counts.waiting += 1
        counts.unready.append(container.name)
        return ContainerStatus(name=container.name, state=ContainerState(waiting=ContainerStateWaiting(reason=reason, message=message)), image=container.image, started=False)
    common = {"name": container.name, "image": container.image, "image_id": image_id_of(record.image), "container_id": record.container_id, "restart_count": record.restart_count}
    terminated = record.terminated(now)
    if terminated is None:
        started = _probe_passed(container, "startup", record, probes)
        ready = started and _probe_passed(container, "readiness", record, probes)
        counts.running += 1
        if not ready:
            counts.unready.append(container.name)
        state = ContainerState(running=ContainerStateRunning(started_at=timestamp(record.started_at)))
        return ContainerStatus(state=state, last_state=_terminated_state(record.last_termination), ready=ready, started=started, **common)
    counts.unready.append(container.name)
    if container.name in waiting:
        reason, message = waiting[container.name]
        counts.codes.append(-1)  # waiting after an exit: stopped, not succeeded (getPhase)
        state = ContainerState(waiting=ContainerStateWaiting(reason=reason, message=message))
        return ContainerStatus(state=state, last_state=_terminated_state(terminated), started=False, **common)
    counts.codes.append(terminated.exit_code)
    return ContainerStatus(state=_terminated_state(terminated), last_state=_terminated_state(record.last_termination), started=False, **common)


def _init_statuses(pod: Pod, sandbox: SandboxRecord | None) -> tuple[list[ContainerStatus], list[str]]:
    done = sandbox.init_containers if sandbox is not None else ()
    statuses, incomplete = [], []
    for index, container in enumerate(pod.spec.init_containers):
        if index < len(done):
            item = done[index]
            statuses.append(ContainerStatus(name=container.name, state=_terminated_state(item), ready=True, started=False, image=container.image, image_id=image_id_of(container.image), container_id=item.container_id))
        else:
            incomplete.append(container.name)
            statuses.append(ContainerStatus(name=container.name, state=ContainerState(waiting=ContainerStateWaiting(reason="PodInitializing")), image=container.image, started=False))
    return statuses, incomplete


def _readiness_gates(pod: Pod) -> list[str]:
    """Why the pod's readiness gates are not satisfied (``GeneratePodReadyCondition``)."""
    conditions = {condition.type: condition for condition in pod.status.conditions}
    messages = []
    for gate in pod.spec.readiness_gates:
        kind = str(gate.get("conditionType", ""))
        condition = conditions.get(kind)
        if condition is None:
            messages.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif condition.status != "True":
            messages.append(f'the status of pod readiness gate "{kind}" is not "True", but {condition.status}')
    return messages


def _kubelet_conditions(pod: Pod, phase: str, unready: list[str], incomplete: list[str]) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) of Initialized, Ready, ContainersReady, PodScheduled."""
    if incomplete:
        initialized = ("Initialized", "False", "ContainersNotInitialized", f"containers with incomplete status: {_go_list(incomplete)}")
    else:
        initialized = ("Initialized", "True", "", "")
    if phase in ("Succeeded", "Failed"):
        reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        containers_ready = ("ContainersReady", "False", reason, "")
    elif unready:
        containers_ready = ("ContainersReady", "False", "ContainersNotReady", f"containers with unready status: {_go_list(unready)}")
    else:
        containers_ready = ("ContainersReady", "True", "", "")
    if containers_ready[1] != "True":
        ready = ("Ready", *containers_ready[1:])
    else:
        gates = _readiness_gates(pod)
        ready = ("Ready", "False", "ReadinessGatesNotReady", ", ".join(gates)) if gates else ("Ready", "True", "", "")
    return [initialized, ready, containers_ready, ("PodScheduled", "True", "", "")]


def _with_transitions(old: list[PodCondition], new: list[tuple[str, str, str, str]], now: float) -> list[PodCondition]:
    """The kubelet's conditions after the others, each keeping its ``lastTransitionTime``
    while its status is unchanged (``updateLastTransitionTime``)."""
    previous = {condition.type: condition for condition in old}
    kept = [condition for condition in old if condition.type not in _KUBELET_CONDITIONS]
    out = []
    for kind, status, reason, message in new:
        before = previous.get(kind)
        transition = before.last_transition_time if before is not None and before.status == status and before.last_transition_time else timestamp(now)
        out.append(PodCondition(type=kind, status=status, reason=reason, message=message, last_transition_time=transition))
    return kept + out


def generate_pod_status(
    pod: Pod,
    sandbox: SandboxRecord | None,
    probes: Mapping[tuple[str, str], ProbeState],
    waiting: Mapping[str, tuple[str, str]],
    now: float,
    *,
    host_ip: str,
    start_time: str | None,
    terminal: bool = False,
) -> PodStatus:
    """The pod's status as the kubelet reports it (module docstring, item 5). Pure.
    ``waiting``: per container, the waiting (reason, message) the kubelet decided (a
    back-off, an image or config error); ``terminal``: the pod is being torn down."""
    old = pod.status
    init_statuses, incomplete = _init_statuses(pod, sandbox)
    default_reason = "PodInitializing" if incomplete else "ContainerCreating"
    counts = _Counts()
    statuses = [_container_status(c, sandbox, probes, waiting, default_reason, now, counts) for c in pod.spec.containers]
    phase = pod_phase(pod.spec.restart_policy, counts.running, counts.codes, counts.waiting, 0, terminal=terminal)
    if old.phase in ("Succeeded", "Failed"):
        phase = old.phase  # no transition out of a terminal phase
    conditions = _with_transitions(old.conditions, _kubelet_conditions(pod, phase, counts.unready, incomplete), now)
    pod_ip = ""
    if sandbox is not None:
        pod_ip = sandbox.ip
    elif old.pod_ip:
        pod_ip = old.pod_ip
    return PodStatus(
        observed_generation=old.observed_generation,
        phase=phase,
        conditions=conditions,
        message=old.message if phase == old.phase else "",
        reason=old.reason if phase == old.phase else "",
        nominated_node_name=old.nominated_node_name,
        host_ip=host_ip,
        host_ips=[{"ip": host_ip}],
        pod_ip=pod_ip,
        pod_ips=[{"ip": pod_ip}] if pod_ip else [],
        start_time=old.start_time or start_time,
        init_container_statuses=init_statuses,
        container_statuses=statuses,
        ephemeral_container_statuses=old.ephemeral_container_statuses,
        qos_class=qos_class(pod),
        resize=old.resize,
        resource_claim_statuses=old.resource_claim_statuses,
    )


def status_dict(status: PodStatus) -> dict[str, Any]:
    """The status as JSON (defaults omitted), for diffs."""
    return to_dict(Pod(status=status)).get("status", {})


def _field_path(pod: Pod, container: Container) -> str:
    """``fieldpath.ExtractContainerFieldPath``-style reference of a container in its pod:
    ``spec.containers{name}`` (``spec.initContainers{name}`` for an init container)."""
    if any(c.name == container.name for c in pod.spec.init_containers) and not any(c.name == container.name for c in pod.spec.containers):
        return f"spec.initContainers{{{container.name}}}"
    return f"spec.containers{{{container.name}}}"


def _go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` of a duration truncated to the millisecond."""
    millis = int(seconds * 1000 + 1e-6)
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    minutes, rest = divmod(millis, 60_000)
    text = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = (f"{hours}h" if hours else "") + f"{minutes}m" + text
    return text


def _key(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _rv(obj: Any) -> int:
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


def _grace_s(pod: Pod) -> float:
    """``deletionGracePeriodSeconds`` if the pod is being deleted, else its spec's."""
    if pod.metadata.deletion_grace_period_seconds is not None:
        return float(pod.metadata.deletion_grace_period_seconds)
    grace = pod.spec.termination_grace_period_seconds
    return DEFAULT_GRACE_S if grace is None else float(max(grace, 0))


# =========================================================================== pod workers
class PodWorker:
    """``podWorkers`` for one pod UID: serializes everything the kubelet does to the pod.
    ``pod`` is the freshest copy the kubelet has (None once the API has forgotten it)."""

    def __init__(self, kubelet: Kubelet, pod: Pod | None, *, uid: str, namespace: str, name: str) -> None:
        self.kubelet = kubelet
        self.process = kubelet.process
        self.uid, self.namespace, self.name = uid, namespace, name
        self.key = f"{namespace}/{name}"
        self.pod = pod
        self.removed = pod is None
        self.done = False
        self._wake = Wake()
        self.probes: dict[tuple[str, str], ProbeState] = {}
        self._ticks: dict[tuple[str, str], float] = {}
        self._epochs: dict[tuple[str, str], float] = {}
        self.backoff: dict[str, BackoffEntry] = {}
        self.waiting: dict[str, tuple[str, str]] = {}
        self._exits_seen: set[str] = set()  # container ids whose exit was journaled (membership only)
        self._reported_phase = pod.status.phase if pod is not None else ""
        self._retry_at = math.inf
        self._deleted = False
        self.start_time = timestamp(self.process.now())
        self._probe_epoch = self.process.now()
        self._since_kubelet_start_s = self.process.now() - kubelet.started_at

    # -- inputs -------------------------------------------------------------------------
    def update(self, pod: Pod) -> None:
        if self.pod is None or _rv(pod) >= _rv(self.pod):
            self.pod = pod
        self._wake.set()

    def remove(self) -> None:
        self.removed = True
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    # -- the loop -----------------------------------------------------------------------
    async def run(self) -> None:
        while not self.done:
            self._wake = Wake()
            next_at = await self.sync()
            if self.done:
                break
            delay = min(max(next_at - self.process.now(), 0.0) + WAKE_EPSILON_S, SYNC_FREQUENCY_S)
            await self.process.wait_wake(self._wake, delay)
        self.kubelet._worker_done(self)

    async def sync(self) -> float:
        """One ``syncPod`` (or ``syncTerminatingPod``); answers when to sync next."""
        pod = self.pod
        if self.removed or pod is None or pod.metadata.deletion_timestamp is not None:
            return await self.terminate()
        runtime = self.kubelet.runtime
        sandbox = runtime.sandbox(self.uid)
        if pod.status.phase in ("Succeeded", "Failed") and (sandbox is None or sandbox.stopped):
            return self.process.now() + SYNC_FREQUENCY_S  # terminal: nothing runs again
        if sandbox is None or len(sandbox.init_containers) < len(pod.spec.init_containers):
            if not await self._create_sandbox(pod, sandbox):
                return min(self.process.now() + STATUS_RETRY_S, self._retry_at)
        for container in pod.spec.containers:
            if self._deleting():
                return self.process.now()  # deleted meanwhile: terminate at once
            await self._sync_container(pod, container)
        now = self.process.now()
        self._run_probes(pod, now)
        status = self._status(now)
        if status.phase in ("Succeeded", "Failed"):
            runtime.stop_pod_sandbox(self.uid)
        await self._report(status)
        return self._next_wake(pod)

    # -- sandbox and containers ---------------------------------------------------------
    def _deleting(self) -> bool:
        return self.removed or self.pod is None or self.pod.metadata.deletion_timestamp is not None

    async def _create_sandbox(self, pod: Pod, sandbox: SandboxRecord | None) -> bool:
        """The sandbox and the init containers; False when they failed (retried later)."""
        kubelet = self.kubelet
        await self._report(self._status(self.process.now()))  # Pending, ContainerCreating
        if sandbox is None:
            problem = await self._mount_volumes(pod)
            if problem is not None:
                self.waiting = {c.name: ("ContainerCreating", problem) for c in pod.spec.containers}
                # volumemanager/volume_manager.go (WaitForAttachAndMount) and the
                # operation executor's MountVolume.SetUp failures: Warning FailedMount
                kubelet.recorder.event(pod, "Warning", "FailedMount", problem)
                return False
        try:
            if sandbox is None:
                await kubelet.runtime.run_pod_sandbox(pod, host_ip=kubelet.spec.address, grace_s=_grace_s(pod))
            if pod.spec.init_containers:
                await kubelet.runtime.run_init_containers(self.uid, pod.spec.init_containers)
        except IpExhausted as error:
            self.waiting = {c.name: ("ContainerCreating", str(error)) for c in pod.spec.containers}
            return False
        except ImagePullError as error:
            self.waiting = {c.name: ("PodInitializing", error.message) for c in pod.spec.containers}
            return False
        self.waiting = {}
        return True

    async def _mount_volumes(self, pod: Pod) -> str | None:
        """The volume manager's ``WaitForAttachAndMount`` for the volumes whose sources are
        API objects: every ConfigMap and Secret a volume (or a projected volume) names must
        exist unless ``optional``, every PersistentVolumeClaim must exist and be Bound. The
        first that is not, in the kubelet's words (``MountVolume.SetUp failed for volume
        "config" : configmap "app-config" not found``); None when all are there. Other
        volume types mount at once (emptyDir, hostPath, ...)."""
        for reference in volume_references(pod.spec.volumes):
            try:
                obj = await self.kubelet.client.get(reference.resource, pod.metadata.namespace, reference.name)
            except ApiError as error:
                if error.code == 404:
                    if reference.optional:
                        continue
                    return f'MountVolume.SetUp failed for volume "{reference.volume}" : {reference.kind} "{reference.name}" not found'
                return f'MountVolume.SetUp failed for volume "{reference.volume}" : {error}'
            if reference.kind == "persistentvolumeclaim" and obj.metadata.deletion_timestamp is not None:
                # desired_state_of_world_populator.go getPVCExtractPV (v1.32): "Pods that
                # uses a PVC that is being deleted must not be started" -- with the claim
                # protected by the pod (kubernetes.io/pvc-protection), the pod then waits
                # for ever: kubernetes/kubernetes#74374
                return f'Unable to attach or mount volumes: unmounted volumes=[{reference.volume}]: error processing PVC {pod.metadata.namespace}/{reference.name}: PVC is being deleted'
            if reference.kind == "persistentvolumeclaim" and obj.status.phase != "Bound":
                return f'Unable to attach or mount volumes: unmounted volumes=[{reference.volume}]: persistentvolumeclaim "{reference.name}" is not bound'
        return None

    async def _sync_container(self, pod: Pod, container: Container) -> None:
        """``computePodActions`` + ``SyncPod`` for one container: start it, restart it after
        an exit (unless in back-off or not allowed), or leave it."""
        runtime, config = self.kubelet.runtime, self.kubelet.config
        sandbox = runtime.sandbox(self.uid)
        if sandbox is None:
            return
        record = sandbox.container(container.name)
        now = self.process.now()
        if record is None:
            await self._start(pod, container, 0, None)
            return
        terminated = record.terminated(now)
        if terminated is None:
            self.waiting.pop(container.name, None)
            return
        self._journal_exit(container.name, terminated)
        if not should_restart(pod.spec.restart_policy, terminated):
            self.waiting.pop(container.name, None)
            return
        entry = self.backoff.get(container.name)
        if backoff_in_effect(entry, terminated.finished_at, now, config.restart_backoff_max_s):
            assert entry is not None
            message = f"back-off {entry.backoff_s:g}s restarting failed container={container.name} pod={pod.metadata.name}_{pod.metadata.namespace}({self.uid})"
            self.waiting[container.name] = ("CrashLoopBackOff", message)
            # kuberuntime_manager.go (doBackOff): Warning BackOff
            self.kubelet.recorder.event(pod, "Warning", "BackOff", f"Back-off restarting failed container {container.name} in pod {pod.metadata.name}_{pod.metadata.namespace}({self.uid})", field_path=_field_path(pod, container))
            return
        self.backoff[container.name] = backoff_next(entry, terminated.finished_at, now, config.restart_backoff_initial_s, config.restart_backoff_max_s)
        await self._start(pod, container, record.restart_count + 1, terminated)

    async def _start(self, pod: Pod, container: Container, restart_count: int, last: Terminated | None) -> None:
        kubelet = self.kubelet
        try:
            behaviour = ContainerBehaviour.from_annotations(pod.metadata.annotations, container.name)
        except BehaviourError as error:
            self.waiting[container.name] = ("CreateContainerConfigError", str(error))
            return
        recorder, field_path = kubelet.recorder, _field_path(pod, container)
        policy = container.image_pull_policy or "IfNotPresent"
        pulling = policy == "Always" or (policy != "Never" and container.image not in kubelet.runtime.images())
        started_pull = self.process.now()
        if pulling:
            # images/image_manager.go (EnsureImageExists)
            recorder.event(pod, "Normal", "Pulling", f'Pulling image "{container.image}"', field_path=field_path)
        try:
            pulled = await kubelet.runtime.pull_image(container.image, policy)
        except ImagePullError as error:
            self.waiting[container.name] = (error.reason, error.message)
            if error.reason == "ErrImageNeverPull":
                recorder.event(pod, "Warning", error.reason, error.message, field_path=field_path)
            else:
                recorder.event(pod, "Warning", "Failed", f'Failed to pull image "{container.image}": {error.message}', field_path=field_path)
            return
        if pulled:
            took = _go_duration(self.process.now() - started_pull)
            recorder.event(pod, "Normal", "Pulled", f'Successfully pulled image "{container.image}" in {took} ({took} including waiting)', field_path=field_path)
        else:
            recorder.event(pod, "Normal", "Pulled", f'Container image "{container.image}" already present on machine', field_path=field_path)
        problem = await self._environment_problem(pod, container)  # startContainer: pull, then generateContainerConfig
        if problem is not None:
            self.waiting[container.name] = ("CreateContainerConfigError", problem)
            recorder.event(pod, "Warning", "Failed", f"Error: {problem}", field_path=field_path)
            return
        record = await kubelet.runtime.start_container(self.uid, container, behaviour, restart_count=restart_count, last=last)
        if record is None:
            return
        self.waiting.pop(container.name, None)
        # kuberuntime_container.go (startContainer): Created, then Started
        recorder.event(pod, "Normal", "Created", f"Created container {container.name}", field_path=field_path)
        recorder.event(pod, "Normal", "Started", f"Started container {container.name}", field_path=field_path)
        kubelet.world.record(
            "container-start", pod=self.key, node=kubelet.spec.name, container=container.name,
            restart_count=restart_count, container_id=record.container_id,
        )

    async def _environment_problem(self, pod: Pod, container: Container) -> str | None:
        """``makeEnvironmentVariables`` (``pkg/kubelet/kubelet_pods.go``): every ConfigMap
        and Secret the container's ``envFrom`` and ``env[].valueFrom`` read must exist, and
        every key it names must be in it, unless ``optional``; else the container waits with
        ``CreateContainerConfigError`` and upstream's message (``configmap "web-config" not
        found``, ``couldn't find key password in Secret shop/db``), retried at each sync."""
        for reference in env_references(container):
            try:
                obj = await self.kubelet.client.get(reference.resource, pod.metadata.namespace, reference.name)
            except ApiError as error:
                if error.code == 404:
                    if reference.optional:
                        continue
                    return f'{reference.kind} "{reference.name}" not found'
                return str(error)
            if not reference.key:
                continue
            keys = {*obj.data, *getattr(obj, "binary_data", {})}
            if reference.key not in keys and not reference.optional:
                title = "ConfigMap" if reference.kind == "configmap" else "Secret"
                return f"couldn't find key {reference.key} in {title} {pod.metadata.namespace}/{reference.name}"
        return None

    def _journal_exit(self, name: str, terminated: Terminated) -> None:
        if terminated.container_id in self._exits_seen:
            return
        self._exits_seen.add(terminated.container_id)
        # exited_ago_s: how long before this record the container exited (on the node's own
        # clock, so an offset clock does not shift it): the checkers' time of the exit.
        self.kubelet.world.record(
            "container-exit", pod=self.key, node=self.kubelet.spec.name, container=name,
            exit_code=terminated.exit_code, reason=terminated.reason, cause=terminated.cause,
            exited_ago_s=round(max(0.0, self.process.now() - terminated.finished_at), 6),
        )

    # -- probes -------------------------------------------------------------------------
    def _tick_due(self, key: tuple[str, str], period_s: float, now: float) -> bool:
        """The probe ticker of ``worker.run``: a first probe at once, then every period
        (missed ticks are dropped, as a Go ticker drops them)."""
        if key not in self._epochs:
            # worker.run: right after a kubelet start, wait a random part of the period first.
            offset = self.kubelet.rng.random() * period_s if period_s > self._since_kubelet_start_s else 0.0
            self._epochs[key] = self._probe_epoch + offset
        epoch = self._epochs[key]
        due = self._ticks.setdefault(key, epoch)
        if now + 1e-9 < due:
            return False
        self._ticks[key] = epoch + (math.floor((now - epoch) / period_s + 1e-9) + 1) * period_s
        return True

    def _run_probes(self, pod: Pod, now: float) -> None:
        sandbox = self.kubelet.runtime.sandbox(self.uid)
        for container in pod.spec.containers:
            record = sandbox.container(container.name) if sandbox is not None else None
            if record is None:
                continue
            try:
                behaviour = ContainerBehaviour.from_annotations(pod.metadata.annotations, container.name)
            except BehaviourError:
                continue
            for kind in ("startup", "readiness", "liveness"):
                probe = getattr(container, f"{kind}_probe")
                if probe is not None:
                    self._probe(pod, container, record, behaviour, kind, ProbeSpec.of(probe), now)

    def _probe(self, pod: Pod, container: Container, record: ContainerRecord, behaviour: ContainerBehaviour, kind: str, spec: ProbeSpec, now: float) -> None:
        key = (container.name, kind)
        if not self._tick_due(key, spec.period_s, now):
            return
        before = self.probes.get(key) or probe_initial(kind)
        running = record.running(now)
        running_for = now - record.started_at
        started = _probe_passed(container, "startup", record, self.probes)
        after = probe_tick(
            before, spec, container_id=record.container_id, running=running, started=started, running_for_s=running_for,
            deleting=False, succeeds=behaviour.probe_succeeds(kind, running_for),
        )
        self.probes[key] = after
        if running and after.result is not before.result and after.container_id == before.container_id:
            self.kubelet.world.record("probe", pod=self.key, node=self.kubelet.spec.name, container=container.name, probe=kind, result=after.result.value)
        if running and not behaviour.probe_succeeds(kind, running_for):
            # prober/prober.go (probe): Warning Unhealthy at every failed probe, "Liveness
            # probe failed: <the probe's output>"; a simulated probe has no output of its own
            self.kubelet.recorder.event(pod, "Warning", "Unhealthy", f"{kind.capitalize()} probe failed: the simulated container did not answer (chaoskube)", field_path=_field_path(pod, container))
        if after.on_hold and not before.on_hold and running:
            grace = spec.termination_grace_s if spec.termination_grace_s is not None else _grace_s(pod)
            after_s, code = stop_plan(behaviour, grace)
            self.kubelet.runtime.stop_container(self.uid, container.name, after_s=after_s, exit_code=code, cause=kind)
            # kuberuntime_manager.go (computePodActions) then killContainer: Normal Killing
            self.kubelet.recorder.event(pod, "Normal", "Killing", f"Container {container.name} failed {kind} probe, will be restarted", field_path=_field_path(pod, container))
            self.kubelet.world.record("container-kill", pod=self.key, node=self.kubelet.spec.name, container=container.name, cause=kind, after_s=after_s)

    # -- status -------------------------------------------------------------------------
    def _status(self, now: float, *, terminal: bool = False) -> PodStatus:
        assert self.pod is not None
        sandbox = self.kubelet.runtime.sandbox(self.uid)
        return generate_pod_status(
            self.pod, sandbox, self.probes, self.waiting, now, host_ip=self.kubelet.spec.address, start_time=self.start_time, terminal=terminal,
        )

    async def _report(self, status: PodStatus) -> None:
        """``syncPod`` of the status manager: a merge patch of what changed, if anything."""
        pod = self.pod
        if pod is None or self.removed:
            return
        if pod.status == status:  # equal structs have equal JSON: nothing to report
            self._retry_at = math.inf  # nor to retry: a failed write whose status arrived anyway (its answer lost)
            return
        old, new = status_dict(pod.status), status_dict(status)
        if old == new:
            self._retry_at = math.inf
            return
        patch = {"metadata": {"uid": self.uid}, "status": create_merge_patch(old, new)}
        if self.process.world.buggify.enabled:  # BUGGIFY: the status manager writes later
            await maybe_sleep(self.process, "kubelet.status-update")
        try:
            updated = await self.kubelet.client.patch("pods", self.namespace, self.name, patch, subresource="status")
        except ApiError as error:
            if error.code in (404, 409):
                return  # gone, or replaced by a pod with another UID
            self._retry_at = self.process.now() + STATUS_RETRY_S
            return
        self._retry_at = math.inf
        assert isinstance(updated, Pod)
        if self.pod is None or _rv(updated) >= _rv(self.pod):
            self.pod = updated  # the freshest copy; no need to wake for our own write
        if status.phase != self._reported_phase:
            self._reported_phase = status.phase
            self.kubelet.world.record("pod-phase", pod=self.key, node=self.kubelet.spec.name, phase=status.phase)

    def _next_wake(self, pod: Pod) -> float:
        now = self.process.now()
        wake = min(now + SYNC_FREQUENCY_S, self._retry_at)
        sandbox = self.kubelet.runtime.sandbox(self.uid)
        if sandbox is None:
            return wake
        max_s = self.kubelet.config.restart_backoff_max_s
        for container in pod.spec.containers:
            record = sandbox.container(container.name)
            if record is None:
                continue
            if record.running(now):
                if record.exit_at is not None:
                    wake = min(wake, record.exit_at)
                for kind in ("startup", "readiness", "liveness"):
                    probe = getattr(container, f"{kind}_probe")
                    if probe is not None:
                        wake = min(wake, self._ticks.get((container.name, kind), now))
                continue
            entry = self.backoff.get(container.name)
            terminated = record.terminated(now)
            if terminated is not None and container.name in self.waiting and backoff_in_effect(entry, terminated.finished_at, now, max_s):
                assert entry is not None
                wake = min(wake, terminated.finished_at + entry.backoff_s)
        return wake

    # -- termination --------------------------------------------------------------------
    async def terminate(self) -> float:
        """``syncTerminatingPod`` then ``syncTerminatedPod``: stop the containers with the
        grace period, report the terminal status, delete the pod with grace 0, and remove
        the sandbox."""
        runtime = self.kubelet.runtime
        now = self.process.now()
        sandbox = runtime.sandbox(self.uid)
        pod = self.pod
        grace = _grace_s(pod) if pod is not None else (sandbox.grace_s if sandbox is not None else DEFAULT_GRACE_S)
        if sandbox is not None:
            latest = now
            for record in sandbox.containers:
                if not record.running(now):
                    continue
                behaviour = ContainerBehaviour()
                if pod is not None:
                    try:
                        behaviour = ContainerBehaviour.from_annotations(pod.metadata.annotations, record.name)
                    except BehaviourError:
                        pass
                after_s, code = stop_plan(behaviour, grace)
                stopped = runtime.stop_container(self.uid, record.name, after_s=after_s, exit_code=code, cause="deletion")
                if stopped is not None and stopped.exit_at is not None:
                    latest = max(latest, stopped.exit_at)
                    if stopped.exit_at != record.exit_at:  # SIGTERM sent now (not again)
                        if pod is not None:
                            # kuberuntime_container.go (killContainer): Normal Killing
                            container = next((c for c in pod.spec.containers if c.name == record.name), None)
                            self.kubelet.recorder.event(pod, "Normal", "Killing", f"Stopping container {record.name}", field_path=_field_path(pod, container) if container is not None else "")
                        self.kubelet.world.record(
                            "container-term", pod=self.key, uid=self.uid, node=self.kubelet.spec.name, container=record.name,
                            grace_s=grace, exit_after_s=round(stopped.exit_at - now, 9), exit_code=stopped.exit_code,
                        )
            if latest > now:
                if pod is not None and not self.removed:
                    await self._report(self._status(now))
                return latest
            for record in sandbox.containers:
                terminated = record.terminated(now)
                if terminated is not None:
                    self._journal_exit(record.name, terminated)
            runtime.stop_pod_sandbox(self.uid)
        if pod is not None and not self.removed:
            await self._report(self._status(self.process.now(), terminal=True))
            if not await self._delete(pod):
                return self.process.now() + STATUS_RETRY_S
        runtime.remove_pod_sandbox(self.uid)
        self.done = True
        return self.process.now()

    async def _delete(self, pod: Pod) -> bool:
        """The status manager's final delete (grace 0, UID precondition). True when the pod
        is gone (or replaced), False to try again later."""
        if self._deleted:
            return True
        options = DeleteOptions(grace_period_seconds=0, preconditions_uid=self.uid)
        try:
            await self.kubelet.client.delete("pods", self.namespace, self.name, options=options)
        except ApiError as error:
            if error.code not in (404, 409):
                return False
        self._deleted = True
        self.kubelet.world.record("pod-deleted", pod=self.key, node=self.kubelet.spec.name, uid=self.uid)
        return True

    # -- traffic ------------------------------------------------------------------------
    def answers(self, now: float) -> str:
        """How the pod's application answers a request now: "ok", "refused" or "silent"."""
        sandbox = self.kubelet.runtime.sandbox(self.uid)
        if sandbox is None or sandbox.stopped:
            return "silent"
        return _answer(sandbox, self.pod, now)


def _answer(sandbox: SandboxRecord, pod: Pod | None, now: float) -> str:
    """How the pod's application answers: from the runtime's records alone (a container
    that hangs carries ``hang_at``), so it is the same with or without a kubelet running;
    ``pod`` (when the kubelet has it) adds its containers that have not started yet."""
    containers = pod.spec.containers if pod is not None else []
    names = [c.name for c in containers] or [c.name for c in sandbox.containers]
    for name in names:
        record = sandbox.container(name)
        if record is None or not record.running(now):
            return "refused"
        if record.hung(now):
            return "silent"
    return "ok"


# =========================================================================== the kubelet
#: Where a node process keeps its :class:`KubeletSwitch` (``process.memory``: per incarnation).
KUBELET_SWITCH_KEY = "kubelet/switch"


class KubeletSwitch:
    """``systemctl stop|start kubelet`` for one incarnation of a node process: the kubelet
    runs while the switch is on. ``set_running`` is synchronous and idempotent (callable
    from a world callback, e.g. a fault); turning it off cancels the running kubelet at
    once, turning it on lets it start again. The node's containers and its traffic handler
    are not affected."""

    def __init__(self) -> None:
        self.running = True
        self._changed = trio.Event()
        self._on_stop: Any = None  # the running kubelet's cancel, while it runs

    def set_running(self, running: bool) -> bool:
        """Turn the kubelet on or off; answers whether anything changed."""
        if running == self.running:
            return False
        self.running = running
        if not running and self._on_stop is not None:
            self._on_stop()
        self._changed.set()
        self._changed = trio.Event()
        return True

    async def wait_running(self) -> None:
        while not self.running:
            await self._changed.wait()


def kubelet_switch(process: Process) -> KubeletSwitch:
    """The switch of ``process``'s current incarnation, made on first use (a restarted
    process starts with its kubelet on, unless something turns it off again)."""
    switch = process.memory.get(KUBELET_SWITCH_KEY)
    if switch is None:
        switch = process.memory[KUBELET_SWITCH_KEY] = KubeletSwitch()
    return switch


class Kubelet:
    """The kubelet of node ``spec`` in ``process`` (module docstring). ``await run()``
    runs it until the process dies; it never returns."""

    def __init__(self, process: Process, client: ApiClient, spec: KubeletNode, config: KubeletConfig | None = None) -> None:
        self.process = process
        self.world = process.world
        self.client = client
        self.spec = spec
        self.config = config or KubeletConfig()
        self.runtime = ContainerRuntime(process, node=spec.name, pod_cidr=spec.pod_cidr, config=self.config)
        self.rng = process.random(f"kubelet/{spec.name}")
        self._fresh_memory()

    def _fresh_memory(self) -> None:
        """What the kubelet keeps only in memory (module docstring, items 7 and 9): lost on
        every start, whether the process or only the kubelet restarted."""
        self.informers = SharedInformerFactory(self.client)
        self.pods = self.informers.informer("pods", field_selector=f"spec.nodeName={self.spec.name}")
        self.pods.add_event_handler(on_add=self._pod_seen, on_update=lambda _old, new: self._pod_seen(new), on_delete=self._pod_gone)
        self.workers: dict[str, PodWorker] = {}
        # The kubelet's EventRecorder (source kubelet, host the node): its correlation
        # caches are memory too.
        self.recorder = EventRecorder(self.client, "kubelet", self.spec.name)
        self.registered = trio.Event()
        self.started_at = self.process.now()
        self.node_uid = ""
        self.lease: Lease | None = None
        self._last_status_report = -math.inf
        self._nursery: trio.Nursery | None = None
        self._finished: dict[str, None] = {}  # UIDs torn down, oldest first (bounded)

    # -- running ------------------------------------------------------------------------
    async def run(self) -> None:
        """Serve traffic for the node's containers for as long as the process lives, and run
        the kubelet whenever the process's :class:`KubeletSwitch` is on (module docstring,
        item 9)."""
        self.process.on_message(TRAFFIC_PORT, self._on_traffic)
        switch = kubelet_switch(self.process)
        first = True
        while True:
            await switch.wait_running()
            if not first:
                self._fresh_memory()
            first = False
            with trio.CancelScope() as scope:
                switch._on_stop = scope.cancel
                await self._serve()
            switch._on_stop = None
            self.workers = {}  # the pod workers died with the kubelet; the containers did not
            self.world.record("kubelet", event="stop", node=self.spec.name)

    async def _serve(self) -> None:
        adopted = [f"{record.namespace}/{record.name}" for record in self.runtime.sandboxes() if not record.stopped]
        self.world.record("kubelet", event="start", node=self.spec.name, adopted=adopted)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self.register()
            nursery.start_soon(self._node_status_loop)
            nursery.start_soon(self._lease_loop)
            self.informers.start(nursery)
            nursery.start_soon(self._housekeeping)

    def _spawn(self, worker: PodWorker) -> None:
        assert self._nursery is not None, "pods are handled once the kubelet runs"
        self.workers[worker.uid] = worker
        self._nursery.start_soon(worker.run)

    def _worker_done(self, worker: PodWorker) -> None:
        if self.workers.get(worker.uid) is worker:
            del self.workers[worker.uid]
        # A pod deleted with finalizers stays in the API: do not tear it down twice.
        self._finished[worker.uid] = None
        while len(self._finished) > MAX_FINISHED_PODS:
            del self._finished[next(iter(self._finished))]  # the oldest (insertion order)

    # -- pods from the informer ---------------------------------------------------------
    def _pod_seen(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        worker = self.workers.get(uid)
        if worker is not None:
            worker.update(pod)
            return
        if uid in self._finished:
            return
        if pod.status.phase in ("Succeeded", "Failed") and pod.metadata.deletion_timestamp is None and self.runtime.sandbox(uid) is None:
            return  # a terminal pod the kubelet no longer runs
        self._spawn(PodWorker(self, pod, uid=uid, namespace=pod.metadata.namespace, name=pod.metadata.name))

    def _pod_gone(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        worker = self.workers.get(pod.metadata.uid)
        if worker is not None:
            worker.remove()

    async def _housekeeping(self) -> None:
        """``HandlePodCleanups``: sandboxes whose pod the API no longer has are torn down."""
        await self.pods.wait_for_sync()
        while True:
            known = {pod.metadata.uid for pod in self.pods.indexer.list()}
            for record in self.runtime.sandboxes():
                if record.uid not in self.workers and record.uid not in known:
                    self.world.record("kubelet", event="orphan", node=self.spec.name, pod=f"{record.namespace}/{record.name}", uid=record.uid)
                    self._spawn(PodWorker(self, None, uid=record.uid, namespace=record.namespace, name=record.name))
            await self.process.sleep(HOUSEKEEPING_S)

    # -- traffic ------------------------------------------------------------------------
    def _on_traffic(self, message: Any) -> None:
        request = message.body
        if not isinstance(request, TrafficRequest) or not message.call_id:
            return
        sandbox = self.runtime.sandbox_by_ip(request.pod_ip)
        if sandbox is None:
            return  # no such address here: the packet is dropped
        worker = self.workers.get(sandbox.uid)  # none while the kubelet is stopped: the containers answer alone
        answer = _answer(sandbox, worker.pod if worker is not None else None, self.process.now())
        if answer == "ok":
            self.process.reply(message, {"pod": f"{sandbox.namespace}/{sandbox.name}", "node": self.spec.name})
        elif answer == "refused":
            self.process.reply(message, "connection refused", ok=False)

    # -- registration -------------------------------------------------------------------
    async def register(self) -> None:
        """``registerWithAPIServer``: until the Node exists with the kubelet's labels."""
        step = RETRY_INITIAL_S
        while True:
            await self.process.sleep(step)
            step = min(step * 2, RETRY_MAX_S)
            if await self._try_register():
                break
        self.registered.set()

    async def _try_register(self) -> bool:
        node = initial_node(self.spec, self.process.now())
        try:
            created = await self.client.create(node)
        except ApiError as error:
            if error.code != 409:
                return False
        else:
            self.node_uid = created.metadata.uid
            self.world.record("kubelet", event="registered", node=self.spec.name, created=True)
            return True
        try:
            existing = await self.client.get("nodes", "", self.spec.name)
        except ApiError:
            return False
        labels = node_labels(self.spec)
        wanted = {key: labels[key] for key in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch", "topology.kubernetes.io/zone") if key in labels}
        changed = {key: value for key, value in wanted.items() if existing.metadata.labels.get(key) != value}
        if changed:
            try:
                existing = await self.client.patch("nodes", "", self.spec.name, {"metadata": {"labels": changed}})
            except ApiError:
                return False
        self.node_uid = existing.metadata.uid
        self.world.record("kubelet", event="registered", node=self.spec.name, created=False)
        return True

    # -- node status --------------------------------------------------------------------
    def _jittered(self, period_s: float) -> float:
        return period_s * (1.0 + JITTER_FACTOR * self.rng.random())

    async def _node_status_loop(self) -> None:
        while True:
            await self.sync_node_status()
            await self.process.sleep(self._jittered(self.config.node_status_update_frequency_s))

    async def sync_node_status(self) -> bool:
        """``updateNodeStatus``: True when the status is up to date on the server."""
        for attempt in range(STATUS_UPDATE_RETRIES):
            try:
                node = await self.client.get("nodes", "", self.spec.name, resource_version="0" if attempt == 0 else "")
            except ApiError:
                continue
            assert isinstance(node, Node)
            now = self.process.now()
            status = _node_status(self.spec, node.status, now)
            if now < self._last_status_report + self.config.node_status_report_frequency_s and not node_status_changed(node.status, status):
                return True
            old, new = to_dict(node).get("status", {}), to_dict(Node(status=status)).get("status", {})
            try:
                await self.client.patch("nodes", "", self.spec.name, {"status": create_merge_patch(old, new)}, subresource="status")
            except ApiError:
                continue
            self._last_status_report = now
            return True
        return False

    # -- node lease ---------------------------------------------------------------------
    async def _lease_loop(self) -> None:
        interval = self.config.node_lease_duration_s * RENEW_INTERVAL_FRACTION
        while True:
            await self.sync_lease()
            await self.process.sleep(self._jittered(interval))

    def _new_lease(self, base: Lease | None) -> Lease:
        """``newLease``: the base (or a fresh Lease) with ``renewTime`` now."""
        now = micro_timestamp(self.process.now())
        if base is None:
            owner = [OwnerReference(api_version="v1", kind="Node", name=self.spec.name, uid=self.node_uid)] if self.node_uid else []
            spec = LeaseSpec(holder_identity=self.spec.name, lease_duration_seconds=int(self.config.node_lease_duration_s), renew_time=now)
            return Lease(metadata=ObjectMeta(name=self.spec.name, namespace=NODE_LEASE_NAMESPACE, owner_references=owner), spec=spec)
        return msgspec.structs.replace(base, spec=msgspec.structs.replace(base.spec, renew_time=now))

    async def sync_lease(self) -> bool:
        """The lease controller's ``sync``: True when the Lease was renewed (or created)."""
        if self.lease is not None and await self._retry_update_lease(self.lease):
            return True
        lease, created = await self._backoff_ensure_lease()
        self.lease = lease
        if lease is None:
            return False
        if created:
            return True
        return await self._retry_update_lease(lease)

    async def _backoff_ensure_lease(self) -> tuple[Lease | None, bool]:
        sleep = RETRY_INITIAL_S
        for _ in range(ENSURE_LEASE_ATTEMPTS):
            try:
                return await self._ensure_lease()
            except ApiError:
                sleep = min(2 * sleep, RETRY_MAX_S)
                await self.process.sleep(sleep)
        return None, False

    async def _ensure_lease(self) -> tuple[Lease | None, bool]:
        try:
            lease = await self.client.get("leases", NODE_LEASE_NAMESPACE, self.spec.name)
        except ApiError as error:
            if error.code != 404:
                raise
        else:
            assert isinstance(lease, Lease)
            return lease, False
        if not self.node_uid:
            try:
                node = await self.client.get("nodes", "", self.spec.name)
            except ApiError:
                return None, False  # no owner reference yet: create it next time
            self.node_uid = node.metadata.uid
        created = await self.client.create(self._new_lease(None))
        assert isinstance(created, Lease)
        return created, True

    async def _retry_update_lease(self, base: Lease) -> bool:
        for _ in range(STATUS_UPDATE_RETRIES):
            try:
                updated = await self.client.update(self._new_lease(base))
            except ApiError as error:
                if error.code == 409:
                    fresh, _ = await self._backoff_ensure_lease()
                    if fresh is None:
                        return False
                    base = fresh
                continue
            assert isinstance(updated, Lease)
            self.lease = updated
            return True
        return False


# =========================================================================== kubectl drain
@dataclass(frozen=True, slots=True)
class DrainResult:
    """What a drain did: pods evicted and gone, pods still there at the end (timeout), and
    pods whose eviction failed with an error other than 429 (as kubectl reports them)."""

    node: str
    evicted: tuple[str, ...]
    remaining: tuple[str, ...]
    errors: tuple[str, ...]
    timed_out: bool

    @property
    def completed(self) -> bool:
        return not self.remaining and not self.errors and not self.timed_out


def pods_to_evict(pods: Iterable[Pod]) -> list[Pod]:
    """``kubectl drain``'s filters with ``--ignore-daemonsets``: DaemonSet pods and mirror
    pods stay; every other pod is evicted. Sorted by namespace/name."""
    chosen = []
    for pod in pods:
        if MIRROR_POD_ANNOTATION in pod.metadata.annotations:
            continue
        if any(ref.kind == "DaemonSet" and ref.controller for ref in pod.metadata.owner_references):
            continue
        chosen.append(pod)
    return sorted(chosen, key=_key)


async def cordon(client: ApiClient, node: str, *, unschedulable: bool = True) -> None:
    """``kubectl cordon`` (``uncordon`` with ``unschedulable=False``): patch the Node's
    ``spec.unschedulable``. Raises ApiError."""
    await client.patch("nodes", "", node, {"spec": {"unschedulable": unschedulable}})


async def drain(
    client: ApiClient, node: str, *, grace_period_s: int | None = None, timeout_s: float = 300.0, retry_s: float = 5.0, poll_s: float = 1.0
) -> DrainResult:
    """``kubectl drain --ignore-daemonsets`` (``staging/src/k8s.io/kubectl/pkg/drain``):
    cordon the node, then evict every pod :func:`pods_to_evict` picks, all at once, each
    retried every ``retry_s`` (5 s) while the eviction answers 429 (a
    PodDisruptionBudget allows no disruption), then wait for it to be gone (polled every
    ``poll_s``, 1 s: ``waitForDelete``, gone = 404 or another UID). Stops at
    ``timeout_s``: kubectl's default is no timeout, ours is bounded. ``grace_period_s``
    goes into the evictions' DeleteOptions. Journals each step as ``drain`` events.
    Raises ApiError when the cordon or the list fails."""
    process = client.process
    world = process.world
    world.record("drain", node=node, event="cordon")
    await cordon(client, node)
    listed = await client.list("pods", field_selector=f"spec.nodeName={node}")
    targets = pods_to_evict(listed.items)  # type: ignore[arg-type]
    evicted: list[str] = []
    errors: list[str] = []
    failed: list[str] = []
    options = DeleteOptions(grace_period_seconds=grace_period_s) if grace_period_s is not None else None

    async def evict_one(pod: Pod) -> None:
        key = _key(pod)
        while True:
            try:
                await client.evict(pod.metadata.namespace, pod.metadata.name, delete_options=options)
            except ApiError as error:
                world.record("drain", node=node, event="evict", pod=key, code=error.code, reason=error.reason)
                if error.code == 404:
                    evicted.append(key)
                    return
                if error.code != 429:
                    errors.append(f'error when evicting pods/"{pod.metadata.name}" -n "{pod.metadata.namespace}": {error}')
                    failed.append(key)
                    return
                await process.sleep(retry_s)
                continue
            world.record("drain", node=node, event="evict", pod=key, code=201, reason="")
            break
        while True:
            try:
                current = await client.get("pods", pod.metadata.namespace, pod.metadata.name)
            except ApiError as error:
                if error.code == 404:
                    break
            else:
                if current.metadata.uid != pod.metadata.uid:
                    break
            await process.sleep(poll_s)
        evicted.append(key)
        world.record("drain", node=node, event="gone", pod=key)

    with process.move_on_after(timeout_s) as scope:
        async with trio.open_nursery() as nursery:
            for pod in targets:
                nursery.start_soon(evict_one, pod)
    finished = set(evicted) | set(failed)  # membership only
    remaining = tuple(_key(pod) for pod in targets if _key(pod) not in finished)
    result = DrainResult(node=node, evicted=tuple(sorted(evicted)), remaining=remaining, errors=tuple(sorted(errors)), timed_out=scope.cancelled_caught)
    world.record("drain", node=node, event="done", evicted=len(result.evicted), remaining=len(remaining), errors=len(errors), timed_out=result.timed_out)
    return result

"""A simulated container runtime (CRI) for the kubelet: a pure core and a thin shell.

The pure core models what the kubelet computes about containers, each piece after the
upstream code it follows:

- :class:`ContainerBehaviour` — what a container's process does, read from pod annotations
  (the contract below); the runtime's only source of "application" behaviour.
- :class:`ProbeSpec` / :class:`ProbeState` / :func:`probe_tick` — the probe worker of
  ``pkg/kubelet/prober/worker.go`` (``doProbe``): readiness starts as Failure, liveness as
  Success, startup as Unknown (``newWorker``); no probing before ``initialDelaySeconds``;
  readiness and liveness wait until the container has started (startup probe passed);
  ``successThreshold`` / ``failureThreshold`` consecutive results change the result; a
  liveness or startup Failure puts the worker on hold until a new container appears.
  Defaults are ``SetDefaults_Probe`` (``pkg/apis/core/v1/defaults.go``): period 10 s,
  timeout 1 s, success 1, failure 3.
- :class:`BackoffEntry` / :func:`backoff_in_effect` / :func:`backoff_next` — the
  CrashLoopBackOff of ``kuberuntime_manager.go`` ``doBackOff`` over client-go's
  ``flowcontrol.Backoff`` (``util/flowcontrol/backoff.go``) with the kubelet's
  ``backOffPeriod`` 10 s and ``MaxContainerBackOff`` 300 s (``pkg/kubelet/kubelet.go``), no
  jitter: the first restart after an exit is immediate; each later exit waits the current
  back-off counted from the exit (``IsInBackOffSince``), and each restart doubles it
  (``Next``) up to 300 s: waits 0, 10, 20, 40, 80, 160, 300, 300 s... The entry resets when
  an exit comes more than 2 x 300 s after the last restart (``hasExpired``).
- :func:`pod_phase` — ``getPhase`` of ``pkg/kubelet/kubelet_pods.go`` for regular
  containers.
- :class:`ContainerRecord` — a container as the runtime stores it. Its state is a function
  of time: a record carries its start and its planned exit (``exit_at``), so
  :meth:`ContainerRecord.terminated` answers for any ``now`` without a task per container;
  it also carries when the process hangs (``hang_at``), so a container answers traffic
  as its behaviour says even while no kubelet runs (``kubelet-stop``).

The shell, :class:`ContainerRuntime`, keeps the node's sandboxes, containers, images and IP
allocations on ``process.disk`` (key prefix ``runtime/``) and takes the configured
latencies (``KubeletConfig.sandbox_start_s``, ``image_pull_s``, ``container_start_s``) on
the process's clock. Because the state is on the disk and exits are planned, containers
survive a kill and restart of the kubelet process, as real containers survive a kubelet
restart (containerd keeps running them): a restarted kubelet re-adopts them, and an exit
planned while it was down is seen as having happened at its time. Writes are not fsynced:
a crash keeps them (page cache) unless the disk loses unsynced writes
(``lose_unsynced_on_crash``, a power loss), in which case the containers are gone too, as
after a reboot.

Pod IPs (``--pod-cidr``; CNI ``host-local`` IPAM, ``plugins/ipam/host-local``): the
first address of the node's pod CIDR is the bridge's gateway; pods get the next free
address after the last one handed out, wrapping around, as host-local allocates; the
allocations are on the disk. Image pulls are serialized per node
(``serializeImagePulls: true``, the kubelet default) and cached per node: ``IfNotPresent``
pulls only a missing image, ``Always`` pulls every time (with the full pull latency: the
registry round trip is not modelled separately), ``Never`` fails with
``ErrImageNeverPull`` when the image is missing.

Behaviour annotations (on the pod; ``<key>.<container>`` overrides ``<key>`` for that
container; durations are Go durations such as ``30s``, ``1m30s``, ``500ms``, or seconds):

- ``chaoskube.io/exit-after``: the process exits this long after it started (default:
  never); ``chaoskube.io/exit-code``: with this code (default 0).
- ``chaoskube.io/ready-after``: the readiness probe fails until this long after start.
- ``chaoskube.io/fail-readiness-after``: the readiness probe fails from this long after
  start on (the app stays up and keeps answering traffic).
- ``chaoskube.io/fail-liveness-after``: from this long after start the process hangs: its
  liveness and readiness probes fail and it answers no traffic.
- ``chaoskube.io/started-after``: the startup probe fails until this long after start.
- ``chaoskube.io/shutdown-s``: seconds the process takes to exit after SIGTERM (default 1);
  it exits with code 0 if that fits in the grace period, else it is SIGKILLed at the end of
  the grace period (exit code 137).

Every behaviour is counted from the start of each container instance: a restarted
container behaves like a new process. An annotation that cannot be parsed makes the
container fail to start with ``CreateContainerConfigError`` (:class:`BehaviourError`).

Non-guarantees: probe handlers (exec, HTTP, TCP, gRPC) are not run; a probe's result is
the behaviour's, instantly (``timeoutSeconds`` is not modelled); no OOM kills, no resource
enforcement, no volumes, no image garbage collection; init containers run to completion
with exit code 0 at once (behaviours do not apply to them); restartable (sidecar) init
containers are treated as ordinary init containers.
"""

from __future__ import annotations

import enum
import hashlib
import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import trio

from chaoskube.api.objects import Container, Pod, Probe

if TYPE_CHECKING:
    from chaoskube.config import KubeletConfig
    from chaoskube.sim.process import Process

__all__ = [
    "ANNOTATION_PREFIX",
    "BackoffEntry",
    "BehaviourError",
    "ContainerBehaviour",
    "ContainerRecord",
    "ContainerRuntime",
    "ImagePullError",
    "IpExhausted",
    "ProbeResult",
    "ProbeSpec",
    "ProbeState",
    "SandboxRecord",
    "TRAFFIC_PORT",
    "Terminated",
    "TrafficRequest",
    "backoff_in_effect",
    "backoff_next",
    "container_id_of",
    "parse_duration",
    "pod_phase",
    "probe_initial",
    "probe_tick",
    "should_restart",
    "stop_plan",
]

ANNOTATION_PREFIX = "chaoskube.io/"
#: The port on which a node's process answers traffic for its pods (see kube-proxy).
TRAFFIC_PORT = "pod-traffic"
#: The exit code of a process killed by SIGKILL (128 + 9).
SIGKILL_EXIT_CODE = 137
#: Bound on the containers one pod may have (the API has no bound; ours keeps loops bounded).
MAX_CONTAINERS = 64
_DISK = "runtime/"


# =========================================================================== behaviours
class BehaviourError(ValueError):
    """A behaviour annotation that cannot be parsed (the container cannot be created)."""


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """A Go ``time.ParseDuration`` string ("1m30s", "500ms") or plain seconds ("2.5"), in
    seconds. Negative or malformed durations raise :class:`BehaviourError`."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
        position, total = 0, 0.0
        while position < len(value):
            match = _DURATION_PART.match(value, position)
            if match is None:
                raise BehaviourError(f"invalid duration {text!r}") from None
            total += float(match.group(1)) * _UNIT_S[match.group(2)]
            position = match.end()
        if position:
            seconds = total
    if not (math.isfinite(seconds) and seconds >= 0):
        raise BehaviourError(f"invalid duration {text!r}: must be a duration >= 0")
    return seconds


@dataclass(frozen=True, slots=True)
class ContainerBehaviour:
    """What a container's process does, counted from its start (module docstring)."""

    exit_after_s: float | None = None
    exit_code: int = 0
    ready_after_s: float = 0.0
    fail_readiness_after_s: float | None = None
    fail_liveness_after_s: float | None = None
    started_after_s: float = 0.0
    shutdown_s: float = 1.0

    @classmethod
    def from_annotations(cls, annotations: Mapping[str, str], container: str) -> ContainerBehaviour:
        """The behaviour of ``container`` from its pod's annotations; raises BehaviourError."""

        def value(key: str) -> str | None:
            return annotations.get(f"{ANNOTATION_PREFIX}{key}.{container}", annotations.get(f"{ANNOTATION_PREFIX}{key}"))

        def duration(key: str) -> float | None:
            text = value(key)
            return None if text is None else parse_duration(text)

        code_text = value("exit-code")
        try:
            exit_code = int(code_text) if code_text is not None else 0
        except ValueError:
            raise BehaviourError(f"invalid exit code {code_text!r}") from None
        if not 0 <= exit_code <= 255:
            raise BehaviourError(f"invalid exit code {code_text!r}: must be in [0, 255]")
        shutdown = duration("shutdown-s")
        return cls(
            exit_after_s=duration("exit-after"),
            exit_code=exit_code,
            ready_after_s=duration("ready-after") or 0.0,
            fail_readiness_after_s=duration("fail-readiness-after"),
            fail_liveness_after_s=duration("fail-liveness-after"),
            started_after_s=duration("started-after") or 0.0,
            shutdown_s=1.0 if shutdown is None else shutdown,
        )

    def hung(self, running_for_s: float) -> bool:
        """The process no longer makes progress (its liveness fails)."""
        return self.fail_liveness_after_s is not None and running_for_s >= self.fail_liveness_after_s

    def probe_succeeds(self, kind: str, running_for_s: float) -> bool:
        """The result of one probe of ``kind`` after the process ran ``running_for_s``."""
        if kind == "startup":
            return running_for_s >= self.started_after_s
        if kind == "liveness":
            return not self.hung(running_for_s)
        assert kind == "readiness", kind
        failing = self.fail_readiness_after_s is not None and running_for_s >= self.fail_readiness_after_s
        return running_for_s >= self.ready_after_s and not failing and not self.hung(running_for_s)


def stop_plan(behaviour: ContainerBehaviour, grace_s: float) -> tuple[float, int]:
    """(seconds until exit, exit code) of a container sent SIGTERM with ``grace_s`` of grace:
    it exits cleanly after its shutdown time, or is SIGKILLed when the grace period ends
    (``kuberuntime_container.go`` ``killContainer``)."""
    grace_s = max(0.0, grace_s)
    if behaviour.shutdown_s <= grace_s:
        return behaviour.shutdown_s, 0
    return grace_s, SIGKILL_EXIT_CODE


# =========================================================================== probes
class ProbeResult(enum.Enum):
    SUCCESS = "Success"
    FAILURE = "Failure"
    UNKNOWN = "Unknown"


PROBE_KINDS = ("startup", "readiness", "liveness")
_INITIAL = {"readiness": ProbeResult.FAILURE, "liveness": ProbeResult.SUCCESS, "startup": ProbeResult.UNKNOWN}


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    """A probe's timing, with ``SetDefaults_Probe``'s defaults for unset fields."""

    initial_delay_s: float = 0.0
    period_s: float = 10.0
    timeout_s: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace_s: float | None = None

    @classmethod
    def of(cls, probe: Probe) -> ProbeSpec:
        return cls(
            initial_delay_s=float(probe.initial_delay_seconds or 0),
            period_s=float(probe.period_seconds or 10),
            timeout_s=float(probe.timeout_seconds or 1),
            success_threshold=probe.success_threshold or 1,
            failure_threshold=probe.failure_threshold or 3,
            termination_grace_s=None if probe.termination_grace_period_seconds is None else float(probe.termination_grace_period_seconds),
        )


@dataclass(frozen=True, slots=True)
class ProbeState:
    """One probe worker's memory (``worker.go``): the result the kubelet acts on for
    ``container_id``, the last raw result and how many times in a row it came, and whether
    the worker waits for a new container (``onHold``)."""

    kind: str
    result: ProbeResult
    container_id: str = ""
    last: ProbeResult | None = None
    run: int = 0
    on_hold: bool = False


def probe_initial(kind: str) -> ProbeState:
    assert kind in _INITIAL, kind
    return ProbeState(kind=kind, result=_INITIAL[kind])


def probe_tick(
    state: ProbeState,
    spec: ProbeSpec,
    *,
    container_id: str,
    running: bool,
    started: bool,
    running_for_s: float,
    deleting: bool,
    succeeds: bool,
) -> ProbeState:
    """One ``doProbe``: the new state. ``succeeds`` is what the probe would answer now;
    ``started`` is the container's Started status (startup probe passed, or none)."""
    if not container_id:
        return state  # not created yet: wait for more information
    if container_id != state.container_id:
        state = replace(state, container_id=container_id, result=_INITIAL[state.kind], on_hold=False)
    if state.on_hold:
        return state
    if not running:
        return replace(state, result=ProbeResult.FAILURE)
    if deleting and state.kind in ("liveness", "startup"):
        return replace(state, result=ProbeResult.SUCCESS)  # quiet shutdown
    if running_for_s < spec.initial_delay_s:
        return state
    if started != (state.kind != "startup"):
        return state  # startup probes stop once started; the others wait for it
    result = ProbeResult.SUCCESS if succeeds else ProbeResult.FAILURE
    run = state.run + 1 if state.last == result else 1
    state = replace(state, last=result, run=run)
    threshold = spec.failure_threshold if result is ProbeResult.FAILURE else spec.success_threshold
    if run < threshold:
        return state
    state = replace(state, result=result)
    if state.kind in ("liveness", "startup") and result is ProbeResult.FAILURE:
        state = replace(state, on_hold=True, run=0)
    return state


# =========================================================================== back-off
@dataclass(frozen=True, slots=True)
class BackoffEntry:
    """``flowcontrol.backoffEntry``: the current back-off and the time of the last restart."""

    backoff_s: float
    last_update: float


def backoff_in_effect(entry: BackoffEntry | None, finished_at: float, now: float, max_s: float) -> bool:
    """``IsInBackOffSince(key, finishedAt)``: must the exited container still wait?"""
    if entry is None or finished_at - entry.last_update > 2 * max_s:
        return False
    return now - finished_at < entry.backoff_s


def backoff_next(entry: BackoffEntry | None, finished_at: float, now: float, initial_s: float, max_s: float) -> BackoffEntry:
    """``Next(key, finishedAt)`` at a restart at ``now``."""
    if entry is None or finished_at - entry.last_update > 2 * max_s:
        return BackoffEntry(initial_s, now)
    return BackoffEntry(min(entry.backoff_s * 2, max_s), now)


# =========================================================================== containers
@dataclass(frozen=True, slots=True)
class Terminated:
    """A finished container instance (``ContainerStateTerminated``)."""

    exit_code: int
    reason: str
    started_at: float
    finished_at: float
    container_id: str
    cause: str = ""  # why the kubelet stopped it: "", "liveness", "startup", "deletion"


@dataclass(frozen=True, slots=True)
class ContainerRecord:
    """A container instance on the node. Running from ``started_at`` until ``exit_at``
    (None: no exit planned); ``last_termination`` is the previous instance's end."""

    name: str
    container_id: str
    image: str
    restart_count: int
    started_at: float
    exit_at: float | None = None
    exit_code: int = 0
    cause: str = ""
    last_termination: Terminated | None = None
    hang_at: float | None = None  # when the process stops making progress (fail-liveness-after)

    def running(self, now: float) -> bool:
        return self.exit_at is None or now < self.exit_at

    def hung(self, now: float) -> bool:
        """The process runs but no longer makes progress: it answers nothing. Kept with the
        container (not read from the pod) so that the container behaves the same whether or
        not a kubelet is watching it."""
        return self.hang_at is not None and now >= self.hang_at and self.running(now)

    def terminated(self, now: float) -> Terminated | None:
        if self.running(now):
            return None
        assert self.exit_at is not None
        reason = "Completed" if self.exit_code == 0 else "Error"
        return Terminated(self.exit_code, reason, self.started_at, self.exit_at, self.container_id, self.cause)


@dataclass(frozen=True, slots=True)
class SandboxRecord:
    """A pod sandbox: its network namespace and IP, and its containers (in spec order of
    first start). ``stopped``: torn down (IP released), the records kept for status."""

    uid: str
    namespace: str
    name: str
    ip: str
    created_at: float
    grace_s: float
    host_network: bool = False
    init_containers: tuple[Terminated, ...] = ()
    containers: tuple[ContainerRecord, ...] = ()
    stopped: bool = False

    def container(self, name: str) -> ContainerRecord | None:
        for record in self.containers:
            if record.name == name:
                return record
        return None


def should_restart(restart_policy: str, terminated: Terminated) -> bool:
    """Whether an exited container is started again (``ShouldContainerBeRestarted``); a
    container killed for a failed liveness or startup probe restarts unless the policy is
    Never, whatever its exit code (``computePodActions``)."""
    if restart_policy == "Never":
        return False
    if restart_policy == "OnFailure":
        return terminated.exit_code != 0 or terminated.cause in ("liveness", "startup")
    return True  # Always, the default


def pod_phase(restart_policy: str, running: int, terminated_codes: list[int], waiting: int, unknown: int, *, terminal: bool) -> str:
    """``getPhase`` for a pod's regular containers: ``running`` containers, the exit codes
    of the ``terminated`` ones (including those waiting to restart after an exit),
    ``waiting`` ones that never ran, ``unknown`` ones without a status. ``terminal``: the
    pod will not run again (it is being deleted and its containers stopped)."""
    stopped = len(terminated_codes)
    succeeded = sum(1 for code in terminated_codes if code == 0)
    if waiting > 0:
        return "Pending"
    if running > 0 and unknown == 0:
        return "Running"
    if running == 0 and stopped > 0 and unknown == 0:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if restart_policy in ("Always", ""):
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if restart_policy == "Never":
            return "Failed"
        return "Running"  # OnFailure, restarting
    return "Pending"


def container_id_of(node: str, uid: str, name: str, restart_count: int) -> str:
    """A stable container id (the runtime's would be random): ``containerd://<sha256>``."""
    digest = hashlib.sha256(f"{node}/{uid}/{name}/{restart_count}".encode()).hexdigest()
    return f"containerd://{digest}"


def image_id_of(image: str) -> str:
    return f"{image.partition(':')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


# =========================================================================== the shell
class ImagePullError(Exception):
    """The image cannot be had (``reason`` is the waiting reason, e.g. ErrImageNeverPull)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class IpExhausted(Exception):
    """No free address is left in the node's pod CIDR."""


@dataclass(frozen=True, slots=True)
class TrafficRequest:
    """A request to a pod's IP and port (sent by a traffic probe to the pod's node)."""

    pod_ip: str
    port: int
    service: str = ""


class ContainerRuntime:
    """The node's runtime over ``process.disk`` (see the module docstring). Methods that
    take time await the configured latencies on the process's clock; the others are
    instantaneous. Not safe for two concurrent operations on the same pod (the kubelet's
    per-pod worker serializes them, as upstream's pod workers do)."""

    def __init__(self, process: Process, *, node: str, pod_cidr: str, config: KubeletConfig) -> None:
        network = ipaddress.ip_network(pod_cidr, strict=False)
        assert network.num_addresses >= 4, f"pod CIDR {pod_cidr} is too small"
        self.process = process
        self.node = node
        self.network = network
        self.config = config
        self._pull_lock = trio.Lock()
        self.pulls = 0

    # -- reads --------------------------------------------------------------------------
    def sandboxes(self) -> list[SandboxRecord]:
        return [record for _, record in self.process.disk.items(f"{_DISK}sandbox/")]

    def sandbox(self, uid: str) -> SandboxRecord | None:
        return self.process.disk.read(f"{_DISK}sandbox/{uid}")

    def sandbox_by_ip(self, ip: str) -> SandboxRecord | None:
        """The live (not stopped, not host-network) sandbox that has ``ip``."""
        for record in self.sandboxes():
            if record.ip == ip and not record.stopped and not record.host_network:
                return record
        return None

    def images(self) -> tuple[str, ...]:
        return self.process.disk.read(f"{_DISK}images", ())

    def statistics(self) -> dict[str, int]:
        now = self.process.now()
        sandboxes = self.sandboxes()
        return {
            "sandboxes": sum(1 for record in sandboxes if not record.stopped),
            "running_containers": sum(1 for record in sandboxes for c in record.containers if c.running(now)),
            "images": len(self.images()),
            "pulls": self.pulls,
        }

    def _write(self, record: SandboxRecord) -> None:
        self.process.disk.write(f"{_DISK}sandbox/{record.uid}", record)

    # -- sandboxes ----------------------------------------------------------------------
    def _allocate_ip(self) -> str:
        """host-local: the next free address after the last one given out, wrapping."""
        used = {record.ip for record in self.sandboxes() if not record.stopped and not record.host_network}
        first = int(self.network.network_address) + 2  # .0 is the network, .1 the gateway
        last = int(self.network.broadcast_address) - 1
        size = last - first + 1
        previous = self.process.disk.read(f"{_DISK}ipam/last", first - 1)
        for step in range(1, size + 1):
            candidate = first + (previous - first + step) % size
            ip = str(ipaddress.ip_address(candidate))
            if ip not in used:
                self.process.disk.write(f"{_DISK}ipam/last", candidate)
                return ip
        raise IpExhausted(f"no IP addresses available in range set: {self.network}")

    async def run_pod_sandbox(self, pod: Pod, *, host_ip: str, grace_s: float) -> SandboxRecord:
        """``RunPodSandbox``: after the sandbox latency, the sandbox with its IP (the host's
        for a host-network pod). Raises IpExhausted."""
        await self.process.sleep(self.config.sandbox_start_s)
        meta = pod.metadata
        host_network = pod.spec.host_network
        ip = host_ip if host_network else self._allocate_ip()
        record = SandboxRecord(meta.uid, meta.namespace, meta.name, ip, self.process.now(), grace_s, host_network)
        self._write(record)
        return record

    def stop_pod_sandbox(self, uid: str) -> None:
        """``StopPodSandbox``: tear the network down (the IP is free again)."""
        record = self.sandbox(uid)
        if record is not None and not record.stopped:
            self._write(replace(record, stopped=True))

    def remove_pod_sandbox(self, uid: str) -> None:
        self.process.disk.delete(f"{_DISK}sandbox/{uid}")

    # -- images -------------------------------------------------------------------------
    async def pull_image(self, image: str, policy: str) -> bool:
        """Make ``image`` present under ``policy``; answers whether it was pulled. Pulls are
        serialized on the node. Raises ImagePullError."""
        present = image in self.images()
        if policy == "Never":
            if not present:
                raise ImagePullError("ErrImageNeverPull", f'Container image "{image}" is not present with pull policy of Never')
            return False
        if present and policy != "Always":
            return False
        async with self._pull_lock:
            await self.process.sleep(self.config.image_pull_s)
        self.pulls += 1
        images = self.images()
        if image not in images:
            self.process.disk.write(f"{_DISK}images", tuple(sorted((*images, image))))
        return True

    # -- containers ---------------------------------------------------------------------
    async def run_init_containers(self, uid: str, containers: list[Container]) -> SandboxRecord | None:
        """Run the init containers in order; each completes with exit code 0 at once
        (module docstring). Raises ImagePullError."""
        done: list[Terminated] = []
        for container in containers[:MAX_CONTAINERS]:
            await self.pull_image(container.image, container.image_pull_policy or "IfNotPresent")
            await self.process.sleep(self.config.container_start_s)
            now = self.process.now()
            cid = container_id_of(self.node, uid, f"init:{container.name}", 0)
            done.append(Terminated(0, "Completed", now, now, cid))
        record = self.sandbox(uid)
        if record is None:
            return None
        record = replace(record, init_containers=tuple(done))
        self._write(record)
        return record

    async def start_container(
        self, uid: str, container: Container, behaviour: ContainerBehaviour, *, restart_count: int, last: Terminated | None
    ) -> ContainerRecord | None:
        """``CreateContainer`` + ``StartContainer`` after the start latency; the exit the
        behaviour plans is recorded with it. None if the sandbox is gone meanwhile."""
        await self.process.sleep(self.config.container_start_s)
        record = self.sandbox(uid)
        if record is None or record.stopped:
            return None
        now = self.process.now()
        exit_at = None if behaviour.exit_after_s is None else now + behaviour.exit_after_s
        hang_at = None if behaviour.fail_liveness_after_s is None else now + behaviour.fail_liveness_after_s
        started = ContainerRecord(
            name=container.name, container_id=container_id_of(self.node, uid, container.name, restart_count), image=container.image,
            restart_count=restart_count, started_at=now, exit_at=exit_at, exit_code=behaviour.exit_code, last_termination=last,
            hang_at=hang_at,
        )
        others = tuple(c for c in record.containers if c.name != container.name)
        assert len(others) < MAX_CONTAINERS, "too many containers in one pod"
        self._write(replace(record, containers=(*others, started)))
        return started

    def stop_container(self, uid: str, name: str, *, after_s: float, exit_code: int, cause: str) -> ContainerRecord | None:
        """Send SIGTERM: plan the exit ``after_s`` from now with ``exit_code``, unless the
        process exits earlier by itself. Instantaneous; the exit happens in time."""
        record = self.sandbox(uid)
        container = record.container(name) if record is not None else None
        now = self.process.now()
        if record is None or container is None or not container.running(now):
            return container
        exit_at = now + max(0.0, after_s)
        if container.exit_at is not None and container.exit_at <= exit_at:
            return container  # it exits by itself first
        stopped = replace(container, exit_at=exit_at, exit_code=exit_code, cause=cause)
        self._write(replace(record, containers=tuple(stopped if c.name == name else c for c in record.containers)))
        return stopped

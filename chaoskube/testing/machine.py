"""Hypothesis stateful testing of a live simulated cluster.

Contract. :class:`ClusterMachine` is a ``hypothesis.stateful.RuleBasedStateMachine`` whose
state is a whole simulated cluster (:func:`chaoskube.cluster.open_cluster`) that stays alive
between rules. Hypothesis draws the World seed first (``boot``, an ``@initialize`` rule:
``st.integers``), so the Trio task order, the network's delays and every component's
randomness are explored and shrink with the steps. Then it draws rules — workload steps
(create / scale / delete a Deployment from a bundle of names, create a PDB, delete or
evict a pod, cordon / uncordon / drain a node), faults (kill / restart / pause a process by
role, including the etcd leader and the acting controller-manager; partition a node from
the control plane; jump a process's clock), ``heal_all`` and ``wait(seconds)`` — and after
every step runs the safety checkers on the journal so far (Raft safety, leader election,
PDB-aware eviction, scheduling). Teardown heals everything and requires convergence within
``convergence_deadline_s`` (:func:`~chaoskube.checkers.check_convergence`): the safety
phase, then the liveness phase, as TigerBeetle's VOPR runs.

Why pattern (c) of shared/FACTS.md ("Hypothesis with Trio"). The World runs in one long
``trio.run`` in a background thread (:class:`LiveCluster`); each rule is one
``trio.from_thread.run`` call. A step sets the MockClock's ``autojump_threshold`` to 0 (the
World's driver moves virtual time), runs, waits for ``trio.testing.wait_all_tasks_blocked``
and sets the threshold back to infinity: between rules every task is blocked and virtual
time stands still, so how long Hypothesis takes to draw the next rule cannot change what
the cluster does. Pattern (b) (``@given(st.data())`` around one ``trio.run``) is simpler
but gives up Hypothesis's own rule machinery (bundles, ``@precondition``, ``@invariant``,
printing the falsifying steps as code, the stateful shrinker); users extend this machine by
subclassing with their own ``@rule`` and ``@invariant`` methods, which only (c) allows.

Guarantees.

- Replay: a run is a pure function of the seed and the steps. Every step is journaled
  (``{"type": "hypothesis-step", "step", "args", "index"}``) before it acts, so the
  journal fingerprint covers the steps too; :meth:`ClusterMachine.replay` runs a recorded
  step list again and gives the same fingerprint. Between steps the Trio loop is quiescent
  (see above); the thread hand-over is the only concurrency, and it never overlaps a step.
- On a failure (a violated invariant, a component crash, a rule raising), teardown skips
  the liveness phase, stops the world and attaches the seed, the step list and the journal
  fingerprint to the exception (``exception.chaoskube_run``, a :class:`RunSummary`, and an
  exception note); the pytest plugin prints them.
- Every operation is bounded: API calls by the client's deadline and ``op_timeout_s``,
  drains by ``drain_timeout_s``, the boot by ``boot_within_s``, the liveness phase by
  ``convergence_deadline_s``.

Non-guarantees.

- An invariant fails only on a ``False`` verdict; ``unknown`` (nothing to judge yet, e.g.
  no acknowledged etcd write or no PDB) passes.
- client-go's leader election does not fence ("does not guarantee that only one client is
  acting as a leader", ``tools/leaderelection/leaderelection.go``): with more than one
  controller-manager or scheduler, a pause or clock jump of the leader is *expected* to
  make the leader-election invariant fail. The default spec runs one of each; subclasses
  that run more can raise ``leader_overlap_tolerance_s``.
- Teardown uncordons every node as part of "heal everything": a cordon is an operator's
  choice, not a fault, but a cluster with every node cordoned cannot converge.
- Wall time is not bounded: the cost of a step grows with the virtual time it covers.

Upstream behaviour the steps drive: ``kubectl cordon`` / ``drain``
(``staging/src/k8s.io/kubectl/pkg/drain``, via :func:`chaoskube.node.kubelet.drain`), the
Eviction API and PDBs ("Disruptions",
https://kubernetes.io/docs/concepts/workloads/pods/disruptions/), deleting a pod or a
Deployment (bypasses PDBs, same page), node partitions ("Nodes", rate limits on eviction,
https://kubernetes.io/docs/concepts/architecture/nodes/), and level-triggered controllers
converging after the faults end ("Controllers",
https://kubernetes.io/docs/concepts/architecture/controller/).
"""

from __future__ import annotations

import functools
import math
import queue
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import outcome
import trio
import trio.testing
from hypothesis import strategies as st
from hypothesis.stateful import INVARIANT_MARKER, Bundle, RuleBasedStateMachine, consumes, initialize, invariant, precondition, rule

from chaoskube.api.client import ApiError
from chaoskube.api.manifests import from_dict
from chaoskube.checkers import check_convergence, check_leader_election, check_pdb_eviction, check_raft_safety, check_scheduling
from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.cluster import Cluster, ClusterSpec, NodeGroup, open_cluster
from chaoskube.sim import Process, World

__all__ = [
    "CONTROL_PLANE_ROLES",
    "ClusterMachine",
    "InvariantViolation",
    "LiveCluster",
    "RunSummary",
    "SimulationCrashed",
    "TARGETS",
    "small_cluster_spec",
    "step",
]

#: Roles a node partition cuts the node off from (chaoskube/cluster.py's role names).
CONTROL_PLANE_ROLES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
#: What a fault rule may target: a role (then an index picks the process) or the acting
#: leader of etcd / a leader-elected component.
TARGETS = (
    "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "node",
    "leader:etcd", "leader:kube-controller-manager", "leader:kube-scheduler",
)
CLIENT_PROCESS = "chaoskube-hypothesis"
NAMESPACE = "default"
MAX_STEPS = 1000  # a run longer than this is a bug in the caller (Hypothesis stops at stateful_step_count)


def small_cluster_spec(nodes: int = 3) -> ClusterSpec:
    """3 etcd members, 1 API server, 1 controller-manager, 1 scheduler, ``nodes`` nodes."""
    return ClusterSpec(api_servers=1, controller_managers=1, schedulers=1, node_groups=[NodeGroup(count=nodes)])


class SimulationCrashed(RuntimeError):
    """The World's Trio run ended with an error (a component bug, a stuck simulation)."""


class InvariantViolation(AssertionError):
    """A checker answered False. ``verdict`` holds the reason and the evidence."""

    def __init__(self, name: str, verdict: Verdict) -> None:
        evidence = "\n".join(f"  {item!r}"[:400] for item in verdict.evidence[:4])
        super().__init__(f"{name}: {verdict.reason}" + (f"\nevidence:\n{evidence}" if evidence else ""))
        self.name = name
        self.verdict = verdict


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What replays a run: the seed, the steps (name, arguments) and the fingerprint."""

    seed: int | None
    steps: tuple[tuple[str, dict[str, Any]], ...]
    fingerprint: str
    virtual_time_s: float = 0.0
    events: int = 0

    def describe(self) -> str:
        lines = [f"seed: {self.seed}", f"journal sha256: {self.fingerprint}", f"virtual time: {self.virtual_time_s:.3f} s, {self.events} journal events", f"steps ({len(self.steps)}):"]
        lines += [f"  {index}. {name}({', '.join(f'{key}={value!r}' for key, value in args.items())})" for index, (name, args) in enumerate(self.steps, 1)]
        return "\n".join(lines)


# ============================================================================ live cluster
async def _idle(process: Process) -> None:
    await trio.sleep_forever()


@dataclass
class LiveCluster:
    """A World running in a background thread, advanced one step at a time from the
    caller's thread (pattern (c) of shared/FACTS.md; see the module docstring).

    ``open()`` starts the thread and boots the cluster (every node Ready within
    ``boot_within_s``); ``run(fn, *args)`` awaits ``fn(*args)`` inside the simulation,
    in virtual time, and returns its result once every task is blocked again;
    ``stop()`` ends the run (idempotent). Between calls virtual time does not move."""

    world: World
    spec: ClusterSpec
    boot_within_s: float = 60.0
    cluster: Cluster | None = None
    client: Any = None
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _thread: threading.Thread | None = None
    _token: Any = None
    _stop: Any = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _error: BaseException | None = None
    _results: queue.Queue[Any] = field(default_factory=queue.Queue)

    # -- lifecycle ------------------------------------------------------------------------
    def open(self) -> LiveCluster:
        assert self._thread is None, "a LiveCluster opens once"
        self._thread = threading.Thread(target=self._thread_main, name=f"chaoskube-world-{self.world.seed}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._token is None:
            self._thread.join()
            raise SimulationCrashed(f"the world did not start: {self._error!r}") from self._error
        booted = self.run(self._boot)
        if not booted:
            self.stop()
            raise SimulationCrashed(f"the cluster's nodes were not Ready within {self.boot_within_s} s of virtual time")
        return self

    def _thread_main(self) -> None:
        try:
            self.world.run(self._main)
        except BaseException as error:  # noqa: BLE001 - handed to the stepping thread
            self._error = error
        finally:
            self._ready.set()

    async def _main(self, world: World) -> None:
        """The stepper: one long-lived task runs every step. Its hand-back to the caller's
        thread is the last thing it does before parking on the request channel, so Trio is
        quiescent when the next request arrives and the batches of tasks Trio shuffles (with
        the seeded ``_r``) never depend on wall-clock timing. (``trio.from_thread.run``
        spawns a task per call that finishes *after* handing back: that raced the next call
        and changed the shuffles.)"""
        world.clock.autojump_threshold = math.inf  # time stands still until the first step
        send, receive = trio.open_memory_channel[Any](1)
        self._stop = send
        self._token = trio.lowlevel.current_trio_token()
        self._ready.set()
        async for request in receive:
            if request is None:  # stop
                world.clock.autojump_threshold = 0  # a task that shields its cleanup may need time
                return
            fn, args = request
            world.clock.autojump_threshold = 0
            result = await outcome.acapture(fn, *args)
            # Quiescence: what the step woke runs now, before the hand-back.
            await trio.testing.wait_all_tasks_blocked()
            world.clock.autojump_threshold = math.inf
            self._results.put(result)

    async def _boot(self) -> bool:
        self.cluster = open_cluster(self.world, self.spec)
        self.client = self.cluster.client(self.world.spawn(CLIENT_PROCESS, _idle, role="client"), name=CLIENT_PROCESS)
        expected = len(self.spec.nodes())

        async def nodes_ready() -> bool:
            try:
                listed = await self.client.list("nodes")
            except ApiError:
                return False
            return sum(1 for node in listed.items if _node_ready(node)) == expected

        return await self.cluster.wait_for(nodes_ready, within_s=self.boot_within_s, every_s=0.5)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._error is None

    def stop(self) -> None:
        """End the run: every process is cancelled and the journal is closed."""
        if self._thread is None:
            return
        if self._thread.is_alive() and self._token is not None:
            try:
                trio.from_thread.run_sync(self._stop.send_nowait, None, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        self._thread.join()

    @property
    def fingerprint(self) -> str:
        return self.world.fingerprint

    # -- stepping -------------------------------------------------------------------------
    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Await ``fn(*args)`` in the simulation; re-raises what it raises."""
        if not self.running:
            raise SimulationCrashed(f"the world is not running: {self._error!r}") from self._error
        try:
            trio.from_thread.run_sync(self._stop.send_nowait, (fn, args), trio_token=self._token)
        except trio.RunFinishedError:
            self._crashed()
        while True:
            try:
                result = self._results.get(timeout=1.0)  # a liveness poll of the thread, not a deadline
                break
            except queue.Empty:
                if not self._thread.is_alive():  # type: ignore[union-attr]
                    self._crashed()
        return result.unwrap()

    def _crashed(self) -> None:
        assert self._thread is not None
        self._thread.join()
        raise SimulationCrashed(f"the world stopped during a step: {self._error!r}") from self._error

    def record_step(self, name: str, args: dict[str, Any]) -> None:
        """Journal a step (called between steps, while the Trio loop is quiescent)."""
        assert len(self.steps) < MAX_STEPS, f"more than {MAX_STEPS} steps"
        self.steps.append((name, dict(args)))
        self.world.record("hypothesis-step", step=name, args=dict(args), index=len(self.steps))

    def summary(self) -> RunSummary:
        return RunSummary(self.world.seed, tuple(self.steps), self.world.fingerprint, self.world.now, self.world.journal.count)


def _node_ready(node: Any) -> bool:
    return any(condition.type == "Ready" and condition.status == "True" for condition in node.status.conditions)


def _pod_ready(pod: Any) -> bool:
    return pod.metadata.deletion_timestamp is None and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


# ============================================================================ the machine
def step(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a rule of a :class:`ClusterMachine` (under ``@rule``) to journal it as a
    step before it runs, so the fingerprint and :meth:`ClusterMachine.replay` cover it.
    Arguments must be JSON values (bundle values are names)."""

    @functools.wraps(function)
    def wrapper(self: ClusterMachine, **kwargs: Any) -> Any:
        self.live_cluster.record_step(function.__name__, kwargs)
        return function(self, **kwargs)

    return wrapper


def _booted(machine: ClusterMachine) -> bool:
    return machine.live is not None


def _deployment(name: str, replicas: int) -> Any:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}]}}
    return from_dict({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}})


def _pdb(name: str, max_unavailable: int) -> Any:
    spec = {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": name}}}
    return from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})


class ClusterMachine(RuleBasedStateMachine):
    """A live simulated cluster under Hypothesis (module docstring). Subclass to change
    ``spec`` and the bounds below, or to add ``@rule`` / ``@invariant`` methods: use
    :meth:`run` to act inside the simulation, :attr:`world`, :attr:`cluster` and
    :attr:`client` to look, :meth:`require` to turn a checker verdict into a failure, and
    :func:`step` under ``@rule`` so the step is journaled and replayable."""

    spec: ClusterSpec = small_cluster_spec()
    deployment_names: tuple[str, ...] = ("web", "api", "db")
    boot_within_s = 60.0
    op_timeout_s = 30.0
    drain_timeout_s = 30.0
    convergence_deadline_s = 300.0
    convergence_poll_s = 10.0
    leader_overlap_tolerance_s = 0.0

    deployments = Bundle("deployments")

    def __init__(self) -> None:
        super().__init__()
        self.live: LiveCluster | None = None
        self._pauses: dict[str, int] = {}

    # -- access -------------------------------------------------------------------------
    @property
    def live_cluster(self) -> LiveCluster:
        assert self.live is not None, "the cluster is not booted yet (boot is the first step)"
        return self.live

    @property
    def world(self) -> World:
        return self.live_cluster.world

    @property
    def cluster(self) -> Cluster:
        cluster = self.live_cluster.cluster
        assert cluster is not None
        return cluster

    @property
    def client(self) -> Any:
        return self.live_cluster.client

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Await ``fn(*args)`` inside the simulation (virtual time moves only here)."""
        return self.live_cluster.run(fn, *args)

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        self.world.record(type, **fields)

    def require(self, name: str, verdict: Verdict) -> None:
        """Fail (``InvariantViolation``) on a False verdict; unknown passes."""
        if verdict.valid is False:
            raise InvariantViolation(name, verdict)

    def summary(self) -> RunSummary:
        return self.live_cluster.summary()

    # -- boot ---------------------------------------------------------------------------
    @initialize(seed=st.integers(min_value=0, max_value=2**32 - 1))
    def boot(self, seed: int) -> None:
        """Start the World (seed drawn by Hypothesis) and the cluster; wait for the nodes."""
        self.live = LiveCluster(World(seed), self.spec, boot_within_s=self.boot_within_s)
        self.live.steps.append(("boot", {"seed": seed}))
        self.live.open()

    # -- helpers run inside the simulation ------------------------------------------------
    async def _api(self, what: str, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """One API operation bounded by ``op_timeout_s``; an API error is journaled as the
        step's outcome, not raised (a refused write under faults is the cluster's answer)."""
        process = self.world.process(CLIENT_PROCESS)
        result = None
        with process.move_on_after(self.op_timeout_s) as scope:
            try:
                result = await fn(*args, **kwargs)
            except ApiError as error:
                self.record("hypothesis-outcome", op=what, code=error.code, reason=error.reason)
                return None
        if scope.cancelled_caught:
            self.record("hypothesis-outcome", op=what, code=None, reason="op_timeout_s passed")
            return None
        self.record("hypothesis-outcome", op=what, code=200, reason="")
        return result if result is not None else True

    async def _pods_of(self, name: str) -> list[Any]:
        listed = await self._api(f"list pods app={name}", self.client.list, "pods", NAMESPACE, label_selector=f"app={name}")
        return sorted(listed.items, key=lambda pod: pod.metadata.name) if listed else []

    def _resolve(self, target: str, index: int) -> Process | None:
        """The process a fault rule targets, or None (no leader now, no such role)."""
        if target.startswith("leader:"):
            role = target.split(":", 1)[1]
            name = self.cluster.etcd_leader() if role == "etcd" else self.cluster.leader(role)
            return self.world.processes[name] if name else None
        names = self.cluster.processes(target)
        return self.world.processes[names[index % len(names)]] if names else None

    def _fault(self, what: str, target: str, index: int, act: Callable[[Process], None]) -> None:
        """Apply ``act`` to the resolved process inside the Trio thread (cancelling or
        starting tasks needs the run's context)."""

        async def apply() -> None:
            process = self._resolve(target, index)
            self.record("hypothesis-fault", fault=what, target=target, process=process.name if process else None)
            if process is not None:
                act(process)

        self.run(apply)

    def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` inside the simulation's thread, at the current instant."""

        async def call() -> Any:
            return fn(*args)

        return self.run(call)

    # -- workload rules -------------------------------------------------------------------
    @rule(target=deployments, name=st.sampled_from(deployment_names), replicas=st.integers(1, 4))
    @step
    def create_deployment(self, name: str, replicas: int) -> str:
        self.run(self._api, f"create deployment {name}", self.client.create, _deployment(name, replicas))
        return name

    @rule(name=deployments, replicas=st.integers(0, 5))
    @step
    def scale_deployment(self, name: str, replicas: int) -> None:
        self.run(self._api, f"scale deployment {name}", self.client.patch, "deployments", NAMESPACE, name, {"spec": {"replicas": replicas}})

    @rule(name=consumes(deployments))
    @step
    def delete_deployment(self, name: str) -> None:
        self.run(self._api, f"delete deployment {name}", self.client.delete, "deployments", NAMESPACE, name)

    @rule(name=deployments, max_unavailable=st.integers(0, 2))
    @step
    def create_pdb(self, name: str, max_unavailable: int) -> None:
        self.run(self._api, f"create pdb {name}", self.client.create, _pdb(name, max_unavailable))

    @rule(name=deployments, index=st.integers(0, 7))
    @step
    def delete_pod(self, name: str, index: int) -> None:
        async def delete() -> None:
            pods = await self._pods_of(name)
            if pods:
                pod = pods[index % len(pods)]
                await self._api(f"delete pod {pod.metadata.name}", self.client.delete, "pods", NAMESPACE, pod.metadata.name)

        self.run(delete)

    @rule(name=deployments, index=st.integers(0, 7))
    @step
    def evict_pod(self, name: str, index: int) -> None:
        """The Eviction API (``POST pods/<name>/eviction``): the PDB-guarded path."""

        async def evict() -> None:
            pods = await self._pods_of(name)
            if pods:
                pod = pods[index % len(pods)]
                await self._api(f"evict pod {pod.metadata.name}", self.client.evict, NAMESPACE, pod.metadata.name)

        self.run(evict)

    @rule(index=st.integers(0, 7))
    @step
    def cordon(self, index: int) -> None:
        from chaoskube.node.kubelet import cordon

        node = self._node(index)
        self.run(self._api, f"cordon {node}", cordon, self.client, node)

    @rule(index=st.integers(0, 7))
    @step
    def uncordon(self, index: int) -> None:
        from chaoskube.node.kubelet import cordon

        node = self._node(index)
        self.run(self._api, f"uncordon {node}", functools.partial(cordon, unschedulable=False), self.client, node)

    @rule(index=st.integers(0, 7))
    @step
    def drain(self, index: int) -> None:
        """``kubectl drain`` bounded by ``drain_timeout_s`` of virtual time."""
        from chaoskube.node.kubelet import drain

        node = self._node(index)
        self.run(self._api, f"drain {node}", functools.partial(drain, timeout_s=self.drain_timeout_s), self.client, node)

    def _node(self, index: int) -> str:
        names = [name for name, _, _ in self.spec.nodes()]
        return names[index % len(names)]

    # -- fault rules ----------------------------------------------------------------------
    @rule(who=st.sampled_from(TARGETS), index=st.integers(0, 7))
    @step
    def kill(self, who: str, index: int) -> None:
        """SIGKILL; ``heal_all`` (or teardown) restarts it from its disk."""
        self._fault("kill", who, index, lambda process: process.kill())

    @rule(who=st.sampled_from(TARGETS), index=st.integers(0, 7))
    @step
    def restart(self, who: str, index: int) -> None:
        """Kill (if alive) and start again from the disk at once."""
        self._fault("restart", who, index, lambda process: process.restart())

    @rule(who=st.sampled_from(TARGETS), index=st.integers(0, 7), duration_s=st.sampled_from([5.0, 20.0, 60.0]))
    @step
    def pause(self, who: str, index: int, duration_s: float) -> None:
        """SIGSTOP / a long GC pause; resumed after ``duration_s`` of world time (or by
        ``heal_all``), when the process sees time jump."""
        self._fault("pause", who, index, lambda process: self._pause(process, duration_s))

    def _pause(self, process: Process, duration_s: float) -> None:
        token = self._pauses.get(process.name, 0) + 1
        self._pauses[process.name] = token
        process.pause()

        def resume(_: Any) -> None:
            if self._pauses.get(process.name) == token:
                process.resume()

        self.world.call_later(duration_s, resume)

    @rule(who=st.sampled_from(TARGETS), index=st.integers(0, 7), seconds=st.sampled_from([-30.0, 30.0, 120.0]))
    @step
    def clock_jump(self, who: str, index: int, seconds: float) -> None:
        """Step the process's clock (NTP step, VM migration); ``heal_all`` steps it back."""
        self._fault("clock-jump", who, index, lambda process: process.jump_clock(seconds))

    @rule(index=st.integers(0, 7))
    @step
    def partition_node(self, index: int) -> None:
        """Cut the node off from the control plane, both ways, keeping other cuts."""
        self.run_sync(self._partition_node, self._node(index))

    def _partition_node(self, node: str) -> None:
        plane = [name for name in self.cluster.processes() if self.world.processes[name].role in CONTROL_PLANE_ROLES]
        grudge = {dst: set(sources) for dst, sources in self.world.network.grudge.items()}
        grudge.setdefault(node, set()).update(plane)
        for name in plane:
            grudge.setdefault(name, set()).add(node)
        self.world.network.partition(grudge)

    @rule()
    @step
    def heal_all(self) -> None:
        self.run_sync(self._heal)

    def _heal(self) -> None:
        """Heal every fault: the network, pauses, clocks, and killed processes (restarted
        from their disks). Idempotent."""
        self.world.network.heal()
        self._pauses.clear()
        for name in self.cluster.processes():
            process = self.world.processes[name]
            process.resume()
            process.reset_clock()
            if not process.alive and process.role != "bootstrap":
                process.start()

    @rule(seconds=st.sampled_from([1.0, 5.0, 15.0, 30.0, 60.0]))
    @step
    def wait(self, seconds: float) -> None:
        self.run(self.world.sleep, seconds)

    # -- invariants: safety on the journal so far -----------------------------------------
    @precondition(_booted)
    @invariant()
    def raft_is_safe(self) -> None:
        self.require("raft safety", run_checker(check_raft_safety, self.world.journal.events))

    @precondition(_booted)
    @invariant()
    def leader_election_holds(self) -> None:
        self.require("leader election", run_checker(check_leader_election, self.world.journal.events, overlap_tolerance_s=self.leader_overlap_tolerance_s))

    @precondition(_booted)
    @invariant()
    def evictions_respect_pdbs(self) -> None:
        self.require("PDB-aware eviction", run_checker(check_pdb_eviction, self.world.journal.events))

    @precondition(_booted)
    @invariant()
    def bindings_fit(self) -> None:
        self.require("scheduling", run_checker(check_scheduling, self.world.journal.events))

    # -- teardown: liveness -------------------------------------------------------------
    def teardown(self) -> None:
        """Heal everything and require convergence within ``convergence_deadline_s`` —
        unless the run is already failing (then only stop, and label the failure)."""
        if self.live is None:
            return
        failing = sys.exc_info()[1]
        verdict = None
        try:
            if failing is None and self.live.running:
                self.live.record_step("teardown", {})
                verdict = self.run(self._converge)
        finally:
            self.live.stop()
            summary = self.live.summary()
        if failing is not None:
            _label(failing, summary)
            return
        if verdict is not None and verdict.valid is False:
            error = InvariantViolation("convergence", verdict)
            _label(error, summary)
            raise error

    async def _converge(self) -> Verdict:
        from chaoskube.node.kubelet import cordon

        self._heal()
        healed_at = self.world.now
        self.record("hypothesis-heal", at=healed_at)
        deadline = healed_at + self.convergence_deadline_s
        cordoned = [name for name, _, _ in self.spec.nodes()]
        while True:
            await self.world.sleep(self.convergence_poll_s)
            still = []
            for node in cordoned:
                if await self._api(f"uncordon {node}", cordon, self.client, node, unschedulable=False) is None:
                    still.append(node)
            cordoned = still
            verdict = run_checker(check_convergence, self.world.journal.events, healed_at=healed_at, deadline_s=self.convergence_deadline_s)
            converged = verdict.details.get("converged_at_end", False) and verdict.valid is not False
            if (converged and not cordoned) or self.world.now > deadline:
                return verdict

    # -- replay ---------------------------------------------------------------------------
    @classmethod
    def replay(cls, steps: Iterable[tuple[str, dict[str, Any]]]) -> RunSummary:
        """Run ``steps`` (a :class:`RunSummary`'s, starting with ``boot``) again, with the
        invariants after each, then teardown. Returns the summary; re-raises the run's
        failure (labelled with its summary) if it fails."""
        steps = list(steps)
        assert steps and steps[0][0] == "boot", "a run starts with boot(seed=...)"
        machine = cls()
        try:
            for name, args in steps:
                if name == "teardown":
                    break
                getattr(machine, name)(**args)
                machine._check_all_invariants()
        finally:
            machine.teardown()
        return machine.summary()

    def _check_all_invariants(self) -> None:
        for attribute in sorted(dir(type(self))):
            function = getattr(type(self), attribute, None)
            marker = getattr(function, INVARIANT_MARKER, None)
            if marker is not None and all(condition(self) for condition in marker.preconditions):
                function(self)


def _label(error: BaseException, summary: RunSummary) -> None:
    """Attach the run's summary to a failure (once: the first run to fail labels it)."""
    if getattr(error, "chaoskube_run", None) is None:
        error.chaoskube_run = summary  # type: ignore[attr-defined]
        error.add_note("chaoskube run (replay with ClusterMachine.replay(steps)):\n" + summary.describe())

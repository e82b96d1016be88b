"""Hypothesis stateful testing of a live simulated cluster.

Contract. :class:`ClusterMachine` is a ``hypothesis.stateful.RuleBasedStateMachine`` whose
state is a whole simulated cluster (:func:`chaoskube.cluster.open_cluster`) that stays alive
between rules. Hypothesis draws the World seed first (``boot``, an ``@initialize`` rule:
``st.integers``), so the Trio task order, the network's delays and every component's
randomness are explored and shrink with the steps. Then it draws rules:

- workload steps: create / scale / update (``kubectl rollout restart``, or a new image) /
  delete a Deployment from a bundle of names, create a PDB, delete or evict a pod, cordon /
  uncordon / drain a node; and one rule per other action of the workload generator
  (:data:`chaoskube.workload.actions.ACTIONS`, :data:`ACTION_RULES`: any workload kind
  created, scaled, rolled out, rolled back, deleted with each propagation policy; PDBs
  changed and deleted; namespaces created and deleted; node labels and taints). Every
  workload step is a thin caller of :mod:`chaoskube.workload.actions`, the one definition
  the generator uses too;
- faults: one rule per fault kind of :data:`chaoskube.faults.kinds.KINDS` (read when this module is
  imported, so a kind added there joins the machine), named after the kind (``kill``,
  ``lossy_crash``, ``clock_jump``, ``control_plane_partition`` ...; ``drain_fault`` for
  the ``drain`` kind, whose bare name is the workload step). Each draws a target — a
  selector (``leader:etcd``, ``random:node``, ``role:kube-apiserver``, ``zone:zone-a``)
  or ``name:<process>`` from the cluster's processes, as fits the kind — its parameters,
  and a duration (healed by a timer after ``duration_s`` of world time, or, for ``None``,
  by ``heal_all`` or teardown). The machine's :class:`~chaoskube.faults.schedule.FaultInjector`
  plans, applies, journals and heals them, as in a catalogue experiment; ``restart`` is
  a kill healed at once. :data:`EXCLUDED_KINDS` lists the kinds left out, and why;
- ``heal_all`` and ``wait(seconds)``;
- adversarial tenants (issue 19, :mod:`chaoskube.tenants`): ``start_tenants`` creates their
  policy objects; ``tenant_attempt(tenant, action)`` makes one attempt of one tenant
  (forbidden or allowed); ``tenant_revoke`` / ``tenant_restore`` delete and re-create the
  ServiceAccount, the RoleBinding and the namespace of their lifecycle.

After every step the safety checkers run on the journal so far (Raft safety, leader
election, PDB-aware eviction, scheduling, and ``authorization`` once tenants exist). Teardown heals everything and requires
convergence within ``convergence_deadline_s`` (:func:`~chaoskube.checkers.check_convergence`):
the safety phase, then the liveness phase, as TigerBeetle's VOPR runs.

Why pattern (c) of shared/FACTS.md ("Hypothesis with Trio"). The World runs in one long
``trio.run`` in a background thread (:class:`LiveCluster`); each rule is one request to a
stepper task inside it. A step sets the MockClock's ``autojump_threshold`` to 0 (the
World's driver moves virtual time), runs, waits for ``trio.testing.wait_all_tasks_blocked``
and sets the threshold back to infinity: between rules every task is blocked and virtual
time stands still, so how long Hypothesis takes to draw the next rule cannot change what
the cluster does. Pattern (b) (``@given(st.data())`` around one ``trio.run``) is simpler
but gives up Hypothesis's own rule machinery (bundles, ``@precondition``, ``@invariant``,
printing the falsifying steps as code, the stateful shrinker); users extend this machine by
subclassing with their own ``@rule`` and ``@invariant`` methods, which only (c) allows.
This module sits on top of the layers (it uses ``faults/``, as experiments do; nothing
below ``chaoskube/testing`` imports it).

Guarantees.

- Replay: a run is a pure function of the seed and the steps, in any process and after any
  other runs in the same process. Every step is journaled (``{"type": "hypothesis-step",
  "step", "args", "index"}``) before it acts, so the journal fingerprint covers the steps
  too; :meth:`ClusterMachine.replay` runs a recorded step list again and gives the same
  fingerprint. Between steps the Trio loop is quiescent; the thread hand-over is the only
  concurrency, and it never overlaps a step: the stepper reports ready only once every
  task of the new run is blocked (before that fix, the first request could reach the Trio
  loop in the same scheduling batch as the World's own start-up tasks or in the next one,
  depending on thread timing, and the seeded batch shuffles drew differently from there).
- On a failure (a violated invariant, a component crash, a rule raising), teardown skips
  the liveness phase, stops the world and attaches the seed, the step list and the journal
  fingerprint to the exception (``exception.chaoskube_run``, a :class:`RunSummary`, and an
  exception note); the pytest plugin prints them.
- Every operation is bounded: API calls by the client's deadline and ``op_timeout_s``,
  drains by ``drain_timeout_s``, the boot by ``boot_within_s``, the liveness phase by
  ``convergence_deadline_s``.
- ``journal_path`` (a class attribute) writes the journal of every run to that file as
  well (the last run's survives).

Non-guarantees.

- An invariant fails only on a ``False`` verdict; ``unknown`` (nothing to judge yet, e.g.
  no acknowledged etcd write or no PDB) passes.
- client-go's leader election does not fence ("does not guarantee that only one client is
  acting as a leader", ``tools/leaderelection/leaderelection.go``): with more than one
  controller-manager or scheduler, a pause or clock jump of the leader is *expected* to
  make the leader-election invariant fail. The default spec runs one of each; subclasses
  that run more can raise ``leader_overlap_tolerance_s`` or leave those rules out.
- Teardown uncordons every node and removes the ``taint_node`` rule's taint as part of
  "heal everything": a cordon or a taint is an operator's choice, not a fault, but a
  cluster with every node cordoned or tainted cannot converge.
- A fault whose target matches nothing now (no leader during an election, no webhook in
  the spec) is journaled as skipped (``{"type": "fault", "event": "skip"}``) and does
  nothing; the step still counts.
- Wall time is not bounded: the cost of a step grows with the virtual time it covers.

Upstream behaviour the steps drive: ``kubectl cordon`` / ``drain``
(``staging/src/k8s.io/kubectl/pkg/drain``, via :func:`chaoskube.node.kubelet.drain`),
``kubectl rollout restart`` (``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/objectrestarter.go``:
it sets the pod template annotation ``kubectl.kubernetes.io/restartedAt``), the Eviction
API and PDBs ("Disruptions", https://kubernetes.io/docs/concepts/workloads/pods/disruptions/),
deleting a pod or a Deployment (bypasses PDBs, same page), the fault kinds' own sources
(faults/kinds.py), and level-triggered controllers converging after the faults end
("Controllers", https://kubernetes.io/docs/concepts/architecture/controller/).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import queue
import sys
import threading
import unittest
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import outcome
import trio
import trio.testing
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import INVARIANT_MARKER, RULE_MARKER, Bundle, RuleBasedStateMachine, consumes, initialize, invariant, multiple, precondition, rule, run_state_machine_as_test

from chaoskube.api.manifests import from_dict, load_manifests
from chaoskube.checkers import check_convergence, check_leader_election, check_pdb_eviction, check_raft_safety, check_scheduling
from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.client.client import ApiError
from chaoskube.cluster import Cluster, ClusterSpec, NodeGroup, open_cluster
from chaoskube.faults.kinds import CHOICES, CONTROL_PLANE_ROLES, KINDS, ROLE_LISTS, TARGET_ROLES, Context
from chaoskube.faults.schedule import ActiveFault, FaultInjector
from chaoskube.faults.targets import ProcessInfo
from chaoskube.sim import Journal, Process, World
from chaoskube.workload import actions

__all__ = [
    "ACTION_RULES",
    "CONTROL_PLANE_ROLES",
    "ClusterMachine",
    "EXCLUDED_KINDS",
    "FAULT_KINDS",
    "FAULT_RULES",
    "InvariantViolation",
    "LiveCluster",
    "ManifestsRefused",
    "RunSummary",
    "SimulationCrashed",
    "default_settings",
    "eventually",
    "fault_rule_name",
    "focus",
    "shrinking_bounded",
    "small_cluster_spec",
    "step",
    "workload_weight",
]

#: Fault kinds of faults/kinds.py the machine does not draw, and why: each would make a
#: safety invariant fail on correct components, by design rather than by a bug.
EXCLUDED_KINDS: dict[str, str] = {
    "skip-fsync": (
        "an etcd member that acknowledges writes it never synced loses them in a lossy crash "
        "(lossy-crash, node-failure, zone-outage): committed Raft entries vanish, which the "
        "Raft safety invariant reports; etcd documents --unsafe-no-fsync as unsafe for that reason "
        "(https://etcd.io/docs/v3.5/op-guide/configuration/#unsafe-features)"
    ),
    # issue 16 (Jepsen's nemesis packages): drawn by faults/nemesis.py's packages, not here.
    "partition": (
        "Jepsen's partition specs are drawn by the nemesis packages (faults/nemesis.py); the machine's "
        "split, bridge and isolate rules already draw these grudges step by step"
    ),
    "clock-strobe": (
        "a strobe flips a clock every period for the fault's whole life, one clock event per flip; the "
        "nemesis's clock package draws it (faults/nemesis.py), the machine draws clock-jump and clock-drift"
    ),
}
#: The fault kinds the machine draws: every kind of chaoskube.faults.kinds.KINDS not excluded, in its order.
FAULT_KINDS: tuple[str, ...] = tuple(kind for kind in KINDS if kind not in EXCLUDED_KINDS)
#: How long a fault lasts (world seconds) before its timer heals it; None: until heal_all.
FAULT_DURATIONS_S: tuple[float | None, ...] = (None, 10.0, 30.0, 120.0)
#: Parameter values drawn (the first is where shrinking goes); a parameter not listed is
#: drawn from chaoskube.faults.kinds.CHOICES when it has choices, else left at its default.
PARAMETER_VALUES: dict[str, tuple[Any, ...]] = {
    "seconds": (60.0, -30.0, 300.0),
    "drift": (0.01, -0.2, 1.0),
    "delay_ms": (100.0, 1000.0, 5000.0),
    "jitter_ms": (0.0, 50.0),
    "loss": (0.2, 0.5, 1.0),
    "duplicate": (0.2, 0.5),
    "reorder": (0.5, 0.9),
    "window_ms": (50.0, 500.0),
    "fsync_ms": (500.0, 2000.0),
    "code": (500, 503, 400),
    "from_roles": ("control-plane", "*"),
}
#: (kind, parameter) values that differ from PARAMETER_VALUES.
KIND_PARAMETER_VALUES: dict[tuple[str, str], tuple[Any, ...]] = {
    ("webhook-delay", "delay_ms"): (6000.0, 1000.0, 15000.0),
}
#: kind -> the role its targets must have, beyond chaoskube.faults.kinds.TARGET_ROLES: a split or a
#: bridge needs a group of at least 3 (the etcd members); the node and webhook faults.
KIND_ROLES: dict[str, str] = {
    **TARGET_ROLES,
    "split": "etcd",
    "bridge": "etcd",
    "node-failure": "node",
    "control-plane-partition": "node",
    "webhook-delay": "webhook",
}
ZONE_KINDS = frozenset({"zone-outage"})  # kinds whose targets are whole zones
#: Rule names taken by workload steps: a fault kind of the same name gets a suffix.
_WORKLOAD_RULES = frozenset({"drain", "cordon", "uncordon", "wait", "restart", "heal_all", *actions.ACTIONS})
#: Selectors offered to a fault of any role, first the simplest (where shrinking goes).
ANY_ROLE_SELECTORS = (
    "leader:etcd", "leader:kube-controller-manager", "leader:kube-scheduler", "follower:etcd",
    "random:node", "random:kube-apiserver", "role:kube-apiserver", "role:etcd", "role:node",
)
#: Processes no fault targets: the machine's own client and the one-shot bootstrap.
UNTARGETED_ROLES = frozenset({"client", "bootstrap", "tenant"})
CLIENT_PROCESS = "chaoskube-hypothesis"
NAMESPACE = "default"
RESTARTED_AT = actions.RESTARTED_AT  # kubectl rollout restart's annotation
IMAGES = actions.IMAGES
MAX_STEPS = 1000  # a run longer than this is a bug in the caller (Hypothesis stops at stateful_step_count)
MANIFEST_ATTEMPTS = 30  # creating a manifests' object: a namespace or CRD kind not served yet is retried, once a second
#: The kinds whose namespaces are the workload's (ClusterMachine.workload_namespaces).
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
UNCORDON_ATTEMPTS = 10  # the drain fault's heal: kubectl uncordon, retried while the API does not answer
UNCORDON_RETRY_S = 2.0


def fault_rule_name(kind: str) -> str:
    """The rule of ``kind``: its name with ``_`` for ``-``, ``_fault`` added when a
    workload step has that name (``drain`` -> ``drain_fault``)."""
    name = kind.replace("-", "_")
    return f"{name}_fault" if name in _WORKLOAD_RULES else name


def small_cluster_spec(nodes: int = 3) -> ClusterSpec:
    """3 etcd members, 1 API server, 1 controller-manager, 1 scheduler, ``nodes`` nodes."""
    return ClusterSpec(api_servers=1, controller_managers=1, schedulers=1, node_groups=[NodeGroup(count=nodes)])


class ManifestsRefused(RuntimeError):
    """The machine's :attr:`~ClusterMachine.manifests` could not be created at boot."""


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
    #: The invariants (by the name :meth:`ClusterMachine.require` was given) whose last
    #: verdict was unknown: nothing to judge in the example (no PDB, no binding), so a saved
    #: example does not list their checkers (chaoskube.testing.experiment.checkers_judged).
    unknown: tuple[str, ...] = ()

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
        and changed the shuffles.) For the same reason it reports ready only once every task
        of the new run is blocked: otherwise the first request reached the loop in the same
        batch as the World's start-up tasks or in a later one, as the threads' timing fell,
        and a process's first run (or any run, under load) could differ from its replays."""
        world.clock.autojump_threshold = math.inf  # time stands still until the first step
        send, receive = trio.open_memory_channel[Any](1)
        self._stop = send
        self._token = trio.lowlevel.current_trio_token()
        await trio.testing.wait_all_tasks_blocked()
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


# ============================================================================ the machine
EVENTUALLY_MARKER = "chaoskube_eventually"


def eventually(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a method of a :class:`ClusterMachine` as an *eventually* property: something
    that must hold once the faults are over, not after every step ("eventually every pod is
    labelled", "eventually the operator's status is Ready"). It is judged in the liveness
    phase of the teardown — after every fault is healed and the cluster converged, polled
    every ``convergence_poll_s`` until it holds or ``convergence_deadline_s`` after the heal
    passes — and a property that never held fails the example like an invariant
    (``InvariantViolation("eventually", ...)``): the plugin prints the seed and the steps,
    saves the example as an experiment (checker ``eventually``) and replays it.

    The method is ``async def`` (awaited inside the simulation: use ``self.client``,
    ``self.world``; do not call ``self.run``) or a plain ``def`` that only reads (the
    journal, ``self`` state). It holds when it returns None, True or a true Verdict, and
    fails when it returns False, a false Verdict, or raises AssertionError (its message is
    the reason). Not judged when an earlier step failed (there is no liveness phase then)
    or when ``liveness`` is False."""
    setattr(function, EVENTUALLY_MARKER, True)
    return function


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


class _Admin:
    """:class:`chaoskube.faults.kinds.Admin` of the machine (the ``drain`` fault): ``kubectl drain``
    and ``uncordon`` through the machine's client. Journals what it did as
    ``fault-action`` events (as experiments/systems/kubernetes.py's ``KubectlAdmin``) and
    never raises for an API error."""

    def __init__(self, machine: ClusterMachine) -> None:
        self.machine = machine

    async def drain(self, node: str) -> None:
        from chaoskube.node.kubelet import drain

        world = self.machine.world
        try:
            result = await drain(self.machine.client, node, timeout_s=self.machine.drain_timeout_s)
        except ApiError as error:
            outcome_text = f"error: {error}"
        except trio.Cancelled:
            world.record("fault-action", action="drain", node=node, outcome="stopped by heal")
            raise
        else:
            outcome_text = "drained" if result.completed else f"incomplete: {len(result.remaining)} remaining, {len(result.errors)} error(s)"
        world.record("fault-action", action="drain", node=node, outcome=outcome_text)

    async def uncordon(self, node: str) -> None:
        from chaoskube.node.kubelet import cordon

        world = self.machine.world
        for attempt in range(1, UNCORDON_ATTEMPTS + 1):
            try:
                await cordon(self.machine.client, node, unschedulable=False)
            except ApiError as error:
                if attempt == UNCORDON_ATTEMPTS or error.code == 404:
                    world.record("fault-action", action="uncordon", node=node, outcome=f"error: {error} (attempt {attempt})")
                    return
                await world.sleep(UNCORDON_RETRY_S)
                continue
            world.record("fault-action", action="uncordon", node=node, outcome="uncordoned")
            return


#: The machine's own invariants (each calls :meth:`ClusterMachine.require`); a subclass's
#: are its business.
BUILT_IN_INVARIANTS = ("authorization_holds", "bindings_fit", "evictions_respect_pdbs", "leader_election_holds", "raft_is_safe")


class ClusterMachine(RuleBasedStateMachine):
    """A live simulated cluster under Hypothesis (module docstring). Subclass to change
    ``spec`` and the bounds below, or to add ``@rule`` / ``@invariant`` methods: use
    :meth:`run` to act inside the simulation, :attr:`world`, :attr:`cluster` and
    :attr:`client` to look, :meth:`require` to turn a checker verdict into a failure, and
    :func:`step` under ``@rule`` so the step is journaled and replayable. Leave a rule or an
    invariant out by shadowing it with ``None``, or keep only some with :func:`focus`."""

    spec: ClassVar[ClusterSpec] = small_cluster_spec()
    deployment_names: ClassVar[tuple[str, ...]] = ("web", "api", "db")
    boot_within_s: ClassVar[float] = 60.0
    op_timeout_s: ClassVar[float] = 30.0
    drain_timeout_s: ClassVar[float] = 30.0
    convergence_deadline_s: ClassVar[float] = 300.0
    convergence_poll_s: ClassVar[float] = 10.0
    leader_overlap_tolerance_s: ClassVar[float] = 0.0
    #: When set, every run's journal is written to this file too (the last run's survives).
    journal_path: ClassVar[Path | None] = None
    #: False: teardown only stops the world, without the liveness phase (heal, require
    #: convergence and the ``@eventually`` properties): to search for safety bugs faster. A
    #: failing example stops before teardown either way, so its replay with liveness on
    #: gives the same journal.
    liveness: ClassVar[bool] = True
    #: The share of rule draws that are faults (every fault rule together, ``restart``
    #: included), made by giving each other rule a weight (:meth:`setup_state`): 21 fault
    #: rules drawn uniformly among 34 would make three steps in five faults and leave the
    #: workload — and an invariant about it — little chance. 0.25 makes one in four; 1.0
    #: gives every rule the same weight. A rule named in :attr:`rule_weights` keeps that
    #: weight instead.
    fault_share: ClassVar[float] = 0.25
    #: Explicit integer weights by rule name (the others as ``fault_share`` makes them).
    rule_weights: ClassVar[dict[str, int]] = {}
    #: Wall seconds Hypothesis may spend shrinking one failure (its own bound is 300 s, a
    #: private constant: :data:`SHRINK_TIME_LIMIT_NOTE`). Each shrink attempt replays an
    #: example on a fresh cluster, so the shrink of a long example could run for hours.
    shrink_time_limit_s: ClassVar[float] = 120.0
    #: Your application (issue 32): Kubernetes manifests -- a file, a directory, or a list
    #: of both, loaded as one set (a CRD in one file serves the custom resources of
    #: another), as ``chaoskube run --manifests`` loads them. A relative path is relative
    #: to the file of the module of the class that sets it. Created through the API at boot,
    #: in order, as ``kubectl create -f`` creates them (a namespace or a CRD's kind not
    #: served yet is retried, :data:`MANIFEST_ATTEMPTS` times, every second); before the
    #: first step. Its Deployments join the ``deployments`` bundle, so the workload rules
    #: scale, roll out, evict from and delete them too.
    manifests: ClassVar[str | Path | tuple[str | Path, ...] | list[str | Path] | None] = None
    #: The namespaces the workload rules act in (create, scale, update and delete a
    #: Deployment, create a PDB, delete or evict a pod). None: those of the manifests'
    #: workloads, or ``default`` without manifests. (The generator's own actions,
    #: :data:`ACTION_RULES`, keep their namespaces: ``actions.NAMESPACES``.)
    namespaces: ClassVar[tuple[str, ...] | None] = None

    deployments = Bundle("deployments")

    def __init__(self) -> None:
        super().__init__()
        self.live: LiveCluster | None = None
        self.faults: FaultInjector | None = None
        self.tenants: Any = None  # chaoskube.tenants.Tenants, once start_tenants ran
        self.user_processes: list[str] = []  # started by start_processes
        self.eventually_verdict: Verdict | None = None  # the liveness phase's verdict on the @eventually properties
        self.answered: dict[str, bool] = {}  # invariant name -> whether its last verdict was true or false (not unknown)
        self.selectors: dict[str, str] = {}  # a manifests' Deployment's bundle key -> its pods' label selector
        self._quiet = False  # require() records without raising (the teardown's last look)

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

    @property
    def injector(self) -> FaultInjector:
        assert self.faults is not None, "the cluster is not booted yet (boot is the first step)"
        return self.faults

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Await ``fn(*args)`` inside the simulation (virtual time moves only here)."""
        return self.live_cluster.run(fn, *args)

    def run_sync(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn(*args)`` inside the simulation's thread, at the current instant."""

        async def call() -> Any:
            return fn(*args)

        return self.run(call)

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        self.world.record(type, **fields)

    def require(self, name: str, verdict: Verdict) -> None:
        """Fail (``InvariantViolation``) on a False verdict; unknown passes (and is
        remembered: :attr:`RunSummary.unknown`)."""
        self.answered[name] = verdict.valid is not None
        if verdict.valid is False and not self._quiet:
            raise InvariantViolation(name, verdict)

    def summary(self) -> RunSummary:
        unknown = tuple(sorted(name for name, answered in self.answered.items() if not answered))
        return dataclasses.replace(self.live_cluster.summary(), unknown=unknown)

    # -- rule weights, default settings, bounded shrinking -----------------------------
    @classmethod
    def setup_state(cls) -> Any:
        """Hypothesis's rules of the class, each listed as many times as its weight, so that
        its uniform draw over the list (``st.sampled_from``) draws rules by weight: fault
        rules (every kind's, and ``restart``) weight 1, every other rule the weight that
        makes faults :attr:`fault_share` of the draws, or its :attr:`rule_weights` entry.
        Relies on ``RuleBasedStateMachine.setup_state`` (not a documented extension point:
        tests/testing/test_machine_settings.py checks the draws' proportions)."""
        state = super().setup_state()
        cached = _WEIGHTED.get(cls)
        if cached is not None and cached[0] is state:
            return cached[1]
        names = [rule.function.__name__ for rule in state.rules]
        single = FAULT_RULE_NAMES | set(ACTION_RULES)  # weight 1 (ACTION_RULES says why)
        faults = sum(1 for name in names if name in FAULT_RULE_NAMES and name not in cls.rule_weights)
        others = sum(1 for name in names if name not in single and name not in cls.rule_weights)
        weight = workload_weight(faults, others, cls.fault_share)
        weighted = []
        for each_rule, name in zip(state.rules, names, strict=True):
            count = cls.rule_weights.get(name, 1 if name in single else weight)
            assert isinstance(count, int) and count >= 0, f"rule_weights[{name!r}] must be an integer >= 0, not {count!r}"
            weighted += [each_rule] * count
        result = dataclasses.replace(state, rules=weighted or list(state.rules))
        _WEIGHTED[cls] = (state, result)
        return result

    @classmethod
    @functools.lru_cache
    def _to_test_case(cls) -> type[unittest.TestCase]:
        """``Machine.TestCase``: Hypothesis's, with the machine's default settings
        (:func:`default_settings`) and shrinking bounded by :attr:`shrink_time_limit_s`."""

        class StateMachineTestCase(unittest.TestCase):
            settings = default_settings()

            def runTest(self) -> None:
                with shrinking_bounded(cls.shrink_time_limit_s):
                    run_state_machine_as_test(cls, settings=self.settings)

            runTest.is_hypothesis_test = True  # type: ignore[attr-defined]
            runTest._hypothesis_state_machine_class = cls  # type: ignore[attr-defined]

        StateMachineTestCase.__name__ = cls.__name__ + ".TestCase"
        StateMachineTestCase.__qualname__ = cls.__qualname__ + ".TestCase"
        return StateMachineTestCase

    # -- the user's manifests and namespaces ------------------------------------------------
    @classmethod
    def manifest_objects(cls) -> list[Any]:
        """The objects of :attr:`manifests`, in order (empty without manifests);
        ManifestError (one line naming the file) when they do not load."""
        if cls.manifests is None:
            return []
        entries = [cls.manifests] if isinstance(cls.manifests, (str, Path)) else list(cls.manifests)
        owner = next(klass for klass in cls.__mro__ if "manifests" in vars(klass))  # the class that names them (not a focus() of it)
        module = sys.modules.get(owner.__module__)
        base = Path(module.__file__).resolve().parent if module is not None and getattr(module, "__file__", None) else Path.cwd()
        return load_manifests([Path(entry) if Path(entry).is_absolute() else base / entry for entry in entries])

    @classmethod
    def workload_namespaces(cls) -> tuple[str, ...]:
        """Where the workload rules act: :attr:`namespaces`, else the namespaces of the
        manifests' workloads (sorted), else ``default``."""
        if cls.namespaces is not None:
            return tuple(cls.namespaces)
        found = sorted({obj.metadata.namespace or NAMESPACE for obj in cls.manifest_objects() if obj.KIND in WORKLOAD_KINDS})
        return tuple(found) or (NAMESPACE,)

    def deployment_choices(self) -> list[str]:
        """The Deployment names ``create_deployment`` draws from: :attr:`deployment_names`
        in each of :meth:`workload_namespaces`, as ``namespace/name`` (just ``name`` in
        ``default``, so a machine without manifests draws exactly as before)."""
        return [name if namespace == NAMESPACE else f"{namespace}/{name}" for namespace in self.workload_namespaces() for name in self.deployment_names]

    def _place(self, key: str) -> tuple[str, str, str]:
        """(namespace, name, label selector of its pods) of a ``deployments`` bundle entry:
        ``namespace/name`` or a bare name (``default``); the selector is the manifests'
        Deployment's ``matchLabels``, else ``app=<name>`` as the machine labels its own."""
        namespace, _, name = key.rpartition("/")
        return namespace or NAMESPACE, name, self.selectors.get(key, f"app={name}")

    async def _create_manifests(self, objects: list[Any]) -> list[str]:
        """Create the manifests' objects in order (``kubectl create``), as the machine's user
        (each call journaled as a ``hypothesis-outcome``): an existing one is left as it is;
        a namespace or custom kind not served yet (404), a 5xx, a 429 or no answer within
        ``op_timeout_s`` is retried every second, :data:`MANIFEST_ATTEMPTS` times. Returns
        the failures, one line each."""
        failures = []
        actor = self.actor()
        for obj in objects:
            where = f"{obj.KIND} {(obj.metadata.namespace + '/') if obj.metadata.namespace else ''}{obj.metadata.name}"
            for attempt in range(1, MANIFEST_ATTEMPTS + 1):
                if await actor.call(f"create {where}", self.client.create, obj) is not None:
                    break
                _, code, reason = actor.ops[-1]
                if code == 409:  # AlreadyExists: left as it is
                    break
                if (code is not None and code != 404 and code != 429 and code < 500) or attempt == MANIFEST_ATTEMPTS:
                    failures.append(f"{where}: {code or 'no answer'} {reason}".rstrip())
                    break
                await self.world.sleep(1.0)
        return failures

    # -- boot ---------------------------------------------------------------------------
    @initialize(target=deployments, seed=st.integers(min_value=0, max_value=2**32 - 1))
    def boot(self, seed: int) -> Any:
        """Start the World (seed drawn by Hypothesis) and the cluster; wait for the nodes;
        create the :attr:`manifests` (their Deployments join the ``deployments`` bundle)."""
        objects = self.manifest_objects()
        journal = Journal(self.journal_path) if self.journal_path is not None else None
        world = World(seed, journal=journal)
        self.live = LiveCluster(world, self.spec, boot_within_s=self.boot_within_s)
        self.faults = FaultInjector(world, self.fault_context, rng=world.random("hypothesis/faults"))
        self.live.steps.append(("boot", {"seed": seed}))
        self.live.open()
        keys = []
        if objects:
            failures = self.run(self._create_manifests, objects)
            if failures:
                raise ManifestsRefused(f"{len(failures)} object(s) of the manifests could not be created: {failures[0]}")
            for obj in objects:
                if obj.KIND == "Deployment":
                    namespace = obj.metadata.namespace or NAMESPACE
                    key = obj.metadata.name if namespace == NAMESPACE else f"{namespace}/{obj.metadata.name}"
                    labels = obj.spec.selector.match_labels if obj.spec.selector is not None else {}
                    self.selectors[key] = ",".join(f"{label}={value}" for label, value in sorted(labels.items()))
                    keys.append(key)
        self.run_sync(self._start_user_processes)
        return multiple(*keys)

    def start_processes(self, world: World, cluster: Cluster) -> None:
        """Override to start your own processes (a controller, a webhook, an operator) in
        the World, next to the cluster: ``world.spawn(name, main, role=...)``; their clients
        reach the API servers ``cluster.api_server_names``. Called once per example, inside
        the simulation, after the cluster booted (every node Ready) and before the first
        step. The processes it starts are the machine's :attr:`user_processes`: fault rules
        can target them (``name:<process>``, ``role:<role>``), ``heal_all`` and the teardown
        restart those a fault killed, and their journal events are in the example's."""

    def _start_user_processes(self) -> None:
        before = set(self.world.processes)
        self.start_processes(self.world, self.cluster)
        self.user_processes = sorted(set(self.world.processes) - before)

    # -- faults: context and targets ------------------------------------------------------
    def fault_context(self) -> Context:
        """What the injector plans with: the cluster's processes (not the machine's own
        client), who leads etcd and the leader-elected components, and the admin that
        drains (as experiments/systems/kubernetes.py gives its injector)."""
        infos = [ProcessInfo(process.name, process.role, process.zone) for process in self.world.processes.values() if process.role not in UNTARGETED_ROLES]
        return Context(infos, self.leader_of, admin=_Admin(self))

    def leader_of(self, role: str) -> str | None:
        if role == "etcd":
            return self.cluster.etcd_leader()
        if role in ("kube-controller-manager", "kube-scheduler"):
            return self.cluster.leader(role)
        return None

    def fault_targets(self, kind: str) -> list[str]:
        """The targets a rule of ``kind`` draws from, simplest first: selectors, then
        ``name:`` for each process of the kind's role (every process for most kinds) and
        ``zone:`` for each zone. Depends only on the cluster (deterministic)."""
        role = KIND_ROLES.get(kind)
        processes = sorted((process for process in self.world.processes.values() if process.role not in UNTARGETED_ROLES), key=lambda process: process.name)
        zones = [f"zone:{zone}" for zone in sorted({process.zone for process in processes if process.zone})]
        if kind in ZONE_KINDS:
            return zones or ["zone:none"]
        if role is None:
            selectors = list(ANY_ROLE_SELECTORS)
        elif role == "etcd":
            selectors = ["leader:etcd", "role:etcd", "follower:etcd"]
        else:
            selectors = [f"random:{role}", f"role:{role}"]
        names = [f"name:{process.name}" for process in processes if role is None or process.role == role]
        return selectors + names + (zones if role is None else [])

    def inject(self, kind: str, target: str, duration_s: float | None = None, params: dict[str, Any] | None = None) -> ActiveFault | None:
        """Plan and apply one fault now through the injector (journaled as a ``fault``
        event; a target matching nothing is journaled as skipped); heal it after
        ``duration_s`` of world time, or leave it to ``heal_all``. Call inside the
        simulation (from a step)."""
        active = self.injector.inject(kind, target, params)
        if active is not None and duration_s is not None:
            self.world.call_later(duration_s, lambda _: self.injector.heal(active))
        return active

    # -- helpers run inside the simulation ------------------------------------------------
    def actor(self) -> actions.Actor:
        """The machine's user, as :mod:`chaoskube.workload.actions` acts: its client, the
        spec's nodes, ``op_timeout_s`` and ``drain_timeout_s``; every API call's outcome is
        journaled as a ``hypothesis-outcome`` event {op, code, reason}."""
        nodes = [name for name, _, _ in self.spec.nodes()]
        return actions.Actor(self.world, self.client, nodes, op_timeout_s=self.op_timeout_s, drain_timeout_s=self.drain_timeout_s, on_op=self._on_op)

    def _on_op(self, what: str, code: int | None, reason: str) -> None:
        self.record("hypothesis-outcome", op=what, code=code, reason=reason)

    def act(self, action: Callable[..., Awaitable[str]], *args: Any, **kwargs: Any) -> str:
        """Run one action of :mod:`chaoskube.workload.actions` inside the simulation, as
        the machine's user; returns its outcome."""

        async def run() -> str:
            return await action(self.actor(), *args, **kwargs)

        return self.run(run)

    async def _api(self, what: str, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        """One API operation bounded by ``op_timeout_s``; an API error is journaled as the
        step's outcome, not raised (a refused write under faults is the cluster's answer).
        (:meth:`chaoskube.workload.actions.Actor.call`, for subclasses' own rules.)"""
        return await self.actor().call(what, fn, *args, **kwargs)

    # -- workload rules -------------------------------------------------------------------
    # Each is a thin caller of chaoskube.workload.actions (one definition of each action
    # for the machine and the workload generator).
    # A Deployment is named ``name`` in ``default`` and ``namespace/name`` elsewhere
    # (:meth:`deployment_choices`, :meth:`_place`): the rules act in the namespaces of your
    # manifests (:attr:`namespaces`).
    @rule(target=deployments, name=st.runner().flatmap(lambda machine: st.sampled_from(machine.deployment_choices())), replicas=st.integers(1, 4))
    @step
    def create_deployment(self, name: str, replicas: int) -> str:
        namespace, bare, _ = self._place(name)
        self.act(actions.create_workload, "Deployment", namespace, bare, replicas)
        return name

    @rule(name=deployments, replicas=st.integers(0, 5))
    @step
    def scale_deployment(self, name: str, replicas: int) -> None:
        namespace, bare, _ = self._place(name)
        self.act(actions.scale_workload, "Deployment", namespace, bare, replicas)

    @rule(name=deployments, change=st.sampled_from(("restart", "image")))
    @step
    def update_deployment(self, name: str, change: str) -> None:
        """A new pod template, so the Deployment controller rolls out a new ReplicaSet:
        ``kubectl rollout restart`` (``restart``: the ``restartedAt`` annotation, stamped
        with virtual time) or ``kubectl set image`` (``image``: the other of two images)."""
        namespace, bare, _ = self._place(name)
        self.act(actions.update_workload, "Deployment", namespace, bare, change)

    @rule(name=consumes(deployments))
    @step
    def delete_deployment(self, name: str) -> None:
        namespace, bare, _ = self._place(name)
        self.act(actions.delete_object, "Deployment", namespace, bare)

    @rule(name=deployments, max_unavailable=st.integers(0, 2))
    @step
    def create_pdb(self, name: str, max_unavailable: int) -> None:
        namespace, bare, _ = self._place(name)
        self.act(actions.create_pdb, namespace, bare, f"maxUnavailable={max_unavailable}")

    @rule(name=deployments, index=st.integers(0, 7))
    @step
    def delete_pod(self, name: str, index: int) -> None:
        namespace, _, selector = self._place(name)
        self.act(actions.delete_pod, namespace, index, selector)

    @rule(name=deployments, index=st.integers(0, 7))
    @step
    def evict_pod(self, name: str, index: int) -> None:
        """The Eviction API (``POST pods/<name>/eviction``): the PDB-guarded path."""
        namespace, _, selector = self._place(name)
        self.act(actions.evict_pod, namespace, index, selector)

    @rule(index=st.integers(0, 7))
    @step
    def cordon(self, index: int) -> None:
        self.act(actions.cordon, index)

    @rule(index=st.integers(0, 7))
    @step
    def uncordon(self, index: int) -> None:
        self.act(actions.cordon, index, unschedulable=False)

    @rule(index=st.integers(0, 7))
    @step
    def drain(self, index: int) -> None:
        """``kubectl drain`` by the user, awaited, bounded by ``drain_timeout_s`` of virtual
        time (the ``drain_fault`` rule runs one in the background and uncordons on heal)."""
        self.act(actions.drain, index)

    def _node(self, index: int) -> str:
        names = [name for name, _, _ in self.spec.nodes()]
        return names[index % len(names)]

    # -- fault rules (one per kind, added below the class) and healing ---------------------
    @precondition(_booted)
    @rule(who=st.runner().flatmap(lambda machine: st.sampled_from(machine.fault_targets("kill"))))
    @step
    def restart(self, who: str) -> None:
        """Kill the targets and start them again from their disks at once (a crash-loop's
        one turn, ``kubectl delete pod`` of a static pod): a ``kill`` healed at once."""

        async def restart() -> None:
            active = self.inject("kill", who)
            if active is not None:
                self.injector.heal(active)

        self.run(restart)

    @rule()
    @step
    def heal_all(self) -> None:
        self.run_sync(self._heal)

    def _heal(self) -> None:
        """Heal every fault: the injector's (newest first), then whatever else a subclass's
        own rules did to the network, pauses, clocks and processes (a killed process is
        restarted from its disk). Idempotent."""
        if self.faults is not None:
            self.faults.heal_all()
        self.world.network.heal()
        for name in [*self.cluster.processes(), *self.user_processes]:
            process = self.world.processes[name]
            process.resume()
            process.reset_clock()
            if not process.alive and process.role != "bootstrap":
                process.start()

    @rule(seconds=st.sampled_from([1.0, 5.0, 15.0, 30.0, 60.0]))
    @step
    def wait(self, seconds: float) -> None:
        self.run(self.world.sleep, seconds)

    # -- adversarial tenants (issue 19) ---------------------------------------------------
    @precondition(lambda self: self.live is not None and self.tenants is None)
    @rule()
    @step
    def start_tenants(self) -> None:
        """The adversarial tenants' objects, created by the administrator
        (``chaoskube.tenants``); their attempts are then rules of their own."""
        from chaoskube.tenants import Tenants

        tenants = Tenants(self.world, self.cluster.api_server_names, [name for name, _, _ in self.spec.nodes()])
        self.run(tenants.setup)
        self.tenants = tenants

    @precondition(lambda self: self.tenants is not None)
    @rule(tenant=st.sampled_from(("kubelet", "service-account", "rolebinding-user", "deleted-service-account", "terminating-namespace")), action=st.integers(0, 31))
    @step
    def tenant_attempt(self, tenant: str, action: int) -> None:
        """One attempt of one tenant: ``action`` indexes its actions (forbidden and allowed
        ones alike), so Hypothesis picks which boundary to probe under which fault."""
        names = [name for name, _ in self.tenants.actions[tenant]]
        self.run(self.tenants.attempt, tenant, names[action % len(names)])

    @precondition(lambda self: self.tenants is not None)
    @rule()
    @step
    def tenant_revoke(self) -> None:
        """The administrator deletes the ephemeral ServiceAccount, alice's RoleBinding and
        the doomed namespace."""
        self.run(self.tenants.revoke)

    @precondition(lambda self: self.tenants is not None)
    @rule()
    @step
    def tenant_restore(self) -> None:
        """The administrator re-creates the ServiceAccount (a new uid) and the RoleBinding."""
        self.run(self.tenants.restore)

    @precondition(lambda self: self.tenants is not None)
    @invariant()
    def authorization_holds(self) -> None:
        from chaoskube.checkers.authorization import check_authorization

        self.require("authorization", run_checker(check_authorization, self.world.journal.events))

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
        """The liveness phase: heal everything, then require convergence and every
        ``@eventually`` property within ``convergence_deadline_s`` — unless the run is
        already failing (then only stop, and label the failure) or ``liveness`` is False
        (then only stop)."""
        if self.live is None:
            return
        failing = sys.exc_info()[1]
        verdict = None
        try:
            if failing is None and self.live.running and self.liveness:
                self.live.record_step("teardown", {})
                verdict = self.run(self._converge)
        finally:
            self.live.stop()
            if failing is None and verdict is not None and any(not answered for answered in self.answered.values()):
                self._look_again()
            summary = self.summary()
        if failing is not None:
            _label(failing, summary)
            return
        if verdict is not None and verdict.valid is False:
            error = InvariantViolation("convergence", verdict)
            _label(error, summary)
            raise error
        if self.eventually_verdict is not None and self.eventually_verdict.valid is False:
            error = InvariantViolation("eventually", self.eventually_verdict)
            _label(error, summary)
            raise error

    def _look_again(self) -> None:
        """After the liveness phase: the invariants once more on the whole journal, only to
        learn which still have nothing to judge (:attr:`RunSummary.unknown`; a replay judges
        the whole journal, teardown included: pods bound during it give ``scheduling``
        something to judge). Safety is required after each step, not here."""
        self._quiet = True
        try:
            for attribute in BUILT_IN_INVARIANTS:
                function = getattr(type(self), attribute, None)
                marker = getattr(function, INVARIANT_MARKER, None)
                if marker is not None and all(condition(self) for condition in marker.preconditions):
                    function(self)
        finally:
            self._quiet = False

    async def _converge(self) -> Verdict:
        from chaoskube.node.kubelet import cordon

        self._heal()
        healed_at = self.world.now
        self.record("hypothesis-heal", at=healed_at)
        deadline = healed_at + self.convergence_deadline_s
        cordoned = nodes = [name for name, _, _ in self.spec.nodes()]
        while True:
            await self.world.sleep(self.convergence_poll_s)
            still = []
            for node in cordoned:
                if await self._api(f"uncordon {node}", cordon, self.client, node, unschedulable=False) is None:
                    still.append(node)
                elif not (await actions.taint_node(self.actor(), nodes.index(node), "")).startswith("ok"):  # the taint_node rule's taint, like a cordon
                    still.append(node)
            cordoned = still
            verdict = run_checker(check_convergence, self.world.journal.events, healed_at=healed_at, deadline_s=self.convergence_deadline_s)
            converged = verdict.details.get("converged_at_end", False) and verdict.valid is not False
            if converged and not cordoned:
                if not self._eventually():
                    return verdict
                self.eventually_verdict = await self._judge_eventually(healed_at)
                if self.eventually_verdict.valid is not False:
                    return verdict
            if self.world.now > deadline:
                if self._eventually() and self.eventually_verdict is None:  # never converged: judge them once anyway
                    self.eventually_verdict = await self._judge_eventually(healed_at, final=True)
                return verdict

    def _eventually(self) -> list[tuple[str, Callable[..., Any]]]:
        """The machine's ``@eventually`` properties, by name."""
        found = []
        for attribute in sorted(dir(type(self))):
            function = getattr(type(self), attribute, None)
            if getattr(function, EVENTUALLY_MARKER, False):
                found.append((attribute, function))
        return found

    async def _judge_eventually(self, healed_at: float, *, final: bool = False) -> Verdict:
        """Every ``@eventually`` property now; the first that does not hold makes the
        verdict false (a verdict that may still turn true before the deadline: the caller
        polls again unless ``final``)."""
        held = []
        for name, function in self._eventually():
            try:
                answer = function(self)
                if inspect.isawaitable(answer):
                    answer = await answer
            except AssertionError as error:
                answer = Verdict(False, str(error).strip().splitlines()[0] if str(error).strip() else "assertion failed")
            verdict = answer if isinstance(answer, Verdict) else Verdict(answer is not False, "returned False" if answer is False else "held")
            self.record("hypothesis-eventually", property=name, valid=verdict.label, reason=verdict.reason, final=final)
            if verdict.valid is False:
                after = self.world.now - healed_at
                return Verdict(False, f"{name} did not hold {after:.1f} s after heal (deadline {self.convergence_deadline_s:g} s): {verdict.reason}", verdict.evidence, {"property": name})
            held.append(name)
        return Verdict(True, f"held {self.world.now - healed_at:.1f} s after heal: {', '.join(held)}", details={"properties": held})

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


# ---------------------------------------------------------------------- one rule per kind
def _parameter_strategies(kind: str) -> dict[str, st.SearchStrategy[Any]]:
    strategies: dict[str, st.SearchStrategy[Any]] = {}
    for name, default in KINDS[kind].items():
        assert name not in ("who", "duration_s", "self"), f"fault kind {kind!r}: parameter {name!r} collides with a rule argument"
        values = KIND_PARAMETER_VALUES.get((kind, name)) or PARAMETER_VALUES.get(name) or CHOICES.get(name)
        if values is None and name in ROLE_LISTS:
            values = ("*",)
        strategies[name] = st.sampled_from(values) if values else st.just(default)
    return strategies


def _fault_rule(kind: str) -> Callable[..., Any]:
    """The rule that draws and applies a fault of ``kind`` (module docstring)."""
    name = fault_rule_name(kind)

    def fault(self: ClusterMachine, who: str, duration_s: float | None, **params: Any) -> None:
        self.run_sync(self.inject, kind, who, duration_s, params)

    fault.__name__ = name
    fault.__qualname__ = f"ClusterMachine.{name}"
    fault.__doc__ = f"Fault ``{kind}`` (faults/kinds.py) on the target ``who``, healed after ``duration_s`` (None: by heal_all or teardown)."
    targets = st.runner().flatmap(lambda machine: st.sampled_from(machine.fault_targets(kind)))
    decorated = rule(who=targets, duration_s=st.sampled_from(FAULT_DURATIONS_S), **_parameter_strategies(kind))(step(fault))
    return precondition(_booted)(decorated)


for _kind in FAULT_KINDS:
    assert not hasattr(ClusterMachine, fault_rule_name(_kind)), f"fault kind {_kind!r}: rule name {fault_rule_name(_kind)!r} is taken"
    setattr(ClusterMachine, fault_rule_name(_kind), _fault_rule(_kind))
del _kind

# ------------------------------------------------------- one rule per generator action
def _action_rule(name: str) -> Callable[..., Any]:
    """The rule of the generator's action ``name`` (chaoskube.workload.actions.ACTIONS):
    its arguments drawn from the same table the generator draws from."""
    action = actions.ACTIONS[name]

    def act(self: ClusterMachine, **args: Any) -> None:
        self.act(action.run, **args)

    act.__name__ = name
    act.__qualname__ = f"ClusterMachine.{name}"
    act.__doc__ = f"The workload generator's action ``{name}``: {action.doc} (chaoskube/workload/actions.py)."
    strategies = {arg: st.sampled_from(values) for arg, values in actions.strategy_values(name).items()}
    return precondition(_booted)(rule(**strategies)(step(act)))


#: The generator's actions that are rules of their own (the others -- create_pdb, delete_pod,
#: evict_pod, cordon, uncordon, drain -- are the machine's Deployment-bundle rules above,
#: calling the same bodies). Each weighs 1 in the draw, like a fault rule, so adding them
#: left the share of the Deployment rules and the faults as it was.
ACTION_RULES: tuple[str, ...] = tuple(name for name in actions.ACTIONS if not hasattr(ClusterMachine, name))
for _name in ACTION_RULES:
    setattr(ClusterMachine, _name, _action_rule(_name))
del _name

#: The rule of each fault kind the machine draws (kind -> rule name).
FAULT_RULES: dict[str, str] = {kind: fault_rule_name(kind) for kind in FAULT_KINDS}


def focus(machine: type[ClusterMachine], name: str, *, rules: Iterable[str], invariants: Iterable[str] | None = None, **attributes: Any) -> type[ClusterMachine]:
    """A subclass of ``machine`` named ``name`` that keeps only ``rules`` (plus ``wait``)
    and, when given, only ``invariants``: every other rule or invariant, including fault
    rules added later, is shadowed with None. ``attributes`` set class attributes; the
    class's ``__module__`` is the caller's (so ``module:QualName`` imports it). A
    focused machine finds and shrinks a bug that needs few rules much faster."""
    keep = set(rules) | {"wait"}
    kept_invariants = None if invariants is None else set(invariants)
    namespace: dict[str, Any] = {}
    for attribute in sorted(dir(machine)):
        value = getattr(machine, attribute, None)
        if getattr(value, RULE_MARKER, None) is not None and attribute not in keep:
            namespace[attribute] = None
        if kept_invariants is not None and getattr(value, INVARIANT_MARKER, None) is not None and attribute not in kept_invariants:
            namespace[attribute] = None
    unknown = sorted(keep - {attribute for attribute in dir(machine) if getattr(getattr(machine, attribute, None), RULE_MARKER, None) is not None})
    if unknown:
        raise ValueError(f"focus({machine.__name__}): no rule named {unknown[0]!r}")
    namespace.update(attributes)
    namespace.setdefault("__module__", sys._getframe(1).f_globals.get("__name__", machine.__module__))  # where focus was called
    return type(name, (machine,), namespace)


#: The fault rules (every kind's, and ``restart``): weight 1 in the draw (ClusterMachine.setup_state).
FAULT_RULE_NAMES: frozenset[str] = frozenset([*FAULT_RULES.values(), "restart"])
_WEIGHTED: dict[type, tuple[Any, Any]] = {}


def workload_weight(faults: int, others: int, fault_share: float) -> int:
    """The integer weight of each non-fault rule that brings the share of fault draws
    nearest ``fault_share`` (fault rules weigh 1): ``faults / (faults + others * w)``."""
    assert 0 < fault_share <= 1, f"fault_share must be in (0, 1], not {fault_share}"
    if not faults or not others:
        return 1
    wanted = faults * (1 - fault_share) / (fault_share * others)
    return max(1, round(wanted))


#: What ``Machine.TestCase`` runs with unless you assign ``Machine.TestCase.settings``
#: (:func:`default_settings`): 25 examples of up to 30 steps (each example boots a cluster:
#: about 4 examples a second of CPU on the default small cluster, bench/stateful.py), no
#: deadline (a step covers seconds of virtual time), every health check off (boots are slow
#: by design); everything else from the current Hypothesis profile (the example database:
#: a failure found once is tried first next time).
DEFAULT_SETTINGS_ARGS: dict[str, Any] = {"max_examples": 25, "stateful_step_count": 30, "deadline": None, "suppress_health_check": list(HealthCheck)}


def default_settings() -> settings:
    """:data:`DEFAULT_SETTINGS_ARGS` over the current Hypothesis profile."""
    return settings(**DEFAULT_SETTINGS_ARGS)
#: How :func:`shrinking_bounded` bounds shrinking: Hypothesis stops shrinking after
#: ``hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS`` of wall time (300 s, a
#: module constant read when shrinking starts); the machine sets it for the duration of its
#: test, and a test checks that the name still exists.
SHRINK_TIME_LIMIT_NOTE = "hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS"


@contextlib.contextmanager
def shrinking_bounded(seconds: float) -> Iterator[None]:
    """Within the block, Hypothesis shrinks a failure for at most ``seconds`` of wall time
    (then reports the smallest failing example found so far); see
    :data:`SHRINK_TIME_LIMIT_NOTE`."""
    from hypothesis.internal.conjecture import engine

    assert seconds > 0, seconds
    previous = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if previous is None:  # pragma: no cover - a Hypothesis without it; the test of this module says so
        yield
        return
    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = previous


def _label(error: BaseException, summary: RunSummary) -> None:
    """Attach the run's summary to a failure (once: the first run to fail labels it)."""
    if getattr(error, "chaoskube_run", None) is None:
        error.chaoskube_run = summary  # type: ignore[attr-defined]
        error.add_note("chaoskube run (replay with ClusterMachine.replay(steps)):\n" + summary.describe())

"""Live runs (``chaoskube serve``): an experiment's simulated cluster served to real clients.

The run:

1. The system starts in ordinary virtual time, as fast as it computes (the cluster comes
   up and its nodes turn Ready in well under a wall second).
2. The World goes live (:meth:`chaoskube.sim.World.go_live`: virtual time paced to the
   wall clock) and the HTTPS front opens one loopback listener per API server replica
   (:mod:`chaoskube.apiserver.http`). A generated CA signs the serving certificate and a
   client certificate per identity; the kubeconfig names every replica (one context each).
3. With ``--run COMMAND`` the user's program starts with ``KUBECONFIG`` set to its own
   kubeconfig, as the simulated process ``operator`` (role ``operator``): its stdout and
   stderr are journaled line by line (``operator-output``, with the virtual time); a
   ``kill`` fault kills the program (SIGKILL to its process group) and its restart starts
   it again; ``pause`` stops it (SIGSTOP) until resume (SIGCONT); a partition between
   ``operator`` and the API servers drops its requests in the simulated network (the
   front then stalls them). Experiment files may target it (``role:operator``,
   ``name:operator``) when served with ``--run`` (registry.find(operator=True)). Its
   requests are journaled by the front as ``http-request`` and ``api-op`` events of client
   ``operator``, so the experiment's checkers judge what it did. It runs until the run
   ends or a fault stops it: it is forked from the run's own thread (:class:`Program`:
   Linux ties the parent-death signal to the forking *thread*), and at the end of the run
   it gets SIGTERM and ``grace_s`` (a Pod's terminationGracePeriodSeconds, 30 s) before
   SIGKILL, and is reaped. A parent-death signal and a guard process
   (:class:`ProgramGuard`) make sure it cannot outlive a crashed or SIGKILLed chaoskube.
4. The experiment's phases run as in a simulated run (setup, steady state, faults, heal,
   recovery, checks), paced to the wall clock; the run directory and reports are written
   as for ``chaoskube run``.

Without an experiment, a default cluster runs with no faults until Ctrl-C. Ctrl-C (or
SIGTERM) *interrupts* the run: the phases stop where they are, the operator gets SIGTERM and
its grace period, the run is marked interrupted, and the checkers judge what was observed;
those that judge the end of a run (:data:`JUDGE_THE_END`: the steady state after recovery,
convergence, end-state assertions...) are left out, each with a note saying why. A second
signal aborts (no verdicts); the command exits 130 for SIGINT, 143 for SIGTERM.
``LiveHandle.stop()`` (tests, tools) instead ends the fault phase early and lets heal,
recovery and the checks run. Checkers that compare with a fault-free reference run
(:data:`NEEDS_A_REFERENCE`: ``differential``) are left out of every live run: the
outside programs cannot be in the reference.

Not byte-replayable: the World's randomness stays seeded, but outside programs send
requests when they do, and a loaded machine makes virtual time lag the wall clock. The
result says so (``live`` in result.json, a section in report.md) and records what can be
replayed: the experiment and seed (``chaoskube run``, into a directory of its own, replays
the cluster and faults without the outside program; a plain ``serve`` has no experiment to
replay), and every outside request in the journal. ``chaoskube replay`` refuses a live run
directory (exit 2).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import trio

from chaoskube.api import protocol
from chaoskube.api.protocol import set_epoch
from chaoskube.apiserver.http import ApiFront, CertificateAuthority, FrontConfig, Identity, ServerTLS, kubeconfig, write_kubeconfig
from chaoskube.checkers.verdict import Verdict
from chaoskube.client.client import ApiError
from chaoskube.experiments.model import Experiment, Phases, experiment_dir
from chaoskube.experiments.phases import PhaseRecord, drive_phases
from chaoskube.experiments.registry import MAX_PHASE_S
from chaoskube.experiments.reports import write_result
from chaoskube.experiments.result import RunResult, close_run_log, open_run_log
from chaoskube.experiments.signals import die_with_parent, note_signal, stopping_now
from chaoskube.experiments.simulated import STEADY_STATE_POLL_S, SimulatedHost, judge_run
from chaoskube.experiments.systems.base import System
from chaoskube.sim import Journal, Process, World

__all__ = ["LiveHandle", "LiveOptions", "LiveRunResult", "OPERATOR", "default_experiment", "run_live"]

OPERATOR = "operator"
#: How long a live run's fault phase lasts without an experiment: until Ctrl-C, at most
#: the longest phase an experiment may have (a day: registry.MAX_PHASE_S), so the default
#: experiment is a valid one that ``--faults`` can give faults to.
FOREVER_S = MAX_PHASE_S
MAX_LINE = 4000  # journaled characters of one output line
#: How often a live run asks whether the manifests' CRDs are Established before it starts
#: the user's program (``kubectl wait`` polls its watch; a tenth of a second is finer).
ESTABLISHED_POLL_S = 0.1


@dataclass(frozen=True)
class LiveOptions:
    host: str = "127.0.0.1"
    port: int = 6443  # the first replica's; 0 picks free ports (tests)
    kubeconfig: Path | None = None  # default: <out>/kubeconfig
    run: str = ""  # the user's program
    identities: tuple[Identity, ...] = ()
    operator: Identity = Identity(name=OPERATOR, user="chaoskube-operator", groups=("system:masters",))
    rate: float = 1.0
    #: How long the program has to exit after SIGTERM when the run ends or is interrupted
    #: (a Pod's terminationGracePeriodSeconds, default 30 s), before SIGKILL.
    grace_s: float = 30.0
    #: Virtual time 0 stands this many wall seconds before the run starts. The boot runs
    #: ahead of the wall clock and the front opens only once the wall has caught up with it
    #: (LiveHost.start); a caller that knows how long the boot lasts in virtual time (the
    #: same seed boots the same way: test-operator learns it) gives it here, and the front
    #: opens as soon as the boot is done. Object timestamps then read as a cluster booted
    #: that long ago.
    epoch_lead_s: float = 0.0
    #: Called (from the run's thread) once the front is serving, with the handle.
    on_ready: Callable[[LiveHandle], None] | None = None


@dataclass
class LiveHandle:
    """What a running live run offers: its kubeconfigs and URLs, and ``stop()`` (from any
    thread) which cuts the fault phase short as Ctrl-C does."""

    kubeconfig: Path
    operator_kubeconfig: Path
    urls: list[tuple[str, str]]
    world: World
    front: ApiFront
    system: System
    _token: Any = None
    _host: LiveHost | None = None

    def stop(self) -> None:
        assert self._host is not None
        with contextlib.suppress(trio.RunFinishedError):
            trio.from_thread.run_sync(self._host.request_stop, trio_token=self._token)

    def interrupt(self) -> None:
        """What Ctrl-C does (from any thread): stop the run where it is, stop the operator
        gracefully, judge what was observed."""
        assert self._host is not None
        with contextlib.suppress(trio.RunFinishedError):
            trio.from_thread.run_sync(self._host.interrupt, "interrupt", trio_token=self._token)

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` in the run's Trio thread (inspect or fault the world safely)."""
        return trio.from_thread.run_sync(fn, trio_token=self._token)


@dataclass
class LiveRunResult(RunResult):
    mode = "live"
    live: dict[str, Any] = field(default_factory=dict)

    @property
    def replay(self) -> str:
        """``chaoskube run`` of the experiment and seed, into a directory of its own (the
        cluster and faults without the outside programs); empty after a plain ``serve``."""
        return str(self.live.get("replay", ""))

    def to_json(self) -> dict[str, Any]:
        payload = super().to_json()
        payload["mode"] = "live"
        payload["live"] = self.live
        return payload


def default_experiment() -> Experiment:
    """The experiment of ``chaoskube serve`` without one: the default cluster, no faults,
    until Ctrl-C."""
    return Experiment(
        name="serve",
        title="A simulated cluster served live",
        description="The default cluster (3 etcd members, 2 API servers, 2 controller-managers, 2 schedulers, 3 nodes), no faults, served to real clients until Ctrl-C.",
        source="chaoskube serve",
        system="kubernetes",
        checkers=["steady-state", "leader-election"],
        phases=Phases(setup_s=120.0, warmup_s=0.0, faults_s=FOREVER_S, recovery_s=60.0, settle_s=0.0),
    )


# ----------------------------------------------------------------------------- the host
class LiveHost(SimulatedHost):
    """The phase host of a live run: the simulated host, plus going live, the front, the
    user's program, and a stop that cuts the warm-up and fault phases short."""

    def __init__(self, world: World, experiment: Experiment, system: System, options: LiveOptions, out: Path, nursery: trio.Nursery) -> None:
        #: The monotonic clock reading of virtual time 0 (run_live's epoch); None: now.
        self.epoch_wall0: float | None = None
        super().__init__(world, experiment, system, None)
        self.options = options
        self.out = out
        self.nursery = nursery
        self.front: ApiFront | None = None
        self.handle: LiveHandle | None = None
        self.phase = ""
        self.stopping = trio.Event()
        self.phases_scope: trio.CancelScope | None = None
        #: Set by :meth:`interrupt`: the signal, the phase and the time.
        self.interrupted: dict[str, Any] | None = None
        self.signals: list[str] = []
        self.operator_runs: list[dict[str, Any]] = []
        self._guard: ProgramGuard | None = None

    def program_guard(self) -> ProgramGuard:
        if self._guard is None:
            self._guard = ProgramGuard()
        return self._guard

    def close_guard(self) -> None:
        if self._guard is not None:
            self._guard.close()
            self._guard = None

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002
        if type == "phase":
            self.phase = str(fields.get("name", ""))
        super().record(type, **fields)

    def request_stop(self) -> None:
        """End the warm-up or fault phase now (``LiveHandle.stop``); heal, recovery and
        the checks follow."""
        if not self.stopping.is_set():
            self.world.record("live", event="stop-requested", phase=self.phase)
            self.stopping.set()

    def interrupt(self, signal_name: str) -> None:
        """Ctrl-C / SIGTERM (or ``LiveHandle.interrupt``): stop the phases where they are;
        the run then stops the operator gracefully and judges what was observed."""
        if self.interrupted is not None:
            return
        self.world.catch_up()
        self.interrupted = {"signal": signal_name, "phase": self.phase, "at": round(self.world.now, 6)}
        self.world.record("live", event="interrupted", signal=signal_name, phase=self.phase)
        self.stopping.set()
        if self.phases_scope is not None:
            self.phases_scope.cancel()

    async def stop_operator(self) -> None:
        """Stop the user's program as a kubelet stops a container: SIGTERM (to its process
        group), up to ``options.grace_s`` to exit (terminationGracePeriodSeconds, default 30
        s: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination),
        then SIGKILL; reaped before this returns. A paused program is continued first, or
        it could not act on the SIGTERM."""
        process = self.world.processes.get(OPERATOR)
        if process is None or not process.alive:
            return
        program = process.memory.get("program")
        if program is not None and not program.exited.is_set():
            process.resume()
            self.world.record("operator", event="terminate", pid=program.pid, grace_s=self.options.grace_s)
            program.signal_group(signal.SIGTERM)
            with trio.CancelScope() as scope:
                async def deadline() -> None:
                    await self.world.sleep(self.options.grace_s)
                    scope.cancel()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(deadline)
                    await program.exited.wait()
                    nursery.cancel_scope.cancel()
            if not program.exited.is_set():
                self.world.record("operator", event="grace-period-over", pid=program.pid, grace_s=self.options.grace_s)
        if process.alive:
            process.kill()  # SIGKILL whatever is left
        while program is not None and program.popen.returncode is None:  # its task reaps it
            await self.world.sleep(0.01)

    async def sleep(self, seconds: float) -> None:
        if self.phase in ("workload", "faults") and self.world.pacer is not None:
            async with trio.open_nursery() as nursery:
                async def wake() -> None:
                    await self.stopping.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(wake)
                await self.world.sleep(seconds)
                nursery.cancel_scope.cancel()
            return
        await self.world.sleep(seconds)

    def awaiting_convergence(self) -> bool:
        """Never: a live session ends when its settle phase does (phases.PhaseHost), as its
        user planned it in wall-clock time; convergence answers unknown if the store is not
        converged then and the deadline is still ahead."""
        return False

    async def start(self) -> None:
        await super().start()  # the cluster, in plain virtual time
        system = self.system
        handle = getattr(system, "handle", None)
        assert handle is not None, f"system {system.name!r} has no API servers to serve"
        # Virtual time 0 is the wall-clock second the run began (protocol.EPOCH, set by
        # run_live), and from now on an object's timestamp is the wall time it was written
        # at. The boot ran ahead of the wall clock: the world lets the wall catch up before
        # the front opens, so that a client is never served by a world standing still.
        pacer = self.world.go_live(rate=self.options.rate, origin=0.0, wall0=self.epoch_wall0)
        ahead = self.world.now - pacer.allowed()
        if ahead > 0:
            await self.world.sleep(ahead)
        ca = CertificateAuthority()
        serving = ca.issue_server((self.options.host, "localhost"))
        identities = [Identity(name="admin", user="kubernetes-admin", groups=("system:masters",)), *self.options.identities]
        config = FrontConfig(
            host=self.options.host, port=self.options.port,
            identities=tuple((("token", identity.token) if identity.token else ("user", identity.user)) + (OPERATOR,) for identity in [self.options.operator]),
        )
        self.front = ApiFront(self.world, handle.api_server_names, ServerTLS(serving.certificate, serving.key, ca.certificate), config, client_roles={"outside": "outside"})
        await self.front.start(self.nursery)
        users = [(identity, None if identity.token else ca.issue_client(identity.user, identity.groups)) for identity in identities]
        path = self.options.kubeconfig or (self.out / "kubeconfig")
        # The current context talks to the first replica; one more context per replica.
        names = [("chaoskube" if index == 0 else f"chaoskube-{name.removeprefix('kube-')}", url) for index, (name, url) in enumerate(self.front.urls)]
        write_kubeconfig(path, kubeconfig(ca.certificate, names, users, current_user="admin"))
        operator = self.options.operator
        operator_pair = None if operator.token else ca.issue_client(operator.user, operator.groups)
        operator_path = self.out / "operator.kubeconfig"
        write_kubeconfig(operator_path, kubeconfig(ca.certificate, names, [(operator, operator_pair)], current_user=operator.name))
        self.world.record("live", event="serving", urls=[url for _, url in self.front.urls], kubeconfig=str(path))
        if self.options.run:
            if getattr(self.system, "custom_definitions", None):
                self.nursery.start_soon(self._spawn_operator_once_established, operator_path)
            else:
                self._spawn_operator(operator_path)
        self.handle = LiveHandle(path, operator_path, self.front.urls, self.world, self.front, system, trio.lowlevel.current_trio_token(), self)
        if self.options.on_ready is not None:
            self.options.on_ready(self.handle)

    # ------------------------------------------------------------------ the user's program
    async def _spawn_operator_once_established(self, kubeconfig_path: Path) -> None:
        """Start the user's program once the CustomResourceDefinitions of ``--manifests``
        are Established, as a user runs ``kubectl apply -f crds/ && kubectl wait --for
        condition=established crd --all`` before starting an operator: a program started
        before then may discover its group between the CRD's creation and its
        Establishment (the discovery lists only Established CRDs, as upstream's
        customresource_discovery_controller.go does) and, seeing no later CRD event,
        never serve its resource -- kopf logs "Unresolved resources cannot be served"
        then. With no CRD in the manifests it starts as the front opens. A CRD that is not
        Established within the workload's ``converge_s`` does not hold the program back
        for ever: it starts after the setup phase and ``converge_s``, and the journal says so.
        A run stopped before then never starts it."""
        names = list(self.system.custom_definitions)
        waited_from = self.world.now
        # the manifests are applied after the setup phase's steady state
        limit = self.experiment.phases.setup_s + self.system.workload.converge_s
        problems = await self._definitions_not_established()
        while problems and self.world.now - waited_from < limit:
            await self.world.sleep(ESTABLISHED_POLL_S)
            if self.stopping.is_set():  # the run ends before the program had a reason to start
                return
            problems = await self._definitions_not_established()
        self.world.record("operator", event="definitions-established" if not problems else "definitions-not-established",
                          definitions=names, waited_s=round(self.world.now - waited_from, 6), **({"problems": problems} if problems else {}))
        self._spawn_operator(kubeconfig_path)

    async def _definitions_not_established(self) -> list[str]:
        """Which of the manifests' CRDs the store does not hold Established yet, read as
        the system's own steady-state probe reads them; an API server that does not answer
        leaves all of them unknown."""
        try:
            return await self.system.definition_problems()
        except ApiError as error:  # an API server down: ask again later
            return [f"the API did not answer: {error}"]

    def _spawn_operator(self, kubeconfig_path: Path) -> None:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig_path), "PYTHONUNBUFFERED": "1"}
        command = self.options.run
        runs = self.operator_runs
        world = self.world
        host = self

        async def main(process: Process) -> None:
            # Each incarnation has a /tmp of its own, gone when it is reaped, as a
            # container's writable layer is on a restart: what a killed program leaves
            # there (the kubernetes client's certificate and key files, removed only at a
            # clean exit) does not pile up on the machine over a run's many crashes.
            scratch = tempfile.mkdtemp(prefix="chaoskube-operator-tmp-")
            try:
                program = Program.start(command, {**env, "TMPDIR": scratch}, Path.cwd())
            except BaseException:
                shutil.rmtree(scratch, ignore_errors=True)
                raise
            guard = host.program_guard()
            guard.guard(program.pid)
            process.memory["program"] = program
            process.memory["pid"] = program.pid
            entry = {"incarnation": process.incarnation, "pid": program.pid, "started_at": round(world.now, 6)}
            runs.append(entry)
            world.record("operator", event="start", pid=program.pid, command=command, incarnation=process.incarnation)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_pump, world, program.stdout, "stdout")
                    nursery.start_soon(_pump, world, program.stderr, "stderr")
                    await program.wait_exited()
                    # Its main process ended: what it left in its session goes too, as a
                    # container's processes do when its main process exits.
                    program.kill_group()
                    guard.release(program.pid)
                    code = program.reap()
                    world.catch_up()
                    world.record("operator", event="exit", pid=program.pid, code=code)
                    entry["exit_code"] = code
            finally:
                program.kill_group()
                with trio.CancelScope(shield=True):
                    await program.wait_exited()
                guard.release(program.pid)
                code = program.reap()
                program.close()
                entry.setdefault("exit_code", code)
                entry["ended_at"] = round(world.now, 6)
                world.record("operator", event="reaped", pid=program.pid, code=code)
                shutil.rmtree(scratch, ignore_errors=True)

        process = world.spawn(OPERATOR, main, role="operator")
        process.observe(_signal_on_pause)


class Program:
    """The user's program as a child process, started and waited for from the run's thread.

    Why not ``trio.lowlevel.open_process``: it calls ``Popen`` in a Trio worker thread, and
    Linux ties the parent-death signal (``PR_SET_PDEATHSIG``) to the *thread* that forked
    (prctl(2): "the parent ... is considered to be the thread that created this process"),
    so the program got SIGKILL when that idle worker thread exited, about 10 s later
    (shared/FACTS.md). Here ``Popen`` runs in the Trio thread itself -- the thread of the run,
    which lives as long as the run -- and the program is waited for with a pidfd (Linux
    5.3+; readable once the child has exited, before it is reaped) through
    ``trio.lowlevel.wait_readable``, its output read through non-blocking pipes
    (``trio.lowlevel.FdStream``). The parent-death signal is still set, so a SIGKILLed
    chaoskube takes the program along; the program runs in its own session (process group),
    which faults signal as a whole. The signal reaches only the program's first process
    (``/bin/sh``, which Debian's dash does not replace by the command): a
    :class:`ProgramGuard` kills the rest of its process group when chaoskube dies.
    """

    def __init__(self, popen: subprocess.Popen[bytes], stdout: trio.lowlevel.FdStream, stderr: trio.lowlevel.FdStream) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdout = stdout
        self.stderr = stderr
        self.exited = trio.Event()
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):  # not Linux, or a kernel before 5.3
            self._pidfd = os.pidfd_open(popen.pid)

    @classmethod
    def start(cls, command: str, env: dict[str, str], cwd: Path) -> Program:
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            popen = subprocess.Popen(  # noqa: S603 - the user's own command, as they gave it
                ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=out_write, stderr=err_write,
                env=env, cwd=str(cwd), start_new_session=True, preexec_fn=functools.partial(_die_with_parent, os.getpid()),  # noqa: PLW1509 - see the class doc
            )
        except BaseException:
            os.close(out_read)
            os.close(err_read)
            raise
        finally:
            os.close(out_write)
            os.close(err_write)
        return cls(popen, trio.lowlevel.FdStream(out_read), trio.lowlevel.FdStream(err_read))

    async def wait_exited(self) -> None:
        """Return once the program's main process has exited (not reaped yet: its pid,
        and so its process group, stay ours until :meth:`reap`)."""
        if self.exited.is_set():
            return
        if self._pidfd is not None:
            await trio.lowlevel.wait_readable(self._pidfd)
        else:  # no pidfd: a thread waits without reaping (WNOWAIT); it forks nothing
            await trio.to_thread.run_sync(lambda: os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT), abandon_on_cancel=True)
        self.exited.set()

    def signal_group(self, signum: int) -> None:
        if self.popen.returncode is not None:
            return  # reaped: its pid may be someone else's now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def kill_group(self) -> None:
        self.signal_group(signal.SIGCONT)  # a stopped process dies only once continued... or killed
        self.signal_group(signal.SIGKILL)

    def reap(self) -> int:
        """Its exit code (negative: the signal that ended it); call once it has exited."""
        return self.popen.wait()

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        self.stdout.close()
        self.stderr.close()


# The guard: block on stdin, which lists the process groups to guard ("+PGID" / "-PGID"
# lines); at its end -- chaoskube closed it, or died however it died, the kernel closing
# it then -- SIGCONT and SIGKILL every group still listed. Ignores SIGINT/SIGTERM/SIGHUP.
_GUARD = """
import os, signal, sys
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
groups = set()
try:
    for line in sys.stdin:
        line = line.strip()
        if line[:1] == "+":
            groups.add(int(line[1:]))
        elif line[:1] == "-":
            groups.discard(int(line[1:]))
except BaseException:
    pass
for group in sorted(groups):
    for number in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.killpg(group, number)
        except OSError:
            pass
"""


class ProgramGuard:
    """Kills the user's program's whole process group if chaoskube dies (SIGKILL
    included), as experiments/real/workdir.py's reaper removes a real run's directories: a
    small process in its own session (the terminal's Ctrl-C does not reach it, and a pause
    of the program does not stop it), reading a pipe from this process that the kernel
    closes when this process ends. Started from the run's thread; :meth:`close` at the end
    of the run, once every program was reaped."""

    def __init__(self) -> None:
        self.popen = subprocess.Popen(  # noqa: S603 - our own argument list
            [sys.executable, "-c", _GUARD], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )

    def _send(self, line: str) -> None:
        stdin = self.popen.stdin
        if stdin is None or stdin.closed:
            return
        with contextlib.suppress(OSError):  # the guard died: nothing more it can do
            stdin.write(line.encode() + b"\n")
            stdin.flush()

    def guard(self, pgid: int) -> None:
        self._send(f"+{pgid}")

    def release(self, pgid: int) -> None:
        """Before ``pgid``'s leader is reaped (its number may then be reused)."""
        self._send(f"-{pgid}")

    def close(self) -> None:
        if self.popen.stdin is not None and not self.popen.stdin.closed:
            with contextlib.suppress(OSError):
                self.popen.stdin.close()
        try:
            self.popen.wait(timeout=10.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - it exits at EOF
            self.popen.kill()
            self.popen.wait()


def _signal_on_pause(process: Process, event: str) -> None:
    """SIGSTOP / SIGCONT the user's program when its process is paused / resumed."""
    program = process.memory.get("program")
    if program is None:
        return
    if event == "pause":
        program.signal_group(signal.SIGSTOP)
    elif event == "resume":
        program.signal_group(signal.SIGCONT)


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: SIGKILL it when chaoskube's run thread dies, where the OS
    can; and exit at once if chaoskube died before that was set."""
    with contextlib.suppress(OSError):
        die_with_parent()
    if os.getppid() != parent:
        os._exit(1)


async def _pump(world: World, stream: Any, name: str) -> None:
    buffer = b""
    while True:
        data = await stream.receive_some(65536)
        if not data:
            break
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        if lines:
            world.catch_up()
        for line in lines:
            world.record("operator-output", stream=name, line=line.decode("utf-8", "replace")[:MAX_LINE])
    if buffer:
        world.record("operator-output", stream=name, line=buffer.decode("utf-8", "replace")[:MAX_LINE])


# ----------------------------------------------------------------------------- the run
#: Checkers that judge the end of a run (after heal, recovery and settle): an interrupted
#: live run never reached it, so they are left out of its verdicts, each with this reason.
JUDGE_THE_END = {
    "steady-state": "it needs the steady state probed again after heal and recovery",
    "convergence": "it judges the store after heal, at the end of the run",
    "end-state": "its assertions count objects when the workload stops, at the end of the run",
    "workload-invariants": "its exact counts are those at the end of the run",
    "api-watch": "it compares every informer's cache with the store at the end of the run",
    "garbage-collection": "it gives background dependents 60 s to go, which the end of the run may cut short",
    "service-availability": "its error budget is a fraction of the whole run's requests, and a run cut short has fewer of them",
    "differential": "it compares the end state with a fault-free reference run",
}
#: Left out of every live run: the checkers that compare with a fault-free reference run
#: of the same experiment and seed, which cannot hold the outside programs' requests.
NEEDS_A_REFERENCE = {
    "differential": "it compares the end state with a fault-free reference run of the same experiment and seed, and the outside programs (the operator, kubectl) are not in that reference: their requests depend on the wall clock and cannot be replayed into it",
}


def live_experiment(experiment: Experiment) -> Experiment:
    """``experiment`` as a live run judges it: without the checkers of
    :data:`NEEDS_A_REFERENCE` (and their expectations), each left out with a note that says
    why (result.json ``notes``, report.md)."""
    out = [name for name in experiment.checkers if name in NEEDS_A_REFERENCE]
    if not out:
        return experiment
    expected = msgspec.structs.replace(
        experiment.expected,
        failing=[name for name in experiment.expected.failing if name not in out],
        may_fail=[name for name in experiment.expected.may_fail if name not in out],
    )
    notes = [f"checker {name} left out of this live run: {NEEDS_A_REFERENCE[name]}" for name in out]
    return msgspec.structs.replace(experiment, checkers=[name for name in experiment.checkers if name not in out], expected=expected, notes=[*experiment.notes, *notes])


def observed_experiment(experiment: Experiment, record: PhaseRecord, interrupted: dict[str, Any]) -> Experiment:
    """An interrupted live run judges only what it observed: the checkers of
    :data:`JUDGE_THE_END` are left out (the steady state too once it was probed after
    recovery, it is judged), each with a note naming the signal and the phase."""
    where = f"the run was interrupted ({interrupted['signal']}) in phase {interrupted['phase'] or 'setup'}, at {interrupted['at']:.1f} s, before the end of the run"
    out = {name: why for name, why in JUDGE_THE_END.items() if name in experiment.checkers and not (name == "steady-state" and record.after is not None)}
    out |= {name: "probes are judged over the whole run, steady state after heal included" for name in experiment.checkers if name.startswith("probe:")}
    if not out:
        return experiment
    notes = [f"checker {name} not judged: {where}, and {why}" for name, why in out.items()]
    return msgspec.structs.replace(experiment, checkers=[name for name in experiment.checkers if name not in out], notes=[*experiment.notes, *notes])


def run_live(experiment: Experiment | None, system_class: type[System], seed: int, out_dir: str | Path, options: LiveOptions) -> LiveRunResult:
    """Run ``experiment`` (or the default) live; returns when its phases are over, after
    ``LiveHandle.stop()`` (the fault phase cut short: heal, recovery and checks follow), or
    after Ctrl-C / SIGTERM (main thread only) or ``LiveHandle.interrupt()``: the run stops
    where it is, the operator gets SIGTERM and ``options.grace_s`` to exit, and the
    checkers judge what was observed (:func:`observed_experiment`); a second signal aborts
    (no verdicts)."""
    experiment = live_experiment(experiment or default_experiment())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cluster, workload = system_class.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    world = World(seed, journal=Journal(out / "journal.jsonl"))
    record = PhaseRecord()
    hosts: list[LiveHost] = []
    # Object timestamps read as wall time (protocol.set_epoch): virtual time 0 is the
    # wall-clock second this run began, so that clients comparing timestamps with their own
    # clock (kubectl describe's ages, an operator's requeue after creationTimestamp) see real
    # ages. Put back when the run's result is written.
    assert options.epoch_lead_s >= 0, options.epoch_lead_s
    moment = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=options.epoch_lead_s)
    epoch = moment.replace(microsecond=0)
    wall0 = time.monotonic() - options.epoch_lead_s - (moment - epoch).total_seconds()
    previous_epoch = set_epoch(epoch)
    try:
        return _run_live(experiment, system_class, seed, out, options, cluster, workload, world, record, hosts, wall0)
    finally:
        set_epoch(previous_epoch)


def _run_live(
    experiment: Experiment, system_class: type[System], seed: int, out: Path, options: LiveOptions, cluster: Any, workload: Any,
    world: World, record: PhaseRecord, hosts: list[LiveHost], wall0: float,
) -> LiveRunResult:
    """:func:`run_live` once the epoch is set."""
    phases = experiment.phases

    async def main(world: World) -> None:
        system = system_class(world, cluster, workload)
        system.recovery_s = phases.recovery_s
        async with trio.open_nursery() as nursery:
            host = LiveHost(world, experiment, system, options, out, nursery)
            host.epoch_wall0 = wall0
            hosts.append(host)
            if threading.current_thread() is threading.main_thread():
                nursery.start_soon(_signals, host)
            with trio.CancelScope() as host.phases_scope:
                await drive_phases(host, phases, record, poll_s=STEADY_STATE_POLL_S)
            await host.stop_operator()  # SIGTERM, the grace period, then SIGKILL; reaped before the checkers
            nursery.cancel_scope.cancel()

    started = time.perf_counter()
    aborted = False
    sink = open_run_log(out / "run.log")
    try:
        world.run(main)
    except KeyboardInterrupt:
        aborted = True
    finally:
        close_run_log(sink)
        for host in hosts:
            host.close_guard()
    wall = time.perf_counter() - started
    host = hosts[0] if hosts else None
    system = host.system if host is not None else None
    interrupted = host.interrupted if host is not None else None
    if aborted or interrupted is not None:
        stopping_now()  # one more Ctrl-C is answered, not obeyed, while the result is written
    judged = observed_experiment(experiment, record, interrupted) if interrupted is not None else experiment
    verdicts: dict[str, Verdict] = judge_run(judged, system, record, world) if system is not None and not aborted else {}
    injector = host.injector if host is not None else None
    live = {
        "replayable": False,
        "why_not": "outside programs sent requests when they did, and virtual time was paced to the wall clock; only the simulated part is seeded",
        "replay": _replay_command(experiment, seed, out),
        "replays": _replays(experiment, seed, out),
        "pacer": world.pacer.statistics() if world.pacer is not None else {},
        "front": host.front.statistics() if host is not None and host.front is not None else {},
        "urls": [url for _, url in host.front.urls] if host is not None and host.front is not None else [],
        "operator": {"command": options.run, "grace_s": options.grace_s, "runs": host.operator_runs if host is not None else []},
        "outside_requests": sum(1 for event in world.journal.events if event.get("type") == "http-request"),
        "interrupted": interrupted,
        "aborted": aborted,
        "epoch": protocol.EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),  # the wall time of virtual time 0
        "stopped_by": (interrupted or {}).get("signal") if not aborted else (host.signals[-1] if host is not None and host.signals else "KeyboardInterrupt"),
    }
    result = LiveRunResult(
        experiment=judged if not aborted else experiment, seed=seed, out_dir=out, verdicts=verdicts, journal_sha256=world.fingerprint,
        simulated_seconds=world.now, wall_seconds=wall,
        metrics=(system.metrics() if system is not None else {}) | record.metrics(),
        phases=record.phases,
        faults=[{"id": f.id, "applied_at": f.applied_at, "healed_at": f.healed_at, **f.plan.to_json()} for f in injector.faults] if injector else [],
        skipped_faults=list(injector.skipped) if injector else [],
        interrupted=aborted or interrupted is not None, live=live,
    )
    write_result(result, world.journal.events)
    with (out / "report.md").open("a") as report:
        report.write(_live_section(result))
    return result


def _replays(experiment: Experiment, seed: int, out: Path) -> str:
    """What replays a live run, in words."""
    command = _replay_command(experiment, seed, out)
    if not command:
        return "the cluster and seed only: a plain `chaoskube serve` has no experiment that `chaoskube run` could replay"
    return f"{command} replays the cluster and its faults without the outside programs"


def _replay_command(experiment: Experiment, seed: int, out: Path) -> str:
    """``chaoskube run`` of the experiment and seed into a directory of its own (never the
    live run's: it would overwrite its journal); empty when there is no experiment to run
    (a plain ``chaoskube serve``, with or without --manifests)."""
    if experiment.name == "serve" and not experiment.path:
        return ""
    catalogue = not experiment.path or "/catalog/" in experiment.path
    target = experiment.name if catalogue else experiment.path
    options = [item for name in experiment.broken for item in ("--broken", name)]
    if experiment.manifests_dir:
        options += ["--manifests", experiment.manifests_dir]
    if experiment.skip_unsupported:
        options.append("--skip-unsupported")
    if experiment.faults_file:
        options += ["--faults", experiment.faults_file]
    return shlex.join(["chaoskube", "run", target, "--seed", str(seed), *options, "--out", str(out.parent / f"{out.name}-replay")])


def _live_section(result: LiveRunResult) -> str:
    live = result.live
    lines = ["", "## Live run", "",
             "This run was **live** (`chaoskube serve`): real programs talked to the simulated API servers over HTTPS while virtual time was paced to the wall clock.",
             f"It is **not byte-replayable** ({live['why_not']}). What replays: {live['replays']}; every outside request is in the journal (`http-request`, `api-op` events).", ""]
    interrupted = live.get("interrupted")
    if live.get("aborted"):
        lines += [f"**Aborted** by a second signal ({live['stopped_by']}): no checker judged it.", ""]
    elif interrupted:
        lines += [f"**Interrupted** by {interrupted['signal']} in phase {interrupted['phase'] or 'setup'} at {interrupted['at']:.1f} s: the phases after it did not happen; "
                  "only what was observed is judged, and the checkers that judge the end of a run are left out (the notes above say which and why).", ""]
    lines += [f"- Listeners: {', '.join(live['urls']) or 'none'}",
              f"- Outside requests: {live['outside_requests']}; front: {live['front']}",
              f"- Virtual time behind the wall clock at worst: {live['pacer'].get('max_lag_s', 0):.3f} s"]
    operator = live["operator"]
    if operator["command"]:
        lines.append(f"- Operator `{operator['command']}`: {len(operator['runs'])} run(s): " + "; ".join(f"pid {run['pid']} from {run['started_at']:.1f} s, exit {run.get('exit_code')}" for run in operator["runs"]))
    return "\n".join(lines) + "\n"


async def _signals(host: LiveHost) -> None:
    """First SIGINT/SIGTERM: interrupt the run (the operator gets SIGTERM and its grace
    period; what was observed is judged); a second one: abort. Each is noted for the
    command's exit code (130 for SIGINT, 143 for SIGTERM: experiments/signals.py)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            note_signal(signum)
            host.signals.append(signal.Signals(signum).name)
            if host.interrupted is not None:
                raise KeyboardInterrupt
            host.interrupt(signal.Signals(signum).name)

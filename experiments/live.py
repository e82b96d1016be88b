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
   front then stalls them). Its requests are journaled by the front as ``http-request``
   and ``api-op`` events of client ``operator``, so the experiment's checkers judge what it
   did. It is killed and reaped on every way out of the run (the end of the phases, Ctrl-C,
   an error): a parent-death signal is set too, so it cannot outlive a crashed chaoskube.
4. The experiment's phases run as in a simulated run (setup, steady state, faults, heal,
   recovery, checks), paced to the wall clock; the run directory and reports are written
   as for ``chaoskube run``.

Without an experiment, a default cluster runs with no faults until Ctrl-C. Ctrl-C during
the warm-up or fault phase cuts it short: faults are healed, the recovery phase runs, and
the checkers judge the run; a second Ctrl-C aborts at once (no verdicts).

Not byte-replayable: the World's randomness stays seeded, but outside programs send
requests when they do, and a loaded machine makes virtual time lag the wall clock. The
result says so (``live`` in result.json, a section in report.md) and records what can be
replayed: the experiment and seed (``chaoskube run`` replays the cluster and faults
without the outside program), and every outside request in the journal.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from chaoskube.apiserver.http import ApiFront, CertificateAuthority, FrontConfig, Identity, ServerTLS, kubeconfig, write_kubeconfig
from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.model import Experiment, Phases, experiment_dir
from chaoskube.experiments.phases import PhaseRecord, drive_phases
from chaoskube.experiments.reports import write_result
from chaoskube.experiments.result import RunResult, close_run_log, open_run_log
from chaoskube.experiments.signals import die_with_parent, stopping_now
from chaoskube.experiments.simulated import STEADY_STATE_POLL_S, SimulatedHost, judge_run
from chaoskube.experiments.systems.base import System
from chaoskube.sim import Journal, Process, World

__all__ = ["LiveHandle", "LiveOptions", "LiveRunResult", "OPERATOR", "default_experiment", "run_live"]

OPERATOR = "operator"
#: How long a live run's fault phase lasts without an experiment: until Ctrl-C.
FOREVER_S = 10 * 365 * 24 * 3600.0
MAX_LINE = 4000  # journaled characters of one output line


@dataclass(frozen=True)
class LiveOptions:
    host: str = "127.0.0.1"
    port: int = 6443  # the first replica's; 0 picks free ports (tests)
    kubeconfig: Path | None = None  # default: <out>/kubeconfig
    run: str = ""  # the user's program
    identities: tuple[Identity, ...] = ()
    operator: Identity = Identity(name=OPERATOR, user="chaoskube-operator", groups=("system:masters",))
    rate: float = 1.0
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

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` in the run's Trio thread (inspect or fault the world safely)."""
        return trio.from_thread.run_sync(fn, trio_token=self._token)


@dataclass
class LiveRunResult(RunResult):
    mode = "live"
    live: dict[str, Any] = field(default_factory=dict)

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
        super().__init__(world, experiment, system, None)
        self.options = options
        self.out = out
        self.nursery = nursery
        self.front: ApiFront | None = None
        self.handle: LiveHandle | None = None
        self.phase = ""
        self.stopping = trio.Event()
        self.operator_runs: list[dict[str, Any]] = []

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002
        if type == "phase":
            self.phase = str(fields.get("name", ""))
        super().record(type, **fields)

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            self.world.record("live", event="stop-requested", phase=self.phase)
            self.stopping.set()

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

    async def start(self) -> None:
        await super().start()  # the cluster, in plain virtual time
        system = self.system
        handle = getattr(system, "handle", None)
        assert handle is not None, f"system {system.name!r} has no API servers to serve"
        self.world.go_live(rate=self.options.rate)
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
            self._spawn_operator(operator_path)
        self.handle = LiveHandle(path, operator_path, self.front.urls, self.world, self.front, system, trio.lowlevel.current_trio_token(), self)
        if self.options.on_ready is not None:
            self.options.on_ready(self.handle)

    # ------------------------------------------------------------------ the user's program
    def _spawn_operator(self, kubeconfig_path: Path) -> None:
        env = {**os.environ, "KUBECONFIG": str(kubeconfig_path), "PYTHONUNBUFFERED": "1"}
        command = self.options.run
        runs = self.operator_runs
        world = self.world

        async def main(process: Process) -> None:
            child = await trio.lowlevel.open_process(
                ["/bin/sh", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env, cwd=str(Path.cwd()), start_new_session=True, preexec_fn=_die_with_parent,
            )
            process.memory["pid"] = child.pid
            entry = {"incarnation": process.incarnation, "pid": child.pid, "started_at": round(world.now, 6)}
            runs.append(entry)
            world.record("operator", event="start", pid=child.pid, command=command, incarnation=process.incarnation)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_pump, world, child.stdout, "stdout")
                    nursery.start_soon(_pump, world, child.stderr, "stderr")
                    code = await child.wait()
                    world.catch_up()
                    world.record("operator", event="exit", pid=child.pid, code=code)
                    entry["exit_code"] = code
            finally:
                _kill_group(child.pid)
                with trio.CancelScope(shield=True):
                    await child.wait()
                entry.setdefault("exit_code", child.returncode)
                entry["ended_at"] = round(world.now, 6)
                world.record("operator", event="reaped", pid=child.pid, code=child.returncode)

        process = world.spawn(OPERATOR, main, role="operator")
        process.observe(_signal_on_pause)


def _signal_on_pause(process: Process, event: str) -> None:
    """SIGSTOP / SIGCONT the user's program when its process is paused / resumed."""
    pid = process.memory.get("pid")
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if event == "pause":
            os.killpg(pid, signal.SIGSTOP)
        elif event == "resume":
            os.killpg(pid, signal.SIGCONT)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGCONT)  # a stopped process dies only once continued... or killed
        os.killpg(pid, signal.SIGKILL)


def _die_with_parent() -> None:
    """In the child: SIGKILL it when chaoskube dies, where the OS can."""
    with contextlib.suppress(OSError):
        die_with_parent()


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
def run_live(experiment: Experiment | None, system_class: type[System], seed: int, out_dir: str | Path, options: LiveOptions) -> LiveRunResult:
    """Run ``experiment`` (or the default) live; returns when its phases are over, after
    Ctrl-C (SIGINT/SIGTERM, main thread only) or ``LiveHandle.stop()``."""
    experiment = experiment or default_experiment()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cluster, workload = system_class.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    phases = experiment.phases
    world = World(seed, journal=Journal(out / "journal.jsonl"))
    record = PhaseRecord()
    hosts: list[LiveHost] = []

    async def main(world: World) -> None:
        system = system_class(world, cluster, workload)
        system.recovery_s = phases.recovery_s
        async with trio.open_nursery() as nursery:
            host = LiveHost(world, experiment, system, options, out, nursery)
            hosts.append(host)
            if threading.current_thread() is threading.main_thread():
                nursery.start_soon(_signals, host)
            await drive_phases(host, phases, record, poll_s=STEADY_STATE_POLL_S)
            if world.processes.get(OPERATOR) is not None:
                world.processes[OPERATOR].kill()  # stopped and reaped before the checkers
            nursery.cancel_scope.cancel()

    started = time.perf_counter()
    interrupted = False
    sink = open_run_log(out / "run.log")
    try:
        world.run(main)
    except KeyboardInterrupt:
        interrupted = True
        stopping_now()  # one more Ctrl-C is answered, not obeyed, while the result is written
    finally:
        close_run_log(sink)
    wall = time.perf_counter() - started
    host = hosts[0] if hosts else None
    system = host.system if host is not None else None
    verdicts: dict[str, Verdict] = judge_run(experiment, system, record, world) if system is not None and not interrupted else {}
    injector = host.injector if host is not None else None
    live = {
        "replayable": False,
        "why_not": "outside programs sent requests when they did, and virtual time was paced to the wall clock; only the simulated part is seeded",
        "replays": f"chaoskube run {shlex.quote(experiment.path or experiment.name)} --seed {seed} replays the cluster and its faults without the outside programs" if experiment.name != "serve" else "the cluster and seed; not the outside programs",
        "pacer": world.pacer.statistics() if world.pacer is not None else {},
        "front": host.front.statistics() if host is not None and host.front is not None else {},
        "urls": [url for _, url in host.front.urls] if host is not None and host.front is not None else [],
        "operator": {"command": options.run, "runs": host.operator_runs if host is not None else []},
        "outside_requests": sum(1 for event in world.journal.events if event.get("type") == "http-request"),
    }
    result = LiveRunResult(
        experiment=experiment, seed=seed, out_dir=out, verdicts=verdicts, journal_sha256=world.fingerprint,
        simulated_seconds=world.now, wall_seconds=wall,
        metrics=(system.metrics() if system is not None else {}) | record.metrics(),
        phases=record.phases,
        faults=[{"id": f.id, "applied_at": f.applied_at, "healed_at": f.healed_at, **f.plan.to_json()} for f in injector.faults] if injector else [],
        skipped_faults=list(injector.skipped) if injector else [],
        interrupted=interrupted, live=live,
    )
    write_result(result, world.journal.events)
    with (out / "report.md").open("a") as report:
        report.write(_live_section(result))
    return result


def _live_section(result: LiveRunResult) -> str:
    live = result.live
    lines = ["", "## Live run", "",
             "This run was **live** (`chaoskube serve`): real programs talked to the simulated API servers over HTTPS while virtual time was paced to the wall clock.",
             f"It is **not byte-replayable** ({live['why_not']}). What replays: {live['replays']}; every outside request is in the journal (`http-request`, `api-op` events).", "",
             f"- Listeners: {', '.join(live['urls']) or 'none'}",
             f"- Outside requests: {live['outside_requests']}; front: {live['front']}",
             f"- Virtual time behind the wall clock at worst: {live['pacer'].get('max_lag_s', 0):.3f} s"]
    operator = live["operator"]
    if operator["command"]:
        lines.append(f"- Operator `{operator['command']}`: {len(operator['runs'])} run(s): " + "; ".join(f"pid {run['pid']} from {run['started_at']:.1f} s, exit {run.get('exit_code')}" for run in operator["runs"]))
    return "\n".join(lines) + "\n"


async def _signals(host: LiveHost) -> None:
    """First SIGINT/SIGTERM: stop the fault phase (heal, recover, check); second: abort."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if host.stopping.is_set():
                raise KeyboardInterrupt
            host.request_stop()

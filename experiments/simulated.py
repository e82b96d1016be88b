"""One simulated run: a system in a World, driven through the phases (phases.py), judged by
its checkers, written as a run directory (result.py).

The host sleeps on the World's virtual clock, journals through ``World.record`` and injects
the fault phase with one :class:`~chaoskube.faults.FaultInjector`: the experiment's
schedule plus its random nemesis, drawn from the World's seeded generator when the fault
phase starts. The same (experiment, boot seed, seed, code) gives a byte-identical journal.

Boot seed and run seed (docs/campaigns.md). The World starts on the boot seed; when the
steady state has been probed before the faults (``phases``: ``booted``), the host waits
for a quiescent point and switches there to the run seed (``World.reseed``). A campaign
passes a ``fork`` hook, called at that point: it forks the booted process once per seed
(``forking.py``) and returns in each child with the child's seed and run directory in
the :class:`RunTarget`; the journal and ``run.log`` then continue in that directory, so
a forked run writes byte for byte what an unforked run of the same seeds writes.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import orjson

from chaoskube import __version__, gallery
from chaoskube.checkers.replay import shared_decoding
from chaoskube.checkers.verdict import Verdict, run_checker, worst
from chaoskube.experiments.model import Experiment, Phases, experiment_dir
from chaoskube.experiments.phases import PhaseRecord, drive_phases, planned_end_s
from chaoskube.experiments.probes import ProbeRunner, checker_name, judge_hypothesis_before, judge_probe
from chaoskube.experiments.reports import write_result
from chaoskube.experiments.signals import die_with_parent, stopping_now
from chaoskube.experiments.result import Progress, RunResult, close_run_log, open_run_log
from chaoskube.experiments.systems.base import System
from chaoskube.faults import FaultInjector, ScheduledFault
from chaoskube.faults.kinds import idle_skip
from chaoskube.sim import Journal, Livelock, Watchdog, World
from chaoskube.sim.determinism import isolate_forked_run

#: The (shortest, longest) wait between two steady-state probes, in virtual seconds.
STEADY_STATE_POLL_S = (0.1, 1.0)
#: How often the progress callback is called, in wall seconds.
PROGRESS_EVERY_S = 0.25


@dataclass
class RunTarget:
    """What the run after the boot is: its seed and its directory. A fork hook changes
    both in each child it makes. ``started`` (``time.perf_counter``) and ``cpu_started``
    (``time.process_time``) are when this run's own work began: the boot's start, or the
    fork."""

    seed: int
    out: Path
    started: float = 0.0
    cpu_started: float = 0.0
    forked: bool = False
    #: Set by a fork hook in a child that runs a mutant of the booted experiment (a guided
    #: campaign: campaign.BootGroup.prepare): the experiment the run goes on with. Only its
    #: faults (``schedule``, ``nemesis``) and ``faults_file`` may differ from the booted one.
    experiment: Experiment | None = None


#: ``fork(world, target)``: called at the boot's quiescent point. Returns in the process
#: that goes on with the run (a child: ``target`` changed, ``forked`` set); never returns
#: in a process that only boots and forks.
Fork = Callable[[World, RunTarget], None]


class _RunLog:
    """The run's ``run.log`` sink; moved with the run when a child takes over."""

    def __init__(self, out: Path) -> None:
        self.path = out / "run.log"
        self.sink: int | None = open_run_log(self.path)

    def close(self) -> None:
        if self.sink is not None:
            close_run_log(self.sink)
            self.sink = None

    def reopen(self, out: Path) -> None:
        """Go on in ``out/run.log``, which starts with what was logged so far."""
        assert self.sink is None
        path = out / "run.log"
        if path.resolve() != self.path.resolve():
            shutil.copyfile(self.path, path)
        self.path = path
        self.sink = open_run_log(path)


class SimulatedHost:
    """The phase host of a simulated run (phases.PhaseHost)."""

    def __init__(
        self, world: World, experiment: Experiment, system: System, progress: Progress | None, target: RunTarget | None = None, fork: Fork | None = None, run_log: _RunLog | None = None,
        reference: _ReferenceFork | None = None,
    ) -> None:
        self.world = world
        self.experiment = experiment
        self.system = system
        self.progress = progress
        self.target = target if target is not None else RunTarget(world.seed, Path("."))
        self.fork = fork
        self.run_log = run_log
        self.reference = reference
        self.injector: FaultInjector | None = None
        self.probes: ProbeRunner | None = None  # the experiment's probes (probes.py), if any
        self.healed = False
        phases = experiment.phases
        self.planned_s = phases.warmup_s + phases.faults_s + phases.settle_s + 2.0

    @property
    def now(self) -> float:
        return self.world.now

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        self.world.record(type, **fields)

    async def sleep(self, seconds: float) -> None:
        await self.world.sleep(seconds)

    async def start(self) -> None:
        await self.system.start()
        if self.experiment.probes or self.experiment.steady_state is not None:
            self.probes = self.system.open_probes(self.experiment.probes, self.experiment.steady_state)

    async def steady_state(self) -> Verdict:
        verdict = await self.system.steady_state()
        if self.healed and self.probes is not None and self.probes.steady is not None:
            return worst([verdict, await self.probes.hypothesis()])  # recovery: the hypothesis too
        return verdict

    async def prepare_workload(self) -> None:
        await self.system.prepare_workload()

    async def booted(self) -> Phases | None:
        """The boot is over: at the next quiescent point, fork (a campaign's hook), fork
        the differential checker's reference (:class:`_ReferenceFork`) and switch to the
        run seed. Every way does the same things in the same order, so a forked run and an
        unforked one write the same journal. Returns the reference's phases in the
        reference's copy (phases.PhaseHost)."""
        began_with = self.experiment.phases

        def switch() -> None:
            run_log = self.run_log
            if run_log is not None:
                run_log.close()  # flushed: a child copies it whole
            self.world.journal.flush()  # likewise; a child must not flush the boot's buffer again
            if self.fork is not None:
                self.fork(self.world, self.target)
            if self.target.experiment is not None:
                self.experiment = self.target.experiment
            if self.reference is not None and self.reference.fork(self):
                pass  # the reference's copy: it journals into the reference's cache (fork)
            else:
                if self.target.forked:
                    self.world.journal.redirect(self.target.out / "journal.jsonl")
                    self.world.restart_wall_clock()  # --max-wall counts this run's own time, not the shared boot's
                if run_log is not None:
                    run_log.reopen(self.target.out)
            # The young generation's count restarts here in every copy (a forking parent
            # allocates between forks), so collections fall at the same allocations.
            gc.freeze()
            self.world.reseed(self.target.seed)
            buggify = self.experiment.buggify
            if buggify is not None and buggify.enabled:  # after the shared boot, from the run seed
                self.world.buggify.start(self.world, buggify)

        await self.world.wait_quiescent(switch)
        return self.experiment.phases if self.experiment.phases != began_with else None

    async def start_workload(self) -> None:
        await self.system.start_workload()
        generator = self.experiment.generator
        if generator is not None:  # from the warm-up to the heal (chaoskube/workload/generator.py)
            phases = self.experiment.phases
            self.system.start_generator(generator, phases.warmup_s + phases.faults_s)
        if self.probes is not None:
            self.probes.start_polling("Continuous")

    async def start_faults(self) -> None:
        if self.probes is not None:  # SOT probes and the hypothesis, before the first fault
            await self.probes.at_fault_phase()
            self.probes.start_polling("OnChaos")
        self.injector = FaultInjector(self.world, self.system.context)
        schedule = [entry.scheduled() for entry in self.experiment.schedule] + self._nemesis_schedule()
        self.injector.schedule(schedule, origin_s=self.world.now)

    async def heal_all(self) -> None:
        assert self.injector is not None, "heal before the fault phase"
        if self.experiment.generator is not None:
            self.system.stop_generator()  # the heal ends the generator too; it then uncordons and untaints
        self.injector.heal_all()
        self.healed = True
        if self.probes is not None:
            self.probes.stop_polling("OnChaos")

    async def stop_workload(self) -> None:
        if self.probes is not None:  # EOT probes, then the Continuous ones stop
            await self.probes.at_end()
            self.probes.stop_polling("Continuous")
        await self.system.stop_workload()

    def awaiting_convergence(self) -> bool:
        """The run lists ``convergence`` and its system, judging the journal so far, finds
        the store unconverged (phases.PhaseHost; reads only)."""
        return "convergence" in self.experiment.checkers and self.system.converged_now() is False

    def _nemesis_schedule(self) -> list[ScheduledFault]:
        """The experiment's random nemesis, drawn now from the world's seeded generator
        (``swizzle`` clogs the system's ``node`` processes, else all of them)."""
        spec = self.experiment.nemesis
        if spec is None:
            return []
        processes = self.system.context().processes
        nodes = sorted(p.name for p in processes if p.role == "node") or sorted(p.name for p in processes)
        drawn = spec.draw(self.world.random(spec.random_name), nodes)
        entries = drawn.entries
        swarm = {"swarm": drawn.to_json()} if spec.swarm else {}  # which kinds and packages this seed uses
        self.world.record("nemesis", faults=[{"at_s": e.at_s, "kind": e.kind, "target": e.target, "duration_s": e.duration_s, "params": dict(sorted(e.params.items()))} for e in entries], **swarm)
        return entries



class _ProgressReporter:
    """Calls ``progress(now, planned)`` about every :data:`PROGRESS_EVERY_S` of wall time
    from a thread of its own, reading the World's clock. Never a task of the World: a task
    that sleeps on the virtual clock takes part in the run's schedule, and a run with a
    progress bar (a terminal) then journaled differently from one without (CI, explore)."""

    def __init__(self, world: World, planned_s: float, progress: Progress) -> None:
        self.world = world
        self.planned_s = planned_s
        self.progress = progress
        self._stop = threading.Event()
        #: Held while it reports, and by a fork of the run (_ReferenceFork): no copy of the
        #: process starts with a lock (a terminal's, the logger's) that this thread held.
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="chaoskube-progress", daemon=True)
        self._thread.start()

    def replan(self, planned_s: float) -> None:
        """The planned end, made again at a phase boundary (phases.planned_end_s)."""
        self.planned_s = planned_s

    def _report(self) -> None:
        now = self.world.now
        self.progress(now, max(self.planned_s, now))  # never "45.0 of 39.0 s planned"

    def _loop(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY_S):
            with self.lock:
                self._report()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._report()


def judge_run(experiment: Experiment, system: System, record: PhaseRecord, world: World) -> dict[str, Verdict]:
    """The verdict of every checker the experiment names: the system's, and its probes
    (``probe:NAME``, judged from the journal); the steady state joins the hypothesis's
    check before the faults (probes.py). Simulated and live runs alike."""
    steady = record.steady_state_verdict(experiment.phases.recovery_s)
    if experiment.steady_state is not None:  # the hypothesis held before the faults too
        steady = worst([run_checker(judge_hypothesis_before, experiment.steady_state, world.journal.events), steady])  # the earlier failure first
    system.steady_state_verdict = steady
    probes = {checker_name(probe): probe for probe in experiment.probes}
    verdicts: dict[str, Verdict] = {}
    for name in experiment.checkers:
        if name in probes:
            verdicts[name] = run_checker(judge_probe, probes[name], world.journal.events)
        else:
            verdicts[name] = run_checker(system.check, name)
    return verdicts


# -- the differential checker's reference run ----------------------------------------------
#: Bumped when what a reference end state holds changes (cached states of an older format
#: are recomputed).
REFERENCE_FORMAT = 4  # 3: booted with the boot seed, run with the run seed; 4: Job controller-uid labels dropped
#: How long a reference run's fault phase lasts after its last workload step (without
#: faults the rest of that phase is idle time; the recovery phase then ends as soon as the
#: steady state holds, and the settle phase follows as in the run).
REFERENCE_AFTER_LAST_STEP_S = 30.0


def fault_free(experiment: Experiment) -> Experiment:
    """``experiment`` without its faults (schedule, random nemesis and BUGGIFY) and checkers: the
    differential checker's reference, the same workload actions at the same times. Its
    fault phase, idle without faults, is cut to :data:`REFERENCE_AFTER_LAST_STEP_S` after
    the last workload step (steps start ``after_s`` after the workload converged, the
    fault phase ``warmup_s`` after it)."""
    phases = experiment.phases
    steps = experiment.workload.get("steps") or [] if isinstance(experiment.workload, dict) else []
    last = max((float(step.get("after_s", 0.0)) for step in steps if isinstance(step, dict)), default=0.0)
    faults_s = min(phases.faults_s, max(0.0, last - phases.warmup_s) + REFERENCE_AFTER_LAST_STEP_S)
    if experiment.generator is not None:  # it acts until the heal: the same plan needs the same phase
        faults_s = phases.faults_s
    return msgspec.structs.replace(
        experiment, schedule=[], nemesis=None, checkers=[], phases=msgspec.structs.replace(phases, faults_s=faults_s), buggify=None,
    )


def reference_key(experiment: Experiment, seed: int, boot_seed: int = 0) -> str:
    """What identifies a reference run: the fault-free experiment's cluster, workload,
    phases and gallery variants, the boot seed and run seed and the code version (not its
    name: experiments that differ only in their faults share one)."""
    reference = fault_free(experiment)
    payload = {
        "cluster": reference.cluster, "workload": reference.workload, "phases": msgspec.to_builtins(reference.phases),
        "broken": sorted(reference.broken), "system": reference.system, "path": reference.path if reference.path and "/catalog/" not in reference.path else "",
        "seed": seed, "boot_seed": boot_seed, "version": __version__, "format": REFERENCE_FORMAT,
    }
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


@dataclass(frozen=True)
class ReferenceRun:
    """The normalized end state of a fault-free run (chaoskube.checkers.differential)."""

    state: dict[str, Any]
    journal_sha256: str
    key: str
    cached: bool
    forked: bool = False  # computed by a copy of the run forked from its boot (_ReferenceFork)


def reference_run(experiment: Experiment, system_class: type[System], seed: int, cache_dir: Path, *, boot_seed: int | None = None) -> ReferenceRun:
    """The fault-free run of ``experiment`` with run seed ``seed`` (booted, as the run, with
    ``boot_seed``: default the experiment's): read from ``cache_dir`` when a run with the
    same :func:`reference_key` left it there (a campaign shares one directory among its
    runs, and a run forks its reference from its own boot: :class:`_ReferenceFork`), else
    run now, whole (its journal in ``cache_dir/<key>/journal.jsonl``), and cached.
    Gallery variants are the caller's to apply, as for the run itself."""
    boot_seed = experiment.boot_seed if boot_seed is None else boot_seed
    key = reference_key(experiment, seed, boot_seed)
    cached = _read_reference(cache_dir / f"{key}.json", key)
    if cached is not None:
        return cached
    reference = fault_free(experiment)
    cluster, workload = system_class.options(reference.cluster, reference.workload, base_dir=experiment_dir(experiment))
    (cache_dir / key).mkdir(parents=True, exist_ok=True)
    world = World(boot_seed, journal=Journal(cache_dir / key / "journal.jsonl"))
    target = RunTarget(seed, cache_dir / key)

    async def main(world: World) -> None:
        system = system_class(world, cluster, workload)
        system.recovery_s = reference.phases.recovery_s
        await drive_phases(SimulatedHost(world, reference, system, None, target), reference.phases, PhaseRecord(), poll_s=STEADY_STATE_POLL_S)

    world.run(main)
    return _write_reference(cache_dir / f"{key}.json", key, reference, seed, boot_seed, world)


def _read_reference(path: Path, key: str, *, forked: bool = False) -> ReferenceRun | None:
    """The reference cached at ``path``, if a run finished writing it there (``forked``:
    by this run's own copy, :class:`_ReferenceFork`)."""
    try:
        data = orjson.loads(path.read_bytes())
        return ReferenceRun(data["end_state"], data["journal_sha256"], key, cached=not forked, forked=forked)
    except (OSError, orjson.JSONDecodeError, KeyError):
        return None  # not there, or written by a run that died half-way: run it again


def _write_reference(path: Path, key: str, reference: Experiment, seed: int, boot_seed: int, world: World) -> ReferenceRun:
    """Cache the end state of the reference run ``world`` has just run."""
    from chaoskube.checkers.differential import end_state

    state = end_state(world.journal.events)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(orjson.dumps({"experiment": reference.name, "seed": seed, "boot_seed": boot_seed, "journal_sha256": world.fingerprint, "end_state": state}, option=orjson.OPT_SORT_KEYS))
    temporary.replace(path)  # atomic: a campaign's workers may race for one key
    return ReferenceRun(state, world.fingerprint, key, False)


def _threads() -> int:
    """How many threads this process has: the kernel's count, which sees threads that
    ``threading`` does not (started with ``_thread``, as execnet's in a pytest-xdist
    worker)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


class _ReferenceFork:
    """The differential checker's reference, forked from the run's own boot.

    A reference run (:func:`reference_run`) boots exactly as the run does: the same
    cluster, workload and boot seed. It draws nothing from the faults, BUGGIFY or the
    checkers before the boot ends, so a third of a seed's work was a second copy of the boot.
    Instead, at the boot's quiescent point (``SimulatedHost.booted``: after a campaign's
    fork, before the switch to the run seed) the run forks once more. The copy goes on as
    :func:`fault_free`'s experiment (the reference's phases, no faults, no BUGGIFY), its
    journal continued in the reference's cache directory. At the end it writes the
    cache entry (:func:`_write_reference`) and exits. The run reads that entry when its
    checkers need it (:meth:`result`), and falls back to :func:`reference_run` if the copy
    died without writing it.

    The copy's journal is byte for byte the one :func:`reference_run` writes
    (tests/experiments/test_reference_fork.py). A process with threads other than the
    progress reporter (which :attr:`lock` pauses) is not forked: a copy could start with
    a lock that another thread held. There, and when the entry is already cached, the
    reference is computed or read afterwards, as before."""

    def __init__(self, cache: Path | None, boot_seed: int, lock: threading.Lock | None = None) -> None:
        self.cache = cache  # None: the run directory's reference/
        self.boot_seed = boot_seed
        self.lock = lock
        self.pid: int | None = None
        self.path: Path | None = None
        self.key = ""
        self.reference: Experiment | None = None  # set in the copy
        self.seed = 0

    def fork(self, host: SimulatedHost) -> bool:
        """Fork the reference of ``host``'s run, unless it is cached or the process has
        other threads. True in the copy, which then runs the reference."""
        target = host.target
        cache = self.directory(target)
        self.key = reference_key(host.experiment, target.seed, self.boot_seed)
        self.path = cache / f"{self.key}.json"
        if self.path.exists() or _threads() > 1 + (self.lock is not None):
            return False
        (cache / self.key).mkdir(parents=True, exist_ok=True)
        parent = os.getpid()
        if self.lock is not None:
            with self.lock:
                pid = os.fork()
        else:
            pid = os.fork()
        if pid != 0:
            self.pid = pid
            return False
        with contextlib.suppress(OSError):
            die_with_parent()  # a SIGKILLed run takes its copy along
        if os.getppid() != parent:  # it died before that
            os._exit(1)
        isolate_forked_run()
        self.reference, self.seed = fault_free(host.experiment), target.seed
        host.experiment = self.reference
        host.progress, host.run_log = None, None
        host.world.journal.redirect(cache / self.key / "journal.jsonl")
        host.world.restart_wall_clock()
        return True

    def directory(self, target: RunTarget) -> Path:
        """Where the reference of ``target``'s run is cached: the campaign's shared
        directory, else the run directory's ``reference/``."""
        return self.cache if self.cache is not None else target.out / "reference"

    @property
    def in_copy(self) -> bool:
        return self.reference is not None

    def finish(self, world: World, completed: bool) -> None:
        """In the copy, once its run ended (``completed``: not by an error, an interrupt
        or the watchdog): write the cache entry and exit, whatever happens."""
        assert self.reference is not None and self.path is not None
        code = 1
        try:
            if completed:
                _write_reference(self.path, self.key, self.reference, self.seed, self.boot_seed, world)
                world.journal.close()
                code = 0
        finally:
            os._exit(code)

    def result(self) -> ReferenceRun | None:
        """In the run: the reference its copy computed, once it has; None if none was
        forked or it died without writing one."""
        if self.pid is None:
            return None
        self._reap()
        assert self.path is not None
        return _read_reference(self.path, self.key, forked=True)

    def abandon(self) -> None:
        """In the run, when its checkers will not run: stop the copy."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> None:
        assert self.pid is not None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.pid = None


def run_simulated(
    experiment: Experiment,
    system_class: type[System],
    seed: int,
    out_dir: str | Path,
    progress: Progress | None = None,
    *,
    boot_seed: int | None = None,
    fork: Fork | None = None,
    reference_cache: str | Path | None = None,
    max_wall_s: float | None = None,
    watchdog: Watchdog | None = None,
) -> RunResult:
    """Run ``experiment`` on ``system_class`` into ``out_dir``: the boot with ``boot_seed``
    (default: the experiment's), the rest with ``seed``. Gallery variants are the
    caller's to apply (runner.run_experiment). With ``fork`` (a campaign's booter), the
    booted process is forked once per seed and this returns in each child, with that
    child's result (module doc). With the ``differential`` checker, its fault-free
    reference comes from ``reference_cache`` (a campaign's shared directory), else the
    run directory's ``reference/``.

    A run the World's livelock watchdog ends (chaoskube.sim.world: virtual time stood
    still through a million events, the journal passed its budget, or ``max_wall_s`` of
    wall-clock time went by -- counted from the fork in a forked run) answers one
    verdict, ``livelock``: False, with where it stuck; the other checkers do not run
    (their history stops mid-run); the journal is kept. ``watchdog`` replaces the
    default bounds (tests use a smaller one)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    boot_seed = experiment.boot_seed if boot_seed is None else boot_seed
    cluster, workload = system_class.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    phases = experiment.phases
    world = World(boot_seed, journal=Journal(out / "journal.jsonl"), watchdog=watchdog or Watchdog(max_wall_s=max_wall_s))
    record = PhaseRecord()
    hosts: list[SimulatedHost] = []
    target = RunTarget(seed, out, time.perf_counter(), time.process_time())
    run_log = _RunLog(out)
    reporter = _ProgressReporter(world, planned_end_s(phases, "setup", 0.0), progress) if progress is not None else None
    cache = Path(reference_cache) if reference_cache is not None else None
    reference = _ReferenceFork(cache, boot_seed, reporter.lock if reporter is not None else None) if "differential" in experiment.checkers else None

    async def main(world: World) -> None:
        system = system_class(world, cluster, workload)
        system.recovery_s = phases.recovery_s  # the liveness deadline after heal (convergence)
        host = SimulatedHost(world, experiment, system, progress, target, fork, run_log, reference)
        hosts.append(host)
        await drive_phases(host, phases, record, poll_s=STEADY_STATE_POLL_S, plan=reporter.replan if reporter is not None else None)

    interrupted = False
    livelock: Livelock | None = None
    completed = False
    try:
        world.run(main)
        completed = True
    except KeyboardInterrupt:
        interrupted = True
        stopping_now()
    except Livelock as error:
        livelock = error
    finally:
        if reference is not None and reference.in_copy:  # the reference's copy: never returns
            reference.finish(world, completed)
        if reporter is not None:
            reporter.stop()
        run_log.close()
    wall = time.perf_counter() - target.started
    broken_calls = gallery.calls(experiment.broken)  # the run's own, before a reference run computed here adds to them
    if target.experiment is not None:  # a mutant forked from this boot (RunTarget.experiment)
        experiment = target.experiment
    host = hosts[0] if hosts else None
    system = host.system if host is not None else None
    injector = host.injector if host is not None else None
    verdicts: dict[str, Verdict] = {}
    if livelock is not None:
        verdicts["livelock"] = Verdict(False, f"livelock: {livelock.reason}", (livelock.where,), {"where": livelock.where})
        system = None  # its checkers would judge half a run
    if system is not None and not interrupted and reference is not None:
        system.reference = reference.result() or reference_run(experiment, system_class, target.seed, reference.directory(target), boot_seed=boot_seed)
    elif reference is not None:
        reference.abandon()
    with shared_decoding():  # the checkers and the reports replay one journal: decode it once
        if system is not None and not interrupted:
            verdicts = judge_run(experiment, system, record, world)
        result = RunResult(
            experiment=experiment,
            seed=target.seed,
            out_dir=target.out,
            verdicts=verdicts,
            journal_sha256=world.fingerprint,
            simulated_seconds=world.now,
            wall_seconds=wall,
            metrics=(system.metrics() if system is not None else {}) | record.metrics() | ({"events_run": world.events_run} if livelock is not None else {})
            | ({"broken_calls": broken_calls} if experiment.broken else {}),
            phases=record.phases,
            faults=[{"id": f.id, "applied_at": f.applied_at, "healed_at": f.healed_at, **f.plan.to_json()} for f in injector.faults] if injector else [],
            skipped_faults=[skip for skip in injector.skipped if not idle_skip(skip)] if injector else [],  # Jepsen's specs may select nobody (faults/kinds.py)
            interrupted=interrupted,
            boot_seed=boot_seed,
            skipped_unsupported=list(getattr(system, "skipped", []) or []),
        )
        write_result(result, world.journal.events)
    return result

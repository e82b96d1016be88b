"""Run one experiment against real processes, in real time, and compare with the simulation.

``run_real_experiment`` is what ``runner.run_experiment`` dispatches to for a system with
``real_time = True`` (``real-etcd``). The phases are the simulated runner's, driven by the
same ``phases.drive_phases`` on a :class:`RealHost`: set up -> steady state (before) ->
warm-up -> bounded faults -> heal -> wait for the steady state (recovery deadline) -> settle
-> stop the workload -> checkers, each journaled as a ``phase`` event in ``journal.jsonl``
(the same ``Journal`` class; ``t`` = real seconds since the run started).

Faults are planned with ``chaoskube.faults.plan`` from a generator seeded with the run's
seed (targets like ``leader:etcd`` resolve against the latest status polls) and applied with
``real/cluster.py``. Every etcd process and the Toxiproxy-compatible server live inside one
``trio.run``; a ``finally`` under a shielded cancel scope SIGKILLs and reaps every member and
closes every listener, on every exit path (Ctrl-C included).

Then, unless ``cluster.compare_with_simulation`` is off, the same experiment runs on the
simulated ``etcd`` system (same members, timers, workload, schedule and seed) through the
simulated runner into ``out_dir/simulated/``, and ``result.json`` gets a ``comparison``: for
both, the time to a new leader after the first fault, the time to the first acknowledged
write after it, failed and unknown operation counts, and the verdicts.

Non-guarantees: a real run is not reproducible — the seed fixes the workload's choices and
the fault planning, not the timing of real processes; its journal fingerprint identifies
the journal, nothing more.
"""

from __future__ import annotations

import functools
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import orjson
import trio

from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.experiments.model import Experiment, ExperimentError
from chaoskube.experiments.phases import PhaseRecord, drive_phases, planned_end_s
from chaoskube.experiments.real import cluster as real_cluster
from chaoskube.experiments.real.cluster import REAL_KINDS, RealFault
from chaoskube.experiments.real.workdir import open_workdir
from chaoskube.experiments.real.etcd import (
    KEY_PREFIX,
    GatewayClient,
    LeaderPoller,
    RealEtcdCluster,
    RealEtcdSystem,
    Recorder,
    b64,
    first_fault_figures,
    operation_counts,
    run_client,
    run_watcher,
)
from chaoskube.experiments.reports import render_markdown, write_reports
from chaoskube.experiments.signals import stopping_now
from chaoskube.experiments.result import Progress, RunResult, write_atomic
from chaoskube.experiments.simulated import run_simulated
from chaoskube.experiments.systems.etcd import EtcdSystem, EtcdWorkload
from chaoskube.faults import PARTITIONS, Context, FaultError, ProcessInfo, ScheduledFault
from chaoskube.faults import plan as plan_fault
from chaoskube.faults.toxiproxy import serve as serve_toxiproxy
from chaoskube.faults.toxiproxy.proxy import parse_address
from chaoskube.sim import Journal
from chaoskube.sim.randomness import derive_seed

#: The (shortest, longest) wait between two steady-state probes, in real seconds.
STEADY_STATE_POLL_S = (0.05, 0.2)

# The simulated system's checker that stands for a real one in the comparison.
SIMULATED_CHECKER = {"leader-election": "raft-safety"}


@dataclass
class RealRunResult(RunResult):
    mode = "real"

    comparison: dict[str, Any] = field(default_factory=dict)
    processes: dict[str, Any] = field(default_factory=dict)  # pids and ports used (for hygiene checks)

    def to_json(self) -> dict[str, Any]:
        payload = super().to_json()
        payload["mode"] = "real-time"
        payload["real_seconds"] = payload.pop("simulated_seconds")
        payload["comparison"] = self.comparison
        payload["processes"] = self.processes
        return payload


def run_real_experiment(experiment: Experiment, seed: int, out_dir: str | Path, progress: Progress | None = None) -> RealRunResult:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cluster_options, workload = RealEtcdSystem.options(experiment.cluster, experiment.workload)
    unsupported = sorted({entry.kind for entry in experiment.schedule} - REAL_KINDS)
    if unsupported:
        raise ExperimentError(f"{experiment.path or experiment.name}: fault kinds {', '.join(unsupported)} cannot be applied to real processes (supported: {', '.join(sorted(REAL_KINDS))})")
    triggered = [index for index, entry in enumerate(experiment.schedule) if entry.when is not None]
    if triggered:  # a real cluster writes no chaoskube journal events to match
        raise ExperimentError(f"{experiment.path or experiment.name}: field `schedule[{triggered[0]}].when`: event triggers need a simulated run (they match chaoskube's journal events); give the fault an `at_s` instead")
    external = experiment.cluster.get("toxiproxy")
    partitions = sorted({entry.kind for entry in experiment.schedule} & PARTITIONS)
    if external and partitions:
        raise ExperimentError(
            f"{experiment.path or experiment.name}: field `cluster.toxiproxy`: {', '.join(partitions)} need chaoskube's "
            "chaoskube_block_from toxic (etcd peers dial both ways), which a real Toxiproxy does not have; "
            "drop the address to use chaoskube's own server"
        )
    journal = Journal(out / "journal.jsonl")
    record = PhaseRecord()
    state: dict[str, Any] = {"record": record, "processes": {}}
    started = time.perf_counter()
    interrupted = False
    error: BaseException | None = None
    try:
        with open_workdir() as workdir:  # removed however the run ends (real/workdir.py)
            trio.run(functools.partial(_main, experiment, seed, cluster_options, workload, journal, workdir, state, progress))
    except BaseException as caught:  # noqa: BLE001 - Trio wraps Ctrl-C in exception groups
        if _holds(caught, KeyboardInterrupt):
            interrupted = True
            stopping_now()
        elif isinstance(caught, Exception):  # a broken run still leaves a result
            error = caught
        else:
            raise
    finally:
        journal.close()
    wall = time.perf_counter() - started
    system = RealEtcdSystem(journal.events, cluster_options, workload)
    verdicts: dict[str, Verdict] = {}
    if not interrupted:
        system.steady_state_verdict = record.steady_state_verdict(experiment.phases.recovery_s) if error is None else Verdict(None, f"the run broke: {type(error).__name__}: {error}")
        for name in experiment.checkers:
            verdicts[name] = run_checker(system.check, name) if error is None else Verdict(None, f"the run broke: {type(error).__name__}: {error}")
    metrics = system.metrics() | record.metrics()
    faults: list[RealFault] = state["host"].faults if "host" in state else []
    if error is not None:
        metrics["error"] = f"{type(error).__name__}: {error}"
    result = RealRunResult(
        experiment=experiment,
        seed=seed,
        out_dir=out,
        verdicts=verdicts,
        journal_sha256=journal.sha256,
        simulated_seconds=state.get("elapsed_s", 0.0),
        wall_seconds=wall,
        metrics=metrics,
        phases=record.phases,
        faults=[{"id": f.id, "applied_at": f.applied_at, "healed_at": f.healed_at, **f.plan.to_json()} for f in faults],
        skipped_faults=list(state["host"].skipped) if "host" in state else [],
        interrupted=interrupted,
        processes=state["processes"],
    )
    if cluster_options.compare_with_simulation and not interrupted:
        result.comparison = compare_with_simulation(experiment, seed, out / "simulated", result)
    write_real_result(result)
    write_reports(result)
    return result


def _holds(error: BaseException, kind: type[BaseException]) -> bool:
    if isinstance(error, kind):
        return True
    return isinstance(error, BaseExceptionGroup) and error.subgroup(kind) is not None


class RealHost:
    """The phase host of a real run (phases.PhaseHost): the real clock, the journal through a
    :class:`Recorder`, the workload's clients and watchers as tasks of the run's nursery, and
    faults planned with ``chaoskube.faults.plan`` and applied to the real cluster."""

    def __init__(self, nursery: trio.Nursery, experiment: Experiment, seed: int, options: RealEtcdCluster, workload: EtcdWorkload, recorder: Recorder, cluster: real_cluster.RealEtcdCluster, http: Any, progress: Progress | None) -> None:
        self.nursery = nursery
        self.experiment = experiment
        self.seed = seed
        self.options = options
        self.workload = workload
        self.recorder = recorder
        self.cluster = cluster
        self.http = http
        self.progress = progress
        self.poller = LeaderPoller(http, cluster.client_urls, recorder, cluster.name_of_id)
        self.faults: list[RealFault] = []
        self.skipped: list[str] = []  # scheduled faults not applied, and why (the run is then inconclusive)
        self.running = False
        self.workers = trio.CancelScope()
        self.injector = trio.CancelScope()
        phases = experiment.phases
        self.planned_s = planned_end_s(phases, "setup", 0.0)

    def replan(self, planned_s: float) -> None:
        """The planned end, made again at a phase boundary (phases.planned_end_s)."""
        self.planned_s = planned_s

    @property
    def now(self) -> float:
        return self.recorder.now

    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        self.recorder.record(type, **fields)

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    async def start(self) -> None:
        options, cluster = self.options, self.cluster
        await cluster.start()
        self.record("cluster", event="started", binary=cluster.binary, heartbeat_ms=options.heartbeat_ms, election_ms=options.election_ms, pre_vote=options.pre_vote, members={name: {"client": m.client_port, "peer": m.peer_port, "proxy": m.proxy_port} for name, m in cluster.members.items()})
        self.nursery.start_soon(self.poller.run)
        self.nursery.start_soon(_flush_every, self.recorder.journal, 0.5)
        if self.progress is not None:
            self.nursery.start_soon(_report_progress, self.recorder, self.progress, self)

    async def steady_state(self) -> Verdict:
        return await steady_state(self.http, self.cluster, self.poller, self.workload.timeout_s)

    async def prepare_workload(self) -> None:
        """The real etcd workload needs nothing before it starts (phases.PhaseHost)."""

    async def booted(self) -> None:
        """Real processes have no boot seed to switch from (phases.PhaseHost)."""

    def awaiting_convergence(self) -> bool:
        """A real etcd run has no ``convergence`` checker (phases.PhaseHost)."""
        return False

    async def start_workload(self) -> None:
        self.running = True
        await self.nursery.start(self._run_workload)

    async def _run_workload(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        workload, cluster, seed = self.workload, self.cluster, self.seed
        with self.workers:
            async with trio.open_nursery() as workers:
                for index in range(1, workload.clients + 1):
                    rng = random.Random(derive_seed(seed, f"client-{index}"))
                    client = GatewayClient(self.http, cluster.client_urls, self.recorder, f"client-{index}", timeout_s=workload.timeout_s, rng=rng)
                    workers.start_soon(run_client, client, workload, [f"{KEY_PREFIX}{k}" for k in range(workload.keys)], index, rng, lambda: self.running)
                for index in range(1, workload.watchers + 1):
                    workers.start_soon(functools.partial(run_watcher, self.http, cluster.client_urls, self.recorder, f"watcher-{index}"))
                task_status.started()

    async def start_faults(self) -> None:
        await self.nursery.start(self._inject)

    async def _inject(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        rng = random.Random(derive_seed(self.seed, "faults"))
        origin = trio.current_time()
        with self.injector:
            async with trio.open_nursery() as injector:
                for entry in sorted((e.scheduled() for e in self.experiment.schedule), key=lambda e: e.at_s):
                    injector.start_soon(self._fire, entry, origin, rng)
                task_status.started()

    def _context(self) -> Context:
        cluster = self.cluster
        infos = [ProcessInfo(name, "etcd", None) for name in cluster.names]
        return Context(infos, lambda role: self.poller.leader(lambda name: cluster.members[name].running and not cluster.members[name].paused) if role == "etcd" else None)

    async def _fire(self, entry: ScheduledFault, origin: float, rng: random.Random) -> None:
        await trio.sleep_until(origin + entry.at_s)
        fault_id = len(self.faults) + 1
        try:
            plan = plan_fault(entry.kind, entry.target, dict(entry.params), self._context(), rng)
        except FaultError as problem:
            self.record("fault", event="skip", id=fault_id, kind=entry.kind, target=entry.target, note=str(problem))
            self.skipped.append(f"{entry.kind} {entry.target}: {problem}")
            return
        if not plan.targets:
            self.record("fault", event="skip", id=fault_id, **plan.to_json())
            self.skipped.append(f"{entry.kind} {entry.target}: {plan.note}")
            return
        saved = await real_cluster.apply(self.cluster, plan, fault_id)
        active = RealFault(fault_id, plan, saved, round(self.now, 6))
        self.faults.append(active)
        self.record("fault", event="apply", id=fault_id, **plan.to_json())
        if entry.duration_s is not None:
            await trio.sleep(entry.duration_s)
            await self._heal(active)

    async def _heal(self, active: RealFault) -> None:
        if active.healed_at is not None:
            return
        active.healed_at = round(self.now, 6)  # before awaiting: heal once
        await real_cluster.heal(self.cluster, active.plan, active.saved)
        self.record("fault", event="heal", id=active.id, kind=active.plan.kind, targets=list(active.plan.targets))

    async def heal_all(self) -> None:
        self.injector.cancel()  # faults not yet applied never will be
        for active in self.faults:
            await self._heal(active)

    async def stop_workload(self) -> None:
        self.running = False
        await trio.sleep(self.workload.timeout_s * 3 + 0.5)  # operations in flight end (3 attempts)
        self.workers.cancel()
        await self.poller.poll_once()


async def _main(experiment: Experiment, seed: int, options: RealEtcdCluster, workload: EtcdWorkload, journal: Journal, workdir: Path, state: dict[str, Any], progress: Progress | None) -> None:
    import httpx

    recorder = Recorder(journal, trio.current_time())
    recorder.record("world", event="start", seed=seed, mode="real-time")
    async with trio.open_nursery() as nursery:
        if options.toxiproxy:  # a Toxiproxy server given by address (real, or `chaoskube toxiproxy`)
            api = parse_address(options.toxiproxy)
        else:
            api = await nursery.start(functools.partial(serve_toxiproxy, "127.0.0.1", 0, rng=random.Random(derive_seed(seed, "toxiproxy"))))
        cluster = real_cluster.RealEtcdCluster(
            workdir,
            f"http://{api[0]}:{api[1]}",
            members=options.members,
            heartbeat_ms=options.heartbeat_ms,
            election_ms=options.election_ms,
            pre_vote=options.pre_vote,
            token=f"chaoskube-{seed}",
            record=recorder.record,
        )
        state["processes"] = {"ports": cluster.ports() + ([] if options.toxiproxy else [api[1]]), "pids": []}
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=200), timeout=httpx.Timeout(workload.timeout_s))
        host = RealHost(nursery, experiment, seed, options, workload, recorder, cluster, http, progress)
        state["host"] = host
        try:
            await drive_phases(host, experiment.phases, state["record"], poll_s=STEADY_STATE_POLL_S, plan=host.replan)
        finally:
            state["elapsed_s"] = recorder.now
            with trio.CancelScope(shield=True):
                state["processes"]["pids"] = cluster.pids()
                await cluster.aclose()
                await http.aclose()
                recorder.record("cluster", event="stopped", pids=cluster.pids())
            nursery.cancel_scope.cancel()


async def _flush_every(journal: Journal, every_s: float) -> None:
    """Real time passes whatever we do: keep the journal on disk within ``every_s``, so
    an interrupted or killed run keeps what it recorded."""
    while True:
        await trio.sleep(every_s)
        journal.flush()


async def _report_progress(recorder: Recorder, progress: Progress, host: RealHost) -> None:
    """``progress(now, planned)`` every second; ``host.planned_s`` is made again at every
    phase boundary (phases.planned_end_s) and never reads less than ``now``."""
    while True:
        now = recorder.now
        progress(now, max(host.planned_s, now))
        await trio.sleep(1.0)


async def steady_state(http: Any, cluster: real_cluster.RealEtcdCluster, poller: LeaderPoller, timeout_s: float) -> Verdict:
    """A leader exists, and through every member a write and a linearizable read succeed
    within ``timeout_s``."""
    answers = await poller.poll_once()
    leader = poller.leader(lambda name: cluster.members[name].running)
    if leader is None:
        return Verdict(False, "no member leads", tuple(f"{name}: {answer}" for name, answer in sorted(answers.items())))
    problems: list[str] = []

    async def through(member: str, url: str) -> None:
        key = b64(f"probe/{member}")
        for path, body in (("/v3/kv/put", {"key": key, "value": b64("1")}), ("/v3/kv/range", {"key": key})):
            reply = None
            with trio.move_on_after(timeout_s):
                try:
                    reply = await http.post(url + path, json=body)
                except Exception as error:  # noqa: BLE001 - any failure is "not serving"
                    problems.append(f"{member}: {path} {type(error).__name__}")
                    return
            if reply is None or reply.status_code != 200:
                problems.append(f"{member}: {path} {'timed out' if reply is None else reply.text.strip()[:120]}")
                return

    async with trio.open_nursery() as nursery:
        for member, url in cluster.client_urls.items():
            nursery.start_soon(through, member, url)
    if problems:
        return Verdict(False, f"{len(problems)} of {len(cluster.members)} members not serving", tuple(sorted(problems)))
    return Verdict(True, f"{leader} leads; every member serves writes and linearizable reads")


# -- comparison with the simulation -----------------------------------------------------------


def simulated_twin(experiment: Experiment) -> Experiment:
    """The same experiment on the simulated ``etcd`` system: same members, timers,
    workload, phases and schedule; checkers mapped to the simulation's names."""
    real = RealEtcdSystem.options(experiment.cluster, experiment.workload)[0]
    # the settings both systems have; the rest (the proxy, the comparison switch) is real-only
    cluster = {"members": real.members, "heartbeat_ms": real.heartbeat_ms, "election_ms": real.election_ms, "pre_vote": real.pre_vote}
    checkers = [SIMULATED_CHECKER.get(name, name) for name in experiment.checkers]
    return msgspec.structs.replace(experiment, system="etcd", cluster=cluster, checkers=list(dict.fromkeys(checkers)), path="", name=f"{experiment.name}-simulated")


def compare_with_simulation(experiment: Experiment, seed: int, out: Path, real: RunResult) -> dict[str, Any]:
    twin = simulated_twin(experiment)
    simulated = run_simulated(twin, EtcdSystem, seed, out)
    events = simulated_events(simulated)
    sim_counts = operation_counts(events)
    real_counts = {"ok": real.metrics.get("operations_ok", 0), "fail": real.metrics.get("operations_fail", 0), "info": real.metrics.get("operations_info", 0)}

    def side(metrics: dict[str, Any], counts: dict[str, int], verdicts: dict[str, Verdict], recovery: Any, figures: dict[str, Any]) -> dict[str, Any]:
        return {
            "time_to_new_leader_s": figures.get("time_to_new_leader_s"),
            "time_to_write_s": figures.get("time_to_write_s"),
            "recovery_s": recovery,
            "operations_ok": counts["ok"],
            "operations_fail": counts["fail"],
            "operations_info": counts["info"],
            "verdicts": {name: verdict.label for name, verdict in verdicts.items()},
        }

    return {
        "first_fault": real.metrics.get("first_fault"),
        "real": side(real.metrics, real_counts, real.verdicts, real.metrics.get("recovery_s"), real.metrics),
        "simulated": side(simulated.metrics, sim_counts, simulated.verdicts, simulated.metrics.get("recovery_s"), first_fault_figures(events)) | {"out_dir": str(out), "journal_sha256": simulated.journal_sha256, "replay_seed": seed},
        "checker_names": SIMULATED_CHECKER,
    }


def simulated_events(result: RunResult) -> list[dict[str, Any]]:
    from chaoskube.sim.journal import NETWORK_EVENTS, read_journal

    return [event for event in read_journal(result.out_dir / "journal.jsonl") if event["type"] not in NETWORK_EVENTS]


def write_real_result(result: RealRunResult) -> None:
    payload = result.to_json()
    write_atomic(result.out_dir / "result.json", orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    lines = render_markdown(result).splitlines()
    lines = [
        f"- Real time: {result.simulated_seconds:.1f} s of a real 3-member etcd cluster ({result.wall_seconds:.2f} s wall, simulated comparison included); not reproducible to the byte: the seed fixes the workload and the fault plans"
        if line.startswith("- Simulated ")
        else line
        for line in lines
    ]
    comparison = result.comparison
    if comparison:
        real, simulated = comparison["real"], comparison["simulated"]

        def cell(value: Any) -> str:
            return "—" if value is None else (f"{value:.3f} s" if isinstance(value, float) else str(value))

        lines += ["", f"## Real vs simulated (first fault: {comparison.get('first_fault')})", "", "| measure | real etcd | simulated etcd |", "|---|---|---|"]
        for key, label in (("time_to_new_leader_s", "time to a new leader after the first fault"), ("time_to_write_s", "time to the first acknowledged write after it"), ("recovery_s", "steady state back after heal"), ("operations_ok", "operations ok"), ("operations_fail", "operations failed"), ("operations_info", "operations unknown (info)")):
            lines.append(f"| {label} | {cell(real[key])} | {cell(simulated[key])} |")
        for name, label in real["verdicts"].items():
            sim_name = comparison["checker_names"].get(name, name)
            lines.append(f"| verdict: {name}{'' if sim_name == name else f' (sim: {sim_name})'} | {label} | {simulated['verdicts'].get(sim_name, '—')} |")
        lines.append("")
        lines.append(f"Simulated twin: `{simulated['out_dir']}` (journal `{simulated['journal_sha256'][:16]}…`); it is deterministic, so the same `chaoskube run` command (seed {simulated['replay_seed']}) reproduces it byte for byte. Times are measured from the first fault; the real leader time has the 100 ms resolution of the status polls.")
    write_atomic(result.out_dir / "report.md", "\n".join(lines) + "\n")

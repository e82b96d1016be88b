"""Run one experiment with one seed: the phases, the checkers, the result directory.

Phases (TigerBeetle's safety-then-liveness shape, Chaos Toolkit's steady state):
set up -> steady state (before) -> workload warm-up -> bounded fault phase -> heal
everything -> wait for the steady state to return (recovery deadline) -> settle -> stop the
workload -> run the checkers. Every phase boundary is journaled as a ``phase`` event.

A run directory holds ``journal.jsonl`` (written as the run goes: an interrupted run keeps
it), ``run.log`` (human-readable, stamped with virtual time), ``result.json``,
``report.md``, ``report.html`` (self-contained, with a timeline: experiments/report_html.py)
and ``junit.xml`` (one testcase per checker: experiments/junit.py). A real-process run
(experiments/real.py) writes its own result.json and report.md; this module adds the other
two.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from loguru import logger

from chaoskube import __version__, gallery
from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.sim import Journal, World
from experiments.model import Experiment, experiment_dir
from experiments.systems import SYSTEMS
from faults import FaultInjector, ScheduledFault

Progress = Callable[[float, float], None]


@dataclass
class RunResult:
    experiment: Experiment
    seed: int
    out_dir: Path
    verdicts: dict[str, Verdict]
    journal_sha256: str
    simulated_seconds: float
    wall_seconds: float
    metrics: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    skipped_faults: list[str] = field(default_factory=list)  # scheduled but not applied, and why
    interrupted: bool = False

    mode = "simulated"  # RealRunResult: "real"

    @property
    def failing(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is False)

    @property
    def unknown(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is None)

    @property
    def as_expected(self) -> bool:
        """The outcome is the experiment's expected one: the expected checkers fail, no
        other fails (except those that may), and none is unknown."""
        if self.interrupted or self.unknown:
            return False
        expected = self.experiment.expected
        failing = set(self.failing)
        return set(expected.failing) <= failing <= set(expected.failing) | set(expected.may_fail)

    @property
    def replay(self) -> str:
        """The command that runs this again: the catalogue name or the file, with every
        gallery variant the run had passed as ``--broken`` (those the file names already
        are merged, not doubled: ``with_broken``)."""
        catalogue = not self.experiment.path or "/catalog/" in self.experiment.path
        target = self.experiment.name if catalogue else self.experiment.path
        broken = [item for name in self.experiment.broken for item in ("--broken", name)]
        return shlex.join(["chaoskube", "run", target, "--seed", str(self.seed), *broken, "--out", str(self.out_dir)])

    def to_json(self) -> dict[str, Any]:
        experiment = self.experiment
        return {
            "experiment": experiment.name,
            "title": experiment.title,
            "seed": self.seed,
            "chaoskube_version": __version__,
            "verdicts": {name: verdict.to_json() for name, verdict in self.verdicts.items()},
            "expected": {"outcome": experiment.expected.outcome, "failing": sorted(experiment.expected.failing), "may_fail": sorted(experiment.expected.may_fail), "failure_mode": experiment.expected.failure_mode},
            "as_expected": self.as_expected,
            "broken": list(self.experiment.broken),
            "journal_sha256": self.journal_sha256,
            "simulated_seconds": round(self.simulated_seconds, 6),
            "wall_seconds": round(self.wall_seconds, 3),
            "replay": self.replay,
            "phases": self.phases,
            "faults": self.faults,
            "skipped_faults": self.skipped_faults,
            "metrics": self.metrics,
            "interrupted": self.interrupted,
        }


def run_experiment(
    experiment: Experiment,
    seed: int,
    out_dir: str | Path,
    *,
    progress: Progress | None = None,
) -> RunResult:
    """Run ``experiment`` with ``seed`` into ``out_dir``, with its gallery variants
    (``experiment.broken``) patched in for the duration of the run."""
    with gallery.applied(experiment.broken):
        return _run_experiment(experiment, seed, out_dir, progress)


def _run_experiment(experiment: Experiment, seed: int, out_dir: str | Path, progress: Progress | None) -> RunResult:
    if getattr(SYSTEMS[experiment.system], "replays_steps", False):  # a saved Hypothesis example
        from experiments.systems.hypothesis import run_hypothesis_experiment

        return run_hypothesis_experiment(experiment, seed, out_dir, progress=progress)
    if getattr(SYSTEMS[experiment.system], "real_time", False):  # real processes, real clock
        from experiments.real import run_real_experiment

        real = run_real_experiment(experiment, seed, out_dir, progress=progress)
        write_reports(real)
        return real
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    system_class = SYSTEMS[experiment.system]
    cluster, workload = system_class.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    phases = experiment.phases
    world = World(seed, journal=Journal(out / "journal.jsonl"))
    state: dict[str, Any] = {"phases": {}, "system": None, "injector": None}
    planned = phases.warmup_s + phases.faults_s + phases.settle_s + 2.0

    def mark(name: str) -> None:
        state["phases"][name] = round(world.now, 6)
        world.record("phase", name=name)

    async def report_progress() -> None:
        while progress is not None:
            progress(world.now, planned)
            await world.sleep(1.0)

    async def main(world: World) -> None:
        system = system_class(world, cluster, workload)
        system.recovery_s = phases.recovery_s  # the liveness deadline after heal (convergence)
        state["system"] = system
        mark("setup")
        await system.start()
        world.start_soon(report_progress)
        state["before"] = await wait_steady_state(system, phases.setup_s)
        mark("workload")
        await system.start_workload()
        await world.sleep(phases.warmup_s)
        mark("faults")
        injector = FaultInjector(world, system.context)
        state["injector"] = injector
        injector.schedule([entry.scheduled() for entry in experiment.schedule] + nemesis_schedule(world, system), origin_s=world.now)
        await world.sleep(phases.faults_s)
        mark("heal")
        injector.heal_all()
        healed_at = world.now
        after = await wait_steady_state(system, phases.recovery_s)
        state["after"] = after
        state["recovery_s"] = world.now - healed_at
        mark("recovered" if after.valid else "recovery-deadline")
        await world.sleep(phases.settle_s)
        mark("stop-workload")
        await system.stop_workload()
        mark("check")

    def nemesis_schedule(world: World, system: Any) -> list[ScheduledFault]:
        """The experiment's random nemesis, drawn now from the world's seeded generator
        (``swizzle`` clogs the system's ``node`` processes, else all of them)."""
        spec = experiment.nemesis
        if spec is None:
            return []
        processes = system.context().processes
        nodes = sorted(p.name for p in processes if p.role == "node") or sorted(p.name for p in processes)
        entries = spec.schedule(world.random(spec.random_name), nodes)
        world.record("nemesis", faults=[{"at_s": e.at_s, "kind": e.kind, "target": e.target, "duration_s": e.duration_s, "params": dict(sorted(e.params.items()))} for e in entries])
        return entries

    async def wait_steady_state(system: Any, within_s: float) -> Verdict:
        """Probe the steady state until it holds or ``within_s`` has passed."""
        deadline = world.now + within_s
        while True:
            verdict = await system.steady_state()
            if verdict.valid or world.now >= deadline:
                return verdict
            await world.sleep(max(0.1, min(1.0, deadline - world.now)))

    started = time.perf_counter()
    interrupted = False
    sink = open_run_log(out / "run.log")
    try:
        world.run(main)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        close_run_log(sink)
    wall = time.perf_counter() - started
    system = state["system"]
    verdicts: dict[str, Verdict] = {}
    if system is not None and not interrupted:
        system.steady_state_verdict = _steady_state_verdict(state, phases.recovery_s)
        for name in experiment.checkers:
            verdicts[name] = run_checker(system.check, name)
    injector = state["injector"]
    result = RunResult(
        experiment=experiment,
        seed=seed,
        out_dir=out,
        verdicts=verdicts,
        journal_sha256=world.fingerprint,
        simulated_seconds=world.now,
        wall_seconds=wall,
        metrics=(system.metrics() if system is not None else {}) | ({"recovery_s": round(state["recovery_s"], 6)} if "recovery_s" in state else {}),
        phases=state["phases"],
        faults=[{"id": f.id, "applied_at": f.applied_at, "healed_at": f.healed_at, **f.plan.to_json()} for f in injector.faults] if injector else [],
        skipped_faults=list(injector.skipped) if injector else [],
        interrupted=interrupted,
    )
    write_result(result, world.journal.events)
    return result


RUN_LOG_FORMAT = "{extra[vt]:>12.6f}s  {extra[process]:<14} {level:<7} {message}"


def open_run_log(path: Path) -> int:
    """Human-readable log of a run, stamped with virtual time (loguru)."""
    for name in ("chaoskube", "faults"):
        logger.enable(name)
    return logger.add(path, format=RUN_LOG_FORMAT, level="INFO", filter=lambda record: "vt" in record["extra"] and "process" in record["extra"])


def close_run_log(sink: int) -> None:
    logger.remove(sink)
    for name in ("chaoskube", "faults"):
        logger.disable(name)


def _steady_state_verdict(state: dict[str, Any], recovery_s: float) -> Verdict:
    before: Verdict | None = state.get("before")
    after: Verdict | None = state.get("after")
    if before is None or after is None:
        return Verdict(None, "the run ended before the steady state was probed twice")
    if before.valid is not True:
        return Verdict(False, f"steady state did not hold before the faults: {before.reason}", before.evidence)
    if after.valid is not True:
        return Verdict(False, f"steady state not back within {recovery_s:g} s of heal: {after.reason}", after.evidence)
    return Verdict(True, f"held before the faults and returned {state['recovery_s']:.3f} s after heal", details={"recovery_s": round(state["recovery_s"], 6)})


def write_result(result: RunResult, events: Sequence[dict[str, Any]] | None = None) -> None:
    """result.json and report.md first (the record), then report.html and junit.xml.
    ``events``: the journal's events if still in memory; else the journal file is read."""
    payload = result.to_json()
    (result.out_dir / "result.json").write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    (result.out_dir / "report.md").write_text(render_markdown(result))
    write_reports(result, events)


def write_reports(result: RunResult, events: Sequence[dict[str, Any]] | None = None) -> None:
    """report.html and junit.xml of a run whose result is known."""
    from experiments.junit import write_junit
    from experiments.report_html import write_html

    write_html(result, events)
    write_junit(result.out_dir / "junit.xml", [result.to_json()])


def render_markdown(result: RunResult) -> str:
    experiment = result.experiment
    lines = [
        f"# {experiment.name} — seed {result.seed}",
        "",
        f"**{experiment.title}**",
        "",
        experiment.description.strip(),
        "",
        f"Source: {experiment.source}",
        "",
        f"- Outcome: **{'as expected' if result.as_expected else 'NOT as expected'}** "
        f"(expected: {experiment.expected.outcome}{' — ' + experiment.expected.failure_mode if experiment.expected.failure_mode else ''})",
        *([f"- Broken on purpose (gallery variants patched in, chaoskube/gallery.py): {', '.join(f'`{name}`' for name in experiment.broken)}"] if experiment.broken else []),
        f"- Journal sha256: `{result.journal_sha256}`",
        f"- Simulated {result.simulated_seconds:.1f} s in {result.wall_seconds:.2f} s of wall time",
        f"- Replay: `{result.replay}`",
        "",
        "## Verdicts",
        "",
        "| checker | verdict | reason |",
        "|---|---|---|",
    ]
    for name, verdict in result.verdicts.items():
        lines.append(f"| {name} | {verdict.label} | {verdict.reason.replace('|', '/')} |")
    for name, verdict in result.verdicts.items():
        if verdict.valid is False and verdict.evidence:
            lines += ["", f"### {name}: the shortest history that shows it", "", "```"]
            lines += [orjson.dumps(item, default=repr, option=orjson.OPT_SORT_KEYS).decode() if not isinstance(item, str) else item for item in verdict.to_json()["evidence"]]
            lines.append("```")
    lines += ["", "## Faults", ""]
    if not result.faults:
        lines.append("None.")
    for fault in result.faults:
        healed = f"{fault['healed_at']:.3f}" if fault["healed_at"] is not None else "never"
        lines.append(f"- #{fault['id']} `{fault['kind']}` on {', '.join(fault['targets'])} ({fault['target']}): applied at {fault['applied_at']:.3f} s, healed at {healed} s")
    for skipped in result.skipped_faults:
        lines.append(f"- skipped (not applied): {skipped}")
    lines += ["", "## Phases", ""]
    lines += [f"- {name}: {when:.3f} s" for name, when in result.phases.items()]
    if result.metrics:
        lines += ["", "## Metrics", ""]
        lines += [f"- {name}: {value}" for name, value in sorted(result.metrics.items())]
    return "\n".join(lines) + "\n"

"""``chaoskube test-operator``: learn, plan, run the plans in parallel, judge, summarize.

1. Two fault-free *learning* sessions (:mod:`.session`), in parallel: the first is the
   reference, the difference between the two is the mask (:mod:`.mask`).
2. Plans from the reference's writes (:mod:`.plans`), at most ``budget``.
3. Each plan in its own process (``--jobs`` at a time, each a served cluster on free
   ports): the replay command of the plan, ``chaoskube test-operator ... --plan ID``.
4. Each plan's session judged against the reference (:mod:`.oracle`), with and without the
   mask (the findings the mask removes are counted); a summary (terminal, summary.json,
   summary.md) lists the failing plans with the diverging objects and the operator's log
   lines around the perturbation.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import yaml

from chaoskube.experiments.operator_testing.mask import Mask, learn_mask
from chaoskube.experiments.operator_testing.observe import observe
from chaoskube.experiments.operator_testing.oracle import dips, inconsistencies, judge
from chaoskube.experiments.operator_testing.plans import KINDS, Plan, generate_plans, parse_plan_id, reached_twice, select_plans
from chaoskube.experiments.operator_testing.session import SessionOptions, Target, run_session
from chaoskube.experiments.operator_testing.workload import Step, WorkloadError, generate_workload, load_workload

__all__ = ["OperatorTestOptions", "load_target", "run_plan", "run_test_operator"]

#: A plan whose cluster's clock fell behind the wall clock during a step of the workload by
#: more than this fraction of the quiet spell that ended the step (session.json's steps'
#: max_lag_s and quiet_s, virtual seconds, sampled at every poll) is *late*: not judged.
#: Virtual time is paced to the wall clock; a process that does not get a CPU in time runs
#: its timers late and catches up in a jump, and a quiet spell measured over that jump may
#: end a step before requests the operator has already sent are served -- a false finding,
#: or a missed one. The spell is the learned one (0.5 s for the kopf gallery and the Go
#: pairs: a bound of 0.25 s) until the perturbation fires and at least ``--quiet`` (2 s: 1 s)
#: from then on. Measured on 2 CPUs shared with other work, worst lag of a kopf plan: 0.05 s
#: at 4 plans at a time, 0.21 s at 6 and 8, 4.2 s at 12.
LATE_FRACTION = 0.5


def late_bound(options: SessionOptions) -> float:
    """The lag (virtual seconds) beyond which a plan is late (LATE_FRACTION), for a step
    whose quiet spell session.json does not give: the shortest the plan may use."""
    return LATE_FRACTION * min(options.quiet_s, options.quiet_learned_s or options.quiet_s)


def lateness(run: dict[str, Any], fallback_s: float) -> tuple[float, float] | None:
    """(lag, bound) of the step of the workload whose clock lag went furthest past
    LATE_FRACTION of the quiet spell that ended it; None: the plan is on time. The first
    checkpoint (the operator getting ready, nothing of the workload yet) is not counted."""
    worst: tuple[float, float] | None = None
    for lag, quiet in list(zip(run["step_lags"], run["step_quiet"]))[1:]:
        bound = LATE_FRACTION * quiet if quiet else fallback_s
        if lag > bound and (worst is None or lag - bound > worst[0] - worst[1]):
            worst = (lag, round(bound, 3))
    return worst


LOG_WINDOW_S = (2.0, 4.0)  # operator log lines from 2 s before the perturbation to 4 s after it healed
MAX_LOG_LINES = 30


class TargetError(ValueError):
    """Bad input: one line naming the file and what to fix."""


@dataclass(frozen=True)
class OperatorTestOptions:
    jobs: int | None = None  # None: choose_jobs, from the learning runs' CPU
    budget: int | None = None
    repeats: int | None = 1
    kinds: tuple[str, ...] = KINDS
    session: SessionOptions = SessionOptions()
    mask: bool = True  # False (--no-mask): judge without the learned mask
    tuning: bool = True  # False (--no-tuning): plans wait as the learning runs did (quiet_s, step_timeout_s; no epoch lead)
    dask: str | None = None  # --dask ADDRESS: the plans as tasks on a Dask cluster (dask_plans.py)


# ----------------------------------------------------------------------------- input
def _documents(path: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
    if not files:
        raise TargetError(f"{path}: no .yaml, .yml or .json file in it")
    out = []
    for file in files:
        try:
            out.extend(doc for doc in yaml.safe_load_all(file.read_text()) if doc)
        except (OSError, yaml.YAMLError) as error:
            raise TargetError(f"{file}: cannot read it as YAML ({type(error).__name__}); give Kubernetes manifests") from None
    for doc in out:
        if not isinstance(doc, dict) or not doc.get("kind") or not doc.get("apiVersion"):
            raise TargetError(f"{path}: every document needs apiVersion and kind")
    return out


def load_target(command: str, manifests: list[Path], workload: Path | None) -> Target:
    """The operator, its manifests (CRDs first) and its workload (generated from the first
    CRD's schema when none is given)."""
    if not command.strip():
        raise TargetError("--run: give the operator's command (e.g. 'kopf run --standalone -A op.py')")
    documents: list[dict[str, Any]] = []
    for path in manifests:
        if not path.exists():
            raise TargetError(f"--manifests {path}: no such file or directory")
        documents.extend(_documents(path))
    crds = [doc for doc in documents if doc.get("kind") == "CustomResourceDefinition"]
    if not crds:
        raise TargetError(f"--manifests {' '.join(map(str, manifests)) or '(none)'}: no CustomResourceDefinition; give the operator's CRDs")
    documents = crds + [doc for doc in documents if doc.get("kind") != "CustomResourceDefinition"]
    kinds = {str(crd["spec"]["names"]["kind"]) for crd in crds}
    try:
        steps = load_workload(workload, kinds) if workload is not None else generate_workload(crds[0])
    except WorkloadError as error:
        raise TargetError(str(error)) from None
    return Target(command=command, manifests=tuple(documents), steps=tuple(steps))


def _custom_resources(target: Target) -> list[str]:
    return [f"{crd['spec']['names']['plural']}.{crd['spec']['group']}" for crd in target.crds]


# ----------------------------------------------------------------------------- one session, judged
def summarize_session(out: Path, target: Target) -> dict[str, Any]:
    """What the oracles need of a finished session directory (and its wall times)."""
    session = json.loads((out / "session.json").read_text())
    events = [orjson.loads(line) for line in (out / "journal.jsonl").read_bytes().splitlines() if line]
    checkpoints = [step for step in session["steps"] if "t_end" in step]
    obs = observe(events, _custom_resources(target), [step["t_end"] for step in checkpoints])
    unconverged = [step["step"] for step in checkpoints if not step["converged"]]
    return {
        "labels": [step["step"] for step in checkpoints], "checkpoints": obs.checkpoints, "fewest": obs.fewest, "end": obs.end, "lifecycle": obs.lifecycle,
        "writes": obs.writes, "user_writes": obs.user_writes, "watches": obs.watches, "converged": session["converged"], "unconverged_at": unconverged[0] if unconverged else "",
        "verdicts": session["verdicts"], "error": session["error"], "perturbation": session["perturbation"], "wall": session["wall"],
        "log": obs.log, "plan": session["plan"], "custom": _custom_resources(target), "step_writes": [int(step.get("writes", 0)) for step in checkpoints],
        "step_kinds": [list(step.get("kinds") or ()) for step in checkpoints],
        "step_lags": [float(step.get("max_lag_s", 0.0)) for step in checkpoints], "step_quiet": [float(step.get("quiet_s", 0.0)) for step in checkpoints],
        "step_walls": [float(step.get("wall_s", 0.0)) for step in checkpoints], "step_virtual": [round(step["t_end"] - step["t_start"], 3) for step in checkpoints],
        "pauses": [float(step.get("longest_pause_s", 0.0)) for step in checkpoints], "pauses_after_writes": [list(step.get("pauses_after_writes_s") or ()) for step in checkpoints],
        "withheld": [step["step"] for step in checkpoints if step.get("withheld")],
    }


def _aligned(run: dict[str, Any], reference: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Both sessions' checkpoints at the labels they share, in the reference's order."""
    mine = dict(zip(run["labels"], run["checkpoints"]))
    # A checkpoint whose state the operator was kept from seeing (an unobserved state in
    # force) says nothing about it: not compared.
    withheld = set(run.get("withheld") or ())
    labels = [label for label in reference["labels"] if label in mine and label not in withheld]
    theirs = dict(zip(reference["labels"], reference["checkpoints"]))
    mine_fewest = dict(zip(run["labels"], run.get("fewest") or ()))
    their_fewest = dict(zip(reference["labels"], reference.get("fewest") or ()))
    return ({**run, "checkpoints": [mine[label] for label in labels], "fewest": [mine_fewest.get(label, {}) for label in labels]},
            {**reference, "checkpoints": [theirs[label] for label in labels], "fewest": [their_fewest.get(label, {}) for label in labels]}, labels)


def judge_plan(run: dict[str, Any], reference: dict[str, Any], mask: Mask | None) -> list[dict[str, Any]]:
    mine, theirs, labels = _aligned(run, reference)
    findings = judge(mine, theirs, mask, labels=labels)
    if run.get("withheld"):
        findings = [finding for finding in findings if not (finding["oracle"] == "lifecycle" and _made_only_for_an_unseen_state(finding["run"], finding["reference"]))]
    return findings


def _made_only_for_an_unseen_state(mine: list[int], theirs: list[int]) -> bool:
    """Whether an object's lifecycle in a run whose operator was kept from seeing a state
    falls short of the reference's only by objects made and removed for that state: none at
    all, or fewer creations and as many fewer deletions (what the reference made for the
    state it saw, say a Pod of a `replicas: 2` that came and went, and this operator, level-
    triggered, skipped). It was never wanted by a state this operator saw. More creations,
    or an object left over (creations less deletions differ), is still a finding."""
    if mine == [0, 0]:
        return True
    return mine[0] <= theirs[0] and mine[1] <= theirs[1] and mine[0] - mine[1] == theirs[0] - theirs[1]


def _log_around(run: dict[str, Any]) -> list[str]:
    perturbation = run.get("perturbation") or {}
    if "applied" not in perturbation:
        return []
    start = perturbation["applied"] - LOG_WINDOW_S[0]
    end = perturbation.get("healed", perturbation["applied"]) + LOG_WINDOW_S[1]
    # Tracebacks' frames left out: the first and last lines of each say what happened.
    lines = [f"t={t:.3f} {line}" for t, line in run["log"] if start <= t <= end and line.strip() and not line.startswith((" ", "\t"))]
    return lines[:MAX_LOG_LINES]


# ----------------------------------------------------------------------------- the command
def replay_command(argv_prefix: list[str], plan: Plan, learned: Path) -> str:
    return shlex.join([*argv_prefix, "--plan", plan.id, "--learned", str(learned)])


def run_plan(target: Target, plan: Plan, out: Path, options: SessionOptions) -> dict[str, Any]:
    """One plan's session (in this process), summarized."""
    run_session(target, out, plan, options)
    return summarize_session(out, target)


def learn(target: Target, out: Path, options: OperatorTestOptions, say: Any) -> dict[str, Any]:
    """The two learning sessions, the mask and the plans; written to ``out/learning.json``."""
    started = time.perf_counter()
    paths = [out / "learn-1", out / "learn-2"]
    # Learning runs wait twice as long for quiet: what they learn bounds every plan's waits.
    learning_options = replace(options.session, quiet_s=options.session.quiet_s * 2)
    _, not_run = _run_all(lambda path: _subprocess_session(target, path, None, learning_options), paths, min(2, max(1, options.jobs or 2)))
    if not_run:
        say("interrupted while learning: no plan run, no summary")
        raise KeyboardInterrupt
    first, second = (summarize_session(path, target) for path in paths)
    for label, run in (("learn-1", first), ("learn-2", second)):
        if run["error"] or not run["converged"]:
            raise TargetError(f"the fault-free learning run {label} did not complete: {run['error'] or 'the operator did not quiesce (at ' + run['unconverged_at'] + ')'}; see {out / label / 'journal.jsonl'} (operator-output)")
    mine, theirs, _ = _aligned(second, first)
    mask = learn_mask(theirs["checkpoints"] + [first["end"]], mine["checkpoints"] + [second["end"]], (first["lifecycle"], second["lifecycle"]))
    generated = generate_plans(first["writes"], options.kinds, first["user_writes"])
    plans = reached_twice(generated, second["writes"])
    expected = [sorted(set(a) & set(b)) for a, b in zip(first["step_kinds"], second["step_kinds"])]
    tuning = learn_tuning((first, second), options.session)
    # Acto's consistency oracle needs no perturbation: the fault-free run itself may leave
    # children that do not follow the spec.
    learning_findings = inconsistencies(first["checkpoints"], first["labels"], first["custom"]) + dips(first["checkpoints"], first["fewest"], first["labels"])
    learning = {"expected_writes": expected, "tuning": tuning, "learning_findings": learning_findings, "reference": first, "second": {key: second[key] for key in ("labels", "checkpoints", "end", "lifecycle", "writes", "wall")}, "mask": mask.to_json(), "plans": [plan.to_json() for plan in plans], "plans_unrepeated": len(generated) - len(plans), "wall_s": round(time.perf_counter() - started, 3)}
    (out / "learning.json").write_text(json.dumps(learning, indent=1, sort_keys=True, default=str))
    say(f"learned from 2 fault-free runs in {learning['wall_s']:.1f} s: {len(first['writes'])} operator writes, watches {', '.join(first['watches'])}; mask of {len(mask)} entries; {len(plans)} plans"
        f"{f' ({len(generated) - len(plans)} more at points the second run did not reach left out)' if len(generated) > len(plans) else ''}; "
        f"quiet {tuning['quiet_learned_s']:g} s until a perturbation, {max(tuning['quiet_learned_s'], options.session.quiet_s):g} s after; boot {tuning['epoch_lead_s']:g} s")
    return learning


#: A plan's quiet spell: this many times the longest pause the learning runs saw between two
#: activities within a step once the operator had made its first write of the step (the
#: operator's reaction before it is covered by waiting for the learned writes; a pause after
#: it is not: an operator whose number of writes varies -- the sample-controller's status
#: updates and Events -- may have made them all before a Pod has started), at least
#: QUIET_FLOOR_S and at most the learning runs' own quiet spell (twice --quiet: a longer
#: pause would not have been seen). Shorter than --quiet only until the perturbation fires.
QUIET_FACTOR = 1.5
QUIET_FLOOR_S = 0.5
#: How long a perturbed step waits for the learned writes, once the operator is ready and
#: healed: the longest step of the learning runs (their reaction, work and quiet spell), at
#: least WRITES_WAIT_FLOOR_S.
WRITES_WAIT_FLOOR_S = 5.0


def learn_tuning(runs: tuple[dict[str, Any], ...], options: SessionOptions) -> dict[str, float]:
    """What the fault-free runs say about a plan's waits (SessionOptions's learned fields):
    the quiet spell, the wait for the learned writes, and the boot's virtual length (the
    same seed boots the same way)."""
    pauses = [after[min(1, len(after) - 1)] for run in runs for after in run.get("pauses_after_writes") or () if after]
    longest_pause = max(pauses, default=options.quiet_s)
    longest_step = max((length for run in runs for length in run.get("step_virtual") or ()), default=options.step_timeout_s)
    boots = [float((run.get("wall") or {}).get("boot_virtual_s", 0.0)) for run in runs]
    return {
        "quiet_learned_s": round(min(2 * options.quiet_s, max(QUIET_FLOOR_S, QUIET_FACTOR * longest_pause)), 3),
        "writes_wait_s": round(min(options.step_timeout_s, max(WRITES_WAIT_FLOOR_S, longest_step)), 3),
        "epoch_lead_s": round(min(boots), 3) if all(boots) else 0.0,
    }


#: --jobs when not given: as many plans at a time as keep AUTO_JOBS_LOAD of the CPUs busy by
#: what one plan used in the learning runs (choose_jobs), at most AUTO_JOBS_PER_CPU per CPU
#: and AUTO_JOBS_MAX in all. A plan mostly waits (virtual time paced to the wall clock, the
#: operator's reactions, the quiet spells): a kopf gallery plan uses 0.11-0.13 CPU per wall
#: second (its cluster and its operator), so 2 at a time on 2 CPUs left them mostly idle.
#: Half the CPUs, not all: what the average hides -- the boots and the operators' starts
#: together, the wake-ups of every paced clock, the judging here, other work -- makes the
#: clocks lag beyond it (docs/operators.md, Time: on 2 shared CPUs 8 at a time used 0.9 CPU
#: with a worst lag of 0.21 s; 12 at a time, no more plans per hour and lags up to 4 s).
AUTO_JOBS_LOAD = 0.5
AUTO_JOBS_PER_CPU = 4
AUTO_JOBS_MAX = 16
#: Without a measure (a learning.json from before sessions measured their CPU): 2, the old default.
AUTO_JOBS_UNMEASURED = 2


def plan_cpu_share(runs: list[dict[str, Any]], speed: float = 1.0) -> float:
    """What a plan keeps busy, in CPUs, by the fault-free runs' session records (``wall``):
    its session's CPU (the cluster, the front, the driver) and its operator's, per wall
    second, the worst of the runs. The boot's wait for the wall clock (its virtual length,
    which a plan does not wait: ``epoch_lead_s``) is left out of the wall. 0: not measured."""
    shares = []
    for run in runs:
        wall = run.get("wall") or {}
        if "cpu_s" not in wall or not wall.get("total_s"):
            continue
        seconds = max(1.0, float(wall["total_s"]) - float(wall.get("boot_virtual_s", 0.0)) / speed)
        shares.append((float(wall["cpu_s"]) + float(wall.get("operator_cpu_s", 0.0))) / seconds)
    return round(max(shares), 3) if shares else 0.0


def choose_jobs(share: float, cpus: int) -> tuple[int, str]:
    """--jobs when not given: the plans that keep AUTO_JOBS_LOAD of ``cpus`` busy at ``share``
    CPUs each (plan_cpu_share), between 1 and min(AUTO_JOBS_PER_CPU * cpus, AUTO_JOBS_MAX);
    and the line that says why."""
    cpus = max(1, cpus)
    bound = min(AUTO_JOBS_PER_CPU * cpus, AUTO_JOBS_MAX)
    if share <= 0:
        return min(AUTO_JOBS_UNMEASURED, bound), f"--jobs {min(AUTO_JOBS_UNMEASURED, bound)} (the learning runs did not measure their CPU; give --jobs to choose)"
    jobs = max(1, min(bound, int(AUTO_JOBS_LOAD * cpus / share)))
    why = f"a plan used {share:.2f} CPU per wall second in the learning runs; {AUTO_JOBS_LOAD:.0%} of {cpus} CPU{'s' if cpus != 1 else ''}"
    return jobs, f"--jobs {jobs} ({why}{f', at most {bound}' if jobs == bound else ''}; give --jobs to choose)"


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity; os.cpu_count where that is not known)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _session_argv(target_argv: list[str], plan: Plan | None, out: Path, options: SessionOptions) -> list[str]:
    argv = [*target_argv, "--session-only", "--out", str(out), "--seed", str(options.seed), "--speed", str(options.speed), "--quiet", str(options.quiet_s)]
    if options.expected_writes:
        argv += ["--expect-writes", json.dumps([list(kinds) for kinds in options.expected_writes])]
    tuning = {name: getattr(options, name) for name in TUNING if getattr(options, name)}
    if tuning:
        argv += ["--tuning-json", json.dumps(tuning, sort_keys=True)]
    if plan is not None:
        argv += ["--plan", plan.id]
    return argv


def expectations(value: Any) -> tuple[tuple[str, ...], ...]:
    """Per checkpoint, the kinds of write expected (learning.json's ``expected_writes``,
    ``--expect-writes``); ValueError unless ``value`` is a list of lists of strings."""
    if not isinstance(value, list) or not all(isinstance(kinds, list) and all(isinstance(kind, str) for kind in kinds) for kinds in value):
        raise ValueError(value)
    return tuple(tuple(kinds) for kinds in value)


def learned_expectations(learning: dict[str, Any], path: Path) -> tuple[tuple[str, ...], ...]:
    """learning.json's ``expected_writes``: per checkpoint, the kinds of write both learning
    runs made. One written before they were kinds (numbers) asks to learn again."""
    try:
        return expectations(learning.get("expected_writes") or [])
    except ValueError:
        raise TargetError(f"{path}: `expected_writes` holds numbers of writes, as an older chaoskube learned them; run test-operator without --learned to learn again") from None


#: The SessionOptions fields learn_tuning sets.
TUNING = ("quiet_learned_s", "writes_wait_s", "epoch_lead_s")

#: Set by the CLI: how to run one session in a child process (the command line of this
#: test-operator invocation, without --plan/--out/--learned/--jobs/--budget).
TARGET_ARGV: list[str] = []


#: What a session's process imports before it is forked (the forkserver's preload): a
#: session then starts in milliseconds instead of the seconds a fresh interpreter takes to
#: import chaoskube on a loaded machine.
PRELOAD = ("chaoskube.experiments.operator_testing.run", "chaoskube.experiments.operator_testing.session", "chaoskube.experiments.live", "chaoskube.experiments.registry", "chaoskube.experiments.model", "chaoskube.experiments.reports")


def _forkserver() -> Any:
    """The ``forkserver`` context (a session process must not be forked from this one,
    which holds threads: the plan pool's), its server preloaded with :data:`PRELOAD`."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def _session_process(target: Target, out: Path, plan: Plan | None, options: SessionOptions, chaoskube: int = 0) -> None:
    """A session's process (forked by the forkserver): its output to ``out/session.log``.
    It dies with ``chaoskube`` (this command's process), however that ended -- SIGKILL
    included: a thread waits on its pidfd (the forkserver, its parent, outlives a SIGKILLed
    chaoskube by seconds, measured 13-15 s, so its parent-death signal, also set, is only a
    backstop); its operator then dies with it (live.py's guard)."""
    from chaoskube.experiments.signals import die_with_parent

    with contextlib.suppress(OSError):
        die_with_parent()
    if chaoskube:
        _die_with(chaoskube)
    log = os.open(out / "session.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    record = run_session(target, out, plan, options)
    sys.stdout.flush()
    sys.exit(0 if not record.error else 1)


#: How sessions are started: "fork" (a process forked from a preloaded forkserver, the
#: default under the CLI), "subprocess" (a fresh interpreter running the replay command's
#: --session-only: on a Dask worker, which must not fork) or "inline" (in this process: tests).
LAUNCH = {"mode": "fork"}


def _subprocess_session(target: Target, out: Path, plan: Plan | None, options: SessionOptions) -> int | None:
    """Run one session into ``out``; returns its process's exit code (None: in-process)."""
    if not TARGET_ARGV:  # in-process (tests)
        run_session(target, out, plan, options)
        return None
    SESSIONS.check()
    out.mkdir(parents=True, exist_ok=True)
    if LAUNCH["mode"] == "fork":
        process = _forkserver().Process(target=_session_process, args=(target, out, plan, options, os.getpid()), name=f"test-operator {plan.id if plan else 'learning'}")
        with SESSIONS.starting():
            process.start()
            SESSIONS.add(process.pid)
        try:
            process.join()
        finally:
            SESSIONS.discard(process.pid)
        SESSIONS.check()  # stopped by the signal: not a finished plan
        return process.exitcode
    with (out / "session.log").open("wb") as log:
        with SESSIONS.starting():
            popen = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", *_session_argv(TARGET_ARGV, plan, out, options)], stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)  # noqa: PLW1509 - as live.py's Program
            SESSIONS.add(popen.pid)
        try:
            code = popen.wait()
        finally:
            SESSIONS.discard(popen.pid)
    SESSIONS.check()
    return code


def _die_with_parent() -> None:
    """A session's interpreter (before exec): SIGKILLed when the thread that started it dies."""
    from chaoskube.experiments.signals import die_with_parent

    with contextlib.suppress(OSError):
        die_with_parent()


class _NotRun(Exception):
    """A session not started, or stopped, because the command is stopping."""


def _die_with(pid: int) -> None:
    """SIGKILL this process when ``pid`` ends (at once if it has ended already)."""
    import select
    import signal

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except (OSError, AttributeError):  # no pidfd here: the parent-death signal only
        return

    def wait() -> None:
        select.select([fd], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="test-operator-die-with-chaoskube", daemon=True).start()


class _Sessions:
    """The session processes running now, for the first SIGINT/SIGTERM: :meth:`stop` keeps
    new sessions from starting and sends each running one SIGTERM, which it handles as a
    live run does (live.py: the operator gets SIGTERM and its grace period, then SIGKILL;
    the served cluster stops), then SIGKILL after :data:`STOP_S`."""

    #: How long a session has to stop after SIGTERM: the operator's grace period (30 s,
    #: LiveOptions.grace_s) and the session's clean-up.
    STOP_S = 45.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.pids: set[int] = set()

    def check(self) -> None:
        if self.stopping.is_set():
            raise _NotRun

    @contextlib.contextmanager
    def starting(self) -> Any:
        with self.lock:  # a session started while stop() signals is signalled too, or not started
            self.check()
            yield

    def add(self, pid: int) -> None:
        self.pids.add(pid)  # under self.lock (starting)

    def discard(self, pid: int) -> None:
        with self.lock:
            self.pids.discard(pid)

    def stop(self) -> None:
        import signal

        with self.lock:
            self.stopping.set()
            pids = sorted(self.pids)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)

    def kill(self) -> None:
        import signal

        with self.lock:
            pids = sorted(self.pids)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


SESSIONS = _Sessions()


def _run_all(one: Any, items: list[Any], width: int, on_stop: Any = None) -> tuple[list[Any], list[Any]]:
    """``one`` of every item, ``width`` at a time (threads, each waiting on one session);
    returns the results of the items that finished and the items that did not. On the first
    SIGINT/SIGTERM (a KeyboardInterrupt here, experiments/signals.py) no further session
    starts, the running ones are stopped (:class:`_Sessions`; ``on_stop``: a Dask cluster's)
    and waited for, at most :data:`_Sessions.STOP_S` before SIGKILL."""
    from chaoskube.experiments.signals import stopping_now

    pool = ThreadPoolExecutor(max_workers=max(1, width))
    futures = [pool.submit(one, item) for item in items]
    try:
        for future in futures:
            with contextlib.suppress(_NotRun):
                future.result()
    except KeyboardInterrupt:
        stopping_now()  # a further Ctrl-C is answered with a line, not obeyed, while sessions stop
        SESSIONS.stop()
        for future in futures:
            future.cancel()
        if on_stop is not None:
            with contextlib.suppress(Exception):
                on_stop()
        deadline = time.monotonic() + _Sessions.STOP_S
        while any(not future.done() for future in futures) and time.monotonic() < deadline:
            time.sleep(0.1)
        SESSIONS.kill()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    done, not_run = [], []
    for item, future in zip(items, futures):
        if future.cancelled() or isinstance(future.exception(), _NotRun):
            not_run.append(item)
        else:
            done.append(future.result())
    return done, not_run


class _Limiter:
    """How many sessions run at once, from ``jobs`` down: a late plan (its cluster's clock
    fell behind: the CPUs are busier than the choice assumed -- other work on the machine)
    lowers the count by one, at least 1, unless it started while the count was higher (the
    count was lowered for it already); as many plans on time in a row as the count raises it
    by one again, up to ``jobs``. The plan pool has ``jobs`` threads; each session takes a
    slot here (the judging does not)."""

    def __init__(self, jobs: int, say: Any) -> None:
        self.most = self.limit = self.lowest = max(1, jobs)
        self.running = 0
        self.on_time = 0
        self.say = say
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def slot(self) -> Any:
        with self.changed:
            while self.running >= self.limit:
                SESSIONS.check()  # stopping: not started
                self.changed.wait(0.2)
            SESSIONS.check()
            self.running += 1
            started_at = self.limit
        try:
            yield started_at
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def finished(self, plan_id: str, late_by: float | None, started_at: int) -> None:
        """A session ended (``late_by``: its lag, if it was late); it started while the
        count was ``started_at`` -- a plan started before the count was lowered does not
        lower it again."""
        with self.changed:
            if late_by is not None:
                self.on_time = 0
                if self.limit > 1 and started_at <= self.limit:
                    self.limit -= 1
                    self.lowest = min(self.lowest, self.limit)
                    self.say(f"plans at a time: {self.limit} ({plan_id} ran late: its cluster's clock fell {late_by:.2f} s behind the wall clock; it runs again)")
                return
            self.on_time += 1
            if self.limit < self.most and self.on_time >= self.limit:
                self.limit += 1
                self.on_time = 0
                self.say(f"plans at a time: {self.limit} (the last plans ran on time)")
            self.changed.notify_all()


class _DaskSessions:
    """Plans on a Dask cluster (``--dask``, as ``chaoskube explore --dask``: dask_campaign.py's
    addresses): each plan one task. The task runs the plan's session on its worker as a
    fresh interpreter (the replay command's ``--session-only``: a Dask worker holds threads
    and may be a daemon process, so it does not fork) in a scratch directory and returns the
    directory as tar.gz; here it is unpacked into the plan's directory and judged as a local
    plan is, so the summary is the same. The workers need the operator's files (its command,
    --manifests, the workload) at the same paths. One thread here per worker thread of the
    cluster (asked when the plans start), each waiting on one task at a time."""

    def __init__(self, client: Any, cluster: Any) -> None:
        self.client = client
        self.cluster = cluster  # a LocalCluster started here (closed with it), or None

    @classmethod
    def open(cls, address: str) -> _DaskSessions:
        from chaoskube.experiments.dask_campaign import _LOCAL, _TCP

        try:
            import distributed
        except ImportError:
            raise TargetError("--dask: the `distributed` package is not installed (pip install distributed)") from None
        local = _LOCAL.match(address)
        if local is not None:
            workers = int(local.group(1))
            if not 1 <= workers <= 256:
                raise TargetError(f"--dask {address}: the number of local workers must be 1..256")
            import logging

            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR)
            return cls(distributed.Client(cluster), cluster)
        if not _TCP.match(address):
            raise TargetError(f"--dask {address!r}: expected tcp://HOST:PORT (a Dask scheduler) or local:N (N local workers)")
        try:
            return cls(distributed.Client(address, timeout="10s"), None)
        except OSError as error:
            raise TargetError(f"--dask {address}: cannot reach a Dask scheduler there ({error}); start one (`dask scheduler`) or check the address") from None

    @property
    def width(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def run(self, target: Target, out: Path, plan: Plan | None, options: SessionOptions) -> None:
        from chaoskube.experiments.dask_campaign import unpack

        assert TARGET_ARGV, "a Dask task runs the session's command line"
        # pure=False: a task run again after a lost worker is the same future, never a twin
        future = self.client.submit(_dask_session, list(TARGET_ARGV), plan.id if plan is not None else None, options, pure=False, retries=0)
        unpack(future.result(), out)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def _dask_session(target_argv: list[str], plan_id: str | None, options: SessionOptions) -> bytes:
    """A Dask task (on its worker): one session as a fresh interpreter into a scratch
    directory, returned as tar.gz (dask_campaign's format)."""
    import tempfile

    from chaoskube.experiments.dask_campaign import _pack

    scratch = Path(tempfile.mkdtemp(prefix="chaoskube-test-operator-"))
    try:
        out = scratch / "session"
        out.mkdir()
        plan = parse_plan_id(plan_id) if plan_id else None
        with (out / "session.log").open("wb") as log:
            # dies with its worker (a local:N cluster closed on Ctrl-C / SIGTERM), its operator with it (live.py's guard)
            subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", *_session_argv(target_argv, plan, out, options)], stdout=log, stderr=subprocess.STDOUT, check=False, preexec_fn=_die_with_parent)  # noqa: PLW1509 - as live.py's Program
        return _pack(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_test_operator(target: Target, out: Path, options: OperatorTestOptions, say: Any, only: str | None = None, learned: Path | None = None) -> dict[str, Any]:
    """Learn (or reuse ``learned``), run the plans (or only the plan ``only``), judge,
    write summary.json and summary.md; returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    SESSIONS.stopping.clear()  # a command per process; a library caller may run several
    started = time.perf_counter()
    learning_path = (learned or out) / "learning.json"
    if learned is not None or (only and learning_path.exists()):
        if not learning_path.exists():
            raise TargetError(f"--learned {learned}: no learning.json there; run test-operator without --plan first")
        learning = json.loads(learning_path.read_text())
    else:
        learning = learn(target, out, options, say)
    reference = learning["reference"]
    mask = Mask.from_json(learning["mask"])
    tuning = {name: float(value) for name, value in (learning.get("tuning") or {}).items() if name in TUNING} if options.tuning else {}
    session_options = replace(options.session, expected_writes=learned_expectations(learning, learning_path), **tuning)
    plans = [parse_plan_id(entry["id"]) for entry in learning["plans"]]
    if only is not None:
        chosen = [parse_plan_id(only)]
    else:
        chosen = select_plans(plans, options.budget, options.repeats, options.kinds)
    dask = _DaskSessions.open(options.dask) if options.dask and chosen else None
    jobs = options.jobs
    if jobs is None and dask is None:
        jobs, why = choose_jobs(plan_cpu_share([reference, learning.get("second") or {}], options.session.speed), available_cpus())
        if only is None:
            say(f"plans at a time: {why}")
    jobs = jobs or 1
    say(f"running {len(chosen)} of {len(plans)} plans, {dask.width if dask is not None else jobs} at a time")
    plan_root = out / "plans"
    late_s = late_bound(session_options)
    launch = dask.run if dask is not None else _subprocess_session

    limiter = _Limiter(jobs, say) if dask is None else None

    def one(plan: Plan) -> dict[str, Any]:
        entry = attempt(plan)
        if entry["status"] == "late" and limiter is not None:
            # Once more, with fewer plans at a time (the limiter has lowered the count): a
            # late plan says nothing about the operator.
            shutil.rmtree(entry["dir"], ignore_errors=True)
            again = attempt(plan)
            again["late_before"] = round(float(entry["session_wall"].get("max_lag_s", 0.0)), 3)
            return again
        return entry

    def attempt(plan: Plan) -> dict[str, Any]:
        directory = plan_root / _safe(plan.id)
        begun = time.perf_counter()
        code = None
        started_at = jobs
        try:
            if limiter is not None:
                with limiter.slot() as started_at:
                    code = launch(target, directory, plan, session_options)
            else:
                code = launch(target, directory, plan, session_options)
        except _NotRun:
            raise
        except Exception as error:  # noqa: BLE001 - a Dask task that failed on every worker it met
            if SESSIONS.stopping.is_set():  # a Dask task cancelled by the signal
                raise _NotRun from None
            return {"id": plan.id, "description": plan.describe(), "status": "error", "error": f"the session did not run: {type(error).__name__}: {error}"[:500], "wall_s": round(time.perf_counter() - begun, 3), "dir": str(directory)}
        try:
            run = summarize_session(directory, target)
        except (OSError, ValueError, KeyError) as error:
            return {"id": plan.id, "description": plan.describe(), "status": "error", "error": f"the session left no record (its process exited with code {code}; see {directory / 'session.log'}): {error}", "wall_s": round(time.perf_counter() - begun, 3), "dir": str(directory)}
        judged = time.perf_counter()
        unmasked = judge_plan(run, reference, None)
        findings = judge_plan(run, reference, mask) if options.mask else unmasked
        judge_s = time.perf_counter() - judged
        fired = "applied" in (run["perturbation"] or {})
        late = lateness(run, late_s)
        lag = late[0] if late else float(run["wall"].get("max_lag_s", 0.0))
        status = "error" if run["error"] else "not-reached" if not fired else "late" if late else "found" if findings else "pass"
        entry = {
            "id": plan.id, "description": plan.describe(), "status": status, "findings": findings[:50], "finding_count": len(findings),
            "unmasked_finding_count": len(unmasked), "error": run["error"], "perturbation": run["perturbation"], "wall_s": round(time.perf_counter() - begun, 3),
            "session_wall": run["wall"] | {"steps_s": round(sum(run["step_walls"]), 3), "judge_s": round(judge_s, 3),
                                           "start_s": round(max(0.0, time.perf_counter() - begun - float(run["wall"].get("total_s", 0.0)) - judge_s), 3)},
            "step_walls": run["step_walls"], "log": _log_around(run) if findings else [], "dir": str(directory),
        } | ({"late_s": late[1], "late_lag_s": lag} if status == "late" and late else {})
        if limiter is not None:
            limiter.finished(plan.id, lag if status == "late" else None, started_at)
        say(f"  {plan.id}: {status}" + (f" ({len(findings)} finding(s): {_first(findings)})" if findings else "") + (f" ({run['error']})" if run["error"] else "") + (f" ({_late(entry)})" if status == "late" else "") + f" [{entry['wall_s']:.1f} s]")
        return entry

    try:
        results, not_run = _run_all(one, chosen, dask.width if dask is not None else jobs, on_stop=dask.close if dask is not None else None)
    finally:
        if dask is not None:
            with contextlib.suppress(Exception):  # closed already when interrupted
                dask.close()
    interrupted = SESSIONS.stopping.is_set()
    plans_run = len(results)
    wall = time.perf_counter() - started
    learning_findings = learning.get("learning_findings") or []
    if learning_findings and only is None:
        results.insert(0, {"id": "learning", "description": "the fault-free learning run itself (no perturbation)", "status": "found", "findings": learning_findings, "finding_count": len(learning_findings),
                           "unmasked_finding_count": len(learning_findings), "error": "", "perturbation": {}, "wall_s": 0.0, "session_wall": {}, "log": [], "dir": str((learned or out) / "learn-1")})
        say(f"  learning: found ({len(learning_findings)} finding(s) in the fault-free run: {_first(learning_findings)})")
    found = [entry for entry in results if entry["status"] == "found"]
    summary = {
        "operator": target.command, "workload": [step.to_json() for step in target.steps], "plans_generated": len(plans), "plans_unrepeated": int(learning.get("plans_unrepeated", 0)), "plans_run": plans_run,
        "interrupted": interrupted, "not_run": [plan.id for plan in not_run],
        "found": len(found), "errors": sum(1 for entry in results if entry["status"] == "error"),
        "not_reached": sum(1 for entry in results if entry["status"] == "not-reached"),
        "late": sum(1 for entry in results if entry["status"] == "late"),
        "findings_removed_by_mask": sum(max(0, entry.get("unmasked_finding_count", 0) - entry.get("finding_count", 0)) for entry in results),
        "plans_failing_only_without_mask": sum(1 for entry in results if entry.get("unmasked_finding_count", 0) and not entry.get("finding_count", 0)),
        "wall_s": round(wall, 3), "jobs": jobs, "jobs_chosen": options.jobs is None and dask is None, "jobs_lowest": limiter.lowest if limiter is not None else None,
        "late_run_again": sum(1 for entry in results if "late_before" in entry), "dask": options.dask, "masked": options.mask, "tuning": {name: getattr(session_options, name) for name in TUNING},
        "plans_per_hour": round(plans_run / wall * 3600, 1) if plans_run and wall > 0 else 0.0,
        "mask": learning["mask"], "results": results,
        "replay": {entry["id"]: "chaoskube test-operator " + shlex.join(TARGET_ARGV[1:]) if entry["id"] == "learning" else replay_command(["chaoskube", "test-operator", *TARGET_ARGV[1:]] if TARGET_ARGV else ["chaoskube", "test-operator"], parse_plan_id(entry["id"]), learned or out) for entry in results},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True, default=str))
    (out / "summary.md").write_text(_markdown(summary))
    if interrupted:
        say(f"interrupted: {plans_run} plan(s) finished, {len(not_run)} not run (summary.json lists them); summary: {out / 'summary.md'}")
        raise KeyboardInterrupt  # the command exits 130 / 143 (experiments/cli.py)
    return summary


def _late(entry: dict[str, Any]) -> str:
    return (f"the cluster's clock fell {float(entry.get('late_lag_s', entry['session_wall'].get('max_lag_s', 0.0))):.2f} s behind the wall clock in a step (more than {entry.get('late_s', 0.0):g} s, half the quiet spell that ended it: a CPU too busy; "
            f"{entry.get('finding_count', 0)} finding(s) not counted)")


def _first(findings: list[dict[str, Any]]) -> str:
    finding = findings[0]
    return f"{finding['oracle']} {finding['object']}{finding['path'] if finding['path'] not in ('', '(whole)') else ''} at {finding['at']}: {_short(finding['run'])} (learning run: {_short(finding['reference'])})"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _safe(plan_id: str) -> str:
    return plan_id.replace("@", "_at_").replace(":", "_").replace("/", "_").replace("#", "_")


def _markdown(summary: dict[str, Any]) -> str:
    lines = [f"# test-operator: `{summary['operator']}`", "",
             f"{summary['plans_run']} of {summary['plans_generated']} plans run in {summary['wall_s']:.0f} s ({summary['jobs']} at a time, {summary['plans_per_hour']:.0f} plans/hour); "
             f"**{summary['found']} found**, {summary['errors']} error(s), {summary['not_reached']} not reached, {summary.get('late', 0)} late (not judged). "
             f"The learned mask ({len(summary['mask']['paths'])} paths, {len(summary['mask']['objects'])} objects) removed {summary['findings_removed_by_mask']} finding(s).", ""]
    if summary.get("interrupted"):
        lines += [f"**Interrupted** (SIGINT / SIGTERM): only the plans that finished are listed; not run: {', '.join(summary['not_run']) or 'none'}.", ""]
    for entry in summary["results"]:
        if entry["status"] != "found":
            continue
        lines += [f"## {entry['id']}", "", entry["description"], "", f"Replay: `{summary['replay'][entry['id']]}`", "", "| oracle | at | object | field | this run | learning run |", "|---|---|---|---|---|---|"]
        for finding in entry["findings"][:20]:
            lines.append(f"| {finding['oracle']} | {finding['at']} | {finding['object']} | {finding['path']} | `{_short(finding['run'])}` | `{_short(finding['reference'])}` |")
        if entry["log"]:
            lines += ["", "Operator log around the perturbation:", "", "```", *entry["log"], "```"]
        lines.append("")
    passed = [entry["id"] for entry in summary["results"] if entry["status"] == "pass"]
    if passed:
        lines += [f"Passed: {', '.join(passed)}", ""]
    other = [f"{entry['id']} ({entry['status']}: {entry.get('error') or (_late(entry) if entry['status'] == 'late' else 'the perturbation never fired')})" for entry in summary["results"] if entry["status"] in ("error", "not-reached", "late")]
    if other:
        lines += [f"Not judged: {'; '.join(other)}", ""]
    return "\n".join(lines)


def session_only(target: Target, out: Path, plan_id: str | None, options: SessionOptions) -> int:
    """``--session-only``: one session in this process (what the parallel runner starts)."""
    plan = parse_plan_id(plan_id) if plan_id else None
    record = run_session(target, out, plan, options)
    return 0 if not record.error else 1


def steps_of(data: list[dict[str, Any]]) -> list[Step]:
    from chaoskube.experiments.operator_testing.workload import step_from_json

    return [step_from_json(entry) for entry in data]

"""The ``hypothesis`` system: a saved Hypothesis example of a ClusterMachine, replayed.

A file written by :func:`chaoskube.testing.experiment.save_experiment` (or by hand) names a
:class:`~chaoskube.testing.ClusterMachine` class and the steps of one example; running it
replays those steps exactly as the example ran them, so a Hypothesis finding becomes a
named regression experiment that ``chaoskube run FILE`` reproduces.

Cluster options: a :class:`chaoskube.cluster.ClusterSpec` spelt as in its YAML (camelCase,
as the ``kubernetes`` system reads it); empty means the machine class's own ``spec``.

Workload options (:class:`HypothesisWorkload`):

- ``machine``: ``"module:QualName"`` of a ClusterMachine subclass, imported when the
  experiment loads;
- ``import_path``: the directory, relative to the file, put first on ``sys.path`` to import
  it (``save_experiment`` records the project root of a test module there), so
  ``chaoskube run FILE`` replays from any directory without ``PYTHONPATH``.
- ``steps``: ``[[rule, {argument: value}], ...]``, the steps after ``boot``; each is a
  ``@rule`` of the machine, its arguments bound to the rule's signature and checked
  against its annotations when the experiment loads. ``boot`` is not a step here: the
  run's seed is the World seed (``chaoskube run FILE --seed N``, else the file's ``seed``),
  and teardown (heal everything, then require convergence) follows the last step unless a
  step failed, as in the example.

The run (:func:`run_hypothesis_experiment`; the runner dispatches here for a system with
``replays_steps = True``, as it does to ``experiments/real/runner.py`` for ``real_time``): the
machine class's own :meth:`~chaoskube.testing.ClusterMachine.replay` with the steps
``[boot(seed), *steps]`` — the same World seed, the same steps, the machine's invariants
after each, the same quiescence between steps — in a subclass that only sets the spec and
writes the journal to ``journal.jsonl`` in the run directory. Nothing is journaled that
the example did not journal (no ``phase`` events): the run's fingerprint is the example's.
None of the standard phases (steady state, fault window, recovery wait) apply; a non-empty
``schedule`` is refused — faults are steps here.

Checkers: the machine's invariants, judged on the whole journal by the same checker
functions (:mod:`chaoskube.checkers`) the invariants call: ``raft-safety``,
``leader-election`` (with the machine's ``leader_overlap_tolerance_s``), ``pdb-eviction``,
``scheduling``; ``convergence`` is the teardown's own verdict (unknown when a step failed
first, so the liveness phase never ran — as in the example); ``steps`` fails when the
replay failed for any other reason (a subclass's own ``@invariant``, a rule raising, a
crashed simulation).

Non-guarantees: exact only with the same code (gallery variants named in ``broken`` are
patched in by the runner; a test's own monkeypatching is not in the file); a safety
checker answers unknown when the journal gives it nothing to judge, where the machine's
invariant passes.
"""

from __future__ import annotations

import inspect
import time
import typing
from pathlib import Path
from typing import Any, ClassVar

import msgspec
from hypothesis.stateful import RULE_MARKER

from chaoskube import gallery
from chaoskube.checkers import check_leader_election, check_pdb_eviction, check_raft_safety, check_scheduling
from chaoskube.checkers.verdict import Verdict, run_checker
from chaoskube.cluster import ClusterSpec
from chaoskube.experiments.model import Experiment, ExperimentError, convert_options, experiment_dir
from chaoskube.experiments.reports import write_result
from chaoskube.experiments.signals import stopping_now
from chaoskube.experiments.result import RunResult, close_run_log, open_run_log
from chaoskube.experiments.systems.base import System
from chaoskube.sim import Journal, World
from chaoskube.testing.experiment import CHECKER_OF_VIOLATION, STEPS_CHECKER, resolve_machine
from chaoskube.testing.machine import ClusterMachine, LiveCluster

#: Rules whose steps are faults (listed as the run's faults in the reports).
FAULT_STEPS = frozenset({"kill", "restart", "pause", "clock_jump", "partition_node"})
#: Steps that end every fault of the machine (``heal_all``; teardown journals ``hypothesis-heal``).
HEAL_STEPS = frozenset({"heal_all"})


class HypothesisWorkload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """The machine and its steps (module docstring)."""

    machine: str
    steps: list[tuple[str, dict[str, Any]]] = []
    #: The directory (relative to the experiment file) to import the machine's module from,
    #: as save_experiment records it; empty: the module is importable already.
    import_path: str = ""


class HypothesisSystem(System):
    name = "hypothesis"
    Cluster = dict  # checked by options(): a ClusterSpec mapping, or empty
    Workload = HypothesisWorkload
    replays_steps: ClassVar[bool] = True  # run_experiment dispatches to run_hypothesis_experiment
    CHECKERS: ClassVar[dict[str, str]] = {
        "raft-safety": "the machine's raft_is_safe invariant: no two leaders in a term, committed entries never change, acknowledged writes survive",
        "leader-election": "the machine's leader_election_holds invariant: never two acting leaders of one Lease (beyond the machine's tolerance)",
        "pdb-eviction": "the machine's evictions_respect_pdbs invariant: no voluntary disruption took a PodDisruptionBudget below desiredHealthy",
        "scheduling": "the machine's bindings_fit invariant: every binding respects resources, taints, node affinity; one node per pod",
        "convergence": "the teardown's liveness phase: after heal, every Deployment at its spec within the machine's convergence_deadline_s",
        "eventually": "the teardown's liveness phase: every @eventually property of the machine held within its convergence_deadline_s of heal",
        STEPS_CHECKER: "the replay failed for no reason above: a subclass's own @invariant held, no rule raised, the simulation did not crash",
    }

    @classmethod
    def options(cls, cluster: dict[str, Any], workload: dict[str, Any], *, base_dir: Path | None = None) -> tuple[Any, Any]:
        """(ClusterSpec or None, HypothesisWorkload), every field checked (one-line errors)."""
        typed = convert_options(workload, HypothesisWorkload, "workload")
        search = [Path(base_dir or ".") / typed.import_path] if typed.import_path else []
        if search and not search[0].is_dir():
            raise ExperimentError(f"field `workload.import_path`: {typed.import_path!r} is not a directory next to the file ({search[0]})")
        try:
            machine = resolve_machine(typed.machine, search)
        except ValueError as error:
            raise ExperimentError(f"field `workload.machine`: {error}") from None
        for index, (name, args) in enumerate(typed.steps):
            _check_step(machine, index, name, args)
        spec = None
        if cluster:
            from chaoskube.experiments.systems.kubernetes import _cluster_options

            spec = _cluster_options(cluster)
        return spec, typed

    RUNS = None  # the user's machine and whatever it runs
    FAULT_KINDS = frozenset()  # faults are steps of the example, not a schedule


def _check_step(machine: type[ClusterMachine], index: int, name: str, args: dict[str, Any]) -> None:
    where = f"field `workload.steps[{index}]`"
    if name in ("boot", "teardown"):
        raise ExperimentError(f"{where}: {name!r} is not a step here (the run's seed boots the cluster; teardown follows the last step)")
    function = getattr(machine, name, None)
    if function is None or getattr(function, RULE_MARKER, None) is None:
        rules = sorted(attribute for attribute in dir(machine) if getattr(getattr(machine, attribute, None), RULE_MARKER, None) is not None)
        raise ExperimentError(f"{where}: {machine.__qualname__} has no rule {name!r}; its rules: {', '.join(rules)}")
    signature = inspect.signature(function)
    try:
        signature.bind(None, **args)
    except TypeError as error:
        raise ExperimentError(f"{where}: bad arguments for {name}: {error}") from None
    original = inspect.unwrap(function)
    try:
        hints = typing.get_type_hints(original)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve is not checked
        hints = {}
    for argument, value in args.items():
        hint = hints.get(argument)
        if hint is None or hint is Any:
            continue
        try:
            msgspec.convert(value, type=hint)
        except (msgspec.ValidationError, TypeError) as error:
            raise ExperimentError(f"field `workload.steps[{index}].{argument}`: bad value {value!r} for {name}: {error}") from None


# ============================================================================ the run
def run_hypothesis_experiment(experiment: Experiment, seed: int, out_dir: str | Path, progress: Any = None) -> Any:
    """Replay ``experiment``'s steps with World seed ``seed`` into ``out_dir`` (journal,
    result.json, report.md, report.html, junit.xml, run.log) and return the RunResult.
    Gallery variants named in ``experiment.broken`` are patched in for the run."""
    where = experiment.path or experiment.name
    if experiment.schedule:
        raise ExperimentError(f"{where}: field `schedule`: the hypothesis system replays steps; faults are steps of `workload.steps`")
    try:
        spec, workload = HypothesisSystem.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    except ExperimentError as error:
        raise ExperimentError(f"{where}: {error}") from None
    machine_class = resolve_machine(workload.machine)  # importable: options() put its import_path on sys.path
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    steps: list[tuple[str, dict[str, Any]]] = [("boot", {"seed": seed}), *((name, dict(args)) for name, args in workload.steps)]
    replay_class, machines = _replay_class(machine_class, spec, out / "journal.jsonl", len(steps), progress)
    error: BaseException | None = None
    interrupted = False
    started = time.perf_counter()
    sink = open_run_log(out / "run.log")
    try:
        with gallery.applied(experiment.broken):
            replay_class.replay(steps)
    except KeyboardInterrupt:
        interrupted = True
        stopping_now()
    except Exception as caught:  # noqa: BLE001 - the replay's failure is the run's verdict
        error = caught
    finally:
        close_run_log(sink)
    wall = time.perf_counter() - started
    machine = machines[0] if machines else None
    live = machine.live if machine is not None else None
    if live is None:  # boot itself failed before a World existed: nothing to judge
        raise ExperimentError(f"{where}: the machine {workload.machine} did not boot: {error!r}")
    world = live.world
    world.journal.close()
    events = world.journal.events
    verdicts = {name: _judge(name, machine, events, error) for name in experiment.checkers} if not interrupted else {}
    run_steps = live.steps
    result = RunResult(
        experiment=experiment,
        seed=seed,
        out_dir=out,
        verdicts=verdicts,
        journal_sha256=world.fingerprint,
        simulated_seconds=world.now,
        wall_seconds=wall,
        metrics=_metrics(run_steps, len(steps), world, error),
        phases=_phases(events),
        faults=_faults(events),
        interrupted=interrupted,
    )
    write_result(result, events)
    return result


def _replay_class(machine_class: type[ClusterMachine], spec: ClusterSpec | None, journal_path: Path, total: int, progress: Any) -> tuple[type[ClusterMachine], list[ClusterMachine]]:
    """A subclass that sets the spec and the journal file, keeps the instance, captures
    the teardown's convergence verdict and reports progress — nothing that journals."""
    machines: list[ClusterMachine] = []
    attributes: dict[str, Any] = {"__module__": machine_class.__module__, "__qualname__": machine_class.__qualname__}
    if spec is not None:
        attributes["spec"] = spec
    if "journal_path" in _declared(ClusterMachine):
        attributes["journal_path"] = journal_path
    else:  # until ClusterMachine.journal_path exists: a boot that opens the journal file

        def boot(self: ClusterMachine, seed: int) -> None:
            self.live = LiveCluster(World(seed, journal=Journal(journal_path)), self.spec, boot_within_s=self.boot_within_s)
            self.live.steps.append(("boot", {"seed": seed}))
            self.live.open()

        attributes["boot"] = boot

    def __init__(self: ClusterMachine) -> None:
        machine_class.__init__(self)
        self.chaoskube_convergence = None
        machines.append(self)

    async def _converge(self: ClusterMachine) -> Verdict:
        verdict = await machine_class._converge(self)
        self.chaoskube_convergence = verdict
        return verdict

    def _check_all_invariants(self: ClusterMachine) -> None:
        machine_class._check_all_invariants(self)
        if progress is not None and self.live is not None:
            done = len(self.live.steps)
            progress(self.world.now, self.world.now * total / max(done, 1))

    attributes.update(__init__=__init__, _converge=_converge, _check_all_invariants=_check_all_invariants)
    return type(machine_class.__name__, (machine_class,), attributes), machines


def _declared(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ for name in (*vars(klass), *getattr(klass, "__annotations__", {}))}


def _judge(name: str, machine: ClusterMachine, events: list[dict[str, Any]], error: BaseException | None) -> Verdict:
    if name == "raft-safety":
        return run_checker(check_raft_safety, events)
    if name == "leader-election":
        return run_checker(check_leader_election, events, overlap_tolerance_s=machine.leader_overlap_tolerance_s)
    if name == "pdb-eviction":
        return run_checker(check_pdb_eviction, events)
    if name == "scheduling":
        return run_checker(check_scheduling, events)
    steps = machine.live.steps if machine.live is not None else []
    stopped = f"step {max(len(steps) - 1, 0)} ({steps[-1][0] if steps else 'boot'})"
    if name == "convergence":
        verdict = getattr(machine, "chaoskube_convergence", None)
        if verdict is not None:
            return verdict
        return Verdict(None, f"not judged: the replay stopped at {stopped} before the liveness phase: {_one_line(error)}")
    if name == "eventually":
        verdict = getattr(machine, "eventually_verdict", None)
        if verdict is not None:
            return verdict
        return Verdict(None, f"not judged: the replay stopped at {stopped} before the @eventually properties were: {_one_line(error)}")
    assert name == STEPS_CHECKER, name
    if error is None:
        return Verdict(True, f"all {len(steps) - 1} steps ran and every invariant of the machine held")
    if getattr(error, "name", None) in CHECKER_OF_VIOLATION and hasattr(error, "verdict"):
        return Verdict(True, f"no other failure: the replay stopped at {stopped} when {CHECKER_OF_VIOLATION[error.name]} failed")
    return Verdict(False, f"{stopped}: {_one_line(error)}", (f"{type(error).__name__}: {error}",))


def _one_line(error: BaseException | None) -> str:
    if error is None:
        return "no error"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _metrics(steps: list[tuple[str, dict[str, Any]]], planned: int, world: World, error: BaseException | None) -> dict[str, Any]:
    ran = [name for name, _ in steps]
    return {
        "steps_planned": planned - 1,
        "steps_run": len([name for name in ran[1:] if name != "teardown"]),
        "reached_teardown": "teardown" in ran,
        "journal_events": world.journal.count,
        "failure": _one_line(error) if error is not None else "",
    }


def _phases(events: list[dict[str, Any]]) -> dict[str, float]:
    """When each step began (``N. rule``), and the teardown's heal."""
    phases: dict[str, float] = {"0. boot": 0.0}
    for event in events:
        if event["type"] == "hypothesis-step":
            phases[f"{event['index'] - 1}. {event['step']}"] = round(event["t"], 6)
        elif event["type"] == "hypothesis-heal":
            phases["heal (teardown)"] = round(event["t"], 6)
    return phases


def _faults(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fault steps, in order, each healed by the next ``heal_all`` or the teardown's heal
    (a pause also ends by itself after its ``duration_s``)."""
    faults: list[dict[str, Any]] = []
    open_faults: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for event in events:
        kind = event["type"]
        if kind == "hypothesis-step":
            current = None
            step, args = event["step"], dict(event.get("args") or {})
            if step in FAULT_STEPS:
                target = str(args.get("who", f"node[{args.get('index', 0)}]"))
                current = {"id": len(faults) + 1, "kind": step, "target": target, "targets": [], "params": args, "applied_at": event["t"], "healed_at": None}
                faults.append(current)
                open_faults.append(current)
            elif step in HEAL_STEPS:
                for fault in open_faults:
                    fault["healed_at"] = event["t"]
                open_faults = []
        elif kind == "hypothesis-fault" and current is not None and event.get("process"):
            current["targets"].append(str(event["process"]))
        elif kind == "hypothesis-heal":
            for fault in open_faults:
                fault["healed_at"] = event["t"]
            open_faults = []
    return faults

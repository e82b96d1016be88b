"""Coverage-guided campaigns: ``chaoskube explore NAME --seeds A..B --guided``.

A plain campaign runs the experiment's own faults once per seed. A guided one spends the
same budget (one run per seed of ``--seeds``, each on its own run seed) like a
coverage-guided fuzzer (AFL's and libFuzzer's corpus loop):

1. **Generation 0** runs the first :data:`GENERATION` seeds plain.
2. Every finished run yields its coverage (coverage.py): the journal's
   ``(component, event kind, transition)`` tuples, and with ``--line-coverage`` the Python
   lines of ``chaoskube/`` it ran. A run that reached a tuple (or line) no earlier run of
   the campaign reached joins the **corpus**, with how much it reached first.
3. **Each next generation** takes the next :data:`GENERATION` seeds. For each seed a
   generator keyed by (experiment, seed) -- nothing else -- picks a parent from the corpus
   (weighted by the new coverage it brought) and stacks 1 to 3 mutations on its faults
   (mutation.py: faults moved, stretched, retargeted, added, dropped; the nemesis's fields);
   one seed in :data:`PLAIN_EVERY` runs the experiment's own faults instead (fresh
   randomness beside the mutants). Each mutant's faults are written to
   ``OUT/mutants/NAME-seedN.yaml`` with its lineage as comments, and the run's replay
   command names it (``chaoskube run NAME --seed N --faults OUT/mutants/NAME-seedN.yaml``);
   its ``result.json`` holds the mutated schedule (``spec``) and the replay.

Deterministic: a generation is planned only from the records of the generations before it,
taken in plan (seed) order once the whole generation has finished -- never from the order
in which runs finish -- so the same seeds and flags give the same mutants, journals and
summary with any ``--jobs``, forked or not (``tests/experiments/test_guided.py`` runs one
twice and compares). A mutant shares the boot of its experiment (its cluster, workload
and phases are the experiment's): each generation boots each experiment once and forks
its runs (forking.py). ``--fail-fast`` stops at the end of the generation with the first
finding. Not with ``--dask``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskube.experiments.campaign import CampaignResult, Job, run_campaign, take_coverage
from chaoskube.experiments.model import Experiment
from chaoskube.experiments.mutation import MutationContext, context_for, faults_yaml, mutate

#: Runs per generation (per experiment): fixed, so the plan does not depend on --jobs.
GENERATION = 8
#: One seed in this many runs the experiment's own faults (after generation 0).
PLAIN_EVERY = 4


@dataclass
class CorpusEntry:
    seed: int  # the run that reached new coverage
    experiment: Experiment  # what it ran (the experiment, or a mutant of it)
    new: int  # how many tuples (and lines) it reached first


@dataclass
class Lineage:
    """How a guided run was made (record ``guided``)."""

    generation: int
    parent: int | None = None  # the corpus run it mutates; None: the experiment's own faults
    mutations: tuple[str, ...] = ()
    faults_file: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "parent": self.parent, "mutations": list(self.mutations), "faults_file": self.faults_file}


@dataclass
class ExperimentState:
    """One experiment's side of a guided campaign."""

    name: str
    template: Experiment
    context: MutationContext
    corpus: list[CorpusEntry] = field(default_factory=list)
    tuples: set[str] = field(default_factory=set)
    lines: set[str] = field(default_factory=set)
    curve: list[int] = field(default_factory=list)  # distinct tuples after each run, in seed order
    lines_curve: list[int] = field(default_factory=list)


def mutation_rng(name: str, seed: int) -> random.Random:
    """The generator of one guided run's choices: a function of (experiment, seed) only."""
    digest = hashlib.sha256(f"chaoskube/guided/{name}/{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def plan_mutant(state: ExperimentState, seed: int, generation: int) -> tuple[Experiment | None, Lineage]:
    """What the run of ``seed`` in ``generation`` runs: None (the experiment's own faults)
    or a mutant of a corpus entry, and its lineage. Pure: a function of the corpus and
    (experiment, seed)."""
    rng = mutation_rng(state.name, seed)
    if generation == 0 or not state.corpus or rng.randrange(PLAIN_EVERY) == 0:
        return None, Lineage(generation)
    parent = rng.choices(state.corpus, weights=[max(1, entry.new) for entry in state.corpus])[0]
    mutant = mutate(parent.experiment, rng, state.context)
    if not mutant.steps:
        return None, Lineage(generation)
    return mutant.experiment, Lineage(generation, parent.seed, mutant.steps)


def faults_path(out: Path, name: str, seed: int) -> Path:
    """Where a guided campaign writes the faults of ``name``'s run of ``seed``."""
    return (out / "mutants" / f"{name}-seed{seed}.yaml").resolve()


def write_faults_file(job: Job, experiment: Experiment, lineage: Lineage) -> None:
    """Write ``job``'s faults file (``job.faults``): the mutant's faults, its lineage and
    the run's replay command as comments."""
    assert job.faults is not None
    path = Path(job.faults)
    path.parent.mkdir(parents=True, exist_ok=True)
    comments = [
        f"chaoskube explore --guided: the faults of {job.name} seed {job.seed} (generation {lineage.generation}),",
        f"mutations of the faults of seed {lineage.parent}'s run:",
        *[f"  {step}" for step in lineage.mutations],
        f"replay: {job.replay}",
    ]
    path.write_text(faults_yaml(experiment, comments))


def run_guided_campaign(
    jobs: Sequence[Job],
    workers: int,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    stop_when: Callable[[dict[str, Any]], bool] | None = None,
    *,
    fork: bool = True,
    generation_size: int = GENERATION,
) -> tuple[CampaignResult, dict[str, ExperimentState]]:
    """Run the plain plan ``jobs`` (one per experiment and seed, as campaign.plan_jobs
    makes it) as a guided campaign (module doc): the same seeds and directories, the
    faults of each job after generation 0 chosen by the corpus loop. Returns the result,
    as run_campaign's, and each experiment's state (corpus and coverage curves)."""
    import time

    assert generation_size >= 1, generation_size
    started = time.perf_counter()
    by_experiment: dict[str, list[Job]] = {}
    for job in jobs:
        by_experiment.setdefault(job.name, []).append(job)
    states = {name: ExperimentState(name, group[0].experiment(), context_for(group[0].experiment())) for name, group in by_experiment.items()}
    result = CampaignResult(records=[], planned=len(jobs))
    sets: dict[str, dict[str, Any] | None] = {}
    lineages: dict[str, Lineage] = {}
    plans: dict[str, Experiment] = {}

    def arrived(record: dict[str, Any]) -> None:
        sets[record["out_dir"]] = take_coverage(record)
        if on_record is not None:
            on_record(record)

    width = max(len(group) for group in by_experiment.values())
    try:
        _generations(by_experiment, states, result, workers, arrived, stop_when, fork, generation_size, width, sets, lineages, plans)
    except KeyboardInterrupt:  # between two generations (run_campaign handles it inside one)
        result.interrupted = True
    result.records.sort(key=lambda record: (record["experiment"], record["seed"]))
    result.not_started = result.planned - len(result.records) - len(result.abandoned)
    result.wall_seconds = time.perf_counter() - started
    return result, states


def _generations(
    by_experiment: dict[str, list[Job]],
    states: dict[str, ExperimentState],
    result: CampaignResult,
    workers: int,
    arrived: Callable[[dict[str, Any]], None],
    stop_when: Callable[[dict[str, Any]], bool] | None,
    fork: bool,
    generation_size: int,
    width: int,
    sets: dict[str, dict[str, Any] | None],
    lineages: dict[str, Lineage],
    plans: dict[str, Experiment],
) -> None:
    """The generations of :func:`run_guided_campaign`, filling ``result`` as they finish."""
    import dataclasses

    for generation, first in enumerate(range(0, width, generation_size)):
        planned: list[Job] = []
        for name, group in by_experiment.items():
            state = states[name]
            for job in group[first : first + generation_size]:
                mutant, lineage = plan_mutant(state, job.seed, generation)
                if mutant is not None:
                    lineage.faults_file = str(faults_path(Path(job.out_dir).parent, name, job.seed))
                    job = dataclasses.replace(job, faults=lineage.faults_file)
                    write_faults_file(job, mutant, lineage)
                    plans[job.out_dir] = mutant
                lineages[job.out_dir] = lineage
                planned.append(job)
        part = run_campaign(planned, min(workers, len(planned)), on_record=arrived, stop_when=stop_when, fork=fork)
        result.records += part.records
        result.abandoned += part.abandoned
        # Learn in plan order (experiment, seed), never in completion order.
        for record in sorted(part.records, key=lambda record: (record["experiment"], record["seed"])):
            state = states[record["experiment"]]
            lineage = lineages[record["out_dir"]]
            found = sets.get(record["out_dir"])
            tuples = set(found["tuples"]) if found else set()
            lines = set(found["lines"] or ()) if found else set()
            new_tuples, new_lines = len(tuples - state.tuples), len(lines - state.lines)
            state.tuples |= tuples
            state.lines |= lines
            state.curve.append(len(state.tuples))
            state.lines_curve.append(len(state.lines))
            if found and not record.get("error") and (new_tuples or new_lines):
                state.corpus.append(CorpusEntry(record["seed"], plans.get(record["out_dir"], state.template), new_tuples + new_lines))
            record["guided"] = lineage.to_json() | {"new_tuples": new_tuples, "new_lines": new_lines if found and found["lines"] is not None else None, "corpus": bool(found and (new_tuples or new_lines) and not record.get("error"))}
        if part.interrupted:
            result.interrupted = True
            break
        if part.stopped_by is not None:
            result.stopped_by = part.stopped_by
            break


def coverage_summary(states: dict[str, ExperimentState], *, line_coverage: bool) -> dict[str, Any]:
    """The summary's ``coverage`` of a guided campaign, per experiment: the curves
    (distinct tuples, and lines, after each run in seed order), the totals and the corpus."""
    return {
        name: {
            "mode": "guided",
            "runs": len(state.curve),
            "tuples": len(state.tuples),
            "curve": state.curve,
            "lines": len(state.lines) if line_coverage else None,
            "lines_curve": state.lines_curve if line_coverage else None,
            "corpus": [{"seed": entry.seed, "new": entry.new} for entry in state.corpus],
        }
        for name, state in sorted(states.items())
    }


def plain_coverage_summary(records: Sequence[dict[str, Any]], sets: dict[str, dict[str, Any] | None], *, line_coverage: bool) -> dict[str, Any]:
    """The summary's ``coverage`` of a plain campaign: as :func:`coverage_summary`, from
    each run's coverage sets (campaign.take_coverage), runs in seed order."""
    out: dict[str, Any] = {}
    for name in sorted({record["experiment"] for record in records}):
        tuples: set[str] = set()
        lines: set[str] = set()
        curve, lines_curve = [], []
        for record in sorted((record for record in records if record["experiment"] == name), key=lambda record: record["seed"]):
            found = sets.get(record["out_dir"]) or {}
            tuples.update(found.get("tuples") or ())
            lines.update(found.get("lines") or ())
            curve.append(len(tuples))
            lines_curve.append(len(lines))
        out[name] = {"mode": "plain", "runs": len(curve), "tuples": len(tuples), "curve": curve, "lines": len(lines) if line_coverage else None, "lines_curve": lines_curve if line_coverage else None, "corpus": []}
    return out

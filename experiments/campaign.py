"""Campaigns over seeds (``chaoskube explore``) and replays of one run (``chaoskube replay``).

Contract of a campaign:

- :func:`plan_jobs` makes one job per (experiment, seed); each job is an ordinary run into
  ``OUT/<experiment>-seed<N>/`` with every file ``chaoskube run`` writes. Runs are
  independent and deterministic: a job's journal is byte-identical to
  ``chaoskube run NAME --seed N``'s, whichever worker ran it and in what order (the
  runtime seeds everything per run; a test compares the fingerprints).
- A job may carry gallery variants (``--broken NAME``, chaoskube/gallery.py) and a
  manifests directory (``--manifests DIR``); the worker applies them with
  ``model.with_broken`` / ``model.with_manifests`` and the job's replay command names them
  again. A run with broken variants is judged differently: its expected outcome is
  irrelevant, any checker that answers false is a *finding* (``record["findings"]``), and
  the record counts as "as expected" only when no checker failed (the broken component
  went unnoticed); so ``explore --broken`` exits 1, and ``--fail-fast`` stops, on a finding.
- :func:`run_campaign` runs the jobs in ``workers`` processes of a
  :class:`~chaoskube.experiments.forking.ForkPool`: the jobs of one experiment (same
  variants, manifests and boot seed: ``Job.boot_key``) share one boot, after which the
  booted process is forked once per seed (docs/campaigns.md); ``fork=False``
  (``explore --no-fork``) runs each job whole. Booters are started by ``forkserver``
  (never forked from this process, which may hold threads), ignore SIGINT and run in
  their own process group, so a Ctrl-C reaches only this process, which then starts no
  more jobs, kills the booters and their children (the runs that were going are
  *abandoned*: their directories keep a partial journal and no result) and keeps every
  finished result. With ``stop_when`` (``explore --fail-fast``), the first record it
  accepts stops the campaign: no job starts after it, the jobs already running finish
  and are kept (one may be a lower seed that fails too), and the result names the
  record that stopped it. ``explore --dask ADDRESS`` hands the same groups to a Dask
  cluster instead (dask_campaign.py).
- Records come back in completion order (for a progress bar) and are kept sorted by
  (experiment, seed), so the summary does not depend on scheduling.
- :func:`summarize` aggregates per experiment and per fault kind: verdict counts, runs as
  expected, availability lost (``report_html.availability_figures``: ``lost_s`` and
  ``stalled_s``), the availability inside each fault's window, and the metrics the runner
  records (min / mean / max over seeds). Per fault kind (every fault of a run's fault
  table, the random nemesis's included) it also gives, over the runs that had one, the
  time the steady state took to return after heal (``recovery_s``), the convergence
  checker's time to converge, and the runs with a violation (a checker answering false).
  Per experiment run with broken variants it lists the findings: for each checker, the
  seeds it failed on, the variant's ``caught_by`` checker first. :func:`write_summary` writes ``summary.md``,
  ``summary.json``, ``summary.html`` and ``junit.xml`` (one testsuite per run) in OUT.

Non-guarantees: wall times differ between campaigns; a run's process that dies (killed by
the OS) fails its job with an error record; a booter that dies fails every job of its
group that had not finished.

Contract of a replay (:func:`replay_run`): it reads ``result.json`` of a run directory
(experiment file or name from the recorded replay command, else the experiment name; the
seed and the boot seed; the gallery variants of its ``broken`` list; ``--manifests DIR`` if the replay
command names one), runs it again into a temporary directory and compares the journal sha256 with the
recorded one. The temporary directory is removed on a match and kept on a mismatch (its
path and the first journal line that differs are returned). A directory without a readable
``result.json`` of a simulated run raises :class:`NotARun`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chaoskube.experiments.model import Experiment
from chaoskube.experiments.signals import stopping_now
from chaoskube.sim.randomness import MAX_SEED
from chaoskube.experiments.report_html import (
    CSS,
    availability_figures,
    bucket_width_s,
    esc,
    rate_buckets,
    read_timeline_events,
)

MAX_SEEDS = 10_000  # per campaign and experiment: a typo like 1..1000000 is refused, not queued
MAX_DIFF_LINES = 10_000_000  # replay: how far to look for the first differing journal line
_SEEDS = re.compile(r"^\s*([0-9]+)\s*(?:\.\.\s*([0-9]+)\s*)?$")


class SeedsError(ValueError):
    """A bad ``--seeds`` value; ``str(error)`` is one line."""


class NotARun(Exception):
    """A directory that does not hold a replayable run; ``str(error)`` is one line."""


# -- planning -------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """``A..B`` (both included), ``N``, or a comma-separated list of them (``1..5,9``);
    sorted, without repeats."""
    seeds: set[int] = set()
    for part in text.split(","):
        match = _SEEDS.match(part)
        if match is None:
            raise SeedsError(f"--seeds {text!r}: expected A..B (e.g. 1..20), N, or a comma-separated list of them")
        if any(len(group) > 20 for group in match.groups() if group):
            raise SeedsError(f"--seeds {text!r}: a seed is between 0 and 2**64 - 1")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last > MAX_SEED:
            raise SeedsError(f"--seeds {text!r}: {last} is above the largest seed, 2**64 - 1 ({MAX_SEED})")
        if last < first:
            raise SeedsError(f"--seeds {text!r}: the range {first}..{last} is empty (write the lower seed first)")
        if last - first + 1 + len(seeds) > MAX_SEEDS:
            raise SeedsError(f"--seeds {text!r}: more than {MAX_SEEDS} seeds; split the campaign")
        seeds.update(range(first, last + 1))
    return sorted(seeds)


@dataclass(frozen=True, slots=True)
class Job:
    target: str  # the catalogue name or file path, as the user gave it
    name: str
    seed: int
    out_dir: str
    broken: tuple[str, ...] = ()  # --broken NAME: gallery variants added to the experiment
    manifests: str | None = None  # --manifests DIR: the workload replaced by these manifests
    boot_seed: int | None = None  # --boot-seed N: None is the experiment's own
    max_wall_s: float | None = None  # --max-wall: the watchdog ends the run after this much wall-clock time
    skip_unsupported: bool = False  # --skip-unsupported
    buggify: bool | None = None  # --buggify / --no-buggify: None keeps the experiment's
    #: A guided campaign's mutant (guided.py): the faults file whose schedule and nemesis
    #: replace the experiment's (``run --faults FILE``). Not part of the boot: a mutant
    #: shares the boot of its experiment.
    faults: str | None = None
    line_coverage: bool = False  # --line-coverage: measure the run's Python lines (coverage.py)

    @property
    def replay(self) -> str:
        options = ["--boot-seed", str(self.boot_seed)] if self.boot_seed is not None else []
        options += [item for name in self.broken for item in ("--broken", name)]
        if self.manifests is not None:
            options += ["--manifests", self.manifests]
        if self.skip_unsupported:
            options.append("--skip-unsupported")
        if self.buggify is not None:
            options.append("--buggify" if self.buggify else "--no-buggify")
        if self.faults is not None:
            options += ["--faults", self.faults]
        return shlex.join(["chaoskube", "run", self.target, "--seed", str(self.seed), *options])

    @property
    def boot_key(self) -> tuple[Any, ...]:
        """Jobs with the same key share one boot (forking.py)."""
        return (self.target, self.name, self.broken, self.manifests, self.skip_unsupported, self.boot_seed, self.max_wall_s, self.buggify)

    @property
    def reference_cache(self) -> Path:
        """Where the differential checker's fault-free runs are shared: the campaign
        directory's ``references/`` (every job of a campaign has the same parent)."""
        return Path(self.out_dir).parent / "references"

    def experiment(self) -> Experiment:
        """The experiment this job runs: the target, with its variants and manifests."""
        from chaoskube.experiments import registry
        from chaoskube.experiments.registry import with_broken, with_manifests, with_skip_unsupported

        experiment = registry.find(self.target)
        if self.manifests is not None:
            experiment = with_manifests(experiment, self.manifests, skip_unsupported=self.skip_unsupported)
        elif self.skip_unsupported:
            experiment = with_skip_unsupported(experiment)
        if self.buggify is not None:
            from chaoskube.experiments.model import with_buggify

            experiment = with_buggify(experiment, self.buggify)
        if self.faults is not None:
            from chaoskube.experiments.mutation import with_faults

            experiment = with_faults(experiment, self.faults)
        return with_broken(experiment, self.broken) if self.broken else experiment


def plan_jobs(
    experiments: Sequence[tuple[str, Experiment]],
    seeds: Sequence[int],
    out: Path,
    *,
    broken: Sequence[str] = (),
    manifests: Path | None = None,
    skip_unsupported: bool = False,
    boot_seed: int | str | None = None,
    max_wall_s: float | None = None,
    buggify: bool | None = None,
) -> list[Job]:
    """One job per (experiment, seed), experiments in the given order, seeds ascending;
    each with the gallery variants ``broken``, the manifests directory ``manifests`` and
    the boot seed ``boot_seed`` (None: each experiment's own; ``"seed"``: each job's run seed,
    so no two jobs share a boot)."""
    assert seeds, "no seeds"
    names = [experiment.name for _, experiment in experiments]
    assert len(names) == len(set(names)), f"an experiment is listed twice: {names}"
    directory = str(manifests.resolve()) if manifests is not None else None
    return [
        Job(target, experiment.name, seed, str(out / f"{experiment.name}-seed{seed}"), tuple(dict.fromkeys(broken)), directory, seed if boot_seed == "seed" else boot_seed, max_wall_s, skip_unsupported, buggify)
        for target, experiment in experiments
        for seed in seeds
    ]


# -- one job, in a worker process ------------------------------------------------------------


def run_job(job: Job) -> dict[str, Any]:
    """Run one job and describe it as a plain record (picklable, JSON-ready). A run that
    cannot start or crashes gives a record with ``error`` instead of raising."""
    from chaoskube.experiments.runner import run_experiment

    started = time.perf_counter()
    lines = None
    try:
        experiment = job.experiment()
        if job.line_coverage:  # run whole: measured from the start (a forked run: from its fork)
            from chaoskube.experiments.coverage import LineCoverage

            lines = LineCoverage()
            lines.start()
        try:
            result = run_experiment(experiment, job.seed, job.out_dir, boot_seed=job.boot_seed, reference_cache=job.reference_cache, max_wall_s=job.max_wall_s)
        finally:
            measured = lines.stop() if lines is not None else None
    except Exception as error:  # noqa: BLE001 - one broken run must not end the campaign
        return _error_record(job, f"{type(error).__name__}: {error}") | {"job_seconds": round(time.perf_counter() - started, 3)}
    return job_record(job, time.perf_counter() - started, result, measured)


def job_record(job: Job, job_seconds: float, result: Any, lines: frozenset[str] | None = None) -> dict[str, Any]:
    """The record of a finished job (run whole, or forked after a shared boot): its
    result, availability and fault effects; ``job_seconds`` is the run (after the boot,
    when forked), its checkers and reports. It carries the run's coverage signal
    (coverage.py) for the campaign to take (:func:`take_coverage`): the journal's tuples,
    and ``lines`` (the Python lines run, with ``--line-coverage``)."""
    from chaoskube.experiments.coverage import iter_journal, journal_tuples, tuple_text
    from chaoskube.experiments.report_html import TIMELINE_TYPES

    events = list(iter_journal(Path(job.out_dir) / "journal.jsonl"))  # read once, for both
    timeline = [event for event in events if event.get("type") in TIMELINE_TYPES]
    record = record_of_payload(result.to_json(), job.out_dir, target=job.target, replay=job.replay, events=timeline)
    record["job_seconds"] = round(job_seconds, 3)
    tuples, dropped = journal_tuples(events)
    record[COVERAGE_KEY] = {"tuples": sorted(tuple_text(item) for item in tuples), "dropped": dropped, "lines": sorted(lines) if lines is not None else None}
    return record


#: The key of a record that carries its run's coverage sets until the campaign takes them
#: (:func:`take_coverage`): they are large and never written to a summary.
COVERAGE_KEY = "_coverage"


def take_coverage(record: dict[str, Any]) -> dict[str, Any] | None:
    """Remove and return the coverage sets a record carries (None for an error record):
    ``tuples`` (journal tuples as text), ``dropped``, ``lines`` (None without
    ``--line-coverage``). The record keeps the counts, in ``coverage``."""
    found = record.pop(COVERAGE_KEY, None)
    if found is not None:
        record["coverage"] = {"tuples": len(found["tuples"]), "lines": None if found["lines"] is None else len(found["lines"])}
    return found


def record_of_payload(payload: Mapping[str, Any], out_dir: str, *, target: str, replay: str, events: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A run's campaign record from its ``result.json`` payload and its journal (in
    ``out_dir``; ``events``: its timeline events, when the caller read them already): what
    :func:`job_record` returns, and what ``chaoskube report`` builds from run directories
    made by ``run`` or ``explore``."""
    events = read_timeline_events(Path(out_dir) / "journal.jsonl") if events is None else events
    simulated_seconds = float(payload.get("simulated_seconds", payload.get("real_seconds", 0.0)))
    faults = list(payload.get("faults") or [])
    availability, effects = run_effects(events, faults, simulated_seconds)
    broken = list(payload.get("broken") or [])
    verdicts = payload.get("verdicts") or {}
    failing = sorted(name for name, verdict in verdicts.items() if verdict["valid"] == "false")
    unknown = any(verdict["valid"] == "unknown" for verdict in verdicts.values())
    interrupted = bool(payload.get("interrupted"))
    inconclusive = bool(payload.get("skipped_faults")) and not interrupted
    findings = failing if broken else []
    return {
        "experiment": payload["experiment"],
        "target": target,
        "seed": payload["seed"],
        "boot_seed": payload.get("boot_seed"),
        "out_dir": str(out_dir),
        "replay": replay,
        # With broken variants the expected outcome is irrelevant: a failing checker is a
        # finding, and only a run where every checker passed (the bug went unnoticed) and
        # none was unknown counts as "as expected".
        "as_expected": (not findings and not unknown and not interrupted and not inconclusive) if broken else bool(payload.get("as_expected")),
        "inconclusive": inconclusive,
        "checkers_as_expected": bool(payload.get("checkers_as_expected", payload.get("as_expected"))) if not broken else (not findings and not unknown and not interrupted),
        "skipped_faults": list(payload.get("skipped_faults") or []),
        "dropped_checkers": dict(payload.get("dropped_checkers") or {}),
        "broken": broken,
        "caught_by": _caught_by(broken),
        "findings": findings,
        "interrupted": interrupted,
        "error": None,
        "expected": payload.get("expected") or {},
        "verdicts": {name: {key: verdict.get(key) for key in ("valid", "reason", "details")} for name, verdict in verdicts.items()},
        "journal_sha256": payload.get("journal_sha256", ""),
        "chaoskube_version": payload.get("chaoskube_version", ""),
        "mode": payload.get("mode", "simulated"),
        "simulated_seconds": round(simulated_seconds, 6),
        "wall_seconds": round(float(payload.get("wall_seconds", 0.0)), 3),
        "metrics": payload.get("metrics") or {},
        "faults": [{key: fault.get(key) for key in ("id", "kind", "target", "targets", "applied_at", "healed_at")} for fault in faults],
        "availability": availability,
        "fault_effects": effects,
        "job_seconds": round(float(payload.get("wall_seconds", 0.0)), 3),  # job_record: the job's own time
    }


@dataclass(frozen=True)
class BootGroup:
    """The jobs that share one boot (``Job.boot_key``), as forking.Group: booted once in a
    booter process, each job forked from it at the end of the boot."""

    template: Job

    def forkable(self) -> bool:
        from chaoskube.experiments.registry import SYSTEMS

        system = SYSTEMS[self.template.experiment().system]
        return not getattr(system, "replays_steps", False) and not getattr(system, "real_time", False)

    def boot(self, scratch: Path, fork: Callable[..., None]) -> Any:
        from chaoskube import gallery
        from chaoskube.experiments.registry import SYSTEMS
        from chaoskube.experiments.simulated import run_simulated

        experiment = self.template.experiment()
        with gallery.applied(experiment.broken):
            result = run_simulated(
                experiment, SYSTEMS[experiment.system], self.template.seed, scratch, boot_seed=self.template.boot_seed, fork=fork,
                reference_cache=self.template.reference_cache, max_wall_s=self.template.max_wall_s,
            )
        return experiment, result

    def prepare(self, job: Job, target: Any) -> None:
        """In a child, right after the fork (forking.py): a mutant's experiment (its faults
        file, on the booted experiment: the same cluster, workload, phases and variants)
        and, with ``--line-coverage``, the line tracer, started here so the shared boot is
        not counted."""
        if job.faults is not None:
            booted, mutant = self.template.experiment(), job.experiment()
            assert (mutant.cluster, mutant.workload, mutant.phases, mutant.broken) == (booted.cluster, booted.workload, booted.phases, booted.broken), job
            target.experiment = mutant
        if job.line_coverage:
            from chaoskube.experiments.coverage import LineCoverage

            global _CHILD_LINES  # this child's own, once: a BootGroup is frozen and shared
            _CHILD_LINES = LineCoverage()
            _CHILD_LINES.start()

    def finish(self, job: Job, outcome: Any, seconds: float) -> dict[str, Any]:
        experiment, result = outcome
        assert result.seed == job.seed and str(result.out_dir) == job.out_dir, (result.seed, result.out_dir, job)
        lines = _CHILD_LINES
        return job_record(job, seconds, result, lines.stop() if lines is not None else None)


    def run(self, job: Job) -> dict[str, Any]:
        return run_job(job)

    def error(self, job: Job, message: str) -> dict[str, Any]:
        return _error_record(job, message)


#: In a forked child with ``--line-coverage``: its tracer (BootGroup.prepare).
_CHILD_LINES: Any = None


def boot_groups(jobs: Sequence[Job]) -> list[tuple[BootGroup, list[Job]]]:
    """The jobs grouped by boot (``Job.boot_key``), groups and jobs in plan order."""
    groups: dict[tuple[Any, ...], list[Job]] = {}
    for job in jobs:
        groups.setdefault(job.boot_key, []).append(job)
    return [(BootGroup(members[0]), members) for members in groups.values()]


def _caught_by(broken: Sequence[str]) -> list[str]:
    from chaoskube import gallery

    return list(dict.fromkeys(gallery.VARIANTS[name].caught_by for name in broken if name in gallery.VARIANTS))


def _error_record(job: Job, error: str) -> dict[str, Any]:
    return {
        "experiment": job.name, "target": job.target, "seed": job.seed, "out_dir": job.out_dir, "replay": job.replay,
        "as_expected": False, "inconclusive": False, "checkers_as_expected": False, "skipped_faults": [], "broken": list(job.broken), "caught_by": _caught_by(job.broken), "findings": [], "interrupted": False, "error": error, "expected": {}, "verdicts": {}, "journal_sha256": "",
        "chaoskube_version": "", "mode": "simulated", "simulated_seconds": 0.0, "wall_seconds": 0.0, "metrics": {},
        "faults": [], "availability": None, "fault_effects": [], "job_seconds": 0.0,
    }  # fmt: skip


# What "availability" measures, first found wins: the clients' operations (etcd and API
# clients), else the service traffic probe, else the mesh system's probes.
AVAILABILITY_SOURCES = (("client-op", "api-op"), ("traffic",), ("probe",))


def run_effects(events: Sequence[Mapping[str, Any]], faults: Sequence[Mapping[str, Any]], end_s: float) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The run's availability figures, and per applied fault what happened inside its
    window (apply to heal, or to the end): the availability of the buckets it touched and
    the number of leader changes (etcd elections and Lease take-overs) that began in it."""
    end_s = max(end_s, max((event["t"] for event in events), default=0.0)) or 1.0
    bucket_s = bucket_width_s(end_s)
    buckets, source = [], None
    for types in AVAILABILITY_SOURCES:
        buckets = rate_buckets(events, types, bucket_s, end_s)
        if buckets:
            source = "+".join(types)
            break
    availability = availability_figures(buckets, bucket_s) | {"source": source} if buckets else None
    changes = [event["t"] for event in events if (event["type"] == "raft-role" and event.get("role") == "leader") or (event["type"] == "leader" and event.get("event") == "start")]
    effects = []
    for fault in faults:
        start = float(fault["applied_at"])
        stop = float(fault["healed_at"]) if fault.get("healed_at") is not None else end_s
        inside = [bucket for bucket in buckets if bucket.start_s + bucket_s > start and bucket.start_s < stop]
        figures = availability_figures(inside, bucket_s) if inside else None
        effects.append(
            {
                "id": fault["id"],
                "kind": fault["kind"],
                "window_s": round(stop - start, 6),
                "ok_fraction": figures["ok_fraction"] if figures else None,
                "lost_s": figures["lost_s"] if figures else None,
                "stalled_s": figures["stalled_s"] if figures else None,
                "leader_changes": sum(1 for t in changes if start <= t < stop),
            }
        )
    return availability, effects


# -- many jobs, in parallel ------------------------------------------------------------------


@dataclass
class CampaignResult:
    records: list[dict[str, Any]]
    planned: int
    interrupted: bool = False
    abandoned: list[Job] = field(default_factory=list)  # handed to a worker, stopped unfinished
    wall_seconds: float = 0.0
    stopped_by: dict[str, Any] | None = None  # --fail-fast: the record that stopped the campaign
    not_started: int = 0  # jobs never handed to a worker (stopped early or interrupted)

    @property
    def all_as_expected(self) -> bool:
        return not self.interrupted and self.stopped_by is None and len(self.records) == self.planned and all(record["as_expected"] for record in self.records)


def run_campaign(
    jobs: Sequence[Job],
    workers: int,
    on_record: Callable[[dict[str, Any]], None] | None = None,
    stop_when: Callable[[dict[str, Any]], bool] | None = None,
    *,
    fork: bool = True,
    pool: Any = None,
) -> CampaignResult:
    """Run ``jobs`` in ``workers`` processes; ``on_record`` sees each record as it arrives.
    The first record ``stop_when`` accepts stops the campaign (``--fail-fast``). Ctrl-C
    (KeyboardInterrupt in this process) ends the campaign early, as the module docstring
    says, and returns what finished with ``interrupted=True``. ``fork=False`` runs every
    job whole (no shared boot); ``pool``: another engine with the interface of
    forking.ForkPool (``dask_campaign.DaskPool``)."""
    from chaoskube.experiments.forking import ForkPool

    assert workers >= 1, workers
    started = time.perf_counter()
    result = CampaignResult(records=[], planned=len(jobs))
    if not jobs:
        return result
    if pool is None:
        Path(jobs[0].out_dir).parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".boot-", dir=Path(jobs[0].out_dir).parent))
        pool = ForkPool(boot_groups(jobs), min(workers, len(jobs)), scratch, fork=fork)
    try:
        while not pool.finished:
            for _, record in sorted(pool.wait(), key=lambda item: (item[0].name, item[0].seed)):
                result.records.append(record)
                if on_record is not None:
                    on_record(record)
                if result.stopped_by is None and stop_when is not None and stop_when(record):
                    result.stopped_by = record
                    pool.stop_starting()
        result.not_started = pool.not_started
        if result.stopped_by is not None:  # jobs running beside it may have failed on a lower seed
            flagged = [record for record in result.records if stop_when is not None and stop_when(record)]
            result.stopped_by = min(flagged, key=lambda record: (record["seed"], record["experiment"]))
    except KeyboardInterrupt:
        result.interrupted = True
        stopping_now()  # a second Ctrl-C must not cut the stopping of the workers short
        finished = {record["out_dir"] for record in result.records}
        result.abandoned = [job for job in pool.abort() if job.out_dir not in finished]
        result.not_started = pool.not_started
    finally:
        pool.close()
    result.records.sort(key=lambda record: (record["experiment"], record["seed"]))
    result.wall_seconds = time.perf_counter() - started
    return result


# -- the summary -------------------------------------------------------------------------------


def _numbers(values: Iterable[Any]) -> dict[str, float] | None:
    numbers = [float(value) for value in values if isinstance(value, (int, float)) and not isinstance(value, bool)]
    if not numbers:
        return None
    return {"min": round(min(numbers), 6), "mean": round(statistics.fmean(numbers), 6), "max": round(max(numbers), 6), "n": len(numbers)}


def _verdict_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for record in records:
        for name, verdict in record["verdicts"].items():
            tally = counts.setdefault(name, {"pass": 0, "fail": 0, "unknown": 0})
            tally[{"true": "pass", "false": "fail"}.get(verdict["valid"], "unknown")] += 1
    return counts


def violation(record: Mapping[str, Any]) -> bool:
    """Whether a run found something (what ``explore --fail-fast`` stops on): an error (a
    crash of our own code), a checker that answered false where the experiment does not
    expect it to (``livelock`` included), or with ``--broken`` a finding. Not an
    inconclusive run (a fault that could not be applied), an unknown verdict, or an
    expected failure that did not show: those miss the expected outcome without a finding."""
    if record.get("error"):
        return True
    if record.get("broken"):
        return bool(record.get("findings"))
    expected = record.get("expected") or {}
    allowed = set(expected.get("failing", ())) | set(expected.get("may_fail", ()))
    return any(verdict["valid"] == "false" and name not in allowed for name, verdict in record["verdicts"].items())


def mutated(record: Mapping[str, Any]) -> bool:
    """Whether the run ran a mutant of its experiment's faults (``explore --guided``)."""
    return bool((record.get("guided") or {}).get("mutations"))


def _violated(record: Mapping[str, Any]) -> list[str]:
    """The checkers that answered false in a run."""
    return sorted(name for name, verdict in record["verdicts"].items() if verdict["valid"] == "false")


def _time_to_converge(record: Mapping[str, Any]) -> Any:
    verdict = record["verdicts"].get("convergence")
    return (verdict.get("details") or {}).get("time_to_converge_s") if verdict else None


def _kind_effects(kind: str, records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What faults of one kind did across ``records``: inside each fault's window, and in
    the runs that had one (time to recover and converge after heal, violations)."""
    with_kind = [record for record in records if any(effect["kind"] == kind for effect in record["fault_effects"])]
    effects = [effect for record in with_kind for effect in record["fault_effects"] if effect["kind"] == kind]
    violations: dict[str, int] = {}
    for record in with_kind:
        for name in _violated(record):
            violations[name] = violations.get(name, 0) + 1
    return {
        "kind": kind,
        "experiments": sorted({record["experiment"] for record in with_kind}),
        "runs": len(with_kind),
        "faults": len(effects),
        "runs_as_expected": sum(1 for record in with_kind if record["as_expected"]),
        "runs_with_violations": sum(1 for record in with_kind if _violated(record)),
        "violations": dict(sorted(violations.items())),  # checker -> runs it failed in
        "recovery_s": _numbers(record["metrics"].get("recovery_s") for record in with_kind),
        "time_to_converge_s": _numbers(_time_to_converge(record) for record in with_kind),
        "verdicts": _verdict_counts(with_kind),
        "window_s": _numbers(effect["window_s"] for effect in effects),
        "ok_fraction": _numbers(effect["ok_fraction"] for effect in effects),
        "lost_s": _numbers(effect["lost_s"] for effect in effects),
        "stalled_s": _numbers(effect["stalled_s"] for effect in effects),
        "leader_changes": _numbers(effect["leader_changes"] for effect in effects),
    }


def why_unexpected(record: Mapping[str, Any]) -> str:
    """One line: what made a run miss its expected outcome."""
    if record.get("error"):
        return f"error: {record['error']}"
    if record.get("interrupted"):
        return "interrupted"
    if record.get("inconclusive") and record.get("checkers_as_expected"):  # else the verdicts say more
        skipped = record.get("skipped_faults") or ["a fault"]
        return f"inconclusive: {len(skipped)} fault(s) not applied when they fell due, so nothing was tested there: {skipped[0]}"
    if record.get("broken"):
        caught_by = set(record.get("caught_by") or ())
        failed = sorted(record.get("findings") or (), key=lambda name: (name not in caught_by, name))
        found = [f"{name} failed{' (the variant' + chr(39) + 's caught_by checker)' if name in caught_by else ''}: {record['verdicts'][name]['reason']}" for name in failed]
        unknown = [f"{name} unknown: {verdict['reason']}" for name, verdict in record["verdicts"].items() if verdict["valid"] == "unknown"]
        return "; ".join([f"finding with --broken {', '.join(record['broken'])}: " + "; ".join(found)] if found else unknown) or "not as expected"
    expected = record.get("expected") or {}
    failing, may_fail = set(expected.get("failing", ())), set(expected.get("may_fail", ()))
    reasons = []
    for name, verdict in record["verdicts"].items():
        if verdict["valid"] == "unknown":
            reasons.append(f"{name} unknown: {verdict['reason']}")
        elif verdict["valid"] == "false" and name not in failing | may_fail:
            reasons.append(f"{name} failed: {verdict['reason']}")
        elif verdict["valid"] == "true" and name in failing:
            reasons.append(f"{name} passed, expected to fail")
    return "; ".join(reasons) or "not as expected"


KEEP_POLICIES = ("all", "failed", "none")


def keeps(record: Mapping[str, Any], policy: str) -> bool:
    """Whether ``--keep POLICY`` keeps a run's directory: ``all``; ``none``; ``failed``:
    runs with a finding, a violation (any checker that answered false, expected or not),
    an error, an unknown verdict, a skipped fault or an interruption — every run the
    summary has something to say about."""
    assert policy in KEEP_POLICIES, policy
    if policy != "failed":
        return policy == "all"
    return bool(record.get("error") or record.get("findings") or _violated(record) or not record["as_expected"] or record.get("inconclusive") or record.get("interrupted"))


def apply_keep(record: dict[str, Any], policy: str, campaign_dir: Path) -> None:
    """Mark ``record["kept"]`` and remove its run directory if the policy drops it. Only a
    directory inside ``campaign_dir`` is ever removed."""
    record["kept"] = keeps(record, policy)
    if record["kept"]:
        return
    run_dir = Path(record["out_dir"]).resolve()
    if run_dir.parent == campaign_dir.resolve() and run_dir.is_dir():
        shutil.rmtree(run_dir, ignore_errors=True)


def run_link(record: Mapping[str, Any]) -> str:
    """Where a run's directory is, relative to the summary: beside it (``explore``), or as
    ``chaoskube report`` recorded it (``link``)."""
    return str(record.get("link") or Path(record["out_dir"]).name)


def violations(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every checker that answered false, in every run, sorted by (experiment, seed,
    checker): what it said, whether the experiment expects it (a documented failure mode,
    ``expected.failing`` / ``may_fail``) or it is a finding (with ``--broken``) or neither
    (a violation that fails the campaign), and where the run's report is (a path relative
    to the campaign directory, None once ``--keep`` removed the run)."""
    found = []
    for record in records:
        expected = record.get("expected") or {}
        allowed = set(expected.get("failing", ())) | set(expected.get("may_fail", ()))
        for name in _violated(record):
            if record.get("broken"):
                kind = "finding"
            elif name in allowed:
                kind = "expected"
            else:
                kind = "violation"
            found.append(
                {
                    "experiment": record["experiment"], "seed": record["seed"], "checker": name, "kind": kind,
                    "reason": record["verdicts"][name]["reason"], "replay": record["replay"],
                    "report": f"{run_link(record)}/report.html" if record.get("kept", True) else None,
                }
            )  # fmt: skip
    return sorted(found, key=lambda item: (item["experiment"], item["seed"], item["checker"]))


def campaign_outcome(result: CampaignResult) -> str:
    """The campaign in one word, and so its exit code (docs/experiments.md): ``interrupted``;
    ``not-as-expected`` when a run missed its expected outcome (a violation in an
    experiment expected to pass, an expected failure that did not show, an unknown verdict,
    an error, with ``--broken`` a finding) or ``--fail-fast`` stopped it; ``inconclusive``
    when every other run was as expected but some had faults that were never applied;
    else ``as-expected``."""
    if result.interrupted:
        return "interrupted"
    failed = [record for record in result.records if not record.get("checkers_as_expected", record["as_expected"])]
    if failed or result.stopped_by is not None or len(result.records) != result.planned:
        return "not-as-expected"
    if any(record.get("inconclusive") for record in result.records):
        return "inconclusive"
    return "as-expected"


def summarize(result: CampaignResult, seeds: str, workers: int) -> dict[str, Any]:
    records = result.records
    experiments = []
    for name in sorted({record["experiment"] for record in records}):
        mine = [record for record in records if record["experiment"] == name]
        # the figures (a count, a time); not what a metric holds as a table (broken_calls)
        metric_names = sorted({key for record in mine for key, value in record["metrics"].items() if not isinstance(value, (dict, list))})
        experiments.append(
            {
                "experiment": name,
                "expected_outcome": next((record["expected"].get("outcome") for record in mine if record["expected"]), None),
                "seeds": [record["seed"] for record in mine],
                "runs": len(mine),
                "as_expected": sum(1 for record in mine if record["as_expected"]),
                "unexpected": sum(1 for record in mine if not record["as_expected"]),
                "verdicts": _verdict_counts(mine),
                "availability": {key: _numbers((record["availability"] or {}).get(key) for record in mine) for key in ("ok_fraction", "lost_s", "stalled_s")},
                "metrics": {key: _numbers(record["metrics"].get(key) for record in mine) for key in metric_names},
                "wall_seconds": round(sum(record["job_seconds"] for record in mine), 3),  # run + checks + reports
                "broken": sorted({name for record in mine for name in record.get("broken", ())}),
            }
        )
    kinds = sorted({effect["kind"] for record in records for effect in record["fault_effects"]})
    per_kind = [_kind_effects(kind, records) for kind in kinds]
    per_experiment_kind = [_kind_effects(kind, [record for record in records if record["experiment"] == item["experiment"]]) | {"experiment": item["experiment"]} for item in experiments for kind in kinds]
    unexpected = [
        {"experiment": record["experiment"], "seed": record["seed"], "why": why_unexpected(record), "replay": record["replay"], "out_dir": record["out_dir"], "link": run_link(record), "broken": list(record.get("broken", ())),
         "finding": violation(record), "mutated": mutated(record)}
        for record in records
        if not record["as_expected"]
    ]
    dropped: dict[str, int] = {}
    for record in records:
        for name in record.get("dropped_checkers") or ():
            dropped[name] = dropped.get(name, 0) + 1
    stopped = result.stopped_by
    return {
        "seeds": seeds,
        "jobs": workers,
        "stopped_early": None if stopped is None else {"experiment": stopped["experiment"], "seed": stopped["seed"], "why": why_unexpected(stopped), "replay": stopped["replay"], "out_dir": stopped["out_dir"], "not_started": result.not_started},
        "planned_runs": result.planned,
        "finished_runs": len(records),
        "as_expected": sum(1 for record in records if record["as_expected"]),
        "unexpected": len(unexpected),
        "interrupted": result.interrupted,
        "abandoned": [{"experiment": job.name, "seed": job.seed, "out_dir": job.out_dir} for job in result.abandoned],
        "wall_seconds": round(result.wall_seconds, 3),
        "all_as_expected": result.all_as_expected,
        "outcome": campaign_outcome(result),
        "failed": sum(1 for record in records if not record.get("checkers_as_expected", record["as_expected"])),  # missed the expected verdicts
        "inconclusive": sum(1 for record in records if record.get("inconclusive") and record.get("checkers_as_expected", record["as_expected"])),  # only a skipped fault
        "errors": sum(1 for record in records if record.get("error")),
        "violations": violations(records),
        # Runs that missed the expected outcome without finding anything (inconclusive, an
        # unknown verdict, an expected failure that did not show), and how many of them ran
        # a mutant (explore --guided: this must be 0, docs/campaigns.md); the checkers left
        # out of mutants' runs for want of anything to judge (RunResult.dropped_checkers).
        "noise": {"runs": sum(1 for item in unexpected if not item["finding"]), "mutated": sum(1 for item in unexpected if not item["finding"] and item["mutated"]), "dropped_checkers": dict(sorted(dropped.items()))},
        "kept": sum(1 for record in records if record.get("kept", True)),
        "experiments": experiments,
        "fault_kinds": per_kind,
        "fault_effects": [item for item in per_experiment_kind if item["faults"]],
        "unexpected_runs": unexpected,
        "findings": _findings(records),
        "runs": [
            {key: record[key] for key in ("experiment", "seed", "as_expected", "journal_sha256", "out_dir", "replay", "error")}
            | {"verdicts": {name: verdict["valid"] for name, verdict in record["verdicts"].items()}, "inconclusive": bool(record.get("inconclusive")), "kept": record.get("kept", True)}
            | {key: record[key] for key in ("coverage", "guided") if record.get(key) is not None}
            for record in records
        ],
    }


def reached(record: Mapping[str, Any]) -> bool | None:
    """Whether a run with broken variants ran their broken code (``metrics["broken_calls"]``,
    chaoskube.gallery.calls); None when nothing was counted (no counts recorded, or only
    variants that patch a value)."""
    from chaoskube import gallery

    return gallery.ran((record.get("metrics") or {}).get("broken_calls"))


def _findings(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per experiment run with broken variants: which seeds each checker failed on, and in
    how many runs the broken code ran (``runs_reaching``: None when it was not counted) and
    went unnoticed there (``reached_unnoticed``): a variant never caught is a coverage gap
    when its code never ran, an oracle gap when it ran."""
    out = []
    for name in sorted({record["experiment"] for record in records if record.get("broken")}):
        mine = [record for record in records if record["experiment"] == name and record.get("broken")]
        caught_by = list(dict.fromkeys(checker for record in mine for checker in record.get("caught_by", ())))
        failed: dict[str, list[int]] = {}
        for record in mine:
            for checker in record.get("findings", ()):
                failed.setdefault(checker, []).append(record["seed"])
        order = sorted(failed, key=lambda checker: (checker not in caught_by, checker))
        first = min((record for record in mine if record.get("findings")), key=lambda record: record["seed"], default=None)
        out.append(
            {
                "experiment": name,
                "broken": sorted({variant for record in mine for variant in record["broken"]}),
                "caught_by": caught_by,
                "runs": len(mine),
                "runs_with_findings": sum(1 for record in mine if record.get("findings")),
                "runs_reaching": None if all(reached(record) is None for record in mine) else sum(1 for record in mine if reached(record)),
                "reached_unnoticed": sum(1 for record in mine if reached(record) and not record.get("findings")),
                "failed_on": {checker: sorted(failed[checker]) for checker in order},
                "caught_by_failed_on": sorted({seed for checker in caught_by for seed in failed.get(checker, ())}),
                "first": None if first is None else {"seed": first["seed"], "checkers": first["findings"], "replay": first["replay"], "out_dir": first["out_dir"]},
            }
        )
    return out


# -- coverage (explore records it always; --guided is driven by it: guided.py) -------------------


def with_baseline(coverage: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> dict[str, Any]:
    """The campaign's coverage (per experiment), each with the ``baseline`` campaign's
    curve for the same experiment (``explore --baseline DIR``) when it has one."""
    out = {}
    for name, item in coverage.items():
        other = (baseline or {}).get(name)
        extra = {"baseline": {"mode": other.get("mode"), "curve": list(other["curve"]), "tuples": other.get("tuples")}} if isinstance(other, dict) and other.get("curve") else {}
        out[name] = dict(item) | extra
    return out


def _at_runs(curve: Sequence[int], runs: int) -> int | None:
    """The coverage a curve had reached after ``runs`` runs (its last point if shorter)."""
    return curve[min(runs, len(curve)) - 1] if curve and runs > 0 else None


def coverage_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per experiment: mode, runs, distinct tuples (and lines), corpus size, and the
    baseline's tuples after as many runs (and the ratio), for the summary's tables."""
    rows = []
    for name, item in sorted((summary.get("coverage") or {}).items()):
        base = item.get("baseline")
        at = _at_runs(base["curve"], item["runs"]) if base else None
        rows.append(
            {
                "experiment": name, "mode": item["mode"], "runs": item["runs"], "tuples": item["tuples"], "lines": item.get("lines"), "corpus": len(item.get("corpus") or ()),
                "baseline_mode": base.get("mode") if base else None, "baseline_tuples": at, "ratio": round(item["tuples"] / at, 3) if at else None,
            }
        )  # fmt: skip
    return rows


def coverage_svg(name: str, item: Mapping[str, Any], width: int = 560, height: int = 220) -> str:
    """Distinct journal tuples against runs: this campaign's curve, and the baseline's
    beside it when there is one (inline SVG, as the run report draws its timeline)."""
    curves = [(item["mode"], item["curve"], PALETTE_COVERAGE[0])]
    if item.get("baseline"):
        curves.append((f"{item['baseline'].get('mode') or 'baseline'} (--baseline)", item["baseline"]["curve"], PALETTE_COVERAGE[1]))
    runs = max((len(curve) for _, curve, _ in curves), default=0)
    top = max((max(curve) for _, curve, _ in curves if curve), default=0)
    left, right, up, down = 48, 150, 12, 28
    if runs == 0 or top == 0:
        return "<p>No coverage recorded.</p>"

    def x(index: int) -> float:
        return left + (width - left - right) * (index / max(1, runs - 1))

    def y(value: float) -> float:
        return up + (height - up - down) * (1 - value / top)

    parts = [f'<svg class="coverage" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="coverage against runs, {esc(name)}">']
    parts.append(f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - right}" y2="{y(0):.1f}" stroke="#888"/><line x1="{left}" y1="{up}" x2="{left}" y2="{y(0):.1f}" stroke="#888"/>')
    parts.append(f'<text x="{left - 4}" y="{up + 8}" text-anchor="end" font-size="10">{top}</text><text x="{left - 4}" y="{y(0):.1f}" text-anchor="end" font-size="10">0</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" font-size="10">run 1</text><text x="{width - right}" y="{height - 8}" text-anchor="end" font-size="10">run {runs}</text>')
    for row, (label, curve, colour) in enumerate(curves):
        points = " ".join(f"{x(index):.1f},{y(value):.1f}" for index, value in enumerate(curve))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"><title>{esc(label)}: {curve[-1] if curve else 0} tuples after {len(curve)} runs</title></polyline>')
        parts.append(f'<text x="{width - right + 8}" y="{up + 14 + 16 * row}" font-size="11" fill="{colour}">{esc(label)}: {curve[-1] if curve else 0}</text>')
    parts.append("</svg>")
    return "".join(parts)


PALETTE_COVERAGE = ("#e15759", "#4e79a7")


def _coverage_lines(summary: Mapping[str, Any]) -> list[str]:
    rows = coverage_rows(summary)
    if not rows:
        return []
    lines = [
        "",
        "## Coverage",
        "",
        "Distinct (component, event kind, transition) tuples of the runs' journals (experiments/coverage.py); with --baseline, the baseline campaign's after as many runs.",
        "",
        "| experiment | mode | runs | tuples | lines | corpus | baseline | baseline tuples | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['experiment']} | {row['mode']} | {row['runs']} | {row['tuples']} | {row['lines'] if row['lines'] is not None else '—'} | {row['corpus']} | "
            f"{row['baseline_mode'] or '—'} | {row['baseline_tuples'] if row['baseline_tuples'] is not None else '—'} | {row['ratio'] if row['ratio'] is not None else '—'} |"
        )
    return lines


def _coverage_html(summary: Mapping[str, Any]) -> str:
    coverage = summary.get("coverage") or {}
    if not coverage:
        return ""
    parts = ["<h2>Coverage against runs</h2><p class=\"muted\">Distinct (component, event kind, transition) tuples of the runs' journals after each run, in seed order (experiments/coverage.py); with <code>--baseline DIR</code>, that campaign's curve beside this one.</p>"]
    for row in coverage_rows(summary):
        item = coverage[row["experiment"]]
        ratio = f"; {row['ratio']}x the baseline's {row['baseline_tuples']} after as many runs" if row["ratio"] is not None else ""
        lines = f", {row['lines']} Python lines" if row["lines"] is not None else ""
        parts.append(f'<h3>{esc(row["experiment"])}</h3><p id="coverage-{esc(row["experiment"])}">{esc(row["mode"])}: {row["tuples"]} tuples{lines} in {row["runs"]} runs, corpus of {row["corpus"]}{esc(ratio)}</p>')
        parts.append(coverage_svg(row["experiment"], item))
    return "".join(parts)


def _seed_list(seeds: Sequence[int], limit: int = 20) -> str:
    shown = ", ".join(str(seed) for seed in seeds[:limit])
    return shown + (f", … ({len(seeds)} seeds)" if len(seeds) > limit else "")


def _stat(value: Mapping[str, float] | None, key: str = "mean", digits: int = 3) -> str:
    return "—" if not value else f"{value[key]:.{digits}f}"


def _counts(counts: Mapping[str, Mapping[str, int]]) -> str:
    return "; ".join(f"{name} {tally['pass']}/{tally['fail']}/{tally['unknown']}" for name, tally in counts.items()) or "—"


def _effect_cells(item: Mapping[str, Any]) -> list[str]:
    return [
        _stat(item["ok_fraction"], digits=4),
        f"{_stat(item['lost_s'])} ({_stat(item['lost_s'], 'max')})",
        f"{_stat(item['stalled_s'])} ({_stat(item['stalled_s'], 'max')})",
        f"{_stat(item['leader_changes'], digits=2)} ({_stat(item['leader_changes'], 'max', 0)})",
    ]


def _converge_cells(item: Mapping[str, Any]) -> list[str]:
    return [f"{_stat(item['recovery_s'])} ({_stat(item['recovery_s'], 'max')})", f"{_stat(item['time_to_converge_s'])} ({_stat(item['time_to_converge_s'], 'max')})"]


def _violation_cell(item: Mapping[str, Any]) -> str:
    named = ", ".join(f"{name} {count}" for name, count in item["violations"].items())
    return f"{item['runs_with_violations']}/{item['runs']}" + (f" ({named})" if named else "")


def _stopped_lines(summary: Mapping[str, Any]) -> list[str]:
    stopped = summary.get("stopped_early")
    if not stopped:
        return []
    return [
        f"- **Stopped early (--fail-fast)** at {stopped['experiment']} seed {stopped['seed']}: {stopped['why'].replace('|', '/')}",
        f"  - replay: `{stopped['replay']}`; report: {stopped['out_dir']}/report.md; {stopped['not_started']} run(s) not started",
    ]


def reach_line(item: Mapping[str, Any]) -> str:
    """In how many runs a variant's broken code ran (a :func:`_findings` item), for
    summary.md and the terminal; empty when it was not counted."""
    if item.get("runs_reaching") is None:
        return ""
    return (
        f"the broken code ran in {item['runs_reaching']} of {item['runs']} runs"
        + (f", unnoticed in {item['reached_unnoticed']} of them" if item["reached_unnoticed"] else "")
        + (": these runs never reached it (a coverage gap: an experiment or seeds that do, `chaoskube list --broken`)" if not item["runs_reaching"] else "")
    )


def _findings_lines(summary: Mapping[str, Any]) -> list[str]:
    lines = []
    for item in summary.get("findings", ()):
        lines.append(
            f"- **Broken on purpose** ({', '.join(item['broken'])}) in {item['experiment']}: {item['runs_with_findings']} of {item['runs']} runs failed a checker; "
            + (f"the variant's checker ({', '.join(item['caught_by']) or 'none named'}) failed on seeds: {_seed_list(item['caught_by_failed_on'])}" if item["caught_by_failed_on"]
               else f"the variant's checker ({', '.join(item['caught_by']) or 'none named'}) failed on no seed" + ("; other checkers caught it:" if item["failed_on"] else ""))
        )
        lines += [f"  - {checker} failed on seeds {_seed_list(seeds)}" for checker, seeds in item["failed_on"].items()]
        reach = reach_line(item)
        if reach:
            lines.append(f"  - {reach}")
        if item["first"]:
            lines.append(f"  - first: seed {item['first']['seed']} — `{item['first']['replay']}`")
    return lines


def _no_finding(item: Mapping[str, Any]) -> str:
    """What a summary line adds to a run that missed its outcome without a finding."""
    if item.get("finding", True):
        return ""
    return " (no finding" + (", a mutant" if item.get("mutated") else "") + ")"


def end_line(summary: Mapping[str, Any]) -> str:
    """The campaign's end line, the same on the terminal and in summary.md / summary.html:
    counts that add up to the finished runs, and the outcome's reason."""
    parts = [f"{summary['as_expected']} of {summary['finished_runs']} runs as expected"]
    failed = summary.get("failed", summary["unexpected"])
    if failed:
        parts.append(f"{failed} not as expected")
    if summary.get("inconclusive"):
        parts.append(f"{summary['inconclusive']} inconclusive")
    noise = summary.get("noise") or {}
    if noise.get("mutated"):  # explore --guided: a mutant that tested nothing (must be 0)
        parts.append(f"{noise['mutated']} mutant run(s) with no finding (inconclusive or unknown)")
    counted = {"violation": 0, "expected": 0, "finding": 0}
    for item in summary.get("violations", ()):
        counted[item["kind"]] += 1
    if counted["violation"]:
        parts.append(f"{counted['violation']} violation(s)")
    if counted["finding"]:
        parts.append(f"{counted['finding']} finding(s)")
    if counted["expected"]:
        parts.append(f"{counted['expected']} expected failure(s)")
    line = "; ".join(parts) + f" ({summary['planned_runs']} planned)"
    return line + (" — interrupted" if summary["interrupted"] else "")


def render_summary_markdown(summary: Mapping[str, Any]) -> str:
    lines = [
        f"# chaoskube explore — seeds {summary['seeds']}",
        "",
        f"- Outcome: **{summary['outcome']}** — {end_line(summary)}",
        f"- Runs: {summary['finished_runs']} of {summary['planned_runs']} finished; {summary['as_expected']} as expected, {summary['unexpected']} not"
        + (f" ({summary['inconclusive']} inconclusive)" if summary.get("inconclusive") else "")
        + (" — **interrupted**" if summary["interrupted"] else ""),
        f"- {summary['jobs']} parallel processes, {summary['wall_seconds']:.1f} s of wall time",
        *_stopped_lines(summary),
        *_findings_lines(summary),
        "",
        "## Experiments",
        "",
        "Verdicts per checker: pass/fail/unknown over seeds. Availability: mean over seeds.",
        "",
        "| experiment | runs | as expected | unexpected | verdicts | ok fraction | lost s | stalled s | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for item in summary["experiments"]:
        availability = item["availability"]
        lines.append(
            f"| {item['experiment']} | {item['runs']} | {item['as_expected']} | {item['unexpected']} | {_counts(item['verdicts'])} | "
            f"{_stat(availability['ok_fraction'], digits=4)} | {_stat(availability['lost_s'])} | {_stat(availability['stalled_s'])} | {item['wall_seconds']:.1f} |"
        )
    lines += ["", "## Metrics (min / mean / max over seeds)", ""]
    for item in summary["experiments"]:
        lines.append(f"- **{item['experiment']}**: " + (", ".join(f"{key} {value['min']:g} / {value['mean']:g} / {value['max']:g}" for key, value in item["metrics"].items() if value) or "none"))
    lines += [
        "",
        "## Fault effects per experiment and fault kind",
        "",
        "Inside each fault's window (apply to heal): the share of operations completing ok, seconds of availability lost and stalled, leader changes — mean (max) over the faults of that kind in every seed.",
        "",
        "| experiment | fault kind | faults | ok fraction | lost s | stalled s | leader changes |",
        "|---|---|---|---|---|---|---|",
    ]
    for item in summary["fault_effects"]:
        lines.append(f"| {item['experiment']} | {item['kind']} | {item['faults']} | " + " | ".join(_effect_cells(item)) + " |")
    lines += [
        "",
        "## Fault kinds across experiments",
        "",
        "Every fault of the runs' fault tables (scheduled and random-nemesis ones). Window figures: mean (max) over the faults of that kind; "
        "recovery (the steady state back after heal) and time to converge (the convergence checker): mean (max) over the runs that had one; "
        "violations: the runs where a checker answered false.",
        "",
        "| fault kind | experiments | faults | runs as expected | ok fraction | lost s | stalled s | leader changes | recovery s | time to converge s | runs with violations | verdicts of those runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for item in summary["fault_kinds"]:
        lines.append(
            f"| {item['kind']} | {', '.join(item['experiments'])} | {item['faults']} | {item['runs_as_expected']}/{item['runs']} | " + " | ".join(_effect_cells(item))
            + f" | {' | '.join(_converge_cells(item))} | {_violation_cell(item)} | {_counts(item['verdicts'])} |"
        )
    lines += _coverage_lines(summary)
    lines += ["", "## Runs not as expected", ""]
    lines += [f"- {item['experiment']} seed {item['seed']}{_no_finding(item)}: {item['why'].replace('|', '/')} — `{item['replay']}`" for item in summary["unexpected_runs"]] or ["None."]
    if (summary.get("noise") or {}).get("dropped_checkers"):
        lines += ["", "Checkers left out of mutants' runs (the mutation left them nothing to judge): " + ", ".join(f"{name} ({count} run(s))" for name, count in summary["noise"]["dropped_checkers"].items())]
    lines += [
        "",
        "## Every seed with a finding or violation",
        "",
        "Each checker that answered false: a *violation* fails the campaign; *expected* is the experiment's documented failure mode; a *finding* is a checker catching a gallery variant (--broken).",
        "",
    ]
    if summary.get("violations"):
        lines += ["| experiment | seed | checker | kind | reason | report | replay |", "|---|---|---|---|---|---|---|"]
        for item in summary["violations"]:
            report = f"[report]({item['report']})" if item["report"] else "removed (--keep)"
            lines.append(f"| {item['experiment']} | {item['seed']} | {item['checker']} | {item['kind']} | {item['reason'].replace('|', '/')} | {report} | `{item['replay']}` |")
    else:
        lines.append("None: every checker answered true or unknown in every run.")
    if summary["abandoned"]:
        lines += ["", "## Abandoned (running when interrupted)", ""]
        lines += [f"- {item['experiment']} seed {item['seed']} ({item['out_dir']})" for item in summary["abandoned"]]
    return "\n".join(lines) + "\n"


def render_summary_html(summary: Mapping[str, Any]) -> str:
    def table(table_id: str, head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        header = "".join(f"<th>{esc(cell)}</th>" for cell in head)
        body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
        return f'<div class="scroll"><table id="{table_id}"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table></div>'

    experiments = [
        [
            esc(item["experiment"]), str(item["runs"]), str(item["as_expected"]), str(item["unexpected"]), esc(_counts(item["verdicts"])),
            _stat(item["availability"]["ok_fraction"], digits=4), _stat(item["availability"]["lost_s"]), _stat(item["availability"]["stalled_s"]),
            esc(", ".join(f"{key} {value['min']:g}/{value['mean']:g}/{value['max']:g}" for key, value in item["metrics"].items() if value)), f"{item['wall_seconds']:.1f}",
        ]
        for item in summary["experiments"]
    ]  # fmt: skip
    effects = [[esc(item["experiment"]), esc(item["kind"]), str(item["faults"]), *_effect_cells(item)] for item in summary["fault_effects"]]
    kinds = [
        [
            esc(item["kind"]), esc(", ".join(item["experiments"])), str(item["faults"]), f"{item['runs_as_expected']}/{item['runs']}", *_effect_cells(item),
            *_converge_cells(item), esc(_violation_cell(item)), esc(_counts(item["verdicts"])),
        ]
        for item in summary["fault_kinds"]
    ]  # fmt: skip
    findings = [
        [
            esc(item["experiment"]), esc(", ".join(item["broken"])), esc(", ".join(item["caught_by"])), f"{item['runs_with_findings']}/{item['runs']}",
            "—" if item.get("runs_reaching") is None else f"{item['runs_reaching']}/{item['runs']}" + (f" ({item['reached_unnoticed']} unnoticed)" if item["reached_unnoticed"] else ""),
            esc("; ".join(f"{checker}: {_seed_list(seeds)}" for checker, seeds in item["failed_on"].items()) or "none"),
            f"<code>{esc(item['first']['replay'])}</code> (<a href=\"{esc(Path(item['first']['out_dir']).name)}/report.html\">report</a>)" if item["first"] else "—",
        ]
        for item in summary.get("findings", ())
    ]  # fmt: skip
    stopped = summary.get("stopped_early")
    # Run directories sit beside the summary: link each report by its directory's name.
    unexpected = [[esc(item["experiment"]), str(item["seed"]), esc(item["why"] + _no_finding(item)), f"<code>{esc(item['replay'])}</code>", f'<a href="{esc(item.get("link") or Path(item["out_dir"]).name)}/report.html">report</a>'] for item in summary["unexpected_runs"]]
    violation_rows = [
        [
            esc(item["experiment"]), str(item["seed"]), esc(item["checker"]), f'<span class="{esc(item["kind"])}">{esc(item["kind"])}</span>', esc(item["reason"]),
            f'<a href="{esc(item["report"])}">report</a>' if item["report"] else "removed (--keep)", f"<code>{esc(item['replay'])}</code>",
        ]
        for item in summary.get("violations", ())
    ]  # fmt: skip
    status = "interrupted — " if summary["interrupted"] else ""
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>chaoskube explore — seeds {esc(summary["seeds"])}</title><style>{CSS}</style></head><body>',
        f"<h1>chaoskube explore — seeds {esc(summary['seeds'])}</h1>",
        f'<p id="outcome" class="outcome {esc(summary["outcome"])}">{esc(summary["outcome"])}: {esc(end_line(summary))}</p>',
        f'<p id="totals">{status}{summary["finished_runs"]} of {summary["planned_runs"]} runs finished; {summary["as_expected"]} as expected, '
        f'{summary["unexpected"]} not; {summary["jobs"]} processes, {summary["wall_seconds"]:.1f} s wall.</p>',
        (
            f'<p id="stopped"><strong>Stopped early (--fail-fast)</strong> at {esc(stopped["experiment"])} seed {stopped["seed"]}: {esc(stopped["why"])}; '
            f'replay <code>{esc(stopped["replay"])}</code>; <a href="{esc(Path(stopped["out_dir"]).name)}/report.html">report</a>; {stopped["not_started"]} run(s) not started.</p>'
        ) if stopped else "",
        (
            "<h2>Broken on purpose: findings</h2><p class=\"muted\">Runs with gallery variants patched in (chaoskube/gallery.py): the seeds each checker failed on, the variant's checker first; a run that never ran the broken code could not catch it (a coverage gap, not an oracle gap).</p>"
            + table("findings", ["experiment", "broken", "caught by", "runs with findings", "runs that ran the broken code", "failed on seeds", "first finding"], findings)
        ) if findings else "",
        "<h2>Experiments</h2><p class=\"muted\">Verdicts per checker: pass/fail/unknown over seeds; metrics min/mean/max.</p>",
        table("experiments", ["experiment", "runs", "as expected", "unexpected", "verdicts", "ok fraction", "lost s", "stalled s", "metrics", "wall s"], experiments),
        "<h2>Fault effects per experiment and fault kind</h2><p class=\"muted\">Inside each fault's window (apply to heal): mean (max) over the faults of that kind in every seed.</p>",
        table("fault-effects", ["experiment", "fault kind", "faults", "ok fraction", "lost s", "stalled s", "leader changes"], effects),
        "<h2>Fault kinds across experiments</h2>",
        table("fault-kinds", ["fault kind", "experiments", "faults", "runs as expected", "ok fraction", "lost s", "stalled s", "leader changes", "recovery s", "time to converge s", "runs with violations", "verdicts of those runs"], kinds),
        _coverage_html(summary),
        "<h2>Runs not as expected</h2>",
        table("unexpected", ["experiment", "seed", "why", "replay", "report"], unexpected) if unexpected else "<p>None.</p>",
        "<h2>Every seed with a finding or violation</h2><p class=\"muted\">Each checker that answered false: a violation fails the campaign; expected is the experiment's documented failure mode; a finding is a checker catching a gallery variant (--broken).</p>",
        table("violations", ["experiment", "seed", "checker", "kind", "reason", "report", "replay"], violation_rows) if violation_rows else "<p>None.</p>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_summary(out: Path, summary: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> list[Path]:
    from chaoskube.experiments.junit import write_junit
    from chaoskube.experiments.result import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "summary.json", out / "summary.md", out / "summary.html"]
    write_atomic(paths[0], orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    write_atomic(paths[1], render_summary_markdown(summary))
    write_atomic(paths[2], render_summary_html(summary))
    paths.append(write_junit(out / "junit.xml", records))
    return paths


# -- replay ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayOutcome:
    target: str
    seed: int
    recorded: str
    replayed: str
    replay_dir: Path | None  # kept on a mismatch, None when removed
    first_difference: int | None  # 1-based journal line, on a mismatch when both journals exist
    recorded_version: str
    interrupted: bool = False
    journal_on_disk: str | None = None  # sha256 of DIR/journal.jsonl (None: missing)
    manifests_changed: str | None = None  # --manifests DIR changed since the run: what, in one line

    @property
    def match(self) -> bool:
        return self.recorded == self.replayed


def load_run(run_dir: Path) -> dict[str, Any]:
    """The ``result.json`` of a replayable (simulated) run, or :class:`NotARun`."""
    from chaoskube.api.files import RESULT_MAX_BYTES, TooLarge, read_limited
    from chaoskube.sim import seed_error

    path = run_dir / "result.json"
    if not run_dir.is_dir():
        raise NotARun(f"{run_dir}: not a directory")
    try:
        payload = orjson.loads(read_limited(path, RESULT_MAX_BYTES, "a result.json"))
    except FileNotFoundError:
        raise NotARun(f"{run_dir}: no result.json here; is it a run directory (chaoskube run --out DIR)?") from None
    except TooLarge as error:
        raise NotARun(str(error)) from None
    except OSError as error:
        raise NotARun(f"{path}: cannot read: {error.strerror or error}") from None
    except orjson.JSONDecodeError as error:
        raise NotARun(f"{path}: cannot read it as JSON: {error}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("experiment"), str) or "seed" not in payload:
        raise NotARun(f"{path}: not a chaoskube result (no experiment name and integer seed)")
    if type(payload["seed"]) is not int or seed_error(payload["seed"]):
        raise NotARun(f"{path}: field `seed`: {seed_error(payload['seed'])}; `chaoskube run` would refuse it too")
    if not re.fullmatch(r"[0-9a-f]{64}", str(payload.get("journal_sha256", ""))):
        raise NotARun(f"{path}: no journal_sha256 to compare with")
    if payload.get("mode") == "real-time":
        raise NotARun(f"{run_dir}: a real-process run is not reproducible to the byte; replay its simulated twin ({run_dir / 'simulated'})")
    return payload


def replay_target(payload: Mapping[str, Any]) -> str:
    """The experiment file or name the recorded replay command names, else the name."""
    try:
        argv = shlex.split(str(payload.get("replay", "")))
    except ValueError:
        argv = []
    if len(argv) > 2 and argv[:2] == ["chaoskube", "run"]:
        return argv[2]
    return str(payload["experiment"])


def _replay_words(payload: Mapping[str, Any]) -> list[str]:
    try:
        return shlex.split(str(payload.get("replay", "")))
    except ValueError:
        return []


def manifests_change(payload: Mapping[str, Any]) -> str | None:
    """What changed in the ``--manifests`` directory since the run (its recorded sha256
    differs, or it is gone), as one line; None when unchanged or not recorded."""
    from chaoskube.experiments.model import manifests_sha256

    recorded = payload.get("manifests")
    if not isinstance(recorded, dict) or not recorded.get("directory"):
        return None
    directory = Path(str(recorded["directory"]))
    if not directory.is_dir():
        return f"the manifests directory {directory} of the run is gone"
    now = manifests_sha256(directory)
    if now != recorded.get("sha256"):
        return f"the manifests in {directory} changed since the run (sha256 {recorded.get('sha256')} then, {now} now): a mismatch may come from them, not from chaoskube"
    return None


def _replay_option(payload: Mapping[str, Any], option: str) -> list[str]:
    """The values of ``option`` in the recorded replay command."""
    try:
        argv = shlex.split(str(payload.get("replay", "")))
    except ValueError:
        return []
    return [argv[index + 1] for index in range(len(argv) - 1) if argv[index] == option]


def replay_experiment(payload: Mapping[str, Any]) -> Experiment:
    """The experiment a recorded run ran: :func:`replay_target`, with the manifests
    directory of its replay command and the gallery variants of its ``broken`` list (or
    of its replay command's ``--broken`` options, for a result.json that has no list)."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.registry import with_broken, with_manifests

    experiment = registry.find(replay_target(payload))
    manifests = _replay_option(payload, "--manifests")
    skip = "--skip-unsupported" in _replay_words(payload)
    if manifests:
        experiment = with_manifests(experiment, manifests[-1], skip_unsupported=skip)
    elif skip:
        from chaoskube.experiments.registry import with_skip_unsupported

        experiment = with_skip_unsupported(experiment)
    faults = _replay_option(payload, "--faults")
    if faults:  # a guided campaign's mutant: its faults file
        from chaoskube.experiments.mutation import with_faults

        experiment = with_faults(experiment, faults[-1])
    broken = payload.get("broken")
    names = [str(name) for name in broken] if isinstance(broken, list) else _replay_option(payload, "--broken")
    return with_broken(experiment, names) if names else experiment


def first_different_line(first: Path, second: Path) -> int | None:
    """The 1-based number of the first line where two files differ (None if equal or a
    file is missing); bounded by MAX_DIFF_LINES."""
    try:
        with open(first, "rb") as a, open(second, "rb") as b:
            for number in range(1, MAX_DIFF_LINES + 1):
                line_a, line_b = a.readline(), b.readline()
                if line_a != line_b:
                    return number
                if not line_a:
                    return None
    except FileNotFoundError:
        return None
    return None


def replay_run(run_dir: Path, progress: Callable[[float, float], None] | None = None) -> ReplayOutcome:
    from chaoskube.experiments.runner import run_experiment
    from chaoskube.sim.journal import journal_sha256

    payload = load_run(run_dir)
    changed = manifests_change(payload)
    experiment = replay_experiment(payload)
    target = replay_target(payload)
    work = Path(tempfile.mkdtemp(prefix="chaoskube-replay-"))
    boot_seed = payload.get("boot_seed")
    result = run_experiment(experiment, payload["seed"], work, progress=progress, boot_seed=boot_seed if type(boot_seed) is int else None)
    recorded = str(payload["journal_sha256"])
    matched = result.journal_sha256 == recorded
    difference = None if matched else first_different_line(run_dir / "journal.jsonl", work / "journal.jsonl")
    on_disk = journal_sha256(run_dir / "journal.jsonl") if (run_dir / "journal.jsonl").is_file() else None
    if matched:
        shutil.rmtree(work, ignore_errors=True)
    return ReplayOutcome(target, payload["seed"], recorded, result.journal_sha256, None if matched else work, difference, str(payload.get("chaoskube_version", "")), result.interrupted, on_disk, changed)

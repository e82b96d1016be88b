"""``chaoskube report DIR...``: re-render reports from run directories, and merge runs into a
campaign summary.

A run directory (``chaoskube run --out DIR``, or one of a campaign's) holds the record of the
run — ``journal.jsonl`` and ``result.json`` — and the reports made from them. Given one run
directory, :func:`rerender_run` writes ``report.md``, ``report.html`` and ``junit.xml`` again
from those two files alone (the experiment as it ran is in ``result.json``'s ``spec``, so a
moved or edited experiment file does not matter; a ``result.json`` from before ``spec``
existed finds its experiment by the recorded replay command). Nothing is re-run or
re-judged: the verdicts are the recorded ones, so the reports of any version's run can be
made again with this version's renderer.

Given several directories — run directories, campaign directories (their run directories
are taken, in name order), or both — :func:`merge` builds one campaign record per run
(``campaign.record_of_payload``, as ``explore`` does) and writes ``summary.md``,
``summary.json``, ``summary.html`` and ``junit.xml`` into ``--out``: the same summary
``explore`` writes, over runs made at different times (several ``explore`` campaigns, single
``run`` s, runs from CI jobs). Report links in that summary are relative to ``--out``.

Bad input (a directory that holds no run, a result.json that is not one, a run twice) is a
one-line :class:`NotARun`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import orjson

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.campaign import CampaignResult, NotARun, load_run, record_of_payload, replay_target, summarize, write_summary
from chaoskube.experiments.model import Experiment, ExperimentError


def _verdict(data: Mapping[str, Any]) -> Verdict:
    valid = {"true": True, "false": False}.get(str(data.get("valid")))
    return Verdict(valid, str(data.get("reason", "")), tuple(data.get("evidence") or ()), dict(data.get("details") or {}))


def _experiment(payload: Mapping[str, Any], run_dir: Path) -> Experiment:
    spec = payload.get("spec")
    if isinstance(spec, dict):
        try:
            return msgspec.convert(spec, type=Experiment)
        except msgspec.ValidationError as error:
            raise NotARun(f"{run_dir / 'result.json'}: field `spec`: not an experiment this version reads ({error})") from None
    from chaoskube.experiments import registry

    try:
        return registry.find(replay_target(payload))
    except ExperimentError as error:
        raise NotARun(f"{run_dir / 'result.json'}: records no experiment (`spec`) and its replay target does not load: {error}") from None


def load_result(run_dir: Path) -> Any:
    """The RunResult a run directory records (RealRunResult for a real run)."""
    payload = load_run_any(run_dir)
    experiment = _experiment(payload, run_dir)
    recorded = payload.get("verdicts") or {}
    order = [name for name in experiment.checkers if name in recorded] + sorted(name for name in recorded if name not in experiment.checkers)
    common = dict(
        experiment=experiment,
        seed=int(payload["seed"]),
        out_dir=run_dir,
        verdicts={name: _verdict(recorded[name]) for name in order},  # in the experiment's order, as the run wrote them
        journal_sha256=str(payload.get("journal_sha256", "")),
        simulated_seconds=float(payload.get("simulated_seconds", payload.get("real_seconds", 0.0))),
        wall_seconds=float(payload.get("wall_seconds", 0.0)),
        metrics=dict(payload.get("metrics") or {}),
        phases=_in_order(payload.get("phases") or {}),
        faults=list(payload.get("faults") or []),
        skipped_faults=list(payload.get("skipped_faults") or []),
        interrupted=bool(payload.get("interrupted")),
        recorded_replay=str(payload["replay"]) if isinstance(payload.get("replay"), str) else None,
        boot_seed=payload["boot_seed"] if type(payload.get("boot_seed")) is int else None,
        dropped_checkers={str(name): str(reason) for name, reason in (payload.get("dropped_checkers") or {}).items()},
    )
    if payload.get("mode") == "real-time":
        from chaoskube.experiments.real.runner import RealRunResult

        return RealRunResult(**common, comparison=dict(payload.get("comparison") or {}), processes=dict(payload.get("processes") or {}))
    if payload.get("mode") == "live":
        from chaoskube.experiments.live import LiveRunResult

        return LiveRunResult(**common, live=dict(payload.get("live") or {}))
    from chaoskube.experiments.result import RunResult

    return RunResult(**common)


#: The order phases.drive_phases passes its phases in (result.json keeps them sorted by name).
PHASE_ORDER = ("setup", "workload", "faults", "heal", "recovered", "recovery-deadline", "convergence-wait", "stop-workload", "check")


def _in_order(phases: Mapping[str, Any]) -> dict[str, float]:
    """Phases as the run passed them: by time, ties in the driver's order."""
    rank = {name: index for index, name in enumerate(PHASE_ORDER)}
    return dict(sorted(((name, float(when)) for name, when in phases.items()), key=lambda item: (item[1], rank.get(item[0], len(rank)), item[0])))


def load_run_any(run_dir: Path) -> dict[str, Any]:
    """``result.json`` of any run, real ones included (``campaign.load_run`` refuses those:
    they cannot be replayed, but their reports can be made again)."""
    try:
        return load_run(run_dir)
    except NotARun as error:
        if "real-process run" not in str(error):
            raise
    from chaoskube.api.files import RESULT_MAX_BYTES, read_limited

    return orjson.loads(read_limited(run_dir / "result.json", RESULT_MAX_BYTES, "a result.json"))


def rerender_run(run_dir: Path) -> list[Path]:
    """Write a run's report.md, report.html and junit.xml again (module docstring)."""
    result = load_result(run_dir)
    if result.mode == "real":
        from chaoskube.experiments.real.runner import write_real_result
        from chaoskube.experiments.reports import write_reports

        write_real_result(result)
        write_reports(result)
    else:
        from chaoskube.experiments.reports import write_result

        write_result(result)
    return [run_dir / name for name in ("result.json", "report.md", "report.html", "junit.xml")]


def run_dirs(directories: Sequence[Path]) -> list[Path]:
    """The run directories among ``directories``: each one that holds a result.json, and
    the run directories inside each that does not (a campaign directory), in name order."""
    found: list[Path] = []
    for directory in directories:
        if not directory.is_dir():
            raise NotARun(f"{directory}: not a directory")
        if (directory / "result.json").is_file():
            found.append(directory)
            continue
        inside = sorted(path for path in directory.iterdir() if path.is_dir() and (path / "result.json").is_file())
        if not inside:
            raise NotARun(f"{directory}: no result.json here or in its subdirectories; give run directories (chaoskube run --out DIR) or campaign directories (chaoskube explore --out DIR)")
        found += inside
    unique = list(dict.fromkeys(path.resolve() for path in found))
    if len(unique) != len(found):
        raise NotARun("a run directory is given twice (directly, or inside a campaign directory also given)")
    return found


def merge(directories: Sequence[Path], out: Path) -> tuple[dict[str, Any], list[Path]]:
    """One summary over the runs of ``directories``, written into ``out`` (module docstring)."""
    runs = run_dirs(directories)
    records = []
    for run_dir in runs:
        payload = load_run_any(run_dir)
        record = record_of_payload(payload, str(run_dir), target=replay_target(payload), replay=_without_out(str(payload.get("replay", ""))))
        record["link"] = os.path.relpath(run_dir, out)  # the summary's links are relative to it
        records.append(record)
    keys = [(record["experiment"], record["seed"]) for record in records]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise NotARun(f"{twice[0]} seed {twice[1]} appears twice among the runs; a summary counts each run once")
    records.sort(key=lambda record: (record["experiment"], record["seed"]))
    seeds = sorted({record["seed"] for record in records})
    result = CampaignResult(records=records, planned=len(records), wall_seconds=sum(record["wall_seconds"] for record in records))
    summary = summarize(result, _seed_text(seeds), 1)
    summary["merged_from"] = [str(directory) for directory in directories]
    out.mkdir(parents=True, exist_ok=True)
    return summary, write_summary(out, summary, records)


def _without_out(command: str) -> str:
    """A recorded replay command without its ``--out DIR`` (as ``explore`` names its runs'
    replays: where the run went is the summary's business)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    kept = []
    skip = False
    for item in argv:
        if skip:
            skip = False
        elif item == "--out":
            skip = True
        else:
            kept.append(item)
    return shlex.join(kept)


def _seed_text(seeds: Sequence[int]) -> str:
    """``1..3,7`` for [1, 2, 3, 7]."""
    parts: list[str] = []
    start = previous = None
    for seed in seeds:
        if start is None:
            start = previous = seed
        elif seed == previous + 1:  # type: ignore[operator]
            previous = seed
        else:
            parts.append(f"{start}..{previous}" if start != previous else str(start))
            start = previous = seed
    if start is not None:
        parts.append(f"{start}..{previous}" if start != previous else str(start))
    return ",".join(parts)

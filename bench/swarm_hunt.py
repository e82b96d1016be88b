"""Detection with no hint (issue 16): hunt every detection variant of the gallery with
general experiments (``swarm`` by default; a comma-separated list is tried in order), not
the catalogue experiment written for it, plain seeds against ``--guided``, and print the
table variant -> experiment and seed of the first catch -> seconds.

For each variant and experiment: ``chaoskube explore EXPERIMENT --broken NAME --seeds 1..N
--fail-fast`` (one shared boot), then the same with ``--guided``; the next experiment of the
list is tried only when the ones before it found nothing in N seeds. A variant counts as
found at the first seed whose broken run is not as expected while the unbroken run of the
same seed is (``chaoskube run EXPERIMENT --seed S``): a seed that fails unbroken too is a
false alarm of the experiment, listed in the row, and the hunt goes on after it.

    python3 bench/swarm_hunt.py [--experiment swarm[,EXPERIMENT...]] [--seeds 100] [--jobs 1]
                                [--only NAME ...] [--modes plain,guided] [--out runs/swarm-hunt]

Not a speed benchmark: it measures what exploration finds. The seconds are the campaign's
wall time (summary.json ``wall_seconds``; the runs happen in forked booter processes that
the campaign does not reap, so their CPU time is not the caller's to read): compare them
within one run of this script, on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from chaoskube import gallery


def hunt_in_order(name: str, experiments: list[str], seeds: int, mode: str, out: Path, jobs: int) -> dict:
    """The first of ``experiments`` that catches ``name`` within ``seeds``; seconds summed."""
    spent = 0.0
    alarms: list[str] = []
    row: dict = {"caught": False}
    for experiment in experiments:
        row = hunt(name, experiment, seeds, mode, out / experiment, jobs)
        if row.get("seconds") is not None:
            spent += row["seconds"]
        alarms += [f"{experiment} {seed}" for seed in row.get("false_alarms", ())]
        row = row | {"experiment": experiment, "seconds": round(spent, 1), "false_alarms": alarms}
        if row.get("caught"):
            break
    return row


def unbroken_passes(experiment: str, seed: int, out: Path) -> bool:
    """Whether the unbroken run of ``seed`` is as expected: a failure it shares is no catch."""
    directory = out / f"unbroken-{experiment}-{seed}"
    subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "run", experiment, "--seed", str(seed), "--out", str(directory)],
                   capture_output=True, text=True, check=False)
    result = directory / "result.json"
    return result.exists() and bool(json.loads(result.read_text()).get("as_expected"))


def hunt(name: str, experiment: str, seeds: int, mode: str, out: Path, jobs: int = 1) -> dict:
    """The first seed of 1..``seeds`` whose broken run fails where the unbroken run of the
    same seed passes (a seed both fail is a false alarm of the experiment: listed, skipped)."""
    start, spent, false_alarms = 1, 0.0, []
    while start <= seeds:
        row = hunt_from(name, experiment, start, seeds, mode, out / f"from-{start}", jobs)
        spent += row.get("seconds") or 0.0
        if not row.get("caught") or unbroken_passes(experiment, row["seed"], out):
            return row | {"seconds": round(spent, 1), "false_alarms": false_alarms}
        false_alarms.append(row["seed"])
        start = row["seed"] + 1
    return {"caught": False, "seconds": round(spent, 1), "false_alarms": false_alarms}


def hunt_from(name: str, experiment: str, first: int, seeds: int, mode: str, out: Path, jobs: int = 1) -> dict:
    directory = out / mode / name
    command = [sys.executable, "-m", "chaoskube.experiments.cli", "explore", experiment, "--broken", name,
               "--seeds", f"{first}..{seeds}", "--fail-fast", "--jobs", str(jobs), "--out", str(directory)]
    if mode == "guided":
        command.append("--guided")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    summary_path = directory / "summary.json"
    if not summary_path.exists():
        return {"caught": None, "seconds": None, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    summary = json.loads(summary_path.read_text())
    findings = summary.get("findings") or []
    first = findings[0]["first"] if findings else None
    row = {"caught": first is not None, "runs": summary.get("finished_runs"), "seconds": summary.get("wall_seconds")}
    if first is not None:
        row |= {"seed": first["seed"], "checkers": first["checkers"], "replay": first["replay"]}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="swarm", help="an experiment, or several comma-separated, tried in order")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--modes", default="plain,guided")
    parser.add_argument("--out", type=Path, default=Path("runs/swarm-hunt"))
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    experiments = [name for name in args.experiment.split(",") if name]
    rows = []
    for variant in gallery.DETECTION_VARIANTS:
        if args.only and variant.name not in args.only:
            continue
        row = {"name": variant.name, "caught_by": variant.caught_by}
        for mode in modes:
            row[mode] = hunt_in_order(variant.name, experiments, args.seeds, mode, args.out, args.jobs)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    header = " | ".join(f"{mode}: first catch | {mode}: seconds" for mode in modes)
    print(f"| variant | {header} | checkers failed (first mode that caught) | seeds that failed unbroken too (skipped) |")
    print("|---|" + "---|---|" * len(modes) + "---|---|")
    found = {mode: 0 for mode in modes}
    for row in rows:
        cells, checkers = [], ""
        for mode in modes:
            result = row[mode]
            if result.get("caught"):
                found[mode] += 1
                where = f"{result['experiment']} seed {result['seed']}" if len(experiments) > 1 else str(result["seed"])
                cells += [where, str(result["seconds"])]
                checkers = checkers or ", ".join(result["checkers"])
            elif result.get("caught") is None:
                cells += ["error", "--"]
            else:
                cells += [f"not in 1..{args.seeds}", str(result["seconds"])]
        alarms = sorted({alarm for mode in modes for alarm in row[mode].get("false_alarms", ())})
        print(f"| `{row['name']}` | " + " | ".join(cells) + f" | {checkers or '--'} | {', '.join(alarms) or '--'} |")
    for mode in modes:
        share = found[mode] / len(rows) if rows else 0.0
        print(f"{mode}: {found[mode]} of {len(rows)} variants found within {args.seeds} seeds ({share:.0%}) by `{args.experiment}`")


if __name__ == "__main__":
    main()

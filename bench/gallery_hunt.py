"""Detection power (issue 13): hunt every detection variant of the gallery with its
catalogue experiment and print the table of docs/checkers.md.

For each variant: ``chaoskube explore EXPERIMENT --broken NAME --seeds 1..N --fail-fast``
(one shared boot, boot seed 0: the issue's command); a variant that command does not
catch is hunted again with ``--boot-seed seed`` (each seed boots its own cluster: bugs
that need a particular boot state, docs/campaigns.md). A row: the first seed that caught
it, which boot, the checkers that failed there (the variant's ``caught_by`` first), and
the replay command; for a variant never caught, in how many runs its broken code ran
(``runs_reaching`` of the summary: 0 is a coverage gap, more an oracle gap).

    python3 bench/gallery_hunt.py [--seeds 50] [--jobs 1] [--only NAME ...] [--out runs/hunt]
    python3 bench/gallery_hunt.py --compare-guided [--seeds 30] [--only NAME ...]

``--compare-guided`` hunts each variant twice over the same seeds, plain and
``--guided`` (issue 36), and prints the first catch of each and the guided campaign's noise:
runs that missed their outcome without a finding, and the mutants among them (must be 0).

Not a speed benchmark: it measures what the checkers catch. It runs one campaign per
variant (most stop at seed 1); the whole hunt takes about half an hour of one core.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from chaoskube import gallery

ROOT = Path(__file__).resolve().parents[1]


def hunt(name: str, experiment: str, seeds: int, jobs: int, out: Path, boot: str | None, *, guided: bool = False) -> dict | None:
    directory = out / (name + ("-boot-seed" if boot else "") + ("-guided" if guided else ""))
    command = [sys.executable, "-m", "chaoskube.experiments.cli", "explore", experiment, "--broken", name, "--seeds", f"1..{seeds}", "--fail-fast", "--jobs", str(jobs), "--out", str(directory)]
    if boot:
        command += ["--boot-seed", boot]
    if guided:
        command.append("--guided")
    subprocess.run(command, capture_output=True, text=True, check=False)
    summary = json.loads((directory / "summary.json").read_text())
    findings = summary.get("findings") or []
    first = findings[0]["first"] if findings else None
    noise = summary.get("noise") or {}
    if first is None:
        return {"caught": False, "runs": summary.get("finished_runs"), "boot": boot or "0", "reaching": findings[0].get("runs_reaching") if findings else None, "noise": noise.get("runs", 0), "noise_mutants": noise.get("mutated", 0)}
    return {"caught": True, "seed": first["seed"], "checkers": first["checkers"], "replay": first["replay"], "boot": boot or "0", "runs": summary.get("finished_runs"), "noise": noise.get("runs", 0), "noise_mutants": noise.get("mutated", 0)}


def compare_guided(args: argparse.Namespace) -> None:
    """Each variant hunted plain and --guided over the same seeds (shared boot)."""
    print("| variant | experiment | plain: first catch | guided: first catch | guided runs | guided noise (mutants) |")
    print("|---|---|---|---|---|---|")
    for variant in gallery.DETECTION_VARIANTS:
        if args.only and variant.name not in args.only:
            continue
        plain = hunt(variant.name, variant.experiment, args.seeds, args.jobs, args.out, None)
        guided = hunt(variant.name, variant.experiment, args.seeds, args.jobs, args.out, None, guided=True)
        assert plain is not None and guided is not None
        cell = lambda row: f"seed {row['seed']}" if row["caught"] else f"not in 1..{args.seeds}"  # noqa: E731
        print(f"| `{variant.name}` | {variant.experiment} | {cell(plain)} | {cell(guided)} | {guided['runs']} | {guided['noise']} ({guided['noise_mutants']}) |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", type=Path, default=Path("runs/hunt"))
    parser.add_argument("--compare-guided", action="store_true", help="hunt each variant plain and --guided over the same seeds (issue 36)")
    args = parser.parse_args()
    if args.compare_guided:
        compare_guided(args)
        return
    rows = []
    for variant in gallery.DETECTION_VARIANTS:
        if args.only and variant.name not in args.only:
            continue
        started = time.perf_counter()
        found = hunt(variant.name, variant.experiment, args.seeds, args.jobs, args.out, None)
        if found is not None and not found["caught"]:
            found = hunt(variant.name, variant.experiment, args.seeds, args.jobs, args.out, "seed")
        assert found is not None
        found |= {"name": variant.name, "experiment": variant.experiment, "caught_by": variant.caught_by, "seconds": round(time.perf_counter() - started, 1)}
        rows.append(found)
        print(json.dumps(found), file=sys.stderr, flush=True)
    print("| variant | experiment | expected checker | boot seed | seeds to first catch | checkers failed there |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        if row["caught"]:
            checkers = sorted(row["checkers"], key=lambda name: (name != row["caught_by"], name))
            print(f"| `{row['name']}` | {row['experiment']} | {row['caught_by']} | {row['boot'] if row['boot'] != 'seed' else '= seed'} | {row['seed']} | {', '.join(checkers)} |")
        else:
            reach = "not counted" if row.get("reaching") is None else f"its code ran in {row['reaching']} of {row['runs']} runs ({'an oracle gap' if row['reaching'] else 'a coverage gap'})"
            print(f"| `{row['name']}` | {row['experiment']} | {row['caught_by']} | 0, then = seed | not in 1..{args.seeds}: {reach} | -- |")


if __name__ == "__main__":
    main()

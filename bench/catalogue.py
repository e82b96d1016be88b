"""False alarms over the catalogue: every simulated experiment over a range of seeds must
meet its expected outcome (a seed sweep: it lives here, not in the test suite, which runs
seed 1 of each -- tests/experiments/test_catalogue.py).

The same runs as ``chaoskube explore --all --seeds A..B --jobs N``: one forked campaign,
each experiment's boot shared by its seeds (experiments/forking.py), whose runs write byte
for byte the journals ``chaoskube run NAME --seed N`` writes. Prints one line per
experiment (runs as expected, wall seconds per run) and every run that missed its outcome
with why; exits 1 if any did.

    python3 bench/catalogue.py [--seeds 2..20] [--jobs 2] [--only NAME ...] [--out runs/catalogue]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from chaoskube.experiments import registry
from chaoskube.experiments.campaign import SeedsError, parse_seeds, plan_jobs, run_campaign, why_unexpected
from chaoskube.experiments.registry import SYSTEMS


def simulated() -> list[str]:
    return [name for name in registry.names() if not getattr(SYSTEMS[registry.find(name).system], "real_time", False)]


def fail(message: str) -> SystemExit:
    print(f"bench/catalogue.py: {message}", file=sys.stderr)
    return SystemExit(2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="2..20", help="seeds as explore takes them: A..B, N or a list (default 2..20: seed 1 is in the test suite)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[], help="experiment names (default: every simulated one)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    names = args.only or simulated()
    unknown = sorted(set(names) - set(simulated()))
    if unknown:
        raise fail(f"--only {unknown[0]!r} is not a simulated catalogue experiment (see chaoskube list)")
    try:
        seeds = parse_seeds(args.seeds)
    except SeedsError as error:
        raise fail(str(error)) from None
    out = args.out or Path(tempfile.mkdtemp(prefix="catalogue-"))
    jobs = plan_jobs([(name, registry.find(name)) for name in names], seeds, out)
    started, cpu = time.monotonic(), defaultdict(float)
    per: dict[str, list[dict]] = defaultdict(list)

    def progress(record: dict) -> None:
        per[record["experiment"]].append(record)
        done = sum(len(records) for records in per.values())
        mark = "" if record["as_expected"] and not record["error"] else f"  MISSED: {why_unexpected(record)}"
        print(f"[{done}/{len(jobs)}] {record['experiment']} seed {record['seed']}{mark}", file=sys.stderr, flush=True)

    campaign = run_campaign(jobs, args.jobs, on_record=progress)
    for record in campaign.records:
        cpu[record["experiment"]] += float(record.get("wall_seconds") or 0.0)
    missed = [record for record in campaign.records if record["error"] or not record["as_expected"]]
    print("| experiment | seeds | as expected | wall s per run |\n|---|---|---|---|")
    for name in names:
        records = per.get(name, [])
        good = sum(1 for record in records if record["as_expected"] and not record["error"])
        print(f"| {name} | {args.seeds} | {good} of {len(records)} | {cpu[name] / max(1, len(records)):.1f} |")
    total = len(campaign.records)
    print(f"\n{total - len(missed)} of {total} runs as expected ({len(jobs)} planned) in {time.monotonic() - started:.0f} s wall, {args.jobs} at a time; runs in {out}")
    for record in missed:
        print(f"missed: {record['experiment']} seed {record['seed']}: {why_unexpected(record)}")
    return 1 if missed or campaign.interrupted or total != len(jobs) else 0


if __name__ == "__main__":
    sys.exit(main())

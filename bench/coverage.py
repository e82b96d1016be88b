"""Coverage per budget (issue 16): ``explore --guided`` against plain seeds, in one run.

Runs the same experiment over the same seeds twice -- a plain campaign (the experiment's
own faults on every seed) and a coverage-guided one (experiments/guided.py) -- and prints
the distinct journal tuples each reached (experiments/coverage.py), at a few points of the
budget and at its end, and the ratio guided / plain (the baseline, measured in the same
run). With ``--line-coverage`` it also prints the Python lines of ``chaoskube/`` each
reached (coverage.py; slower).

    python3 bench/coverage.py [--experiment etcd-leader-kill] [--runs 30] [--jobs 1] [--generation 8] [--line-coverage] [--out runs/bench-coverage]

The issue asks for coverage per 100 runs; the default budget is 30 runs per side on a
shared 2-core machine (``--runs 100`` for the full figure).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from chaoskube.experiments import registry
from chaoskube.experiments.campaign import plan_jobs, run_campaign, take_coverage
from chaoskube.experiments.guided import GENERATION, coverage_summary, plain_coverage_summary, run_guided_campaign


def campaign(experiment: str, runs: int, jobs: int, out: Path, *, guided: bool, generation: int, line_coverage: bool) -> tuple[dict, float]:
    import dataclasses

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    found = registry.find(experiment)
    job_list = plan_jobs([(experiment, found)], list(range(1, runs + 1)), out)
    if line_coverage:
        job_list = [dataclasses.replace(job, line_coverage=True) for job in job_list]
    started = time.perf_counter()
    if guided:
        _, states = run_guided_campaign(job_list, jobs, generation_size=generation)
        coverage = coverage_summary(states, line_coverage=line_coverage)
    else:
        sets: dict = {}
        result = run_campaign(job_list, jobs, on_record=lambda record: sets.__setitem__(record["out_dir"], take_coverage(record)))
        coverage = plain_coverage_summary(result.records, sets, line_coverage=line_coverage)
    return coverage[found.name], time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="etcd-leader-kill")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--generation", type=int, default=GENERATION)
    parser.add_argument("--line-coverage", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-coverage"))
    arguments = parser.parse_args()
    results = {}
    for mode in ("plain", "guided"):
        results[mode] = campaign(arguments.experiment, arguments.runs, arguments.jobs, arguments.out / mode, guided=mode == "guided", generation=arguments.generation, line_coverage=arguments.line_coverage)
    plain, guided = results["plain"][0], results["guided"][0]
    points = sorted({point for point in (arguments.runs // 4, arguments.runs // 2, 3 * arguments.runs // 4, arguments.runs) if point > 0})
    print(f"{arguments.experiment}: {arguments.runs} runs per side, --jobs {arguments.jobs}, generations of {arguments.generation}")
    print("runs    plain tuples  guided tuples  ratio")
    for point in points:
        a, b = plain["curve"][point - 1], guided["curve"][point - 1]
        print(f"{point:>4}  {a:>12}  {b:>13}  {b / a:.3f}")
    if arguments.line_coverage:
        a, b = plain["lines"], guided["lines"]
        print(f"lines {a} plain, {b} guided: ratio {b / a:.3f}")
    print(f"guided corpus: {len(guided['corpus'])} runs; wall: plain {results['plain'][1]:.0f} s, guided {results['guided'][1]:.0f} s")
    print(f"coverage per {arguments.runs} runs: plain {plain['tuples']}, guided {guided['tuples']}, ratio {guided['tuples'] / plain['tuples']:.3f}")


if __name__ == "__main__":
    sys.exit(main())

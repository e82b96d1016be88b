"""What keeping ``metadata.managedFields`` on every write costs a simulated run.

Runs one catalogue experiment (default ``etcd-failover-under-kubernetes``, seed 2) several
times in this process, alternating: with the API server's field manager on (as shipped:
every create, update and patch records its manager, :mod:`chaoskube.api.managedfields`), and
with ``ApiServer._track`` replaced by a no-op (no Update entries; applies still work).
Prints the CPU seconds of each run (``time.process_time``: this process only, so other
load on the machine weighs less than on wall time) and the median of each side. The first
run of each side pays for imports and caches.

    python3 bench/managed_fields.py [--experiment NAME] [--seed 2] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time

from chaoskube.apiserver import server


def run_once(experiment: str, seed: int, out: str) -> float:
    from chaoskube.experiments import cli

    started = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main(["run", experiment, "--seed", str(seed), "--out", out])
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="etcd-failover-under-kubernetes")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    original = server.ApiServer._track
    seconds: dict[str, list[float]] = {"tracked": [], "untracked": []}
    with tempfile.TemporaryDirectory() as scratch:
        for index in range(args.runs):
            server.ApiServer._track = original
            seconds["tracked"].append(run_once(args.experiment, args.seed, f"{scratch}/tracked-{index}"))
            server.ApiServer._track = lambda self, *rest: None
            seconds["untracked"].append(run_once(args.experiment, args.seed, f"{scratch}/untracked-{index}"))
    server.ApiServer._track = original
    for side, values in seconds.items():
        print(f"{side:10} runs {' '.join(f'{value:.2f}' for value in values)} s, median {statistics.median(values):.2f} s")
    print(f"overhead of the median: {statistics.median(seconds['tracked']) / statistics.median(seconds['untracked']) - 1:+.0%}")


if __name__ == "__main__":
    main()

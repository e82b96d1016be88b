"""etcd simulation speed: simulated seconds per wall second.

A 3-member cluster, 10 clients at 200 operations/s in total, 300 simulated seconds of
workload with the leader killed every 30 s (restarted 10 s later), every checker run
afterwards (timed separately). Target: >= 50x real time.

    python3 bench/etcd.py [--seconds 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import msgspec

from chaoskube.experiments.model import Experiment
from chaoskube.experiments.runner import run_experiment


def experiment(seconds: float) -> Experiment:
    kills = [{"at_s": at, "kind": "kill", "target": "leader:etcd", "duration_s": 10.0} for at in range(30, int(seconds), 30)]
    return msgspec.convert(
        {
            "name": "bench-etcd",
            "title": "benchmark",
            "description": "bench/etcd.py",
            "source": "bench",
            "system": "etcd",
            "cluster": {"members": 3},
            "workload": {"clients": 10, "keys": 5, "rate_per_s": 200.0},
            "phases": {"warmup_s": 0, "faults_s": seconds, "recovery_s": 30, "settle_s": 0},
            "schedule": kills,
            "checkers": ["raft-safety", "linearizability", "watch", "steady-state"],
        },
        type=Experiment,
    )


def main() -> None:
    from loguru import logger

    logger.remove()  # this script is an application: the run's log goes to run.log only
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"etcd benchmark: 3 members, 10 clients, 200 ops/s, {args.seconds:g} simulated s, leader kill every 30 s, seed {args.seed}")
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        result = run_experiment(experiment(args.seconds), args.seed, out)
        total = time.perf_counter() - started
    simulation = result.wall_seconds
    checking = total - simulation
    metrics = result.metrics
    print(f"  simulated      : {result.simulated_seconds:8.1f} s in {simulation:6.2f} s wall = {result.simulated_seconds / simulation:6.1f}x real time (target >= 50x)")
    print(f"  checkers       : {checking:8.2f} s wall for {metrics['operations_ok'] + metrics['operations_fail'] + metrics['operations_info']:,} operations")
    print(f"  operations     : ok {metrics['operations_ok']:,}, fail {metrics['operations_fail']:,}, info {metrics['operations_info']:,}; elections {metrics['elections']}")
    print(f"  verdicts       : " + ", ".join(f"{name} {verdict.label}" for name, verdict in result.verdicts.items()))
    print(f"  peak RSS       : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()

"""etcd simulation speed: simulated seconds per CPU second.

A 3-member cluster, 10 clients at 200 operations/s in total, 300 simulated seconds of
workload with the leader killed every 30 s (restarted 10 s later), every checker run
afterwards (timed separately). Target: >= 30x real time, in CPU time of the simulation
(``time.process_time``: on a shared machine wall time says more about the neighbours).

Printed: the speed, the checkers' time, and what the run did per client operation --
virtual instants, messages, journal records, proposals against appends (one per Ready
that persisted entries, i.e. per fsync: etcd's raftNode batches every proposal that
arrived while the previous Ready was being persisted), linearizable reads against the
ReadIndex rounds that served them (etcd's linearizableReadLoop) -- and, measured in the
same run, the same cluster with its clients idle (0.1 operations/s): the ratio says what
the workload costs on top of the cluster's own heartbeats, elections and kills.

    python3 bench/etcd.py [--seconds 300] [--seed 1] [--no-baseline] [--profile FILE]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaoskube.experiments.model import Experiment  # noqa: E402


def experiment(seconds: float, rate_per_s: float = 200.0) -> Experiment:
    kills = [{"at_s": at, "kind": "kill", "target": "leader:etcd", "duration_s": 10.0} for at in range(30, int(seconds), 30)]
    return msgspec.convert(
        {
            "name": "bench-etcd",
            "title": "benchmark",
            "description": "bench/etcd.py",
            "source": "bench",
            "system": "etcd",
            "cluster": {"members": 3},
            "workload": {"clients": 10, "keys": 5, "rate_per_s": rate_per_s},
            "phases": {"warmup_s": 0, "faults_s": seconds, "recovery_s": 30, "settle_s": 0},
            "schedule": kills,
            "checkers": ["raft-safety", "linearizability", "watch", "steady-state"],
        },
        type=Experiment,
    )


def run(spec: Experiment, seed: int, profile: str | None = None) -> dict[str, Any]:
    """Run ``spec`` and measure it: CPU of the simulation and of the checkers, and counts
    taken from the World and the etcd members (every incarnation)."""
    import chaoskube.experiments.simulated as simulated
    from chaoskube.etcd.server import EtcdMember
    from chaoskube.experiments.registry import SYSTEMS
    from chaoskube.experiments.simulated import run_simulated

    worlds: list[Any] = []
    members: list[EtcdMember] = []
    original_world, original_init = simulated.World, EtcdMember.__init__

    class CountedWorld(original_world):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            worlds.append(self)

    def counted_init(self: EtcdMember, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        members.append(self)

    timing: dict[str, float] = {}
    original_check = simulated.run_checker

    def timed_check(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return original_check(*args, **kwargs)
        finally:
            timing["checkers"] = timing.get("checkers", 0.0) + time.process_time() - started

    simulated.World, EtcdMember.__init__, simulated.run_checker = CountedWorld, counted_init, timed_check  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as out:
            profiler = None
            if profile:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            started = time.process_time()
            result = run_simulated(spec, SYSTEMS["etcd"], seed, out)
            total = time.process_time() - started
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(profile)
    finally:
        simulated.World, EtcdMember.__init__, simulated.run_checker = original_world, original_init, original_check  # type: ignore[method-assign]
    world = worlds[-1]
    counts = {"instants": world.instants, "events": world.events_run, "messages": world.network.sent, "records": world.journal.count}
    for member in members:
        for key, value in member.statistics().items():
            counts[key] = counts.get(key, 0) + value
    simulation = total - timing.get("checkers", 0.0)
    metrics = result.metrics
    return {
        "result": result,
        "cpu": simulation,
        "checkers": timing.get("checkers", 0.0),
        "speed": result.simulated_seconds / simulation,
        "operations": metrics["operations_ok"] + metrics["operations_fail"] + metrics["operations_info"],
        **counts,
    }


def main() -> None:
    from loguru import logger

    logger.remove()  # this script is an application: the run's log goes to run.log only
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-baseline", action="store_true", help="skip the idle-clients baseline")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the loaded run into FILE and print the top functions")
    args = parser.parse_args()
    print(f"etcd benchmark: 3 members, 10 clients, 200 ops/s, {args.seconds:g} simulated s, leader kill every 30 s, seed {args.seed}")
    loaded = run(experiment(args.seconds), args.seed, args.profile)
    result = loaded["result"]
    operations = loaded["operations"]
    print(f"  simulated      : {result.simulated_seconds:8.1f} s in {loaded['cpu']:6.2f} s CPU = {loaded['speed']:6.1f}x real time (target >= 30x: {'met' if loaded['speed'] >= 30 else 'NOT met'}); {result.wall_seconds:.1f} s wall")
    print(f"  checkers       : {loaded['checkers']:8.2f} s CPU for {operations:,} operations")
    metrics = result.metrics
    print(f"  operations     : ok {metrics['operations_ok']:,}, fail {metrics['operations_fail']:,}, info {metrics['operations_info']:,}; elections {metrics['elections']}")
    per = lambda key: loaded[key] / max(1, operations)  # noqa: E731
    print(f"  per operation  : {per('instants'):.2f} virtual instants, {per('messages'):.2f} messages, {per('records'):.2f} journal records, {per('events'):.2f} heap events")
    print(f"  totals         : {loaded['instants']:,} instants, {loaded['messages']:,} messages, {loaded['records']:,} journal records")
    print(f"  raft           : {loaded['proposals']:,} client proposals in {loaded['leader_appends']:,} leader appends ({loaded['proposals'] / max(1, loaded['leader_appends']):.2f} per append); "
          f"{loaded['appends']:,} appends, {loaded['readys']:,} Readys, {loaded['fsyncs']:,} fsyncs on all members")
    print(f"  reads          : {loaded['linearizable_reads']:,} linearizable reads in {loaded['read_rounds']:,} ReadIndex rounds ({loaded['linearizable_reads'] / max(1, loaded['read_rounds']):.2f} per round)")
    print("  verdicts       : " + ", ".join(f"{name} {verdict.label}" for name, verdict in result.verdicts.items()))
    if not args.no_baseline:
        idle = run(experiment(args.seconds, rate_per_s=0.1), args.seed)
        print(f"  baseline       : clients idle (0.1 ops/s), same run: {idle['result'].simulated_seconds:.1f} s in {idle['cpu']:.2f} s CPU = {idle['speed']:.1f}x; "
              f"the workload costs {loaded['cpu'] / max(idle['cpu'], 1e-9):.2f}x the idle cluster's CPU")
    print(f"  peak RSS       : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.profile:
        import pstats

        for key in ("tottime", "cumulative"):
            print(f"\n  profile by {key} ({args.profile}):")
            pstats.Stats(args.profile, stream=sys.stdout).sort_stats(key).print_stats(25)


if __name__ == "__main__":
    main()

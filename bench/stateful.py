"""Stateful-testing speed: Hypothesis examples per minute on one core for a small cluster.

Issue 7, "Must show", the benchmark: :class:`chaoskube.testing.ClusterMachine` on a small
cluster (3 etcd members, 1 API server, 1 controller-manager, 1 scheduler, 3 nodes: the
machine's default spec), up to 20 steps per example, every rule and invariant as shipped
(workload steps, a rule per fault kind, the four safety invariants after every step, the
convergence check at teardown). Hypothesis settings: ``stateful_step_count=20``,
``deadline=None``, ``database=None``, derandomized (the same examples on every run of this
script), health checks off (a live cluster is slow to build by Hypothesis's standards). The
target is >= 120 examples per minute per core.

Printed: examples, the wall and CPU seconds they took and examples per minute (by both:
on a shared machine wall / CPU above 1 says the core was not ours alone, so compare runs by
CPU time then), the steps per example, and a baseline measured in the same process just
before: boot-only examples (boot, one step that does nothing, the invariants, teardown's
heal and convergence check), which is the floor the steps are added to. A split of the
machine's time (boot, steps, invariants, teardown) is printed from counters wrapped around
those methods; ``--profile FILE`` writes a cProfile of the main run (the stepping thread
and the World's thread; profiling slows both) and prints the top functions.

    taskset -c 1 python3 bench/stateful.py [--examples 100] [--steps 20]
        [--baseline-examples 30] [--quick] [--profile FILE]

``--quick`` (CI): 20 examples and 10 baseline examples.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import rule, run_state_machine_as_test

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaoskube.testing import ClusterMachine, RunSummary, focus  # noqa: E402
from chaoskube.testing import machine as machine_module  # noqa: E402

TARGET_PER_MINUTE = 120.0


class _Timers:
    """Wall seconds spent in named parts of the machine, summed over a run."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self.calls[name] += 1

        return timed


def _recorded(machine: type[ClusterMachine], summaries: list[RunSummary]) -> type[ClusterMachine]:
    class Recorded(machine):  # type: ignore[valid-type, misc]
        def teardown(self) -> None:
            try:
                super().teardown()
            finally:
                if self.live is not None:
                    summaries.append(self.summary())

    Recorded.__name__ = Recorded.__qualname__ = f"Recorded{machine.__name__}"
    return Recorded


class _Idle(ClusterMachine):
    @rule()
    def idle(self) -> None:
        """A step that does nothing (not journaled): the examples are boot + teardown."""


BootOnly = focus(_Idle, "BootOnly", rules=("idle",))


def _run(machine: type[ClusterMachine], examples: int, steps: int, profile: cProfile.Profile | None = None) -> dict[str, Any]:
    summaries: list[RunSummary] = []
    recorded = _recorded(machine, summaries)
    config = settings(max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    started, cpu_started = time.perf_counter(), time.process_time()
    if profile is not None:
        profile.enable()
        _profile_world_threads(profile)
    try:
        run_state_machine_as_test(recorded, settings=config)
    finally:
        if profile is not None:
            profile.disable()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    count = len(summaries)
    return {
        "examples": count,
        "wall_s": wall,
        "cpu_s": cpu,
        "per_minute_wall": count / wall * 60 if wall else 0.0,
        "per_minute_cpu": count / cpu * 60 if cpu else 0.0,
        "steps": [len(summary.steps) for summary in summaries],
        "events": [summary.events for summary in summaries],
        "virtual_s": [summary.virtual_time_s for summary in summaries],
    }


def _profile_world_threads(profile: cProfile.Profile) -> None:
    """Profile the World's thread too: each LiveCluster runs its world in a new thread."""
    original = machine_module.LiveCluster._thread_main
    if getattr(original, "_bench_profiled", False):
        return

    def thread_main(self: Any) -> None:
        # cProfile profiles one thread per Profile object; a second one per world thread,
        # merged into the first's statistics at the end of each world.
        world_profile = cProfile.Profile()
        world_profile.enable()
        try:
            original(self)
        finally:
            world_profile.disable()
            _WORLD_PROFILES.append(world_profile)

    thread_main._bench_profiled = True  # type: ignore[attr-defined]
    machine_module.LiveCluster._thread_main = thread_main  # type: ignore[method-assign]


_WORLD_PROFILES: list[cProfile.Profile] = []


def _instrument(timers: _Timers) -> None:
    live = machine_module.LiveCluster
    live.open = timers.wrap("boot (world start, cluster to Ready)", live.open)  # type: ignore[method-assign]
    cluster_machine = machine_module.ClusterMachine
    cluster_machine.teardown = timers.wrap("teardown (heal, converge, stop)", cluster_machine.teardown)  # type: ignore[method-assign]
    checker = machine_module.run_checker
    machine_module.run_checker = timers.wrap("checkers (invariants and convergence)", checker)
    # every step (each rule's body) goes through LiveCluster.run; boot and teardown do too
    live.run = timers.wrap("LiveCluster.run (steps, boot and teardown inside)", live.run)  # type: ignore[method-assign]


def _describe(name: str, result: dict[str, Any]) -> str:
    steps = result["steps"] or [0]
    return (
        f"{name}: {result['examples']} examples in {result['wall_s']:.1f} s wall, {result['cpu_s']:.1f} s CPU -> "
        f"{result['per_minute_wall']:.0f}/min wall, {result['per_minute_cpu']:.0f}/min CPU; "
        f"steps per example mean {statistics.mean(steps):.1f} max {max(steps)}; "
        f"journal events mean {statistics.mean(result['events'] or [0]):.0f}; virtual s mean {statistics.mean(result['virtual_s'] or [0]):.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--baseline-examples", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", type=Path, default=None)
    options = parser.parse_args(argv)
    if options.quick:
        options.examples, options.baseline_examples = 20, 10
    spec = ClusterMachine.spec
    print(f"cluster: {spec.etcd_members} etcd, {spec.api_servers} API server(s), {spec.controller_managers} controller-manager(s), {spec.schedulers} scheduler(s), {len(spec.nodes())} nodes; up to {options.steps} steps per example")
    baseline = _run(BootOnly, options.baseline_examples, 1)
    print(_describe("baseline (boot-only examples)", baseline))
    timers = _Timers()
    _instrument(timers)
    profile = cProfile.Profile() if options.profile is not None else None
    result = _run(ClusterMachine, options.examples, options.steps, profile)
    print(_describe("ClusterMachine", result))
    for name, seconds in timers.seconds.most_common():
        print(f"  {name:55s} {seconds:7.2f} s wall  ({timers.calls[name]} calls)")
    print(f"examples/min (CPU): {result['per_minute_cpu']:.0f}  (target >= {TARGET_PER_MINUTE:.0f}); baseline {baseline['per_minute_cpu']:.0f}; examples/min (wall): {result['per_minute_wall']:.0f}")
    if profile is not None:
        stats = pstats.Stats(profile)
        for world_profile in _WORLD_PROFILES:
            stats.add(world_profile)
        stats.dump_stats(str(options.profile))
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(25)
    return 0 if result["per_minute_cpu"] >= TARGET_PER_MINUTE else 1


if __name__ == "__main__":
    sys.exit(main())

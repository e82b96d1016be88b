"""Exploration speed: seeds per CPU minute for a large ``random-nemesis`` run, forked and not.

The experiment is ``experiments/catalog/random-nemesis.yaml`` with its cluster, workload
and phases replaced (issue 6, "Must show", the benchmark):

- cluster: 3 etcd members, 2 API servers, 2 controller-managers, 2 schedulers, ``--nodes``
  nodes (default 50) round-robin over 3 zones;
- workload: ``--deployments`` Deployments (default 10) totalling ``--pods`` pods (default
  500), each with a PodDisruptionBudget (``minAvailable`` = replicas - 2) and a Service,
  traffic probes on;
- faults: the catalogue's nemesis kinds and count, from 6 s into a ``--faults-s`` fault
  phase (default 120 simulated seconds) and healed within ``faults_s - 12`` s of it;
- checkers: every checker the kubernetes system offers (``KubernetesSystem.checkers()``)
  that applies (``admission`` and ``admission-timing`` need webhooks, ``authorization``
  tenants: this cluster and workload have neither) but ``leader-election`` and
  ``service-availability``, which the catalogue entry leaves out on purpose (a nemesis may
  rightly fail them, and an experiment expected to pass has no checker that may fail).
  ``garbage-collection`` and ``graceful-termination`` answer unknown on a seed whose faults
  delete nothing (nothing to judge): such a seed is printed "NOT as expected" with them.

Each seed runs sequentially in this process through
:func:`chaoskube.experiments.runner.run_experiment` into its own temporary directory, so it writes
the whole record: ``journal.jsonl``, ``run.log``, ``result.json``, ``report.md``,
``report.html`` and ``junit.xml``. Pin the process to one core (``taskset -c 1``): the
figure is seeds per minute per core (target >= 15, i.e. <= 4 s wall per seed).

First, the campaign as ``chaoskube explore`` runs it (``--seeds`` seeds of the experiment,
written to a temporary file, through ``experiments/campaign.py`` with one process at a
time): once booting the experiment once and forking the booted process per seed
(docs/campaigns.md), once running every seed whole (``--no-fork``), the same seeds in the
same run. Printed: CPU seconds of the campaign's processes (booters and runs, as each
booter reports its own and its reaped children's ``getrusage``) per seed, seeds per CPU minute for each, the boot's share, the ratio,
whether the journals of both are the same (they must be), and the target (>= 15 seeds per
CPU minute forked). ``--no-campaign`` skips this part.

Then, in this process (``--no-split`` skips it), printed per seed: wall seconds per seed (mean / min / max), seeds per minute, the CPU seconds of
the seed (this process's, and the differential checker's reference copy's, a child the run
forks from its boot and reaps before it returns; on a shared machine wall / CPU above 1
says the core was not ours alone: compare runs by CPU time then), the split between
the simulation (``world.run``), the checkers and the report writing, and the ratio to a
baseline measured in the same process: the same experiment with no faults (nemesis and
schedule removed), ``--baseline-seeds`` seeds of it. The ratio faults / no faults says
what the nemesis costs on top of the cluster itself.

    taskset -c 1 python3 bench/explore.py [--seeds 5] [--first-seed 1] [--nodes 50]
        [--pods 500] [--faults-s 120] [--baseline-seeds 2] [--quick] [--profile FILE]
        [--no-campaign] [--no-split]

``--quick`` (CI): 2 seeds and 1 baseline seed of a 10-node, 100-pod cluster with a 30 s
fault phase. ``--profile FILE`` writes a cProfile of the fault runs to FILE (pstats) and
prints the top functions by tottime and cumtime.

The experiment is built programmatically from the catalogue file read as data
(``msgspec.convert`` to :class:`chaoskube.experiments.model.Experiment`); the nemesis options are
taken from wherever the file has them and go where the Experiment type keeps them: a
top-level ``nemesis`` field when it has one, else ``workload.nemesis``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as ``python3 bench/explore.py`` from a checkout
    sys.path.insert(0, str(ROOT))

CATALOG_ENTRY = ROOT / "experiments" / "catalog" / "random-nemesis.yaml"
#: The catalogue leaves these two out: they may rightly fail under a random nemesis (its description).
NOT_CHECKED = ("leader-election", "service-availability")


def build_experiment(*, nodes: int, pods: int, deployments: int, faults_s: float, faults: bool = True) -> Any:
    """``random-nemesis`` resized (module docstring). ``faults=False``: the same run with
    no nemesis and no schedule (the baseline). The catalogue file is read as data, so its
    nemesis options are found in either place (top level or ``workload``) and put where
    this build's Experiment type keeps them."""
    from chaoskube.experiments.model import Experiment, ExperimentError
    from chaoskube.experiments.registry import SYSTEMS

    data = msgspec.yaml.decode(CATALOG_ENTRY.read_bytes())
    workload = dict(data.get("workload") or {})
    nemesis = dict(data.pop("nemesis", None) or workload.pop("nemesis", None) or {})
    assert nemesis, f"{CATALOG_ENTRY}: no nemesis options found"
    nemesis["after_s"] = 6.0
    nemesis["window_s"] = max(1.0, faults_s - 12.0)
    per = [pods // deployments + (1 if index < pods % deployments else 0) for index in range(deployments)]
    workload["deployments"] = [
        {"name": f"app-{index}", "replicas": replicas, "cpu": "100m", "pdb_min_available": max(0, replicas - 2), "service": True}
        for index, replicas in enumerate(per)
    ]
    workload["traffic"] = True
    workload["converge_s"] = 300.0
    cluster = {"etcdMembers": 3, "apiServers": 2, "controllerManagers": 2, "schedulers": 2, "nodeGroups": [{"count": nodes, "zones": ["zone-a", "zone-b", "zone-c"]}]}
    system = SYSTEMS[data["system"]]
    # ``admission`` and ``admission-timing`` judge webhook calls: they apply only to a
    # cluster with webhooks (random-nemesis has none; they would answer unknown, "nothing
    # to judge"); ``authorization`` judges adversarial tenants' attempts (workload
    # ``tenants``: none here); ``end-state`` judges the workload's own end_state
    # assertions: this workload has none
    needs = {"admission": bool(cluster.get("webhooks")), "admission-timing": bool(cluster.get("webhooks")),
             "authorization": bool(workload.get("tenants")), "end-state": bool(workload.get("end_state"))}
    checkers = sorted(name for name in system.checkers() if needs.get(name, True) and name not in NOT_CHECKED)
    top_level = "nemesis" in Experiment.__struct_fields__
    if faults:
        if top_level:
            data["nemesis"] = nemesis
        elif "nemesis" in system.Workload.__struct_fields__:
            workload["nemesis"] = nemesis
        else:
            raise ExperimentError(f"{CATALOG_ENTRY}: neither the Experiment nor the {data['system']} workload takes `nemesis` options in this build")
    data["schedule"] = data.get("schedule", []) if faults else []
    data |= {
        "name": f"{data['name']}-bench",
        "cluster": cluster,
        "workload": workload,
        "checkers": checkers,
        "expected": data.get("expected") or {},
        "phases": {**(data.get("phases") or {}), "faults_s": faults_s},
    }
    experiment = msgspec.convert(data, type=Experiment)
    system.options(experiment.cluster, experiment.workload)  # validates: raises ExperimentError in one line
    return experiment


@dataclass
class Timing:
    """Wall seconds of one seed, split by where they went."""

    seed: int
    total: float = 0.0
    cpu: float = 0.0  # CPU seconds for the seed, the reference copy's included: what contention on the core does not inflate
    reference: float = 0.0  # of those, the differential checker's reference copy (a child forked from the boot)
    simulation: float = 0.0
    checkers: float = 0.0
    reports: float = 0.0
    simulated: float = 0.0
    as_expected: bool = False
    failing: list[str] = field(default_factory=list)
    journal_bytes: int = 0

    @property
    def other(self) -> float:
        return max(0.0, self.total - self.simulation - self.checkers - self.reports)


@contextmanager
def timed_phases(timing: Timing) -> Iterator[None]:
    """Time the runner's checker calls and report writing by wrapping the two names it
    calls them by (``chaoskube.experiments.simulated.run_checker`` and ``write_result``); restored after."""
    import chaoskube.experiments.simulated as runner

    original_check, original_write = runner.run_checker, runner.write_result

    def run_checker(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_check(*args, **kwargs)
        finally:
            timing.checkers += time.perf_counter() - started

    def write_result(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_write(*args, **kwargs)
        finally:
            timing.reports += time.perf_counter() - started

    runner.run_checker, runner.write_result = run_checker, write_result
    try:
        yield
    finally:
        runner.run_checker, runner.write_result = original_check, original_write


def run_seed(experiment: Any, seed: int, work: Path) -> Timing:
    from chaoskube.experiments.runner import run_experiment

    timing = Timing(seed)
    out = work / f"{experiment.name}-{seed}"
    with timed_phases(timing):
        started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
        result = run_experiment(experiment, seed, out)
        timing.total = time.perf_counter() - started
        timing.reference = _children_cpu() - children  # the run reaps its reference copy before it returns
        timing.cpu = time.process_time() - cpu + timing.reference
    timing.simulation = result.wall_seconds
    timing.simulated = result.simulated_seconds
    timing.as_expected = result.as_expected
    timing.failing = result.failing + [f"{name}?" for name in result.unknown]
    timing.journal_bytes = (out / "journal.jsonl").stat().st_size
    for name in ("result.json", "report.md", "report.html", "junit.xml"):
        assert (out / name).is_file(), f"{out}: {name} was not written"
    return timing


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_seeds(experiment: Any, seeds: list[int], work: Path, label: str, wrap: Callable[[Callable[[], Any]], Any] | None = None) -> list[Timing]:
    timings = []
    for seed in seeds:
        call = lambda: run_seed(experiment, seed, work)  # noqa: E731
        timing = wrap(call) if wrap is not None else call()
        timings.append(timing)
        verdict = "as expected" if timing.as_expected else f"NOT as expected (failing: {', '.join(timing.failing) or 'none'})"
        print(
            f"  {label} seed {seed:>4}: {timing.total:6.2f} s wall ({timing.cpu:6.2f} s CPU, reference copy {timing.reference:4.2f}) = sim {timing.simulation:5.2f} + checkers {timing.checkers:5.2f} + reports {timing.reports:5.2f} + other {timing.other:4.2f}"
            f"; {timing.simulated:6.1f} simulated s; journal {timing.journal_bytes / 1e6:5.1f} MB; {verdict}",
            flush=True,
        )
    return timings


def summarise(label: str, timings: list[Timing]) -> float:
    totals = [t.total for t in timings]
    mean = statistics.fmean(totals)
    part = lambda name: statistics.fmean(getattr(t, name) for t in timings)  # noqa: E731
    cpu = statistics.fmean(t.cpu for t in timings)
    print(f"  {label:<10}: {mean:6.2f} s wall per seed (min {min(totals):.2f}, max {max(totals):.2f}, n {len(totals)}) = {60.0 / mean:5.1f} seeds/min on one core")
    reference = statistics.fmean(t.reference for t in timings)
    print(f"  {'':<10}  {cpu:6.2f} s CPU per seed = {60.0 / cpu:5.1f} seeds/min of CPU, the reference copy's {reference:.2f} s included (wall / CPU = {mean / cpu:.2f}: above 1, the core was shared)")
    print(
        f"  {'':<10}  split: simulation {part('simulation'):.2f} s ({part('simulation') / mean:.0%}), checkers {part('checkers'):.2f} s ({part('checkers') / mean:.0%}), "
        f"reports {part('reports'):.2f} s ({part('reports') / mean:.0%}), other {part('other'):.2f} s; {part('simulated') / part('simulation'):.0f}x real time while simulating"
    )
    return mean


def campaign_cpu(experiment: Any, seeds: list[int], work: Path, *, fork: bool) -> tuple[float, list[dict[str, Any]], list[tuple[float, float]]]:
    """The campaign of ``seeds`` as ``chaoskube explore FILE --jobs 1 [--no-fork]`` runs
    it: (CPU seconds of its processes, the records, the boot's (wall, CPU) if forked)."""
    import yaml

    from chaoskube.experiments.campaign import boot_groups, plan_jobs, run_campaign
    from chaoskube.experiments.forking import ForkPool
    from chaoskube.experiments.registry import find

    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{experiment.name}.yaml"
    data = {key: value for key, value in msgspec.to_builtins(experiment).items() if key != "path"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    jobs = plan_jobs([(str(path), find(str(path)))], seeds, work / ("forked" if fork else "whole"))
    pool = ForkPool(boot_groups(jobs), 1, work / f".boot-{fork}", fork=fork)
    result = run_campaign(jobs, 1, pool=pool)
    return pool.cpu_seconds(), result.records, pool.boot_seconds()


def _valid(verdict: Any) -> str:
    """A campaign record's verdict as ``true`` / ``false`` / ``unknown``."""
    valid = verdict.get("valid") if isinstance(verdict, dict) else verdict
    return valid if isinstance(valid, str) else {True: "true", False: "false"}.get(valid, "unknown")


def compare_fork(experiment: Any, seeds: list[int], work: Path) -> None:
    forked_cpu, forked, boots = campaign_cpu(experiment, seeds, work, fork=True)
    whole_cpu, whole, _ = campaign_cpu(experiment, seeds, work, fork=False)
    for label, records in (("forked", forked), ("whole", whole)):
        for record in records:
            if record["error"]:
                raise SystemExit(f"{label} seed {record['seed']}: {record['error']}")
    same = [a["journal_sha256"] for a in forked] == [b["journal_sha256"] for b in whole]
    per_forked, per_whole = forked_cpu / len(seeds), whole_cpu / len(seeds)
    boot_cpu = sum(cpu for _, cpu in boots)
    print(f"  campaign  : {len(seeds)} seeds, one process at a time, CPU of the campaign's processes (booter and runs)")
    print(f"  forked    : {forked_cpu:7.2f} s CPU = {per_forked:5.2f} s per seed = {60.0 / per_forked:5.1f} seeds per CPU minute (one boot: {boot_cpu:.2f} s CPU)  target >= 15: {'met' if 60.0 / per_forked >= 15 else 'NOT met'}")
    print(f"  unforked  : {whole_cpu:7.2f} s CPU = {per_whole:5.2f} s per seed = {60.0 / per_whole:5.1f} seeds per CPU minute")
    print(f"  ratio     : {per_whole / per_forked:.2f} (CPU per seed unforked / forked, same seeds, same run); journals identical: {'yes' if same else 'NO'}")
    print(f"  outcomes  : forked {sum(r['as_expected'] for r in forked)}/{len(forked)} as expected, unforked {sum(r['as_expected'] for r in whole)}/{len(whole)}")
    for label, records in (("forked", forked), ("unforked", whole)):
        answered = Counter((name, _valid(verdict)) for record in records for name, verdict in sorted((record.get("verdicts") or {}).items()) if _valid(verdict) != "true")
        if answered:  # what kept seeds from being as expected: a violation, or a checker with nothing to judge
            print(f"  {label:<9} : " + ", ".join(f"{name} {valid} in {count}" for (name, valid), count in sorted(answered.items())))


def main() -> None:
    from loguru import logger

    logger.remove()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--deployments", type=int, default=10)
    parser.add_argument("--faults-s", type=float, default=120.0)
    parser.add_argument("--baseline-seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="CI: 2 seeds, 1 baseline seed, 10 nodes, 100 pods, 30 s of faults")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the fault runs into FILE and print the top functions")
    parser.add_argument("--keep", metavar="DIR", help="write the run directories under DIR instead of a temporary one")
    parser.add_argument("--no-campaign", action="store_true", help="skip the campaign comparison, forked against unforked")
    parser.add_argument("--no-split", action="store_true", help="skip the in-process runs (the split of a seed's time, the no-faults baseline)")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.baseline_seeds, args.nodes, args.pods, args.faults_s = 2, 1, 10, 100, 30.0
    if args.seeds < 1 or args.baseline_seeds < 0 or args.nodes < 1 or args.pods < args.deployments or args.faults_s < 13:
        parser.error("need --seeds >= 1, --baseline-seeds >= 0, --nodes >= 1, --pods >= --deployments, --faults-s >= 13")

    experiment = build_experiment(nodes=args.nodes, pods=args.pods, deployments=args.deployments, faults_s=args.faults_s)
    baseline = build_experiment(nodes=args.nodes, pods=args.pods, deployments=args.deployments, faults_s=args.faults_s, faults=False)
    nemesis = getattr(experiment, "nemesis", None) if "nemesis" in experiment.__struct_fields__ else experiment.workload.get("nemesis")
    nemesis = nemesis if isinstance(nemesis, dict) or nemesis is None else msgspec.structs.asdict(nemesis)
    phases = experiment.phases
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    print(
        f"explore benchmark: random-nemesis on 3 etcd, 2 API servers, 2 controller-managers, 2 schedulers, {args.nodes} nodes in 3 zones, "
        f"{args.pods} pods in {args.deployments} Deployments (PDB + Service each), traffic on; seeds {seeds[0]}..{seeds[-1]}"
    )
    print(f"  phases   : setup <= {phases.setup_s:g} s, warm-up {phases.warmup_s:g} s, faults {phases.faults_s:g} s, recovery <= {phases.recovery_s:g} s, settle {phases.settle_s:g} s")
    print(f"  nemesis  : {msgspec.to_builtins(nemesis)}")
    print(f"  checkers : {', '.join(experiment.checkers)} (left out, as in the catalogue: {', '.join(NOT_CHECKED)})")
    print("  reports  : journal.jsonl, run.log, result.json, report.md, report.html, junit.xml per seed")

    with tempfile.TemporaryDirectory(prefix="chaoskube-bench-") as scratch:
        work = Path(args.keep) if args.keep else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        if not args.no_campaign:
            compare_fork(experiment, seeds, work / "campaign")
        if args.no_split:
            return
        wrap = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            wrap = profiler.runcall
        faulty = run_seeds(experiment, seeds, work, "faults", wrap)
        calm = run_seeds(baseline, seeds[: args.baseline_seeds], work / "baseline", "no faults") if args.baseline_seeds else []
    print()
    mean = summarise("faults", faulty)
    if calm:
        calm_mean = summarise("no faults", calm)
        print(f"  ratio     : {mean / calm_mean:.2f} (wall per seed with faults / without, same process: what the nemesis costs)")
    print(f"  target    : >= 15 seeds/min (<= 4 s per seed): {'met' if 60.0 / mean >= 15 else 'NOT met'}")
    print(f"  peak RSS  : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.profile:
        import pstats

        profiler.dump_stats(args.profile)
        for key in ("tottime", "cumulative"):
            print(f"\n  profile by {key} ({args.profile}):")
            pstats.Stats(args.profile, stream=sys.stdout).sort_stats(key).print_stats(30)


if __name__ == "__main__":
    main()

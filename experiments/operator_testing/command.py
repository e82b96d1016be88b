"""The ``chaoskube test-operator`` command (registered in experiments/cli.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

class _BadInput(click.ClickException):
    exit_code = 2  # bad input, as every chaoskube command (experiments/cli.py)


def fail(message: str) -> None:
    raise _BadInput(message)


KINDS_HELP = "Plan kinds to generate (repeatable): crash, lost-response, apiserver-kill, etcd-leader-kill, partition, stale-state, unobserved-state [default: all]."


@click.command("test-operator")
@click.option("--run", "command", required=True, metavar="COMMAND", help="The operator's command, started with KUBECONFIG set (e.g. 'kopf run --standalone -A op.py').")
@click.option("--manifests", "manifests", multiple=True, type=click.Path(path_type=Path), metavar="PATH", help="The operator's CRDs and other manifests (files or directories of YAML); repeatable. At least one CRD.")
@click.option("--workload", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="FILE", help="A YAML list of create / update / delete / wait steps [default: generated from the first CRD's schema].")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False), default=Path("runs/test-operator"), show_default=True, help="Where the sessions, learning.json and the summary go.")
@click.option("--jobs", type=click.IntRange(1, 64), default=None, help="Plans run at a time (each a served cluster on free ports) [default: from the CPU a plan used in the learning runs and the CPU count, 1..16; said when chosen].")
@click.option("--budget", type=click.IntRange(1, 100000), default=None, help="Run at most this many plans, spread over the kinds [default: all].")
@click.option("--repeats", type=click.IntRange(0, 1000), default=1, show_default=True, help="Plans at the first N occurrences of each distinct request of the operator (0: every occurrence).")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["crash", "lost-response", "apiserver-kill", "etcd-leader-kill", "partition", "stale-state", "unobserved-state"]), help=KINDS_HELP)
@click.option("--plan", "plan_id", default=None, metavar="ID", help="Run only this plan (the replay of a finding), e.g. 'lost-response@create:configmaps#1'.")
@click.option("--learned", type=click.Path(path_type=Path, file_okay=False), default=None, metavar="DIR", help="Reuse the learning of an earlier test-operator run (its --out).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True, help="The simulated cluster's seed.")
@click.option("--speed", type=click.FloatRange(0.1, 20.0), default=1.0, show_default=True, help="Virtual seconds per wall second (>1 where the operator tolerates it).")
@click.option("--quiet", "quiet_s", type=click.FloatRange(0.2, 60.0), default=2.0, show_default=True, help="Virtual seconds without an operator write or store change that end a step.")
@click.option("--mask/--no-mask", "use_mask", default=True, show_default=True, help="Judge with the mask learned from the two fault-free runs (--no-mask: every difference counts).")
@click.option("--tuning/--no-tuning", "use_tuning", default=True, show_default=True, help="Size each plan's waits from the learning runs (the quiet spell before the perturbation, the wait for the learned writes, the boot).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS", help="Run the plans on a Dask cluster: tcp://HOST:PORT (a running scheduler) or local:N (N local workers), one task per plan.")
@click.option("--session-only", is_flag=True, hidden=True)
@click.option("--expect-writes", default="", hidden=True)
@click.option("--tuning-json", "tuning_json", default="", hidden=True)
def test_operator(command: str, manifests: tuple[Path, ...], workload: Path | None, out_dir: Path, jobs: int | None, budget: int | None, repeats: int, kinds: tuple[str, ...],
                  plan_id: str | None, learned: Path | None, seed: int, speed: float, quiet_s: float, use_mask: bool, use_tuning: bool, dask_address: str | None,
                  session_only: bool, expect_writes: str, tuning_json: str) -> None:
    """Test an operator the way Sieve and Acto do, with no assertion of yours: learn two
    fault-free runs of COMMAND under a served cluster (its requests, watches and the objects
    it owns; what differs between the two is masked), generate plans (crash right after
    each of its writes, lose a write's answer, kill its API server or the etcd leader,
    partition it -- each at one of its own requests), run them in parallel and report every
    plan whose owned objects end or evolve differently from the learning run, with the
    plan's replay command. Exit 0: nothing found; 1: a plan found something; 2: bad input."""
    from chaoskube.experiments.operator_testing import run as runner
    from chaoskube.experiments.operator_testing.plans import KINDS, parse_plan_id
    from chaoskube.experiments.operator_testing.session import SessionOptions

    try:
        target = runner.load_target(command, list(manifests), workload)
        if plan_id is not None:
            parse_plan_id(plan_id)
    except ValueError as error:
        fail(str(error))
    try:
        expected = runner.expectations(json.loads(expect_writes) if expect_writes else [])
    except ValueError:
        fail(f'--expect-writes {expect_writes!r}: give a JSON list, per step, of lists of write kinds (e.g. [[], ["create:deployments"]])')
    tuning: dict = {}
    if tuning_json:
        try:
            tuning = {name: float(value) for name, value in json.loads(tuning_json).items() if name in runner.TUNING}
        except (ValueError, TypeError, AttributeError):
            fail(f"--tuning-json {tuning_json!r}: give a JSON object of {', '.join(runner.TUNING)}")
    options = SessionOptions(seed=seed, speed=speed, quiet_s=quiet_s, expected_writes=expected, **tuning)
    if session_only:
        sys.exit(runner.session_only(target, out_dir, plan_id, options))
    if workload is None and plan_id is None:  # generated: written once, run by every session and replay
        from chaoskube.experiments.operator_testing.workload import dump_workload

        out_dir.mkdir(parents=True, exist_ok=True)
        workload = out_dir / "workload.yaml"
        workload.write_text(dump_workload(list(target.steps)))
    argv = ["test-operator", "--run", command, *[item for path in manifests for item in ("--manifests", str(path))]]
    if workload is not None:
        argv += ["--workload", str(workload)]
    runner.TARGET_ARGV[:] = argv
    say = lambda text: click.echo(text)  # noqa: E731
    say(f"test-operator: {command} ({len(target.steps)} workload steps: {'; '.join(step.describe() for step in target.steps)})")
    try:
        summary = runner.run_test_operator(target, out_dir, runner.OperatorTestOptions(jobs=jobs, budget=budget, repeats=repeats or None, kinds=tuple(kinds) or KINDS, session=options,
                                                                                       mask=use_mask, tuning=use_tuning, dask=dask_address), say, only=plan_id, learned=learned)
    except runner.TargetError as error:
        fail(str(error))
    say(f"{summary['plans_run']} plan(s) run in {summary['wall_s']:.0f} s ({summary['plans_per_hour']:.0f} plans/hour): {summary['found']} found, {summary['errors']} error(s); "
        f"the mask removed {summary['findings_removed_by_mask']} finding(s)")
    if summary["late"]:
        say(f"{summary['late']} plan(s) ran late (the cluster's clock fell behind the wall clock: a CPU too busy) and were not judged: run them again with fewer --jobs (summary.md lists them)")
    for entry in summary["results"]:
        if entry["status"] == "found":
            say(f"FOUND {entry['id']}: {entry['description']}")
            for finding in entry["findings"][:5]:
                say(f"    {finding['oracle']}: {finding['object']} {finding['path']} at {finding['at']}: {runner._short(finding['run'])} (learning run: {runner._short(finding['reference'])})")  # noqa: SLF001
            say(f"    replay: {summary['replay'][entry['id']]}")
    say(f"summary: {out_dir / 'summary.md'}")
    sys.exit(1 if summary["found"] else 0)

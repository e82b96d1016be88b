"""The ``chaoskube`` command line.

Exit codes (docs/experiments.md, "Outcomes and exit codes"; the same for every command):

====  ==========================================================================================
code  meaning
====  ==========================================================================================
0     as expected: ``run``/``explore`` met the expected outcome; ``replay`` matched;
      ``validate`` found nothing wrong; ``check-history``: linearizable; ``mark-fixed`` marked
1     not as expected: a checker missed its expectation (a violation in an experiment
      expected to pass, an expected failure that did not show, an unknown verdict); with
      ``--broken``, a finding (a checker caught the broken component); ``replay``: the
      fingerprints differ; ``check-history``: not linearizable; ``mark-fixed``: still fails
2     bad input: one line on stderr naming the file, field or flag, and no traceback;
      ``list``: a catalogue entry cannot load (each such entry is listed on its own line
      with its error, the others as usual)
3     undecided: ``check-history`` could not decide in ``--time-limit``
4     inconclusive: every checker answered as expected, but a fault was not applied when it
      fell due (its target matched nothing then: no leader, say), so the run did not test
      what the experiment says; ``explore``: no run failed and at least one was inconclusive
130   interrupted by SIGINT (Ctrl-C): what finished is written, the result marked interrupted
      (``serve``: what was observed is judged, and a violation found exits 1 instead)
143   stopped by SIGTERM, handled as SIGINT is (experiments/signals.py)
====  ==========================================================================================

``--manifests DIR`` (``run``, ``explore``): the experiment's workload is replaced by the
Kubernetes manifests of DIR (``chaoskube.experiments.registry.with_manifests``); users bring
their own; steps act on the manifests' workloads by role, and a run whose meaning the
manifests cannot give is refused in one line. ``--skip-unsupported`` leaves out documents of
kinds chaoskube cannot serve (listed once) instead of refusing. Both go into the replay
command; result.json records the directory and a sha256 of its manifests, and ``replay``
says when they changed since the run. ``--broken NAME``: a gallery variant patched in;
refused for an experiment whose system never runs the code it breaks.

click parses arguments (well kept, composable subcommands, typed options); rich draws the
tables and the progress bar on a terminal; without one (CI), plain progress lines go to
stderr instead.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from chaoskube import __version__
from chaoskube.experiments.model import ExperimentError, experiment_dir
from chaoskube.experiments.signals import Stopping, ignore_further_signals, note_interrupt, stopping_now, termination_as_interrupt
from chaoskube.sim import MAX_SEED

#: Exit codes (module docstring).
EXIT_AS_EXPECTED, EXIT_NOT_AS_EXPECTED, EXIT_BAD_INPUT, EXIT_UNDECIDED, EXIT_INCONCLUSIVE = 0, 1, 2, 3, 4

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class BadInput(click.ClickException):
    exit_code = 2


def fail(message: str) -> NoReturn:
    raise BadInput(message)


class Interrupted(Exception):
    """A command stopped by SIGINT or SIGTERM after writing what finished."""


#: What the running command's signal handling saw (set by :func:`main`).
STOPPING = Stopping()


class OutDir(click.ParamType):
    """A directory to write into: not empty (``--out ''`` would write into the current
    directory), not an existing file."""

    name = "directory"

    def convert(self, value: Any, param: Any, ctx: Any) -> Path:
        if isinstance(value, Path):
            return value
        text = str(value)
        if not text.strip():
            self.fail("an empty path; give a directory to write the run into", param, ctx)
        if "\x00" in text:
            self.fail("a path cannot hold a NUL byte", param, ctx)
        path = Path(text)
        if path.exists() and not path.is_dir():
            self.fail(f"Directory '{text}' is a file.", param, ctx)
        return path


class Seconds(click.ParamType):
    """A finite number of seconds > 0 (``nan`` and ``inf`` are not a time)."""

    name = "seconds"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        import math

        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{value!r} is not a finite number of seconds > 0", param, ctx)
        return number


SEED = click.IntRange(min=0, max=MAX_SEED)

MANIFESTS_HELP = "A directory of Kubernetes YAML/JSON manifests that replaces the experiment's workload."
SKIP_HELP = "Leave out the manifests' documents of kinds chaoskube cannot serve (listed once in the output, result.json and the report) instead of refusing the run."


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="chaoskube")
def cli() -> None:
    """Chaos and fault-injection experiments on a simulated Kubernetes control plane.

    Every run is deterministic: the same experiment and seed give a byte-identical journal.
    """


@cli.command("list")
@click.option("--broken", "broken", is_flag=True, help="List the gallery of deliberately broken components instead (for --broken NAME).")
def list_experiments(broken: bool) -> None:
    """One experiment per line: its name and what it does. A catalogue entry that cannot
    load (a broken install, an edited file) is listed on its own line with its one-line
    error, in its place among the rest; then the command exits 2 (bad input: the catalogue
    as installed is not whole) after listing every entry that loads."""
    from chaoskube.experiments import registry

    if broken:
        _print_gallery()
        return
    loaded: list[tuple[str, str]] = []
    broken_entries = 0
    for name in registry.names():
        try:
            experiment = registry.find(name)
        except ExperimentError as error:
            broken_entries += 1
            loaded.append((name, f"CANNOT LOAD: {_one_line(str(error))}"))
        else:
            loaded.append((experiment.name, experiment.title))
    width = max((len(name) for name, _ in loaded), default=0)
    for name, text in loaded:
        click.echo(f"{name.ljust(width)}  {text}")
    if broken_entries:
        fail(f"{broken_entries} of {len(loaded)} catalogue entries cannot load (listed above); the others can run")


@cli.command()
def gallery() -> None:
    """The deliberately broken components (same as `list --broken`): one variant per line
    with the component it breaks, the checker that catches it, the experiment that shows it."""
    _print_gallery()


def _print_gallery() -> None:
    from chaoskube import gallery as variants

    width = max((len(name) for name in variants.VARIANTS), default=0)
    for name, variant in variants.VARIANTS.items():
        shows = f"chaoskube explore {variant.experiment} --broken {name} --seeds 1..200 --fail-fast" if variant.experiment else "its own tests"
        click.echo(f"{name.ljust(width)}  {variant.component}: {variant.description}; caught by {variant.caught_by}; try: {shows}")


@cli.command()
@click.argument("experiment")
@click.option("--manifests", type=click.Path(path_type=Path), default=None, metavar="DIR", help=MANIFESTS_HELP)
@click.option("--skip-unsupported", is_flag=True, help=SKIP_HELP)
def describe(experiment: str, manifests: Path | None, skip_unsupported: bool) -> None:
    """Everything an experiment will do: what it models, its source, cluster, schedule,
    checkers and expected outcome; with ``--manifests``, on those manifests, as ``run
    --manifests`` would run it (the checkers it leaves out are noted)."""
    from chaoskube.experiments import registry

    found = _resolve(experiment, (), manifests, skip_unsupported) if manifests is not None or skip_unsupported else registry.find(experiment)
    _print_skipped(found)
    stdout.print(f"[bold]{found.name}[/bold] — {found.title}\n")
    stdout.print(found.description.strip() + "\n")
    stdout.print(f"Source: {found.source}")
    stdout.print(f"System: {found.system}   cluster: {found.cluster}   workload: {found.workload}")
    phases = found.phases
    stdout.print(f"Phases: warm-up {phases.warmup_s:g} s, faults {phases.faults_s:g} s, recovery deadline {phases.recovery_s:g} s, settle {phases.settle_s:g} s")
    table = Table("at (s)", "fault", "target", "duration (s)", "params", title="Fault schedule")
    for entry in found.schedule:
        clipped = entry.clipped_s(found.phases.faults_s)
        duration = "until heal" if entry.duration_s is None else f"{entry.duration_s:g}" + (f" (clipped to {clipped:g} by the heal)" if clipped is not None else "")
        table.add_row(f"{entry.at_s:g}" + (f" (armed), {entry.when.describe()}" if entry.when is not None else ""), entry.kind, escape(entry.target), duration, escape(", ".join(f"{k}={v}" for k, v in sorted(entry.params.items()))))
    stdout.print(table)
    if found.nemesis is not None:
        stdout.print(_nemesis_line(found.nemesis), markup=False)
    if found.buggify is not None:
        stdout.print(_buggify_line(found.buggify), markup=False)
    if found.steady_state is not None:
        stdout.print(f"Steady-state hypothesis {found.steady_state.title!r}: " + "; ".join(f"{probe.name} ({probe.kind}: {probe.tolerance_text()})" for probe in found.steady_state.probes), markup=False)
    for probe in found.probes:
        stdout.print(f"Probe {probe.name} ({probe.kind}, {probe.effective_mode}): {probe.tolerance_text()}", markup=False)
    stdout.print(f"Checkers: {', '.join(found.checkers)}")
    expected = found.expected
    stdout.print(f"Expected: {expected.outcome}" + (f" — {', '.join(expected.failing)} fail: {expected.failure_mode}" if expected.failing else ""))
    if found.broken:
        stdout.print(f"Broken on purpose: {', '.join(found.broken)}")
    from chaoskube import gallery as variants

    shown_by = [variant for variant in variants.VARIANTS.values() if variant.experiment == found.name]
    for variant in shown_by:
        stdout.print(f"Gallery: --broken {variant.name} ({variant.component}: {variant.description}) is caught by {variant.caught_by}", markup=False)


def _buggify_line(spec: Any) -> str:
    """One line for an experiment's BUGGIFY settings (the live points are drawn from the run seed)."""
    if not spec.enabled:
        return "BUGGIFY: off"
    points = f"each of {', '.join(spec.points)}" if spec.points is not None else "each point"
    return f"BUGGIFY: {points} live with probability {spec.live_probability:g}, a live one firing with probability {spec.fire_probability:g} when reached (drawn from the seed when the run starts)"


def _nemesis_line(spec: Any) -> str:
    """One line for an experiment's random nemesis (drawn from the run's seed when it runs)."""
    if spec.faults or spec.swarm:  # Jepsen's packages or swarm (issue 16)
        return f"{spec.describe()} (drawn from the seed when the run starts)"
    return (
        f"Random nemesis: {spec.count} fault(s) of {', '.join(spec.kinds)}, each {spec.min_duration_s:g}-{spec.max_duration_s:g} s, "
        f"within {spec.window_s:g} s from {spec.after_s:g} s into the fault phase (drawn from the seed when the run starts)"
    )


def _writable_directory(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".chaoskube-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        fail(f"--out {path}: cannot write there ({error.strerror or error}); choose a writable directory")
    return path


BUGGIFY_HELP = "BUGGIFY on or off (seeded delays where races live, docs/design.md) [default: the experiment's `buggify:`]."
BROKEN_HELP = "Patch in a deliberately broken component of the gallery (`chaoskube list --broken`); repeatable."
BOOT_SEED_HELP = "The seed of the boot (start-up to the steady state); the run seed drives the rest [default: the experiment's `boot_seed`, else 0]."
FAULTS_HELP = "A faults file (`schedule:` and/or `nemesis:`, as in an experiment file) that replaces the experiment's faults; `explore --guided` writes one per mutant (OUT/mutants/) and names it in the replay command."
GUIDED_HELP = (
    "Coverage-guided: spend the seeds like a coverage-guided fuzzer -- after a first generation of plain seeds, each seed runs a mutant "
    "(faults moved, stretched, retargeted, added, dropped; the nemesis's fields) of a run that reached journal coverage no run before it had "
    "(docs/campaigns.md). Deterministic: the same seeds and flags give the same mutants, with any --jobs."
)
MAX_WALL_HELP = "End a simulated run that takes longer than this many wall-clock seconds with a `livelock` verdict (the watchdog also ends one whose virtual time stands still through 1,000,000 events, or whose journal passes 1 GiB)."


def _explore_boot_seed(ctx: click.Context, param: click.Parameter, value: str | None) -> int | str | None:
    """``explore --boot-seed``: a seed (0 or more), or ``seed`` (each run's own)."""
    if value is None or value == "seed":
        return value
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= MAX_SEED:
        raise click.BadParameter(f"{value!r} is neither a seed (0 to 2**64-1) nor the word `seed`")
    return number


def _resolve(experiment: str, broken: tuple[str, ...], manifests: Path | None, skip_unsupported: bool = False, buggify: bool | None = None, faults: Path | None = None, *, operator: bool = False, live: bool = False) -> Any:
    """The experiment named (catalogue name or file), with --manifests, --skip-unsupported,
    --buggify/--no-buggify, --faults and --broken; ``operator``: ``serve --run`` (faults may
    target the program, role:operator); ``live``: ``serve`` (manifests with no workload,
    only CRDs and custom resources, are served)."""
    from chaoskube.experiments import registry
    from chaoskube.experiments.model import with_buggify
    from chaoskube.experiments.registry import with_broken, with_manifests, with_skip_unsupported

    found = registry.find(experiment, operator=operator)
    if manifests is not None:
        found = with_manifests(found, manifests, skip_unsupported=skip_unsupported, live=live)
    elif skip_unsupported:
        found = with_skip_unsupported(found)
    if buggify is not None:
        found = with_buggify(found, buggify)
    if faults is not None:
        from chaoskube.experiments.mutation import with_faults

        found = with_faults(found, faults, operator=operator)
    return with_broken(found, broken) if broken else found


def _print_skipped(found: Any) -> None:
    """``--skip-unsupported``: the documents left out, once, before the run; and what
    ``--manifests`` changed (checkers left out)."""
    for note in found.notes:
        stderr.print(f"note: {note}", markup=False)
    if not found.skip_unsupported:
        return
    from chaoskube.api.manifests import load_manifests

    paths = found.workload.get("manifests", [])
    skipped = []
    for path in paths:
        try:
            skipped.extend(str(issue) for issue in load_manifests(path, skip_unsupported=True)[1])
        except Exception:  # noqa: BLE001 - the experiment loaded them already; a relative path is resolved there
            continue
    if skipped:
        stderr.print(f"--skip-unsupported: {len(skipped)} document(s) left out:", markup=False)
        for line in skipped:
            stderr.print(f"  {line}", markup=False)


@cli.command()
@click.argument("experiment")
@click.option("--seed", type=SEED, default=None, help="The run's seed, 0 to 2**64-1: same seed, same journal [default: the experiment's `seed`, else 1].")
@click.option("--boot-seed", type=SEED, default=None, help=BOOT_SEED_HELP)
@click.option("--broken", "broken", multiple=True, metavar="NAME", help=BROKEN_HELP)
@click.option("--manifests", type=click.Path(path_type=Path), default=None, metavar="DIR", help=MANIFESTS_HELP)
@click.option("--skip-unsupported", is_flag=True, help=SKIP_HELP)
@click.option("--out", "out_dir", type=OutDir(), default=None, help="Result directory [default: runs/NAME-seedN].")
@click.option("--dry-run", is_flag=True, help="Print the resolved cluster, schedule (every target checked against the processes the experiment builds) and checkers without running.")
@click.option("--max-wall", "max_wall_s", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS", help=MAX_WALL_HELP)
@click.option("--buggify/--no-buggify", "buggify", default=None, help=BUGGIFY_HELP)
@click.option("--faults", "faults_file", type=click.Path(path_type=Path), default=None, metavar="FILE", help=FAULTS_HELP)
def run(
    experiment: str, seed: int | None, boot_seed: int | None, broken: tuple[str, ...], manifests: Path | None, skip_unsupported: bool, out_dir: Path | None, dry_run: bool,
    max_wall_s: float | None, buggify: bool | None, faults_file: Path | None,
) -> None:
    """Run EXPERIMENT (a catalogue name or a YAML file) with one seed."""
    from chaoskube.experiments.runner import run_experiment

    found = _resolve(experiment, broken, manifests, skip_unsupported, buggify, faults_file)
    _print_skipped(found)
    if seed is None:
        seed = found.seed if found.seed is not None else 1
    out = out_dir or Path("runs") / f"{found.name}-seed{seed}"
    if dry_run:
        _print_plan(found, seed)
        return
    _writable_directory(out)
    stderr.print(f"chaoskube {__version__}: {found.name} seed {seed} -> {out}", markup=False)
    with _progress(found.name) as progress:
        result = run_experiment(found, seed, out, progress=progress, boot_seed=boot_seed, max_wall_s=max_wall_s)
    _print_result(result)
    if result.interrupted:
        stderr.print(f"interrupted: kept {out / 'journal.jsonl'} and a partial result.json", markup=False)
        raise Interrupted()
    if result.experiment.broken:  # the expected outcome is irrelevant: did a checker catch it?
        _print_finding(result)
        sys.exit(EXIT_NOT_AS_EXPECTED if result.failing or result.unknown else EXIT_INCONCLUSIVE if result.inconclusive else EXIT_AS_EXPECTED)
    sys.exit({"as-expected": EXIT_AS_EXPECTED, "inconclusive": EXIT_INCONCLUSIVE}.get(result.outcome, EXIT_NOT_AS_EXPECTED))


def _print_plan(found: Any, seed: int) -> None:
    """``run --dry-run``: what the run will do, every target resolved against the processes
    the experiment builds (registry.check_experiment has refused those that match none)."""
    import msgspec

    from chaoskube.experiments.registry import SYSTEMS

    system = SYSTEMS[found.system]
    cluster, workload = system.options(found.cluster, found.workload, base_dir=experiment_dir(found))
    infos = system.process_infos(cluster, workload)
    stdout.print(f"{found.name} seed {seed}: system {found.system}" + (f"; broken on purpose: {', '.join(found.broken)}" if found.broken else ""), markup=False)
    stdout.print(f"cluster: {msgspec.to_builtins(cluster)}", markup=False)
    stdout.print(f"workload: {msgspec.to_builtins(workload)}", markup=False)
    if infos is not None:
        stdout.print(f"processes ({len(infos)}): {', '.join(info.name for info in infos)}", markup=False)
    faults_s = found.phases.faults_s
    for entry in found.schedule:
        clipped = entry.clipped_s(faults_s)
        duration = "the fault phase" if entry.duration_s is None else f"{entry.duration_s:g} s" + (f", clipped to {clipped:g} s by the heal (clip_to_phase)" if clipped is not None else "")
        params = f" {dict(entry.params)}" if entry.params else ""
        if entry.when is not None:  # faults/triggers.py: the target may be the event's process
            matches = " -> the process the matching event names" if entry.target.startswith("event:") else f" -> {_target_text(entry.target, infos)}" if infos is not None else ""
            stdout.print(f"  armed at {entry.at_s:g} s, {entry.when.describe()}: {entry.kind} {entry.target}{matches} for {duration}{params}", markup=False)
            continue
        matches = f" -> {_target_text(entry.target, infos)}" if infos is not None else ""
        stdout.print(f"  at {entry.at_s:g} s: {entry.kind} {entry.target}{matches} for {duration}{params}", markup=False)
    if found.nemesis is not None:
        stdout.print(_nemesis_line(found.nemesis), markup=False)
    if found.buggify is not None:
        stdout.print(_buggify_line(found.buggify), markup=False)
    for probe in found.probes:
        stdout.print(f"  probe {probe.name} ({probe.kind}, {probe.effective_mode}): {probe.tolerance_text()}", markup=False)
    if found.steady_state is not None:
        stdout.print(f"  steady-state hypothesis {found.steady_state.title!r}: {', '.join(probe.name for probe in found.steady_state.probes)}", markup=False)
    stdout.print(f"checkers: {', '.join(found.checkers)}; expected: {found.expected.outcome}", markup=False)


def _target_text(target: str, infos: Any) -> str:
    """What a target can match among the planned processes, in words."""
    selector, _, argument = target.partition(":")
    if selector == "name":
        return argument
    if selector == "zone":
        names = [info.name for info in infos if info.zone == argument]
        return f"{', '.join(names)} (every process of zone {argument})"
    group = [info.name for info in infos if argument == "*" or info.role == argument]
    if selector == "role":
        return ", ".join(group)
    which = {
        "random": "one of", "leader": "the leader among", "follower": "a follower among",
        # Jepsen's node specs (issue 16, faults/targets.py)
        "minority": "a random minority of", "majority": "a random majority of", "minority-third": "fewer than a third of",
        "subset": "a random non-empty subset of", "primaries": "the leader (Jepsen's primaries) among",
    }.get(selector)
    if which is None:  # workload:TERMS: the nodes of those workloads, known only while it runs
        return f"the nodes running {argument}, when it fires"
    return f"{which} {', '.join(group)}, when it fires"


@cli.command()
@click.argument("experiment", required=False)
@click.option("--listen", default="127.0.0.1:6443", show_default=True, metavar="HOST:PORT", help="Where the first API server replica listens; the next replicas take the next ports (port 0: any free ports). Loopback only.")
@click.option("--kubeconfig", "kubeconfig_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the kubeconfig here [default: OUT/kubeconfig].")
@click.option("--out", "out_dir", type=OutDir(), default=None, help="Result directory [default: runs/NAME-live-seedN].")
@click.option("--run", "command", default="", metavar="COMMAND", help="Start COMMAND with KUBECONFIG set, as the simulated process `operator` (fault target role:operator), once the --manifests CRDs are Established; stopped and reaped on every exit.")
@click.option("--user", "users", multiple=True, metavar="USER[:GROUP,...]|serviceaccount:NS/NAME", help="Another identity in the kubeconfig (a client certificate, or a service account token); repeatable.")
@click.option("--run-as", "run_as", default="chaoskube-operator:system:masters", show_default=True, metavar="USER[:GROUP,...]|serviceaccount:NS/NAME", help="The identity of the --run program.")
@click.option("--seed", type=SEED, default=None, help="The seed of the simulated cluster, 0 to 2**64-1 [default: the experiment's, else 1].")
@click.option("--broken", "broken", multiple=True, metavar="NAME", help=BROKEN_HELP)
@click.option("--manifests", type=click.Path(path_type=Path), default=None, metavar="DIR", help=MANIFESTS_HELP + " Served live with the cluster, its CRDs' custom resources too.")
@click.option("--skip-unsupported", is_flag=True, help=SKIP_HELP)
@click.option("--faults", "faults_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help=FAULTS_HELP.replace("`explore --guided` writes one per mutant (OUT/mutants/) and names it in the replay command.", "with --run it may target the program (role:operator, name:operator)."))
@click.option("--grace-period", "grace_period", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="SECONDS",
              help="How long the --run program has to exit after SIGTERM (at the end of the run, or on Ctrl-C) before SIGKILL, as a Pod's terminationGracePeriodSeconds.")
def serve(
    experiment: str | None, listen: str, kubeconfig_path: Path | None, out_dir: Path | None, command: str, users: tuple[str, ...], run_as: str, seed: int | None,
    broken: tuple[str, ...], manifests: Path | None, skip_unsupported: bool, faults_file: Path | None, grace_period: float,
) -> None:
    """Serve EXPERIMENT's simulated cluster (or a default one) to real clients over HTTPS,
    live: kubectl, client-go, the Python client or your operator, unchanged, under the
    experiment's faults and checkers. Ends when the phases are over, or on Ctrl-C: the run
    stops where it is, the --run program gets SIGTERM and --grace-period, and the checkers
    judge what was observed (exit 130, or 1 on a violation; 143 for SIGTERM); Ctrl-C again
    aborts. Live runs are not byte-replayable."""
    from chaoskube.apiserver.http import parse_identity
    from chaoskube.experiments.live import LiveOptions, run_live
    from chaoskube.experiments.registry import SYSTEMS

    if experiment:
        found = _resolve(experiment, broken, manifests, skip_unsupported, faults=faults_file, operator=bool(command), live=True)
    elif manifests is not None or faults_file is not None:  # the default cluster, with these manifests or faults
        from chaoskube.experiments.live import default_experiment
        from chaoskube.experiments.mutation import with_faults
        from chaoskube.experiments.registry import with_broken, with_manifests

        found = default_experiment()
        found = with_manifests(found, manifests, skip_unsupported=skip_unsupported, live=True) if manifests is not None else found
        found = with_faults(found, faults_file, operator=bool(command)) if faults_file is not None else found
        found = with_broken(found, broken) if broken else found
    else:
        found = None  # run_live's default experiment
    if found is not None:
        _print_skipped(found)
    if found is not None and found.system != "kubernetes":
        fail(f"{experiment}: serve needs a kubernetes experiment (system: kubernetes), not system {found.system!r}")
    host, _, port_text = listen.rpartition(":")
    if not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        fail(f"--listen {listen!r}: give HOST:PORT, e.g. 127.0.0.1:6443")
    if host not in ("127.0.0.1", "localhost", "::1"):
        fail(f"--listen {listen!r}: serve listens on loopback only (127.0.0.1, ::1 or localhost)")
    try:
        identities = tuple(parse_identity(text) for text in users)
        operator = parse_identity(run_as)
    except ValueError as error:
        fail(f"--user/--run-as: {error}")
    operator = type(operator)(name="operator", user=operator.user, groups=operator.groups, token=operator.token)
    if seed is None:
        seed = found.seed if found is not None and found.seed is not None else 1
    name = found.name if found is not None else "serve"
    out = _writable_directory(out_dir or Path("runs") / f"{name}-live-seed{seed}")

    def ready(handle: Any) -> None:
        stderr.print(f"serving {name} (seed {seed}): " + ", ".join(url for _, url in handle.urls), markup=False)
        stderr.print(f"export KUBECONFIG={handle.kubeconfig}" + ("   (operator: " + str(handle.operator_kubeconfig) + ")" if command else ""), markup=False)
        stderr.print(f"Ctrl-C stops the run (the operator gets SIGTERM and {grace_period:g} s) and judges what was observed; twice aborts.", markup=False)

    options = LiveOptions(host="127.0.0.1" if host == "localhost" else host, port=int(port_text), kubeconfig=kubeconfig_path, run=command, identities=identities, operator=operator, on_ready=ready, grace_s=grace_period)
    from chaoskube import gallery

    try:
        with gallery.applied(found.broken if found is not None else []):
            result = run_live(found, SYSTEMS["kubernetes"], seed, out, options)
    except OSError as error:
        fail(f"--listen {listen}: {error.strerror or error}")
    _print_result(result)
    stdout.print(f"live run: not byte-replayable; {result.live['replays']}", markup=False)
    if result.live.get("aborted"):
        stderr.print(f"aborted by a second {result.live['stopped_by']}: no verdicts; kept {out / 'journal.jsonl'} and a partial result.json", markup=False)
        raise Interrupted()
    interrupted = result.live.get("interrupted")
    if interrupted:
        left_out = [note for note in result.experiment.notes if " not judged: " in note]
        stderr.print(f"interrupted by {interrupted['signal']} in phase {interrupted['phase'] or 'setup'}: judged what was observed; {len(left_out)} checker(s) that judge the end of a run left out (report.md says why)", markup=False)
        if result.failing:  # a violation observed before the interrupt is still a violation
            sys.exit(EXIT_NOT_AS_EXPECTED)
        raise Interrupted()
    # Live runs judge the program under test: any failing or unknown checker is 1; a fault
    # that was never applied makes the run inconclusive (4), as in `run`.
    sys.exit(EXIT_NOT_AS_EXPECTED if result.failing or result.unknown else EXIT_INCONCLUSIVE if result.inconclusive else EXIT_AS_EXPECTED)


from chaoskube.experiments.operator_testing.command import test_operator as _test_operator  # noqa: E402 - its own package (issue 34)

cli.add_command(_test_operator)

def _print_finding(result: Any) -> None:
    from chaoskube import gallery as variants

    broken = ", ".join(result.experiment.broken)
    caught_by = {variants.VARIANTS[name].caught_by for name in result.experiment.broken if name in variants.VARIANTS}
    if not result.failing:
        counts = result.metrics.get("broken_calls")
        reach = variants.reach(counts)
        if variants.ran(counts) is False:  # a coverage gap: more of the same seeds may not help
            hint = "an experiment or seeds that reach it: `chaoskube list --broken` names one for each variant"
        else:
            hint = "try `chaoskube explore` over more seeds"
        stdout.print(f"not caught: with {broken} broken on purpose every checker passed on seed {result.seed}{'; ' + reach if reach else ''} ({hint})", markup=False)
        return
    for name in sorted(result.failing, key=lambda name: (name not in caught_by, name)):
        mark = " (the variant's caught_by checker)" if name in caught_by else ""
        stdout.print(f"finding: {name} failed{mark} with {broken} broken on purpose: {result.verdicts[name].reason}", markup=False)
    stdout.print(f"report: {result.out_dir / 'report.md'} (the shortest history that shows it)", markup=False)


class _progress:
    """A progress bar of simulated time on a terminal; without one (CI), a plain line on
    stderr at every quarter of the planned time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not stderr.is_terminal:
            shown = [0]

            def line(now: float, planned: float) -> None:
                planned = max(planned, now)  # a plan that ran over reads 100% of what ran, never "45.0 of 39.0"
                quarter = min(4, int(4 * now / planned)) if planned else 4
                if quarter > shown[0]:
                    shown[0] = quarter
                    click.echo(f"{self.name}: {25 * quarter}% ({now:.1f} of {planned:.1f} s planned)", err=True)

            return line
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[now]:>8.1f} simulated s"), TimeElapsedColumn(), console=stderr, transient=True)
        self.bar.start()
        task = self.bar.add_task(self.name, total=1.0, now=0.0)

        def update(now: float, planned: float) -> None:
            self.bar.update(task, completed=min(now / planned, 1.0) if planned else 1.0, now=now)

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _print_result(result: Any) -> None:
    table = Table("checker", "verdict", "reason", title=f"{result.experiment.name} seed {result.seed}")
    colours = {"true": "green", "false": "red", "unknown": "yellow"}
    for name, verdict in result.verdicts.items():
        table.add_row(escape(name), f"[{colours[verdict.label]}]{verdict.label}[/]", escape(verdict.reason))
    stdout.print(table)
    for skipped in result.skipped_faults:
        stdout.print(f"[yellow]skipped fault:[/] {escape(skipped)}")
    for clipped in result.clipped_faults():
        stdout.print(f"clipped fault: {clipped}", markup=False)
    from chaoskube.experiments.reports import outcome_words

    stdout.print(f"outcome: {outcome_words(result)} (expected {result.experiment.expected.outcome})", markup=False)
    if result.inconclusive:
        stdout.print(f"inconclusive: {len(result.skipped_faults)} fault(s) were not applied when they fell due, so the run did not test what the experiment says (exit {EXIT_INCONCLUSIVE})", markup=False)
    stdout.print(f"journal sha256: {result.journal_sha256}")
    if result.mode == "real":
        stdout.print(f"real processes: ran {result.wall_seconds:.1f} s")
    else:
        stdout.print(f"simulated {result.simulated_seconds:.1f} s in {result.wall_seconds:.2f} s wall ({result.simulated_seconds / max(result.wall_seconds, 1e-9):.0f}x real time)")
    if result.mode != "live":  # a live run prints what replays it itself
        stdout.print(f"replay: {result.replay}")

@cli.command()
@click.argument("experiments", nargs=-1, metavar="[NAME|FILE]...")
@click.option("--all", "all_experiments", is_flag=True, help="Every simulated experiment of the catalogue (real-process ones run in real time: use `run`); with --manifests, every one that takes manifests.")
@click.option("--seeds", "seeds_text", required=True, metavar="A..B", help="Seeds, both ends included (1..20); also N, or a comma-separated list (1..5,9); each 0 to 2**64-1.")
@click.option("--jobs", type=click.IntRange(min=1, max=256), default=None, help="Parallel processes [default: the CPU count].")
@click.option("--broken", "broken", multiple=True, metavar="NAME", help=BROKEN_HELP + " A failing checker is then a finding.")
@click.option("--manifests", type=click.Path(path_type=Path), default=None, metavar="DIR", help=MANIFESTS_HELP)
@click.option("--skip-unsupported", is_flag=True, help=SKIP_HELP)
@click.option("--fail-fast", is_flag=True, help="Stop at the first finding: a checker that answered false unexpectedly (livelock included), an error, with --broken a caught variant; not an inconclusive or unknown run. Runs already going finish, no more start.")
@click.option("--keep", type=click.Choice(["all", "failed", "none"]), default="all", show_default=True, help="Run directories to keep: all; failed (runs with a finding, a violation, an error, an unknown verdict or a skipped fault); none (the summary only).")
@click.option("--boot-seed", callback=_explore_boot_seed, default=None, metavar="N|seed", help=BOOT_SEED_HELP + " `seed`: each run boots with its own run seed (no shared boot: for bugs that need a particular boot state, docs/campaigns.md).")
@click.option("--no-fork", is_flag=True, help="Run every seed whole instead of forking it from one boot per experiment (same journals, more CPU).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS", help="Run on a Dask cluster: tcp://HOST:8786 (a running scheduler) or local:N (a LocalCluster of N workers); see docs/campaigns.md.")
@click.option("--out", "out_dir", type=OutDir(), default=Path("runs/explore"), show_default=True, help="Campaign directory: a run directory per seed, and the summary.")
@click.option("--max-wall", "max_wall_s", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS", help=MAX_WALL_HELP)
@click.option("--buggify/--no-buggify", "buggify", default=None, help=BUGGIFY_HELP)
@click.option("--guided", is_flag=True, help=GUIDED_HELP)
@click.option("--generation", "generation_size", type=click.IntRange(min=1, max=1000), default=None, metavar="N", help="--guided: runs per generation and experiment [default: 8]; the plan depends on it, never on --jobs.")
@click.option("--line-coverage", is_flag=True, help="Also measure the Python lines of chaoskube/ each run executes (coverage.py: pip install 'chaoskube[coverage]'); with --guided, a new line is new coverage too. Slows runs about 2x.")
@click.option("--baseline", "baseline_dir", type=click.Path(path_type=Path), default=None, metavar="DIR", help="A plain campaign's directory (its summary.json): its coverage curve is drawn beside this campaign's in the summary.")
def explore(
    experiments: tuple[str, ...], all_experiments: bool, seeds_text: str, jobs: int | None, broken: tuple[str, ...], manifests: Path | None, skip_unsupported: bool,
    fail_fast: bool, keep: str, boot_seed: int | str | None, no_fork: bool, dask_address: str | None, out_dir: Path, max_wall_s: float | None, buggify: bool | None,
    guided: bool, generation_size: int | None, line_coverage: bool, baseline_dir: Path | None,
) -> None:
    """Run experiments over many seeds in parallel processes and summarize what the faults did.

    Writes OUT/NAME-seedN/ per run (as --keep says) and OUT/summary.{md,json,html} and
    OUT/junit.xml, which agree with the end line and the exit code: 0 when every run met
    its expected outcome, 1 when one did not (a violation in an experiment expected to pass
    fails the campaign; with --broken: when a checker caught the broken component on some
    seed), 4 when none failed but a run was inconclusive (a fault never applied), 130 on
    Ctrl-C and 143 on SIGTERM (finished runs and the summary are kept)."""
    import os

    from chaoskube.experiments import registry
    from chaoskube.experiments.campaign import (
        SeedsError,
        apply_keep,
        parse_seeds,
        plan_jobs,
        run_campaign,
        summarize,
        take_coverage,
        violation,
        with_baseline,
        write_summary,
    )
    from chaoskube.experiments.guided import GENERATION, coverage_summary, plain_coverage_summary, run_guided_campaign
    from chaoskube.experiments.registry import SYSTEMS

    try:
        seeds = parse_seeds(seeds_text)
    except SeedsError as error:
        fail(str(error))
    if all_experiments == bool(experiments):
        fail("name experiments or give --all (one of the two)")
    if guided and dask_address is not None:
        fail("--guided plans each generation from the one before; it runs on local processes, not with --dask")
    if generation_size is not None and not guided:
        fail("--generation N sizes the generations of --guided; give --guided too")
    if line_coverage:
        from chaoskube.experiments.coverage import line_coverage_available

        problem = line_coverage_available()
        if problem is not None:
            fail(problem)
    baseline = _read_baseline(baseline_dir) if baseline_dir is not None else None
    names = [name for name in registry.names() if not getattr(SYSTEMS[registry.find(name).system], "real_time", False)] if all_experiments else list(dict.fromkeys(experiments))
    if all_experiments and manifests is not None:
        names = [name for name in names if "manifests" in SYSTEMS[registry.find(name).system].Workload.__struct_fields__]
    if all_experiments and broken:
        names = [name for name in names if not registry.broken_problems(SYSTEMS[registry.find(name).system], broken)]
    targets = [(name, _resolve(name, broken, manifests, skip_unsupported, buggify)) for name in names]  # bad variants and manifests fail here, before any run
    if not targets:
        fail("--all: no experiment of the catalogue runs the code --broken breaks" if broken else "--all: no experiment of the catalogue takes --manifests")
    _print_skipped(targets[0][1])
    for target, found in targets:
        if getattr(SYSTEMS[found.system], "real_time", False):
            fail(f"{target}: runs real processes in real time, not reproducible by seed; run it with `chaoskube run`")
    if len({found.name for _, found in targets}) != len(targets):
        fail("two of the experiments named have the same name; give each once")
    if guided:
        for target, found in targets:
            if getattr(SYSTEMS[found.system], "replays_steps", False):
                fail(f"{target}: a saved Hypothesis example replays its steps; --guided mutates faults of a schedule or nemesis")
    _writable_directory(out_dir)
    job_list = plan_jobs(targets, seeds, out_dir, broken=broken, manifests=manifests, skip_unsupported=skip_unsupported, boot_seed=boot_seed, max_wall_s=max_wall_s, buggify=buggify)
    if line_coverage:
        import dataclasses

        job_list = [dataclasses.replace(job, line_coverage=True) for job in job_list]
    workers = min(jobs or os.cpu_count() or 1, len(job_list))
    with_broken = f" with {', '.join(broken)} broken on purpose" if broken else ""
    pool, where = None, f"{workers} process(es)"
    if dask_address is not None:
        pool, where, workers = _dask_pool(dask_address, job_list, no_fork, jobs, keep)
    mode = f", coverage-guided in generations of {generation_size or GENERATION}" if guided else ""
    stderr.print(f"chaoskube {__version__}: {len(targets)} experiment(s) x {len(seeds)} seed(s) = {len(job_list)} runs in {where}{with_broken}{mode} -> {out_dir}", markup=False)
    coverage_sets: dict[str, Any] = {}

    def finished(record: dict[str, Any]) -> None:
        if not guided:  # the guided loop takes them itself
            coverage_sets[record["out_dir"]] = take_coverage(record)
        apply_keep(record, keep, out_dir)  # a Dask worker ships back only the directories kept
        if advance is not None:
            advance(record)

    stop_when = violation if fail_fast else None  # a finding; not an inconclusive or unknown run
    with _campaign_progress(len(job_list)) as advance:
        if guided:
            result, states = run_guided_campaign(job_list, workers, on_record=finished, stop_when=stop_when, fork=not no_fork, generation_size=generation_size or GENERATION)
            coverage = coverage_summary(states, line_coverage=line_coverage)
        else:
            result = run_campaign(job_list, workers, on_record=finished, stop_when=stop_when, fork=not no_fork, pool=pool)
            coverage = plain_coverage_summary(result.records, coverage_sets, line_coverage=line_coverage)
    if result.interrupted:  # runs stopped half-way: kept with --keep all and failed (they are what the summary reports as abandoned)
        for job in result.abandoned:
            if keep == "none":
                apply_keep({"out_dir": job.out_dir, "as_expected": False, "verdicts": {}}, "none", out_dir)
    summary = summarize(result, seeds_text, workers)
    summary["coverage"] = with_baseline(coverage, baseline)
    paths = write_summary(out_dir, summary, result.records)
    _print_campaign(summary, paths)
    if result.interrupted:
        stderr.print(f"interrupted: kept {len(result.records)} finished runs and the summary; {len(result.abandoned)} handed to workers were stopped, the rest not started", markup=False)
        raise Interrupted()
    sys.exit({"as-expected": EXIT_AS_EXPECTED, "inconclusive": EXIT_INCONCLUSIVE}.get(summary["outcome"], EXIT_NOT_AS_EXPECTED))


def _read_baseline(directory: Path) -> dict[str, Any]:
    """``explore --baseline DIR``: the coverage of another campaign's summary.json."""
    import orjson

    path = directory / "summary.json"
    try:
        summary = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        fail(f"--baseline {directory}: no summary.json there; give the directory of a finished `chaoskube explore`")
    except (OSError, orjson.JSONDecodeError) as error:
        fail(f"--baseline {path}: cannot read it as JSON: {error}")
    coverage = summary.get("coverage") if isinstance(summary, dict) else None
    if not isinstance(coverage, dict) or not coverage:
        fail(f"--baseline {path}: it records no coverage (made by an older chaoskube?); run the plain campaign again")
    return coverage


def _dask_pool(address: str, job_list: list[Any], no_fork: bool, jobs: int | None, keep: str) -> tuple[Any, str, int]:
    """The Dask engine for ``--dask ADDRESS`` (dask_campaign.py), or a one-line error.
    Workers ship back only the run directories ``--keep`` keeps."""
    import functools

    from chaoskube.experiments.campaign import keeps
    from chaoskube.experiments.dask_campaign import DaskAddressError, DaskPool

    try:
        pool = DaskPool.connect(address, job_list, fork=not no_fork, chunk=None, keep=functools.partial(keeps, policy=keep))
    except DaskAddressError as error:
        fail(str(error))
    return pool, f"{pool.workers} Dask worker thread(s) at {pool.address}", max(1, pool.workers)


class _campaign_progress:
    """A progress bar of finished runs on a terminal; without one (CI), one plain line per
    finished run on stderr, as it finishes."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.bar: Any = None
        self.done = 0

    @staticmethod
    def _mark(record: dict[str, Any]) -> str:
        if record.get("error"):
            return f"ERROR: {record['error']}"
        if record.get("broken"):
            if record["findings"]:
                return f"caught: {', '.join(record['findings'])}"
            if not record["as_expected"]:
                return "NOT as expected"
            from chaoskube.experiments.campaign import reached

            return {True: "not caught (its code ran)", False: "not caught (its code never ran)"}.get(reached(record), "not caught")
        if record.get("inconclusive") and record.get("checkers_as_expected"):
            return "INCONCLUSIVE (a fault was not applied)"
        return "as expected" if record["as_expected"] else "NOT as expected"

    def __enter__(self) -> Any:
        if not stderr.is_terminal:

            def line(record: dict[str, Any]) -> None:
                self.done += 1
                click.echo(f"[{self.done}/{self.total}] {record['experiment']} seed {record['seed']}: {self._mark(record)} ({record['job_seconds']:.1f} s)", err=True)

            return line
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"), TimeElapsedColumn(), console=stderr, transient=True)
        self.bar.start()
        task = self.bar.add_task("explore", total=self.total, last="")

        def advance(record: dict[str, Any]) -> None:
            self.bar.update(task, advance=1, last=escape(f"{record['experiment']} seed {record['seed']}: {self._mark(record)}"))

        return advance

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _own_checker_line(item: dict[str, Any]) -> str:
    """What the variant's own checker did: its failing seeds, or that others caught it."""
    own = ", ".join(item["caught_by"]) or "its checker"
    if item["caught_by_failed_on"]:
        return f"the variant's checker ({own}) failed on seeds: {', '.join(str(seed) for seed in item['caught_by_failed_on'][:20])}"
    if item["failed_on"]:
        return f"the variant's checker ({own}) failed on no seed; other checkers caught it:"
    return f"the variant's checker ({own}) failed on no seed"


def _print_campaign(summary: dict[str, Any], paths: list[Path]) -> None:
    from chaoskube.experiments.campaign import end_line, reach_line

    table = Table("experiment", "seeds", "passed as expected", "unexpected", "time (s)", title=f"explore: seeds {escape(summary['seeds'])}")
    for item in summary["experiments"]:
        unexpected = f"[red]{item['unexpected']}[/]" if item["unexpected"] else "0"
        table.add_row(escape(item["experiment"]), str(item["runs"]), str(item["as_expected"]), unexpected, f"{item['wall_seconds']:.1f}")
    stdout.print(table)
    for item in summary["findings"]:
        stdout.print(f"findings with {', '.join(item['broken'])} broken on purpose in {item['experiment']}: {item['runs_with_findings']} of {item['runs']} runs failed a checker; {_own_checker_line(item)}", markup=False)
        for checker, seeds in item["failed_on"].items():
            stdout.print(f"  {checker} failed on seeds {', '.join(str(seed) for seed in seeds[:20])}{' …' if len(seeds) > 20 else ''}", markup=False)
        if reach := reach_line(item):
            stdout.print(f"  {reach}", markup=False)
    groups = (
        ("violations (not as expected):", lambda item: not item.get("broken") and item.get("finding", True)),
        ("not as expected, with no finding (inconclusive or unknown):", lambda item: not item.get("broken") and not item.get("finding", True)),
        ("findings (a checker failed):", lambda item: bool(item.get("broken"))),
    )
    for heading, belongs in groups:
        items = [item for item in summary["unexpected_runs"] if belongs(item)]
        if items:
            stdout.print(heading)
        for item in items:
            stdout.print(f"  {item['experiment']} seed {item['seed']}: {item['why']}", markup=False)
            stdout.print(f"    replay: {item['replay']}", markup=False)
            stdout.print(f"    report: {Path(item['out_dir']) / 'report.md'}", markup=False)
    named = sorted((item for item in summary.get("violations", ()) if item["kind"] != "finding"), key=lambda item: item["kind"] != "violation")  # violations first
    if named:
        stdout.print("checkers that answered false:")
    for item in named[:TERMINAL_ROWS]:
        where = f"{Path(summary_dir(paths)) / item['report']}" if item["report"] else "report removed (--keep)"
        stdout.print(f"  {item['experiment']} seed {item['seed']}: {item['checker']} false ({item['kind']}): {item['reason']} — {where}", markup=False)
    if len(named) > TERMINAL_ROWS:
        stdout.print(f"  … {len(named) - TERMINAL_ROWS} more: every one is in {summary_dir(paths) / 'summary.md'} (\"Every seed with a finding or violation\")", markup=False)
    from chaoskube.experiments.campaign import coverage_rows

    for row in coverage_rows(summary):
        if row["mode"] == "guided" or row["baseline_tuples"] is not None:
            lines = f", {row['lines']} Python lines" if row["lines"] is not None else ""
            beside = f"; the baseline ({row['baseline_mode']}) had {row['baseline_tuples']} after as many runs ({row['ratio']}x)" if row["baseline_tuples"] is not None else ""
            stdout.print(f"coverage of {row['experiment']} ({row['mode']}): {row['tuples']} journal tuples{lines} in {row['runs']} runs, corpus of {row['corpus']}{beside}", markup=False)
    stopped = summary.get("stopped_early")
    if stopped:
        stdout.print(f"stopped early (--fail-fast) at {stopped['experiment']} seed {stopped['seed']}; {stopped['not_started']} run(s) not started", markup=False)
    stdout.print(f"{summary['outcome']}: {end_line(summary)} in {summary['wall_seconds']:.1f} s", markup=False)
    stdout.print("summary: " + ", ".join(str(path) for path in paths), markup=False)


#: How many seeds with a false verdict the terminal lists (the summary files list them all).
TERMINAL_ROWS = 40


def summary_dir(paths: list[Path]) -> Path:
    return paths[0].parent


@cli.command()
@click.argument("run_dir", metavar="DIR", type=click.Path(path_type=Path))
def replay(run_dir: Path) -> None:
    """Run the run recorded in DIR again and compare journal fingerprints.

    Reads the experiment and seed from DIR/result.json, runs it into a temporary
    directory, prints both fingerprints; exits 0 when they match, 1 when they differ (the
    replayed run is kept for diffing), 2 when DIR is not a run."""
    from chaoskube.experiments.campaign import NotARun, load_run, replay_run, replay_target

    try:
        payload = load_run(run_dir)
        if payload.get("mode") == "live":  # docs/formats.md: refused, not a MISMATCH
            live = payload.get("live") if isinstance(payload.get("live"), dict) else {}
            fail(f"{run_dir}: a live run (chaoskube serve) does not replay byte for byte: outside programs sent requests when they did; what replays: {live.get('replays') or 'the cluster and seed only'}")
        target = replay_target(payload)
        stderr.print(f"chaoskube {__version__}: replaying {target} seed {payload['seed']} from {run_dir}")
        with _progress(target) as progress:
            outcome = replay_run(run_dir, progress)
    except NotARun as error:
        fail(str(error))
    if outcome.manifests_changed:
        stdout.print(f"note: {outcome.manifests_changed}", markup=False)
    stdout.print(f"recorded: {outcome.recorded}")
    stdout.print(f"replayed: {outcome.replayed}")
    if outcome.interrupted:
        stderr.print("interrupted")
        raise Interrupted()
    if outcome.match:
        stdout.print("match: the run replays byte for byte")
        sys.exit(0)
    where = f" (first different journal line: {outcome.first_difference})" if outcome.first_difference else ""
    stdout.print(f"MISMATCH{where}; the replayed run is in {outcome.replay_dir}", markup=False)
    if outcome.journal_on_disk is not None and outcome.journal_on_disk != outcome.recorded:
        stdout.print(f"note: {run_dir / 'journal.jsonl'} itself hashes to {outcome.journal_on_disk}, not to the recorded fingerprint: result.json or the journal was changed after the run", markup=False)
    if outcome.recorded_version and outcome.recorded_version != __version__:
        stdout.print(f"note: recorded with chaoskube {outcome.recorded_version}, replayed with {__version__}", markup=False)
    sys.exit(1)


@cli.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE|NAME...")
def validate(files: tuple[str, ...]) -> None:
    """Check experiment files without running anything: the file, its fields and types,
    and everything a run would refuse (targets against the processes the experiment
    builds, fault parameters and durations, checkers, manifests, probes). Prints one line
    per problem, naming the file and the field, or one line per valid file; exits 0 when
    every file is valid, 2 when one is not.

    A Kubernetes manifest file (one or more ``---`` documents with ``apiVersion`` and
    ``kind``) or a directory of them is checked as ``--manifests`` loads it: every document
    decoded (kinds, API versions, field types), the CustomResourceDefinitions of the set
    serving its custom resources; the API server's own validation runs when a run creates
    the objects."""
    from chaoskube.experiments import registry

    problems_total = invalid = 0
    catalog = registry.catalog_paths()
    manifests = {item for item in files if not (item in catalog and not item.endswith((".yaml", ".yml")) and "/" not in item) and _holds_manifests(Path(item))}
    custom = _set_kinds(sorted(manifests)) if len(manifests) > 1 else None
    for item in files:
        path = catalog.get(item) if not item.endswith((".yaml", ".yml")) and "/" not in item else None
        if item in manifests:
            problem = _manifest_problem(Path(item), custom)
            if problem is not None:
                invalid += 1
                problems_total += 1
                click.echo(_one_line(problem))
            continue
        experiment, problems = registry.check_experiment(path or item)
        live_only = ""
        if problems and all("this run has no operator" in problem for problem in problems):
            # Faults on the --run program: a file for `serve --run` (registry.OPERATOR_PROCESS).
            experiment, problems = registry.check_experiment(path or item, operator=True)
            live_only = " -- for `chaoskube serve FILE --run COMMAND` only: its faults target the operator (`chaoskube run` refuses it)"
        if problems:
            invalid += 1
            problems_total += len(problems)
            for problem in problems:
                click.echo(_one_line(problem))
            continue
        assert experiment is not None
        probes = f", {len(experiment.probes)} probe(s)" if experiment.probes else ""
        click.echo(f"{experiment.path}: valid (system {experiment.system}, {len(experiment.checkers)} checker(s), {len(experiment.schedule)} scheduled fault(s){probes}){live_only}")
    if invalid:
        fail(f"{problems_total} problem(s) in {invalid} of {len(files)} file(s)")


def _holds_manifests(path: Path) -> bool:
    """A directory, or a YAML file of several documents or of one Kubernetes object
    (``apiVersion`` and ``kind``), not an experiment file. Unreadable or not YAML: False
    (the experiment check then says why, in one line)."""
    if path.is_dir():
        return True
    import yaml

    from chaoskube.api.files import MANIFEST_MAX_BYTES, TooLarge, read_limited

    try:
        documents = [document for document in yaml.safe_load_all(read_limited(path, MANIFEST_MAX_BYTES, "a manifest file")) if document is not None]
    except (OSError, TooLarge, yaml.YAMLError, ValueError, RecursionError):
        return False
    if len(documents) > 1:
        return True
    return len(documents) == 1 and isinstance(documents[0], dict) and "apiVersion" in documents[0] and "kind" in documents[0] and "system" not in documents[0]


def _set_kinds(paths: list[str]) -> Any:
    """The custom kinds the CRDs of all the manifest files named serve (they are one set,
    as for ``kubectl apply -f a.yaml -f b.yaml``)."""
    from chaoskube.experiments.systems.kubernetes import set_custom_kinds

    return set_custom_kinds(list(paths))


def _manifest_problem(path: Path, custom: Any = None) -> str | None:
    """Load ``path`` as ``--manifests`` does; print the valid line, or return the problem.
    ``custom``: the kinds the CRDs of the other files named serve."""
    from chaoskube.api.manifests import ManifestError, load_manifests

    try:
        objects = load_manifests(path, custom=custom)
    except ManifestError as error:
        return str(error)
    if not objects:
        return f"{path}: holds no Kubernetes object"
    counts: dict[str, int] = {}
    for obj in objects:
        counts[obj.KIND] = counts.get(obj.KIND, 0) + 1
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))
    click.echo(f"{path}: valid manifests ({len(objects)} object(s): {kinds})")
    return None


@cli.command()
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write it to FILE instead of printing it.")
def schema(out_file: Path | None) -> None:
    """The JSON Schema of experiment files (generated from the model; shipped as
    chaoskube/experiments/schema/experiment.schema.json), for editors and CI."""
    from chaoskube.experiments.schema import schema_bytes

    data = schema_bytes()
    if out_file is None:
        click.echo(data.decode(), nl=False)
        return
    try:
        out_file.write_bytes(data)
    except OSError as error:
        fail(f"--out {out_file}: cannot write there ({error.strerror or error})")


@cli.command("mark-fixed")
@click.argument("file", metavar="FILE")
@click.option("--seed", type=SEED, default=None, help="The World seed [default: the file's `seed`].")
@click.option("--out", "out_dir", type=OutDir(), default=None, help="Where the replay's run directory goes [default: a temporary one, removed].")
def mark_fixed(file: str, seed: int | None, out_dir: Path | None) -> None:
    """Replay a saved Hypothesis example (expected to fail) after its bug was fixed; when
    every checker now passes, rewrite FILE as `expected: pass` (the old failure noted in its
    description) so it guards the fix in CI. Exits 0 when marked, 1 when it still fails
    (FILE unchanged), 2 for a file that is not a saved example."""
    import shutil
    import tempfile

    from chaoskube.experiments.replay_example import mark_fixed as mark

    work = out_dir or Path(tempfile.mkdtemp(prefix="chaoskube-mark-fixed-"))
    try:
        outcome = mark(Path(file), work, seed)
    finally:
        if out_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    if outcome.result.interrupted:
        raise Interrupted()
    if not outcome.fixed:
        stdout.print(f"still failing: {outcome.reason}; {file} left as it is (expected: fail)", markup=False)
        sys.exit(EXIT_NOT_AS_EXPECTED)
    stdout.print(f"marked {file} expected: pass — {outcome.reason} (journal sha256 {outcome.result.journal_sha256})", markup=False)


@cli.command()
@click.argument("dirs", nargs=-1, required=True, metavar="DIR...", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=OutDir(), default=None, help="Where the merged summary goes [default: with one campaign directory, that directory; else ./report].")
def report(dirs: tuple[Path, ...], out_dir: Path | None) -> None:
    """Make reports again from what runs recorded (journal.jsonl and result.json).

    One run directory: its report.md, report.html and junit.xml are written again (nothing
    is re-run or re-judged). Several directories, or a campaign directory: one summary
    (summary.md, summary.json, summary.html, junit.xml) over all their runs, in --out.
    Exits 0, or 2 when a directory holds no run."""
    from chaoskube.experiments.campaign import NotARun, end_line
    from chaoskube.experiments.rerender import merge, rerender_run

    from chaoskube.experiments.rerender import run_dirs

    try:
        if len(dirs) == 1 and (dirs[0] / "result.json").is_file() and out_dir is None:
            paths = rerender_run(dirs[0])
            stdout.print("wrote " + ", ".join(str(path) for path in paths[1:]), markup=False)
            return
        run_dirs(list(dirs))  # every directory holds runs, before anything is written
        out = out_dir or (dirs[0] if len(dirs) == 1 else Path("report"))
        _writable_directory(out)
        summary, paths = merge(list(dirs), out)
    except NotARun as error:
        fail(str(error))
    stdout.print(f"{summary['outcome']}: {end_line(summary)}", markup=False)
    stdout.print("summary: " + ", ".join(str(path) for path in paths), markup=False)


@cli.command("check-history")
@click.argument("history_file", metavar="FILE")
@click.option("--format", "fmt", type=click.Choice(["jepsen-etcd", "porcupine-kv"]), required=True, help="jepsen-etcd: a register (read/write/cas); porcupine-kv: a string map (get/put/append).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object with the verdict, the operation count and the check time.")
@click.option("--time-limit", "time_limit_s", type=Seconds(), default=60.0, show_default=True, help="Seconds before the answer is unknown (a finite number > 0).")
def check_history(history_file: str, fmt: str, as_json: bool, time_limit_s: float) -> None:
    """Check a recorded history for linearizability.

    Prints linearizable, not linearizable or unknown; exits 0, 1 or 3 (2 if the file
    cannot be read or parsed)."""
    import json

    from chaoskube.checkers.history import HistoryFormatError, load_history
    from chaoskube.checkers.linearizability import KVModel, RegisterModel, check_linearizability

    try:
        operations = load_history(history_file, fmt)
    except HistoryFormatError as error:
        fail(str(error))
    model = RegisterModel() if fmt == "jepsen-etcd" else KVModel()
    verdict = check_linearizability(operations, model, time_limit_s=time_limit_s)
    word = {True: "linearizable", False: "not linearizable", None: "unknown"}[verdict.valid]
    if as_json:
        payload = {
            "file": history_file,
            "format": fmt,
            "result": word,
            "reason": verdict.reason,
            "operations": len(operations),
            "check_seconds": round(verdict.details.get("check_seconds", 0.0), 6),
            "evidence": [op.to_json() for op in verdict.evidence],
            "evidence_status": verdict.details.get("evidence_status"),
        }
        click.echo(json.dumps(payload, sort_keys=True))
    else:
        click.echo(word)
        if verdict.valid is not True:
            click.echo(verdict.reason, err=True)
    sys.exit({True: 0, False: 1, None: 3}[verdict.valid])


@cli.command()
@click.option("--listen", default="127.0.0.1:8474", show_default=True, help="HOST:PORT for the Toxiproxy HTTP API (loopback by default).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for toxicity and jitter draws.")
def toxiproxy(listen: str, seed: int) -> None:
    """Run a Toxiproxy-compatible server (Toxiproxy 2.x API) until interrupted.

    toxiproxy-python and other Toxiproxy clients drive it unchanged; docs/toxiproxy.md
    lists the toxics and chaoskube's extension for cutting particular etcd peers."""
    from chaoskube.faults.toxiproxy.proxy import AddressError, parse_address
    from chaoskube.faults.toxiproxy.server import ListenError, run_forever

    try:
        parse_address(listen, default_host="127.0.0.1")
    except AddressError as error:
        fail(f"--listen: {error}")
    try:
        run_forever(listen, seed=seed)
    except ListenError as error:
        fail(f"--listen {listen}: {error}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors and exit 2 for bad input, never a traceback; SIGTERM
    handled as SIGINT (130 / 143: experiments/signals.py)."""
    global STOPPING
    from loguru import logger

    logger.remove()  # loguru's default handler would print every log line; run.log has them
    logger.add(sys.stderr, level="WARNING", format="{level}: {message}")
    with termination_as_interrupt() as stopping:
        STOPPING = stopping
        code = _main(argv, stopping)
    if stopping.first is not None:
        ignore_further_signals()  # a signal during the interpreter's shutdown must not change the exit code
    sys.exit(code)


def _main(argv: list[str] | None, stopping: Stopping) -> int:
    try:
        code = cli.main(args=argv, prog_name="chaoskube", standalone_mode=False)
    except ExperimentError as error:
        click.echo(f"chaoskube: error: {_one_line(str(error))}", err=True)
        return EXIT_BAD_INPUT
    except click.UsageError as error:
        message = error.format_message().splitlines()[0] if error.format_message() else "bad usage"
        command = error.ctx.command_path if error.ctx is not None else "chaoskube"
        click.echo(f"{command}: error: {_one_line(message)} (see {command} --help)", err=True)
        return EXIT_BAD_INPUT
    except click.ClickException as error:
        click.echo(f"chaoskube: error: {_one_line(error.format_message())}", err=True)
        return error.exit_code
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (click.exceptions.Abort, KeyboardInterrupt, Interrupted):
        stopping_now()
        note_interrupt(stopping)
        click.echo("chaoskube: " + ("stopped by SIGTERM" if stopping.terminated else "interrupted"), err=True)
        return stopping.exit_code
    return code if isinstance(code, int) else 0


def _one_line(text: str) -> str:
    """Errors are one line, whatever a message holds (a YAML snippet, a path with a newline)."""
    return " ".join(str(text).split())


if __name__ == "__main__":
    main()

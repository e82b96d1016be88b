"""pytest plugin for chaoskube (entry point ``pytest11: chaoskube``).

Fixtures:

- ``sim_world`` — a fresh :class:`~chaoskube.sim.World` per test, seeded by
  ``@pytest.mark.sim_seed(N)`` (default :data:`DEFAULT_SEED`).
- ``cluster`` — a :class:`~chaoskube.testing.LiveCluster` on ``sim_world``: the cluster of
  ``@pytest.mark.cluster_spec(...)`` — a ``ClusterSpec``, its keyword arguments
  (snake_case, as ``ClusterSpec(...)`` takes them), or the path of a cluster spec YAML file
  (camelCase, :func:`~chaoskube.cluster.load_cluster_spec`; relative to the test file) —
  default :func:`~chaoskube.testing.small_cluster_spec`, booted with every node Ready,
  running in a background thread. Act on it with ``cluster.run(async_fn, *args)`` (virtual
  time moves only inside ``run``) and look through ``cluster.cluster``, ``cluster.client``
  and ``cluster.world``. A World runs its own ``trio.run``, so use it from a plain (sync)
  test, not from a pytest-trio async test. Stopped at teardown.
- ``journal`` — ``sim_world.journal``.

Marker ``@pytest.mark.gallery(*names)``: the test runs with these variants of
:mod:`chaoskube.gallery` (deliberately broken components) patched in, and a failing
example is saved with them in its ``broken`` list, so its replay has the same bug.

On failure the report gets a ``chaoskube`` section with the seed, the step list and the
journal fingerprint: from a :class:`~chaoskube.testing.ClusterMachine` failure (the
exception's ``chaoskube_run``) or, for tests using the fixtures, from the live cluster.
For a ClusterMachine example (a failure of the test call, with the machine class
importable by name), the plugin also:

1. saves the example as an experiment file (:func:`~chaoskube.testing.experiment.save_experiment`,
   expected to fail with the failing checker) under ``--chaoskube-failures`` (default
   ``<rootdir>/.chaoskube/failures``), in a directory named after the test;
2. replays it into ``run/`` next to it, in a fresh process, as ``chaoskube run FILE``
   would (``python -m chaoskube.experiments.replay_example FILE --out DIR --judged-only``: the
   plugin lives below ``experiments`` and does not import it), which writes the
   failure-mode report (``report.md``, ``report.html``, ``result.json``, ``junit.xml``,
   ``journal.jsonl``) and drops from the file the checkers that had nothing to judge;
3. prints both paths, the replay command, and whether the replay's fingerprint equals the
   example's.

This costs one replay per failing test, and nothing for a passing one.
``--chaoskube-failures=off`` turns it off.

Non-guarantees: the fingerprint printed for a fixture-based test is the journal's at the
moment the report is made (the run is stopped at fixture teardown, after the call report).
A replay matches the example only with the same code: a bug patched in by the test itself
(``monkeypatch``, not the ``gallery`` marker) is not in the file, and the section then says
the fingerprints differ. The replay is bounded by :data:`REPLAY_TIMEOUT_S` of wall time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskube import gallery
from chaoskube.cluster import ClusterSpec, ClusterSpecError, load_cluster_spec
from chaoskube.sim import World
from chaoskube.testing.machine import ClusterMachine, LiveCluster, RunSummary, small_cluster_spec

DEFAULT_SEED = 1
SECTION = "chaoskube"
#: Where failing examples are saved, under the rootdir, unless --chaoskube-failures says.
FAILURES_DIR = Path(".chaoskube") / "failures"
#: Wall-time bound of the failure report's replay; past it the section says so.
REPLAY_TIMEOUT_S = 600.0
REPLAY_MODULE = "chaoskube.experiments.replay_example"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoskube")
    group.addoption(
        "--chaoskube-failures",
        dest="chaoskube_failures",
        default=None,
        metavar="DIR",
        help="where a failing ClusterMachine example is saved as an experiment with its failure-mode report "
        "(default: <rootdir>/.chaoskube/failures; 'off' to skip)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sim_seed(seed): the seed of the sim_world fixture (chaoskube)")
    config.addinivalue_line("markers", "cluster_spec(spec=None, **fields): the ClusterSpec of the cluster fixture: a ClusterSpec, its fields, or a spec YAML path (chaoskube)")
    config.addinivalue_line("markers", "gallery(*names): run the test with these chaoskube.gallery variants patched in (chaoskube)")


def _seed_of(request: pytest.FixtureRequest) -> int:
    marker = request.node.get_closest_marker("sim_seed")
    if marker is None:
        return DEFAULT_SEED
    assert len(marker.args) == 1 and not marker.kwargs, "use @pytest.mark.sim_seed(N)"
    return int(marker.args[0])


def _spec_of(request: pytest.FixtureRequest) -> ClusterSpec:
    marker = request.node.get_closest_marker("cluster_spec")
    if marker is None:
        return small_cluster_spec()
    if marker.args:
        assert len(marker.args) == 1 and not marker.kwargs, "cluster_spec takes one ClusterSpec, one spec file path, or keyword fields"
        spec = marker.args[0]
        if isinstance(spec, ClusterSpec):
            return spec
        assert isinstance(spec, (str, Path)), f"cluster_spec: {spec!r} is neither a ClusterSpec nor a path"
        path = Path(spec)
        if not path.is_absolute():
            path = Path(request.node.path).parent / path
        try:
            return load_cluster_spec(path.read_text(), str(path))
        except OSError as error:
            raise pytest.UsageError(f"cluster_spec: {path}: cannot read: {error.strerror or error}") from None
        except ClusterSpecError as error:
            raise pytest.UsageError(f"cluster_spec: {error}") from None
    return ClusterSpec(**marker.kwargs)


def _gallery_of(item: pytest.Item) -> list[str]:
    return [str(name) for marker in item.iter_markers("gallery") for name in marker.args]


@pytest.fixture
def sim_world(request: pytest.FixtureRequest) -> World:
    return World(_seed_of(request))


@pytest.fixture
def cluster(request: pytest.FixtureRequest, sim_world: World) -> Iterator[LiveCluster]:
    live = LiveCluster(sim_world, _spec_of(request))
    request.node.stash[_LIVE] = live
    live.open()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def journal(sim_world: World) -> Any:
    return sim_world.journal


_LIVE = pytest.StashKey[LiveCluster]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Patch in the ``gallery`` marker's variants around the test body."""
    names = _gallery_of(item)
    if not names:
        yield
        return
    try:
        gallery.check(names)
    except KeyError as error:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.gallery: {error.args[0]}") from None
    with gallery.applied(names):
        yield


def _failure_of(error: BaseException | None, depth: int = 0) -> tuple[RunSummary, BaseException] | None:
    """The first RunSummary attached to ``error`` or, in a group, to one of its members,
    with the exception that carries it."""
    if error is None or depth > 8:
        return None
    summary = getattr(error, "chaoskube_run", None)
    if isinstance(summary, RunSummary):
        return summary, error
    for member in getattr(error, "exceptions", ()):
        found = _failure_of(member, depth + 1)
        if found is not None:
            return found
    return _failure_of(error.__cause__ or error.__context__, depth + 1)


def _summary_of(error: BaseException | None) -> RunSummary | None:
    found = _failure_of(error)
    return found[0] if found is not None else None


def _machine_of(summary: RunSummary, error: BaseException) -> type[ClusterMachine] | None:
    """The ClusterMachine class of a failing example: named by the summary or the error if
    the machine says it, else the ``self`` of the innermost machine frame of the traceback."""
    from chaoskube.testing.experiment import resolve_machine

    for named in (getattr(summary, "machine", None), getattr(error, "chaoskube_machine", None)):
        if isinstance(named, type) and issubclass(named, ClusterMachine):
            return named
        if isinstance(named, str) and named:
            try:
                return resolve_machine(named)
            except ValueError:
                pass
    found = None
    traceback = error.__traceback__
    while traceback is not None:
        candidate = traceback.tb_frame.f_locals.get("self")
        if isinstance(candidate, ClusterMachine):
            found = type(candidate)
        traceback = traceback.tb_next
    return found


def _failures_root(config: pytest.Config) -> Path | None:
    option = config.getoption("chaoskube_failures", default=None)
    if option == "off":
        return None
    return Path(option).resolve() if option else config.rootpath / FAILURES_DIR


def save_failure(item: pytest.Item, summary: RunSummary, error: BaseException, root: Path) -> list[str]:
    """Save a failing example as an experiment, replay it into a failure-mode report, and
    return the lines that say where (steps 1-3 of the module docstring)."""
    from chaoskube.testing.experiment import failing_checkers, machine_path, save_experiment

    machine = _machine_of(summary, error)
    if machine is None or summary.seed is None:
        return ["not saved as an experiment: the failure carries no ClusterMachine example"]
    try:
        path_of_machine = machine_path(machine)
    except ValueError as error_of_path:
        return [f"not saved as an experiment: {error_of_path}"]
    name = _UNSAFE.sub("-", item.name).strip("-") or "example"
    directory = root / _UNSAFE.sub("-", item.nodeid).strip("-")
    failing = failing_checkers(error)
    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    try:
        experiment = save_experiment(
            summary, directory / f"{name}.yaml", machine=machine, name=name, failing=failing,
            failure_mode=f"found by {item.nodeid}: {first_line}", broken=_gallery_of(item),
        )
    except (OSError, ValueError) as error_of_save:
        return [f"not saved as an experiment: {error_of_save}"]
    run_dir = directory / "run"
    lines = [f"saved experiment: {experiment}", f"replay it with: {shlex.join(['chaoskube', 'run', str(experiment), '--out', str(run_dir)])}"]
    lines += _replay(item, experiment, run_dir, summary.fingerprint, path_of_machine)
    return lines


def _replay(item: pytest.Item, experiment: Path, run_dir: Path, fingerprint: str, machine: str) -> list[str]:
    """Replay the saved file in a fresh process; the lines that say what it gave."""
    # No PYTHONPATH: the saved file records where its machine imports from (import_path),
    # and this replay proves that `chaoskube run FILE` works as printed, from anywhere.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = [sys.executable, "-m", REPLAY_MODULE, str(experiment), "--out", str(run_dir), "--judged-only"]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, cwd=item.config.rootpath, env=env, timeout=REPLAY_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return [f"failure-mode report: not written: the replay took longer than {REPLAY_TIMEOUT_S:g} s"]
    output = completed.stdout.strip().splitlines()
    try:
        result = json.loads(output[-1]) if output else None
    except json.JSONDecodeError:
        result = None
    if completed.returncode not in (0, 1) or not isinstance(result, dict):
        reason = (completed.stderr.strip().splitlines() or [f"exit code {completed.returncode}"])[-1]
        return [f"failure-mode report: not written: the replay of {machine} failed: {reason}"]
    lines = [f"failure-mode report: {run_dir / 'report.md'} (and report.html, result.json, journal.jsonl)"]
    if result.get("fingerprint") == fingerprint:
        lines.append("replay fingerprint: the same journal sha256 as the example")
    else:
        lines.append(
            f"replay fingerprint: journal sha256 {result.get('fingerprint')} differs from the example's: the test changes code the "
            "file does not name (use @pytest.mark.gallery(...) rather than monkeypatch), or the machine is not deterministic"
        )
    lines.append(f"replay verdicts: failing {', '.join(result.get('failing') or []) or 'none'}; {'as expected' if result.get('as_expected') else 'NOT as expected'}")
    return lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    found = _failure_of(call.excinfo.value if call.excinfo is not None else None)
    summary = found[0] if found is not None else None
    if summary is None:
        live = item.stash.get(_LIVE, None)
        if live is not None:
            summary = live.summary()
        elif "sim_world" in getattr(item, "funcargs", {}):
            world = item.funcargs["sim_world"]
            summary = RunSummary(world.seed, (), world.fingerprint, world.now, world.journal.count)
    if summary is None:
        return
    text = summary.describe()
    root = _failures_root(item.config)
    if found is not None and call.when == "call" and root is not None:
        text += "\n" + "\n".join(save_failure(item, summary, found[1], root))
    report.sections.append((SECTION, text))

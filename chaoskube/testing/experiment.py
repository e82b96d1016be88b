"""Shrunk Hypothesis examples as experiment files: a finding becomes a named regression.

Contract. :func:`save_experiment` writes one :class:`~chaoskube.testing.RunSummary` (the
seed and steps of a :class:`~chaoskube.testing.ClusterMachine` example) as an experiment
file in the format ``chaoskube run`` reads (``experiments/model.py``): ``system:
hypothesis``, the machine's cluster spec (``cluster``, camelCase as in
:func:`chaoskube.cluster.load_cluster_spec`), ``workload: {machine: "module:QualName",
steps: [[name, args], ...]}`` (the steps after ``boot``, without the automatic
``teardown``; and ``import_path``, the directory, relative to the file, that holds the
machine's top-level package, so a fresh process imports it without ``PYTHONPATH``), the
example's seed as the file's default ``seed``, the checkers the example judged and the
expected outcome. ``chaoskube run FILE`` replays the steps through that
machine class (``experiments/systems/hypothesis.py``) and, with the same seed, gives the
example's journal fingerprint. A failing example is saved as ``expected: fail`` with the
failing checker: a regression experiment; once the bug is fixed, ``chaoskube mark-fixed
FILE`` replays it and, when every checker passes, rewrites it as ``expected: pass``.

Checker names (:data:`CHECKER_OF_INVARIANT`, :data:`CHECKER_OF_VIOLATION`): each built-in
invariant of the machine is the experiment checker of the same journal checker
(``raft-safety``, ``leader-election``, ``pdb-eviction``, ``scheduling``); the teardown's
liveness phase is ``convergence`` (and ``eventually`` for the machine's ``@eventually``
properties); :data:`STEPS_CHECKER` (``steps``) stands for everything
else a replay can fail on: a subclass's own ``@invariant``, a rule that raises, a crashed
simulation.

Guarantees.

- The file holds only JSON-able data (step arguments as the rules received them) and
  names the machine by import path; :func:`machine_path` refuses a class that cannot be
  imported by that path (defined inside a function), so a saved file always names a
  machine a fresh process can load.
- :func:`checkers_judged` lists the checkers the example itself judged: the built-in
  invariants the class still has (a subclass can shadow one with ``None``) and that gave a
  verdict (an invariant whose last answer was unknown -- no PDB to hold evictions to, say
  -- judged nothing, and its checker would answer unknown on the replay), ``convergence``
  only when the example reached teardown (a failing example stops at its failing step,
  before the liveness phase, and so does its replay), and ``steps``.

Non-guarantees.

- The replay is exact only with the same code: a bug patched in by ``monkeypatch`` is not
  in the file. Name gallery variants (``chaoskube.gallery``) in ``broken`` instead; the
  runner patches them in around the replay.
- This module does not validate the file against ``experiments/model.py`` (``chaoskube``
  never imports ``experiments``); ``chaoskube.experiments.model.load_experiment`` does, and the tests
  load every file this module writes.

Upstream: Hypothesis stateful testing, the falsifying example printed as a list of steps
(https://hypothesis.readthedocs.io/en/latest/stateful.html); Chaos Toolkit's experiment as
data (https://chaostoolkit.org/reference/api/experiment/).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from chaoskube.cluster import ClusterSpec
from chaoskube.testing.machine import EVENTUALLY_MARKER, ClusterMachine, RunSummary

__all__ = [
    "CHECKER_OF_INVARIANT",
    "CHECKER_OF_VIOLATION",
    "STEPS_CHECKER",
    "checkers_judged",
    "example_steps",
    "experiment_document",
    "failing_checkers",
    "import_root",
    "machine_path",
    "resolve_machine",
    "save_experiment",
    "spec_document",
    "write_document",
]

#: Built-in invariant method of ClusterMachine -> the experiment checker that judges the same.
CHECKER_OF_INVARIANT: dict[str, str] = {
    "raft_is_safe": "raft-safety",
    "leader_election_holds": "leader-election",
    "evictions_respect_pdbs": "pdb-eviction",
    "bindings_fit": "scheduling",
}
#: ``InvariantViolation.name`` (what the machine raises) -> the experiment checker.
CHECKER_OF_VIOLATION: dict[str, str] = {
    "raft safety": "raft-safety",
    "leader election": "leader-election",
    "PDB-aware eviction": "pdb-eviction",
    "scheduling": "scheduling",
    "convergence": "convergence",
    "eventually": "eventually",
}
#: The checker for any other failure of a replay (a subclass's invariant, a rule raising).
STEPS_CHECKER = "steps"
SOURCE = "https://hypothesis.readthedocs.io/en/latest/stateful.html"
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def machine_path(machine: type) -> str:
    """``"module:QualName"`` of a ClusterMachine class; ValueError (one line) when that
    path does not import back to the class (a class defined inside a function)."""
    if not (isinstance(machine, type) and issubclass(machine, ClusterMachine)):
        raise ValueError(f"machine: {machine!r} is not a ClusterMachine subclass")
    path = f"{machine.__module__}:{machine.__qualname__}"
    if "<locals>" in machine.__qualname__ or machine.__module__ == "__main__":
        raise ValueError(f"machine: {path} cannot be imported by name from another process; define the class at module level of an importable module")
    try:
        found = resolve_machine(path)
    except ValueError as error:
        raise ValueError(f"machine: {path} does not import back: {error}") from None
    if found is not machine:
        raise ValueError(f"machine: {path} imports a different class than the one given")
    return path


def import_root(machine: type) -> Path | None:
    """The directory to put on ``sys.path`` to import ``machine``'s module by its name (the
    directory above its top-level package), or None for a module that is not a file."""
    module = sys.modules.get(machine.__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    depth = machine.__module__.count(".") + (1 if path.name == "__init__.py" else 0)
    return path.parents[depth]


def resolve_machine(path: str, search: Sequence[str | Path] = ()) -> type[ClusterMachine]:
    """The ClusterMachine class at ``"module:QualName"``; ValueError (one line) otherwise.
    ``search``: directories put first on ``sys.path`` (a saved example's ``import_path``),
    so the module imports without ``PYTHONPATH``."""
    module_name, sep, qualname = path.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"{path!r} is not of the form 'module:QualName'")
    for directory in reversed([str(Path(item).resolve()) for item in search]):
        if directory not in sys.path:
            sys.path.insert(0, directory)
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import module {module_name!r}: {error}") from None
    except Exception as error:  # noqa: BLE001 - a module that fails to import is the file's problem, in one line
        raise ValueError(f"importing module {module_name!r} failed: {type(error).__name__}: {error}") from None
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ValueError(f"module {module_name!r} has no {qualname!r}")
    if not (isinstance(found, type) and issubclass(found, ClusterMachine)):
        raise ValueError(f"{path} is not a ClusterMachine subclass")
    return found


def checkers_judged(machine: type[ClusterMachine], steps: Sequence[tuple[str, Any]], unknown: Iterable[str] = ()) -> list[str]:
    """The checkers an example of ``machine`` with ``steps`` judged (module docstring).
    ``unknown``: the invariants whose last verdict was unknown (:attr:`RunSummary.unknown`,
    by violation name): their checkers had nothing to judge in the example, and would answer
    unknown on its replay too -- which makes a replay "not as expected" -- so they are left
    out (issue 32)."""
    silent = {CHECKER_OF_VIOLATION[name] for name in unknown if name in CHECKER_OF_VIOLATION}
    found = [checker for method, checker in CHECKER_OF_INVARIANT.items() if getattr(machine, method, None) is not None and checker not in silent]
    if any(name == "teardown" for name, _ in steps):
        found.append("convergence")
        if any(getattr(getattr(machine, attribute, None), EVENTUALLY_MARKER, False) for attribute in dir(machine)):
            found.append("eventually")
    found.append(STEPS_CHECKER)
    return found


def failing_checkers(error: BaseException | None) -> list[str]:
    """The checker an example's failure stands for: the built-in invariant's, or ``steps``."""
    if error is None:
        return []
    name = getattr(error, "name", None)
    if isinstance(name, str) and name in CHECKER_OF_VIOLATION and hasattr(error, "verdict"):
        return [CHECKER_OF_VIOLATION[name]]
    return [STEPS_CHECKER]


def example_steps(summary: RunSummary) -> list[list[Any]]:
    """The steps after ``boot``, without ``teardown``, as JSON-able ``[name, args]`` pairs."""
    steps = list(summary.steps)
    if not steps or steps[0][0] != "boot":
        raise ValueError("summary: its steps do not start with boot(seed=...): not a ClusterMachine example")
    found = []
    for name, args in steps[1:]:
        if name == "teardown":
            break
        found.append([name, msgspec.to_builtins(dict(args))])
    return found


def spec_document(spec: ClusterSpec) -> dict[str, Any]:
    """A ClusterSpec as the ``cluster`` mapping of an experiment (camelCase fields)."""
    return msgspec.to_builtins(spec)


def experiment_document(
    summary: RunSummary,
    *,
    machine: type[ClusterMachine] = ClusterMachine,
    name: str,
    title: str | None = None,
    description: str | None = None,
    failing: Sequence[str] = (),
    failure_mode: str = "",
    broken: Sequence[str] = (),
    checkers: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The experiment mapping :func:`save_experiment` writes (keys in reading order)."""
    path = machine_path(machine)
    if summary.seed is None:
        raise ValueError("summary: no seed (the example never booted)")
    steps = example_steps(summary)
    checkers = list(checkers) if checkers is not None else checkers_judged(machine, summary.steps, summary.unknown)
    failing = list(failing)
    for checker in failing:
        if checker not in checkers:
            raise ValueError(f"failing: {checker!r} is not one of the checkers {checkers}")
    listing = "\n".join(f"  {index}. {step}({', '.join(f'{key}={value!r}' for key, value in args.items())})" for index, (step, args) in enumerate(steps, 1))
    outcome = f"failed {', '.join(failing)}" if failing else "passed"
    document: dict[str, Any] = {
        "name": name,
        "title": title or f"{machine.__qualname__}: a Hypothesis example that {outcome} ({len(steps)} steps, seed {summary.seed})",
        "description": description
        or (
            f"A Hypothesis stateful example of {path}, replayed step by step (same World seed, same steps, the same "
            f"quiescence between steps). Journal sha256 of the example: {summary.fingerprint}.\n"
            f"Steps after boot(seed={summary.seed}):\n{listing or '  (none)'}\n"
        ),
        "source": f"{SOURCE} (saved by chaoskube.testing.save_experiment)",
        "system": "hypothesis",
        "seed": summary.seed,
        "cluster": spec_document(machine.spec),
        "workload": {"machine": path, "steps": steps},
        "checkers": checkers,
        "expected": {"outcome": "fail" if failing else "pass", "failing": failing, "failure_mode": failure_mode},
    }
    if broken:
        document["broken"] = list(broken)
    return document


def write_document(document: dict[str, Any], path: str | Path) -> Path:
    """Write an experiment mapping as YAML (creating the directory)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgspec.yaml.encode(document))
    return path


def save_experiment(
    summary: RunSummary,
    path: str | Path,
    *,
    machine: type[ClusterMachine] = ClusterMachine,
    name: str | None = None,
    failing: Iterable[str] = (),
    failure_mode: str = "",
    broken: Iterable[str] = (),
    checkers: Sequence[str] | None = None,
    title: str | None = None,
    description: str | None = None,
) -> Path:
    """Write ``summary`` (an example of ``machine``) as an experiment file at ``path``.

    ``failing``: the checkers the example failed (:func:`failing_checkers` of its error);
    empty saves a passing example. ``broken``: gallery variants the example ran with.
    ``checkers``: default :func:`checkers_judged`. ``name``: default the file's stem.
    ValueError (one line naming the argument) for a machine that cannot be named by import
    path, a summary that is not a ClusterMachine example, or a failing checker not judged."""
    path = Path(path)
    name = _NAME.sub("-", name or path.stem).strip("-").lstrip(".") or "hypothesis-example"
    document = experiment_document(
        summary, machine=machine, name=name, title=title, description=description,
        failing=list(failing), failure_mode=failure_mode, broken=list(broken), checkers=checkers,
    )
    root = import_root(machine)
    if root is not None:  # how a fresh process imports the machine: no PYTHONPATH needed
        document["workload"]["import_path"] = os.path.relpath(root, path.resolve().parent)
    return write_document(document, path)

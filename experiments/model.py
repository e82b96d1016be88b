"""Experiment files: typed, validated, with one-line errors that name the file and field.

An experiment is data (YAML): what it models and where that is documented, the system and
its cluster, the workload, the phases, the fault schedule, the checkers and the expected
outcome. ``load_experiment`` validates everything it can before anything runs (unknown
fields, types, fault kinds and parameters, checker names, system options), so a bad file
fails in one line with exit code 2 instead of half-way through a run.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import msgspec

from chaoskube import gallery
from faults import FaultError, ScheduledFault, parse_target
from faults.nemesis import NemesisSpec
from faults.targets import TargetError


def experiment_dir(experiment: "Experiment") -> Path | None:
    """The directory of the file ``experiment`` was loaded from (None for a built one)."""
    return Path(experiment.path).resolve().parent if experiment.path else None


class ExperimentError(Exception):
    """A bad experiment file or name. ``str(error)`` is one line naming file and field."""


class FaultEntry(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    at_s: float
    kind: str
    target: str
    duration_s: float | None = None
    params: dict[str, float | int | str | bool] = {}

    def scheduled(self) -> ScheduledFault:
        return ScheduledFault(self.at_s, self.kind, self.target, self.duration_s, dict(self.params))


class Phases(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    setup_s: float = 10.0  # the steady state must hold within this after start
    warmup_s: float = 5.0  # workload runs, no faults
    faults_s: float = 30.0  # the bounded fault phase (safety)
    recovery_s: float = 30.0  # after heal, the steady state must return within this (liveness)
    settle_s: float = 2.0  # workload keeps running after recovery, before final checks


class Expected(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    outcome: Literal["pass", "fail"] = "pass"
    failing: list[str] = []  # checkers expected to answer false (a documented failure mode)
    may_fail: list[str] = []  # checkers that may answer either way in that failure mode
    failure_mode: str = ""


class Experiment(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    name: str
    title: str
    description: str
    source: str
    system: str
    checkers: list[str]
    cluster: dict[str, Any] = {}
    workload: dict[str, Any] = {}
    phases: Phases = Phases()
    schedule: list[FaultEntry] = []
    nemesis: NemesisSpec | None = None  # a seeded random schedule, injected beside ``schedule``
    expected: Expected = Expected()
    broken: list[str] = []  # gallery variants (chaoskube/gallery.py) patched in for the run
    seed: int | None = None  # the seed ``chaoskube run`` uses when --seed is not given
    path: str = ""


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate one experiment file."""
    from experiments.systems import SYSTEMS  # the systems know their own options

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ExperimentError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        experiment = msgspec.yaml.decode(data, type=Experiment)
    except msgspec.ValidationError as error:
        raise ExperimentError(f"{path}: {field_message(str(error))}") from None
    except msgspec.DecodeError as error:
        raise ExperimentError(f"{path}: not valid YAML: {str(error).splitlines()[0]}") from None
    experiment = msgspec.structs.replace(experiment, path=str(path))
    system = SYSTEMS.get(experiment.system)
    if system is None:
        raise ExperimentError(f"{path}: field `system`: unknown system {experiment.system!r}; known: {', '.join(sorted(SYSTEMS))}")
    for field, value in (("phases.setup_s", experiment.phases.setup_s), ("phases.warmup_s", experiment.phases.warmup_s), ("phases.faults_s", experiment.phases.faults_s), ("phases.recovery_s", experiment.phases.recovery_s), ("phases.settle_s", experiment.phases.settle_s)):
        if not (math.isfinite(value) and value >= 0):
            raise ExperimentError(f"{path}: field `{field}` must be a finite number >= 0, not {value}")
    for index, entry in enumerate(experiment.schedule):
        where = f"schedule[{index}]"
        try:
            parse_target(entry.target)
            entry.scheduled()
        except (FaultError, TargetError) as error:
            raise ExperimentError(f"{path}: field `{where}`: {error}") from None
        if entry.at_s > experiment.phases.faults_s:
            raise ExperimentError(
                f"{path}: field `{where}.at_s` = {entry.at_s} falls after the fault phase "
                f"(phases.faults_s = {experiment.phases.faults_s}); move it earlier or lengthen the phase"
            )
    if experiment.nemesis is not None and experiment.nemesis.ends_at_s() > experiment.phases.faults_s:
        raise ExperimentError(
            f"{path}: field `nemesis`: after_s + window_s = {experiment.nemesis.ends_at_s():g} falls after the fault phase "
            f"(phases.faults_s = {experiment.phases.faults_s:g}); shorten the window or lengthen the phase"
        )
    try:
        gallery.check(experiment.broken)
    except KeyError as error:
        raise ExperimentError(f"{path}: field `broken`: {error.args[0]}") from None
    if experiment.seed is not None and experiment.seed < 0:
        raise ExperimentError(f"{path}: field `seed` must be >= 0, not {experiment.seed}")
    if not experiment.checkers:
        raise ExperimentError(f"{path}: field `checkers`: name at least one checker; known: {', '.join(sorted(system.checkers()))}")
    known = system.checkers()
    for index, name in enumerate(experiment.checkers):
        if name not in known:
            raise ExperimentError(f"{path}: field `checkers[{index}]`: unknown checker {name!r} for system {experiment.system!r}; known: {', '.join(sorted(known))}")
    for index, name in enumerate(experiment.expected.failing):
        if name not in experiment.checkers:
            raise ExperimentError(f"{path}: field `expected.failing[{index}]`: {name!r} is not one of this experiment's checkers")
    for index, name in enumerate(experiment.expected.may_fail):
        if name not in experiment.checkers:
            raise ExperimentError(f"{path}: field `expected.may_fail[{index}]`: {name!r} is not one of this experiment's checkers")
    if experiment.expected.outcome == "fail" and not experiment.expected.failing:
        raise ExperimentError(f"{path}: field `expected.failing`: an expected failure must name the checkers that fail")
    if experiment.expected.outcome == "pass" and experiment.expected.failing:
        raise ExperimentError(f"{path}: field `expected.outcome`: it says pass but `expected.failing` names checkers; say fail")
    try:
        cluster, workload = system.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    except ExperimentError as error:
        raise ExperimentError(f"{path}: {error}") from None
    names = system.process_names(cluster, workload)
    if names is not None:
        for index, entry in enumerate(experiment.schedule):
            selector, _, argument = entry.target.partition(":")
            if selector == "name" and argument not in names:
                raise ExperimentError(f"{path}: field `schedule[{index}].target`: no process named {argument!r} in this system (processes: {', '.join(names)})")
    return experiment


def with_broken(experiment: Experiment, names: list[str] | tuple[str, ...]) -> Experiment:
    """``experiment`` with the gallery variants ``names`` added to its ``broken`` list
    (``chaoskube run|explore --broken NAME``). ExperimentError (one line) on an unknown name."""
    try:
        gallery.check(names)
    except KeyError as error:
        raise ExperimentError(f"--broken: {error.args[0]}") from None
    merged = list(experiment.broken) + [name for name in names if name not in experiment.broken]
    return msgspec.structs.replace(experiment, broken=merged)


def with_manifests(experiment: Experiment, directory: str | Path) -> Experiment:
    """``experiment`` with its workload replaced by the Kubernetes manifests in
    ``directory`` (``chaoskube run|explore --manifests DIR``: users bring their own
    workloads). The built-in ``deployments`` and the ``steps`` that name them are dropped;
    the rest of the workload (traffic, converge_s, ...) stays. The manifests are loaded now,
    so a missing directory or a malformed manifest is a one-line ExperimentError."""
    from experiments.systems import SYSTEMS

    directory = Path(directory)
    if not directory.is_dir():
        raise ExperimentError(f"--manifests {directory}: not a directory; give a directory of Kubernetes YAML/JSON files")
    if not any(path.suffix in (".yaml", ".yml", ".json") for path in directory.glob("*") if path.is_file()):  # as load_manifests reads a directory
        raise ExperimentError(f"--manifests {directory}: no .yaml, .yml or .json file in it (subdirectories are not read); give a directory of Kubernetes manifests")
    if "manifests" not in SYSTEMS[experiment.system].Workload.__struct_fields__:
        raise ExperimentError(f"--manifests: experiment {experiment.name!r} runs system {experiment.system!r}, which takes no manifests")
    workload = dict(experiment.workload)
    workload["manifests"] = [str(directory.resolve())]
    workload["deployments"] = []
    workload["steps"] = [step for step in workload.get("steps", []) if not (isinstance(step, dict) and step.get("deployment"))]
    replaced = msgspec.structs.replace(experiment, workload=workload)
    try:
        SYSTEMS[experiment.system].options(replaced.cluster, replaced.workload, base_dir=experiment_dir(experiment))
    except ExperimentError as error:
        raise ExperimentError(f"--manifests {directory}: {str(error).removeprefix('field `workload.manifests[0]`: ')}") from None
    return replaced


def field_message(message: str) -> str:
    """msgspec says "Expected `int`, got `str` - at `$.phases.faults_s`"; lead with the field."""
    text, sep, where = message.rpartition(" - at `")
    prefix = where.rstrip("`").removeprefix("$").removeprefix(".") if sep else ""
    text = text if sep else message
    if text.startswith("Object contains unknown field `"):
        name = text.split("`")[1]
        field = f"{prefix}.{name}" if prefix else name
        return f"field `{field}`: unknown field (misspelt, or not allowed here)"
    if text.startswith("Object missing required field `"):
        name = text.split("`")[1]
        field = f"{prefix}.{name}" if prefix else name
        return f"field `{field}`: missing (it is required)"
    return f"field `{prefix or '(top level)'}`: {text}"


def convert_options(options: dict[str, Any], type_: type, section: str) -> Any:
    """Convert a system's ``cluster``/``workload`` mapping to its typed options."""
    try:
        return msgspec.convert(options, type=type_)
    except msgspec.ValidationError as error:
        message = field_message(str(error))
        message = message.replace("field `", f"field `{section}.", 1) if message.startswith("field `") else f"field `{section}`: {message}"
        raise ExperimentError(message) from None

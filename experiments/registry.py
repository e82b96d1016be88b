"""The registry: systems by name, the catalogue (experiments/catalog/*.yaml), and loading an
experiment file against its system.

This is where the names an experiment file uses are resolved: ``system`` to a System class
of ``systems/`` or ``real/``, ``checkers`` to that system's checkers. The model
(model.py) and the systems never import this module; the runner, campaigns and the CLI do.
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec

from chaoskube import gallery
from chaoskube.experiments.model import Experiment, ExperimentError, experiment_dir, field_message
from chaoskube.experiments.real.etcd import RealEtcdSystem
from chaoskube.experiments.systems import EtcdSystem, HypothesisSystem, KubernetesSystem, MeshSystem, System
from chaoskube.faults import FaultError, parse_target
from chaoskube.faults.targets import TargetError

#: Systems under test, by the name experiment files use in their ``system`` field.
SYSTEMS: dict[str, type[System]] = {
    system.name: system for system in (EtcdSystem, HypothesisSystem, KubernetesSystem, MeshSystem, RealEtcdSystem)
}

CATALOG = Path(__file__).with_name("catalog")


def catalog_paths() -> dict[str, Path]:
    return {path.stem: path for path in sorted(CATALOG.glob("*.yaml"))}


def names() -> list[str]:
    return sorted(catalog_paths())


def find(name_or_path: str) -> Experiment:
    """An experiment by catalogue name, or from a file path (anything with / or .yaml)."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path:
        return load_experiment(name_or_path)
    paths = catalog_paths()
    path = paths.get(name_or_path)
    if path is None:
        close = [name for name in paths if name_or_path in name or name in name_or_path]
        hint = f"; did you mean {', '.join(close)}?" if close else "; `chaoskube list` shows them"
        raise ExperimentError(f"unknown experiment {name_or_path!r}{hint}")
    experiment = load_experiment(path)
    if experiment.name != name_or_path:
        raise ExperimentError(f"{path}: field `name`: {experiment.name!r} must match the file name {name_or_path!r}")
    return experiment


def load_all() -> list[Experiment]:
    return [find(name) for name in names()]


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate one experiment file."""
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
    if experiment.boot_seed < 0:
        raise ExperimentError(f"{path}: field `boot_seed` must be >= 0, not {experiment.boot_seed}")
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


def with_manifests(experiment: Experiment, directory: str | Path) -> Experiment:
    """``experiment`` with its workload replaced by the Kubernetes manifests in
    ``directory`` (``chaoskube run|explore --manifests DIR``: users bring their own
    workloads). The built-in ``deployments`` and the ``steps`` that name them are dropped;
    the rest of the workload (traffic, converge_s, ...) stays. The manifests are loaded now,
    so a missing directory or a malformed manifest is a one-line ExperimentError."""
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

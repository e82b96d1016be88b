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
from chaoskube.experiments.model import Experiment, ExperimentError, experiment_dir, field_message, manifests_sha256  # noqa: F401 - re-exported
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
    target_problem = getattr(system, "workload_target_problem", None)
    if target_problem is not None:
        for index, entry in enumerate(experiment.schedule):
            missing = target_problem(entry.target, cluster, workload)
            if missing is not None:
                raise ExperimentError(f"{path}: field `schedule[{index}].target`: {missing} in the experiment's workload")
    names = system.process_names(cluster, workload)
    if names is not None:
        for index, entry in enumerate(experiment.schedule):
            selector, _, argument = entry.target.partition(":")
            if selector == "name" and argument not in names:
                raise ExperimentError(f"{path}: field `schedule[{index}].target`: no process named {argument!r} in this system (processes: {', '.join(names)})")
    return experiment


def with_manifests(experiment: Experiment, directory: str | Path, *, skip_unsupported: bool = False) -> Experiment:
    """``experiment`` with its workload replaced by the Kubernetes manifests in
    ``directory`` (``chaoskube run|explore --manifests DIR``: users bring their own
    workloads). The built-in ``deployments`` are dropped, except those marked
    ``infrastructure`` (part of the experiment's setup, such as a webhook's own pods); a
    step that names a dropped Deployment acts on its ``workload`` role instead (the
    workloads of the manifests it selects: "every workload with a PodDisruptionBudget").
    When the manifests cannot give the experiment its meaning — a step's role selects
    nothing — the run is refused in one line saying what is missing
    (``node-drain-with-pdb: no workload with a PodDisruptionBudget in ./app``); a checker
    that would have nothing to judge (``service-availability`` without a Service) is left
    out, and the experiment's ``notes`` say so (printed, in result.json and the report). The manifests are loaded now, so a missing directory or
    a malformed manifest is a one-line ExperimentError too. With ``skip_unsupported``,
    documents of kinds chaoskube cannot serve are left out and listed instead."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ExperimentError(f"--manifests {directory}: not a directory; give a directory of Kubernetes YAML/JSON files")
    if not any(path.suffix in (".yaml", ".yml", ".json") for path in directory.glob("*") if path.is_file()):  # as load_manifests reads a directory
        raise ExperimentError(f"--manifests {directory}: no .yaml, .yml or .json file in it (subdirectories are not read); give a directory of Kubernetes manifests")
    system = SYSTEMS[experiment.system]
    if "manifests" not in system.Workload.__struct_fields__:
        raise ExperimentError(f"--manifests: experiment {experiment.name!r} runs system {experiment.system!r}, which takes no manifests")
    workload = dict(experiment.workload)
    kept = [deployment for deployment in workload.get("deployments", []) if isinstance(deployment, dict) and deployment.get("infrastructure")]
    kept_names = {deployment.get("name") for deployment in kept}
    steps = []
    for index, step in enumerate(workload.get("steps", [])):
        if isinstance(step, dict) and step.get("deployment") and step["deployment"] not in kept_names:
            if not step.get("workload"):
                raise ExperimentError(f"{experiment.name}: step `{step.get('action')}` (workload.steps[{index}]) names the built-in Deployment {step['deployment']!r} and no `workload` role to apply to {directory}'s manifests")
            step = {key: value for key, value in step.items() if key != "deployment"}
        steps.append(step)
    workload["manifests"] = [str(directory.resolve())]
    workload["deployments"] = kept
    workload["steps"] = steps
    if skip_unsupported:
        workload["skip_unsupported"] = True
    replaced = msgspec.structs.replace(experiment, workload=workload, manifests_dir=str(directory.resolve()), skip_unsupported=skip_unsupported)
    try:
        cluster, typed = system.options(replaced.cluster, replaced.workload, base_dir=experiment_dir(experiment))
    except ExperimentError as error:
        missing = getattr(error, "missing", None)
        if missing is not None:
            raise ExperimentError(f"{experiment.name}: {missing} in {directory} ({error.why})") from None
        raise ExperimentError(f"--manifests {directory}: {str(error).removeprefix('field `workload.manifests[0]`: ')}") from None
    target_problem = getattr(system, "workload_target_problem", None)
    if target_problem is not None:
        for index, entry in enumerate(experiment.schedule):
            missing = target_problem(entry.target, cluster, typed)
            if missing is not None:
                raise ExperimentError(f"{experiment.name}: {missing} in {directory} (fault `{entry.kind}`, schedule[{index}], targets `{entry.target}`)")
    idle_checkers = getattr(system, "idle_checkers", None)
    idle = idle_checkers(list(experiment.checkers), cluster, typed) if idle_checkers is not None else {}
    if idle:
        checkers = [name for name in experiment.checkers if name not in idle]
        if not checkers:
            name, why = next(iter(idle.items()))
            raise ExperimentError(f"{experiment.name}: {why} in {directory} (its only checker, {name}, would have nothing to judge)")
        expected = msgspec.structs.replace(
            experiment.expected,
            failing=[name for name in experiment.expected.failing if name not in idle],
            may_fail=[name for name in experiment.expected.may_fail if name not in idle],
        )
        notes = [f"checker {name} left out: {why} in {directory}" for name, why in idle.items()]
        replaced = msgspec.structs.replace(replaced, checkers=checkers, expected=expected, notes=[*experiment.notes, *notes])
    return replaced


def with_skip_unsupported(experiment: Experiment) -> Experiment:
    """``--skip-unsupported`` without ``--manifests``: the experiment's own manifests (its
    ``workload.manifests``) skip what cannot be served."""
    system = SYSTEMS[experiment.system]
    if "skip_unsupported" not in system.Workload.__struct_fields__:
        raise ExperimentError(f"--skip-unsupported: experiment {experiment.name!r} runs system {experiment.system!r}, which takes no manifests")
    workload = {**experiment.workload, "skip_unsupported": True}
    return msgspec.structs.replace(experiment, workload=workload, skip_unsupported=True)

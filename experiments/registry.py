"""The registry: systems by name, the catalogue (experiments/catalog/*.yaml), and loading an
experiment file against its system.

This is where the names an experiment file uses are resolved: ``system`` to a System class
of ``systems/`` or ``real/``, ``checkers`` to that system's checkers. The model
(model.py) and the systems never import this module; the runner, campaigns and the CLI do.
"""

from __future__ import annotations

import difflib

import math
import re
from pathlib import Path
from typing import Any

import msgspec

from chaoskube import gallery
from chaoskube.api.files import EXPERIMENT_MAX_BYTES, TooLarge, read_limited
from chaoskube.api.manifests import ManifestError, load_yaml_value
from chaoskube.api.objects import KINDS
from chaoskube.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from chaoskube.experiments.model import Experiment, ExperimentError, experiment_dir, field_message, manifests_sha256  # noqa: F401 - re-exported
from chaoskube.experiments.model import with_broken as model_with_broken
from chaoskube.experiments.probes import checker_name, probe_problems
from chaoskube.experiments.real.etcd import RealEtcdSystem
from chaoskube.experiments.systems import EtcdSystem, HypothesisSystem, KubernetesSystem, MeshSystem, System
from chaoskube.faults import FaultError, ProcessInfo, check_planned, parse_target
from chaoskube.faults.nemesis import NEMESIS_KINDS
from chaoskube.faults.targets import TargetError
from chaoskube.faults.triggers import TriggerError, event_field, trigger_problems
from chaoskube.sim import seed_error

#: The longest phase an experiment may ask for (a day of virtual or real time).
MAX_PHASE_S = 86_400.0

#: Systems under test, by the name experiment files use in their ``system`` field.
SYSTEMS: dict[str, type[System]] = {
    system.name: system for system in (EtcdSystem, HypothesisSystem, KubernetesSystem, MeshSystem, RealEtcdSystem)
}

CATALOG = Path(__file__).with_name("catalog")


def catalog_paths() -> dict[str, Path]:
    return {path.stem: path for path in sorted(CATALOG.glob("*.yaml"))}


def names() -> list[str]:
    return sorted(catalog_paths())


def find(name_or_path: str, *, operator: bool = False) -> Experiment:
    """An experiment by catalogue name, or from a file path (anything with / or .yaml).
    ``operator``: the run will have the user's program as process ``operator`` (``chaoskube
    serve --run``), so faults and triggers may target it (:data:`OPERATOR_PROCESS`)."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path:
        return load_experiment(name_or_path, operator=operator)
    paths = catalog_paths()
    path = paths.get(name_or_path)
    if path is None:
        # the nearest spellings first (a typo), else the names containing it or contained in it
        close = difflib.get_close_matches(name_or_path, sorted(paths), n=3, cutoff=0.75) or [name for name in sorted(paths) if name_or_path in name or name in name_or_path]
        hint = f"; did you mean {', '.join(close)}?" if close else "; `chaoskube list` shows them"
        raise ExperimentError(f"unknown experiment {name_or_path!r}{hint}")
    experiment = load_experiment(path, operator=operator)
    if experiment.name != name_or_path:
        raise ExperimentError(f"{path}: field `name`: {experiment.name!r} must match the file name {name_or_path!r}")
    return experiment


def load_all() -> list[Experiment]:
    return [find(name) for name in names()]


#: What an experiment's ``name`` may be: it names the run directory (``runs/NAME-seedN``),
#: so no ``/``, no leading ``.`` or ``-``; letters, digits, ``_``, ``.``, ``-``, up to 128.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def load_experiment(path: str | Path, *, operator: bool = False) -> Experiment:
    """Read and validate one experiment file; ExperimentError (one line: the first
    problem, and how many more there are) when anything is wrong. ``operator``: as
    :func:`find`."""
    experiment, problems = check_experiment(path, operator=operator)
    if problems:
        more = f" (and {len(problems) - 1} more: `chaoskube validate {path}` lists them)" if len(problems) > 1 else ""
        raise ExperimentError(problems[0] + more)
    assert experiment is not None
    return experiment


def check_experiment(path: str | Path, *, operator: bool = False) -> tuple[Experiment | None, list[str]]:
    """Read an experiment file and check everything that can be checked before a run:
    the experiment (None unless every check passed) and every problem found, each one line
    that names the file and the field (``chaoskube validate``). Checks, in order: the file
    (readable, within its size cap, one YAML document, no duplicate keys), its structure
    (fields, types), then against its system: phases, the schedule (kinds, parameters,
    targets resolved against the processes the experiment builds, durations within the
    fault phase), the nemesis, gallery variants, the seed, checkers, the expected
    outcome, system options, probes. ``operator``: the run will have the user's program
    as process ``operator`` (``chaoskube serve --run``); without it a fault or trigger that
    names it is refused, saying so."""
    path = Path(path)
    try:
        data = read_limited(path, EXPERIMENT_MAX_BYTES, "an experiment file")
    except TooLarge as error:
        return None, [str(error)]
    except OSError as error:
        return None, [f"{path}: cannot read: {error.strerror or error}"]
    try:
        document = load_yaml_value(data, str(path))
    except ManifestError as error:
        where = f"field `{error.field}`: " if error.field else ""
        return None, [f"{path}: {where}{error.reason}"]
    if not isinstance(document, dict):
        kind = "nothing" if document is None else f"a {type(document).__name__}"
        return None, [f"{path}: holds {kind}, not an experiment (a mapping of fields: name, title, system, checkers, ...)"]
    problems = [f"{path}: {problem}" for problem in _structure_problems(document)]
    if problems:
        # Every problem at once (issue 32: a new file's missing `source` hid the rest): the
        # fields that are sound are checked too, the broken ones left at a placeholder,
        # and what a broken field would make unsound is not judged.
        return None, problems + [f"{path}: {problem}" for problem in _problems_beside(document, problems, path, operator=operator)]
    try:
        experiment = msgspec.convert(document, type=Experiment)
    except msgspec.ValidationError as error:  # defensive: the per-field pass found nothing
        return None, [f"{path}: {field_message(str(error))}"]
    experiment = msgspec.structs.replace(experiment, path=str(path))
    problems = [f"{path}: {problem}" for problem in _semantic_problems(experiment, operator=operator)]
    if problems:
        return None, problems
    probe_checkers = [checker_name(probe) for probe in experiment.probes if checker_name(probe) not in experiment.checkers]
    if probe_checkers:
        experiment = msgspec.structs.replace(experiment, checkers=[*experiment.checkers, *probe_checkers])
    return experiment, []


_FIELD_TYPES: dict[str, Any] = {}


def _field_type(name: str) -> Any:
    """A one-field struct per field of Experiment, so each field converts on its own and
    its errors name it (``$.schedule[0].kind``)."""
    wrapper = _FIELD_TYPES.get(name)
    if wrapper is None:
        field = next(field for field in msgspec.structs.fields(Experiment) if field.encode_name == name)
        wrapper = _FIELD_TYPES[name] = msgspec.defstruct(f"Experiment_{name}", [(name, field.type)], forbid_unknown_fields=True)
    return wrapper


def _structure_problems(document: dict[str, Any]) -> list[str]:
    """Unknown fields, missing required ones, and each field's own type errors."""
    fields = {field.encode_name: field for field in msgspec.structs.fields(Experiment)}
    problems = []
    for key in document:
        if key not in fields or key == "path":
            problems.append(f"field `{key}`: unknown field (misspelt, or not allowed here)")
    for name, field in fields.items():
        if field.required and name not in document:
            problems.append(f"field `{name}`: missing (it is required)")
    for key, value in document.items():
        if key in fields and key != "path":
            try:
                msgspec.convert({key: value}, type=_field_type(key))
            except msgspec.ValidationError as error:
                problems.append(field_message(str(error)))
    return problems


#: A broken field (missing, unknown, of the wrong type) leaves these fields unjudged: what
#: they mean depends on it (targets on the system's processes, the schedule on the phases).
_DEPENDS_ON: dict[str, tuple[str, ...]] = {
    "system": ("*",),
    "cluster": ("schedule", "nemesis", "probes", "steady_state", "checkers", "workload", "generator"),
    "workload": ("schedule", "nemesis", "probes", "steady_state", "checkers", "generator", "cluster"),
    "phases": ("schedule", "nemesis", "generator"),
    "checkers": ("expected", "probes"),
    "probes": ("expected", "checkers"),
    "steady_state": ("probes",),
}
_PROBLEM_FIELD = re.compile(r"^field `([A-Za-z_]+)")


def _problems_beside(document: dict[str, Any], found: list[str], path: Path, *, operator: bool = False) -> list[str]:
    """The semantic problems of the fields that passed the structure check, when others did
    not: each broken or missing field stands in at its default (or an empty placeholder when
    it has none), and problems of the fields that depend on a broken one are left out."""
    fields = {field.encode_name: field for field in msgspec.structs.fields(Experiment)}
    broken = {match.group(1) for problem in found if (match := _PROBLEM_FIELD.match(problem.removeprefix(f"{path}: ")))}
    unjudged = set(broken)
    for name in broken:
        unjudged.update(_DEPENDS_ON.get(name, ()))
    if "*" in unjudged:
        return []
    sound = {key: value for key, value in document.items() if key in fields and key != "path" and key not in broken}
    for name, field in fields.items():
        if name not in sound and field.required:
            sound[name] = [] if name == "checkers" else ""
    try:
        experiment = msgspec.convert(sound, type=Experiment)
    except msgspec.ValidationError:
        return []
    experiment = msgspec.structs.replace(experiment, path=str(path))
    problems = []
    for problem in _semantic_problems(experiment, operator=operator):
        match = _PROBLEM_FIELD.match(problem)
        if match is None or match.group(1) not in unjudged:
            problems.append(problem)
    return problems


#: The user's program in a live run with ``--run`` (experiments/live.py): a process of
#: that name and role, which faults and triggers may target (``role:operator``,
#: ``name:operator``) -- in such a run only.
OPERATOR_PROCESS = ProcessInfo("operator", "operator", None)


def _names_operator(value: str | None) -> bool:
    return isinstance(value, str) and value.partition(":")[2] == OPERATOR_PROCESS.name


def _semantic_problems(experiment: Experiment, *, operator: bool = False) -> list[str]:
    problems: list[str] = []
    if not NAME_PATTERN.match(experiment.name):
        problems.append(
            f"field `name`: {experiment.name!r} cannot name a run directory: use letters, digits, '_', '.' and '-' "
            "(not first), at most 128"
        )
    system = SYSTEMS.get(experiment.system)
    if system is None:
        problems.append(f"field `system`: unknown system {experiment.system!r}; known: {', '.join(sorted(SYSTEMS))}")
    phases = experiment.phases
    for field, value in (("phases.setup_s", phases.setup_s), ("phases.warmup_s", phases.warmup_s), ("phases.faults_s", phases.faults_s), ("phases.recovery_s", phases.recovery_s), ("phases.settle_s", phases.settle_s)):
        if not (math.isfinite(value) and 0 <= value <= MAX_PHASE_S):
            problems.append(f"field `{field}` must be a finite number between 0 and {MAX_PHASE_S:g} s, not {value}")
    phase_ok = math.isfinite(phases.faults_s) and phases.faults_s >= 0
    unsound: set[int] = set()  # schedule entries already reported: not resolved again below
    for index, entry in enumerate(experiment.schedule):
        where = f"schedule[{index}]"
        try:
            if event_field(entry.target) is None:
                parse_target(entry.target)
            entry.scheduled()
        except (FaultError, TargetError) as error:
            problems.append(f"field `{where}`: {error}")
            unsound.add(index)
            continue
        except TriggerError as error:  # faults/triggers.py: `when` and `event:` targets
            problems.append(f"field `{where}.{error.field}`: {str(error).split(': ', 1)[1]}")
            unsound.add(index)
            continue
        if not phase_ok:
            continue
        if entry.at_s > phases.faults_s:
            problems.append(
                f"field `{where}.at_s` = {entry.at_s:g} falls after the fault phase "
                f"(phases.faults_s = {phases.faults_s:g}); move it earlier or lengthen the phase"
            )
        elif entry.clipped_s(phases.faults_s) is not None and not entry.clip_to_phase:
            problems.append(
                f"field `{where}.duration_s` = {entry.duration_s:g} outlasts the fault phase: at_s {entry.at_s:g} + {entry.duration_s:g} > "
                f"phases.faults_s = {phases.faults_s:g}, so the heal would cut it to {entry.clipped_s(phases.faults_s):g} s; "
                "lengthen phases.faults_s, shorten the fault, or set `clip_to_phase: true` to accept the cut"
            )
    if experiment.nemesis is not None and phase_ok and experiment.nemesis.ends_at_s() > phases.faults_s:
        problems.append(
            f"field `nemesis`: after_s + window_s = {experiment.nemesis.ends_at_s():g} falls after the fault phase "
            f"(phases.faults_s = {phases.faults_s:g}); shorten the window or lengthen the phase"
        )
    if experiment.generator is not None and system is not None and not hasattr(system, "start_generator"):
        problems.append(f"field `generator`: system {experiment.system!r} has no API for a workload generator to act through (the kubernetes system has)")
    elif experiment.generator is not None and phase_ok and experiment.generator.after_s >= phases.warmup_s + phases.faults_s:
        problems.append(
            f"field `generator.after_s` = {experiment.generator.after_s:g} starts the generator after the heal "
            f"(phases.warmup_s + phases.faults_s = {phases.warmup_s + phases.faults_s:g}); start it earlier or lengthen the phases"
        )
    try:
        gallery.check(experiment.broken)
    except KeyError as error:
        problems.append(f"field `broken`: {error.args[0]}")
    else:
        if system is not None:
            problems += [f"field `broken`: {problem}" for problem in broken_problems(system, experiment.broken)]
    if experiment.seed is not None and seed_error(experiment.seed):
        problems.append(f"field `seed`: {seed_error(experiment.seed)}")
    if seed_error(experiment.boot_seed):
        problems.append(f"field `boot_seed`: {seed_error(experiment.boot_seed)}")
    probe_names = {checker_name(probe) for probe in experiment.probes}
    if not experiment.checkers and not experiment.probes and system is not None:
        problems.append(f"field `checkers`: name at least one checker; known: {', '.join(sorted(system.checkers()))}")
    known = (set(system.checkers()) if system is not None else set()) | probe_names
    for index, name in enumerate(experiment.checkers):
        if system is not None and name not in known:
            problems.append(f"field `checkers[{index}]`: unknown checker {name!r} for system {experiment.system!r}; known: {', '.join(sorted(known))}")
    judged = set(experiment.checkers) | probe_names
    for section in ("failing", "may_fail"):
        for index, name in enumerate(getattr(experiment.expected, section)):
            if name not in judged:
                problems.append(f"field `expected.{section}[{index}]`: {name!r} is not one of this experiment's checkers")
    if experiment.expected.outcome == "fail" and not experiment.expected.failing:
        problems.append("field `expected.failing`: an expected failure must name the checkers that fail")
    if experiment.expected.outcome == "pass" and experiment.expected.failing:
        problems.append("field `expected.outcome`: it says pass but `expected.failing` names checkers; say fail")
    if experiment.expected.outcome == "pass" and experiment.expected.may_fail:
        problems.append(
            "field `expected.may_fail`: an experiment expected to pass passes only when every checker passes (a violation fails it, "
            "in `run`, `explore` and junit.xml alike); drop the checker, loosen it (e.g. workload.max_outage_s), or expect a failure"
        )
    if system is None:
        return problems
    if (experiment.probes or experiment.steady_state is not None) and not system.PROBES:
        problems.append(f"field `{'probes' if experiment.probes else 'steady_state'}`: system {experiment.system!r} has nothing to probe; probes need an API and Services (the kubernetes system)")
    elif experiment.probes or experiment.steady_state is not None:
        resources = {info.resource: info.namespaced for info in KINDS.values()}
        problems += probe_problems(experiment.probes, experiment.steady_state, resources, _selector_problem)
        for index, probe in enumerate(experiment.probes):
            if checker_name(probe) in system.checkers():
                problems.append(f"field `probes[{index}].name`: {probe.name!r} gives checker {checker_name(probe)!r}, which the system has already")
    if system.FAULT_KINDS is not None:
        for index, entry in enumerate(experiment.schedule):
            if entry.kind not in system.FAULT_KINDS:
                allowed = ", ".join(sorted(system.FAULT_KINDS)) or "none: its faults are steps of `workload.steps`"
                problems.append(f"field `schedule[{index}].kind`: {entry.kind!r} cannot be applied in a {experiment.system!r} run (kinds: {allowed})")
        if experiment.nemesis is not None:  # issue 16: the kinds the nemesis's kinds and packages schedule
            refused = [kind for kind in experiment.nemesis.fault_kinds() if kind not in system.FAULT_KINDS]
            if refused:
                allowed = ", ".join(sorted(system.FAULT_KINDS)) or "none: its faults are steps of `workload.steps`"
                problems.append(f"field `nemesis`: it schedules {refused[0]!r} faults, which cannot be applied in a {experiment.system!r} run (kinds: {allowed})")
    try:
        cluster, workload = system.options(experiment.cluster, experiment.workload, base_dir=experiment_dir(experiment))
    except ExperimentError as error:
        problems.append(str(error))
        return problems
    target_problem = getattr(system, "workload_target_problem", None)
    if target_problem is not None:
        for index, entry in enumerate(experiment.schedule):
            missing = target_problem(entry.target, cluster, workload)
            if missing is not None:
                problems.append(f"field `schedule[{index}].target`: {missing} in the experiment's workload")
    infos = system.process_infos(cluster, workload)
    if infos is None:
        return problems
    if operator:
        infos = [*infos, OPERATOR_PROCESS]
        for index, entry in enumerate(experiment.schedule):
            if entry.kind == "isolate" and _names_operator(entry.target) and entry.params.get("scope", "peers") == "peers":
                problems.append(f"field `schedule[{index}].params`: isolate of {entry.target} with scope peers cuts nothing (the operator has no peers of its role); give `params: {{scope: all}}` to cut it from every process")
                unsound.add(index)
    else:
        without = "only `chaoskube serve EXPERIMENT --run COMMAND` runs one (the program COMMAND, as process `operator`); serve it with --run, or drop the fault"
        for index, entry in enumerate(experiment.schedule):
            if _names_operator(entry.target):
                problems.append(f"field `schedule[{index}].target`: {entry.target}: this run has no operator: {without}")
                unsound.add(index)
            if entry.when is not None and (_names_operator(entry.when.process) or any(_names_operator(value) for value in entry.when.fields.values())):
                problems.append(f"field `schedule[{index}].when`: it matches the operator's events, but this run has no operator: {without}")
                unsound.add(index)
    admin = system.PROBES  # the systems with an API perform API-level faults (drain) too
    for index, entry in enumerate(experiment.schedule):
        if index in unsound:
            continue
        if entry.when is not None:
            problems += [f"field `schedule[{index}].when.{field}`: {problem}" for field, problem in trigger_problems(entry.when, infos, system.LEADER_ROLES)]
        if event_field(entry.target) is not None:
            continue  # the matching event's process: known only when it matches
        try:
            problem = check_planned(entry.kind, entry.target, dict(entry.params), infos, system.LEADER_ROLES, admin=admin)
        except (FaultError, TargetError):
            continue  # reported above
        if problem:
            problems.append(f"field `schedule[{index}].target`: {entry.target}: {problem.removesuffix(' now')}")
    if experiment.nemesis is not None:
        for index, name in enumerate(experiment.nemesis.kinds):
            kind, target, params = NEMESIS_KINDS[name]
            if name == "swizzle":
                if not any(info.role == "node" for info in infos) and len(infos) < 1:
                    problems.append(f"field `nemesis.kinds[{index}]`: swizzle has no process to clog")
                continue
            problem = check_planned(kind, target, params, infos, system.LEADER_ROLES, admin=admin)
            if problem:
                problems.append(f"field `nemesis.kinds[{index}]`: {name} ({kind} on {target}) could never apply here: {problem.removesuffix(' now')}")
        for field, spec, kind, target, params in experiment.nemesis.targets():  # Jepsen's packages (issue 16)
            problem = check_planned(kind, target, params, infos, system.LEADER_ROLES, admin=admin)
            if problem:
                problems.append(f"field `nemesis.{field}`: {spec} on {target.partition(':')[2]} could never apply here: {problem.removesuffix(' now')}; drop it from `{field}` or change `{'partition_roles' if field == 'partition_targets' else 'roles'}`")
                break
    return problems


def _selector_problem(resource: str, labels: str, fields: str) -> str | None:
    try:
        parse_label_selector(labels)
    except SelectorError as error:
        return f"`selector`: {error}"
    try:
        parse_field_selector(fields, resource)
    except SelectorError as error:
        return f"`field_selector`: {error}"
    return None


def broken_problems(system: type[System], names: list[str] | tuple[str, ...]) -> list[str]:
    """Gallery variants that patch code ``system``'s runs never execute (each one line)."""
    if system.RUNS is None:
        return []
    problems = []
    for name in names:
        variant = gallery.VARIANTS[name]
        module = variant.target.partition(":")[0]
        if not any(module == package or module.startswith(package + ".") for package in system.RUNS):
            runs = ", ".join(system.RUNS) or "no chaoskube component"
            problems.append(f"{name!r} breaks {variant.component} ({module}), which a {system.name!r} run never executes (it runs {runs}); use it with {variant.experiment or 'its own tests'}")
    return problems


def with_broken(experiment: Experiment, names: list[str] | tuple[str, ...]) -> Experiment:
    """:func:`chaoskube.experiments.model.with_broken`, refusing a variant made for another
    system (``--broken`` on an experiment whose runs never execute the patched code)."""
    found = model_with_broken(experiment, names)
    problems = broken_problems(SYSTEMS[experiment.system], names)
    if problems:
        raise ExperimentError(f"--broken: {problems[0]}")
    return found


def with_manifests(experiment: Experiment, directory: str | Path, *, skip_unsupported: bool = False, live: bool = False) -> Experiment:
    """``experiment`` with its workload replaced by the Kubernetes manifests in
    ``directory`` (``chaoskube run|explore --manifests DIR``: users bring their own
    workloads). The built-in ``deployments`` are dropped, except those marked
    ``infrastructure`` (part of the experiment's setup, such as a webhook's own pods); a
    step that names a dropped Deployment acts on its ``workload`` role instead (the
    workloads of the manifests it selects: "every workload with a PodDisruptionBudget"); a
    step with no role is dropped, and with it the checkers the system says judge only what
    its steps do (``step_checkers``: with no drain, rollout or delete they would judge
    nothing), which the notes say. When the manifests cannot give the experiment its
    meaning — a step's role selects nothing — the run is refused in one line saying what is
    missing (``node-drain-with-pdb: no workload with a PodDisruptionBudget in ./app``); a
    checker that would have nothing to judge (``service-availability`` without a Service)
    is left out, and the experiment's ``notes`` say so (printed, in result.json and the
    report). The manifests are loaded now, so a missing directory or a malformed manifest
    is a one-line ExperimentError too. With ``skip_unsupported``, documents of kinds
    chaoskube cannot serve are left out and listed instead. ``live`` (``chaoskube serve``):
    manifests with no workload (only CRDs and custom resources, an operator's test) are
    served as they are: the pods, if any, are the served operator's to make."""
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
    dropped_steps: list[str] = []  # steps with no `workload` role: nothing of the manifests to act on
    for index, step in enumerate(workload.get("steps", [])):
        if isinstance(step, dict) and step.get("deployment") and step["deployment"] not in kept_names:
            if not step.get("workload"):
                dropped_steps.append(f"`{step.get('action')}` of the built-in Deployment {step['deployment']!r}")
                continue
            step = {key: value for key, value in step.items() if key != "deployment"}
        steps.append(step)
    workload["manifests"] = [str(directory.resolve())]
    workload["deployments"] = kept
    workload["steps"] = steps
    if skip_unsupported:
        workload["skip_unsupported"] = True
    if live and "pods_optional" in system.Workload.__struct_fields__:
        workload["pods_optional"] = True
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
    if dropped_steps:
        for name in getattr(system, "step_checkers", ()):
            if name in experiment.checkers and name not in idle:
                idle[name] = f"it judges only the steps, and the step(s) {', '.join(dropped_steps)} were dropped (no `workload` role for the manifests)"
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

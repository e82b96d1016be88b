"""Experiment files: typed, validated, with one-line errors that name the file and field.

An experiment is data (YAML): what it models and where that is documented, the system and
its cluster, the workload, the phases, the fault schedule, the checkers and the expected
outcome. This module holds the types and the helpers that need no system; loading and
validating a file against its system (``registry.load_experiment``) validates everything it
can before anything runs (unknown fields, types, fault kinds and parameters, checker names,
system options), so a bad file fails in one line with exit code 2 instead of half-way
through a run. The model never imports the systems: they import it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import msgspec

from chaoskube import gallery
from chaoskube.experiments.probes import Probe, SteadyStateHypothesis
from chaoskube.faults import ScheduledFault
from chaoskube.faults.nemesis import NemesisSpec
from chaoskube.sim.buggify import BuggifySpec
from chaoskube.faults.triggers import When
from chaoskube.workload.generator import GeneratorSpec


def experiment_dir(experiment: "Experiment") -> Path | None:
    """The directory of the file ``experiment`` was loaded from (None for a built one)."""
    return Path(experiment.path).resolve().parent if experiment.path else None


class ExperimentError(Exception):
    """A bad experiment file or name. ``str(error)`` is one line naming file and field."""


class FaultEntry(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    at_s: float = 0.0  # when it fires, into the fault phase; with ``when``: when it is armed
    kind: str
    target: str
    duration_s: float | None = None
    params: dict[str, float | int | str | bool] = {}
    #: A fault whose ``at_s + duration_s`` outlasts the fault phase is refused, since the
    #: heal would cut it short without a word; ``clip_to_phase: true`` accepts the cut,
    #: which ``describe``, ``run --dry-run`` and the result then show.
    clip_to_phase: bool = False
    #: Fire on a journal event instead (faults/triggers.py): armed at ``at_s``, disarmed at
    #: the heal; each match, up to ``when.times``, fires the fault ``when.delay_*`` later.
    when: When | None = None

    def scheduled(self) -> ScheduledFault:
        return ScheduledFault(self.at_s, self.kind, self.target, self.duration_s, dict(self.params), self.when)

    def clipped_s(self, faults_s: float) -> float | None:
        """How long the fault really lasts when the heal at the end of a ``faults_s`` fault
        phase cuts it (None when it is not cut)."""
        if self.duration_s is None or self.at_s + self.duration_s <= faults_s:
            return None
        return max(0.0, faults_s - self.at_s)


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
    probes: list[Probe] = []  # user-defined probes, each a checker ``probe:<name>`` (probes.py)
    steady_state: SteadyStateHypothesis | None = None  # joins the system's steady state (probes.py)
    # The seed the boot (start to steady state) draws from; the run seed drives the rest.
    # Fixed by default, so every seed of a campaign shares one boot (docs/campaigns.md).
    boot_seed: int = 0
    path: str = ""
    #: Set by ``--manifests DIR`` (``registry.with_manifests``): the directory whose
    #: manifests replaced the workload, and ``--skip-unsupported``; both go into the replay
    #: command and result.json (with a sha256 of the directory's manifests).
    manifests_dir: str = ""
    skip_unsupported: bool = False
    #: What ``--manifests`` changed and says once: checkers left out because the manifests
    #: give them nothing to judge (printed, in result.json and the report).
    notes: list[str] = []
    #: BUGGIFY (chaoskube/sim/buggify.py): seeded delays at the places where races live,
    #: from the switch to the run seed on; ``--buggify`` / ``--no-buggify`` override ``enabled``.
    buggify: BuggifySpec | None = None
    #: A seeded workload generator (chaoskube/workload/generator.py): users' and operators'
    #: actions at a rate, with weights, from the warm-up to the heal; systems with an API only.
    generator: GeneratorSpec | None = None
    #: Set by ``--faults FILE`` (``mutation.with_faults``; a guided campaign's mutant): the
    #: file whose ``schedule`` and ``nemesis`` replaced the experiment's; the replay names it.
    faults_file: str = ""


def with_broken(experiment: Experiment, names: list[str] | tuple[str, ...]) -> Experiment:
    """``experiment`` with the gallery variants ``names`` added to its ``broken`` list
    (``chaoskube run|explore --broken NAME``). ExperimentError (one line) on an unknown name."""
    try:
        gallery.check(names)
    except KeyError as error:
        raise ExperimentError(f"--broken: {error.args[0]}") from None
    merged = list(experiment.broken) + [name for name in names if name not in experiment.broken]
    return msgspec.structs.replace(experiment, broken=merged)


def with_buggify(experiment: Experiment, enabled: bool) -> Experiment:
    """``experiment`` with BUGGIFY switched on or off (``--buggify`` / ``--no-buggify``):
    its own ``buggify:`` settings kept, FoundationDB's defaults when it has none."""
    spec = experiment.buggify if experiment.buggify is not None else BuggifySpec(enabled=enabled)
    return msgspec.structs.replace(experiment, buggify=msgspec.structs.replace(spec, enabled=enabled))


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


def manifests_sha256(directory: str | Path) -> str:
    """A fingerprint of the manifests ``--manifests DIR`` reads: sha256 over the name and
    bytes of every .yaml/.yml/.json file of the directory, in name order (as
    ``load_manifests`` reads them)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(directory).glob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json")):
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()

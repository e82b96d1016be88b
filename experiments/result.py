"""The result of one run (:class:`RunResult`) and its human-readable log.

Simulated, real and replayed-example runs all end in a :class:`RunResult`; reports.py
writes it out as a run directory. ``run.log`` is written while the run goes, through
:func:`open_run_log`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from loguru import logger

from chaoskube import __version__
from chaoskube.checkers.verdict import Verdict, judged_nothing
from chaoskube.experiments.model import Experiment

#: ``progress(now, planned)``: called about once a second of the run's clock.
Progress = Callable[[float, float], None]


@dataclass
class RunResult:
    experiment: Experiment
    seed: int
    out_dir: Path
    verdicts: dict[str, Verdict]
    journal_sha256: str
    simulated_seconds: float
    wall_seconds: float
    metrics: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    skipped_faults: list[str] = field(default_factory=list)  # scheduled but not applied, and why
    interrupted: bool = False
    recorded_replay: str | None = None  # `chaoskube report`: the replay command the run recorded
    boot_seed: int | None = None  # the boot's seed (None: the run had no separate boot)
    #: --skip-unsupported: the manifests' documents left out, as one-line messages.
    skipped_unsupported: list[str] = field(default_factory=list)
    #: Checkers left out because this run's changed faults left them nothing to judge
    #: (:meth:`__post_init__`): name -> the reason they gave.
    dropped_checkers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """A run whose faults were changed -- ``--faults FILE``, and so every mutant of
        ``explore --guided`` -- may leave a checker of the experiment nothing to judge (a
        mutant that drops the only lease handover leaves ``timing-contracts`` no timer): such
        a checker is left out of the verdicts and listed in ``dropped_checkers``, rather than
        its unknown making the run "NOT as expected" for what the mutation removed. Only an
        unknown built by ``nothing_to_judge`` is left out; any other unknown stays."""
        if not self.experiment.faults_file:
            return
        for name in sorted(self.verdicts):
            if judged_nothing(self.verdicts[name]):
                self.dropped_checkers[name] = self.verdicts.pop(name).reason

    def manifests_record(self) -> dict[str, Any] | None:
        """``--manifests DIR``: the directory and the sha256 of its manifests at run time."""
        if not self.experiment.manifests_dir:
            return None
        from chaoskube.experiments.model import manifests_sha256

        return {"directory": self.experiment.manifests_dir, "sha256": manifests_sha256(self.experiment.manifests_dir), "skip_unsupported": self.experiment.skip_unsupported}

    mode = "simulated"  # RealRunResult: "real"

    @property
    def failing(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is False)

    @property
    def unknown(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is None)

    @property
    def inconclusive(self) -> bool:
        """A fault of the schedule (or the nemesis) could not be applied when it fell due
        (its target matched nothing then, e.g. no leader): the run did not test what the
        experiment says, whatever the checkers answered. Never "as expected"."""
        return bool(self.skipped_faults) and not self.interrupted

    @property
    def checkers_as_expected(self) -> bool:
        """The verdicts are the expected ones: the expected checkers fail, no other fails
        (except those that may), none is unknown. With gallery variants patched in
        (``broken``) the expectation is that a checker catches them, so this is whether
        none did (a finding is never as expected)."""
        if self.interrupted or self.unknown:
            return False
        if self.experiment.broken:
            return not self.failing
        expected = self.experiment.expected
        failing = set(self.failing)
        return set(expected.failing) <= failing <= set(expected.failing) | set(expected.may_fail)

    @property
    def as_expected(self) -> bool:
        """The outcome is the experiment's expected one: the verdicts are
        (:attr:`checkers_as_expected`, ignoring gallery variants) and every fault was
        applied."""
        if self.interrupted or self.unknown or self.inconclusive:
            return False
        expected = self.experiment.expected
        failing = set(self.failing)
        return set(expected.failing) <= failing <= set(expected.failing) | set(expected.may_fail)

    @property
    def outcome(self) -> str:
        """One word for the run (result.json ``outcome``; docs/experiments.md, "Outcomes and
        exit codes"): ``interrupted``, ``inconclusive``, ``as-expected`` or ``not-as-expected``."""
        if self.interrupted:
            return "interrupted"
        if not self.checkers_as_expected:
            return "not-as-expected"
        return "inconclusive" if self.inconclusive else "as-expected"

    def clipped_faults(self) -> list[str]:
        """The schedule's faults that ``clip_to_phase`` lets the heal cut short, one line each."""
        faults_s = self.experiment.phases.faults_s
        lines = []
        for index, entry in enumerate(self.experiment.schedule):
            clipped = entry.clipped_s(faults_s)
            if clipped is not None:
                lines.append(f"schedule[{index}] {entry.kind} {entry.target}: duration_s {entry.duration_s:g} clipped to {clipped:g} s by the heal (clip_to_phase)")
        return lines

    @property
    def replay(self) -> str:
        """The command that runs this again: the catalogue name or the file, with every
        gallery variant the run had passed as ``--broken`` (those the file names already
        are merged, not doubled: ``with_broken``)."""
        if self.recorded_replay is not None:
            return self.recorded_replay
        catalogue = not self.experiment.path or "/catalog/" in self.experiment.path
        target = self.experiment.name if catalogue else self.experiment.path
        options = ["--boot-seed", str(self.boot_seed)] if self.boot_seed is not None and self.boot_seed != self.experiment.boot_seed else []
        options += [item for name in self.experiment.broken for item in ("--broken", name)]
        if self.experiment.manifests_dir:
            options += ["--manifests", self.experiment.manifests_dir]
        if self.experiment.skip_unsupported:
            options.append("--skip-unsupported")
        if self.experiment.buggify is not None:
            options.append("--buggify" if self.experiment.buggify.enabled else "--no-buggify")
        if self.experiment.faults_file:
            options += ["--faults", self.experiment.faults_file]
        return shlex.join(["chaoskube", "run", target, "--seed", str(self.seed), *options, "--out", str(self.out_dir)])

    def to_json(self) -> dict[str, Any]:
        experiment = self.experiment
        return {
            "experiment": experiment.name,
            "title": experiment.title,
            "seed": self.seed,
            "boot_seed": self.boot_seed,
            "chaoskube_version": __version__,
            "verdicts": {name: verdict.to_json() for name, verdict in self.verdicts.items()},
            "expected": {"outcome": experiment.expected.outcome, "failing": sorted(experiment.expected.failing), "may_fail": sorted(experiment.expected.may_fail), "failure_mode": experiment.expected.failure_mode},
            "as_expected": self.as_expected,
            "outcome": self.outcome,
            "checkers_as_expected": self.checkers_as_expected,
            "inconclusive": self.inconclusive,
            "clipped_faults": self.clipped_faults(),
            "broken": list(self.experiment.broken),
            "manifests": self.manifests_record(),
            "skipped_unsupported": list(self.skipped_unsupported),
            "dropped_checkers": dict(self.dropped_checkers),
            "notes": list(self.experiment.notes),
            "journal_sha256": self.journal_sha256,
            "simulated_seconds": round(self.simulated_seconds, 6),
            "wall_seconds": round(self.wall_seconds, 3),
            "replay": self.replay,
            "phases": self.phases,
            "faults": self.faults,
            "skipped_faults": self.skipped_faults,
            "metrics": self.metrics,
            "interrupted": self.interrupted,
            # The experiment as it ran (its file may change or move): `chaoskube report`
            # re-renders the reports from this and the journal alone.
            "spec": msgspec.to_builtins(experiment),
        }


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` whole or not at all: to a file beside it, then renamed
    over it (a rename within a directory is atomic on POSIX), so an interrupted or killed
    command never leaves half a result.json or summary."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


RUN_LOG_FORMAT = "{extra[vt]:>12.6f}s  {extra[process]:<14} {level:<7} {message}"


def open_run_log(path: Path) -> int:
    """Human-readable log of a run, stamped with virtual time (loguru)."""
    logger.enable("chaoskube")
    return logger.add(path, format=RUN_LOG_FORMAT, level="INFO", filter=lambda record: "vt" in record["extra"] and "process" in record["extra"])


def close_run_log(sink: int) -> None:
    logger.remove(sink)
    logger.disable("chaoskube")

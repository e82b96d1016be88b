"""The result of one run (:class:`RunResult`) and its human-readable log.

Simulated, real and replayed-example runs all end in a :class:`RunResult`; reports.py
writes it out as a run directory. ``run.log`` is written while the run goes, through
:func:`open_run_log`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from chaoskube import __version__
from chaoskube.checkers.verdict import Verdict
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
    boot_seed: int | None = None  # the boot's seed (None: the run had no separate boot)

    mode = "simulated"  # RealRunResult: "real"

    @property
    def failing(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is False)

    @property
    def unknown(self) -> list[str]:
        return sorted(name for name, verdict in self.verdicts.items() if verdict.valid is None)

    @property
    def as_expected(self) -> bool:
        """The outcome is the experiment's expected one: the expected checkers fail, no
        other fails (except those that may), and none is unknown."""
        if self.interrupted or self.unknown:
            return False
        expected = self.experiment.expected
        failing = set(self.failing)
        return set(expected.failing) <= failing <= set(expected.failing) | set(expected.may_fail)

    @property
    def replay(self) -> str:
        """The command that runs this again: the catalogue name or the file, with every
        gallery variant the run had passed as ``--broken`` (those the file names already
        are merged, not doubled: ``with_broken``)."""
        catalogue = not self.experiment.path or "/catalog/" in self.experiment.path
        target = self.experiment.name if catalogue else self.experiment.path
        broken = [item for name in self.experiment.broken for item in ("--broken", name)]
        boot = ["--boot-seed", str(self.boot_seed)] if self.boot_seed is not None and self.boot_seed != self.experiment.boot_seed else []
        return shlex.join(["chaoskube", "run", target, "--seed", str(self.seed), *boot, *broken, "--out", str(self.out_dir)])

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
            "broken": list(self.experiment.broken),
            "journal_sha256": self.journal_sha256,
            "simulated_seconds": round(self.simulated_seconds, 6),
            "wall_seconds": round(self.wall_seconds, 3),
            "replay": self.replay,
            "phases": self.phases,
            "faults": self.faults,
            "skipped_faults": self.skipped_faults,
            "metrics": self.metrics,
            "interrupted": self.interrupted,
        }


RUN_LOG_FORMAT = "{extra[vt]:>12.6f}s  {extra[process]:<14} {level:<7} {message}"


def open_run_log(path: Path) -> int:
    """Human-readable log of a run, stamped with virtual time (loguru)."""
    logger.enable("chaoskube")
    return logger.add(path, format=RUN_LOG_FORMAT, level="INFO", filter=lambda record: "vt" in record["extra"] and "process" in record["extra"])


def close_run_log(sink: int) -> None:
    logger.remove(sink)
    logger.disable("chaoskube")

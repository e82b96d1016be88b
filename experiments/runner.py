"""Run one experiment with one seed: ``run_experiment`` picks how, by its system.

- a simulated system (``etcd``, ``kubernetes``, ``mesh``): simulated.run_simulated, the
  phases on the World's virtual clock;
- a system with ``real_time = True`` (``real-etcd``): real/runner.run_real_experiment, the
  same phases on real processes and the real clock;
- a system with ``replays_steps = True`` (``hypothesis``): the steps of a saved Hypothesis
  example, replayed (systems/hypothesis.run_hypothesis_experiment).

Every kind of run writes the same run directory (result.py). The experiment's gallery
variants (``experiment.broken``, chaoskube/gallery.py) are patched in for the duration of
the run, whatever its kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chaoskube import gallery
from chaoskube.experiments.model import Experiment
from chaoskube.experiments.real.runner import run_real_experiment
from chaoskube.experiments.registry import SYSTEMS
from chaoskube.experiments.result import Progress, RunResult
from chaoskube.experiments.simulated import run_simulated
from chaoskube.experiments.systems.hypothesis import run_hypothesis_experiment

__all__ = ["Progress", "RunResult", "run_experiment"]


def run_experiment(
    experiment: Experiment, seed: int, out_dir: str | Path, *, progress: Progress | None = None, boot_seed: int | None = None,
    reference_cache: str | Path | None = None, max_wall_s: float | None = None, watchdog: Any = None,
) -> RunResult:
    """Run ``experiment`` with ``seed`` into ``out_dir``, with its gallery variants
    (``experiment.broken``) patched in for the duration of the run. A simulated run boots
    with ``boot_seed`` (default: the experiment's ``boot_seed``) and runs on ``seed``
    after the boot (docs/campaigns.md); other kinds of run have no separate boot.
    ``reference_cache``: where the differential checker's fault-free runs are kept and
    shared (a campaign's). ``max_wall_s``: a simulated run the watchdog ends with a
    ``livelock`` verdict after that much wall-clock time (``--max-wall``); ``watchdog`` (a
    :class:`chaoskube.sim.Watchdog`) replaces its default bounds."""
    system_class = SYSTEMS[experiment.system]
    with gallery.applied(experiment.broken):
        if getattr(system_class, "replays_steps", False):  # a saved Hypothesis example
            return run_hypothesis_experiment(experiment, seed, out_dir, progress=progress)
        if getattr(system_class, "real_time", False):  # real processes, real clock
            return run_real_experiment(experiment, seed, out_dir, progress=progress)
        return run_simulated(experiment, system_class, seed, out_dir, progress, boot_seed=boot_seed, reference_cache=reference_cache, max_wall_s=max_wall_s, watchdog=watchdog)

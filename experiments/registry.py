"""The catalogue: experiment name -> experiment file, from experiments/catalog/*.yaml."""

from __future__ import annotations

from pathlib import Path

from experiments.model import Experiment, ExperimentError, load_experiment

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

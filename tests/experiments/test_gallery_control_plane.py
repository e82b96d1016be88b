"""The gallery's control-plane gap variants (chaoskube/gallery.py, ``CONTROL_PLANE_VARIANTS``,
issue 35 deliverable 4). Fast: each names a catalogue experiment that runs its checker and
passes unbroken, cites its public source, patches in and restores; docs/experiments.md lists
each with its first seed caught, or says why none is. Slow: each variant with a first seed
is caught there by its checker, and its broken code ran."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaoskube import gallery
from chaoskube.experiments import registry
from chaoskube.experiments.model import with_broken
from chaoskube.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
NAMES = [variant.name for variant in gallery.CONTROL_PLANE_VARIANTS]


def table() -> dict[str, str]:
    """docs/experiments.md's "Issue 35: the control plane's gaps" table: variant -> first seed cell."""
    text = (ROOT / "docs" / "experiments.md").read_text().split("### Issue 35: the control plane's gaps", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return {match[0]: match[1].strip() for match in re.findall(r"^\| `([\w-]+)` \|[^|]*\|[^|]*\|[^|]*\|([^|]*)\|", text, re.M)}


def first_seeds() -> dict[str, int]:
    return {name: int(cell) for name, cell in table().items() if cell.isdigit()}


def test_every_variant_is_in_the_table_with_a_seed_or_a_reason():
    assert set(table()) == set(NAMES)
    assert all(1 <= seed <= 20 for seed in first_seeds().values())
    assert all(cell.isdigit() or cell.startswith("not in 1..") for cell in table().values())


@pytest.mark.parametrize("name", NAMES)
def test_each_variant_names_an_experiment_that_runs_its_checker_and_cites_its_source(name):
    variant = gallery.VARIANTS[name]
    experiment = registry.find(variant.experiment)
    assert variant.caught_by in experiment.checkers and experiment.expected.outcome == "pass"
    assert variant.caught_by not in experiment.expected.may_fail
    assert "#" in variant.description or "Figure 8" in variant.description
    for target in (variant.target, *(target for target, _ in variant.also)):  # a whole fix reverted: every method it touched
        owner, attribute = gallery._resolve(target)
        real = owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
        with gallery.applied([name]):
            assert (owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)) is not real, target
        assert (owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)) is real, target


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(first_seeds()))
def test_each_variant_is_caught_on_its_seed(name, tmp_path):
    variant = gallery.VARIANTS[name]
    experiment = with_broken(registry.find(variant.experiment), [name])
    result = run_experiment(experiment, first_seeds()[name], tmp_path / name)
    verdict = result.verdicts[variant.caught_by]
    assert verdict.valid is False, verdict.reason
    assert verdict.evidence
    assert result.metrics["broken_calls"][name] > 0, f"{name}: its broken code never ran, yet {variant.caught_by} failed"

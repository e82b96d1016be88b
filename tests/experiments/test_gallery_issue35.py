"""The gallery's issue-35 variants (chaoskube/gallery.py, ``APP_VARIANTS``): broken
StatefulSet, Job and CronJob paths, each modelled on a public bug and caught by its kind's
oracle. Fast: each names a catalogue experiment that runs its checker and passes unbroken,
patches in and restores. Slow: each is caught on the first seed docs/experiments.md gives
for it, and its broken code ran."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaoskube import gallery
from chaoskube.experiments import registry
from chaoskube.experiments.model import with_broken
from chaoskube.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
NAMES = [variant.name for variant in gallery.APP_VARIANTS]


def first_seeds() -> dict[str, int]:
    """The table of docs/experiments.md's issue-35 section: variant -> first seed caught."""
    text = (ROOT / "docs" / "experiments.md").read_text().split("### Issue 35: the gallery of the application kinds", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return {match[0]: int(match[1]) for match in re.findall(r"^\| `([\w-]+)` \|[^|]*\|[^|]*\|[^|]*\| (\d+) \|", text, re.M)}


def test_every_new_oracle_has_a_variant_and_every_variant_a_first_seed():
    checkers = {variant.caught_by for variant in gallery.APP_VARIANTS}
    assert {"statefulset-invariants", "job-invariants", "cronjob-invariants", "daemonset-invariants", "namespace-invariants", "volume-invariants", "quota-invariants", "crd-invariants"} <= checkers
    assert set(first_seeds()) == set(NAMES), "docs/experiments.md lists every variant with its seed"
    assert all(1 <= seed <= 50 for seed in first_seeds().values())


@pytest.mark.parametrize("name", NAMES)
def test_each_variant_names_an_experiment_that_runs_its_checker_and_cites_a_bug(name):
    variant = gallery.VARIANTS[name]
    experiment = registry.find(variant.experiment)
    assert variant.caught_by in experiment.checkers and experiment.expected.outcome == "pass"
    assert variant.caught_by not in experiment.expected.may_fail
    assert "#" in variant.description + (variant.replacement.__doc__ or "")
    owner, attribute = gallery._resolve(variant.target)
    real = owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)
    with gallery.applied([name]):
        assert (owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)) is not real
    assert (owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)) is real


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_variant_is_caught_on_its_seed(name, tmp_path):
    variant = gallery.VARIANTS[name]
    experiment = with_broken(registry.find(variant.experiment), [name])
    result = run_experiment(experiment, first_seeds()[name], tmp_path / name)
    verdict = result.verdicts[variant.caught_by]
    assert verdict.valid is False, verdict.reason
    assert verdict.evidence
    calls = result.metrics["broken_calls"][name]
    assert calls is None or calls > 0, f"{name}: its broken code never ran, yet {variant.caught_by} failed"

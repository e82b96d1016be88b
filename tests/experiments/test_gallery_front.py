"""The gallery's HTTPS-front variants (chaoskube/gallery.py, ``FRONT_VARIANTS``): a
pagination that mixes revisions and a strategic merge patch that keeps what it should
delete, each modelled on a public bug and caught by its oracle in
outside-clients-under-apiserver-restarts. Fast: the experiment runs the checker and the
variant patches in and restores. Slow: each is caught on the first seed docs/experiments.md
gives for it, and its broken code ran."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chaoskube import gallery
from chaoskube.experiments import registry
from chaoskube.experiments.model import with_broken
from chaoskube.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
NAMES = [variant.name for variant in gallery.FRONT_VARIANTS]


def first_seeds() -> dict[str, int]:
    """The table of docs/experiments.md's "The HTTPS front's gallery": variant -> first seed."""
    text = (ROOT / "docs" / "experiments.md").read_text().split("### The HTTPS front's gallery", 1)[1].split("\n## ", 1)[0]
    return {match[0]: int(match[1]) for match in re.findall(r"^\| `([\w-]+)` \|[^|]*\|[^|]*\|[^|]*\| (\d+) \|", text, re.M)}


def test_every_front_oracle_has_a_variant_and_every_variant_a_first_seed():
    assert {variant.caught_by for variant in gallery.FRONT_VARIANTS} == {"api-pagination", "api-patch"}
    assert set(first_seeds()) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_variant_names_an_experiment_that_runs_its_checker_and_cites_a_bug(name):
    variant = gallery.VARIANTS[name]
    experiment = registry.find(variant.experiment)
    assert variant.caught_by in experiment.checkers and experiment.expected.outcome == "pass"
    assert "#" in variant.description
    owner, attribute = gallery._resolve(variant.target)
    real = getattr(owner, attribute)
    with gallery.applied([name]):
        assert getattr(owner, attribute) is not real
    assert getattr(owner, attribute) is real


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


def test_the_experiment_passes_unbroken_with_every_front_oracle_judging(tmp_path):
    result = run_experiment(registry.find("outside-clients-under-apiserver-restarts"), 1, tmp_path / "unbroken")
    for name in ("api-pagination", "api-patch", "api-watch"):
        assert result.verdicts[name].valid is True, (name, result.verdicts[name].reason)
    assert result.verdicts["api-pagination"].details["continued"] > 0
    assert result.verdicts["api-patch"].details["judged"] > 0
    assert result.verdicts["api-watch"].details["outside_watches"] > 0

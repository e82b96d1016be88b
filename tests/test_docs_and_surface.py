"""Docs stay true and public names stay honest."""

import importlib
from pathlib import Path

import pytest

from chaoskube.experiments import registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_catalogue_experiment_is_documented():
    catalogue = (ROOT / "docs" / "experiments.md").read_text()
    for name in registry.names():
        assert f"## {name}\n" in catalogue, f"docs/experiments.md has no section for {name}"


def test_every_catalogue_experiment_loads_and_names_its_source():
    for experiment in registry.load_all():
        assert experiment.source.strip(), experiment.name
        assert experiment.description.strip(), experiment.name


@pytest.mark.parametrize("package", ["chaoskube.api", "chaoskube.apiserver", "chaoskube.checkers", "chaoskube.client", "chaoskube.controllers", "chaoskube.etcd", "chaoskube.node", "chaoskube.scheduler", "chaoskube.sim", "chaoskube.faults"])
def test_package_roots_export_exactly_what_they_list(package):
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", [])
    for name in exported:
        assert hasattr(module, name), f"{package}.__all__ lists {name!r} but it is missing"
    assert exported == sorted(exported), f"{package}.__all__ is not sorted"


def test_nothing_imports_the_folders_by_their_bare_names():
    """faults/ and experiments/ install as chaoskube.faults and chaoskube.experiments: a bare
    ``import faults`` would work only from the repository root, and would collide with a
    user's own package of that name (the layering itself: tests/test_layering.py)."""
    import re

    bare = re.compile(r"^\s*(from|import)\s+(faults|experiments)\b", re.M)
    for folder in ("chaoskube", "faults", "experiments", "tests", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not bare.search(path.read_text()), f"{path}: import chaoskube.faults / chaoskube.experiments instead"


def test_no_wall_clock_or_global_random_in_the_simulation():
    import re

    pattern = re.compile(r"\btime\.time\(\)|\brandom\.(random|randint|choice|shuffle|uniform)\(|uuid\.uuid4\(")
    for folder in ("chaoskube", "faults"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not pattern.search(path.read_text()), f"{path}: wall clock or global random"

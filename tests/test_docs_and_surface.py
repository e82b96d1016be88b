"""Docs stay true and public names stay honest."""

import importlib
from pathlib import Path

import pytest

from experiments import registry

ROOT = Path(__file__).resolve().parents[1]


def test_every_catalogue_experiment_is_documented():
    catalogue = (ROOT / "docs" / "experiments.md").read_text()
    for name in registry.names():
        assert f"## {name}\n" in catalogue, f"docs/experiments.md has no section for {name}"


def test_every_catalogue_experiment_loads_and_names_its_source():
    for experiment in registry.load_all():
        assert experiment.source.strip(), experiment.name
        assert experiment.description.strip(), experiment.name


@pytest.mark.parametrize("package", ["chaoskube.api", "chaoskube.checkers", "chaoskube.controllers", "chaoskube.etcd", "chaoskube.node", "chaoskube.scheduler", "chaoskube.sim", "faults"])
def test_package_roots_export_exactly_what_they_list(package):
    module = importlib.import_module(package)
    exported = getattr(module, "__all__", [])
    for name in exported:
        assert hasattr(module, name), f"{package}.__all__ lists {name!r} but it is missing"
    assert exported == sorted(exported), f"{package}.__all__ is not sorted"


def test_imports_point_down_only():
    """chaoskube never imports faults or experiments, except its top layer: the stateful
    testing API (chaoskube/testing) and the examples built on it drive faults/ as an
    experiment does; faults never imports experiments."""
    top = {ROOT / "chaoskube" / "testing", ROOT / "chaoskube" / "examples"}
    for path in (ROOT / "chaoskube").rglob("*.py"):
        text = path.read_text()
        if not top & set(path.parents):
            assert "from faults" not in text and "import faults" not in text, path
        assert "from experiments" not in text and "import experiments" not in text, path
    for path in (ROOT / "faults").rglob("*.py"):
        text = path.read_text()
        assert "from experiments" not in text and "import experiments" not in text, path


def test_no_wall_clock_or_global_random_in_the_simulation():
    import re

    pattern = re.compile(r"\btime\.time\(\)|\brandom\.(random|randint|choice|shuffle|uniform)\(|uuid\.uuid4\(")
    for folder in ("chaoskube", "faults"):
        for path in (ROOT / folder).rglob("*.py"):
            assert not pattern.search(path.read_text()), f"{path}: wall clock or global random"

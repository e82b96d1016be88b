"""docs/tutorial.md stays true: every excerpt is verbatim in the shipped example, and every
file the reader writes runs as the tutorial says (passes, or fails with the shrunk steps)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"<!-- (file|excerpt): (\S+) -->\n```(?:python|yaml)\n(.*?)```", re.S)


def _blocks(kind: str) -> list[tuple[str, str]]:
    return [(path, code) for found, path, code in BLOCK.findall(TUTORIAL.read_text()) if found == kind]


def test_the_tutorial_has_files_and_excerpts():
    assert [path for path, _ in _blocks("file")] == ["tests/test_first_cluster.py", "tests/test_pdb_guard.py", "tests/test_pdb_guard_fixed.py", "tests/manifests/shop.yaml", "tests/test_my_app.py"]
    assert len(_blocks("excerpt")) >= 5


@pytest.mark.parametrize("index", range(len(_blocks("excerpt"))))
def test_every_excerpt_is_verbatim_in_the_shipped_example(index):
    path, code = _blocks("excerpt")[index]
    source = (ROOT / path).read_text()
    assert code.rstrip("\n") in source, f"docs/tutorial.md: excerpt {index + 1} is not verbatim in {path}:\n{code}"


def _run_reader_file(tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tests").mkdir(exist_ok=True)
    for path, code in _blocks("file"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(code)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore::DeprecationWarning", "--chaoskube-failures=off", name]
    if not any(point.value == "chaoskube.testing.plugin" for point in entry_points(group="pytest11")):
        command[3:3] = ["-p", "chaoskube.testing.plugin"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600, check=False)


def test_the_first_cluster_test_passes(tmp_path):
    result = _run_reader_file(tmp_path, "tests/test_first_cluster.py")
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_the_fixed_controller_passes(tmp_path):
    result = _run_reader_file(tmp_path, "tests/test_pdb_guard_fixed.py")
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_the_machine_on_your_own_manifests_passes(tmp_path):
    """Section 11 (issue 32): the reader's manifests loaded into a ClusterMachine."""
    result = _run_reader_file(tmp_path, "tests/test_my_app.py")
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


@pytest.mark.slow  # ~1-2 min: Hypothesis finds the bug, then shrinks through many live clusters
def test_the_controller_as_first_written_is_caught_and_shrunk(tmp_path):
    result = _run_reader_file(tmp_path, "tests/test_pdb_guard.py")
    out = result.stdout
    assert result.returncode == 1 and "1 failed" in out, out[-3000:] + result.stderr[-2000:]
    assert "pdb-guard promise: guard " in out and "was deleted while deployment" in out, out[-3000:]
    section = out[out.index("- chaoskube -"):]
    steps = re.search(r"steps \((\d+)\):\n((?:  \d+\. .*\n)+)", section)
    assert steps is not None, section[:2000]
    assert int(steps.group(1)) <= 10, section[:2000]
    names = re.findall(r"\d+\. (\w+)\(", steps.group(2))
    assert names[0] == "boot" and "create_deployment" in names and "restart_guard" in names, names
    assert names.index("create_deployment") < len(names) - 1 - names[::-1].index("restart_guard"), names


def test_the_replay_snippet_replays_the_violation():
    text = TUTORIAL.read_text()
    snippet = text[text.index("PdbGuardStories.replay(["):].split("\n", 1)[0]
    from chaoskube.examples.machine import PdbGuardStories
    from chaoskube.testing import InvariantViolation

    with pytest.raises(InvariantViolation) as caught:
        eval(snippet, {"PdbGuardStories": PdbGuardStories})  # noqa: S307 - our own docs
    assert caught.value.name == "pdb-guard promise"
    assert [name for name, _ in caught.value.chaoskube_run.steps] == ["boot", "create_deployment", "restart_guard"]

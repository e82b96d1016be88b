"""``chaoskube test-operator`` end to end on one gallery pair (docs/operators/gallery): the
operator whose create is not idempotent after a lost answer is found by the plan that loses
it, with the diverging objects and a replay command; its fixed version passes the same plan.
The broken one's plan runs on a Dask cluster (``--dask local:1``: the plan a task on a local
worker, its session shipped back and judged here), the fixed one's on the local pool.
Slow: two fault-free learning sessions and one plan session each, live (about a minute)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "operators" / "gallery"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("operator", "found", "where"), [("create_lost_response.py", True, ["--dask", "local:1"]), ("create_lost_response_fixed.py", False, [])])
def test_test_operator_finds_the_broken_operator_and_passes_the_fixed_one(tmp_path, operator, found, where):
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    if where:
        pytest.importorskip("distributed", reason="distributed is in the test extra")
    out = tmp_path / "out"
    command = f"{sys.executable} -m kopf run --standalone -A {GALLERY / operator}"
    argv = [sys.executable, "-m", "chaoskube.experiments.cli", "test-operator", "--run", command, "--manifests", str(GALLERY / "widgets-crd.yaml"),
            "--out", str(out), "--kind", "lost-response", "--budget", "1", "--jobs", "2", *where]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=400, cwd=ROOT, check=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["plans_run"] == 1 and summary["plans_generated"] >= 2, done.stdout[-2000:]
    (result,) = summary["results"]
    assert summary["dask"] == (where[1] if where else None)
    assert result["session_wall"]["boot_s"] > 0 and result["session_wall"]["steps_s"] > 0  # the plan's session ran and was shipped back whole
    assert result["id"] == "lost-response@create:configmaps#1"
    assert result["perturbation"].get("applied") is not None  # the plan fired at the operator's own request
    if found:
        assert done.returncode == 1, done.stdout[-2000:]
        assert result["status"] == "found"
        oracles = {finding["oracle"] for finding in result["findings"]}
        assert {"duplicated-children", "lifecycle"} <= oracles, result["findings"]
        assert "FOUND lost-response@create:configmaps#1" in done.stdout
        assert "--plan 'lost-response@create:configmaps#1'" in summary["replay"][result["id"]]
        assert "## lost-response@create:configmaps#1" in (out / "summary.md").read_text()
    else:
        assert done.returncode == 0, (done.stdout[-2000:], result)
        assert result["status"] == "pass", result
    sessions = [out / "learn-1", out / "learn-2", *sorted((out / "plans").iterdir())]
    for directory in sessions:  # every run of the operator stopped and reaped with its session
        runs = json.loads((directory / "result.json").read_text())["live"]["operator"]["runs"]
        assert runs and all(entry.get("exit_code") is not None for entry in runs), (directory, runs)

"""A real kopf operator (docs/operators/pdb_keeper.py), unchanged, run by ``chaoskube
serve --run`` while the API server it uses and the etcd leader are killed: the stale view
its watch-fed cache keeps after kopf's relist is caught by the experiment's end-state
assertions, and the fixed operator passes. Slow: each run is about a minute of wall time
(virtual time is paced to the wall clock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENT = ROOT / "docs" / "operators" / "pdb-keeper.yaml"

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("operator", "caught"), [("pdb_keeper.py", True), ("pdb_keeper_fixed.py", False)])
def test_kopf_operator_under_api_server_and_etcd_leader_kills(tmp_path, operator, caught):
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    out = tmp_path / "run"
    command = f"{sys.executable} -m kopf run --standalone -A {ROOT / 'docs' / 'operators' / operator}"
    run = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "serve", str(EXPERIMENT), "--listen", "127.0.0.1:0", "--out", str(out), "--run", command],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    import orjson

    result = orjson.loads((out / "result.json").read_bytes())
    verdicts = {name: verdict["valid"] for name, verdict in result["verdicts"].items()}
    assert result["mode"] == "live" and result["live"]["replayable"] is False
    assert verdicts["steady-state"] == "true" and verdicts["leader-election"] == "true", (verdicts, run.stderr[-2000:])
    assert verdicts["end-state"] == ("false" if caught else "true"), result["verdicts"]["end-state"]
    assert run.returncode == (1 if caught else 0)
    runs = result["live"]["operator"]["runs"]
    assert runs and all(entry.get("exit_code") is not None for entry in runs)  # stopped and reaped
    journal = (out / "journal.jsonl").read_text()
    assert '"client":"operator"' in journal and '"type":"operator-output"' in journal
    assert '"type":"http-listener"' in journal and '"event":"close"' in journal  # kube-apiserver-1 was killed under it
    leftover = subprocess.run(["pgrep", "-f", str(ROOT / "docs" / "operators" / operator)], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "the operator outlived the run"

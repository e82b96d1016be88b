"""docs/formats.md stays true: every key it documents for result.json and summary.json is
one the tool writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli.test_cli import chaoskube

ROOT = Path(__file__).resolve().parents[1]


def documented(section: str) -> set[str]:
    text = (ROOT / "docs" / "formats.md").read_text()
    table = text.split(section, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    keys: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
    return keys


def test_the_documented_keys_are_written(tmp_path):
    run = tmp_path / "run"
    assert chaoskube("run", "mesh-partition", "--seed", "1", "--out", str(run)).returncode == 0
    result = json.loads((run / "result.json").read_text())
    real_only = {"mode", "comparison", "processes", "real_seconds"}
    assert documented("### `result.json`") - real_only <= set(result), sorted(documented("### `result.json`") - real_only - set(result))
    campaign = tmp_path / "campaign"
    assert chaoskube("explore", "mesh-partition", "--seeds", "1", "--out", str(campaign)).returncode == 0
    summary = json.loads((campaign / "summary.json").read_text())
    assert documented("`summary.json`:") - {"merged_from"} <= set(summary), sorted(documented("`summary.json`:") - {"merged_from"} - set(summary))

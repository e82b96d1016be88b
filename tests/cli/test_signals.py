"""SIGTERM is handled like SIGINT (exit 143, not 130): the run stops, is marked interrupted,
its journal is flushed and closed, and what finished is written; SIGINT three times and
SIGKILL leave no process behind. ``run`` and ``explore`` of simulated experiments, each in a
session of its own; real runs: tests/real/test_real_signals.py."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import orjson
import pytest

from tests.signals import ROOT, kill_session, left_behind, send, session_processes, start, wait_for

LONG = "random-nemesis-long"
CATALOG = ROOT / "experiments" / "catalog"


def long_experiment(directory: Path) -> str:
    """random-nemesis with an hour of faults (a few minutes of CPU): long enough to be
    signalled mid-run on a loaded machine, where the catalogue's 2-second run may end
    first."""
    text = (CATALOG / "random-nemesis.yaml").read_text()
    text = text.replace("name: random-nemesis\n", f"name: {LONG}\n", 1)
    text = re.sub(r"faults_s: \d+", "faults_s: 3600", text, count=1)
    assert f"name: {LONG}" in text and "faults_s: 3600" in text
    path = directory / f"{LONG}.yaml"
    path.write_text(text)
    return str(path)


def journal_lines_whole(path) -> bool:
    data = path.read_bytes()
    if not data:
        return True
    if not data.endswith(b"\n"):
        return False
    for line in data.splitlines():
        orjson.loads(line)
    return True


@pytest.mark.parametrize(("signals", "code", "word"), [([signal.SIGTERM], 143, "stopped by SIGTERM"), ([signal.SIGINT], 130, "interrupted"), ([signal.SIGTERM, signal.SIGTERM, signal.SIGTERM], 143, "stopped by SIGTERM")])
@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_run_stops_on_a_signal_and_keeps_a_whole_record(tmp_path, signals, code, word, sigint_ignored):
    """Also when started with SIGINT ignored, as a shell's background job (and a test
    runner's worker) is: Ctrl-C still stops the run, and SIGTERM does not raise
    KeyboardInterrupt inside Trio's own code (a TrioInternalError, with a traceback)."""
    out = tmp_path / "run"
    process = start(["run", long_experiment(tmp_path), "--seed", "1", "--out", str(out)], sigint_ignored=sigint_ignored)
    try:
        wait_for(lambda: (out / "journal.jsonl").exists() and (out / "journal.jsonl").stat().st_size > 100_000, 120, "the run to get going")
        send(process, signals)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        kill_session(process.pid)
    assert process.returncode == code, (stdout.decode()[-2000:], stderr.decode()[-2000:])
    assert "Traceback" not in stderr.decode(), stderr.decode()[-2000:]
    assert stderr.decode().strip().splitlines()[-1] == f"chaoskube: {word}"
    payload = json.loads((out / "result.json").read_text())
    assert payload["interrupted"] is True and payload["outcome"] == "interrupted"
    assert journal_lines_whole(out / "journal.jsonl"), "the journal ends on a whole line"
    assert (out / "report.md").is_file() and (out / "junit.xml").is_file()
    assert not left_behind(process.pid)


@pytest.mark.parametrize(("signals", "code"), [([signal.SIGTERM], 143), ([signal.SIGINT, signal.SIGINT, signal.SIGINT], 130), ([signal.SIGKILL], -9)])
def test_explore_stops_its_workers_on_a_signal(tmp_path, signals, code):
    out = tmp_path / "campaign"
    process = start(["explore", "mesh-partition", long_experiment(tmp_path), "--seeds", "1..40", "--jobs", "2", "--out", str(out)])
    try:
        wait_for(lambda: any(path.name.startswith(LONG) for path in out.glob("*")) if out.exists() else False, 120, "a worker to start a run")
        send(process, signals)
        stdout, stderr = process.communicate(timeout=90)
    finally:
        leftover = left_behind(process.pid)
        kill_session(process.pid)
    assert process.returncode == code, (stdout.decode()[-2000:], stderr.decode()[-2000:])
    assert not leftover, f"processes left: {leftover}"
    if code > 0:  # SIGINT/SIGTERM: the summary of what finished is written
        summary = json.loads((out / "summary.json").read_text())
        assert summary["interrupted"] is True and summary["outcome"] == "interrupted"
        assert summary["finished_runs"] < summary["planned_runs"] == 80
        for run in summary["runs"]:
            assert (out / f"{run['experiment']}-seed{run['seed']}" / "result.json").is_file()


def test_a_killed_run_takes_its_forked_reference_along(tmp_path):
    """``run`` forks the differential checker's reference from its own boot
    (simulated._ReferenceFork); SIGKILL leaves the run no chance to stop it, so the copy
    dies with its parent (``PR_SET_PDEATHSIG``) rather than run on alone. Its reference has
    a workload step near the end of an hour-long fault phase: minutes of work left."""
    path = Path(long_experiment(tmp_path))
    text = path.read_text().replace("  traffic: true\n", "  traffic: true\n  steps: [{after_s: 3500, action: scale, deployment: web, replicas: 4}]\n", 1)
    assert "after_s: 3500" in text
    path.write_text(text)
    out = tmp_path / "run"
    process = start(["run", str(path), "--seed", "1", "--out", str(out)])
    try:
        wait_for(lambda: any((out / "reference").glob("*/journal.jsonl")) if (out / "reference").exists() else False, 120, "the reference to be forked")
        assert len(session_processes(process.pid)) == 2, session_processes(process.pid)  # the run and its copy
        send(process, [signal.SIGKILL])
        process.wait(timeout=60)  # not communicate(): a copy left alive would hold its pipes open
        leftover = left_behind(process.pid, within_s=5.0)
    finally:
        kill_session(process.pid)
        process.communicate(timeout=60)
    assert process.returncode == -9
    assert not leftover, f"processes left: {leftover}"

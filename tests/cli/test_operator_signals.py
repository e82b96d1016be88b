"""``chaoskube test-operator`` stopped by a signal while its plans run: SIGTERM stops the
running sessions (each stops its operator: SIGTERM, grace, SIGKILL, as a live run does),
writes the summary of the plans that finished (marked interrupted, the plans not run
listed) and exits 143 with nothing left behind; SIGKILL of the command leaves no session,
operator or guard behind either (each session waits on its pidfd and dies with it,
and their operators with them, live.py's guard). The processes are found by a marker in
their environment, which every descendant inherits (the operator runs in a session of its
own). Slow: two learning sessions before the plans start, live (~30 s)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.signals import ROOT, kill_session, start, wait_for

GALLERY = ROOT / "docs" / "operators" / "gallery"

pytestmark = pytest.mark.slow


def marked(marker: str) -> list[tuple[int, str]]:
    """(pid, name) of every live process whose environment holds ``marker``."""
    needle = f"CHAOSKUBE_TEST_MARK={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            found.append((int(entry.name), stat[stat.index("(") + 1 : stat.rindex(")")]))
    return sorted(found)


def gone(marker: str, within_s: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + within_s
    while (left := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL])
def test_test_operator_stops_its_sessions_on_a_signal(tmp_path, number):
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    out = tmp_path / "out"
    marker = uuid.uuid4().hex
    command = f"{sys.executable} -m kopf run --standalone -A {GALLERY / 'create_lost_response_fixed.py'}"
    process = start(["test-operator", "--run", command, "--manifests", str(GALLERY / "widgets-crd.yaml"), "--out", str(out), "--kind", "lost-response", "--kind", "crash", "--budget", "6", "--jobs", "2"],
                    env={"CHAOSKUBE_TEST_MARK": marker})
    try:
        wait_for(lambda: any((out / "plans").glob("*/journal.jsonl")) if (out / "plans").exists() else False, 150, "a plan's session to start")
        time.sleep(3.0)  # its operator started
        assert any("kopf" in " ".join(Path(f"/proc/{pid}/cmdline").read_text().split("\0")) for pid, _ in marked(marker) if Path(f"/proc/{pid}").exists()), marked(marker)
        sent = time.monotonic()
        process.send_signal(number)
        stdout, stderr = process.communicate(timeout=90)
        took = time.monotonic() - sent
        print(f"exit {process.returncode} after {took:.1f} s")
        left = gone(marker, 15.0 if number == signal.SIGTERM else 3.0)
    finally:
        kill_session(process.pid)
        for pid, _ in marked(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert not left, f"left behind: {left}"
    if number == signal.SIGKILL:
        assert process.returncode == -signal.SIGKILL
        assert took < 10, took  # the sessions die with it, not when the forkserver gets round to exiting (13-15 s)
        return
    assert process.returncode == 143, (stdout.decode()[-2000:], stderr.decode()[-2000:])
    assert took < 60, took  # the operator's grace period is 30 s; kopf exits on SIGTERM in a few
    assert "Traceback" not in stderr.decode(), stderr.decode()[-2000:]
    assert stderr.decode().strip().splitlines()[-1] == "chaoskube: stopped by SIGTERM"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    chosen = int(re.search(r"running (\d+) of \d+ plans", stdout.decode()).group(1))
    assert summary["not_run"], summary  # the plans stopped by the signal (and any never started) are listed
    assert summary["plans_run"] == len(summary["results"]) and summary["plans_run"] + len(summary["not_run"]) == chosen, summary
    assert "**Interrupted**" in (out / "summary.md").read_text()
    stopped = [json.loads((directory / "result.json").read_text()) for directory in (out / "plans").iterdir() if (directory / "result.json").exists()]
    assert stopped, "a running session was stopped as a live run is, its result written"
    for result in stopped:  # its operator got SIGTERM and exited, and was reaped
        assert result["interrupted"] is True and result["live"]["stopped_by"] == "SIGTERM", result["live"]
        runs = result["live"]["operator"]["runs"]
        assert runs and all(entry.get("exit_code") is not None for entry in runs), runs

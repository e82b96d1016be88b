"""Helpers for the signal tests (tests/cli/test_signals.py, tests/real/test_real_signals.py)
and bench/signals.py: start ``chaoskube`` in a session of its own, wait for a marker, send
signals, and list what is left — processes of the session, listening ports, files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, sigint_ignored: bool = False) -> subprocess.Popen[bytes]:
    """``chaoskube ARGV`` in a new session (so every process it starts can be found, and a
    signal to it reaches it alone), output to a file beside nothing (collected at the end).
    ``sigint_ignored``: started with SIGINT ignored, as a shell's background job is."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200", **(env or {}))
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    return subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", *argv], cwd=cwd or ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=ignore)  # noqa: PLW1509 - no threads in the test process start it


def wait_for(condition: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {within_s} s waiting for {what}")


def send(process: subprocess.Popen[bytes], signals: Sequence[int], gap_s: float = 0.3) -> None:
    for number in signals:
        if process.poll() is None:
            process.send_signal(number)
            time.sleep(gap_s)


def session_processes(session: int) -> list[tuple[int, str]]:
    """(pid, command name) of every live process of ``session`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        state, sid = fields[0], int(fields[3])
        if sid == session and state != "Z":
            found.append((int(entry.name), name))
    return sorted(found)


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def left_behind(session: int, *, within_s: float = 15.0) -> list[tuple[int, str]]:
    """The processes of ``session`` still alive ``within_s`` after the command ended
    (workers and members are given that long to go)."""
    deadline = time.monotonic() + within_s
    while True:
        found = session_processes(session)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def kill_session(session: int) -> None:
    """The tests' own clean-up: whatever a failed test leaves."""
    for pid, _ in session_processes(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass

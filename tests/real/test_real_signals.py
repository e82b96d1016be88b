"""A real run stopped by SIGTERM, by Ctrl-C three times, or killed with SIGKILL leaves no
etcd process, no listening port and no data directory behind: members die with the run
(SIGKILL and reap; ``PR_SET_PDEATHSIG`` when the run itself is killed) and the working
directory (hundreds of MB of etcd data) is removed by the run or, when it cannot, by its
reaper (experiments/real/workdir.py). SIGTERM exits 143 with the result marked
interrupted, as Ctrl-C does with 130."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from chaoskube.experiments.real.workdir import PREFIX, sweep_stale
from chaoskube.sim.journal import read_journal
from tests.signals import kill_session, left_behind, listening_ports, send, start, wait_for


def workdirs(root: Path) -> list[Path]:
    return sorted(root.glob(f"{PREFIX}*"))


def ports_of(out: Path) -> list[int]:
    events = list(read_journal(out / "journal.jsonl"))
    started = next((event for event in events if event["type"] == "cluster" and event.get("event") == "started"), None)
    return [port for member in started["members"].values() for port in member.values()] if started else []


@pytest.mark.slow
@pytest.mark.parametrize(("signals", "code"), [([signal.SIGTERM], 143), ([signal.SIGINT] * 3, 130), ([signal.SIGKILL], -9)], ids=["sigterm", "sigint-x3", "sigkill"])
def test_a_stopped_real_run_leaves_nothing(etcd_binary, tmp_path, signals, code):
    scratch = tmp_path / "tmp"  # TMPDIR: where the run's working directory goes
    scratch.mkdir()
    out = tmp_path / "run"
    process = start(["run", "real-etcd-pause", "--seed", "1", "--out", str(out)], env={"TMPDIR": str(scratch), "CHAOSKUBE_ETCD": etcd_binary})
    try:
        wait_for(lambda: (out / "journal.jsonl").exists() and b'"name":"faults"' in (out / "journal.jsonl").read_bytes(), 90, "the fault phase")
        assert workdirs(scratch), "the members' data is under TMPDIR"
        ports = ports_of(out)
        send(process, signals)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        leftover = left_behind(process.pid, within_s=20)
        kill_session(process.pid)
    assert process.returncode == code, (stdout.decode()[-1500:], stderr.decode()[-1500:])
    assert not leftover, f"processes left: {leftover}"
    wait_for(lambda: not workdirs(scratch), 30, "the reaper to remove the working directory")
    assert not (listening_ports() & set(ports)), "a member's port still listens"
    if code > 0:
        payload = json.loads((out / "result.json").read_text())
        assert payload["interrupted"] is True and payload["mode"] == "real-time"


def test_stale_working_directories_of_dead_runs_are_swept(tmp_path):
    dead = tmp_path / f"{PREFIX}dead"
    dead.mkdir()
    (dead / "owner.pid").write_text("999999999\n")  # no such process
    (dead / "etcd-1").mkdir()
    mine = tmp_path / f"{PREFIX}mine"
    mine.mkdir()
    import os

    (mine / "owner.pid").write_text(f"{os.getpid()}\n")
    unrelated = tmp_path / f"{PREFIX}unrelated"
    unrelated.mkdir()  # no owner file: not ours to remove
    assert sweep_stale(tmp_path) == [dead]
    assert not dead.exists() and mine.exists() and unrelated.exists()

"""The working directory of a real run (etcd data directories, member logs), removed on
every way the run can end.

etcd members write their data directories (hundreds of MB each over a few minutes) under
one working directory. :func:`open_workdir` makes it and removes it when the block ends,
normally or by an exception (Ctrl-C, SIGTERM: experiments/signals.py). For the ways the
block cannot end — SIGKILL, or a second Ctrl-C that cuts the clean-up short — a *reaper*
guards it: a small process started with the directory, in its own session (so the
terminal's Ctrl-C and a process-group SIGTERM do not reach it), that waits on a pipe from
this process and removes the directory when the pipe closes, which the kernel does when
this process ends however it ends. The members themselves die with this process
(``PR_SET_PDEATHSIG``, experiments/real/cluster.py); the reaper retries the removal for
:data:`REAP_WITHIN_S` while they go. As a last resort, :func:`sweep_stale` removes the
working directories of earlier runs whose owner process is gone (each directory records
its owner's pid), at the start of every real run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "chaoskube-real-etcd-"
OWNER_FILE = "owner.pid"
#: How long the reaper keeps retrying the removal (members may still be exiting).
REAP_WITHIN_S = 30.0

# The reaper: block until stdin closes (this process ended), then remove the directory,
# retrying while files still appear (members exiting). Ignores SIGINT/SIGTERM/SIGHUP.
_REAPER = """
import shutil, signal, sys, time, os
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
path = sys.argv[1]
deadline = None
try:
    sys.stdin.buffer.read()
except BaseException:
    pass
deadline = time.monotonic() + float(sys.argv[2])
while os.path.exists(path) and time.monotonic() < deadline:
    shutil.rmtree(path, ignore_errors=True)
    if os.path.exists(path):
        time.sleep(0.2)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone: shared/FACTS.md, "kill -0 succeeds on a zombie")."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((line.split()[1] for line in status.splitlines() if line.startswith("State:")), "")
    return state != "Z"


def sweep_stale(root: str | Path | None = None) -> list[Path]:
    """Remove working directories of real runs whose owner process is gone; return them."""
    base = Path(root or tempfile.gettempdir())
    removed = []
    for path in sorted(base.glob(f"{PREFIX}*")):
        try:
            owner = int((path / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@contextlib.contextmanager
def open_workdir(root: str | Path | None = None) -> Iterator[Path]:
    """A fresh working directory, removed when the block ends and by the reaper however
    this process ends (module docstring)."""
    sweep_stale(root)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
    (path / OWNER_FILE).write_text(f"{os.getpid()}\n")
    reaper = subprocess.Popen(
        [sys.executable, "-c", _REAPER, str(path), str(REAP_WITHIN_S)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
    )
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        if reaper.stdin is not None:
            reaper.stdin.close()  # the reaper finds nothing left and exits
        try:
            reaper.wait(timeout=REAP_WITHIN_S + 5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - the reaper is bounded
            reaper.kill()
            reaper.wait()

"""Debian packages the tests need (etcd-server, chromium), installed on demand.

``require(package, find, what)``: the path ``find()`` answers; if it answers None and we
run as root, ``apt-get install`` the package first, serialized across pytest-xdist workers
with a lock file (one installs, the others wait). If still missing: in CI (the ``CI``
environment variable set) the test FAILS — a CI run must never pass by skipping — and
elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Callable

import pytest


def require(package: str, find: Callable[[], str | None], what: str, *, timeout_s: float = 900.0) -> str:
    found = find()
    if found is None and os.geteuid() == 0:
        with open(f"/tmp/chaoskube-{package}-install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = find()
            if found is None:
                command = f"apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {package}"
                completed = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout_s, check=False)
                found = find()
                if found is None:
                    pytest.fail(f"`{command}` did not give {what} (exit {completed.returncode}): {completed.stderr.strip()[-500:]}")
    if found is None:
        reason = f"no {what} (apt-get install {package}) and not root to install it"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set: this test must run, not skip: {reason}")
        pytest.skip(reason)
    return found

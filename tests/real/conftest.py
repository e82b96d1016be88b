"""Real-process tests need the etcd binary (Debian's etcd-server, 3.4.23).

The session fixture ``etcd_binary`` finds it; if it is missing and we run as root it
installs it with apt-get. Otherwise: in CI (the ``CI`` environment variable is set) the
test FAILS — a CI run must never pass by skipping the real cluster — and elsewhere it is
skipped with the reason.
"""

from __future__ import annotations

import fcntl
import os
import subprocess

import pytest

from faults.real_etcd import find_etcd_binary


@pytest.fixture(scope="session")
def etcd_binary() -> str:
    found = find_etcd_binary()
    if found is None and os.geteuid() == 0:
        # pytest-xdist runs this fixture in every worker: one installs, the others wait.
        with open("/tmp/chaoskube-etcd-install.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = find_etcd_binary()
            if found is None:
                command = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server"
                completed = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=600, check=False)
                found = find_etcd_binary()
                if found is None:
                    pytest.fail(f"`{command}` did not give an etcd binary (exit {completed.returncode}): {completed.stderr.strip()[-500:]}")
    if found is None:
        reason = "no etcd binary on PATH (apt-get install etcd-server, or set CHAOSKUBE_ETCD) and not root to install it"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set: real-process tests must run, not skip: {reason}")
        pytest.skip(reason)
    return found

"""Real-process tests need the etcd binary (Debian's etcd-server, 3.4.23).

The session fixture ``etcd_binary`` finds it; if it is missing and we run as root it
installs it with apt-get. Otherwise: in CI (the ``CI`` environment variable is set) the
test FAILS — a CI run must never pass by skipping the real cluster — and elsewhere it is
skipped with the reason.
"""

from __future__ import annotations

import pytest

from chaoskube.experiments.real.cluster import find_etcd_binary
from tests.debian import require


@pytest.fixture(scope="session")
def etcd_binary() -> str:
    return require("etcd-server", find_etcd_binary, "an etcd binary on PATH (or set CHAOSKUBE_ETCD)", timeout_s=600)

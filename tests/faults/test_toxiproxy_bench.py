"""bench/toxiproxy.py, short: the server under idle, slow and streaming clients stays up,
closes the idle and slow ones on its own, loses no byte, and its memory does not run away.
The 5-minute figures are in the report; this run is long enough (18 s) for the 15 s read
timeout to close connections."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_server_survives_idle_slow_and_streaming_clients():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "toxiproxy.py"), "--seconds", "18", "--idle", "100", "--slow", "20", "--streams", "20", "--bulk-seconds", "1"],
        capture_output=True, text=True, timeout=180, check=False,
    )
    figures = json.loads(completed.stdout)
    assert completed.returncode == 0, (figures, completed.stderr[-2000:])
    assert figures["server_alive"] and figures["api_requests_failed"] == 0 and figures["api_requests_ok"] > 30
    assert figures["stream_errors"] == 0 and figures["stream_mib_echoed"] > 1
    assert figures["idle_connections_closed_by_server"] >= 100, "each idle connection closed at the read timeout"
    assert figures["slow_clients_closed_by_server"] >= 20, "each slow client closed at the read timeout"
    assert figures["server_rss_mib_max"] < 300

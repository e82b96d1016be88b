"""protocol.timestamp keeps its last answer: it must still follow the time and the epoch."""

from __future__ import annotations

import datetime as dt

from chaoskube.api import protocol


def test_timestamp_follows_the_second_and_the_epoch() -> None:
    assert protocol.timestamp(61.9) == "2026-01-01T00:01:01Z"
    assert protocol.timestamp(61.2) == "2026-01-01T00:01:01Z"
    assert protocol.timestamp(62.0) == "2026-01-01T00:01:02Z"
    previous = protocol.set_epoch(dt.datetime(2030, 6, 1, 12, tzinfo=dt.timezone.utc))
    try:
        assert protocol.timestamp(62.0) == "2030-06-01T12:01:02Z"  # same second, new epoch: not the kept text
    finally:
        protocol.set_epoch(previous)
    assert protocol.timestamp(62.0) == "2026-01-01T00:01:02Z"

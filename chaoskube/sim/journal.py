"""The journal: the record of a run, one JSON object per line.

Every event has ``t`` (virtual seconds) and ``type``; keys are sorted (orjson
``OPT_SORT_KEYS``), so the bytes depend only on the events. The SHA-256 of those bytes is
the run's fingerprint. Lines are written to the file as they are recorded (buffered and
flushed every ``flush_every`` events and on close), so an interrupted run keeps what it
recorded.

Events are also retained in memory for the checkers, except the bulky network events
(``send``, ``deliver``, ``drop``) unless ``retain_network=True``; those stay in the file,
and :func:`read_journal` gives them back.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
NETWORK_EVENTS = frozenset({"send", "deliver", "drop"})


def encode_event(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event, option=_OPTIONS)


def encode_value(value: Any) -> bytes:
    """One value as the journal writes it inside an event."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS)


#: :func:`json_string`'s memo; a hot caller may look in it first (``JSON_STRINGS.get(text) or
#: json_string(text)``), saving the call.
JSON_STRINGS: dict[str, bytes] = {}


def json_string(text: str) -> bytes:
    """``encode_value(text)``, remembered: process names, ports and message kinds recur in
    every network event (at most 65,536 kept)."""
    encoded = JSON_STRINGS.get(text)
    if encoded is None:
        encoded = orjson.dumps(text)
        if len(JSON_STRINGS) < 65_536:
            JSON_STRINGS[text] = encoded
    return encoded


class Journal:
    def __init__(
        self,
        path: str | Path | None = None,
        *,
        retain_network: bool = False,
        flush_every: int = 4096,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self._file: BinaryIO | None = open(self.path, "wb") if self.path is not None else None  # noqa: SIM115
        self._hash = hashlib.sha256()
        self._buffer: list[bytes] = []
        self._flush_every = flush_every
        self._retain_network = retain_network
        self.events: list[dict[str, Any]] = []
        self.count = 0
        self.bytes = 0  # bytes written so far (the World's livelock watchdog bounds it)
        self.closed = False

    def write(self, event: dict[str, Any]) -> None:
        assert not self.closed, "journal is closed"
        # Lines are hashed in batches (the digest of the concatenation is the same): one
        # ``update`` per batch instead of one per event.
        line = orjson.dumps(event, option=_OPTIONS)
        self._buffer.append(line)
        self.count += 1
        self.bytes += len(line)
        if self._retain_network or event["type"] not in NETWORK_EVENTS:
            self.events.append(event)
        if len(self._buffer) >= self._flush_every:
            self.flush()

    @property
    def retain_network(self) -> bool:
        return self._retain_network

    def write_encoded(self, line: bytes) -> None:
        """Append a network event (``send``, ``deliver``, ``drop``) already encoded as
        :func:`encode_event` would, newline included; kept in memory only as the file's
        line, so only when network events are not retained (``retain_network``)."""
        assert not self.closed, "journal is closed"
        assert not self._retain_network, "a journal that retains network events needs them as dicts: use write"
        self._buffer.append(line)
        self.count += 1
        self.bytes += len(line)
        if len(self._buffer) >= self._flush_every:
            self.flush()

    def _take(self) -> bytes:
        """The buffered lines, now hashed, and the buffer emptied."""
        block = b"".join(self._buffer)
        self._buffer.clear()
        self._hash.update(block)
        return block

    def flush(self) -> None:
        if not self._buffer:
            return
        block = self._take()
        if self._file is not None:
            self._file.write(block)
            self._file.flush()

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        if self._file is not None:
            self._file.close()
        self.closed = True

    def redirect(self, path: str | Path) -> None:
        """Go on writing into ``path``, which starts with every line written so far: a
        run forked from a booted process (docs/campaigns.md) continues the boot's journal
        in its own directory, byte for byte what an unforked run would have written. The
        old file is left as it is, for other forks to copy too: flush before forking, or
        every child would write the boot's buffered lines into it again."""
        assert not self.closed, "journal is closed"
        self.flush()
        assert self._file is not None and self.path is not None, "only a journal written to a file can be redirected"
        target = Path(path)
        self._file.close()
        if target.resolve() != self.path.resolve():
            shutil.copyfile(self.path, target)
        self._file = open(target, "ab")  # noqa: SIM115
        self.path = target

    @property
    def sha256(self) -> str:
        self.flush()
        return self._hash.hexdigest()

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        wanted = frozenset(types)
        return [event for event in self.events if event["type"] in wanted]


def read_journal(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the events of a journal file, in order."""
    with open(path, "rb") as file:
        for line in file:
            if line.strip():
                yield orjson.loads(line)


def journal_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""Per-process disks that survive kill and restart.

A disk is a key-value store with a page cache: ``write`` and ``delete`` are visible to
``read`` at once but are durable only after ``await fsync()``, which takes
``fsync_latency_s`` of virtual time (a slow-disk fault raises it). When the process is
killed, unsynced writes survive (the kernel's page cache outlives a crashed process)
unless ``lose_unsynced_on_crash`` is on, which models a power loss or a disk that lies
about fsync: then everything not yet synced is gone. ``skip_fsync`` makes ``fsync`` return at
once without syncing anything (a disk that lies, or etcd's ``--unsafe-no-fsync``).

Values must be immutable (numbers, strings, bytes, tuples, frozen dataclasses): the disk
keeps references, and a component must not be able to change its "disk" by mutating
memory. ``read`` of a key never written returns ``default``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from chaoskube.sim.core import Sleeper

_DELETED = object()


class Disk:
    __slots__ = (
        "owner",
        "fsync_latency_s",
        "lose_unsynced_on_crash",
        "skip_fsync",
        "_durable",
        "_log",
        "_overlay",
        "_generation",
        "fsyncs",
        "writes",
    )

    def __init__(self, owner: str, *, fsync_latency_s: float = 0.001) -> None:
        self.owner = owner
        self.fsync_latency_s = fsync_latency_s
        self.lose_unsynced_on_crash = False
        self.skip_fsync = False
        self._durable: dict[str, Any] = {}
        self._log: list[tuple[int, str, Any]] = []  # (generation, key, value or _DELETED)
        self._overlay: dict[str, Any] = {}
        self._generation = 0
        self.fsyncs = 0
        self.writes = 0

    # -- reads and writes ---------------------------------------------------------------
    def read(self, key: str, default: Any = None) -> Any:
        overlay = self._overlay
        if key in overlay:
            value = overlay[key]
            return default if value is _DELETED else value
        return self._durable.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._generation += 1
        self._log.append((self._generation, key, value))
        self._overlay[key] = value
        self.writes += 1

    def delete(self, key: str) -> None:
        self._generation += 1
        self._log.append((self._generation, key, _DELETED))
        self._overlay[key] = _DELETED

    def keys(self, prefix: str = "") -> list[str]:
        """Live keys with ``prefix``, sorted."""
        live = {key for key in self._durable if key.startswith(prefix)}
        for key, value in self._overlay.items():
            if key.startswith(prefix):
                if value is _DELETED:
                    live.discard(key)
                else:
                    live.add(key)
        return sorted(live)

    def items(self, prefix: str = "") -> Iterator[tuple[str, Any]]:
        for key in self.keys(prefix):
            yield key, self.read(key)

    @property
    def unsynced(self) -> int:
        return len(self._log)

    # -- durability ---------------------------------------------------------------------
    async def fsync(self, process: Sleeper) -> None:
        """Make every write issued before this call durable, after the fsync latency.

        The wait runs on ``process``'s clock, so pausing the process stalls its fsync and
        killing it abandons the fsync (the writes stay unsynced)."""
        if self.skip_fsync:
            # The disk (or etcd's --unsafe-no-fsync) acknowledges without syncing.
            self.fsyncs += 1
            return
        generation = self._generation
        if self.fsync_latency_s > 0:
            await process.sleep_world(self.fsync_latency_s)
        self._sync_through(generation)
        self.fsyncs += 1

    def fsync_then(self, process: Sleeper, callback: Callable[[], None]) -> None:
        """:meth:`fsync` by callback, without a task: ``callback()`` runs from the world
        once every write issued before this call is durable (after the fsync latency, at
        the earliest in a later event of this instant). Held while ``process`` is paused;
        dropped if it is killed first (the writes stay unsynced)."""
        generation = self._generation
        skip = self.skip_fsync

        def done(_: Any) -> None:
            if not skip:
                self._sync_through(generation)
            self.fsyncs += 1
            callback()

        process.call_later_world(0.0 if skip else max(0.0, self.fsync_latency_s), done)

    def _sync_through(self, generation: int) -> None:
        count = 0
        for entry_generation, key, value in self._log:
            if entry_generation > generation:
                break
            if value is _DELETED:
                self._durable.pop(key, None)
            else:
                self._durable[key] = value
            count += 1
        if count:
            del self._log[:count]
            self._rebuild_overlay()

    def _rebuild_overlay(self) -> None:
        self._overlay = {}
        for _, key, value in self._log:
            self._overlay[key] = value

    def crash(self) -> int:
        """The owning process died. Returns how many unsynced writes were lost."""
        lost = 0
        if self.lose_unsynced_on_crash:
            lost = len(self._log)
            self._log.clear()
            self._overlay = {}
        else:
            self._sync_through(self._generation)
        return lost

    def statistics(self) -> dict[str, Any]:
        return {
            "keys": len(self.keys()),
            "unsynced": len(self._log),
            "fsyncs": self.fsyncs,
            "writes": self.writes,
            "fsync_latency_s": self.fsync_latency_s,
            "lose_unsynced_on_crash": self.lose_unsynced_on_crash,
            "skip_fsync": self.skip_fsync,
        }

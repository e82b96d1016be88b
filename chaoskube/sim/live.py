"""Live mode: virtual time paced to the wall clock, so real programs can take part.

A World normally runs as fast as its events can be computed: when every task is blocked,
it jumps to the next event. In live mode (:meth:`chaoskube.sim.World.go_live`) it jumps
only as far as the wall clock has gone since the moment it went live (times ``rate``);
an event due later is waited for in real time, and meanwhile Trio's run loop waits on
real I/O (sockets of the HTTP front, pipes of a user's process), which may wake a task at
any moment. So one virtual second takes one wall second, and an outside client talking
to the simulated API servers sees them answer on a human time scale.

How: the World's ``_advance`` (called by Trio whenever every task is blocked) asks the
:class:`WallPacer` for the virtual time the wall clock allows. When the next event (or a
Trio deadline) lies beyond it, the World moves its clock up to the allowed time and sets
the MockClock's ``autojump_threshold`` to the real seconds left until that event (at most
:data:`MAX_IDLE_WAIT_S`), so Trio waits on I/O for that long before asking again. A task
woken by real I/O calls :meth:`chaoskube.sim.World.catch_up` first, so what it does is
stamped with the time the wall clock says, never past an event still due.

What live mode gives up (and the reports say so): a live run is NOT replayable byte for
byte. The World's own randomness and event order stay seeded, but requests from outside
arrive when the outside sends them, and a slow machine makes virtual time lag behind the
wall clock (:attr:`WallPacer.max_lag_s` records by how much). What *can* be replayed is
recorded: the seed, the experiment, and every outside request in the journal.

This module is the one place in ``chaoskube.sim`` that reads the wall clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["MAX_IDLE_WAIT_S", "WallPacer"]

#: The longest Trio waits on real I/O before the World looks at the wall clock again.
#: Bounds how stale ``world.now`` is for a task woken by I/O that forgets ``catch_up``.
MAX_IDLE_WAIT_S = 0.02


class WallPacer:
    """Maps the wall clock to virtual time: ``virtual = origin + (wall - wall0) * rate``.

    ``clock`` is injectable for tests (a function returning seconds, monotonic)."""

    def __init__(self, origin: float, *, rate: float = 1.0, clock: Callable[[], float] = time.monotonic, wall0: float | None = None) -> None:
        """``wall0``: the clock reading that virtual time ``origin`` stands for (default:
        now). An earlier one makes virtual time that ran ahead of it wait for the wall."""
        assert rate > 0, "live time runs forwards"
        self.origin = origin
        self.rate = rate
        self._clock = clock
        self._wall0 = clock() if wall0 is None else wall0
        self.max_lag_s = 0.0  # how far virtual time fell behind the wall clock, at worst
        self.waits = 0

    def allowed(self) -> float:
        """The latest virtual time the wall clock allows now."""
        return self.origin + (self._clock() - self._wall0) * self.rate

    def real_seconds(self, virtual_seconds: float) -> float:
        """How long, in wall seconds, ``virtual_seconds`` of virtual time take."""
        return max(0.0, virtual_seconds) / self.rate

    def note_lag(self, now: float) -> None:
        """Record how far ``now`` (the virtual time reached) trails the wall clock."""
        lag = self.allowed() - now
        if lag > self.max_lag_s:
            self.max_lag_s = lag

    def statistics(self) -> dict[str, float]:
        return {"rate": self.rate, "max_lag_s": round(self.max_lag_s, 6), "idle_waits": self.waits}

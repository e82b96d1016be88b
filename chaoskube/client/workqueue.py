"""client-go's rate-limited work queue: a pure core and a thin Trio shell.

Follows kubernetes/client-go ``util/workqueue`` (``queue.go``, ``delaying_queue.go``,
``rate_limiting_queue.go``, ``default_rate_limiters.go``).

The contract, for a controller's workers (the numbered obligations of the caller):

1. ``item = await queue.get()`` hands out an item that no other worker holds. It never
   hands out an item that is being processed: an item added again while it is processed
   is only marked *dirty*, and goes back to the end of the queue when ``done`` is called.
2. Process it, then on success ``forget(item)`` (clear its back-off), on a retryable
   failure ``add_rate_limited(item)`` (per-item exponential back-off).
3. Always ``done(item)`` afterwards, success or not; until then the item is never handed
   out again.
4. An item is queued at most once (the queue is a set in FIFO order): adding a waiting
   item again does nothing.

Pure parts (no awaits, no clock reads, ``now`` is passed in): :class:`Queue` (FIFO + dirty
set + processing set + the delayed entries), :class:`ItemExponentialFailureRateLimiter`
(base 5 ms, cap 1000 s), :class:`BucketRateLimiter` (10 qps, burst 100, the semantics of
golang.org/x/time/rate's ``Reserve().Delay()``), :class:`MaxOfRateLimiter`, and
:func:`default_controller_rate_limiter` (client-go's ``DefaultControllerRateLimiter``:
the max of the two). The Trio shell is :class:`RateLimitingQueue`, which lives in one
simulated process and waits only through it.

Bounds. A queue holds at most ``capacity`` distinct items (waiting, dirty or delayed:
items are de-duplicated, so this bounds the number of distinct keys, i.e. objects, not the
number of adds). At the bound ``add`` / ``add_after`` of a *new* item raises
:class:`QueueFull`: the caller learns at once that work would be lost (client-go's queue is
unbounded; a controller here should treat ``QueueFull`` as a fatal sizing error). An item
already known is always accepted. The exponential limiter tracks at most ``capacity``
items that have failed and were not forgotten; at the bound ``when`` for a new item raises
:class:`QueueFull` too ("Remember to call Forget!", as client-go says).

Differences from client-go, on purpose: ``get`` after ``shut_down`` still drains what was
queued (as client-go), then raises :class:`QueueShutDown` instead of returning a flag.
Delayed entries are released by the shell's per-entry timers, which run on the process's
monotonic sleep (a jump of the process clock neither shortens nor lengthens a delay under
way); the comparison "keep the earlier of two delayed entries of one item" uses the
process clock, so a jump between the two ``add_after`` calls can keep the later one.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Protocol

import trio

if TYPE_CHECKING:
    from chaoskube.sim.process import Process

DEFAULT_CAPACITY = 10_000
# client-go DefaultControllerRateLimiter: NewItemExponentialFailureRateLimiter(5ms, 1000s)
# and BucketRateLimiter{rate.NewLimiter(rate.Limit(10), 100)}.
DEFAULT_BASE_DELAY_S = 0.005
DEFAULT_MAX_DELAY_S = 1000.0
DEFAULT_QPS = 10.0
DEFAULT_BURST = 100
# 2**64 times any base delay is above any cap anyone sets; it also keeps the float finite.
_MAX_EXPONENT = 64


class QueueFull(Exception):
    """The queue (or a rate limiter's table) is at its bound and the item is new."""


class QueueShutDown(Exception):
    """The queue was shut down and has nothing left to hand out."""


class QueueEmpty(Exception):
    """``Queue.get`` of the pure core found nothing ready (the shell waits instead)."""


class Queue:
    """The pure core: client-go's ``Type`` plus the delaying queue's waiting entries.

    Invariants (checked by :meth:`check_invariants`): every queued item is dirty and not
    being processed; every dirty item is queued or being processed; a delayed item is in
    the waiting table once, with its earliest ready time."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        assert capacity > 0, "a queue needs room for at least one item"
        self.capacity = capacity
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        # delayed entries: item -> ready time; the heap may hold stale (superseded) rows
        self._waiting: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._sequence = 0
        self._shutting_down = False
        self.adds = 0
        self.gets = 0
        self.requeues_after_done = 0

    # -- the FIFO with dirty and processing sets ------------------------------------------
    def _known(self) -> int:
        return len(self._dirty | self._processing | self._waiting.keys())

    def _admit(self, item: Hashable) -> None:
        if item in self._dirty or item in self._processing or item in self._waiting:
            return
        # the sum over-counts items in two places; only then count distinct ones
        if len(self._dirty) + len(self._processing) + len(self._waiting) >= self.capacity and self._known() >= self.capacity:
            raise QueueFull(f"work queue at its bound of {self.capacity} distinct items; {item!r} refused")

    def add(self, item: Hashable) -> bool:
        """Mark ``item`` as needing processing. Returns True if it was queued now (False:
        shut down, already queued, or being processed — then it is marked dirty and
        queued again on ``done``)."""
        if self._shutting_down or item in self._dirty:
            return False
        self._admit(item)
        self.adds += 1
        self._dirty.add(item)
        if item in self._processing:
            return False
        self._queue.append(item)
        return True

    def ready(self) -> bool:
        """True when ``get`` would hand out an item."""
        return bool(self._queue)

    def get(self) -> Hashable:
        """Hand out the oldest queued item and mark it as being processed. Raises
        :class:`QueueEmpty` when nothing is queued, :class:`QueueShutDown` when nothing
        is queued and the queue is shut down."""
        if not self._queue:
            if self._shutting_down:
                raise QueueShutDown("work queue is shut down")
            raise QueueEmpty("nothing queued")
        item = self._queue.popleft()
        assert item in self._dirty, f"queued item {item!r} is not dirty"
        assert item not in self._processing, f"queued item {item!r} is being processed"
        self._dirty.discard(item)
        self._processing.add(item)
        self.gets += 1
        return item

    def done(self, item: Hashable) -> bool:
        """Processing of ``item`` finished. Returns True if it was added again meanwhile
        and is queued again now."""
        assert item in self._processing, f"done({item!r}) for an item that is not being processed"
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self.requeues_after_done += 1
            return True
        return False

    def shut_down(self) -> None:
        """Ignore every later add; ``get`` drains what is queued, then raises
        :class:`QueueShutDown`. Delayed entries are dropped. Idempotent."""
        self._shutting_down = True
        self._waiting.clear()
        self._heap.clear()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def is_processing(self, item: Hashable) -> bool:
        return item in self._processing

    def is_dirty(self, item: Hashable) -> bool:
        return item in self._dirty

    def __len__(self) -> int:
        """Queued items (not those being processed, not the delayed ones)."""
        return len(self._queue)

    # -- the delaying queue -----------------------------------------------------------------
    def add_after(self, item: Hashable, ready_at: float, now: float) -> float | None:
        """Add ``item`` once ``now`` reaches ``ready_at``. An item already delayed keeps
        the earlier of the two ready times. Returns the ready time of the entry that is
        now waiting if this call created or moved it (the caller arms a timer for it),
        else None (added at once, kept the earlier entry, or shut down)."""
        if self._shutting_down:
            return None
        if ready_at <= now:
            self.add(item)
            return None
        existing = self._waiting.get(item)
        if existing is not None and existing <= ready_at:
            return None
        if existing is None:
            self._admit(item)
        self._waiting[item] = ready_at
        self._sequence += 1
        heapq.heappush(self._heap, (ready_at, self._sequence, item))
        return ready_at

    def release(self, item: Hashable, ready_at: float) -> bool:
        """The timer of the entry (``item``, ``ready_at``) fired: add the item if that
        entry is still the waiting one. Returns whether it was added."""
        if self._waiting.get(item) != ready_at:
            return False  # superseded by an earlier entry, already released, or shut down
        del self._waiting[item]
        self.add(item)
        return True

    def release_due(self, now: float) -> int:
        """Add every delayed item whose ready time has come. Returns how many."""
        released = 0
        heap = self._heap
        while heap and heap[0][0] <= now:
            ready_at, _, item = heapq.heappop(heap)
            if self.release(item, ready_at):
                released += 1
        return released

    def next_ready_at(self) -> float | None:
        heap = self._heap
        while heap and self._waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # stale row
        return heap[0][0] if heap else None

    def waiting(self) -> int:
        return len(self._waiting)

    def check_invariants(self) -> None:
        queued = set(self._queue)
        assert len(queued) == len(self._queue), "an item is queued twice"
        assert queued <= self._dirty, "a queued item is not dirty"
        assert not queued & self._processing, "a queued item is being processed"
        assert self._dirty <= queued | self._processing, "a dirty item is neither queued nor processing"
        assert self._known() <= self.capacity, "over capacity"

    def statistics(self) -> dict[str, Any]:
        return {
            "queued": len(self._queue),
            "processing": len(self._processing),
            "dirty": len(self._dirty),
            "waiting": len(self._waiting),
            "adds": self.adds,
            "gets": self.gets,
            "requeues_after_done": self.requeues_after_done,
            "shutting_down": self._shutting_down,
        }


# -- rate limiters (pure: ``now`` is passed in) ------------------------------------------------
class RateLimiter(Protocol):
    def when(self, item: Hashable, now: float) -> float:
        """How long (seconds) ``item`` should wait before it is added again."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (success, or giving up)."""

    def num_requeues(self, item: Hashable) -> int:
        """How many failures ``item`` has had since it was last forgotten."""


class ItemExponentialFailureRateLimiter:
    """``base_delay_s * 2**failures``, capped at ``max_delay_s`` (client-go: 5 ms, 1000 s):
    5 ms, 10 ms, 20 ms, ... reaching the cap after 18 failures."""

    def __init__(
        self,
        base_delay_s: float = DEFAULT_BASE_DELAY_S,
        max_delay_s: float = DEFAULT_MAX_DELAY_S,
        *,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        assert base_delay_s >= 0 and max_delay_s >= 0, "delays are not negative"
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.capacity = capacity
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable, now: float = 0.0) -> float:
        failures = self._failures.get(item)
        if failures is None:
            if len(self._failures) >= self.capacity:
                raise QueueFull(f"rate limiter tracks {self.capacity} failing items already; forget some")
            failures = 0
        self._failures[item] = failures + 1
        backoff = self.base_delay_s * 2.0 ** min(failures, _MAX_EXPONENT)
        return min(backoff, self.max_delay_s)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (not per item), as golang.org/x/time/rate's
    ``Limiter.Reserve().Delay()``: the bucket starts full with ``burst`` tokens and refills
    at ``qps``; each ``when`` takes one token, going into debt when there is none and
    answering how long until the debt is paid. A clock that moved backwards refills
    nothing (x/time/rate does the same)."""

    def __init__(self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST) -> None:
        assert qps > 0, "a bucket needs a positive rate"
        assert burst >= 1, "a bucket needs room for one token"
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: Hashable, now: float) -> float:
        if self._last is not None:
            elapsed = max(0.0, now - self._last)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        if self._last is None or now > self._last:
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter (each one counts the request) and answers the longest wait."""

    def __init__(self, *limiters: RateLimiter) -> None:
        assert limiters, "MaxOfRateLimiter needs at least one limiter"
        self.limiters = limiters

    def when(self, item: Hashable, now: float) -> float:
        return max(limiter.when(item, now) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(capacity: int = DEFAULT_CAPACITY) -> MaxOfRateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-item exponential (5 ms .. 1000 s)
    and an overall bucket (10 qps, burst 100), whichever asks for the longer wait."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(DEFAULT_BASE_DELAY_S, DEFAULT_MAX_DELAY_S, capacity=capacity),
        BucketRateLimiter(DEFAULT_QPS, DEFAULT_BURST),
    )


# -- the Trio shell ------------------------------------------------------------------------------
class RateLimitingQueue:
    """A rate-limited work queue inside one simulated process.

    Reads time only through ``process.now()``; a delayed add is a timer on the process
    (``process.call_later``), so it stops while the process is paused and dies with it
    when the process is killed (the queue is memory: a restarted controller relists)."""

    def __init__(
        self,
        process: Process,
        rate_limiter: RateLimiter | None = None,
        *,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self.process = process
        self.core = Queue(capacity)
        self.rate_limiter = rate_limiter if rate_limiter is not None else default_controller_rate_limiter(capacity)
        self._lot = trio.lowlevel.ParkingLot()

    async def get(self) -> Hashable:
        """Wait for an item and mark it as being processed. Raises
        :class:`QueueShutDown` once the queue is shut down and drained."""
        core = self.core
        while not core.ready():
            if core.shutting_down:
                raise QueueShutDown("work queue is shut down")
            await self._lot.park()
        item = core.get()
        if core.ready() and self._lot:
            self._lot.unpark()  # pass the turn on: never leave a ready item with parked workers
        return item

    def _wake(self) -> None:
        self._lot.unpark()

    def add(self, item: Hashable) -> None:
        if self.core.add(item):
            self._wake()

    def add_after(self, item: Hashable, delay_s: float) -> None:
        now = self.process.now()
        ready_at = self.core.add_after(item, now + delay_s, now)
        if ready_at is None:
            if self.core.ready():
                self._wake()
            return
        self.process.call_later(delay_s, self._fire, (item, ready_at))

    def _fire(self, entry: tuple[Hashable, float]) -> None:
        if self.core.release(*entry) and self.core.ready():
            self._wake()

    def add_rate_limited(self, item: Hashable) -> None:
        self.add_after(item, self.rate_limiter.when(item, self.process.now()))

    def forget(self, item: Hashable) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)

    def done(self, item: Hashable) -> None:
        if self.core.done(item):
            self._wake()

    def shut_down(self) -> None:
        self.core.shut_down()
        self._lot.unpark_all()

    @property
    def shutting_down(self) -> bool:
        return self.core.shutting_down

    def __len__(self) -> int:
        return len(self.core)

    def statistics(self) -> dict[str, Any]:
        return {**self.core.statistics(), "workers_waiting": len(self._lot)}

"""The World: one seed, one clock, one heap of events, and everything that runs.

How virtual time works. The world owns a heap of (time, sequence number, callback,
argument). Whenever every task is blocked, Trio's run loop asks the clock to "autojump";
the world has put its own ``_advance`` there (:func:`~chaoskube.sim.determinism.drive_virtual_time`),
which moves the clock to the earliest entry and runs every callback due at that instant:
a callback wakes a sleeping task, delivers a message, or applies a fault. The woken tasks
run; when they are all blocked again, the world moves on. Ties are broken by sequence number, so the order of events never depends
on Trio's task order. Trio's ``MockClock`` (autojump threshold 0) is kept equal to the
world's time, so ``trio.current_time()``, ``trio.sleep`` and ``trio.fail_after`` also work
in virtual time: a Trio deadline that falls before the next heap entry is honoured by
jumping the clock to it first.

A run: ``World(seed).run(main)`` makes Trio deterministic for this seed (see
:mod:`chaoskube.sim.determinism`), starts the driver and ``await main(world)``; when
``main`` returns, every process is cancelled and the journal is closed. If every task is
blocked and nothing is scheduled, the run is stuck: :class:`SimulationStuck` says when.

The livelock watchdog (:class:`Watchdog`): a run whose components keep each other busy
without letting virtual time move (two members bouncing zero-delay messages, a work queue
requeueing at once) would never end, and its journal would grow without bound. The World
counts the *events* since virtual time last moved on by :data:`PROGRESS_QUANTUM_S` (1 ms)
-- the callbacks it runs from its heap (every wake-up, delivery and timer of every
process goes through it) -- and ends the run with :class:`Livelock` when virtual time has
not advanced through ``max_events_per_instant`` of them (default 1,000,000; a busy
50-node run has a few thousand events in its busiest millisecond), when the journal passes ``max_journal_bytes`` (default 1 GiB:
a livelock in which time does advance, such as a hot loop of requests), or when the run
has taken ``max_wall_s`` seconds of wall-clock time (off by default; ``chaoskube
run|explore --max-wall``: the one place the wall clock is read, so only *whether* a run
ends early can depend on the machine; it is read every 4096 events of an instant and
on every journal write). A ``livelock`` event is journaled first: where it stuck
(virtual time, the callbacks and journal events that kept it busy); the journal so far
is kept. Not caught: a task that never blocks (spinning on Trio checkpoints, or not
awaiting at all) -- no component waits that way; counting Trio's scheduler passes to
catch it cost 5-25 % of the runtime's speed (bench/runtime.py).
Two seeds, one run. An experiment boots its cluster with a *boot seed* and runs the rest
with a *run seed* (docs/campaigns.md): ``World(boot_seed)``, then, once booted,
``await world.wait_quiescent(switch)`` where ``switch`` calls :meth:`World.reseed`. A
quiescent point is an instant where every task is blocked, every event due at this
virtual time has run and time is about to move: nothing is half-done, so the process
can be forked there (``switch`` may call ``os.fork``) and each copy continues with its
own run seed, exactly as an unforked run that reseeds at the same point.
"""

from __future__ import annotations

import gc
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from heapq import heappop, heappush
from pathlib import Path
from typing import Any, TypeVar

import outcome
import trio
import trio.testing
from loguru import logger

from chaoskube.sim.buggify import Buggify
from chaoskube.sim.determinism import drive_virtual_time, make_trio_deterministic, next_trio_deadline, runnable_tasks, thin_io_polls
from chaoskube.sim.journal import JSON_STRINGS, Journal, encode_value, json_string
from chaoskube.sim.live import MAX_IDLE_WAIT_S, WallPacer
from chaoskube.sim.network import LinkProfile, Network
from chaoskube.sim.process import Main, Process
from chaoskube.sim.randomness import RandomTree, derive_seed, seed_error

T = TypeVar("T")


#: ``gc.set_threshold`` during a run (see :meth:`World.run`): young objects collected once
#: per five million net allocations of tracked objects, older generations almost never.
#: At 100 000, 50-node runs spent ~1 s per seed rescanning young survivors; at 1,000,000
#: bench/cluster.py still spent 0.65 s of its 13.7 s in the collector, at 5,000,000
#: 0.07 s, for 26 MiB more peak memory (a run's cyclic garbage is small: 0.56 M objects).
RUN_GC_THRESHOLDS = (5_000_000, 50, 100)


class SimulationStuck(RuntimeError):
    """Every task is blocked and nothing is scheduled: the run can never make progress."""


class Livelock(RuntimeError):
    """The watchdog ended the run (module docstring): ``reason`` says which bound, ``where``
    what kept it busy."""

    def __init__(self, reason: str, where: dict[str, Any]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


@dataclass(frozen=True)
class Watchdog:
    """The livelock watchdog's bounds (module docstring); None switches one off."""

    max_events_per_instant: int | None = 1_000_000
    max_journal_bytes: int | None = 1 << 30
    max_wall_s: float | None = None


#: Virtual time "advances" for the watchdog when it has moved by at least this much since
#: the count began: a million events spread over less than a millisecond count as one
#: instant. (A loop that moves time by a microsecond a turn does progress: it reaches the
#: end of its experiment's phases; only the journal and wall-clock bounds apply to it.)
PROGRESS_QUANTUM_S = 0.001
#: Events between two readings of the wall clock (when ``max_wall_s`` is set).
_WALL_EVERY = 4096
#: How many of the last events before a bound are sampled to say what kept the run busy.
_SAMPLE = 20_000


class World:
    def __init__(
        self,
        seed: int,
        *,
        journal: str | Path | Journal | None = None,
        link: LinkProfile | None = None,
        watchdog: Watchdog | None = None,
    ) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, not {seed!r}")
        problem = seed_error(seed)
        if problem is not None:
            raise ValueError(problem)
        self.seed = seed
        self.random = RandomTree(seed)
        self.journal = journal if isinstance(journal, Journal) else Journal(journal)
        self._retains_network = self.journal.retain_network  # fixed for a journal's life
        self.clock = trio.testing.MockClock(autojump_threshold=0)
        self.now = 0.0
        self._stamped_now: float | None = None  # the ``now`` whose rounding ``_stamped_t`` holds
        self._stamped_t = 0.0
        self._stamped_t_json = b""  # ``_stamped_t`` as the journal writes it (b"" until needed)
        self.logger = logger.bind(seed=seed).patch(self._stamp)
        self.processes: dict[str, Process] = {}
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._sequence = 0
        self._call_ids = 0
        self._nursery: trio.Nursery = None  # type: ignore[assignment]  # set in run()
        self._watchdog: Any = None
        self._next_trio_deadline: Callable[[], float] = lambda: math.inf
        self._runnable: Callable[[], int] = lambda: 1
        self._at_quiescence: tuple[trio.lowlevel.Task, Callable[[], None]] | None = None
        self.boot_seed = seed  # the seed the world started with (World.reseed changes ``seed``)
        self.events_run = 0
        self.instants = 0  # distinct virtual instants the world moved to
        self.network = Network(self, link)
        self.finished = False
        self.watchdog = watchdog if watchdog is not None else Watchdog()
        self.livelock: Livelock | None = None
        self._instant_events = 0  # callbacks run since virtual time last moved on
        self._instant_start = 0.0  # when it last moved on (by PROGRESS_QUANTUM_S or more)
        limit = self.watchdog.max_events_per_instant
        # the count of this instant's events at which _check_watchdog looks next
        self._first_check = min(_WALL_EVERY if self.watchdog.max_wall_s is not None else math.inf, max(0, limit - _SAMPLE) if limit is not None else math.inf)
        self._next_check = self._first_check
        self._sample: Counter[str] | None = None
        self._wall_started = 0.0
        self.pacer: WallPacer | None = None  # set by go_live (chaoskube/sim/live.py)
        self.buggify = Buggify()  # off until started (chaoskube/sim/buggify.py)
        # journal event type -> hooks called with each event of that type (on_record)
        self._record_hooks: dict[str, list[Callable[[dict[str, Any]], None]]] = {}

    def _stamp(self, record: Any) -> None:
        record["extra"]["vt"] = self.now

    # -- scheduling ---------------------------------------------------------------------
    def call_at(self, when: float, callback: Callable[[Any], None], argument: Any = None) -> None:
        """Run ``callback(argument)`` at virtual time ``when`` (never earlier than now),
        from the driver, when every task is blocked. Callbacks must not block."""
        self._sequence += 1
        heappush(self._heap, (when if when > self.now else self.now, self._sequence, callback, argument))

    def call_later(self, delay_s: float, callback: Callable[[Any], None], argument: Any = None) -> None:
        self.call_at(self.now + delay_s, callback, argument)

    def next_call_id(self) -> int:
        """A new id for a request/response call (``Process.call``)."""
        self._call_ids += 1
        return self._call_ids

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start a task that belongs to the world, not to a process (a process's
        incarnation, the experiment runner's helpers): cancelled when the run ends."""
        self._nursery.start_soon(fn, *args, name=name)

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of world time (for the experiment runner and fault schedules,
        which are not processes: they are never paused)."""
        await self.sleep_until(self.now + seconds)

    async def sleep_until(self, when: float) -> None:
        task = trio.lowlevel.current_task()
        alive = [True]

        def wake(_: Any) -> None:
            if alive[0]:
                alive[0] = False
                trio.lowlevel.reschedule(task)

        self.call_at(when, wake)

        def abort(_: Any) -> trio.lowlevel.Abort:
            alive[0] = False
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    # -- live mode (chaoskube/sim/live.py) ----------------------------------------------
    def go_live(self, *, rate: float = 1.0, clock: Callable[[], float] | None = None, origin: float | None = None, wall0: float | None = None) -> WallPacer:
        """From now on, pace virtual time to the wall clock (``rate`` virtual seconds per
        wall second) and let real I/O wake tasks while the world waits. Irreversible for
        the run; journaled. A live run is not replayable byte for byte (see live.py).
        ``origin`` and ``wall0``: the virtual time and the clock reading that stand for each
        other (default: now and now); virtual time already past what they allow waits for
        the wall clock."""
        assert self.pacer is None, "the world is already live"
        self.pacer = WallPacer(self.now if origin is None else origin, rate=rate, wall0=wall0, **({"clock": clock} if clock is not None else {}))
        self.record("world", event="live", rate=rate)
        return self.pacer

    def catch_up(self) -> None:
        """Live mode: move the clock to what the wall clock allows, but never past an
        event or Trio deadline still due. For a task woken by real I/O, before it acts."""
        pacer = self.pacer
        if pacer is None:
            return
        target = pacer.allowed()
        if self._heap and self._heap[0][0] < target:
            target = self._heap[0][0]
        trio_deadline = self._next_trio_deadline()
        if trio_deadline < target:
            target = trio_deadline
        if target > self.now:
            self.clock.jump(max(0.0, target - self.clock.current_time()))
            self.now = target

    def _wait_for_wall(self, target: float) -> bool:
        """Live mode, from ``_advance``: True when ``target`` (the next instant) lies
        ahead of the wall clock; then the clock moves up to the wall and Trio is told to
        wait on real I/O until the target is due (at most MAX_IDLE_WAIT_S)."""
        pacer = self.pacer
        assert pacer is not None
        allowed = pacer.allowed()
        if target <= allowed:
            pacer.note_lag(target)
            if self.clock.autojump_threshold != 0:
                self.clock.autojump_threshold = 0
            return False
        if allowed > self.now:
            self.clock.jump(max(0.0, allowed - self.clock.current_time()))
            self.now = allowed
        wait = min(MAX_IDLE_WAIT_S, pacer.real_seconds(target - allowed))
        pacer.waits += 1
        self.clock.autojump_threshold = max(wait, 1e-4)
        return True

    def _advance(self) -> None:
        """Called by Trio when every task is blocked: move to the next instant and run
        everything due then, in (time, sequence) order. While those callbacks wake no
        task (a message handled at delivery, a timer that only sends), go on to the next
        instant here rather than through another pass of Trio's run loop. In live mode an
        instant ahead of the wall clock is waited for (``_wait_for_wall``)."""
        heap = self._heap
        runnable = self._runnable
        try:
            while True:
                next_time = heap[0][0] if heap else math.inf
                if next_time > self.now:
                    if self._at_quiescence is not None:  # wait_quiescent: run its callback here
                        task, callback = self._at_quiescence
                        self._at_quiescence = None
                        callback()
                        trio.lowlevel.reschedule(task)
                        return
                    # Honour Trio deadlines (trio.sleep, fail_after) that fall before our
                    # next event; only needed when time is about to move.
                    trio_deadline = self._next_trio_deadline()
                    if self.pacer is not None and self._wait_for_wall(min(next_time, trio_deadline)):
                        return  # live: not due yet; Trio waits on real I/O meanwhile
                    if trio_deadline <= next_time:
                        if trio_deadline == math.inf:
                            trio.lowlevel.reschedule(
                                self._watchdog,
                                outcome.Error(
                                    SimulationStuck(f"at t={self.now:.6f}s every task is blocked and nothing is scheduled")
                                ),
                            )
                            return
                        self.clock.jump(max(0.0, trio_deadline - self.clock.current_time()))
                        self.now = trio_deadline
                        return  # Trio fires its own deadline
                    self.clock.jump(max(0.0, next_time - self.clock.current_time()))
                    self.now = next_time
                    self.instants += 1
                    if next_time - self._instant_start >= PROGRESS_QUANTUM_S:  # time moved on
                        self._instant_start = next_time
                        self._instant_events = 0
                        self._sample = None
                        self._next_check = self._first_check
                # The counts are kept in locals while the callbacks run (two attribute
                # updates per event were ~2 % of a cluster run) and stored on the way out.
                start = count = self._instant_events
                next_check = self._next_check
                try:
                    while heap and heap[0][0] <= next_time:
                        _, _, callback, argument = heappop(heap)
                        callback(argument)
                        count += 1
                        if count >= next_check:
                            self._instant_events = count
                            self._check_watchdog(callback)
                            next_check = self._next_check
                            if self.livelock is not None:
                                return
                finally:
                    self.events_run += count - start
                    self._instant_events = count
                if runnable() or not heap:
                    return
        except Exception as error:  # noqa: BLE001 - a bug in a callback or message handler
            # Raising here would crash Trio's run loop; fail the run through the watchdog.
            trio.lowlevel.reschedule(self._watchdog, outcome.Error(error))

    # -- the livelock watchdog ------------------------------------------------------------
    def _check_watchdog(self, callback: Any) -> None:
        """Called from ``_advance`` when the events of this instant reach ``_next_check``:
        sample what keeps the run busy near the bound, trip it at the bound, read the wall
        clock every :data:`_WALL_EVERY` events (module docstring, "livelock watchdog")."""
        watchdog, count = self.watchdog, self._instant_events
        limit = watchdog.max_events_per_instant
        next_check = count + _WALL_EVERY
        if limit is not None:
            if count >= limit:
                self._trip(f"virtual time stood still at t={self.now:.6f} s (less than {PROGRESS_QUANTUM_S * 1000:g} ms of progress since t={self._instant_start:.6f}) through {count:,} events (bound {limit:,})")
                return
            if count >= limit - _SAMPLE:
                if self._sample is None:
                    self._sample = Counter()
                self._sample[getattr(callback, "__qualname__", type(callback).__name__)] += 1
                next_check = count + 1
            else:
                next_check = min(next_check, limit - _SAMPLE)
        self._next_check = next_check
        if watchdog.max_wall_s is not None and count % _WALL_EVERY == 0:
            self._check_wall()

    def _check_wall(self) -> None:
        elapsed = time.perf_counter() - self._wall_started
        if self.watchdog.max_wall_s is not None and elapsed > self.watchdog.max_wall_s:
            self._trip(f"the run took more than {self.watchdog.max_wall_s:g} s of wall-clock time (at t={self.now:.6f} s of virtual time)")

    def _trip(self, reason: str) -> None:
        """End the run with :class:`Livelock`: journal where it stuck, wake the watchdog
        task with the error (the nursery then cancels everything)."""
        if self.livelock is not None or self._watchdog is None:
            return
        recent = [event for event in self.journal.events[-200:]]
        types = Counter(event["type"] for event in recent)
        where = {
            "t": round(self.now, 9),
            "events_at_this_instant": self._instant_events,
            "journal_bytes": self.journal.bytes,
            "busiest_callbacks": [[name, count] for name, count in (self._sample or Counter()).most_common(8)],
            "recent_event_types": [[name, count] for name, count in types.most_common(8)],
            "last_events": [{key: value for key, value in event.items() if key in ("t", "type", "event", "process", "name", "client", "verb", "resource")} for event in recent[-10:]],
        }
        self.livelock = Livelock(reason, where)
        self.record("livelock", reason=reason, **where)
        self.journal.flush()
        trio.lowlevel.reschedule(self._watchdog, outcome.Error(self.livelock))
    async def wait_quiescent(self, callback: Callable[[], None]) -> None:
        """Block until the world is quiescent — every task blocked, every event due at
        this virtual time run, time about to move — call ``callback()`` there (from the
        driver, like a heap callback: it must not block, but it may fork the process),
        and return at the same virtual time. One waiter at a time."""
        assert self._at_quiescence is None, "wait_quiescent is already waited on"
        self._at_quiescence = (trio.lowlevel.current_task(), callback)

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._at_quiescence = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def reseed(self, seed: int) -> None:
        """End the boot: from now on every random draw, and Trio's task order, come from
        ``seed`` (the run seed). Generators handed out during the boot are re-seeded in
        place (``RandomTree.reseed``). Journaled as ``world``/``reseed``. Call it at a
        quiescent point (:meth:`wait_quiescent`) so that where it lands is well defined."""
        self.random.reseed(seed, "run")
        make_trio_deterministic(derive_seed(seed, "run/trio-scheduler"))
        self.seed = seed
        self.record("world", event="reseed", seed=seed)

    def restart_wall_clock(self) -> None:
        """Count the watchdog's ``max_wall_s`` from now (a run forked from a shared boot
        is charged its own wall-clock time only). Changes nothing in the journal."""
        self._wall_started = time.perf_counter()

    async def _watch(self) -> None:
        """Parked for the whole run; woken with an error when the run is stuck."""
        self._watchdog = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.SUCCEEDED)

    # -- processes ----------------------------------------------------------------------
    def spawn(
        self,
        name: str,
        main: Main,
        *,
        role: str | None = None,
        zone: str | None = None,
        labels: dict[str, str] | None = None,
        start: bool = True,
    ) -> Process:
        """Create a process named ``name`` (unique) running ``main`` and start it."""
        if name in self.processes:
            raise ValueError(f"a process named {name!r} already exists")
        process = Process(self, name, main, role=role, zone=zone, labels=labels)
        self.processes[name] = process
        if start:
            process.start()
        return process

    def process(self, name: str) -> Process:
        try:
            return self.processes[name]
        except KeyError:
            raise KeyError(f"no process named {name!r}; known: {', '.join(sorted(self.processes))}") from None

    # -- journal ------------------------------------------------------------------------
    def record(self, type: str, **fields: Any) -> None:  # noqa: A002 - the journal's field name
        """Append one event to the journal, stamped with the virtual time."""
        fields["t"] = self._journal_t()
        fields["type"] = type
        journal = self.journal
        journal.write(fields)
        if self._record_hooks:  # an armed trigger (faults/triggers.py); empty, one test
            hooks = self._record_hooks.get(type)
            if hooks:
                for hook in tuple(hooks):
                    hook(fields)
        self._check_journal(journal)

    def on_record(self, type: str, hook: Callable[[dict[str, Any]], None]) -> Callable[[], None]:  # noqa: A002
        """Call ``hook(event)`` right after each event of ``type`` is journaled (the dict
        holds ``t`` and ``type`` too; do not change it); returns a function that removes
        the hook. Hooks run inside ``record``, in the component that records: they must
        not block, and should only look and schedule (``call_later``), never act, so the
        component's step finishes first. While no hook is set, ``record`` pays one test."""
        hooks = self._record_hooks.setdefault(type, [])
        hooks.append(hook)

        def remove() -> None:
            if hook in hooks:
                hooks.remove(hook)
            if not hooks and self._record_hooks.get(type) is hooks:
                del self._record_hooks[type]

        return remove

    def record_send(self, message_id: int, src: str, dst: str, port: str, kind: str) -> None:
        """``record("send", id=..., src=..., dst=..., port=..., kind=...)``, the same bytes,
        written without building the event: the network's send and deliver events are
        nine in ten of a cluster's journal (bench/cluster.py: 445k of 498k)."""
        if self._record_hooks or self._retains_network:
            self.record("send", id=message_id, src=src, dst=dst, port=port, kind=kind)
            return
        strings = JSON_STRINGS  # json_string's memo, looked in first: four calls saved per send
        t = self._stamped_t_json if self.now is self._stamped_now else b""
        self._write_line(
            b'{"dst":%b,"id":%d,"kind":%b,"port":%b,"src":%b,"t":%b,"type":"send"}\n'
            % (strings.get(dst) or json_string(dst), message_id, strings.get(kind) or json_string(kind), strings.get(port) or json_string(port),
               strings.get(src) or json_string(src), t or self._t_json())
        )

    def record_deliver(self, message_id: int, src: str, dst: str) -> None:
        """``record("deliver", id=..., src=..., dst=...)``, as :meth:`record_send`."""
        if self._record_hooks or self._retains_network:
            self.record("deliver", id=message_id, src=src, dst=dst)
            return
        strings = JSON_STRINGS
        t = self._stamped_t_json if self.now is self._stamped_now else b""
        self._write_line(
            b'{"dst":%b,"id":%d,"src":%b,"t":%b,"type":"deliver"}\n'
            % (strings.get(dst) or json_string(dst), message_id, strings.get(src) or json_string(src), t or self._t_json())
        )

    def _journal_t(self) -> float:
        """The virtual time as the journal stamps it (rounded to the nanosecond)."""
        now = self.now
        if now is not self._stamped_now:  # the same float object: the same instant, rounded once
            self._stamped_now = now
            self._stamped_t = round(now, 9)
            self._stamped_t_json = b""
        return self._stamped_t

    def _t_json(self) -> bytes:
        """:meth:`_journal_t` encoded, once per instant."""
        t = self._journal_t()
        if not self._stamped_t_json:
            self._stamped_t_json = encode_value(t)
        return self._stamped_t_json

    def _write_line(self, line: bytes) -> None:
        """The end of :meth:`record` for an event already encoded (no hooks armed)."""
        journal = self.journal
        journal.write_encoded(line)
        self._check_journal(journal)

    def _check_journal(self, journal: Journal) -> None:
        """The watchdog's bounds on the journal's size and on wall-clock time."""
        watchdog = self.watchdog
        if watchdog.max_journal_bytes is not None and journal.bytes > watchdog.max_journal_bytes and self.livelock is None:
            self._trip(f"the journal passed {watchdog.max_journal_bytes:,} bytes at t={self.now:.6f} s")
        elif watchdog.max_wall_s is not None and journal.count % _WALL_EVERY == 0 and self.livelock is None:
            self._check_wall()

    # -- running ------------------------------------------------------------------------
    def run(self, main: Callable[[World], Awaitable[T]]) -> T:
        """Run ``main(world)`` to completion in virtual time; returns what it returns."""
        assert not self.finished, "a World runs once"
        make_trio_deterministic(derive_seed(self.seed, "trio-scheduler"))
        self.record("world", event="start", seed=self.seed)
        # A run keeps many long-lived objects (journal events, MVCC history, logs); the
        # cyclic GC's full collections rescan them all, which made long runs slow down
        # as they grew (etcd bench: 10x -> 14x over 300 s). Freeze what exists, collect
        # young objects less often, and restore the settings afterwards.
        thresholds = gc.get_threshold()
        # Garbage of earlier runs (their tasks, async generators, scopes) is collected now,
        # not at a moment that depends on allocation counts during this run: a collection
        # mid-run can run an old async generator's finalizer and shift task order. What an
        # earlier run left frozen (see ``finally``) is unfrozen first, so it is collected too.
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        gc.set_threshold(*RUN_GC_THRESHOLDS)
        try:
            return trio.run(self._root, main, clock=self.clock)
        except BaseExceptionGroup as group:
            # One failure (a component bug, Ctrl-C) is the common case: show it plainly.
            leaf: BaseException = group
            while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]
            if leaf is group:
                raise
            raise leaf from group
        finally:
            # Everything the run made stays frozen (its cyclic garbage too) until the next
            # World.run, which unfreezes and collects it in one full collection. Unfreezing
            # here instead made the caller's first collections (the checkers', the
            # reports') rescan the whole world and free the run's garbage: about 1 s per
            # seed of a 50-node run (bench/explore.py). The cost: a process that never runs
            # another World keeps the last run's cyclic garbage until it exits.
            gc.freeze()
            gc.set_threshold(*thresholds)
            self.finished = True
            self.journal.close()

    async def _root(self, main: Callable[[World], Awaitable[T]]) -> T:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._next_trio_deadline = next_trio_deadline()
            self._runnable = runnable_tasks()
            drive_virtual_time(self.clock, self._advance)
            thin_io_polls()
            nursery.start_soon(self._watch, name="chaoskube-watchdog")
            self._wall_started = time.perf_counter()
            result = await main(self)
            self.record("world", event="stop", events=self.events_run)
            nursery.cancel_scope.cancel()
        return result

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the journal so far: the run's fingerprint."""
        return self.journal.sha256

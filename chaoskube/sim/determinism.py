"""The one module that touches Trio's private names: deterministic scheduling and the
hook through which the World drives virtual time.

**Deterministic scheduling.** Trio is not deterministic by default (its own test
``test_the_trio_scheduler_is_not_deterministic`` says so). In trio 0.35 two things vary
between runs (``trio/_core/_run.py``): each batch of runnable tasks is shuffled with the
module-level ``random.Random`` ``_r``, and timers due at the same instant are ordered by
``id(cancel_scope)``, a memory address. The recipe (checked on this machine, see
shared/FACTS.md): set ``_ALLOW_DETERMINISTIC_SCHEDULING = True`` (batches are then sorted
by task creation counter before the seeded shuffle) AND seed ``_r`` before every
``trio.run`` (we install a fresh seeded generator, out of Hypothesis's reach);
:func:`make_trio_deterministic` is the one function that does it. The second
source (deadline ties) is avoided by design: virtual time is owned by the World's own heap,
keyed by (time, sequence number), not by Trio's deadlines.

**Driving virtual time.** With ``MockClock(autojump_threshold=0)``, Trio's run loop calls
``clock._autojump()`` whenever every task is blocked. :func:`drive_virtual_time` puts the
World's ``advance`` there (on the clock *instance*: MockClock refuses subclasses), so the
World moves time to its next event and wakes the tasks due at that instant in the same loop
iteration, with no driver task. Measured here: 2.1x the events per second of a driver task
parked in ``wait_all_tasks_blocked`` (bench/runtime.py).

**Fewer I/O polls.** Trio polls epoll once per batch of tasks; in virtual time those
polls cannot block and find nothing. :func:`thin_io_polls` makes one in
:data:`POLL_EVERY` (and every one while Trio's entry queue holds work), which changes no
simulated event.

**Forking inside a run.** A campaign boots a cluster once and forks a child per seed at a
quiescent point (``World.wait_quiescent``), inside ``trio.run``. ``fork`` shares the
run's epoll instance and its wake-up socket pairs between the copies: one child ending
its run would unregister descriptors in the others' epoll, and a byte one copy writes to
a wake-up socket could wake another's task. :func:`isolate_forked_run` gives the child
its own (the same descriptor numbers, ``dup2``-ed onto fresh ones, re-registered in a
fresh epoll), so nothing one copy does reaches another's scheduler.

All of this rests on private names (as do ``next_trio_deadline`` and ``runnable_tasks``, cheap
peeks at the run queue and the deadline heap), so ``tests/sim/test_determinism_guard.py`` runs a scenario full
of timer ties in two subprocesses and compares journal fingerprints, and checks that the
hook is called: an upgrade that breaks either fails loudly there. trio is pinned to 0.35.x
in pyproject.toml for the same reason.
"""

from __future__ import annotations

import os
import random
import select
import socket
import threading
from collections.abc import Callable

import trio
import trio._core._run as _trio_run
import trio.testing


def make_trio_deterministic(seed: int) -> None:
    """Make the next ``trio.run`` in this thread schedule tasks in an order fixed by ``seed``."""
    assert hasattr(_trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING"), (
        f"trio {trio.__version__} no longer has _ALLOW_DETERMINISTIC_SCHEDULING; "
        "the determinism recipe in chaoskube/sim/determinism.py must be redone"
    )
    assert hasattr(_trio_run, "_r"), f"trio {trio.__version__} no longer has _run._r"
    _trio_run._ALLOW_DETERMINISTIC_SCHEDULING = True  # type: ignore[misc]
    # Not a re-seed of the shared ``_r``: Hypothesis registers Trio's original ``_r`` and
    # re-seeds / restores it around every example from its own thread, and a World that
    # runs in a background thread (chaoskube.testing) may overlap the end of an earlier
    # one's. Each thread gets its own seeded generator.
    if not isinstance(_trio_run._r, _PerThreadRandom):
        _trio_run._r = _PerThreadRandom()  # type: ignore[attr-defined]
    _trio_run._r.seed_thread(seed)


class _PerThreadRandom:
    """Stands in for Trio's module-level ``_r`` (it calls ``shuffle`` and ``random``): one
    ``random.Random`` per thread, so concurrent Trio loops in different threads cannot
    draw from each other's sequence."""

    def __init__(self) -> None:
        self._local = threading.local()

    def seed_thread(self, seed: int) -> None:
        self._local.generator = random.Random(seed)

    def _generator(self) -> random.Random:
        generator = getattr(self._local, "generator", None)
        if generator is None:
            generator = self._local.generator = random.Random(0)
        return generator

    def shuffle(self, items: list) -> None:
        self._generator().shuffle(items)

    def random(self) -> float:
        return self._generator().random()

    def __getattr__(self, name: str):
        return getattr(self._generator(), name)


def drive_virtual_time(clock: trio.testing.MockClock, advance: Callable[[], None]) -> None:
    """Have Trio call ``advance()`` whenever every task is blocked (see the module doc)."""
    assert type(clock) is trio.testing.MockClock
    assert callable(getattr(clock, "_autojump", None)), (
        f"trio {trio.__version__}: MockClock._autojump is gone; redo drive_virtual_time"
    )
    clock._autojump = advance  # type: ignore[method-assign]


def runnable_tasks() -> Callable[[], int]:
    """A cheap function returning how many Trio tasks are runnable now. The World uses it
    to run several instants in one ``_advance`` when callbacks woke no task (a message
    handled at delivery), instead of one pass of Trio's run loop per instant. Call from
    inside ``trio.run``."""
    runq = _trio_run.GLOBAL_RUN_CONTEXT.runner.runq
    return runq.__len__


def next_trio_deadline() -> Callable[[], float]:
    """A cheap function returning the earliest pending Trio deadline (``inf`` if none).

    The public ``trio.lowlevel.current_statistics()`` gives the same figure but costs 4 µs
    (it also gathers I/O statistics); this is called once per instant of virtual time.
    Call from inside ``trio.run``."""
    deadlines = _trio_run.GLOBAL_RUN_CONTEXT.runner.deadlines
    return deadlines.next_deadline


#: A run loop's non-blocking I/O polls: one in this many is made (see :func:`thin_io_polls`).
POLL_EVERY = 64


class _ThinPolls:
    """Stands in for a Trio run's ``select.epoll``: a poll that may not block (timeout 0,
    which is every poll of a run in virtual time) is made once in :data:`POLL_EVERY`;
    the others answer "nothing ready". A poll that may block is always made, and so is
    one while Trio's entry queue holds work (``run_sync_soon``: an async generator to
    finalize, a signal): that work runs exactly when it would have."""

    __slots__ = ("_entries", "_skipped", "_urgent", "epoll")

    def __init__(self, epoll: select.epoll, entries: object) -> None:
        self.epoll = epoll
        self._entries = entries.queue  # type: ignore[attr-defined]
        self._urgent = entries.idempotent_queue  # type: ignore[attr-defined]
        self._skipped = 0

    def poll(self, timeout: float = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        if timeout == 0 and not self._entries and not self._urgent:
            self._skipped += 1
            if self._skipped < POLL_EVERY:
                return []
        self._skipped = 0
        return self.epoll.poll(timeout, maxevents)

    def __getattr__(self, name: str):  # register, modify, unregister, fileno, close
        return getattr(self.epoll, name)


def thin_io_polls() -> None:
    """Make the running Trio loop skip most of its non-blocking I/O polls.

    Trio's run loop polls epoll once per batch of tasks (``trio.run``: ``get_events``
    after each ``unrolled_run`` step); in virtual time every poll has timeout 0 and, in a
    simulation, finds nothing: it was 5 % of a 50-node run's CPU (bench/cluster.py), a
    system call per batch. Skipping 63 of 64 delays only real I/O (a live run's sockets,
    a Ctrl-C delivered through Trio's wake-up socket) by as many batches -- microseconds
    -- and changes no simulated event: nothing in virtual time waits on a descriptor.
    A poll that may block (live mode, waiting for the wall clock) is always made. Call
    from inside ``trio.run``."""
    runner = _trio_run.GLOBAL_RUN_CONTEXT.runner
    io = runner.io_manager
    assert isinstance(getattr(io, "_epoll", None), select.epoll), f"trio {trio.__version__}: the I/O manager is not epoll-based; redo thin_io_polls"
    assert hasattr(runner.entry_queue, "queue") and hasattr(runner.entry_queue, "idempotent_queue"), f"trio {trio.__version__}: redo thin_io_polls"
    io._epoll = _ThinPolls(io._epoll, runner.entry_queue)


def _epoll_of(io: object) -> select.epoll:
    epoll = getattr(io, "_epoll", None)
    return epoll.epoll if isinstance(epoll, _ThinPolls) else epoll  # type: ignore[return-value]


def isolate_forked_run() -> None:
    """In a child just forked inside ``trio.run`` (see the module doc): give this copy of
    the run its own epoll instance and wake-up sockets. Linux (epoll) only; call from
    inside ``trio.run``, in the child, before it runs anything else."""
    runner = _trio_run.GLOBAL_RUN_CONTEXT.runner
    io = runner.io_manager
    assert isinstance(_epoll_of(io), select.epoll), f"trio {trio.__version__}: the I/O manager is not epoll-based; redo isolate_forked_run"
    for pair in (io._force_wakeup, runner.entry_queue.wakeup):
        wakeup, write = socket.socketpair()
        for new, old in ((wakeup, pair.wakeup_sock), (write, pair.write_sock)):
            new.setblocking(False)
            os.dup2(new.fileno(), old.fileno(), inheritable=False)  # the old number now names this copy's own socket
            new.close()
        pair.wakeup_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
        pair.write_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)
    fresh = select.epoll()
    os.dup2(fresh.fileno(), io._epoll.fileno(), inheritable=False)
    fresh.close()
    io._epoll.register(io._force_wakeup_fd, select.EPOLLIN)
    for fd, waiters in io._registered.items():
        if waiters.current_flags:
            io._epoll.register(fd, waiters.current_flags | select.EPOLLONESHOT)

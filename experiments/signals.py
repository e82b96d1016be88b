"""SIGTERM handled like SIGINT, for every command that runs something.

``kill PID``, ``timeout``, systemd and CI runners stop a process with SIGTERM; Python's
default for it is to die at once, which left a run without ``result.json``, its journal
cut at the last flush and, in real mode, etcd data directories behind. Inside
:func:`termination_as_interrupt` a SIGTERM takes exactly the path a Ctrl-C takes: the
handler calls whatever SIGINT handler is installed at that moment — Python's
(``KeyboardInterrupt``) or, inside ``trio.run``, Trio's, which raises or delivers
``KeyboardInterrupt`` only where that is safe — so the run stops, is marked interrupted,
its journal is flushed and closed, real processes are stopped and their data removed, and
what finished is written. The command then exits 143 (128 + SIGTERM, as a shell reports a
process killed by it) instead of 130 (Ctrl-C).

A second signal while the first is being handled does not cut the clean-up short: a
second SIGTERM is answered with one line on stderr and otherwise ignored; so is a second
SIGINT once the interrupt has been caught (:func:`stopping_now`, called where each kind of
run and the campaign catch ``KeyboardInterrupt``). Until then SIGINT is left to Python and
Trio (Trio installs its own handler only where it finds Python's, so it cannot be
wrapped). The clean-up does not depend on finishing anyway. Files are written whole or not at all (written aside, then renamed); real etcd
members die with their parent (``PR_SET_PDEATHSIG``) and a real run's data directories
are removed by its reaper process (experiments/real/workdir.py) whenever the run's process
ends, SIGKILL included.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Linux ``prctl`` option: the signal a process gets when its parent dies.
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child process: SIGKILL it when its parent dies (Linux
    ``prctl(PR_SET_PDEATHSIG)``), so that a SIGKILLed chaoskube takes its real etcd members,
    its live cluster and its forked reference runs along. Raises OSError where the call
    is missing or fails."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except AttributeError as error:
        raise OSError("prctl is not available here") from error
    if prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")


#: The commands running in this process (termination_as_interrupt blocks), innermost last.
_INSIDE: list[Stopping] = []

#: Exit codes of an interrupted command: 128 + the signal number, as shells report them.
EXIT_INTERRUPTED = 130  # SIGINT
EXIT_TERMINATED = 143  # SIGTERM


@dataclass
class Stopping:
    """What :func:`termination_as_interrupt` saw: the first signal, if any."""

    first: int | None = None

    @property
    def terminated(self) -> bool:
        return self.first == signal.SIGTERM

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.terminated else EXIT_INTERRUPTED


@contextlib.contextmanager
def termination_as_interrupt() -> Iterator[Stopping]:
    """Within the block, SIGTERM interrupts like SIGINT (module docstring). Outside the
    main thread it does nothing."""
    state = Stopping()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        if state.first is not None:
            print("chaoskube: SIGTERM again: still stopping (writing what finished, stopping processes); SIGKILL abandons that", file=sys.stderr, flush=True)
            return
        state.first = signum
        handler = signal.getsignal(signal.SIGINT)  # Python's, or Trio's inside trio.run
        if not callable(handler) or handler is on_sigterm:
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # A process started with SIGINT ignored (a background job of a non-interactive shell,
    # a test runner's worker) would ignore Ctrl-C, and its SIGTERM would raise
    # KeyboardInterrupt wherever it landed -- inside Trio's own code a TrioInternalError --
    # because Trio protects only a run that finds Python's handler installed. The command
    # stops on both, so it installs Python's handler for its duration.
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    _INSIDE.append(state)
    try:
        yield state
    finally:
        _INSIDE.remove(state)
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def note_interrupt(state: Stopping) -> None:
    """Record that a SIGINT (a KeyboardInterrupt that did not come from SIGTERM) stopped
    the command, so :attr:`Stopping.exit_code` is 130."""
    if state.first is None:
        state.first = signal.SIGINT


def note_signal(signum: int) -> None:
    """Record the signal that stops the innermost command (the latest one counts: a second
    SIGTERM that aborts ``chaoskube serve`` after a first Ctrl-C exits 143), for a command
    that receives its signals itself (inside Trio's ``open_signal_receiver``, where this
    module's SIGTERM handler is not called). Outside a command: nothing."""
    if _INSIDE:
        _INSIDE[-1].first = signum


def _still_stopping(signum: int, frame: Any) -> None:
    print(f"chaoskube: {signal.Signals(signum).name} again: still stopping (writing what finished, stopping processes); SIGKILL abandons that", file=sys.stderr, flush=True)


def stopping_now() -> None:
    """The process is stopping (an interrupt was caught): answer further Ctrl-C with a line
    instead of a KeyboardInterrupt in the middle of the clean-up (which is bounded). Only
    in the main thread (signal handlers can only be set there) of a command (inside
    :func:`termination_as_interrupt`: a library caller's own Ctrl-C is left alone)."""
    if _INSIDE and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _still_stopping)


def ignore_further_signals() -> None:
    """At the end of an interrupted command: SIGINT and SIGTERM ignored at the OS level, so
    one that arrives while the interpreter shuts down (when Python restores the default
    handlers it had replaced) does not kill the process and change its exit code."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

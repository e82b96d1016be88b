"""Simulated processes: the context every component runs in.

A component is an ``async def main(process)`` that builds itself from ``process.disk``
(its memory is lost on every kill) and then serves. It reads time only through
``process.now()`` and waits only through ``process.sleep()`` / ``process.receive()`` /
``process.call()``, so the runtime can pause it, skew its clock and cut its links.

Lifecycle (each transition is journaled as ``{"type": "process", "event": ...}``):

- ``start``   — run ``main`` in a fresh incarnation.
- ``kill``    — cancel every task of the process; memory, inboxes and pending calls are
  lost; the disk survives (minus unsynced writes if ``disk.lose_unsynced_on_crash``).
- ``restart`` — start again from the disk.
- ``pause`` / ``resume`` — frozen as by SIGSTOP or a long GC pause: no delivery, timers
  stop; on resume everything that fell due fires at once and the process sees time jump.
  A task already woken at the instant of the pause finishes that one step.
- clock: ``now()`` is ``offset + world time × rate`` (rate = 1 + drift); ``jump_clock``
  moves it, ``set_drift`` changes its rate from now on. ``sleep(d)`` waits ``d`` seconds
  of the process's own clock rate; a jump does not shorten a sleep already under way
  (like a monotonic clock), but it changes what ``now()`` reads afterwards.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import outcome
import trio
from trio.lowlevel import Abort, checkpoint_if_cancelled, current_task, reschedule, wait_task_rescheduled

from chaoskube.sim.core import REPLY_PORT, Message, Runtime
from chaoskube.sim.disk import Disk
from chaoskube.sim.outcomes import Failed, Ok, Outcome, Unknown

Main = Callable[["Process"], Awaitable[Any]]
INBOX_CAPACITY = 65536


class State(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    EXITED = "exited"


class Inbox:
    """The messages a process received on one port, in delivery order.

    Bounded by ``INBOX_CAPACITY``: at the bound a new message is dropped (journaled as a
    drop with reason ``inbox-full``), as a full socket buffer would."""

    __slots__ = ("_queue", "_waiters", "process", "port")

    def __init__(self, process: Process, port: str) -> None:
        self.process = process
        self.port = port
        self._queue: deque[Message] = deque()
        self._waiters: deque[Any] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    def _put(self, message: Message) -> None:
        if self._waiters:
            reschedule(self._waiters.popleft(), outcome.Value(message))
        elif len(self._queue) >= INBOX_CAPACITY:
            self.process.world.network.drop(message, "inbox-full")
        else:
            self._queue.append(message)

    async def receive(self) -> Message:
        if self._queue:
            return self._queue.popleft()
        task = current_task()
        self._waiters.append(task)

        def abort(_: Any) -> Abort:
            self._waiters.remove(task)
            return Abort.SUCCEEDED

        message = await wait_task_rescheduled(abort)
        await checkpoint_if_cancelled()  # killed in the same instant: run no further step
        return message

    def _clear(self) -> None:
        self._queue.clear()


class _Timer:
    __slots__ = ("alive", "task", "wake")

    def __init__(self, task: Any, wake: Wake | None = None) -> None:
        self.task = task
        self.alive = True
        self.wake = wake  # the Wake it bounds a wait on (Process.wait_wake), if any


class Wake:
    """A flag a task waits on with a bound (:meth:`Process.wait_wake`): ``set`` wakes the
    waiter. What ``with process.move_on_after(s): await event.wait()`` does, without a
    cancel scope and a ``Cancelled`` raised through the waiter at every bound (a pod
    worker waits so between every two syncs: 4 % of a 50-node run's CPU). One waiter."""

    __slots__ = ("flag", "timer")

    def __init__(self) -> None:
        self.flag = False
        self.timer: _Timer | None = None

    def set(self) -> None:
        if self.flag:
            return
        self.flag = True
        timer = self.timer
        if timer is not None:
            self.timer = None
            timer.alive = False
            reschedule(timer.task)


class _PendingCall:
    __slots__ = ("task", "done", "dst")

    def __init__(self, task: Any, dst: str) -> None:
        self.task = task
        self.done = False
        self.dst = dst


class Process:
    def __init__(
        self,
        world: Runtime,
        name: str,
        main: Main,
        *,
        role: str | None = None,
        zone: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        self.world = world
        self.name = name
        self.main = main
        self.role = role
        self.zone = zone
        self.labels = dict(labels or {})
        self.disk = Disk(name)
        self.state = State.CREATED
        self.incarnation = 0
        self._scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self._inboxes: dict[str, Inbox] = {}
        self._handlers: dict[str, Callable[[Message], None]] = {}
        self._calls: dict[int, _PendingCall] = {}
        self._held: list[tuple[Callable[[Any], None], Any]] = []
        self._observers: list[Callable[[Process, str], None]] = []
        #: Per-incarnation memory for libraries running in the process (a client's
        #: watch router): lost, like everything in memory, when the process is killed.
        self.memory: dict[str, Any] = {}
        # clock: now() = _clock_base + (world.now - _clock_anchor) * _rate
        self._clock_base = 0.0
        self._clock_anchor = 0.0
        self._rate = 1.0
        self.log = world.logger.bind(process=name)

    def __repr__(self) -> str:
        return f"<Process {self.name} {self.state.value} #{self.incarnation}>"

    # -- state --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.state is State.RUNNING

    @property
    def paused(self) -> bool:
        return self.state is State.PAUSED

    @property
    def alive(self) -> bool:
        """Running or paused: the process exists (its memory is intact)."""
        return self.state is State.RUNNING or self.state is State.PAUSED

    def random(self, name: str = "") -> Any:
        """A seeded generator for this process (stable across incarnations)."""
        return self.world.random(f"process/{self.name}/{name}")

    # -- lifecycle ----------------------------------------------------------------------
    def observe(self, callback: Callable[[Process, str], None]) -> None:
        """Call ``callback(process, event)`` after each lifecycle transition ("start",
        "restart", "kill", "pause", "resume", "exit"), from wherever the transition
        happens; it must not block. Observers outlive incarnations (they are not the
        process's memory): the HTTP front opens and closes a replica's listener with them,
        a user's real process is stopped and continued with them."""
        self._observers.append(callback)

    def _notify(self, event: str) -> None:
        for callback in tuple(self._observers):
            callback(self, event)

    def start(self) -> None:
        assert self.state in (State.CREATED, State.STOPPED, State.EXITED), f"cannot start {self!r}"
        self.incarnation += 1
        self.state = State.RUNNING
        self._scope = trio.CancelScope()
        event = "start" if self.incarnation == 1 else "restart"
        self.world.record("process", event=event, process=self.name, incarnation=self.incarnation)
        self.world.start_soon(self._run, self._scope, self.incarnation, name=f"process:{self.name}")
        if self._observers:
            self._notify(event)

    async def _run(self, scope: trio.CancelScope, incarnation: int) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await self.main(self)
        if self.incarnation == incarnation and self.alive:
            # main returned by itself: the process exited.
            self._lose_memory()
            self.state = State.EXITED
            self.world.record("process", event="exit", process=self.name, incarnation=incarnation)
            if self._observers:
                self._notify("exit")

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Start a task that belongs to this process (killed with it)."""
        assert self._nursery is not None and self.alive, f"{self!r} is not running"
        self._nursery.start_soon(fn, *args, name=name or f"{self.name}:{getattr(fn, '__name__', 'task')}")

    def kill(self) -> int:
        """Crash the process. Returns the number of unsynced disk writes lost. Idempotent
        for a process that is not alive."""
        if not self.alive:
            return 0
        assert self._scope is not None
        self._scope.cancel()
        self._lose_memory()
        self.state = State.STOPPED
        lost = self.disk.crash()
        self.world.record("process", event="kill", process=self.name, incarnation=self.incarnation, lost_writes=lost)
        if self._observers:
            self._notify("kill")
        return lost

    def restart(self) -> None:
        """Start again from the disk. A running process is killed first."""
        if self.alive:
            self.kill()
        self.start()

    def pause(self) -> None:
        if self.state is not State.RUNNING:
            return
        self.state = State.PAUSED
        self.world.record("process", event="pause", process=self.name, incarnation=self.incarnation)
        if self._observers:
            self._notify("pause")

    def resume(self) -> None:
        if self.state is not State.PAUSED:
            return
        self.state = State.RUNNING
        self.world.record("process", event="resume", process=self.name, incarnation=self.incarnation)
        held, self._held = self._held, []
        now = self.world.now
        for callback, argument in held:
            self.world.call_at(now, callback, argument)
        if self._observers:
            self._notify("resume")

    def hold(self, callback: Callable[[Any], None], argument: Any) -> None:
        """Keep a wake-up or delivery for when the process resumes."""
        assert self.state is State.PAUSED
        self._held.append((callback, argument))

    def _lose_memory(self) -> None:
        for inbox in self._inboxes.values():
            inbox._clear()
        self._inboxes = {}
        self._handlers = {}
        self._calls = {}
        self._held = []
        self.memory = {}
        self._nursery = None

    # -- clock --------------------------------------------------------------------------
    def now(self) -> float:
        """This process's clock (seconds): the world's, skewed by offset and drift."""
        return self._clock_base + (self.world.now - self._clock_anchor) * self._rate

    def _reanchor(self) -> None:
        self._clock_base = self.now()
        self._clock_anchor = self.world.now

    def jump_clock(self, seconds: float) -> None:
        self._reanchor()
        self._clock_base += seconds
        self.world.record("clock", process=self.name, jump_s=seconds, offset_s=self.clock_offset)

    def set_drift(self, drift: float) -> None:
        """Run the clock at ``1 + drift`` times real speed from now on (e.g. 0.001 = +1 ms/s)."""
        assert drift > -1.0, "a clock cannot run backwards"
        self._reanchor()
        self._rate = 1.0 + drift
        self.world.record("clock", process=self.name, drift=drift, offset_s=self.clock_offset)

    def reset_clock(self) -> None:
        self.set_clock(0.0, 0.0)

    def set_clock(self, offset_s: float, drift: float) -> None:
        """From now on: ``now()`` reads world time + ``offset_s``, running at ``1 + drift``.
        Journaled only when it changes something."""
        assert drift > -1.0, "a clock cannot run backwards"
        if abs(self.clock_offset - offset_s) < 1e-12 and self._rate == 1.0 + drift:
            return
        self._clock_anchor = self.world.now
        self._clock_base = self.world.now + offset_s
        self._rate = 1.0 + drift
        self.world.record("clock", process=self.name, drift=drift, offset_s=offset_s)

    @property
    def clock_offset(self) -> float:
        return self.now() - self.world.now

    # -- waiting ------------------------------------------------------------------------
    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this process's clock. Stops while the process is paused."""
        rate = self._rate
        await self.sleep_world(seconds / rate if rate != 1.0 else seconds)

    async def sleep_world(self, seconds: float) -> None:
        timer = _Timer(current_task())
        self.world.call_at(self.world.now + max(0.0, seconds), self._fire, timer)

        def abort(_: Any) -> Abort:
            timer.alive = False
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)
        await checkpoint_if_cancelled()  # killed in the same instant: run no further step

    def _fire(self, timer: _Timer) -> None:
        if not timer.alive:
            return
        if self.state is State.PAUSED:
            self._held.append((self._fire, timer))
            return
        timer.alive = False
        if timer.wake is not None:
            timer.wake.timer = None
        reschedule(timer.task)

    async def wait_wake(self, wake: Wake, seconds: float) -> bool:
        """Wait until ``wake`` is set or ``seconds`` of this process's clock have passed
        (that bound stops while the process is paused, as :meth:`move_on_after`'s does);
        answers whether it was set. Scheduled exactly as ``with
        self.move_on_after(seconds): await trio_event.wait()``."""
        assert wake.timer is None, "a Wake has one waiter"
        timer = _Timer(current_task(), wake)
        self.world.call_at(self.world.now + max(0.0, seconds) / self._rate, self._fire, timer)
        if wake.flag:
            timer.alive = False
            await trio.lowlevel.checkpoint()
            return True
        wake.timer = timer

        def abort(_: Any) -> Abort:
            timer.alive = False
            wake.timer = None
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)
        return wake.flag

    def move_on_after(self, seconds: float) -> trio.CancelScope:
        """A cancel scope cancelled after ``seconds`` of this process's clock; like
        ``trio.move_on_after`` but it stops while the process is paused (a Trio deadline
        would fire during a SIGSTOP). Use as ``with process.move_on_after(5) as scope:``."""
        scope = trio.CancelScope()
        rate = self._rate
        self.world.call_at(self.world.now + max(0.0, seconds) / rate, self._cancel_at_deadline, scope)
        return scope

    def _cancel_at_deadline(self, scope: trio.CancelScope) -> None:
        if self.state is State.PAUSED:
            self._held.append((self._cancel_at_deadline, scope))
            return
        scope.cancel()

    def call_later(self, seconds: float, callback: Callable[[Any], None], argument: Any = None) -> None:
        """Run ``callback(argument)`` after ``seconds`` of this process's clock, from the
        world (no task). Held while the process is paused; dropped if it is killed first."""
        self.call_later_world(max(0.0, seconds) / self._rate, callback, argument)

    def call_later_world(self, seconds: float, callback: Callable[[Any], None], argument: Any = None) -> None:
        """:meth:`call_later` after ``seconds`` of world time (a disk's fsync latency)."""
        incarnation = self.incarnation

        def fire(_: Any) -> None:
            if self.incarnation != incarnation or not self.alive:
                return
            if self.state is State.PAUSED:
                self._held.append((fire, None))
                return
            callback(argument)

        self.world.call_at(self.world.now + max(0.0, seconds), fire)

    # -- messages -----------------------------------------------------------------------
    def on_message(self, port: str, handler: Callable[[Message], None]) -> None:
        """Call ``handler(message)`` for each message delivered to ``port``, at delivery,
        instead of queueing it in an inbox: no task switch per message. The handler must
        not block; it runs from the world's scheduler, only while the process runs."""
        assert self.alive, f"{self!r} is not running"
        self._handlers[port] = handler

    def inbox(self, port: str = "") -> Inbox:
        inbox = self._inboxes.get(port)
        if inbox is None:
            inbox = self._inboxes[port] = Inbox(self, port)
        return inbox

    async def receive(self, port: str = "") -> Message:
        return await self.inbox(port).receive()

    def send(self, dst: str, body: Any, port: str = "", *, duplicable: bool = True, stream: str = "") -> None:
        """Send one message; fire and forget. ``duplicable=False`` for messages that ride
        on a connection (a TCP stream never duplicates); ``stream`` names that connection
        (:meth:`chaoskube.sim.network.Network.open_tcp_stream`). A stopped process sends
        nothing; a paused one (whose last step ended at the instant of the pause) sends on
        resume."""
        if self.state is State.RUNNING:
            self.world.network.send(self.name, dst, port, body, duplicable=duplicable, stream=stream)
        elif self.state is State.PAUSED:
            self._held.append((self._send_held, (dst, port, body, duplicable, 0, True, stream)))

    def _send_held(self, argument: tuple[str, str, Any, bool, int, bool, str]) -> None:
        dst, port, body, duplicable, call_id, ok, stream = argument
        if self.state is State.RUNNING:
            self.world.network.send(self.name, dst, port, body, call_id=call_id, ok=ok, duplicable=duplicable, stream=stream)

    def receive_message(self, message: Message) -> None:
        """Called by the network on delivery."""
        if message.port == REPLY_PORT:
            pending = self._calls.pop(message.call_id, None)
            if pending is not None and not pending.done:
                pending.done = True
                result: Outcome = Ok(message.body) if message.ok else Failed(str(message.body), message.body)
                reschedule(pending.task, outcome.Value(result))
            return
        handler = self._handlers.get(message.port)
        if handler is not None:
            handler(message)
            return
        self.inbox(message.port)._put(message)

    async def call(self, dst: str, body: Any, *, port: str = "", timeout_s: float, tcp: bool = False) -> Outcome:
        """Send a request and wait for its reply, at most ``timeout_s`` of world time.

        Returns ``Ok(reply)``, ``Failed(reason)`` (refused, or the server replied with an
        error: it did not happen), or ``Unknown(reason)`` (no answer in time: it may have
        happened). ``tcp``: the call rides a real TCP connection (the HTTPS front's), so a
        partition delays its request and reply (retransmitted) instead of losing them
        (:mod:`chaoskube.sim.network`)."""
        assert timeout_s > 0, "a call needs a positive deadline"
        world = self.world
        if self.state is not State.RUNNING:
            await self.sleep_world(0)
            return Failed("caller is not running")
        call_id = world.next_call_id()
        pending = _PendingCall(current_task(), dst)
        self._calls[call_id] = pending
        if tcp:
            world.network.tcp_calls.add(call_id)
        world.network.send(self.name, dst, port, body, call_id=call_id)
        world.call_at(world.now + timeout_s, self._call_deadline, (call_id, pending))

        def abort(_: Any) -> Abort:
            pending.done = True
            self._calls.pop(call_id, None)
            return Abort.SUCCEEDED

        try:
            result = await wait_task_rescheduled(abort)
        finally:
            if tcp:
                world.network.tcp_calls.discard(call_id)
        await checkpoint_if_cancelled()  # killed in the same instant: run no further step
        return result

    def _call_deadline(self, argument: tuple[int, _PendingCall]) -> None:
        call_id, pending = argument
        if pending.done:
            return
        if self.state is State.PAUSED:
            self._held.append((self._call_deadline, argument))
            return
        pending.done = True
        self._calls.pop(call_id, None)
        reschedule(pending.task, outcome.Value(Unknown(f"no reply from {pending.dst} in time")))

    def reply(self, request: Message, body: Any, *, ok: bool = True) -> None:
        """Answer a request received through ``receive``. ``ok=False`` answers with an
        error: the caller gets ``Failed(body)``."""
        assert request.call_id, "this message is not a request"
        if self.state is State.RUNNING:
            self.world.network.send(self.name, request.src, REPLY_PORT, body, call_id=request.call_id, ok=ok)
        elif self.state is State.PAUSED:
            self._held.append((self._send_held, (request.src, REPLY_PORT, body, False, request.call_id, ok, "")))

"""Leader election as client-go's ``tools/leaderelection/leaderelection.go``: a Lease lock.

This implementation does not guarantee that only one client is acting as a leader
(a.k.a. fencing). Like client-go, a client only acts on timestamps captured locally: the
times in the Lease record (``acquire_time``, ``renew_time``) are written by other clocks
and are never trusted; only their *change* shows that the holder renewed. A candidate
takes over when it has seen no change of the record for ``lease_duration_s`` of its own
clock (``observed.time + lease_duration > now``). So:

- a leader that is paused longer than the lease (GC pause, SIGSTOP) keeps believing it
  leads when it wakes, until its next renewal attempt fails and its renew deadline passes:
  meanwhile another candidate has taken over, and two processes act as leader at once;
- a clock jump or a fast clock on a candidate can make it think the lease expired early;
- a deposed leader keeps acting (as client-go's does) until its renew deadline passes
  without a successful renewal, even when it has already read another holder's record.

The journal shows each of these: every elector records ``{"type": "leader", "event":
"candidate" | "start" | "stop", "lease", "identity", "process"}`` when it begins to
campaign, starts acting as leader and stops acting as leader, and
:mod:`chaoskube.checkers.leader_election` measures the overlaps.

Defaults are client-go's core-client defaults: lease 15 s, renew deadline 10 s, retry
period 2 s, ``JitterFactor`` 1.2 on the acquire retry (``wait.JitterUntil``: each wait is
``retry * (1 + 1.2 * u)``, u uniform in [0, 1), drawn from the process's seeded
generator). The validation is ``NewLeaderElector``'s.

Layers:

- :func:`decide` — the pure core of ``tryAcquireOrRenew`` after the ``Get``: given the
  record read, the previous observation, the local time, it answers ACQUIRE (create or
  update), RENEW, WAIT (held by another, not expired) or LOST (we held it, another holds it
  now and it has not expired), with the record to write and the new observation.
- :class:`LeaseLock` — the protocol the API server's Lease will implement:
  ``get() -> (record | None, version)``, ``create(record) -> bool``,
  ``update(record, version) -> bool`` (False: version conflict / already exists); any
  of them raises :class:`LockError` when the outcome is unknown or failed (timeout,
  refused).
- :class:`LeaderElector` — the loop (``Run``: acquire, then renew until the renew deadline
  passes without success; optional release), reading time only through ``process.now()``
  and waiting only through ``process.sleep`` / ``process.move_on_after``.
- :class:`FakeLeaseLock` + :func:`lease_server` — an in-memory lock served by a process on
  the simulated network, so partitions, pauses and kills affect it.

Differences from client-go, on purpose: no optimistic fast path (the protocol's ``update``
does not return the new version, so every attempt is ``get`` then ``update``, as in
client-go before the fast path was added); ``on_stopped_leading`` is called only after
``on_started_leading`` was (client-go calls it on every exit of ``Run``).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import trio

from chaoskube.sim.outcomes import Ok

if TYPE_CHECKING:
    from chaoskube.sim.network import Message
    from chaoskube.sim.process import Process

JITTER_FACTOR = 1.2  # client-go leaderelection.JitterFactor
LEASE_PORT = "lease"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The Lease's spec (client-go's ``LeaderElectionRecord``). Times are the writer's
    local clock readings: informational only, never used to judge expiry."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = None
    renew_time: float | None = None
    lease_transitions: int = 0


@dataclass(frozen=True, slots=True)
class Observation:
    """What an elector last saw: the record and the local time it first saw it."""

    record: LeaseRecord | None = None
    time: float | None = None

    def holder(self) -> str:
        return self.record.holder_identity if self.record is not None else ""

    def lease_valid(self, now: float, config: LeaderElectionConfig) -> bool:
        """client-go ``isLeaseValid``: ``observedTime + leaseDuration`` is after ``now``."""
        if self.record is None or self.time is None:
            return False
        seconds = self.record.lease_duration_seconds or config.lease_duration_s
        return self.time + seconds > now


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0
    jitter_factor: float = JITTER_FACTOR

    def __post_init__(self) -> None:
        # NewLeaderElector's checks, with its messages.
        if self.lease_duration_s <= self.renew_deadline_s:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline_s <= self.jitter_factor * self.retry_period_s:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        for name in ("lease_duration_s", "renew_deadline_s", "retry_period_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be greater than zero")


class Action(enum.Enum):
    ACQUIRE = "acquire"  # write ``record`` (create when nothing exists, else update)
    RENEW = "renew"  # we hold it: write ``record`` with a new renew time
    WAIT = "wait"  # another holds it and it has not expired by our clock
    LOST = "lost"  # we held it, another holds it now and it has not expired


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    observed: Observation  # the elector's observation after this read
    record: LeaseRecord | None = None  # what to write, for ACQUIRE and RENEW
    create: bool = False  # ACQUIRE of a Lease that does not exist yet
    reason: str = ""

    @property
    def writes(self) -> bool:
        return self.record is not None


def decide(
    record: LeaseRecord | None,
    observed: Observation,
    now: float,
    identity: str,
    config: LeaderElectionConfig,
) -> Decision:
    """client-go ``tryAcquireOrRenew`` after its ``Get``, as a pure function.

    ``record`` is what the lock returned (None: the Lease does not exist), ``observed`` the
    elector's previous observation, ``now`` its local clock. The observation's time moves
    only when the record changed; expiry is judged on that local time, never on the
    record's ``renew_time``."""
    assert identity, "an elector needs a non-empty identity"
    duration = int(config.lease_duration_s)
    if record is None:
        new = LeaseRecord(identity, duration, now, now, 0)
        return Decision(Action.ACQUIRE, Observation(new, now), new, create=True, reason="no lease yet")
    was_leader = observed.holder() == identity
    if record != observed.record:
        observed = Observation(record, now)
    holder = record.holder_identity
    if holder and holder != identity and observed.lease_valid(now, config):
        action = Action.LOST if was_leader else Action.WAIT
        return Decision(action, observed, reason=f"held by {holder}, not expired by the local clock")
    if holder == identity:
        new = replace(record, lease_duration_seconds=duration, renew_time=now)
        return Decision(Action.RENEW, observed, new, reason="we hold it")
    new = LeaseRecord(identity, duration, now, now, record.lease_transitions + 1)
    reason = f"expired: held by {holder}" if holder else "released"
    return Decision(Action.ACQUIRE, observed, new, reason=reason)


def released_record(observed: Observation) -> LeaseRecord:
    """client-go ``release``: no holder, duration 1 s, transitions kept."""
    transitions = observed.record.lease_transitions if observed.record is not None else 0
    return LeaseRecord("", 1, None, None, transitions)


def jittered(period_s: float, factor: float, uniform: float) -> float:
    """apimachinery ``wait.Jitter``: ``period + uniform * factor * period``."""
    assert 0.0 <= uniform < 1.0
    return period_s + uniform * factor * period_s if factor > 0 else period_s


# -- the lock protocol ---------------------------------------------------------------------------
class LockError(Exception):
    """A lock call failed or its outcome is unknown (timeout, refused, server error)."""


class LeaseLock(Protocol):
    name: str

    async def get(self) -> tuple[LeaseRecord | None, Any]: ...

    async def create(self, record: LeaseRecord) -> bool: ...

    async def update(self, record: LeaseRecord, version: Any) -> bool: ...


# -- the elector ----------------------------------------------------------------------------------
Callback = Callable[[], Awaitable[Any]]


class LeaderElector:
    """client-go's ``LeaderElector.Run`` in one simulated process.

    ``await elector.run()``: campaign until acquired (retry every jittered retry period);
    then journal ``start``, run ``on_started_leading()`` as a task, and renew: each round
    tries at once and then every retry period until it succeeds, within the renew deadline;
    a round that hits the deadline ends leadership: the task is cancelled, ``stop`` is
    journaled and ``on_stopped_leading()`` runs; ``run`` returns. With
    ``release_on_cancel``, leadership that ends (deadline or cancellation of ``run``) is
    released by writing a record with no holder, if we still hold it. A killed process
    journals nothing and calls nothing: the checker ends its leadership at the kill."""

    def __init__(
        self,
        process: Process,
        lock: LeaseLock,
        config: LeaderElectionConfig | None = None,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
        release_on_cancel: bool = False,
        *,
        identity: str | None = None,
    ) -> None:
        self.process = process
        self.lock = lock
        self.config = config or LeaderElectionConfig()
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.release_on_cancel = release_on_cancel
        self.identity = identity or process.name
        self.observed = Observation()
        self.observed_version: Any = None
        self.leading = False
        self._random = process.random(f"leaderelection/{lock.name}")
        self.attempts = 0
        self.successes = 0

    # -- journal --------------------------------------------------------------------------
    def _journal(self, event: str, **fields: Any) -> None:
        self.process.world.record(
            "leader", event=event, lease=self.lock.name, identity=self.identity, process=self.process.name, **fields
        )

    def is_leader(self) -> bool:
        return self.observed.holder() == self.identity

    def get_leader(self) -> str:
        return self.observed.holder()

    # -- one attempt ----------------------------------------------------------------------
    async def try_acquire_or_renew(self) -> bool:
        """One ``tryAcquireOrRenew``: get, decide, write. True on success."""
        self.attempts += 1
        try:
            record, version = await self.lock.get()
        except LockError:
            return False
        decision = decide(record, self.observed, self.process.now(), self.identity, self.config)
        self.observed = decision.observed
        self.observed_version = version
        if decision.record is None:
            return False
        try:
            if decision.create:
                written = await self.lock.create(decision.record)
            else:
                written = await self.lock.update(decision.record, version)
        except LockError:
            return False
        if not written:
            return False
        self.observed = Observation(decision.record, self.process.now())
        self.successes += 1
        return True

    # -- the loop -------------------------------------------------------------------------
    async def run(self) -> None:
        self._journal("candidate")
        await self._acquire()
        try:
            async with trio.open_nursery() as nursery:
                self.leading = True
                self._journal("start")
                if self.on_started_leading is not None:
                    nursery.start_soon(self.on_started_leading)
                await self._renew()
                nursery.cancel_scope.cancel()
        finally:
            self.leading = False
            if self.process.alive:
                self._journal("stop")
                with trio.CancelScope(shield=True):
                    if self.release_on_cancel:
                        await self._release()
                    if self.on_stopped_leading is not None:
                        await self.on_stopped_leading()

    async def _acquire(self) -> None:
        config = self.config
        while not await self.try_acquire_or_renew():
            await self.process.sleep(jittered(config.retry_period_s, config.jitter_factor, self._random.random()))

    async def _renew(self) -> None:
        config, process = self.config, self.process
        while True:
            renewed = False
            with process.move_on_after(config.renew_deadline_s):
                while not await self.try_acquire_or_renew():
                    await process.sleep(config.retry_period_s)
                renewed = True
            if not renewed:
                return
            await process.sleep(config.retry_period_s)

    async def _release(self) -> bool:
        """client-go ``release``, bounded by the renew deadline: read, and if we still
        hold the Lease, write it with no holder (never clobbers another holder's record)."""
        with self.process.move_on_after(self.config.renew_deadline_s):
            try:
                record, version = await self.lock.get()
                if record is None or record.holder_identity != self.identity:
                    return True
                new = released_record(Observation(record, None))
                if await self.lock.update(new, version):
                    self.observed = Observation(new, self.process.now())
                    self._journal("release")
                    return True
            except LockError:
                return False
        return False

    def statistics(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "successes": self.successes, "leading": self.leading}


# -- an in-memory lock on the simulated network ----------------------------------------------------
async def lease_server(process: Process) -> None:
    """A process that keeps Leases (on its disk, so a restart keeps them) and answers
    ``get`` / ``create`` / ``update`` calls on port ``"lease"``, with optimistic
    concurrency on an integer version, as the API server does with resourceVersion."""

    def handle(message: Message) -> None:
        body = message.body
        key = f"lease/{body['lease']}"
        stored = process.disk.read(key)
        kind = body["type"]
        if kind == "lease-get":
            reply: Any = stored if stored is not None else (None, 0)
        elif kind == "lease-create":
            reply = stored is None
            if reply:
                process.disk.write(key, (body["record"], 1))
        elif kind == "lease-update":
            reply = stored is not None and stored[1] == body["version"]
            if reply:
                process.disk.write(key, (body["record"], stored[1] + 1))
        else:
            process.reply(message, f"unknown request {kind!r}", ok=False)
            return
        process.reply(message, reply)

    process.on_message(LEASE_PORT, handle)
    await trio.sleep_forever()


class FakeLeaseLock:
    """The client side of :func:`lease_server`: each call is ``process.call`` with a
    deadline; no reply in time, a refused connection or an error raise :class:`LockError`."""

    def __init__(self, process: Process, name: str, *, server: str = "lease-server", timeout_s: float = 1.0) -> None:
        self.process = process
        self.name = name
        self.server = server
        self.timeout_s = timeout_s

    async def _call(self, body: dict[str, Any]) -> Any:
        body["lease"] = self.name
        result = await self.process.call(self.server, body, port=LEASE_PORT, timeout_s=self.timeout_s)
        if not isinstance(result, Ok):
            raise LockError(f"{body['type']} {self.name}: {result.reason}")
        return result.value

    async def get(self) -> tuple[LeaseRecord | None, Any]:
        record, version = await self._call({"type": "lease-get"})
        return record, version

    async def create(self, record: LeaseRecord) -> bool:
        return bool(await self._call({"type": "lease-create", "record": record}))

    async def update(self, record: LeaseRecord, version: Any) -> bool:
        return bool(await self._call({"type": "lease-update", "record": record, "version": version}))

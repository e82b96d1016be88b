"""Events, recorded as client-go's ``tools/record`` EventRecorder records them (the legacy
core/v1 recorder every built-in component still uses).

Contract:

- :meth:`EventRecorder.event` never blocks and never fails: it correlates the Event and
  queues it (at most :data:`MAX_QUEUED_EVENTS`; past the bound the new Event is dropped, as
  the broadcaster's ``DropIfChannelFull``). One task of the recording process writes the
  queue out, in order.
- Correlation (``tools/record/events_cache.go``, ``EventCorrelator``):
  the *aggregator* turns the 10th distinct message of one (source, object, type, reason)
  within 10 minutes into ``"(combined from similar events): <message>"`` and counts the
  rest on that one Event; the *spam filter* lets at most 25 Events per (source, object)
  through at once, refilled at one per 5 minutes (a token bucket; the excess is dropped);
  the *logger* turns a repeat of an identical Event into a strategic merge PATCH of its
  ``count`` and ``lastTimestamp`` (and ``message``), keyed by everything but the time.
- Writing (``event.go``, ``recordToSink``): a create (or patch) the server refused with a
  Status is not retried ("Server rejected event ... will not retry"); one that got no
  answer (refused connection, timeout) is retried up to 12 times, 10 s apart (the first
  wait randomized); a patch of an Event that expired (404) creates it again.
- Names: ``<object name>.<hex nanoseconds>``, as ``makeEvent`` names them, from the process's
  virtual clock; two Events of one recorder in the same nanosecond take the next one
  (upstream's clock would have moved on: a same-name create would be dropped as
  AlreadyExists).
- Every Event recorded is journaled once (``k8s-event``: component, object, type, reason,
  message, and whether it was a repeat or dropped), so a report can cite it whether or not
  its write reached the server.

Non-guarantees: the events.k8s.io/v1 recorder (``tools/events``, series) is not what the
components here use; Events written by it through the API are served all the same.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.objects import Event, EventSource, ObjectMeta, ObjectReference
from chaoskube.api.protocol import timestamp

__all__ = ["MAX_QUEUED_EVENTS", "NORMAL", "WARNING", "EventRecorder", "object_reference"]

NORMAL = "Normal"
WARNING = "Warning"

#: ``maxQueuedEvents`` (``tools/record/event.go``).
MAX_QUEUED_EVENTS = 1000
#: ``maxTriesPerEvent`` and ``defaultSleepDuration`` (``event.go``).
MAX_TRIES_PER_EVENT = 12
SLEEP_S = 10.0
#: ``events_cache.go``: ``maxLruCacheEntries``, ``defaultAggregateMaxEvents``,
#: ``defaultAggregateIntervalInSeconds``, ``defaultSpamBurst``, ``defaultSpamQPS``.
MAX_LRU_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_S = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0


def object_reference(obj: Any, field_path: str = "") -> ObjectReference:
    """``reference.GetReference``: what an Event says it is about."""
    meta = obj.metadata
    return ObjectReference(kind=obj.KIND, namespace=meta.namespace, name=meta.name, uid=meta.uid, api_version=obj.API_VERSION, resource_version=meta.resource_version, field_path=field_path)


@dataclass
class _Observation:
    count: int
    first_timestamp: str
    name: str
    resource_version: str = ""


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last_s: float = 0.0


@dataclass
class _Bucket:
    tokens: float
    last_s: float


class EventRecorder:
    """The recorder of one component (``source``: ``component`` and ``host``), writing
    through ``client`` (a :class:`chaoskube.client.ApiClient`) from ``client.process``."""

    def __init__(self, client: Any, component: str, host: str = "") -> None:
        self.client = client
        self.process = client.process
        self.source = EventSource(component=component, host=host)
        self._queue: deque[tuple[Event, bool]] = deque()
        self._writing = False
        self._observed: OrderedDict[tuple[str, ...], _Observation] = OrderedDict()
        self._aggregates: OrderedDict[tuple[str, ...], _Aggregate] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()
        self._last_nanos = 0
        self._random = self.process.random(f"event-recorder/{component}")
        self._statistics = {"recorded": 0, "created": 0, "patched": 0, "dropped": 0, "failed": 0}

    def statistics(self) -> dict[str, int]:
        return dict(self._statistics)

    # -- recording ----------------------------------------------------------------------
    def event(self, obj: Any, type_: str, reason: str, message: str, *, field_path: str = "") -> None:
        """Record that ``reason`` happened to ``obj`` (``type_``: Normal or Warning)."""
        self.event_about(object_reference(obj, field_path), type_, reason, message)

    def event_about(self, reference: ObjectReference, type_: str, reason: str, message: str) -> None:
        """:meth:`event` about an object named by ``reference`` (``record.Event`` of a
        reference, as the node lifecycle controller records a Node's)."""
        now = self.process.now()
        self._statistics["recorded"] += 1
        journal = {"component": self.source.component, "host": self.source.host, "kind": reference.kind, "namespace": reference.namespace,
                   "name": reference.name, "event_type": type_, "reason": reason, "message": message[:300]}
        if reference.field_path:
            journal["field_path"] = reference.field_path
        message = self._aggregate(reference, type_, reason, message, now)
        if not self._spam_allows(reference, now):
            self._statistics["dropped"] += 1
            self.process.world.record("k8s-event", **journal, outcome="spam-filtered")
            return
        key = (self.source.component, self.source.host, reference.kind, reference.namespace, reference.name, reference.uid, reference.api_version, type_, reason, message, reference.field_path)
        stamp = timestamp(now)
        observed = self._observed.get(key)
        if observed is not None:
            self._observed.move_to_end(key)
            observed.count += 1
            event = self._make(reference, type_, reason, message, now)
            event.metadata.name = observed.name
            event.first_timestamp = observed.first_timestamp
            event.count = observed.count
            repeat = True
        else:
            event = self._make(reference, type_, reason, message, now)
            self._observed[key] = _Observation(1, stamp, event.metadata.name)
            if len(self._observed) > MAX_LRU_ENTRIES:
                self._observed.popitem(last=False)
            repeat = False
        if len(self._queue) >= MAX_QUEUED_EVENTS:
            self._statistics["dropped"] += 1
            self.process.world.record("k8s-event", **journal, outcome="queue-full")
            return
        self.process.world.record("k8s-event", **journal, count=event.count, event=event.metadata.name)
        self._queue.append((event, repeat))
        if not self._writing and self.process.alive:
            self._writing = True
            self.process.start_soon(self._write_queue, name=f"{self.process.name}:events")

    def _make(self, reference: ObjectReference, type_: str, reason: str, message: str, now: float) -> Event:
        nanos = max(int(now * 1_000_000_000), self._last_nanos + 1)
        self._last_nanos = nanos
        stamp = timestamp(now)
        return Event(
            metadata=ObjectMeta(name=f"{reference.name}.{nanos:x}", namespace=reference.namespace or "default"),
            involved_object=reference, reason=reason, message=message, source=self.source,
            first_timestamp=stamp, last_timestamp=stamp, count=1, type=type_,
            reporting_component=self.source.component, reporting_instance=self.source.host,
        )

    def _aggregate(self, reference: ObjectReference, type_: str, reason: str, message: str, now: float) -> str:
        """``EventAggregate``: the message to record (combined once 10 distinct messages of
        one kind of Event came within the interval)."""
        key = (self.source.component, self.source.host, reference.kind, reference.namespace, reference.name, reference.uid, reference.api_version, type_, reason)
        record = self._aggregates.get(key)
        if record is None or now - record.last_s > AGGREGATE_INTERVAL_S:
            record = _Aggregate()
        record.messages.add(message)
        record.last_s = now
        self._aggregates[key] = record
        self._aggregates.move_to_end(key)
        if len(self._aggregates) > MAX_LRU_ENTRIES:
            self._aggregates.popitem(last=False)
        if len(record.messages) < AGGREGATE_MAX_EVENTS:
            return message
        return f"(combined from similar events): {message}"

    def _spam_allows(self, reference: ObjectReference, now: float) -> bool:
        """``EventSourceObjectSpamFilter``: a token bucket per source and object."""
        key = (self.source.component, self.source.host, reference.kind, reference.namespace, reference.name, reference.uid, reference.api_version)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(SPAM_BURST), now)
            self._buckets[key] = bucket
            if len(self._buckets) > MAX_LRU_ENTRIES:
                self._buckets.popitem(last=False)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (now - bucket.last_s) * SPAM_QPS)
        bucket.last_s = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    # -- writing ------------------------------------------------------------------------
    async def _write_queue(self) -> None:
        try:
            while self._queue:
                event, repeat = self._queue.popleft()
                await self._write(event, repeat)
        finally:
            self._writing = False

    async def _write(self, event: Event, repeat: bool) -> None:
        from chaoskube.client.client import ApiError

        for attempt in range(MAX_TRIES_PER_EVENT):
            try:
                written = None
                if repeat:
                    try:
                        patch = {"count": event.count, "lastTimestamp": event.last_timestamp, "message": event.message}
                        written = await self.client.patch("events", event.metadata.namespace, event.metadata.name, patch, patch_type="strategic")
                        self._statistics["patched"] += 1
                    except ApiError as error:
                        if error.code != 404 or error.refused or error.ambiguous:
                            raise
                if written is None:
                    written = await self.client.create(event)
                    self._statistics["created"] += 1
                return
            except ApiError as error:
                if not (error.refused or error.ambiguous):
                    self._statistics["failed"] += 1  # the server answered: "will not retry"
                    return
            if attempt == MAX_TRIES_PER_EVENT - 1:
                break
            # the first wait is randomized so that recorders do not retry in step
            await self.process.sleep(self._random.random() * SLEEP_S if attempt == 0 else SLEEP_S)
        self._statistics["failed"] += 1

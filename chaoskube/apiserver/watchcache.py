"""The API server's watch cache, as kube-apiserver's ``Cacher``
(``staging/src/k8s.io/apiserver/pkg/storage/cacher``: ``cacher.go``, ``watch_cache.go``,
``cache_watcher.go``).

Layers:

- :class:`ResourceCache` — the pure core of ``watch_cache.go`` for one resource: the
  current objects (for get/list and for watches from "0") and a bounded history of
  :class:`CachedEvent` (for watches from "N"). No awaits, no clock: callers pass ``now``.
- :class:`WatchFilter` — a watcher's namespace and selectors, and ``convertToWatchEvent``
  (``cache_watcher.go``): with a selector, an update of an object that starts matching is
  ADDED, one that stops matching is DELETED (carrying the old object), neither is nothing.
- :class:`Cacher` — the Trio shell inside one API server process: ONE etcd watch on
  ``/registry/`` feeds a ResourceCache per resource (the key segment after
  ``/registry/``), and API watch streams are served from it.

Cacher contract (what the server may rely on):

1. ``run()`` lists ``/registry/`` from etcd (a linearizable range), ``replace``s every
   cache at the list's revision, sets ``ready``, then watches etcd from revision + 1. A lost
   etcd message (a gap in the stream's sequence numbers) or a dead stream (no message for
   ``probe_every_s`` and a ``WatchProgress`` probe that does not answer "alive") makes it
   watch again on the next endpoint from the last revision seen + 1, as etcd's client does;
   API watchers do not notice. Streams are opened ``WithRequireLeader``, as kube-apiserver's
   (``storage/etcd3/watcher.go``): a member that has had no leader for three election
   timeouts answers "not alive", so a cache fed by a member cut off from the quorum moves
   on instead of going stale for as long as the partition lasts. An idle stream whose member reports a revision past the
   last one seen is suspected of having lost its tail and is re-watched too, once per
   such revision (:meth:`Cacher._suspect`). When etcd answers that the start revision was compacted,
   ``ready`` goes false, every API watcher is closed (``WatchMessage(closed=True)``), the
   caches are re-listed and ``ready`` comes back (``cacher.go`` ``startCaching``: its
   reflector's ListAndWatch failed, so it terminates all watchers and re-lists).
2. While not ``ready`` the server answers 429 "storage is (re)initializing" with
   Retry-After 1 s (:func:`not_ready_status`; ``cacher.go`` with
   ResilientWatchCacheInitialization).
3. ``wait_fresh(rv)`` waits at most ``timeout_s`` (3 s: ``watch_cache.go`` ``blockTimeout``)
   until the cache has seen revision ``rv``; the server then answers 504
   :func:`too_large_resource_version` (``storage.NewTooLargeResourceVersionError``).
4. ``start_watch`` answers the watch request itself (200, or 410 Expired "too old resource
   version: N (M)", or 400 for a bad selector, or 429 when not ready) and then pushes
   ``WatchMessage`` numbered from 1 to the client on :data:`protocol.WATCH_PORT` (never
   duplicated: it rides a connection). Events of one instant travel in one message.
   Bookmarks (``allowWatchBookmarks``) carry the cache's resourceVersion every
   ``bookmark_every_s`` (``cacher.go`` ``defaultBookmarkFrequency`` = 1 min) and 2 s
   before the watch times out (``cache_watcher.go`` ``nextBookmarkTime``); at the timeout
   the stream ends with ``closed=True``. Without ``timeoutSeconds`` a watch lasts a random
   time in [1800 s, 3600 s) (``handlers/get.go``: ``--min-request-timeout`` 1800 s × (1 +
   rand)).
5. Every object sent to a client is a copy: objects cross process boundaries by value.
   The watchers one event is dispatched to share one copy (nothing in the server holds
   it): what a watch delivers is read-only for its clients, as objects of a client-go
   informer cache are (client-go ``tools/cache``: cache objects are read-only; a
   controller deep-copies one before changing it).
   ``cache(resource)`` and ``objects(resource)`` hand out the cache's own objects: read
   only.

Dispatching an event does not look at every watcher of its resource. As kube-apiserver's
cacher does with the pods' ``spec.nodeName`` trigger (``pkg/registry/core/pod/storage``
``TriggerFunc: NodeNameTriggerFunc``; ``cacher.go`` ``indexedTrigger``,
``triggerValuesThreadUnsafe``, ``watchersBuffer``), a watcher whose field selector
requires ``spec.nodeName=X`` (every kubelet's pod watch) is filed under X, and an event
goes to the watchers filed under its object's and its previous object's node name, plus
every watcher that is not filed (:class:`_Watchers`). Watchers are still served in the
order they registered, so the index changes nothing a client sees, only the work.

Bounds: the history holds 100 to 102,400 events per resource (``watch_cache.go``
``resizeCacheLocked``, see :class:`ResourceCache`); a watcher's unsent events of one
instant are bounded by :data:`WATCHER_PENDING_LIMIT`: a watcher beyond it is closed (the
cacher terminates a watcher whose channel stays full, "Forcing watcher close due to
unresponsiveness"), and its client re-watches from its last resourceVersion. The re-list
and re-watch loops are unbounded in count (the cacher retries forever) but rate-limited
(:data:`RELIST_RETRY_S`, :data:`REWATCH_RETRY_S`) and end with the process.

Lag (``chaoskube test-operator``'s *stale state*): :meth:`Cacher.stall` makes the etcd
watch feeding the cache deliver nothing (a stuck or slow stream: etcd parks a watcher it
cannot send to among its "victims" and sends later, ``mvcc/watchable_store.go``), so the
cache stays at its revision while writes go on; reads at ``resourceVersion="0"`` and watches
are served from it, stale (kubernetes#59848: a client of a lagging API server's cache can see
an object it saw deleted). :meth:`Cacher.resume` ends the stream: the cache watches again from
its revision + 1 and catches up (or re-lists, if that revision was compacted meanwhile).
Quorum reads and writes go to etcd and are never stale.

Non-guarantees: the cache advances only with etcd events (etcd progress notifications,
which upstream uses to advance an idle cache, are not modelled: our ``WatchProgress``
reply is not ordered with the event stream), so ``wait_fresh`` of a revision made by a
write outside ``/registry/`` times out. A killed API server process loses the cache and
every watcher (its tasks are cancelled); nothing is persisted. Journal (sparse):
``watch-cache`` events ``ready``, ``relist``, ``rewatch``, ``watcher-closed`` (overflow
only) and ``decode-error`` (a value under ``/registry/`` that is not an object we know: it
is skipped, where upstream's reflector would fail and re-list).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from chaoskube.api.manifests import ManifestError
from chaoskube.api.objects import Object
from chaoskube.api.protocol import (
    WATCH_PORT,
    Request,
    Response,
    Status,
    WatchEvent,
    WatchMessage,
    bad_request,
    gone,
    too_many_requests,
)
from chaoskube.api.selectors import (
    FieldSelectorExpr,
    LabelSelectorExpr,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
    selectable_fields,
)
from chaoskube.apiserver.storage import REGISTRY_PREFIX, copy_object, decode_value
from chaoskube.etcd.requests import CompactedError, Event, KeyValue, RangeRequest, prefix_range_end
from chaoskube.etcd.server import WATCH_PORT as ETCD_WATCH_PORT
from chaoskube.etcd.server import WatchCancel, WatchCreate, WatchEvents, WatchProgress
from chaoskube.sim.outcomes import Ok, Unknown

if TYPE_CHECKING:
    from chaoskube.etcd.client import EtcdClient
    from chaoskube.sim.network import Message
    from chaoskube.sim.process import Process

__all__ = [
    "BLOCK_TIMEOUT_S",
    "BOOKMARK_BEFORE_TIMEOUT_S",
    "CachedEvent",
    "Cacher",
    "DEFAULT_BOOKMARK_EVERY_S",
    "EVENT_FRESH_S",
    "LOWER_CAPACITY",
    "MIN_REQUEST_TIMEOUT_S",
    "REGISTRY_PREFIX",
    "ResourceCache",
    "TooOldResourceVersion",
    "UPPER_CAPACITY",
    "WATCHER_PENDING_LIMIT",
    "WatchFilter",
    "not_ready_status",
    "resource_of_key",
    "too_large_resource_version",
    "with_resource_version",
]

LOWER_CAPACITY = 100  # watch_cache.go defaultLowerBoundCapacity
UPPER_CAPACITY = 100 * 1024  # defaultUpperBoundCapacity
EVENT_FRESH_S = 75.0  # eventFreshDuration: the bookmark frequency plus epsilon
BLOCK_TIMEOUT_S = 3.0  # blockTimeout of waitUntilFreshAndBlock
RESOURCE_VERSION_TOO_HIGH_RETRY_S = 1  # resourceVersionTooHighRetrySeconds
DEFAULT_BOOKMARK_EVERY_S = 60.0  # cacher.go defaultBookmarkFrequency
BOOKMARK_BEFORE_TIMEOUT_S = 2.0  # cache_watcher.go nextBookmarkTime: "2s before the deadline"
MIN_REQUEST_TIMEOUT_S = 1800.0  # kube-apiserver --min-request-timeout
#: Unsent events of one instant per watcher (the largest channel size of watch_cache.go
#: ``suggestedWatchChannelSize``, maxWatchChanSizeWithIndexWithoutTrigger).
WATCHER_PENDING_LIMIT = 1000
RELIST_RETRY_S = 1.0  # cacher.go restarts startCaching with wait.Until(..., time.Second)
REWATCH_RETRY_S = 0.2  # as chaoskube.etcd.client.Watcher between failed watch creations


# =========================================================================== pure core
class TooOldResourceVersion(Exception):
    """A watch from a resourceVersion the history no longer holds: 410 Expired, worded as
    ``watch_cache.go`` ``getAllEventsSinceLocked`` words it."""

    def __init__(self, resource_version: int, oldest: int) -> None:
        self.resource_version = resource_version
        self.oldest = oldest
        self.status = gone(f"too old resource version: {resource_version} ({oldest})")
        super().__init__(self.status.message)


def too_large_resource_version(resource_version: int, current: int) -> Status:
    """``storage.NewTooLargeResourceVersionError``: ``apierrors.NewTimeoutError`` (504,
    "Timeout: ..." , Retry-After 1 s) with the ResourceVersionTooLarge cause."""
    message = f"Timeout: Too large resource version: {resource_version}, current: {current}"
    return Status(504, "Timeout", message, RESOURCE_VERSION_TOO_HIGH_RETRY_S, ("Too large resource version",))


def not_ready_status() -> Status:
    """What the server answers while the cache (re)initializes."""
    return too_many_requests("storage is (re)initializing", retry_after_seconds=1)


def with_resource_version(obj: Object, resource_version: int) -> Object:
    """``obj`` with ``metadata.resourceVersion`` = ``resource_version`` (a new object that
    shares everything else with ``obj``)."""
    text = str(resource_version)
    if obj.metadata.resource_version == text:
        return obj
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, resource_version=text))


def resource_of_key(key: str) -> str | None:
    """``/registry/<resource>/...`` -> ``<resource>``; None for any other key."""
    if not key.startswith(REGISTRY_PREFIX):
        return None
    resource, slash, rest = key[len(REGISTRY_PREFIX):].partition("/")
    return resource if resource and slash and rest else None


_copy = copy_object  # what crosses to a client shares nothing with the cache (clients of one event may share a copy: _dispatch)


@dataclass(frozen=True, slots=True)
class CachedEvent:
    """``watchCacheEvent``: ``object`` is the new state (for DELETED: the last state, with
    the deletion's resourceVersion, as etcd3's watcher sends it); ``prev_object`` the state
    before, if the cache had one; ``record_time`` the local time it was recorded."""

    type: str
    key: str
    object: Object
    prev_object: Object | None
    resource_version: int
    record_time: float


@dataclass(frozen=True, slots=True)
class WatchFilter:
    """A watcher's scope: a namespace ("" = all) and selectors (None = everything)."""

    namespace: str = ""
    label_expr: LabelSelectorExpr | None = None
    field_expr: FieldSelectorExpr | None = None

    def matches(self, obj: Object, fields: dict[int, Mapping[str, str]] | None = None) -> bool:
        """``fields``: a memo of ``selectable_fields`` by object id, shared by the watchers
        one event is dispatched to (the objects do not change meanwhile)."""
        if self.namespace and obj.metadata.namespace != self.namespace:
            return False
        if self.label_expr is not None and not self.label_expr.matches(obj):
            return False
        field_expr = self.field_expr
        if field_expr is None or not field_expr.requirements:
            return True
        if fields is None:
            return field_expr.matches_fields(selectable_fields(obj))
        selectable = fields.get(id(obj))
        if selectable is None:
            selectable = fields[id(obj)] = selectable_fields(obj)
        return field_expr.matches_fields(selectable)

    def convert(self, event: CachedEvent, fields: dict[int, Mapping[str, str]] | None = None) -> WatchEvent | None:
        """``cacheWatcher.convertToWatchEvent``: what this watcher sees of ``event``."""
        current = event.type != "DELETED" and self.matches(event.object, fields)
        previous = event.prev_object is not None and self.matches(event.prev_object, fields)
        if current:
            return WatchEvent("MODIFIED" if previous else "ADDED", event.object, str(event.resource_version))
        if previous:
            assert event.prev_object is not None
            # the previous object's content with the event's resource version
            return WatchEvent("DELETED", with_resource_version(event.prev_object, event.resource_version), str(event.resource_version))
        return None


class ResourceCache:
    """``watchCache`` of one resource: the objects by key and a bounded event history.

    Capacity, as ``resizeCacheLocked`` (checked before each event is added): when the
    history is full and its oldest event is younger than ``fresh_s``, the capacity doubles
    (up to ``upper_capacity``); when it is full and the event a quarter of the capacity
    back from the newest is older than ``fresh_s``, it halves (down to
    ``lower_capacity``), keeping the newest events; a full history then drops its oldest
    event. Every dropped event raises :attr:`oldest_resource_version` to the revision of
    the oldest kept event minus one.

    Ordering obligations: ``replace`` first; then ``apply`` in etcd revision order (events
    of one transaction share a revision); ``advance`` with revisions the stream has
    passed."""

    def __init__(self, resource: str, *, lower_capacity: int = LOWER_CAPACITY, upper_capacity: int = UPPER_CAPACITY, fresh_s: float = EVENT_FRESH_S) -> None:
        assert 1 <= lower_capacity <= upper_capacity, (lower_capacity, upper_capacity)
        assert fresh_s > 0
        self.resource = resource
        self.lower_capacity = lower_capacity
        self.upper_capacity = upper_capacity
        self.fresh_s = fresh_s
        self._capacity = lower_capacity  # newWatchCache starts at the lower bound
        self._history: deque[CachedEvent] = deque()
        self._removed_since_relist = False
        self._objects: dict[str, Object] = {}
        self._sorted_keys: list[str] | None = None  # memo, dropped when a key comes or goes
        #: counts the changes of the objects (replace, and every event that changed one):
        #: a reader's memo of what it derived from them holds while this has not moved
        self.changes = 0
        self._list_revision = 0
        self._resource_version = 0
        self.initialized = False
        self.replaced_at: float | None = None

    # -- reading --------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        """The newest revision this cache is known to reflect."""
        return self._resource_version

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def oldest_resource_version(self) -> int:
        """The oldest resourceVersion a watch may start from (exclusive): the list's
        revision until an event was dropped, then the oldest kept event's minus one."""
        if self._list_revision > 0 and not self._removed_since_relist:
            return self._list_revision
        if self._history:
            return self._history[0].resource_version - 1
        return self._list_revision

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, key: str) -> Object | None:
        return self._objects.get(key)

    def list(self, namespace: str = "", label_expr: LabelSelectorExpr | None = None, field_expr: FieldSelectorExpr | None = None) -> list[Object]:
        """The objects in ``namespace`` ("" = all) that pass the selectors, by key."""
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self._objects)
        objects = self._objects
        if not namespace and label_expr is None and field_expr is None:
            return [objects[key] for key in self._sorted_keys]
        scope = WatchFilter(namespace, label_expr, field_expr)
        return [objects[key] for key in self._sorted_keys if scope.matches(objects[key])]

    def history(self) -> list[CachedEvent]:
        return list(self._history)

    def events_after(self, resource_version: int) -> list[CachedEvent]:
        """Every kept event newer than ``resource_version``, oldest first; raises
        :class:`TooOldResourceVersion` when events after it may have been dropped.
        (``resource_version`` 0 is not "any": the Cacher serves "0" from the objects.)"""
        assert self.initialized, "a watch cache serves watches only after its first list"
        oldest = self.oldest_resource_version
        if resource_version < oldest:
            raise TooOldResourceVersion(resource_version, oldest)
        newer: list[CachedEvent] = []
        for event in reversed(self._history):
            if event.resource_version <= resource_version:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def statistics(self) -> dict[str, Any]:
        return {
            "resource": self.resource, "objects": len(self._objects), "events": len(self._history),
            "capacity": self._capacity, "resource_version": self._resource_version,
            "oldest_resource_version": self.oldest_resource_version,
        }

    # -- writing --------------------------------------------------------------------------
    def replace(self, objects: list[tuple[str, Object]], revision: int, now: float) -> None:
        """``watchCache.Replace``: the state of a list at ``revision``; the history is
        emptied (the capacity is kept) and a watch from exactly ``revision`` is served."""
        assert revision >= 0
        self._objects = {key: obj for key, obj in objects}
        self._sorted_keys = None
        self.changes += 1
        assert len(self._objects) == len(objects), "keys of a list are unique"
        self._history.clear()
        self._removed_since_relist = False
        self._list_revision = revision
        self._resource_version = revision
        self.initialized = True
        self.replaced_at = now

    def advance(self, revision: int) -> None:
        """``UpdateResourceVersion``: nothing of this resource changed up to ``revision``."""
        if revision > self._resource_version:
            self._resource_version = revision

    def apply(self, event_type: str, key: str, obj: Object | None, prev_obj: Object | None, revision: int, now: float) -> CachedEvent | None:
        """``processEvent``: update the objects and append to the history. ``prev_obj``
        None means "the cached object, if any". A DELETED of a key the cache does not
        hold changes nothing and returns None (the resource version still advances)."""
        assert event_type in ("ADDED", "MODIFIED", "DELETED"), event_type
        assert self.initialized, "apply after replace"
        assert revision > self._list_revision, (revision, self._list_revision)
        assert revision >= self._resource_version, ("events must come in revision order", revision, self._resource_version)
        self._resource_version = revision
        previous = prev_obj if prev_obj is not None else self._objects.get(key)
        if event_type == "DELETED":
            if previous is None:
                return None
            if self._objects.pop(key, None) is not None:
                self._sorted_keys = None
                self.changes += 1
            current = with_resource_version(previous, revision)
        else:
            assert obj is not None, "ADDED and MODIFIED carry the object"
            current = with_resource_version(obj, revision)
            if key not in self._objects:
                self._sorted_keys = None
            self._objects[key] = current
            self.changes += 1
        event = CachedEvent(event_type, key, current, previous, revision, now)
        self._append(event)
        return event

    def _append(self, event: CachedEvent) -> None:
        """``updateCache``: resize if due, drop the oldest when full, append."""
        self._resize(event.record_time)
        if len(self._history) >= self._capacity:
            self._history.popleft()
            self._removed_since_relist = True
        self._history.append(event)
        assert len(self._history) <= self._capacity

    def _resize(self, now: float) -> None:
        """``resizeCacheLocked`` (see the class docstring)."""
        history, capacity = self._history, self._capacity
        if len(history) < capacity:
            return
        if now - history[0].record_time < self.fresh_s:
            self._capacity = min(capacity * 2, self.upper_capacity)
            return
        # the event a quarter of the capacity back from the newest; with a capacity under
        # 4 that is (as upstream's modulo makes it) the oldest one
        if now - history[(len(history) - capacity // 4) % capacity].record_time > self.fresh_s:
            smaller = max(capacity // 2, self.lower_capacity)
            while len(history) > smaller:
                history.popleft()
                self._removed_since_relist = True
            self._capacity = smaller


# =========================================================================== the Trio shell
@dataclass(eq=False)
class _ApiWatcher:
    client: str
    watch_id: str
    resource: str
    scope: WatchFilter
    bookmarks: bool
    deadline: float  # the process clock
    start_rv: int  # events at or before it are already in the client's initial state
    last_rv: int = 0  # the newest resourceVersion sent (events and bookmarks)
    sequence: int = 0
    pending: list[WatchEvent] = field(default_factory=list)
    dirty: bool = False
    ending: bool = False  # BUGGIFY's apiserver.watch-end chose when it ends

    @property
    def key(self) -> tuple[str, str]:
        return (self.client, self.watch_id)


@dataclass(eq=False)
class _EtcdStream:
    watch_id: str
    member: str
    expected: int = 1
    heard: bool = False
    broken: bool = False
    broken_event: trio.Event = field(default_factory=trio.Event)
    lost: bool = False  # BUGGIFY's apiserver.etcd-watch-end reset its connection


#: Indexed triggers: the field whose exact value files a watcher of the resource
#: (kube-apiserver has one, ``spec.nodeName`` for pods).
TRIGGER_FIELDS = {"pods": "spec.nodeName"}


class _Watchers:
    """The watchers of one resource, in registration order, with those whose field
    selector pins the resource's trigger field filed under the value it must have."""

    __slots__ = ("field", "all", "order", "unfiled", "by_value", "_sequence")

    def __init__(self, resource: str) -> None:
        self.field = TRIGGER_FIELDS.get(resource)
        self.all: dict[tuple[str, str], _ApiWatcher] = {}
        self.order: dict[tuple[str, str], int] = {}
        self.unfiled: dict[tuple[str, str], _ApiWatcher] = {}
        self.by_value: dict[str, dict[tuple[str, str], _ApiWatcher]] = {}
        self._sequence = 0

    def trigger(self, watcher: _ApiWatcher) -> str | None:
        """The value ``watcher`` is filed under: an equality on the trigger field."""
        expr = watcher.scope.field_expr
        if self.field is None or expr is None:
            return None
        for requirement in expr.requirements:
            if requirement.field == self.field and requirement.operator == "=":
                return requirement.value
        return None

    def add(self, watcher: _ApiWatcher) -> None:
        key = watcher.key
        self.discard(key)
        self._sequence += 1
        self.all[key] = watcher
        self.order[key] = self._sequence
        value = self.trigger(watcher)
        if value is None:
            self.unfiled[key] = watcher
        else:
            self.by_value.setdefault(value, {})[key] = watcher

    def discard(self, key: tuple[str, str]) -> None:
        watcher = self.all.pop(key, None)
        if watcher is None:
            return
        del self.order[key]
        value = self.trigger(watcher)
        if value is None:
            del self.unfiled[key]
        else:
            filed = self.by_value[value]
            del filed[key]
            if not filed:
                del self.by_value[value]

    def for_event(self, values: tuple[str, ...]) -> list[_ApiWatcher]:
        """The watchers an event whose objects have trigger ``values`` may concern, in
        registration order."""
        if self.field is None or not self.by_value:
            return list(self.all.values())
        chosen = list(self.unfiled.values())
        for value in dict.fromkeys(values):
            filed = self.by_value.get(value)
            if filed:
                chosen.extend(filed.values())
        if len(chosen) != len(self.unfiled):
            order = self.order
            chosen.sort(key=lambda watcher: order[watcher.key])
        return chosen


class Cacher:
    """The watch cache of one API server process. See the module docstring."""

    def __init__(
        self,
        process: Process,
        etcd_client: EtcdClient,
        *,
        bookmark_every_s: float = DEFAULT_BOOKMARK_EVERY_S,
        probe_every_s: float = 1.0,
        min_request_timeout_s: float = MIN_REQUEST_TIMEOUT_S,
        lower_capacity: int = LOWER_CAPACITY,
        upper_capacity: int = UPPER_CAPACITY,
        fresh_s: float = EVENT_FRESH_S,
    ) -> None:
        assert bookmark_every_s > 0 and probe_every_s > 0 and min_request_timeout_s > 0
        self.process = process
        self.etcd = etcd_client
        self.bookmark_every_s = bookmark_every_s
        self.probe_every_s = probe_every_s
        self.min_request_timeout_s = min_request_timeout_s
        self._cache_options = {"lower_capacity": lower_capacity, "upper_capacity": upper_capacity, "fresh_s": fresh_s}
        self.ready = False
        self._ready_event = trio.Event()
        self._caches: dict[str, ResourceCache] = {}
        self._list_revision: int | None = None
        self._revision = 0
        self._fresh_waiters: list[tuple[int, trio.Event]] = []
        self._stream: _EtcdStream | None = None
        self._streams = 0
        self._idle_revision = 0
        self._listed_just_now = False
        self._watchers: dict[tuple[str, str], _ApiWatcher] = {}
        self._by_resource: dict[str, _Watchers] = {}
        self._dirty: list[_ApiWatcher] = []
        self._flush_scheduled = False
        self._timeouts = process.random("watch-timeout")
        self.relists = 0
        self.rewatches = 0
        self.watchers_closed = 0
        #: Set by :meth:`stall`: the etcd stream delivers nothing until :meth:`resume`.
        self.stalled = False

    # -- lag -------------------------------------------------------------------------------
    def stall(self) -> None:
        """The etcd watch feeding the cache stops delivering (see the module docstring)."""
        if not self.stalled:
            self.stalled = True
            self.process.world.record("watch-cache", server=self.process.name, event="stalled", revision=self._revision)

    def resume(self) -> None:
        """The stalled stream ends; the cache watches again from its revision + 1."""
        if self.stalled:
            self.stalled = False
            self.process.world.record("watch-cache", server=self.process.name, event="resumed", revision=self._revision)
            if self._stream is not None:
                self._end_stream(self._stream)

    # -- snapshot reads -------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        """The newest etcd revision the cache has seen (its list or an event)."""
        return self._revision

    @property
    def etcd_member(self) -> str | None:
        """The etcd member whose watch stream feeds the cache now, if any."""
        return self._stream.member if self._stream is not None else None

    def cache(self, resource: str) -> ResourceCache:
        """The cache of ``resource`` (made on first use: a resource with no key at the last
        list and no event since is empty as of that list)."""
        cache = self._caches.get(resource)
        if cache is None:
            cache = self._caches[resource] = ResourceCache(resource, **self._cache_options)
            if self._list_revision is not None:
                cache.replace([], self._list_revision, self.process.now())
                cache.advance(self._revision)
        return cache

    def objects(self, resource: str) -> list[Object]:
        """Every cached object of ``resource``, by key (the cache's own: read only)."""
        return self.cache(resource).list()

    def statistics(self) -> dict[str, Any]:
        return {
            "ready": self.ready, "revision": self._revision, "relists": self.relists,
            "rewatches": self.rewatches, "watchers": len(self._watchers), "watchers_closed": self.watchers_closed,
        }

    # -- waiting --------------------------------------------------------------------------
    async def wait_ready(self) -> None:
        while not self.ready:  # bounded by the process: ready comes back after every relist
            await self._ready_event.wait()

    async def wait_fresh(self, resource_version: int, timeout_s: float = BLOCK_TIMEOUT_S) -> bool:
        """``waitUntilFreshAndBlock``: whether the cache saw ``resource_version`` within
        ``timeout_s`` of the process clock."""
        if self._revision >= resource_version:
            return True
        waiter = (resource_version, trio.Event())
        self._fresh_waiters.append(waiter)
        try:
            with self.process.move_on_after(timeout_s):
                await waiter[1].wait()
        finally:
            if waiter in self._fresh_waiters:
                self._fresh_waiters.remove(waiter)
        return self._revision >= resource_version

    def _advance(self, revision: int) -> None:
        if revision <= self._revision:
            return
        self._revision = revision
        for cache in self._caches.values():
            cache.advance(revision)
        if self._fresh_waiters:
            still = []
            for wanted, event in self._fresh_waiters:
                if wanted <= revision:
                    event.set()
                else:
                    still.append((wanted, event))
            self._fresh_waiters = still

    # -- the etcd side --------------------------------------------------------------------
    async def run(self) -> None:
        """List, then watch for ever (see the module docstring)."""
        self.process.on_message(ETCD_WATCH_PORT, self._on_etcd_message)
        await self._list()
        while True:  # unbounded by design, rate-limited: each round is a watch or a retry
            compacted = await self._watch(self._revision + 1)
            if compacted:
                self._reinitialize()
                await self._list()

    async def _list(self) -> None:
        """List ``/registry/`` (linearizable) until it works, then replace every cache."""
        process = self.process
        request = RangeRequest(REGISTRY_PREFIX, prefix_range_end(REGISTRY_PREFIX))
        while True:
            result = await self.etcd.request(request, idempotent=True)
            if result.ok:
                break
            await process.sleep(RELIST_RETRY_S)
        response = result.reply.response
        revision = response.header_revision
        grouped: dict[str, list[tuple[str, Object]]] = {}
        for kv in response.kvs:
            resource = resource_of_key(kv.key)
            obj = self._decode(kv) if resource is not None else None
            if obj is not None:
                grouped.setdefault(resource, []).append((kv.key, obj))
        now = process.now()
        for resource in sorted(set(self._caches) | set(grouped)):
            self.cache(resource).replace(grouped.get(resource, []), revision, now)
        first = self._list_revision is None
        self._list_revision = revision
        self._advance(revision)
        self.ready = True
        self._ready_event.set()
        self._listed_just_now = True
        if not first:
            self.relists += 1
        process.world.record("watch-cache", server=process.name, event="ready" if first else "relist", revision=revision)

    def _reinitialize(self) -> None:
        """The reflector's ListAndWatch failed: not ready, every watcher terminated."""
        self.ready = False
        self._ready_event = trio.Event()
        for watcher in list(self._watchers.values()):
            self._close(watcher)

    async def _watch(self, start_revision: int) -> bool:
        """One etcd watch stream from ``start_revision`` until it breaks. Returns whether
        etcd refused it as compacted."""
        process = self.process
        self._streams += 1
        member = self.etcd.endpoint
        stream = _EtcdStream(f"{process.name}/cacher/{process.incarnation}/{self._streams}", member)
        self._stream = stream  # before the call: the catch-up follows the reply at once
        # WithRequireLeader, as kube-apiserver's etcd3 watcher: a member cut off from the
        # quorum stops answering "alive", and the stream moves to another member.
        create = WatchCreate(stream.watch_id, REGISTRY_PREFIX, prefix_range_end(REGISTRY_PREFIX), start_revision, require_leader=True)
        created = await process.call(member, create, port=ETCD_WATCH_PORT, timeout_s=self.etcd.timeout_s)
        answer = created.value if isinstance(created, Ok) and isinstance(created.value, dict) else {}
        if not answer.get("created"):
            self._stream = None
            if answer.get("error") == CompactedError.message:
                return True
            if isinstance(created, Unknown):  # it may exist on the member: stop it
                process.start_soon(self._cancel, member, stream.watch_id)
            self.etcd.rotate()
            await process.sleep(REWATCH_RETRY_S)
            return False
        if not self._listed_just_now:
            self.rewatches += 1
            process.world.record("watch-cache", server=process.name, event="rewatch", revision=start_revision, member=member)
        self._listed_just_now = False
        while not stream.broken:
            stream.heard = False
            with process.move_on_after(self.probe_every_s):
                await stream.broken_event.wait()
            if stream.broken or stream.heard or self.stalled:
                continue
            progress = await process.call(member, WatchProgress(stream.watch_id), port=ETCD_WATCH_PORT, timeout_s=self.etcd.timeout_s)
            answer = progress.value if isinstance(progress, Ok) and isinstance(progress.value, dict) else {}
            if not answer.get("alive"):
                break
            if self._suspect(answer.get("revision", 0)):
                break
        self._stream = None
        process.start_soon(self._cancel, member, stream.watch_id)
        self.etcd.rotate()
        return False

    def _suspect(self, member_revision: int) -> bool:
        """Whether an idle stream whose member is past what we saw may have lost its
        tail (messages dropped in flight, e.g. by a partition, with none after them to
        show the gap). We then watch again from what we saw + 1: a new stream's catch-up
        brings what was lost. Once per member revision: if a new stream stays idle at
        the same revision, the writes past us were outside ``/registry/``."""
        if member_revision <= self._revision or member_revision == self._idle_revision:
            return False
        self._idle_revision = member_revision
        return True

    @staticmethod
    def _end_stream(stream: _EtcdStream) -> None:
        """The stream ends (a gap in its sequence, or BUGGIFY's ``apiserver.etcd-watch-end``),
        as when etcd closes it: the loop in :meth:`_watch` then cancels it and watches again."""
        if not stream.broken:
            stream.broken = True
            stream.broken_event.set()

    async def _cancel(self, member: str, watch_id: str) -> None:
        """Tell the member to stop a stream we left (it may still be sending)."""
        await self.process.call(member, WatchCancel(watch_id), port=ETCD_WATCH_PORT, timeout_s=self.etcd.timeout_s)

    def _on_etcd_message(self, message: Message) -> None:
        """A message of an etcd watch stream, at delivery: events of the current stream
        in sequence are applied; a gap breaks the stream."""
        body, stream = message.body, self._stream
        if stream is None or stream.broken or not isinstance(body, WatchEvents) or body.watch_id != stream.watch_id:
            return
        if stream.lost:  # BUGGIFY ended it: nothing more arrives on it
            return
        stream.heard = True
        if self.stalled:  # stuck: nothing of it reaches the cache (resume() watches again)
            stream.expected += 1
            return
        if body.sequence != stream.expected:
            self._end_stream(stream)
            return
        process = self.process
        if process.world.buggify.enabled:
            # BUGGIFY: the connection resets with this message in flight: it is lost, and
            # the stream ends (noticed a moment later); the next watch's catch-up must
            # bring what was lost
            notice = process.world.buggify.delay_s("apiserver.etcd-watch-end", process)
            if notice:
                stream.lost = True
                process.call_later(notice, self._end_stream, stream)
                return
        stream.expected += 1
        self._on_events(body.events)

    def _decode(self, kv: KeyValue) -> Object | None:
        try:
            obj = decode_value(kv.value, kv.key)
        except ManifestError as error:
            self.process.world.record("watch-cache", server=self.process.name, event="decode-error", key=kv.key, revision=kv.mod_revision, error=str(error)[:200])
            return None
        return with_resource_version(obj, kv.mod_revision)

    def _on_events(self, events: tuple[Event, ...]) -> None:
        now = self.process.now()
        newest = self._revision
        for event in events:
            revision = event.kv.mod_revision
            newest = max(newest, revision)
            resource = resource_of_key(event.kv.key)
            if resource is None:
                continue
            cache = self.cache(resource)
            if event.type == "DELETE":
                cached = cache.apply("DELETED", event.kv.key, None, None, revision, now)
            else:
                obj = self._decode(event.kv)
                if obj is None:
                    continue
                created = event.kv.create_revision == event.kv.mod_revision  # etcd3 watcher: isCreated
                cached = cache.apply("ADDED" if created else "MODIFIED", event.kv.key, obj, None, revision, now)
            if cached is not None:
                self._dispatch(resource, cached)
        self._advance(newest)

    # -- API watchers ---------------------------------------------------------------------
    def start_watch(self, message: Message, request: Request, resource: str, initial_events: list[Any] | None = None, *, revision: int | None = None) -> bool:
        """Serve ``request`` (verb watch) for ``message.src``: answer it, then stream.

        - ``resource_version`` "" with ``initial_events`` (``WatchEvent``s or objects of
          the state the server read from etcd at ``revision``): those, then every event
          after ``revision`` (the stream takes ownership of those objects);
        - "0" (or "" without ``initial_events``): ADDED for the cache's current objects,
          then every event after the cache's resourceVersion;
        - "N": every event after N, or 410 Expired at once if the history no longer
          reaches back to N.
        The server is expected to have authenticated, authorized and (for "N" ahead of
        the cache) called ``wait_fresh``. Returns whether a stream was started."""
        assert request.verb == "watch" and request.watch_id, request
        if not self.ready:
            return self._refuse(message, not_ready_status())
        try:
            scope = WatchFilter(request.namespace, parse_label_selector(request.label_selector), parse_field_selector(request.field_selector, resource))
        except SelectorError as error:
            return self._refuse(message, bad_request(str(error)))
        cache = self.cache(resource)
        version = request.resource_version
        try:
            if version == "" and initial_events is not None:
                assert revision is not None, "initial events come with the revision they were read at"
                first = [self._initial(scope, item) for item in initial_events]
                start, backlog = revision, cache.events_after(revision)
            elif version in ("", "0"):
                first = [WatchEvent("ADDED", _copy(obj), obj.metadata.resource_version) for obj in cache.list() if scope.matches(obj)]
                start, backlog = cache.resource_version, []
            else:
                start = _parse_resource_version(version)
                if start is None:
                    return self._refuse(message, bad_request(f"invalid resource version: {version!r}"))
                first, backlog = [], cache.events_after(start)
        except TooOldResourceVersion as error:
            return self._refuse(message, error.status)
        watcher = self._register(message.src, request, resource, scope, start)
        if message.call_id:
            self.process.reply(message, Response(200, resource_version=str(start), server=self.process.name))
        events = [event for event in first if event is not None]
        # The backlog is sent as it is (cacher.go processInterval sends the init events
        # without the resourceVersion test that process applies to live ones): events_after
        # alone keeps what the client has out of it.
        events += [converted for converted in (self._convert(watcher, cached, backlog=True) for cached in backlog) if converted is not None]
        if events:
            watcher.last_rv = max(watcher.last_rv, *(int(event.resource_version or 0) for event in events))
            self._send(watcher, events)
        return True

    def _refuse(self, message: Message, status: Status) -> bool:
        if message.call_id:
            self.process.reply(message, Response(status.code, status=status, server=self.process.name))
        return False

    @staticmethod
    def _initial(scope: WatchFilter, item: Any) -> WatchEvent | None:
        obj = item.object if isinstance(item, WatchEvent) else item
        if obj is None or not scope.matches(obj):
            return None
        return WatchEvent("ADDED", obj, obj.metadata.resource_version)

    def _register(self, client: str, request: Request, resource: str, scope: WatchFilter, start: int) -> _ApiWatcher:
        process = self.process
        timeout_s = float(request.timeout_seconds or 0)
        if timeout_s <= 0:  # handlers/get.go: minRequestTimeout * (1 + rand)
            timeout_s = self.min_request_timeout_s * (1.0 + self._timeouts.random())
        now = process.now()
        watcher = _ApiWatcher(client, request.watch_id, resource, scope, request.allow_watch_bookmarks, now + timeout_s, start, last_rv=start)
        old = self._watchers.get(watcher.key)
        if old is not None:
            self._forget(old)
        self._watchers[watcher.key] = watcher
        watchers = self._by_resource.get(resource)
        if watchers is None:
            watchers = self._by_resource[resource] = _Watchers(resource)
        watchers.add(watcher)
        process.call_later(timeout_s, self._on_timeout, watcher)
        self._schedule_bookmark(watcher, now)
        return watcher

    def _current(self, watcher: _ApiWatcher) -> bool:
        return self._watchers.get(watcher.key) is watcher

    def _convert(
        self,
        watcher: _ApiWatcher,
        cached: CachedEvent,
        fields: dict[int, Mapping[str, str]] | None = None,
        copies: dict[int, tuple[Object, Object]] | None = None,
        *,
        backlog: bool = False,
    ) -> WatchEvent | None:
        """What ``watcher`` gets of ``cached``, if anything, with a copy of the object.
        ``copies``: a memo (by source object) shared by the watchers one event is
        dispatched to, so they all get the same copy (see :meth:`_dispatch`). A live event
        at or before the watch's start is skipped (cacher.go ``process``: "only send events
        newer than resourceVersion"); the ``backlog`` is not tested (``processInterval``)."""
        if not backlog and cached.resource_version <= watcher.start_rv:
            return None  # already part of the client's initial state
        event = watcher.scope.convert(cached, fields)
        if event is None:
            return None
        assert event.object is not None
        if copies is None:
            return WatchEvent(event.type, _copy(event.object), event.resource_version)
        source = event.object
        entry = copies.get(id(source))
        if entry is None or entry[0] is not source:  # the memo holds ``source``: its id stays its own
            entry = copies[id(source)] = (source, _copy(source))
        return WatchEvent(event.type, entry[1], event.resource_version)

    def _dispatch(self, resource: str, cached: CachedEvent) -> None:
        watchers = self._by_resource.get(resource)
        if not watchers or not watchers.all:
            return
        fields: dict[int, Mapping[str, str]] = {}  # selectable_fields per object, for every watcher
        values: tuple[str, ...] = ()
        if watchers.field is not None and watchers.by_value:
            for obj in (cached.object, cached.prev_object):
                if obj is not None:
                    selectable = fields.get(id(obj))
                    if selectable is None:
                        selectable = fields[id(obj)] = selectable_fields(obj)
                    values += (selectable.get(watchers.field, ""),)
        # One copy of the event's object for every watcher it goes to, not one each: the
        # copy is shared with nothing in this server, and clients treat what a watch
        # delivers as read-only (client-go: objects from an informer's cache must not be
        # mutated; controllers deep-copy before changing one). A 50-node run made ~18 000
        # copies per seed here, mostly EndpointSlices for 50 kube-proxies; now ~7 000.
        copies: dict[int, tuple[Object, Object]] = {}
        for watcher in watchers.for_event(values):
            event = self._convert(watcher, cached, fields, copies)
            if event is not None:
                watcher.last_rv = max(watcher.last_rv, cached.resource_version)
                self._enqueue(watcher, event)

    def _enqueue(self, watcher: _ApiWatcher, event: WatchEvent) -> None:
        watcher.pending.append(event)
        if len(watcher.pending) > WATCHER_PENDING_LIMIT:
            self.process.world.record("watch-cache", server=self.process.name, event="watcher-closed", reason="overflow", client=watcher.client, watch_id=watcher.watch_id)
            watcher.pending = []
            self._close(watcher)
            return
        if not watcher.dirty:
            watcher.dirty = True
            self._dirty.append(watcher)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.process.call_later(0.0, self._flush)

    def _flush(self, _: Any = None) -> None:
        """Send what each watcher gathered in this instant, one message each."""
        self._flush_scheduled = False
        dirty, self._dirty = self._dirty, []
        for watcher in dirty:
            watcher.dirty = False
            if self._current(watcher) and watcher.pending:
                events, watcher.pending = watcher.pending, []
                self._send(watcher, events)

    def _send(self, watcher: _ApiWatcher, events: list[WatchEvent], *, closed: bool = False) -> None:
        watcher.sequence += 1
        body = WatchMessage(watcher.watch_id, watcher.sequence, tuple(events), closed=closed)
        process = self.process
        process.send(watcher.client, body, port=WATCH_PORT, duplicable=False, stream=watcher.watch_id)
        if not closed and events and not watcher.ending and process.world.buggify.enabled:
            # BUGGIFY: after it delivered events, the watch ends early, as at its timeout
            # (the client resumes from the last resourceVersion it received)
            lifetime = process.world.buggify.delay_s("apiserver.watch-end", process)
            if lifetime:
                watcher.ending = True
                process.call_later(lifetime, self._on_timeout, watcher)

    def _forget(self, watcher: _ApiWatcher) -> None:
        self._watchers.pop(watcher.key, None)
        by_resource = self._by_resource.get(watcher.resource)
        if by_resource is not None:
            by_resource.discard(watcher.key)

    def _close(self, watcher: _ApiWatcher) -> None:
        """End the stream: what is pending, then ``closed=True``."""
        if not self._current(watcher):
            return
        self._forget(watcher)
        events, watcher.pending = watcher.pending, []
        self._send(watcher, events, closed=True)
        self.watchers_closed += 1

    def _schedule_bookmark(self, watcher: _ApiWatcher, now: float) -> None:
        """``nextBookmarkTime``: every ``bookmark_every_s``, and 2 s before the deadline."""
        if not watcher.bookmarks:
            return
        before_deadline = watcher.deadline - BOOKMARK_BEFORE_TIMEOUT_S
        heartbeat = now + self.bookmark_every_s
        final = before_deadline <= heartbeat
        at = before_deadline if final else heartbeat
        if at < now:
            return
        self.process.call_later(at - now, self._on_bookmark, (watcher, final))

    def _on_bookmark(self, argument: tuple[_ApiWatcher, bool]) -> None:
        watcher, final = argument
        if not self._current(watcher):
            return
        version = max(self.cache(watcher.resource).resource_version, watcher.last_rv)
        watcher.last_rv = version
        self._enqueue(watcher, WatchEvent("BOOKMARK", None, str(version)))
        if not final:
            self._schedule_bookmark(watcher, self.process.now())

    def _on_timeout(self, watcher: _ApiWatcher) -> None:
        self._close(watcher)

    def probe(self, message: Message) -> None:
        """A ``WatchProbe`` the server forwarded: is the client's stream open?"""
        watcher = self._watchers.get((message.src, message.body.watch_id))
        if message.call_id:
            # ``sent``: the sequence number of the last message sent on the stream, so the
            # client can tell a message the network lost (TCP would have retransmitted it)
            # from a quiet stream (chaoskube.client.client, "Watches").
            self.process.reply(message, {"alive": watcher is not None, "sent": watcher.sequence if watcher is not None else 0})

    def stop(self, message: Message) -> None:
        """A ``WatchStop`` the server forwarded: the client closes its stream."""
        watcher = self._watchers.get((message.src, message.body.watch_id))
        if watcher is not None:
            self._forget(watcher)
        if message.call_id:
            self.process.reply(message, {"stopped": watcher is not None})


def _parse_resource_version(text: str) -> int | None:
    """A resourceVersion as the etcd3 versioner parses it: a non-negative integer."""
    if not text.isdigit():
        return None
    return int(text)

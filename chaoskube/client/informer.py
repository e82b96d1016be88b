"""Shared informers, as client-go's ``tools/cache``: an indexed local cache of one kind,
kept up to date by list + watch, with event handlers.

Layers:

- :class:`Indexer` — ``store.go`` / ``thread_safe_store.go`` / ``index.go``: objects by
  key (``MetaNamespaceKeyFunc``: ``<namespace>/<name>``, or ``<name>`` for a cluster-scoped
  object) and by named indexes (``add_indexers({name: fn(obj) -> list[str]})``,
  ``by_index(name, value)``); the namespace index (``cache.NamespaceIndex``, "namespace")
  is built in. Every listing is sorted by key, so iteration never depends on insertion
  or set order.
- :class:`Reflector` — ``reflector.go`` ``ListAndWatch``: list with resourceVersion "0"
  (any cached state, served by the watch cache) the first time and the last synced
  resourceVersion after that (``relistResourceVersion``), "" after a list answered 410 Gone
  (``isLastSyncResourceVersionUnavailable``); then watch from the list's resourceVersion
  with ``allowWatchBookmarks`` and ``timeoutSeconds`` drawn in [300, 600)
  (``minWatchTimeout`` 5 min, ``* (rand + 1)``). A stream the server closed or that broke
  (lost message, dead server: see :mod:`chaoskube.client.client`) is re-watched at once from
  the last resourceVersion seen, on the next server after a break. A watch refused or
  answered 429 (or ended by a 429 ERROR event) backs off and watches again
  (``isWatchErrorRetriable``); any other watch failure — 410 Expired in the answer or as
  an ERROR event, a "very short watch" (closed within 1 s with no event), a timeout —
  ends ``ListAndWatch``: after the backoff the reflector lists again (a 404 list syncs
  the store empty first). ``Run`` is ``wait.BackoffUntil(ListAndWatch, backoff, sliding)``:
  the backoff is taken after every ``ListAndWatch``, with the
  ``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)`` parameters: 0.8 s doubling
  to a 30 s cap, jitter factor 1.0 (each wait in [d, 2d)), reset after 2 min without one.
- :class:`SharedInformer` — ``shared_informer.go``: the reflector feeds the indexer and the
  handlers directly (client-go's DeltaFIFO drained at once). A relist is a ``Replace``
  (``delta_fifo.go``): new keys -> ``on_add``; keys whose resourceVersion changed ->
  ``on_update(old, new)``; unchanged ones are stored silently (client-go treats them as
  resync events, delivered only to handlers due for a resync); keys that vanished ->
  ``on_delete(DeletedFinalStateUnknown(key, last_known))``. Watch events: ADDED/MODIFIED
  -> ``on_update`` if the key is cached, else ``on_add`` (``processDeltas``); DELETED ->
  ``on_delete(final object)``. With ``resync_s`` > 0, every ``resync_s`` each cached
  object is delivered as ``on_update(obj, obj)``.
- :class:`SharedInformerFactory` — ``informers/factory.go``: one informer per (resource,
  namespace, selectors), ``start``, ``wait_for_cache_sync``.

Handlers are plain functions, called synchronously, in registration order, with the
cached objects themselves: like client-go's, they are shared — do not mutate them (copy
with :func:`chaoskube.api.objects.deep_copy` first). A handler added after the informer
synced first gets ``on_add`` for every cached object (``AddEventHandler``). A handler must
not block; an exception in a handler propagates and fails the informer's task (client-go
crashes the process on a handler panic).

Journal: ``{"type": "informer", "name", "resource", "event", "resource_version"}``
with event "synced" (first list done), "relist" (a later list), "rewatch" (a new watch
after a stream ended or broke; ``reason``), "gone" (a 410 from a list or a watch). For the
api-watch checker (:mod:`chaoskube.checkers.api_watch`): ``watch-open`` {name, watch,
server, resource, namespace, from_rv, label_selector and field_selector when given} when
a watch is answered, ``watch-recv``
{name, watch, events} per message received, each event ``[type, key, resourceVersion]``
(BOOKMARK: key ""; ERROR: key "", the Status code as a string), and, when asked
(:func:`record_informer_caches`, at the end of a run), ``informer-cache`` {name,
resource, namespace, resource_version, items, and the selectors} with the cache as ``[key,
resourceVersion]`` pairs, for every informer running then.

Non-guarantees: no pagination; handlers are not decoupled by per-listener buffers (a slow
handler delays the others and the watch); no per-handler resync periods; no watch-list
(``sendInitialEvents``) streaming.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from chaoskube.api.protocol import WatchEvent
from chaoskube.sim.buggify import maybe_sleep as _buggify_sleep
from chaoskube.client.client import ApiClient, ApiError, WatchBroken, WatchEnded, WatchStream

__all__ = [
    "DeletedFinalStateUnknown",
    "ExponentialBackoff",
    "Indexer",
    "LABEL_INDEX",
    "NAMESPACE_INDEX",
    "Reflector",
    "ReflectorStore",
    "SharedInformer",
    "SharedInformerFactory",
    "meta_namespace_index",
    "namespace_label_index",
    "meta_namespace_key",
    "record_informer_caches",
    "split_meta_namespace_key",
]

#: ``cache.NamespaceIndex``.
NAMESPACE_INDEX = "namespace"
#: ``reflector.go`` ``minWatchTimeout``: watches time out in [5, 10) minutes.
MIN_WATCH_TIMEOUT_S = 300
#: ``reflector.go`` ``watchHandler``: a watch shorter than this with no event is an error.
VERY_SHORT_WATCH_S = 1.0

IndexFunc = Callable[[Any], list[str]]
Handler = Callable[..., None]


# =========================================================================== keys
@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """``cache.DeletedFinalStateUnknown``: an object that vanished while the watch was
    down; ``obj`` is the last state the cache knew (it may be stale)."""

    key: str
    obj: Any


def meta_namespace_key(obj: Any) -> str:
    """``MetaNamespaceKeyFunc`` (``DeletionHandlingMetaNamespaceKeyFunc`` for tombstones)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    metadata = obj.metadata
    assert metadata.name, "an object is keyed by its name"
    return f"{metadata.namespace}/{metadata.name}" if metadata.namespace else metadata.name


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """``SplitMetaNamespaceKey``: (namespace, name)."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def meta_namespace_index(obj: Any) -> list[str]:
    """``MetaNamespaceIndexFunc``: a cluster-scoped object indexes under ""."""
    return [obj.metadata.namespace]


#: An index of (namespace, label) pairs: what :meth:`Indexer.by_labels` narrows a
#: selector's candidates with. (A Service's or a PDB's pods, looked up per sync, were a
#: scan of the namespace's pods each time: client-go's ``podLister.Pods(ns).List``.)
LABEL_INDEX = "chaoskube.namespace-label"


def namespace_label_index(obj: Any) -> list[str]:
    """``namespace/key=value`` for each label (neither a label key nor its value may hold
    "=", nor a namespace "/")."""
    namespace = obj.metadata.namespace
    return [f"{namespace}/{key}={value}" for key, value in obj.metadata.labels.items()]


# =========================================================================== indexer
class Indexer:
    """``cache.Indexer``: a keyed store with named indexes (see the module docstring).
    Not bounded: it holds what the server has of its kind, as client-go's does."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None, *, key_func: Callable[[Any], str] = meta_namespace_key) -> None:
        self.key_func = key_func
        self._items: dict[str, Any] = {}
        self._sorted_keys: list[str] | None = None  # sorted(self._items), until a key comes or goes
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self.add_indexers({NAMESPACE_INDEX: meta_namespace_index})
        if indexers:
            self.add_indexers(indexers)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    # -- writes -------------------------------------------------------------------------
    def add(self, obj: Any) -> None:
        self._put(self.key_func(obj), obj)

    def update(self, obj: Any) -> None:
        self._put(self.key_func(obj), obj)

    def delete(self, obj: Any) -> None:
        key = self.key_func(obj)
        old = self._items.pop(key, None)
        if old is not None:
            self._sorted_keys = None
            self._unindex(key, old)

    def replace(self, items: Iterable[Any]) -> None:
        """Drop everything and store ``items`` (``Store.Replace``)."""
        self._items = {}
        self._sorted_keys = None
        self._indices = {name: {} for name in self._indexers}
        for obj in items:
            self.add(obj)

    def _put(self, key: str, obj: Any) -> None:
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        else:
            self._sorted_keys = None
        self._items[key] = obj
        self._index(key, obj)

    def _index(self, key: str, obj: Any) -> None:
        for name, function in self._indexers.items():
            index = self._indices[name]
            for value in function(obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Any) -> None:
        for name, function in self._indexers.items():
            index = self._indices[name]
            for value in function(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Add named index functions; existing items are indexed at once (client-go allows
        this since ``threadSafeMap.AddIndexers`` learnt to). A name already in use raises
        ValueError ("indexer conflict")."""
        for name in sorted(indexers):
            if name in self._indexers:
                raise ValueError(f"indexer conflict: {name}")
        for name in sorted(indexers):
            self._indexers[name] = indexers[name]
            self._indices[name] = {}
            for key, obj in self._items.items():
                for value in indexers[name](obj):
                    self._indices[name].setdefault(value, set()).add(key)

    # -- reads (sorted by key) ----------------------------------------------------------
    def get_by_key(self, key: str) -> Any | None:
        return self._items.get(key)

    def get(self, obj: Any) -> Any | None:
        return self._items.get(self.key_func(obj))

    def _keys(self) -> list[str]:
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self._items)
        return self._sorted_keys

    def list_keys(self) -> list[str]:
        return list(self._keys())

    def list(self) -> list[Any]:
        items = self._items
        return [items[key] for key in self._keys()]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        if index_name not in self._indexers:
            raise KeyError(f"index with name {index_name} does not exist")
        return sorted(self._indices[index_name].get(value, ()))

    def by_index(self, index_name: str, value: str) -> list[Any]:
        """The objects whose index function ``index_name`` yields ``value``."""
        return [self._items[key] for key in self.index_keys(index_name, value)]

    def ensure_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """:meth:`add_indexers` for the names not yet in use (several controllers share
        one informer and each may ask for the same index)."""
        missing = {name: function for name, function in indexers.items() if name not in self._indexers}
        if missing:
            self.add_indexers(missing)

    def by_labels(self, namespace: str, labels: Mapping[str, str]) -> list[Any]:
        """The objects of ``namespace`` whose labels include every pair of ``labels``, by
        key: ``[o for o in by_index(NAMESPACE_INDEX, namespace) if labels ⊆ o's labels]``.
        With :data:`LABEL_INDEX` only the smallest pair's objects are looked at."""
        items = self._items
        if not labels or LABEL_INDEX not in self._indexers:
            keys = self.index_keys(NAMESPACE_INDEX, namespace)
        else:
            index = self._indices[LABEL_INDEX]
            smallest: set[str] | None = None
            for key, value in labels.items():
                bucket = index.get(f"{namespace}/{key}={value}")
                if not bucket:
                    return []
                if smallest is None or len(bucket) < len(smallest):
                    smallest = bucket
            keys = sorted(smallest or ())
        out = []
        for key in keys:
            obj = items[key]
            own = obj.metadata.labels
            if all(own.get(name) == value for name, value in labels.items()):
                out.append(obj)
        return out

    def list_index_values(self, index_name: str) -> list[str]:
        """``ListIndexFuncValues``: every value the index holds."""
        if index_name not in self._indexers:
            raise KeyError(f"index with name {index_name} does not exist")
        return sorted(self._indices[index_name])


# =========================================================================== backoff
class ExponentialBackoff:
    """``wait.NewExponentialBackoffManager(initial, cap, reset, factor, jitter)``
    (``apimachinery/pkg/util/wait/backoff.go``) as the reflector uses it: each wait is ``d + u * jitter * d``; ``d`` starts at
    ``initial_s`` and is multiplied by ``factor`` per wait until it reaches ``cap_s``
    (``Backoff.Step``); a wait asked for more than ``reset_s`` after the previous one
    starts again from ``initial_s``. Pure: the caller passes ``now`` and ``u`` in [0, 1)."""

    def __init__(self, now: float, *, initial_s: float = 0.8, cap_s: float = 30.0, reset_s: float = 120.0, factor: float = 2.0, jitter: float = 1.0) -> None:
        self.initial_s = initial_s
        self.cap_s = cap_s
        self.reset_s = reset_s
        self.factor = factor
        self.jitter = jitter
        self._duration_s = initial_s
        self._capped = False
        self._last_start = now

    def next(self, now: float, uniform: float) -> float:
        assert 0.0 <= uniform < 1.0
        if now - self._last_start > self.reset_s:
            self._duration_s, self._capped = self.initial_s, False
        self._last_start = now
        duration = self._duration_s
        if not self._capped:
            self._duration_s = duration * self.factor
            if self._duration_s > self.cap_s:
                self._duration_s, self._capped = self.cap_s, True
        return duration + uniform * self.jitter * duration


# =========================================================================== reflector
class ReflectorStore(Protocol):
    """Where a reflector puts what it learns (client-go's ``Store`` as the reflector sees
    it: ``Replace``, and Add / Update / Delete per watch event)."""

    def replace(self, items: tuple[Any, ...], resource_version: str) -> None: ...

    def apply(self, event: WatchEvent) -> None: ...


class _ListAndWatchEnded(Exception):
    """``ListAndWatch`` returned (with an error or after a watch error): back off, relist."""


class _Throttled(Exception):
    """A watch ended with 429: back off and watch again (``Reflector.watch``)."""


class Reflector:
    """client-go's ``Reflector`` for one (resource, namespace, selectors) over an
    :class:`~chaoskube.client.client.ApiClient`. ``await run()`` never returns."""

    def __init__(
        self,
        client: ApiClient,
        resource: str,
        store: ReflectorStore,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        name: str = "",
    ) -> None:
        self.client = client
        self.process = client.process
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.name = name or f"{client.name}/{resource}"
        self.last_sync_resource_version = ""
        self.last_sync_resource_version_unavailable = False
        self.lists = 0
        self.watches = 0
        self._random = self.process.random(f"reflector/{self.name}")
        self.backoff = ExponentialBackoff(self.process.now())

    def _record(self, event: str, **fields: Any) -> None:
        self.process.world.record(
            "informer", name=self.name, resource=self.resource, event=event, resource_version=self.last_sync_resource_version, **fields
        )

    async def run(self) -> None:
        """``wait.BackoffUntil(ListAndWatch, backoffManager, sliding=true)``."""
        while True:
            try:
                await self.list_and_watch()
            except (_ListAndWatchEnded, ApiError):
                pass
            await self._backoff()

    async def _backoff(self) -> None:
        await self.process.sleep(self.backoff.next(self.process.now(), self._random.random()))

    # -- list ---------------------------------------------------------------------------
    def relist_resource_version(self) -> str:
        """``relistResourceVersion``: "" after a 410, "0" the first time, else the last."""
        if self.last_sync_resource_version_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def list(self) -> None:
        """``Reflector.list``: list (again with "" after a 410 Gone) and replace the store.
        Raises ApiError when the list fails."""
        try:
            items, resource_version = await self._list_once()
        except ApiError as error:
            if error.code != 410:
                if error.code == 404:  # the kind is not served: sync with nothing, as client-go
                    self.store.replace((), "")
                raise
            self._record("gone", reason=error.message)
            self.last_sync_resource_version_unavailable = True
            items, resource_version = await self._list_once()
        self.last_sync_resource_version_unavailable = False
        self.lists += 1
        self.store.replace(items, resource_version)
        self.last_sync_resource_version = resource_version
        self._record("synced" if self.lists == 1 else "relist")

    async def _list_once(self) -> tuple[tuple[Any, ...], str]:
        listed = await self.client.list(
            self.resource, self.namespace, label_selector=self.label_selector, field_selector=self.field_selector,
            resource_version=self.relist_resource_version(),
        )
        return listed.items, listed.resource_version

    # -- watch --------------------------------------------------------------------------
    async def list_and_watch(self) -> None:
        await self.list()
        buggify = self.process.world.buggify
        if buggify.enabled:  # BUGGIFY: the watch is a later request than the list
            await _buggify_sleep(self.process, "informer.list-watch-gap")
        while True:
            stream = await self._open_watch()
            if stream is None:
                await self._backoff()  # refused or 429: watch again after the backoff
                continue
            reason = await self._follow(stream)
            self._record("rewatch", reason=reason)
            if reason == "throttled":
                await self._backoff()

    def selectors(self) -> dict[str, str]:
        """The label and field selectors, as the journal spells them (only those given)."""
        found = {}
        if self.label_selector:
            found["label_selector"] = self.label_selector
        if self.field_selector:
            found["field_selector"] = self.field_selector
        return found

    async def _open_watch(self) -> WatchStream | None:
        timeout_seconds = int(MIN_WATCH_TIMEOUT_S * (self._random.random() + 1.0))
        from_rv = self.last_sync_resource_version
        try:
            stream = await self.client.watch(
                self.resource, self.namespace, label_selector=self.label_selector, field_selector=self.field_selector,
                resource_version=from_rv, allow_watch_bookmarks=True, timeout_seconds=timeout_seconds,
            )
        except ApiError as error:
            if error.refused or error.code == 429:  # isWatchErrorRetriable
                return None
            if error.code == 410:
                self._record("gone", reason=error.message)
            raise _ListAndWatchEnded(str(error)) from error
        self.watches += 1
        self.process.world.record(
            "watch-open", name=self.name, watch=stream.watch_id, server=stream.server, resource=self.resource,
            namespace=self.namespace, from_rv=from_rv, **self.selectors(),
        )
        return stream

    async def _follow(self, stream: WatchStream) -> str:
        """``watchHandler``: apply events until the stream ends (returns why) or fails
        (raises _ListAndWatchEnded)."""
        started = self.process.now()
        events = 0
        try:
            while True:
                try:
                    batch = await stream.next()
                except WatchEnded:
                    reason = "closed"
                    break
                except WatchBroken as broken:
                    self.client.rotate()
                    reason = f"broken: {broken}"
                    break
                if batch:
                    self.process.world.record("watch-recv", name=self.name, watch=stream.watch_id, events=[_event_summary(event) for event in batch])
                    if self.process.world.buggify.enabled:  # BUGGIFY: a slow consumer of the DeltaFIFO
                        await _buggify_sleep(self.process, "informer.watch-event")
                try:
                    for event in batch:
                        self._handle(event)
                        events += 1
                except _Throttled:
                    reason = "throttled"
                    break
        finally:
            stream.stop()
        if events == 0 and self.process.now() - started < VERY_SHORT_WATCH_S:
            raise _ListAndWatchEnded(f"very short watch: {self.name}: watch lasted less than a second and no items received")
        return reason

    def _handle(self, event: WatchEvent) -> None:
        if event.type == "ERROR":
            status = event.status
            assert status is not None, "an ERROR event carries a Status"
            if status.code == 429:
                raise _Throttled(status.message)
            if status.code == 410:
                self._record("gone", reason=status.message)
            raise _ListAndWatchEnded(f"watch error {status.code} {status.reason}: {status.message}")
        if event.type != "BOOKMARK":
            self.store.apply(event)  # a copy shared with nothing in the server; read-only (other watchers of the event may hold it)
        resource_version = event.resource_version
        if not resource_version and event.object is not None:
            resource_version = event.object.metadata.resource_version
        if resource_version:
            self.last_sync_resource_version = resource_version


def _event_summary(event: WatchEvent) -> list[str]:
    """``[type, key, resourceVersion]`` of one watch event, for the journal."""
    if event.type == "ERROR":
        return ["ERROR", "", str(event.status.code if event.status is not None else "")]
    if event.object is None:
        return [event.type, "", event.resource_version]
    meta = event.object.metadata
    key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    return [event.type, key, event.resource_version or meta.resource_version]


# =========================================================================== informer
#: Where a process keeps its informers (``process.memory``: lost with the process).
_INFORMERS_KEY = "chaoskube.client.informer/informers"


def record_informer_caches(world: Any) -> int:
    """Journal an ``informer-cache`` event for every informer running in ``world`` now
    (processes by name, informers in order of creation): its last synced resourceVersion
    and its cache as ``[key, resourceVersion]`` pairs. Returns how many were recorded."""
    recorded = 0
    for name in sorted(world.processes):
        process = world.processes[name]
        if not process.alive:
            continue
        for informer in process.memory.get(_INFORMERS_KEY, ()):
            if not informer.running or not informer.has_synced():
                continue
            reflector = informer.reflector
            world.record(
                "informer-cache", name=informer.name, resource=informer.resource, namespace=informer.namespace,
                resource_version=reflector.last_sync_resource_version, **reflector.selectors(),
                items=[[key, informer.indexer.get_by_key(key).metadata.resource_version] for key in informer.indexer.list_keys()],
            )
            recorded += 1
    return recorded


@dataclass(slots=True)
class _Handlers:
    on_add: Handler | None = None
    on_update: Handler | None = None
    on_delete: Handler | None = None


@dataclass(slots=True)
class _Counters:
    adds: int = 0
    updates: int = 0
    deletes: int = 0
    resyncs: int = 0
    handlers: list[_Handlers] = field(default_factory=list)


class SharedInformer:
    """client-go's ``sharedIndexInformer`` for one (resource, namespace, selectors); see
    the module docstring. ``await run()`` runs it (never returns); ``indexer`` is the cache."""

    def __init__(
        self,
        client: ApiClient,
        resource: str,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        resync_s: float = 0.0,
        indexers: dict[str, IndexFunc] | None = None,
        name: str | None = None,
    ) -> None:
        assert resync_s >= 0
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_s = resync_s
        self.name = name or _informer_name(client, resource, namespace, label_selector, field_selector)
        self.indexer = Indexer(indexers)
        self.reflector = Reflector(
            client, resource, self, namespace=namespace, label_selector=label_selector, field_selector=field_selector, name=self.name
        )
        self._counters = _Counters()
        self._synced = trio.Event()
        self.started = False
        self.running = False
        client.process.memory.setdefault(_INFORMERS_KEY, []).append(self)

    # -- handlers -----------------------------------------------------------------------
    def add_event_handler(self, on_add: Handler | None = None, on_update: Handler | None = None, on_delete: Handler | None = None) -> object:
        """Register handlers; returns a handle for :meth:`remove_event_handler`. After the
        first sync, ``on_add`` is called at once for every cached object."""
        handlers = _Handlers(on_add, on_update, on_delete)
        self._counters.handlers.append(handlers)
        if self.has_synced() and on_add is not None:
            for obj in self.indexer.list():
                on_add(obj)
        return handlers

    def remove_event_handler(self, handle: object) -> None:
        self._counters.handlers = [handlers for handlers in self._counters.handlers if handlers is not handle]

    def _notify_add(self, obj: Any) -> None:
        self._counters.adds += 1
        for handlers in list(self._counters.handlers):
            if handlers.on_add is not None:
                handlers.on_add(obj)

    def _notify_update(self, old: Any, new: Any) -> None:
        self._counters.updates += 1
        for handlers in list(self._counters.handlers):
            if handlers.on_update is not None:
                handlers.on_update(old, new)

    def _notify_delete(self, obj: Any) -> None:
        self._counters.deletes += 1
        for handlers in list(self._counters.handlers):
            if handlers.on_delete is not None:
                handlers.on_delete(obj)

    # -- the reflector's store ------------------------------------------------------------
    def replace(self, items: tuple[Any, ...], resource_version: str) -> None:
        """A (re)list: ``DeltaFIFO.Replace`` then ``processDeltas`` (module docstring)."""
        indexer = self.indexer
        listed = {indexer.key_func(obj): obj for obj in items}
        for key in sorted(listed):
            new, old = listed[key], indexer.get_by_key(key)
            indexer.update(new)
            if old is None:
                self._notify_add(new)
            elif old.metadata.resource_version != new.metadata.resource_version:
                self._notify_update(old, new)
        for key in indexer.list_keys():
            if key not in listed:
                old = indexer.get_by_key(key)
                indexer.delete(old)
                self._notify_delete(DeletedFinalStateUnknown(key, old))
        self._synced.set()

    def apply(self, event: WatchEvent) -> None:
        obj = event.object
        assert obj is not None, f"a {event.type} event carries an object"
        old = self.indexer.get(obj)
        if event.type == "DELETED":
            self.indexer.delete(obj)
            self._notify_delete(obj)
        elif old is None:
            self.indexer.add(obj)
            self._notify_add(obj)
        else:
            self.indexer.update(obj)
            self._notify_update(old, obj)

    # -- running ------------------------------------------------------------------------
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        """Wait until the first list has been delivered (bound it with move_on_after)."""
        await self._synced.wait()

    async def run(self) -> None:
        assert not self.started, f"informer {self.name} runs once"
        self.started = self.running = True
        try:
            async with trio.open_nursery() as nursery:
                if self.resync_s > 0:
                    nursery.start_soon(self._resync_loop)
                await self.reflector.run()
        finally:
            self.running = False
            registry = self.client.process.memory.get(_INFORMERS_KEY)
            if registry is not None and self in registry:
                registry.remove(self)

    async def _resync_loop(self) -> None:
        while True:
            await self.client.process.sleep(self.resync_s)
            if self.has_synced():
                self._counters.resyncs += 1
                for obj in self.indexer.list():
                    self._notify_update(obj, obj)

    def statistics(self) -> dict[str, Any]:
        counters = self._counters
        return {
            "objects": len(self.indexer),
            "adds": counters.adds,
            "updates": counters.updates,
            "deletes": counters.deletes,
            "resyncs": counters.resyncs,
            "lists": self.reflector.lists,
            "watches": self.reflector.watches,
            "synced": self.has_synced(),
        }


def _informer_name(client: ApiClient, resource: str, namespace: str, label_selector: str, field_selector: str) -> str:
    parts = [client.name, resource]
    if namespace:
        parts.append(namespace)
    name = "/".join(parts)
    selectors = ",".join(selector for selector in (label_selector, field_selector) if selector)
    return f"{name}?{selectors}" if selectors else name


# =========================================================================== factory
class SharedInformerFactory:
    """client-go's ``SharedInformerFactory``: one informer per (resource, namespace,
    label selector, field selector), created on first request with the factory's resync
    period unless one is given. ``start`` runs those not yet started."""

    def __init__(self, client: ApiClient, *, resync_s: float = 0.0) -> None:
        self.client = client
        self.resync_s = resync_s
        self._informers: dict[tuple[str, str, str, str], SharedInformer] = {}
        self._started: set[tuple[str, str, str, str]] = set()  # membership only

    def informer(
        self, resource: str, *, namespace: str = "", label_selector: str = "", field_selector: str = "", resync_s: float | None = None
    ) -> SharedInformer:
        key = (resource, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(
                self.client, resource, namespace=namespace, label_selector=label_selector, field_selector=field_selector,
                resync_s=self.resync_s if resync_s is None else resync_s,
            )
            self._informers[key] = informer
        return informer

    def informers(self) -> list[SharedInformer]:
        return [self._informers[key] for key in sorted(self._informers)]

    def start(self, nursery: trio.Nursery | None = None) -> None:
        """Start every informer not yet started, in ``nursery`` or as tasks of the client's
        process (killed with it). Idempotent per informer, as client-go's ``Start``."""
        for key in sorted(self._informers):
            if key in self._started:
                continue
            self._started.add(key)
            informer = self._informers[key]
            if nursery is not None:
                nursery.start_soon(informer.run)
            else:
                self.client.process.start_soon(informer.run, name=f"informer:{informer.name}")

    async def wait_for_cache_sync(self) -> dict[str, bool]:
        """Wait until every informer has synced; answers ``{name: has_synced}``."""
        for informer in self.informers():
            await informer.wait_for_sync()
        return {informer.name: informer.has_synced() for informer in self.informers()}

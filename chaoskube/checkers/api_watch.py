"""Watches at the API level, judged from the journal: what every informer received, against
the store's history, and what each informer's cache held at the end.

What Kubernetes promises ("Efficient detection of changes",
https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes;
``staging/src/k8s.io/apiserver/pkg/storage/cacher``; client-go ``tools/cache/reflector.go``):
a watch from resourceVersion N delivers every change after N to the objects it selects,
in resourceVersion order, each once; when N is too old the server answers 410 Gone and
the client must list again; a BOOKMARK at resourceVersion B says every change up to B
has been sent (the client may resume from B); a reflector's store (the informer's cache)
is the list it started from plus the events it received.

Inputs: the informers' ``informer`` events ("synced" / "relist" with the list's
resourceVersion, "gone"), ``watch-open`` (the watch, its resource, namespace, selectors,
the resourceVersion it starts from), ``watch-recv`` (each message's events as
``[type, key, resourceVersion]``), ``informer-cache`` (an informer's cache at the end of
the run, with its last synced resourceVersion) -- :mod:`chaoskube.client.informer` -- and
the store's history from the ``raft-apply`` events (:class:`~chaoskube.checkers.replay.StoreHistory`).

For each informer, a *session* runs from a list (at resourceVersion L) to the next list;
its re-watches continue it. Within a session:

1. **Order, no duplicates**: every event's resourceVersion is above the last one the
   session received (or its list's L): nothing twice, nothing out of order, nothing at or
   below the relist (a duplicate after a relist).
2. **No gap**: the event is the next change the store made after that point to an object
   the informer selects (resource, namespace, label and field selectors: a change counts
   when the object matches before or after it), of the right type (ADDED for a creation or
   an object that starts to match, DELETED for a deletion or one that stops matching,
   MODIFIED otherwise). A 410 (a "gone" event or an ERROR 410) ends the session: whatever
   it missed is covered by the relist that follows, which starts a new one.
3. **Bookmarks**: a bookmark's resourceVersion B is not ahead of the store when it
   arrives, and every selected change up to B was already delivered.
4. **Caches**: at the end, each running informer's cache holds exactly the selected
   objects the store held at its last synced resourceVersion, each at its version then.

5. **Outside clients**: a watch the HTTPS front served to a real program
   (:mod:`chaoskube.apiserver.http.front` journals ``watch-open`` with ``outside`` and a
   ``watch-recv`` per message it sent) is a session of its own, from the resourceVersion
   N it asked for: rules 1-3 hold from N (exactly the changes after N, in order, each
   once), or an ERROR 410 Gone ends it (N was compacted).

Answers False with the first violation in journal order (evidence: the informer's record
and, for a gap, the change it missed), unknown when no informer received an event or
dumped its cache (nothing to judge), True otherwise with counts.

Limits: changes after the last event an informer received are not required (they may be
in flight when the run ends); lists are judged by api-linearizability; the caches are
compared once, at the end of the run (when the system dumps them); watches opened by
anything but a reflector or the HTTPS front are not journaled; an outside watch from
resourceVersion "" or "0" (its synthetic ADDED events describe a state at a revision the
stream does not name) is not judged.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from chaoskube.checkers.replay import StoreHistory
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["SelectedChanges", "check_api_watch"]

Event = dict[str, Any]


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Filter:
    resource: str
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""

    @classmethod
    def of(cls, event: Event) -> Filter:
        return cls(event["resource"], event.get("namespace", ""), event.get("label_selector", ""), event.get("field_selector", ""))


class SelectedChanges:
    """The store's changes to the objects a :class:`Filter` selects, in revision order, as
    ``(revision, key, type)`` with the type a watch must deliver (module docstring, 2)."""

    def __init__(self, store: StoreHistory, selector: Filter) -> None:
        self.store = store
        self.filter = selector
        labels = parse_label_selector(selector.label_selector) if selector.label_selector else None
        fields = parse_field_selector(selector.field_selector, selector.resource) if selector.field_selector else None
        prefix = f"{selector.namespace}/" if selector.namespace else ""
        changes: list[tuple[int, str, str]] = []
        for key in store.keys(selector.resource):
            if prefix and not key.startswith(prefix):
                continue
            before = False
            for version in store.versions(selector.resource, key):
                after = not version.deleted and self._selects(key, version, labels, fields)
                if before and after:
                    changes.append((version.revision, key, "MODIFIED"))
                elif after:
                    changes.append((version.revision, key, "ADDED"))
                elif before:
                    changes.append((version.revision, key, "DELETED"))
                before = after
        changes.sort()
        self.changes = changes
        self.revisions = [change[0] for change in changes]
        self._labels, self._fields = labels, fields

    def _selects(self, key: str, version: Any, labels: Any, fields: Any) -> bool:
        if labels is None and fields is None:
            return True
        resource = self.filter.resource
        obj = self.store.typed(resource, key, version)
        if obj is None or (labels is not None and not labels.matches(obj)):
            return False
        return fields is None or fields.matches_fields(self.store.selectable(resource, key, version))

    def selects(self, key: str, revision: int) -> bool:
        """The object ``key`` existed at ``revision`` and was selected."""
        version = self.store.live_at(self.filter.resource, key, revision)
        if version is None:
            return False
        return self._selects(key, version, self._labels, self._fields)

    def next_after(self, revision: int) -> tuple[int, str, str] | None:
        index = bisect.bisect_right(self.revisions, revision)
        return self.changes[index] if index < len(self.changes) else None


@dataclass
class _Session:
    informer: str
    last: int  # the list's resourceVersion, then the last event or bookmark received
    ended: bool = False  # a 410 ended it: nothing is required until the next list
    received: int = 0
    streams: set[str] = field(default_factory=set)


def check_api_watch(events: Sequence[Event]) -> Verdict:
    """Judge every informer's watches and cache (module docstring)."""
    store = StoreHistory(events)
    filters: dict[str, Filter] = {}
    for event in events:
        if event["type"] in ("watch-open", "informer-cache") and event["name"] not in filters:
            try:
                filters[event["name"]] = Filter.of(event)
            except KeyError:
                continue
    changes: dict[Filter, SelectedChanges] = {}

    def selected(name: str) -> SelectedChanges | None:
        selector = filters.get(name)
        if selector is None:
            return None
        if selector not in changes:
            try:
                changes[selector] = SelectedChanges(store, selector)
            except SelectorError:
                return None
        return changes[selector]

    sessions: dict[str, _Session] = {}
    stream_of: dict[str, str] = {}
    counts = {"informers": 0, "outside_watches": 0, "events": 0, "bookmarks": 0, "sessions": 0, "gone": 0, "caches": 0, "cached_objects": 0}
    names: set[str] = set()
    for event in events:
        kind = event["type"]
        if kind == "informer":
            name = event["name"]
            if event["event"] in ("synced", "relist"):
                listed = _int(event.get("resource_version"))
                sessions[name] = _Session(name, listed or 0, ended=listed is None)
                counts["sessions"] += 1
                names.add(name)
            elif event["event"] == "gone" and name in sessions:
                sessions[name].ended = True
                counts["gone"] += 1
        elif kind == "watch-open":
            stream_of[event["watch"]] = event["name"]
            if event.get("outside"):
                # an outside client's watch through the HTTPS front: a session of its
                # own, from the resourceVersion it asked for (module docstring, 5)
                start = _int(event.get("from_rv"))
                sessions[event["name"]] = _Session(event["name"], start or 0, ended=start is None or start <= 0)
                counts["outside_watches"] += 1
                if start is not None and start > 0:
                    names.add(event["name"])
        elif kind == "watch-recv":
            name = stream_of.get(event["watch"], event["name"])
            session = sessions.get(name)
            if session is None:
                continue
            for entry in event["events"]:
                problem = _judge(session, entry, event, selected(name), store, counts)
                if problem is not None:
                    return Verdict(False, problem[0], problem[1], counts)
        elif kind == "informer-cache":
            counts["caches"] += 1
            counts["cached_objects"] += len(event.get("items") or ())
            problem = _judge_cache(event, selected(event["name"]))
            if problem is not None:
                return Verdict(False, problem[0], problem[1], counts)
    counts["informers"] = len(names)
    if not counts["events"] and not counts["bookmarks"] and not counts["caches"]:
        return nothing_to_judge("no informer received a watch event or dumped its cache: nothing to judge", (), counts)
    return Verdict(
        True,
        f"{counts['informers']} informer(s) and outside watch(es), {counts['sessions']} list(s), {counts['outside_watches']} outside watch(es): {counts['events']} watch event(s) in order without gaps or duplicates, "
        f"{counts['bookmarks']} bookmark(s) never ahead; {counts['caches']} cache(s) equal to the store at their resourceVersion",
        (), counts,
    )


def _judge(session: _Session, entry: list[str], record: Event, selected: SelectedChanges | None, store: StoreHistory, counts: dict[str, int]) -> tuple[str, tuple[Any, ...]] | None:
    kind, key, version = entry[0], entry[1], entry[2]
    name = session.informer
    if kind == "ERROR":
        if version == "410":
            session.ended = True
            counts["gone"] += 1
        return None
    revision = _int(version)
    if revision is None or session.ended or selected is None:
        return None
    if kind == "BOOKMARK":
        counts["bookmarks"] += 1
        horizon = store.revision_at(record["t"])
        if revision > horizon:
            return f"{name}: bookmark at resourceVersion {revision}, ahead of the store (revision {horizon} when it arrived)", (record,)
        missed = selected.next_after(session.last)
        if missed is not None and missed[0] <= revision:
            return (
                f"{name}: bookmark at resourceVersion {revision} before the {missed[2]} of {missed[1]} at {missed[0]} was delivered "
                f"(last delivered: {session.last})", (record, _change(selected, missed)),
            )
        session.last = max(session.last, revision)
        return None
    counts["events"] += 1
    session.received += 1
    if revision <= session.last:
        return f"{name}: {kind} {key} at resourceVersion {revision} after resourceVersion {session.last} (duplicated or out of order)", (record,)
    expected = selected.next_after(session.last)
    if expected is None or expected[0] > revision:
        return f"{name}: {kind} {key} at resourceVersion {revision}, which is no change to an object it selects", (record,)
    if expected[0] < revision:
        return f"{name}: missed the {expected[2]} of {expected[1]} at resourceVersion {expected[0]} (received {kind} {key} at {revision} next)", (record, _change(selected, expected))
    if (expected[1], expected[2]) != (key, kind):
        return f"{name}: received {kind} {key} at resourceVersion {revision}; the store's change then was the {expected[2]} of {expected[1]}", (record, _change(selected, expected))
    session.last = revision
    return None


def _change(selected: SelectedChanges, change: tuple[int, str, str]) -> dict[str, Any]:
    return {"type": "store", "revision": change[0], "object": f"{selected.filter.resource}/{change[1]}", "watch_event": change[2]}


def _judge_cache(dump: Event, selected: SelectedChanges | None) -> tuple[str, tuple[Any, ...]] | None:
    synced = _int(dump.get("resource_version"))
    if synced is None or selected is None:
        return None
    name = dump["name"]
    record = {key: dump[key] for key in ("type", "t", "name", "resource", "namespace", "resource_version") if key in dump} | {"objects": len(dump.get("items") or ())}
    cached = {key: str(version) for key, version in dump.get("items") or ()}
    resource = selected.filter.resource
    for key, version in sorted(cached.items()):
        live = selected.store.live_at(resource, key, synced)
        if live is None or str(live.revision) != version or not selected.selects(key, synced):
            held = "nothing selected" if live is None or not selected.selects(key, synced) else f"version {live.revision}"
            return f"{name}: its cache holds {key} at version {version}; the store held {held} at its resourceVersion {synced}", (record,)
    prefix = f"{selected.filter.namespace}/" if selected.filter.namespace else ""
    for key in selected.store.keys(resource):
        if key in cached or (prefix and not key.startswith(prefix)):
            continue
        if selected.selects(key, synced):
            version = selected.store.live_at(resource, key, synced)
            return f"{name}: its cache lacks {key}, which the store held (version {version.revision if version else '?'}) at its resourceVersion {synced}", (record,)
    return None

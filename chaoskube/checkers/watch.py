"""Watch guarantees, judged from the journal (etcd API guarantees: "Watch: ordered,
reliable, atomic"; https://etcd.io/docs/v3.5/learning/api_guarantees/).

For each watcher named in ``prefixes``: it started a watch; the revisions it receives
strictly increase (events of one transaction share a revision and come in order); no
event on its range is missing between the revision it first started from and the
store's last revision (runs leave time after heal for watchers to catch up); and every
event it received is the event the store produced at that revision (same key, type and
value).

The store's history comes from the ``raft-apply`` events (their ``events`` lists); the
watchers' from ``watch-start`` / ``watch-event``. Ranges: ``prefix`` (the watched key
prefix) per watcher, given by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chaoskube.checkers.verdict import Verdict, nothing_to_judge


def check_watches(events: Iterable[dict[str, Any]], prefixes: dict[str, str]) -> Verdict:
    store: dict[int, list[tuple[str, str, str | None]]] = {}
    received: dict[str, list[dict[str, Any]]] = {}
    started: dict[str, int] = {}
    for event in events:
        kind = event["type"]
        if kind == "raft-apply" and event.get("events"):
            revision = event["revision"]
            if revision not in store:
                store[revision] = [(key, change, value if change == "PUT" else None) for change, key, value, _ in event["events"]]
        elif kind == "watch-start" and event.get("ok"):
            started.setdefault(event["watcher"], event["start_revision"])
        elif kind == "watch-event":
            received.setdefault(event["watcher"], []).append(event)
    if not store:
        return nothing_to_judge("the store produced no events to watch")
    last_revision = max(store)
    total = 0
    for watcher, prefix in sorted(prefixes.items()):
        got = received.get(watcher, [])
        if watcher not in started:
            return Verdict(False, f"{watcher} never started a watch", ())
        previous: tuple[int, int] | None = None
        seen: set[tuple[int, str]] = set()
        for event in got:
            revision = event["revision"]
            expected = store.get(revision)
            entry = (event["key"], event["event"], event["value"])
            if expected is None or entry not in expected:
                return Verdict(False, f"{watcher} received {entry} at revision {revision}, which the store never produced", (event,))
            position = (revision, expected.index(entry))
            if previous is not None and position <= previous:
                return Verdict(False, f"{watcher}: revision {revision} arrived after revision {previous[0]} (out of order or duplicated)", (event,))
            previous = position
            seen.add((revision, event["key"]))
        # The run leaves time after heal for watchers to catch up: every event on the
        # range from the first start revision to the store's last one must have arrived.
        first = started[watcher]
        for revision in range(first, last_revision + 1):
            for key, change, value in store.get(revision, ()):
                if key.startswith(prefix) and (revision, key) not in seen:
                    return Verdict(False, f"{watcher} missed {change} {key} at revision {revision} (watched from {first}; the store reached {last_revision})", ({"revision": revision, "key": key, "event": change, "value": value},))
        total += len(got)
    return Verdict(True, f"{len(received)} watchers received {total} events, ordered, complete and matching the store")

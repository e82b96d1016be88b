"""Serializable reads, judged against the store at the revision they were served at.

etcd serves a serializable range from the answering member's own store, without a
ReadIndex round: "Serializable requests are better for lower latency requirements and
higher availability, at the cost of possibly reading stale data"
(https://etcd.io/docs/v3.5/learning/api_guarantees/). So such a read is never judged as
a linearizable one; what it must be is a state the store really had: the value it
returned is the key's value at the header revision the member answered with (as etcd's
robustness tests validate serializable reads against the replayed history at their
revision: ``validateSerializableRead`` in etcd-io/etcd
``tests/robustness/validate/operations.go``).

Inputs, from the journal: the store's history from ``raft-apply`` events (their
``events`` lists, as :mod:`chaoskube.checkers.watch` reads them) and the reads from
``client-op`` records whose invoke says ``consistency: serializable`` and whose ``ok``
completion carries ``revision`` (and ``output``: the integer value read, or None for
absent).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from chaoskube.checkers.verdict import Verdict

__all__ = ["check_serializable_reads"]


def check_serializable_reads(events: Iterable[dict[str, Any]]) -> Verdict:
    revisions: dict[str, list[int]] = {}
    values: dict[str, list[str | None]] = {}
    applied_at: dict[str, list[float]] = {}  # when some member first applied each version
    seen_revisions: set[int] = set()
    invokes: dict[tuple[Any, Any], dict[str, Any]] = {}
    reads: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for event in events:
        kind = event["type"]
        if kind == "raft-apply" and event.get("events"):
            revision = event["revision"]
            if revision in seen_revisions:
                continue  # another member applying the same entry
            seen_revisions.add(revision)
            for change, key, value, _ in event["events"]:
                revisions.setdefault(key, []).append(revision)
                values.setdefault(key, []).append(value if change == "PUT" else None)
                applied_at.setdefault(key, []).append(event["t"])
        elif kind == "client-op":
            pair = (event.get("client"), event.get("op_id"))
            if event["phase"] == "invoke":
                if event.get("consistency") == "serializable":
                    invokes[pair] = event
            elif event["phase"] == "ok" and pair in invokes:
                reads.append((invokes.pop(pair), event))
    if not reads:
        return Verdict(None, "no serializable read completed")
    for key, column in revisions.items():
        # Members apply in log order, so revisions arrive increasing; a restore from a
        # snapshot does not re-journal old events.
        assert column == sorted(column), key
    stale = 0
    for invoke, done in reads:
        key, revision, output = done["key"], done.get("revision"), done.get("output")
        if revision is None:
            return Verdict(False, f"{done['client']}'s serializable read of {key} carries no revision", (invoke, done))
        column = revisions.get(key, [])
        position = bisect_right(column, revision)
        held = values[key][position - 1] if position else None
        expected = None if held is None else int(held)
        if output != expected:
            return Verdict(
                False,
                f"{done['client']}'s serializable read of {key} at revision {revision} returned {output!r}; the store held {expected!r} there",
                (invoke, done),
            )
        if position < len(column) and applied_at[key][position] < done["t"]:
            stale += 1  # a newer version was applied somewhere before the read returned
    return Verdict(True, f"{len(reads)} serializable reads each returned the store's value at its revision ({stale} of them stale, as etcd allows)")

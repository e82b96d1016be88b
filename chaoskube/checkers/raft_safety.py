"""Raft safety, judged from the journal alone (Raft paper, Figure 3).

Inputs (journaled by chaoskube.etcd.server and .client):

- ``raft-role``: a member's role/term/leader changed; a new leader also reports
  ``last_index``, the index of the empty entry it appends on election (None when that
  entry was not in the same Ready: the election is then not judged).
- ``raft-apply``: a member applied the entry at ``index`` (``term``, proposal ``id``).
- ``client-op`` with ``phase: ok`` and a ``request`` id: an acknowledged write.
- ``etcd-final``: each member's applied index at the end of the run.

Properties:

1. **Election safety** — at most one leader per term.
2. **Log matching / state machine safety** — every member (every incarnation) applies the
   same entry (term and proposal id) at each index.
3. **Leader completeness** — a leader of term T holds every entry committed in an earlier
   term: its last index (less the empty entry it appends) is at least the highest index
   applied anywhere while every leader elected so far had a term below T (only a leader
   commits, so such an entry was committed in a term below T). An entry first applied
   after a leader of term T or higher was elected may have been committed in that term,
   which a leader of T need not hold: a candidate paused between its votes and counting
   them becomes leader of its old term after others moved on (etcd-jepsen-flapping-primaries
   with BUGGIFY, seed 57), and steps down at its first message.
4. **Durability** — no acknowledged write is lost: its entry is never superseded at its
   index, and the cluster's final applied index has not fallen below it.

Each property is also available on its own; ``check_raft_safety`` composes them: the
reason leads with the first violated property (durability first: lost data is what a user
notices) and names the others, with that property's evidence (the conflicting events).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chaoskube.checkers.verdict import Verdict

Events = list[dict[str, Any]]


def _select(events: Iterable[dict[str, Any]], *types: str) -> Events:
    wanted = frozenset(types)
    return [event for event in events if event["type"] in wanted]


def election_safety(events: Iterable[dict[str, Any]]) -> Verdict:
    leaders: dict[int, dict[str, Any]] = {}
    count = 0
    for event in _select(events, "raft-role"):
        if event["role"] != "leader":
            continue
        count += 1
        first = leaders.setdefault(event["term"], event)
        if first["member"] != event["member"]:
            return Verdict(False, f"two leaders in term {event['term']}: {first['member']} and {event['member']}", (first, event))
    if not count:
        return Verdict(None, "no leader was ever elected")
    return Verdict(True, f"{count} elections, at most one leader per term")


def state_machine_safety(events: Iterable[dict[str, Any]]) -> Verdict:
    first_at: dict[int, dict[str, Any]] = {}
    applied = 0
    for event in _select(events, "raft-apply"):
        applied += 1
        first = first_at.setdefault(event["index"], event)
        if (first["term"], first["id"]) != (event["term"], event["id"]):
            return Verdict(
                False,
                f"index {event['index']}: {first['member']} applied term {first['term']} id {first['id']}, "
                f"{event['member']} applied term {event['term']} id {event['id']}",
                (first, event),
            )
    if not applied:
        return Verdict(None, "no entry was applied")
    return Verdict(True, f"{applied} applications agree on {len(first_at)} indexes")


def leader_completeness(events: Iterable[dict[str, Any]]) -> Verdict:
    # (the highest term of a leader elected so far, the highest index applied up to then),
    # one row per rise of either: the terms are nondecreasing along the journal
    rows: list[tuple[int, int, dict[str, Any] | None]] = []
    leader_term, highest_applied, highest_event = 0, 0, None
    elections = 0
    for event in _select(events, "raft-apply", "raft-role"):
        if event["type"] == "raft-apply":
            if event["index"] > highest_applied:
                highest_applied, highest_event = event["index"], event
                rows.append((leader_term, highest_applied, highest_event))
            continue
        if event["role"] != "leader":
            continue
        term = event["term"]
        if event.get("last_index") is not None:
            elections += 1
            held = event["last_index"] - 1  # less the empty entry appended on election
            required, required_event = 0, None
            for row_term, index, applied in reversed(rows):
                if row_term < term:
                    required, required_event = index, applied
                    break
            if held < required:
                return Verdict(
                    False,
                    f"{event['member']} became leader of term {term} holding {held} entries, "
                    f"but index {required} was already applied (committed in a term before {term})",
                    (required_event, event),
                )
        if term > leader_term:
            leader_term = term
            rows.append((leader_term, highest_applied, highest_event))
    if not elections:
        return Verdict(None, "no leader was ever elected")
    return Verdict(True, f"every one of {elections} leaders held every entry committed in an earlier term")


def durability(events: Iterable[dict[str, Any]]) -> Verdict:
    events = list(events)
    ids_at: dict[int, list[dict[str, Any]]] = {}
    index_of: dict[str, dict[str, Any]] = {}
    for event in _select(events, "raft-apply"):
        entries = ids_at.setdefault(event["index"], [])
        if not entries or (entries[-1]["term"], entries[-1]["id"]) != (event["term"], event["id"]):
            entries.append(event)
        if event["id"] is not None:
            index_of.setdefault(event["id"], event)
    final_applied = [event["applied_index"] for event in _select(events, "etcd-final") if event.get("running")]
    acknowledged = [e for e in _select(events, "client-op") if e["phase"] == "ok" and e.get("request") and (e["f"] == "write" or (e["f"] == "cas" and e.get("output")))]
    for op in acknowledged:
        applied = index_of.get(op["request"])
        if applied is None:
            return Verdict(False, f"acknowledged {op['f']} {op['request']} was never applied", (op,))
        versions = ids_at[applied["index"]]
        superseded = [event for event in versions if event["id"] != op["request"] and event["t"] > applied["t"]]
        if superseded:
            return Verdict(False, f"acknowledged {op['f']} {op['request']} at index {applied['index']} was lost: later replaced by {superseded[0]['id']}", (op, applied, superseded[0]))
        if final_applied and max(final_applied) < applied["index"]:
            return Verdict(False, f"acknowledged {op['f']} {op['request']} at index {applied['index']} was lost: at the end no member had applied past {max(final_applied)}", (op, applied))
    if not acknowledged:
        return Verdict(None, "no write was acknowledged")
    return Verdict(True, f"all {len(acknowledged)} acknowledged writes survived")


PROPERTIES = {  # in the order a reader cares about: lost data first
    "durability": durability,
    "election safety": election_safety,
    "state machine safety": state_machine_safety,
    "leader completeness": leader_completeness,
}


def check_raft_safety(events: Iterable[dict[str, Any]]) -> Verdict:
    """All four properties. On a violation: the reason leads with the first violated
    property (durability first) and names the others violated; the evidence is the
    first one's. Else unknown if any could not be judged, else true."""
    events = list(events)
    verdicts = {name: check(events) for name, check in PROPERTIES.items()}
    violated = [name for name, verdict in verdicts.items() if verdict.valid is False]
    if violated:
        first = verdicts[violated[0]]
        also = f" (also violated: {', '.join(violated[1:])})" if violated[1:] else ""
        return Verdict(False, f"{violated[0]}: {first.reason}{also}", first.evidence, {"violated": violated})
    unknown = [f"{name}: {verdict.reason}" for name, verdict in verdicts.items() if verdict.valid is None]
    if unknown:
        return Verdict(None, "; ".join(unknown))
    return Verdict(True, "; ".join(verdict.reason for verdict in verdicts.values()))

"""etcd leases, judged from the journal: the lease clients' ``lease-op`` records
(``experiments/systems/etcd.py`` ``run_lease_workload``), the members' ``raft-role`` and
``raft-apply`` events.

etcd's contract (``server/lease/lessor.go``, https://etcd.io/docs/v3.5/learning/api/#lease-api):
a key attached to a lease lives until the lease expires -- ``ttl`` after the last renewal,
where only the primary lessor (the Raft leader) renews and expires; a new leader *promotes*
its lessor, pushing every expiry to ``now + ttl + extend`` (``extend`` = the election
timeout: etcd-io/etcd#4778), so failovers only lengthen a lease -- and then the leader
revokes it through Raft, deleting its keys in one revision.

1. **Never early.** A lease's keys are not deleted before ``ttl`` after the invocation of
   its last acknowledged keep-alive (or its grant): the renewal happened after the client
   sent it, so ``invoked + ttl`` is a lower bound of the expiry.
2. **Not for ever.** Once its client abandons it, a lease's keys (those the store held: an
   attach whose answer was lost may never have been applied) are deleted by
   ``last acknowledgement + ttl``, pushed to ``promotion + ttl + extend`` by each new leader
   elected meanwhile, plus :data:`SLACK_S` (the leader checks every 0.5 s, re-proposes a
   revocation after 3 s, and commits it) -- judged only when a leader exists at that
   deadline (without one nothing can be revoked).
3. **Only the leader renews.** A keep-alive acknowledged by a member that, at every instant
   between the request and the answer, was not the leader of the highest term elected so
   far is a finding: a follower must not renew (its lease never expires) and a deposed
   leader that has not noticed must not either (etcd-io/etcd#15247; etcd's
   ``ensureLeadership`` confirms leadership before renewing).

Answers False with the first violation in time; unknown when no lease was granted; True
otherwise, with counts in ``details``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["LEASE_KEY_PREFIX", "SLACK_S", "check_etcd_leases"]

Event = dict[str, Any]

LEASE_KEY_PREFIX = "lease/"
#: Lease check interval 0.5 s + revocation retry 3 s + a commit, with room.
SLACK_S = 5.0
EPSILON_S = 0.05


@dataclass
class _Lease:
    id: int
    client: str
    ttl: float
    granted_invoked: float
    keys: list[str] = field(default_factory=list)
    acks: list[tuple[float, float, str]] = field(default_factory=list)  # (invoked, answered, member)
    abandoned: float | None = None
    deleted: float | None = None
    stored: bool = False  # the store held one of its keys (an attach whose answer was lost may never have applied)


def _leader_intervals(events: list[Event], end_t: float) -> list[tuple[str, int, float, float]]:
    """(member, term, from, to) for every stretch a member believed it led a term; a kill
    or pause ends it (the process stops answering)."""
    current: dict[str, tuple[int, float]] = {}
    intervals = []
    for event in events:
        kind = event.get("type")
        if kind == "raft-role":
            member = event["member"]
            if member in current:
                term, since = current.pop(member)
                intervals.append((member, term, since, event["t"]))
            if event.get("role") == "leader":
                current[member] = (event["term"], event["t"])
        elif kind == "process" and event.get("event") in ("kill", "stop") and event.get("process") in current:
            term, since = current.pop(event["process"])
            intervals.append((event["process"], term, since, event["t"]))
    intervals.extend((member, term, since, end_t) for member, (term, since) in current.items())
    return intervals


def check_etcd_leases(events: Iterable[Event], *, extend_s: float = 1.0, slack_s: float = SLACK_S) -> Verdict:
    """Judge every lease of the journal's lease clients (module docstring)."""
    events = list(events)
    if not events:
        return Verdict(None, "the journal is empty")
    end_t = events[-1]["t"]
    leases: dict[int, _Lease] = {}
    key_lease: dict[str, int] = {}
    seen_revisions: set[int] = set()
    promotions: list[float] = []
    for event in events:  # the leases and their keys first: a key's PUT applies before its attach is answered
        if event.get("type") == "lease-op":
            _record(event, leases, key_lease)
    for event in events:
        kind = event.get("type")
        if kind == "raft-role" and event.get("role") == "leader":
            promotions.append(event["t"])
        elif kind == "raft-apply" and event.get("events") and event.get("revision") not in seen_revisions:
            seen_revisions.add(event.get("revision"))
            for entry in event["events"]:
                if entry[1] not in key_lease:
                    continue
                lease = leases.get(key_lease[entry[1]])
                if lease is None:
                    continue
                if entry[0] == "DELETE" and lease.deleted is None:
                    lease.deleted = event["t"]
                elif entry[0] == "PUT":
                    lease.stored = True
    if not leases:
        return nothing_to_judge("no lease was granted in the journal (run with workload `lease_clients`)")
    intervals = _leader_intervals(events, end_t)
    findings: list[tuple[float, str, tuple[Any, ...]]] = []
    counts = {"leases": len(leases), "acknowledged_keepalives": 0, "expired": 0, "judged_expiries": 0, "unjudged_expiries": 0}
    for lease in sorted(leases.values(), key=lambda lease: (lease.granted_invoked, lease.id)):
        for invoked, answered, member in lease.acks:
            counts["acknowledged_keepalives"] += 1
            if not _was_leader(intervals, member, invoked, answered):
                findings.append((answered, f"a keep-alive of lease {lease.id:x} ({lease.client}) sent at t={invoked:.3f} was acknowledged at t={answered:.3f} by {member}, which was not the leader then",
                                 ({"type": "lease-op", "t": answered, "lease": lease.id, "member": member, "invoked": invoked, "leaders": _leaders_between(intervals, invoked, answered)},)))
        if lease.deleted is not None:
            counts["expired"] += 1
            earliest = max([lease.granted_invoked, *(invoked for invoked, answered, _ in lease.acks if answered <= lease.deleted)]) + lease.ttl
            if lease.deleted < earliest - EPSILON_S:
                last = earliest - lease.ttl
                findings.append((lease.deleted, f"the keys of lease {lease.id:x} ({lease.client}, TTL {lease.ttl:g} s) were deleted at t={lease.deleted:.3f}, {lease.deleted - last:.3f} s after its last acknowledged keep-alive was sent (t={last:.3f}): before its TTL",
                                 ({"type": "raft-apply", "t": lease.deleted, "lease": lease.id, "keys": lease.keys, "last_keepalive_invoked": last, "ttl": lease.ttl},)))
        if lease.abandoned is None or not lease.stored:
            continue  # (an attach that timed out may never have been applied: no key to outlive the lease)
        last_answer = max([lease.granted_invoked, *(answered for _, answered, _ in lease.acks)])
        deadline = last_answer + lease.ttl + slack_s
        for promoted in sorted(promotions):
            if last_answer < promoted <= deadline:
                deadline = max(deadline, promoted + lease.ttl + extend_s + slack_s)
        if deadline > end_t:
            continue  # the journal ends before the lease was due
        if lease.deleted is not None and lease.deleted <= deadline:
            counts["judged_expiries"] += 1
            continue
        if not any(start <= deadline <= stop for _, _, start, stop in intervals):
            counts["unjudged_expiries"] += 1  # no leader at the deadline: nothing could revoke it
            continue
        counts["judged_expiries"] += 1
        findings.append((deadline, f"lease {lease.id:x} ({lease.client}, TTL {lease.ttl:g} s) was last renewed at t={last_answer:.3f} and its keys still existed at t={deadline:.3f} (TTL + promotions' extensions + {slack_s:g} s)",
                         ({"type": "lease-op", "t": last_answer, "lease": lease.id, "keys": lease.keys, "deadline": deadline, "deleted": lease.deleted},)))
    if findings:
        t, reason, evidence = min(findings, key=lambda finding: finding[0])
        return Verdict(False, reason, evidence, counts)
    return Verdict(True, f"{counts['leases']} lease(s), {counts['acknowledged_keepalives']} acknowledged keep-alive(s) all by the leader; {counts['expired']} expired, none before its TTL,"
                         f" {counts['judged_expiries']} within the bound after it ({counts['unjudged_expiries']} without a leader to revoke them)", details=counts)


def _record(event: Event, leases: dict[int, _Lease], key_lease: dict[str, int]) -> None:
    op, lease_id = event.get("op"), event.get("lease")
    if op == "grant" and event.get("phase") == "ok":
        leases[lease_id] = _Lease(lease_id, event.get("client", ""), float(event.get("ttl", 0)), float(event.get("invoked", event["t"])))
        return
    lease = leases.get(lease_id)
    if lease is None:
        return
    if op == "attach" and event.get("key"):
        lease.keys.append(event["key"])
        key_lease[event["key"]] = lease_id
    elif op == "keepalive" and event.get("phase") == "ok":
        lease.acks.append((float(event.get("invoked", event["t"])), event["t"], event.get("member", "")))
    elif op == "abandon":
        lease.abandoned = event["t"]


def _superseded(intervals: list[tuple[str, int, float, float]], term: int) -> float:
    """When a leader of a higher term than ``term`` was first elected."""
    return min((start for _, other, start, _ in intervals if other > term), default=float("inf"))


def _was_leader(intervals: list[tuple[str, int, float, float]], member: str, invoked: float, answered: float) -> bool:
    for who, term, start, stop in intervals:
        if who != member:
            continue
        until = min(stop, _superseded(intervals, term))
        if start <= answered and invoked <= until:
            return True
    return False


def _leaders_between(intervals: list[tuple[str, int, float, float]], invoked: float, answered: float) -> list[dict[str, Any]]:
    return [{"member": who, "term": term, "from": start, "to": stop} for who, term, start, stop in intervals if start <= answered and invoked <= stop]

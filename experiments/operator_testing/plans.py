"""Test plans: each ONE perturbation at ONE point the learning run showed to matter, with a
stable id (Sieve, Sun et al., "Automatic Reliability Testing for Cluster Management
Controllers", OSDI 2022, §4: test plans generated from the reference run's events).

A plan's point is the operator's own request, never the clock: *the Nth answered request
of the operator with this verb on this resource (and subresource)*. Counting the operator's
requests, not seconds, is what makes a plan replay: the same workload makes the operator
send the same requests in the same order, however fast the machine is.

Kinds (:data:`KINDS`):

- ``crash``            -- intermediate state: kill the operator (SIGKILL to its process
  group) right after the request is answered, start it again ``restart_s`` later.
- ``lost-response``    -- the request commits, its answer never arrives (the connection
  closes unanswered): the operator must find out what it did.
- ``apiserver-kill``   -- the API server the operator talks to dies right after the
  request commits (its connections reset), for ``duration_s``.
- ``etcd-leader-kill`` -- the etcd leader dies right after the request, for ``duration_s``.
- ``partition``        -- the operator is cut off from every API server right after the
  request, for ``duration_s`` (its requests stall; its watches go quiet).

- ``stale-state``      -- Sieve's *time travel* (§4.2): the watch cache of a second API
  server replica stops at the revision just before the request commits (its etcd watch
  stalls: :meth:`chaoskube.apiserver.watchcache.Cacher.stall`); the operator is killed right
  after its request is answered (at a user's change: just before it commits, so it never
  sees it) and started again :data:`STALE_RESTART_S` later *against that replica* (its kubeconfig's current context moves to it, as a restarted pod's connection
  lands on another API server behind a load balancer): its cached reads
  (``resourceVersion=0``, what client-go informers list with) and watches see the state
  before the request. ``duration_s`` after the request the replica catches up.
- ``unobserved-state`` -- Sieve's *unobserved states* (§4.3): from just before the request
  commits until the workload's next change of a custom resource commits, no watch event
  reaches the operator (:meth:`chaoskube.apiserver.http.ApiFront.withhold`); then its watch
  streams end and resuming one is answered 410 Expired, so it lists again and sees only
  the later state, never the ones between (a relist after a broken watch). Only at points
  the learning run shows a later change of the workload after.

Pure: :func:`generate_plans` from the learning run's writes; ids are
``<kind>@[user-]<verb>:<resource>[/<subresource>]#<n>`` (``crash@create:configmaps#1``,
``crash@user-delete:widgets.gallery.chaoskube.dev#1``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Plan", "Point", "generate_plans", "parse_plan_id", "select_plans"]

KINDS = ("crash", "lost-response", "apiserver-kill", "etcd-leader-kill", "partition", "stale-state", "unobserved-state")
#: How long a fault lasts (virtual seconds) before it heals, per kind (stale-state: how
#: long the replica lags after the request; unobserved-state: ends at the next change).
DURATION_S = {"crash": 1.0, "lost-response": 0.0, "apiserver-kill": 3.0, "etcd-leader-kill": 3.0, "partition": 5.0, "stale-state": 8.0, "unobserved-state": 0.0}
#: stale-state: the operator is started again this long after it was killed.
STALE_RESTART_S = 1.0
#: Writes a plan may be aimed at: the operator's own mutating requests that succeeded.
MUTATING = ("create", "update", "patch", "delete")


def write_kind(verb: str, resource: str, subresource: str = "") -> str:
    """A kind of write, as a point's label names it without its occurrence:
    ``update:foos.samplecontroller.k8s.io/status``."""
    return f"{verb}:{resource}" + (f"/{subresource}" if subresource else "")


@dataclass(frozen=True, order=True)
class Point:
    """The Nth answered request (counting from 1) of the operator with ``verb`` on
    ``resource``/``subresource`` -- or, with ``user``, of the workload (the user's change of
    a custom resource committing: a point given by an object's state, not by the operator)."""

    verb: str
    resource: str
    subresource: str
    nth: int
    user: bool = False

    @property
    def label(self) -> str:
        return ("user-" if self.user else "") + write_kind(self.verb, self.resource, self.subresource) + f"#{self.nth}"

    def matches(self, verb: str, resource: str, subresource: str) -> bool:
        return (verb, resource, subresource or "") == (self.verb, self.resource, self.subresource)


@dataclass(frozen=True)
class Plan:
    kind: str
    point: Point
    duration_s: float

    @property
    def id(self) -> str:
        return f"{self.kind}@{self.point.label}"

    def describe(self) -> str:
        if self.point.user:
            change = f"the user's {self.point.verb} of {self.point.resource} #{self.point.nth} commits"
            return {
                "crash": f"crash the operator as {change} (restart {self.duration_s:g} s later)",
                "partition": f"partition the operator from the API servers as {change}, {self.duration_s:g} s (it misses the events: unobserved state)",
                "apiserver-kill": f"kill the operator's API server as {change}, {self.duration_s:g} s",
                "stale-state": f"freeze a second API server's watch cache and crash the operator just before {change}; restart it against that replica (stale view: time travel), which catches up {self.duration_s:g} s later",
                "unobserved-state": f"withhold every watch event from the operator from just before {change} until the user's next change, then break its watches (it relists: unobserved state)",
            }.get(self.kind, self.kind)
        what = {
            "crash": f"crash the operator right after its {self.point.label} (restart {self.duration_s:g} s later)",
            "lost-response": f"lose the answer to the operator's {self.point.label} (it commits)",
            "apiserver-kill": f"kill the operator's API server right after its {self.point.label}, {self.duration_s:g} s",
            "etcd-leader-kill": f"kill the etcd leader right after the operator's {self.point.label}, {self.duration_s:g} s",
            "partition": f"partition the operator from the API servers right after its {self.point.label}, {self.duration_s:g} s",
            "stale-state": f"freeze a second API server's watch cache just before the operator's {self.point.label} commits, crash the operator right after it and restart it against that replica (stale view: time travel) for {self.duration_s:g} s",
            "unobserved-state": f"withhold every watch event from the operator from just before its {self.point.label} until the user's next change, then break its watches (it relists: unobserved state)",
        }
        return what[self.kind]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "user": self.point.user, "verb": self.point.verb, "resource": self.point.resource, "subresource": self.point.subresource, "nth": self.point.nth, "duration_s": self.duration_s, "description": self.describe()}


#: Kinds aimed at the user's changes (a lost answer to the user is not the operator's business).
USER_KINDS = ("crash", "partition", "apiserver-kill", "stale-state", "unobserved-state")
#: Kinds whose perturbation ends at the workload's next change: only points before it.
UNTIL_NEXT_CHANGE = ("unobserved-state",)


def points(writes: Iterable[dict[str, Any]], *, user: bool = False) -> list[Point]:
    """The distinct points of the operator's successful writes, in the order it made them:
    each (verb, resource, subresource) numbered by occurrence."""
    counts: dict[tuple[str, str, str], int] = {}
    out = []
    for write in writes:
        if write.get("verb") not in MUTATING:
            continue
        key = (str(write["verb"]), str(write["resource"]), str(write.get("subresource") or ""))
        counts[key] = counts.get(key, 0) + 1
        out.append(Point(*key, counts[key], user))
    return out


def generate_plans(writes: Sequence[dict[str, Any]], kinds: Sequence[str] = KINDS, user_writes: Sequence[dict[str, Any]] = ()) -> list[Plan]:
    """Every kind at every point of ``writes`` (the learning run's successful operator
    writes, in order) and, for the kinds of :data:`USER_KINDS`, at every point of
    ``user_writes`` (the workload's changes of custom resources). Per kind: the first
    occurrence of each distinct request in order, then the second occurrences..."""
    found = points(writes)
    theirs = points(user_writes, user=True)
    # The time of each point (the learning run's), for kinds that need a later user change.
    mutating = [write for write in writes if write.get("verb") in MUTATING]
    theirs_mutating = [write for write in user_writes if write.get("verb") in MUTATING]
    when = {point: float(write.get("t") or 0.0) for point, write in [*zip(found, mutating), *zip(theirs, theirs_mutating)]}
    last_change = max((float(write.get("t") or 0.0) for write in theirs_mutating), default=None)
    plans = []
    for kind in kinds:
        chosen = found + (theirs if kind in USER_KINDS else [])
        if kind in UNTIL_NEXT_CHANGE:
            chosen = [point for point in chosen if last_change is not None and when[point] < last_change]
        # Every distinct request first (its first occurrence), then the second ones...: a
        # budget then reaches every kind of write before a repetition of one.
        ordered = sorted(range(len(chosen)), key=lambda index: (chosen[index].nth, index))
        plans.extend(Plan(kind, chosen[index], DURATION_S[kind]) for index in ordered)
    return plans


def reached_twice(plans: Sequence[Plan], second_writes: Sequence[dict[str, Any]]) -> list[Plan]:
    """The plans whose point the second learning run reached too: the Nth write of a kind
    that one fault-free run made N times and the other fewer (the sample-controller's Event
    patches and status updates: 381-423 points in three learnings of the same workload) is
    often not reached by a plan's run either, which then costs a whole session for nothing.
    A point of the workload's own changes is always reached."""
    reached = {point.label for point in points(second_writes)}
    return [plan for plan in plans if plan.point.user or plan.point.label in reached]


def select_plans(plans: Sequence[Plan], budget: int | None, repeats: int | None = None, kinds: Collection[str] | None = None) -> list[Plan]:
    """The plans of ``kinds`` (None: every kind; plans learned before, reused with
    ``--learned``, were generated for every kind asked then) at the first ``repeats``
    occurrences of each distinct request (Sieve's pruning of equivalent points: the third
    patch of the same resource by the same operator rarely perturbs anything the first did
    not; None: every occurrence), then at most ``budget`` of them, spread over the kinds
    (round robin, each kind's plans in their order), so a small budget still tries every
    kind."""
    if kinds is not None:
        plans = [plan for plan in plans if plan.kind in kinds]
    if repeats is not None:
        plans = [plan for plan in plans if plan.point.nth <= repeats]
    if budget is None or budget >= len(plans):
        return list(plans)
    by_kind: dict[str, list[Plan]] = {}
    for plan in plans:
        by_kind.setdefault(plan.kind, []).append(plan)
    chosen: list[Plan] = []
    index = 0
    while len(chosen) < budget:
        progressed = False
        for kind in by_kind:
            if index < len(by_kind[kind]) and len(chosen) < budget:
                chosen.append(by_kind[kind][index])
                progressed = True
        if not progressed:
            break
        index += 1
    return chosen


def parse_plan_id(text: str) -> Plan:
    """The plan of an id (``crash@create:configmaps#1``). Raises ValueError (one line)."""
    kind, at, rest = text.partition("@")
    label, hash_, nth = rest.rpartition("#")
    if not at or not hash_ or kind not in KINDS or not nth.isdigit() or int(nth) < 1:
        raise ValueError(f"plan id {text!r}: give KIND@[user-]VERB:RESOURCE[/SUBRESOURCE]#N, KIND one of {', '.join(KINDS)} (e.g. crash@create:configmaps#1)")
    user = label.startswith("user-")
    verb, colon, resource = label.removeprefix("user-").partition(":")
    if not colon or verb not in MUTATING or not resource:
        raise ValueError(f"plan id {text!r}: VERB must be one of {', '.join(MUTATING)}, then :RESOURCE")
    resource, _, subresource = resource.partition("/")
    return Plan(kind, Point(verb, resource, subresource, int(nth), user), DURATION_S[kind])

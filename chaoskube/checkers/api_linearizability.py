"""The API server's consistency as its clients saw it: every request of every API client,
judged per object against a model of the object store with the linearizability search
engine (:mod:`chaoskube.checkers.linearizability`), and every list against the store's
history.

What Kubernetes promises (the contract checked):

- Writes go to etcd in a transaction guarded by the key's revision
  (``staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go``): a create succeeds only if
  the key is absent (``Create``: ``CREATE == 0``, else 409 AlreadyExists); an update with
  ``metadata.resourceVersion`` is a compare-and-set (409 Conflict when stale); without one
  the server re-reads and retries (``GuaranteedUpdate``); a delete honours its
  ``preconditions`` (uid, resourceVersion); the ``status`` subresource writes the same
  object. Every write gives the object a new resourceVersion, the key's etcd
  ``mod_revision``, so resourceVersions grow per object.
- A get or list without ``resourceVersion`` is a quorum read from etcd: linearizable
  ("Resource versions", https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions:
  "Return data at the most recent resource version. The returned data must be consistent
  (in detail: served from etcd via a quorum read)"). ``resourceVersion=0`` returns "data
  at any resource version"; ``resourceVersion=N`` with ``NotOlderThan`` (the default)
  "data at least as new as the provided resourceVersion"; ``Exact`` exactly N.

The history (Jepsen's and porcupine's shape, per object = resource, namespace, name):

- **Client operations**: the clients' ``api-op`` records (writes; :mod:`chaoskube.client.client`)
  and ``api-read`` records (reads). An operation ``ok`` took effect (or observed) once
  between its invocation and its completion. A ``fail`` is an observation only when it
  says something about the object: 409 AlreadyExists on create (it existed), 409 Conflict
  of a request with a precondition (its precondition did not hold; not "the object kept
  changing", which is the server giving up), 404 naming the object itself (it was absent;
  not the NamespaceLifecycle 404 naming its namespace). Other failures did not happen and
  are dropped; ``info`` writes (unknown outcome) are dropped too, because their effect, if
  any, is in the store's own history below.
- **The store's writes**: every version of the object in etcd (``raft-apply``), at the
  instant it was first applied. A create and a compare-and-set write (a precondition
  other than the version answered) *claim* the version they answered when it was applied
  during their call -- the server wrote it for them -- and the pair is one operation.
  Every other version (written by the API server itself -- bootstrap, the eviction's PDB
  update --, by a request whose client timed out, by a write without a precondition, the
  removal that follows a delete, ...) enters the history as a write at the instant it was
  applied. So a violation is always about what some client saw or did.

The model (state: the object's (resourceVersion, uid); uid None while it is absent):

- ``store`` (an unclaimed version): always legal; the state becomes that version.
- ``create`` -> (R, uid): legal only while absent (create-if-absent); the state becomes
  (R, uid). A create answered with a version not written during its call is illegal.
- ``write`` (a compare-and-set: update or patch with ``resourceVersion`` p) -> R: legal
  only if the object is present at p with the answered uid and R is newer (versions grow);
  the state becomes R (absent when that write removed the object's last finalizer). One
  answered with a version not written during its call is illegal (a lost update).
- ``observe`` (a write without a precondition -- ``GuaranteedUpdate``, a status write, a
  binding --, a write that changed nothing, a delete) -> (R, uid): such a request may
  answer a version written by another request during its call (``GuaranteedUpdate``
  re-reads; a delete answers the object it removed, or its graceful-deletion update), so
  it says "the object was at R at some instant of my call": legal only then; a delete's
  preconditions must also hold for the object answered. (A delete with a resourceVersion
  precondition that answered a newer version -- a graceful deletion or one held by
  finalizers writes the deletion mark -- is a compare-and-set ``write``.)
- ``read`` (a quorum get) -> (R, uid) or absent: legal only if the state is that.
- ``present`` (409 AlreadyExists, an eviction that succeeded), ``absent`` (404), and
  ``conflict`` (409 of a precondition): legal iff the object exists, does not, or does not
  meet the precondition.

Lists and cached reads are judged against the store's history directly (a list reads many
objects at one revision; splitting it into per-object reads would lose that):

- a quorum list answered at revision L: L is no older than the last revision applied
  before the list was sent, no newer than the last applied before it was answered, and
  its items are the store at L -- each item at its version at L, and, without selectors,
  every object of the resource (and namespace) that existed at L;
- an ``Exact`` list: L is the revision asked for, items as above;
- a cached list (``resourceVersion`` "0" or ``NotOlderThan`` N): its items are the store
  at its revision L, L is no newer than the store when answered, at least N when asked,
  and never older than an earlier answer of the same server to the same client for the
  same resource and namespace (one watch cache moves forward; across servers there is no
  such promise: the docs warn a "0" read may return "a much older resource version that
  the client has previously observed, particularly in high availability configurations");
- a cached get: the version answered existed at some revision no newer than the store
  when answered (and no older than N when asked), or the absence did; and one server never
  answers a client an older version of an object than it already did.

Watch cache freshness: a consistent read (no ``resourceVersion``) must never be answered
from a watch cache that has not caught up with etcd (kubernetes/kubernetes#59848, the
stale reads that KEP-2340 "Consistent reads from cache" may serve from the cache only
after waiting for it to reach etcd's current revision): the quorum-list rule above and the
linearizability of quorum gets judge it. How far behind each watch cache was is reported,
not judged (``resourceVersion`` "0" promises nothing, and upstream bounds no cache's lag:
one cut off from etcd stays where it is): ``details["watch_cache_lag_s"]`` gives, per
server, the largest lag its cached lists and its watches' bookmarks (which carry the
cache's resourceVersion) showed -- how long before the list was sent, or the bookmark
received, the first change of the resource that it missed had been applied -- with the
client, resource and time; a passing verdict names the largest.

``check_api_linearizability(events)`` answers False with the first violation: for the
search, a minimal set of operations of one object that cannot be linearized even if every
other operation of it took effect at any time or never (the engine's evidence); for a
list or cached read, the read and the store's versions it contradicts. Unknown when no
client operation could be judged (nothing journaled), or the search hit its time limit.

Limits: values are compared by resourceVersion and uid, not content (a write that loses
another's change without a precondition is invisible here: the differential and workload
checkers see its effects); selectors of lists are not evaluated (items of a filtered list
are checked, missing ones are not); watches are :mod:`chaoskube.checkers.api_watch`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskube.api.protocol import qualified_resource
from chaoskube.checkers.history import Op
from chaoskube.checkers.linearizability import check_linearizability
from chaoskube.checkers.replay import StoreHistory, Version
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["ApiStoreModel", "api_history", "check_api_linearizability", "check_api_reads"]

Event = dict[str, Any]
ABSENT = None
#: Reads before this many store revisions exist are not judged (nothing to compare).
MAX_EVIDENCE = 6


# =========================================================================== the model
class ApiStoreModel:
    """One object of the API's store (module docstring, "The model"). The state is
    (resourceVersion, uid), uid None while the object is absent (resourceVersion then is
    the revision that deleted it, 0 before it ever existed); ``Op.key`` is (resource, key);
    ``Op.value`` and ``Op.output`` per ``Op.f`` as built by :func:`api_history`."""

    def init(self) -> Any:
        return (0, None)

    def step(self, state: Any, op: Op) -> tuple[bool, Any]:
        f, value, output = op.f, op.value, op.output
        if f == "store":
            revision, deleted, uid = value
            return True, (revision, None if deleted else uid)
        if f == "read":
            return (state[1] is None if output is ABSENT else state == output), state
        if f == "observe":
            return (state == output and _precondition_holds(output, value)), state
        if f == "present":
            return state[1] is not None, state
        if f == "absent":
            return state[1] is None, state
        if f == "conflict":
            return not (state[1] is not None and _precondition_holds(state, value)), state
        if f == "create":
            claimed, written = value
            if not claimed:
                return False, state  # answered with a version it did not write then
            return state[1] is None and state[0] < written[0], written
        if f == "write":
            precondition, claimed, written = value
            if not claimed or state[1] is None or not _precondition_holds(state, precondition):
                return False, state
            if state[0] >= written[0] or (written[1] is not None and state[1] != written[1]):
                return False, state
            return True, written
        raise ValueError(f"ApiStoreModel cannot apply {f!r} (operation {op.index})")

    def read_only(self, op: Op) -> bool:
        return op.f in ("read", "observe", "present", "absent", "conflict")

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        groups: dict[Any, list[Op]] = {}
        for op in ops:
            groups.setdefault(op.key, []).append(op)
        return [groups[key] for key in sorted(groups)]


def _precondition_holds(state: Any, precondition: Any) -> bool:
    """``precondition`` = (resourceVersion or None, uid or None), or None, holds for
    ``state`` = (resourceVersion, uid)."""
    if precondition is None:
        return True
    revision, uid = precondition
    return (revision is None or state[0] == revision) and (uid is None or state[1] == uid)


# =========================================================================== the history
def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _names_object(message: str, resource: str, name: str) -> bool:
    """A 404 whose message names the object itself (``<resource> "<name>" not found``)."""
    return message == f'{qualified_resource(resource)} "{name}" not found'


@dataclass
class _Pending:
    invoke: Event
    end: Event | None = None


Draft = tuple[float, float, Any, str, Any, Any, Any]  # (call, ret, process, f, key, value, output)


def api_history(events: Sequence[Event], store: StoreHistory) -> tuple[list[Op], dict[str, int]]:
    """The per-object history of the module docstring: the clients' judged operations and
    the store's unclaimed versions of the objects they touched. Returns (ops, counts)."""
    pending: dict[tuple[str, int], _Pending] = {}
    order: list[tuple[str, int]] = []
    reads: list[Event] = []
    for event in events:
        kind = event["type"]
        if kind == "api-op":
            pair = (event["client"], event["op_id"])
            if event["phase"] == "invoke":
                pending[pair] = _Pending(event)
                order.append(pair)
            elif pair in pending:
                pending[pair].end = event
        elif kind == "api-read" and event["verb"] == "get" and not event.get("request_rv"):
            reads.append(event)
    counts = {"writes": 0, "reads": 0, "observations": 0, "dropped": 0, "store_versions": 0}
    drafts: list[Draft] = []
    claimed: set[tuple[str, str, int]] = set()
    for pair in order:
        draft = _write_op(pending[pair], store, claimed)
        if draft is None:
            counts["dropped"] += 1
            continue
        counts["writes" if draft[3] in ("create", "write") else "observations"] += 1
        drafts.append(draft)
    for read in reads:
        key = (read["resource"], _key(read["namespace"], read["name"]))
        if read["phase"] == "ok":
            output: Any = (_int(read.get("resource_version")), read.get("uid") or "")
        elif read["phase"] == "fail" and read["code"] == 404:
            output = ABSENT  # a get's 404 is the object's own (no admission on reads)
        else:
            counts["dropped"] += 1
            continue
        counts["reads"] += 1
        drafts.append((read["call"], read["t"], read["client"], "read", key, None, output))
    touched = sorted({draft[4] for draft in drafts})
    for resource, key in touched:
        for version in store.versions(resource, key):
            if (resource, key, version.revision) in claimed:
                continue
            counts["store_versions"] += 1
            uid = store.uid(resource, key, version)
            drafts.append((version.t, version.t, "store", "store", (resource, key), (version.revision, version.deleted, uid), None))
    drafts.sort(key=lambda draft: (draft[0], draft[1]))
    ops = [Op(index, process, f, key, value, output, "ok", call, ret) for index, (call, ret, process, f, key, value, output) in enumerate(drafts)]
    return ops, counts


def _write_op(op: _Pending, store: StoreHistory, claimed: set[tuple[str, str, int]]) -> Draft | None:
    """The judged operation of one ``api-op`` (module docstring), or None (dropped)."""
    invoke, end = op.invoke, op.end
    if end is None or end["phase"] == "info":
        return None  # unknown outcome: its effect, if any, is in the store's history
    verb, subresource, resource = invoke["verb"], invoke.get("subresource", ""), invoke["resource"]
    name = invoke.get("name") or end.get("name", "")
    if not name:
        return None
    key = (resource, _key(invoke.get("namespace", ""), name))
    call, ret, process = invoke["t"], end["t"], invoke["client"]
    pre_rv = _int(invoke.get("precondition_rv"))
    pre_uid = invoke.get("precondition_uid") or None
    precondition = (pre_rv, pre_uid) if (pre_rv is not None or pre_uid is not None) else None
    own = subresource in ("", "status", "finalize")
    if end["phase"] == "fail":
        code, message = end.get("code"), end.get("message", "")
        if code == 409 and verb == "create" and not subresource and end.get("reason") == "AlreadyExists":
            return (call, ret, process, "present", key, None, None)
        if code == 409 and precondition is not None and own and verb in ("update", "patch", "delete") and ("Precondition failed" in message or "the object has been modified" in message):
            return (call, ret, process, "conflict", key, precondition, None)
        if code == 404 and verb in ("update", "patch", "delete") and own and _names_object(message, resource, name):
            return (call, ret, process, "absent", key, None, None)
        return None
    if verb == "create" and subresource == "eviction":
        return (call, ret, process, "present", key, None, None)
    revision = _int(end.get("resource_version"))
    if revision is None:
        return None
    version = _version(store, key, revision)
    applied_in_call = version is not None and call <= version.t <= ret
    uid = end.get("uid") or ""
    if verb == "create" and not subresource:
        if applied_in_call:
            claimed.add((key[0], key[1], revision))
        return (call, ret, process, "create", key, (applied_in_call, (revision, uid)), (revision, uid))
    if not (own or (verb == "create" and subresource == "binding")) or verb not in ("create", "update", "patch", "delete"):
        return None
    removed = version is not None and version.deleted
    output = (revision, None if removed else uid)
    if verb in ("update", "patch", "delete") and pre_rv is not None and pre_rv != revision:
        # A compare-and-set that changed the object: it wrote this version, or nothing did.
        if applied_in_call:
            claimed.add((key[0], key[1], revision))
        return (call, ret, process, "write", key, (precondition, applied_in_call, output), output)
    # A write without a precondition (or one that changed nothing), a binding, a delete:
    # it answered the object as it was at some point of the call.
    check = precondition if verb == "delete" else None
    return (call, ret, process, "observe", key, check, output)


def _version(store: StoreHistory, key: tuple[str, str], revision: int) -> Version | None:
    version = store.at(key[0], key[1], revision)
    return version if version is not None and version.revision == revision else None


# =========================================================================== lists and cached reads
def check_api_reads(events: Iterable[Event], store: StoreHistory, lags: dict[str, dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The violations of the list and cached-read contracts (module docstring), in
    journal order, and counts of what was judged. With ``lags``, each server's watch
    cache lag as its cached lists showed it is measured into it (:func:`_measure_lag`)."""
    problems: list[dict[str, Any]] = []
    counts = {"lists": 0, "cached_gets": 0}
    latest: dict[tuple[str, ...], int] = {}
    for event in events:
        if event["type"] != "api-read" or event["phase"] != "ok":
            continue
        if event["verb"] == "list":
            counts["lists"] += 1
            problem = _judge_list(event, store, latest)
            if lags is not None and problem is None and event.get("request_rv", "") != "" and event.get("rv_match", "") != "Exact":
                _measure_lag(event, store, lags)
        elif event.get("request_rv"):
            counts["cached_gets"] += 1
            problem = _judge_cached_get(event, store, latest)
        else:
            continue
        if problem is not None:
            problems.append(problem)
    return problems, counts


def _judge_list(event: Event, store: StoreHistory, latest: dict[tuple[str, ...], int]) -> dict[str, Any] | None:
    resource, namespace = event["resource"], event["namespace"]
    listed = _int(event.get("resource_version"))
    if listed is None:
        return {"read": event, "problem": f"a list answered without a resourceVersion ({event.get('resource_version')!r})"}
    asked, match = event.get("request_rv", ""), event.get("rv_match", "")
    after = store.revision_at(event["t"])
    if listed > after:
        return {"read": event, "problem": f"list of {resource} at revision {listed}, ahead of the store (revision {after} when it was answered)"}
    if asked == "":
        floor = store.revision_before(event["call"])
        if listed < floor:
            return {"read": event, "problem": f"quorum list of {resource} at revision {listed}, older than revision {floor}, applied before it was sent (a stale read)"}
    elif match == "Exact":
        if _int(asked) != listed:
            return {"read": event, "problem": f"list of {resource} with resourceVersion {asked} (Exact) answered at revision {listed}"}
    else:
        wanted = _int(asked) or 0
        if asked != "0" and listed < wanted:
            return {"read": event, "problem": f"list of {resource} not older than {asked} answered at revision {listed}"}
        scope = (event["client"], event.get("server", ""), resource, namespace, event.get("label_selector", ""), event.get("field_selector", ""))
        if listed < latest.get(scope, 0):
            return {"read": event, "problem": f"{event.get('server')} answered {event['client']} a list of {resource} at revision {listed} after one at revision {latest[scope]} (went back in time)"}
        latest[scope] = listed
    items = event.get("items") or []
    seen = set()
    for item_key, item_rv in items:
        seen.add(item_key)
        version = store.live_at(resource, item_key, listed)
        if version is None or str(version.revision) != str(item_rv):
            return {"read": event, "problem": f"list of {resource} at revision {listed} has {item_key} at version {item_rv}, the store had {'no such object' if version is None else version.revision} then", "object": item_key}
    if not event.get("label_selector") and not event.get("field_selector"):
        prefix = f"{namespace}/" if namespace else ""
        for key in store.keys(resource):
            if key in seen or (prefix and not key.startswith(prefix)):
                continue
            version = store.live_at(resource, key, listed)
            if version is not None:
                return {"read": event, "problem": f"list of {resource} at revision {listed} lacks {key}, which the store had (version {version.revision}) then", "object": key}
    return None


def _measure_lag(event: Event, store: StoreHistory, lags: dict[str, dict[str, Any]]) -> None:
    """A cached list answered at revision L (its watch cache's resourceVersion for the
    resource) lagged by how long before the request was sent the first change of that
    resource after L had been applied (0 when none had): ``lags[server]`` keeps the
    largest, with the list's client, resource and time."""
    listed = _int(event.get("resource_version"))
    if listed is None:
        return
    missed = store.first_change_after(event["resource"], listed)
    lag = max(0.0, event["call"] - missed[1]) if missed is not None else 0.0
    server = event.get("server") or "?"
    worst = lags.get(server)
    if worst is None or lag > worst["lag_s"]:
        lags[server] = {"lag_s": round(lag, 3), "resource": event["resource"], "client": event["client"], "t": event["t"], "revision": listed}


def _bookmark_lags(events: Iterable[Event], store: StoreHistory, lags: dict[str, dict[str, Any]]) -> None:
    """A bookmark carries its watch cache's resourceVersion: received at t with revision
    B from server S for resource R, S's cache of R lagged by how long before t the first
    change of R after B had been applied (as :func:`_measure_lag` for lists)."""
    opened: dict[str, tuple[str, str]] = {}
    for event in events:
        kind = event.get("type")
        if kind == "watch-open":
            opened[event["watch"]] = (event.get("server") or "?", event.get("resource", ""))
        elif kind == "watch-recv" and event.get("watch") in opened:
            server, resource = opened[event["watch"]]
            for entry in event.get("events") or ():
                if entry[0] != "BOOKMARK":
                    continue
                revision = _int(entry[2])
                if revision is None:
                    continue
                missed = store.first_change_after(resource, revision)
                lag = max(0.0, event["t"] - missed[1]) if missed is not None else 0.0
                worst = lags.get(server)
                if worst is None or lag > worst["lag_s"]:
                    lags[server] = {"lag_s": round(lag, 3), "resource": resource, "client": event.get("name", ""), "t": event["t"], "revision": revision}


def _judge_cached_get(event: Event, store: StoreHistory, latest: dict[tuple[str, ...], int]) -> dict[str, Any] | None:
    resource, key = event["resource"], _key(event["namespace"], event["name"])
    answered = _int(event.get("resource_version"))
    asked = event.get("request_rv", "")
    wanted = 0 if asked == "0" else (_int(asked) or 0)
    horizon = store.revision_at(event["t"])
    version = _version(store, (resource, key), answered) if answered is not None else None
    if version is None or version.deleted or version.revision > horizon:
        return {"read": event, "problem": f"get of {resource} {key} answered version {answered}, which the store {'had not written yet' if version is not None else 'never had'} when it answered"}
    versions = store.versions(resource, key)
    following = next((later for later in versions if later.revision > version.revision), None)
    if wanted and following is not None and following.revision <= wanted:
        return {"read": event, "problem": f"get of {resource} {key} not older than {asked} answered version {answered}, replaced at revision {following.revision}"}
    scope = (event["client"], event.get("server", ""), resource, key)
    if version.revision < latest.get(scope, 0):
        return {"read": event, "problem": f"{event.get('server')} answered {event['client']} {resource} {key} at version {answered} after version {latest[scope]} (went back in time)"}
    latest[scope] = version.revision
    return None


# =========================================================================== the checker
def check_api_linearizability(events: Sequence[Event], *, time_limit_s: float | None = 10.0) -> Verdict:
    """Judge every API client's operations (module docstring)."""
    store = StoreHistory(events)
    ops, counts = api_history(events, store)
    lags: dict[str, dict[str, Any]] = {}
    read_problems, read_counts = check_api_reads(events, store, lags)
    _bookmark_lags(events, store, lags)
    counts |= read_counts
    judged = counts["writes"] + counts["reads"] + counts["observations"] + counts["lists"] + counts["cached_gets"]
    details: dict[str, Any] = {**counts}
    if lags:
        details["watch_cache_lag_s"] = {server: lags[server] for server in sorted(lags)}
    if read_problems:
        first = read_problems[0]
        details["read_violations"] = len(read_problems)
        return Verdict(False, first["problem"], tuple(problem["read"] for problem in read_problems[:MAX_EVIDENCE]), details)
    if not judged:
        return nothing_to_judge("no API operation was journaled: nothing to judge", (), details)
    verdict = check_linearizability(ops, ApiStoreModel(), time_limit_s=time_limit_s)
    details |= verdict.details
    if verdict.valid is False:
        key = verdict.evidence[0].key if verdict.evidence else None
        where = f"{key[0]} {key[1]}" if key else "an object"
        return Verdict(False, f"{where}: {len(verdict.evidence)} operation(s) cannot be linearized against the object store", verdict.evidence, details)
    if verdict.valid is None:
        return Verdict(None, verdict.reason, (), details)
    lagged = max(lags.items(), key=lambda item: (item[1]["lag_s"], item[0]), default=None)
    lag_note = f"; watch caches lagged at most {lagged[1]['lag_s']:.1f} s ({lagged[0]}, {lagged[1]['resource']})" if lagged is not None else ""
    return Verdict(True, f"{counts['writes']} write(s), {counts['reads']} quorum get(s), {counts['observations']} other observation(s) linearizable per object; {counts['lists']} list(s) and {counts['cached_gets']} cached get(s) consistent with the store{lag_note}", (), details)

"""Garbage collection and cascading deletion, judged from the journal.

The Kubernetes behaviour checked ("Garbage Collection",
https://kubernetes.io/docs/concepts/architecture/garbage-collection/; "Use Cascading
Deletion", https://kubernetes.io/docs/tasks/administer-cluster/use-cascade-deletion/;
``pkg/controller/garbagecollector/garbagecollector.go``):

1. **Owners are respected**: the garbage collector deletes a dependent only when none of
   its owners (by uid: "the garbage collector ... verifies that the owner reference's uid
   matches") exists -- except an owner being deleted in the foreground, whose dependents
   it deletes while the owner waits.
2. **Background**: "the Kubernetes API server deletes the owner object immediately and
   the garbage collector controller cleans up the dependent objects in the background":
   once an owner is gone from the store (deleted without the orphan finalizer), each of
   its dependents is deleted (marked or removed) within :data:`BACKGROUND_BOUND_S`,
   counted from the later of the owner's removal and the start of the
   kube-controller-manager leader acting then (and only while one acts).
3. **Orphan**: "the garbage collector ... does not delete dependents; it removes the
   owner reference" -- an owner deleted with the ``orphan`` finalizer leaves the store only
   once no dependent references it any more, and the collector deletes none of the
   dependents that referenced it while it was in the store (one that first referenced it
   after it left -- a controller's create in flight then -- holds a dangling reference,
   which upstream's collector deletes: ``garbagecollector.go`` ``attemptToDeleteItem``).
   A later delete with propagationPolicy Background or Foreground withdraws the orphan
   request: the API server drops the ``orphan`` finalizer (``store.go``
   ``deletionFinalizersForGarbageCollection``), and the owner is judged as deleted with
   that policy from then on -- known from the API server's ``api-request`` record of that
   delete (its ``propagation``, and the resourceVersion it answered: the version it
   removed, or the one it wrote).
4. **Foreground**: "the owner object first enters a deletion in progress state ... the
   controller deletes dependents ... After deleting all the dependent objects [with
   ``ownerReference.blockOwnerDeletion=true``], the controller deletes the owner object":
   an owner with the ``foregroundDeletion`` finalizer leaves the store only when no
   dependent with a blocking reference to it is left (not even one still terminating),
   but one first stored within :data:`COLLECTOR_CACHE_LAG_S` of the owner's removal (a
   controller's create racing the collector's last look; then judged by rule 2).
5. **Owners are released**: the collector removes its own finalizer once its work is done
   ("the controller deletes the owner object"; kubernetes/kubernetes#89503, "orphan
   finalizer is not properly processed", is the bug this catches): an owner marked for
   deletion whose only finalizers are ``orphan`` / ``foregroundDeletion`` leaves the store
   within :data:`BACKGROUND_BOUND_S` of the later of its marking and the moment its last
   dependent let go of it (for ``orphan``: no dependent references it any more; for the
   foreground: no blocking dependent is left), counted as for rule 2.

Inputs: the store (``raft-apply``: owners and dependents with their ``ownerReferences``,
finalizers and deletion timestamps) for every resource that carries owner references,
and the collector's ``gc-delete`` records (uid, owners' uids; :mod:`chaoskube.controllers.garbagecollector`).

Answers False with the first violation in time, unknown when no owner was deleted and
the collector deleted nothing, True otherwise with counts.

6. **Invalid cross-namespace references**: "a namespaced owner must exist in the same
   namespace as the dependent. If it does not, the owner reference is treated as absent,
   and the dependent is subject to deletion once all owners are verified absent" ("Owners
   and dependents",
   https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/;
   the collector's ``OwnerRefInvalidNamespace``, kubernetes/kubernetes#65200, #92743): a
   namespaced dependent first stored with every owner living in another namespace (an
   object copied with its owner references) is deleted within :data:`BACKGROUND_BOUND_S`,
   counted as for rule 2; and for rule 1 such an owner is absent.

Limits: owners are matched by uid within the dependent's namespace (cluster-scoped owners
by uid alone); a dependent whose owner is of a kind the store never held is not judged for
rule 2; rule 2 cannot judge deletions within the bound of the journal's end.
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.protocol import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from chaoskube.checkers.replay import CONTROLLER_MANAGER_LEASE, REGISTRY_PREFIX, acting_intervals, deadline_under_leader, is_deleting, parse_key
from chaoskube.checkers.replay import _loads as loads
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["BACKGROUND_BOUND_S", "check_garbage_collection"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: How soon a dependent of a removed owner must be deleted: the collector's informer
#: delivery, its quorum reads of the dependent and of each owner, the delete, retried
#: under the rate limiter a few times: 60 s.
BACKGROUND_BOUND_S = 60.0
#: How far the collector's graph (its informers) may lag the store: a blocking dependent
#: first stored this shortly before its foreground owner left was created as the collector
#: removed the owner's finalizer -- the StatefulSet controller recreates a revision the
#: collector deleted while its set is deleted in the foreground (upstream's
#: getStatefulSetRevisions runs before the sync's DeletionTimestamp check) -- and the
#: collector then deletes it as a dangling dependent (rule 2).
COLLECTOR_CACHE_LAG_S = 1.0


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata", {})


def _namespace_of(key: str) -> str:
    """A stored key's namespace ("" for a cluster-scoped object's key, which has no "/")."""
    return key.partition("/")[0] if "/" in key else ""


def _refs(obj: Obj) -> list[dict[str, Any]]:
    return list(_meta(obj).get("ownerReferences") or ())


@dataclass
class _Owner:
    resource: str
    key: str
    uid: str
    namespace: str
    removed_t: float | None = None
    marked_t: float | None = None  # when it was first seen marked for deletion
    released_t: float = 0.0  # when a dependent last let go of it (reference dropped or gone)
    finalizers: tuple[str, ...] = ()  # its finalizers now
    orphaning: bool = False  # the orphan finalizer was on it
    foreground: bool = False  # the foregroundDeletion finalizer is on it now
    referenced_by: set[str] = field(default_factory=set)  # dependent uids that referenced it


def check_garbage_collection(events: Sequence[Event], *, background_bound_s: float = BACKGROUND_BOUND_S) -> Verdict:
    """Judge the garbage collector and cascading deletion (module docstring)."""
    objects: dict[str, tuple[str, str, Obj]] = {}  # uid -> (resource, key, object) of live objects
    by_key: dict[tuple[str, str], str] = {}  # (resource, key) -> uid
    owners: dict[str, _Owner] = {}  # owner uid -> what is known of it
    dependents: dict[str, tuple[str, str, set[str], float | None]] = {}  # dependent uid -> (resource, key, owner uids, deleted at)
    deleted_states: dict[str, dict[str, str]] = {}  # dependent uid -> owner uid -> owner state when it was deleted
    refs_to: dict[str, set[str]] = {}  # owner uid -> uids of the dependents that ever referenced it
    first_ref_t: dict[tuple[str, str], float] = {}  # (dependent uid, owner uid) -> when the store first showed the reference
    gc_deleted: list[Event] = []
    #: dependents first stored with every owner living in another namespace -> (when, an owner)
    invalid: dict[str, tuple[float, str]] = {}
    findings: list[tuple[float, str, tuple[Any, ...]]] = []
    seen_revisions: set[int] = set()
    counts = {"owners_removed": 0, "orphaned": 0, "foreground": 0, "gc_deletes": 0, "dependents": 0}

    def owner_state(uid: str, namespace: str) -> str:
        """The owner ``uid`` as a dependent in ``namespace`` sees it: a namespaced owner in
        another namespace is absent there (an invalid cross-namespace reference)."""
        entry = objects.get(uid)
        if entry is None or _namespace_of(entry[1]) not in ("", namespace):
            return "absent"
        finalizers = _meta(entry[2]).get("finalizers") or ()
        if is_deleting(entry[2]) and FOREGROUND_FINALIZER in finalizers:
            return "deleting-foreground"
        return "present"

    # Deletes that withdrew an orphan request (a later Background or Foreground delete of
    # the same object): (resource, key) -> the resourceVersions they answered with.
    withdrawing: dict[tuple[str, str], set[str]] = {}
    for event in events:
        if event["type"] == "api-request" and event.get("verb") == "delete" and event.get("code") == 200 and event.get("propagation") in ("Background", "Foreground"):
            key = f"{event['namespace']}/{event['name']}" if event.get("namespace") else event.get("name", "")
            withdrawing.setdefault((event.get("resource", ""), key), set()).add(str(event.get("resource_version", "")))
    revision_of: dict[str, int] = {}  # uid -> the revision of its last change in the store

    for event in events:
        kind = event["type"]
        if kind == "gc-delete":
            gc_deleted.append(event)
            continue
        if kind != "raft-apply" or not event.get("events"):
            continue
        revision = event.get("revision")
        if revision is None or revision in seen_revisions:
            continue
        seen_revisions.add(revision)
        t = event["t"]
        for change, raw_key, value, *_ in event["events"]:
            if not raw_key.startswith(REGISTRY_PREFIX):
                continue
            parsed = parse_key(raw_key)
            if parsed is None:
                continue
            resource, key = parsed
            before_uid = by_key.get((resource, key))
            before = objects.get(before_uid)[2] if before_uid is not None and before_uid in objects else None
            before_revision = revision_of.get(before_uid) if before_uid is not None else None
            after = None if change == "DELETE" else loads(value)
            if after is None:
                if before_uid is not None:
                    objects.pop(before_uid, None)
                    by_key.pop((resource, key), None)
            else:
                uid = _meta(after).get("uid", "")
                if before_uid is not None and before_uid != uid:
                    objects.pop(before_uid, None)
                objects[uid] = (resource, key, after)
                by_key[(resource, key)] = uid
                revision_of[uid] = revision
            # dependents: their owners, and the owners' state when they were deleted
            current = after if after is not None else before
            if current is None:
                continue
            uid = _meta(current).get("uid", "")
            refs = _refs(current)
            if before is not None:
                kept = {ref.get("uid", "") for ref in _refs(after)} if after is not None else set()
                for ref in _refs(before):
                    let_go = owners.get(ref.get("uid", ""))
                    if let_go is not None and ref.get("uid", "") not in kept:
                        let_go.released_t = max(let_go.released_t, t)
            if refs:
                owner_uids = {ref.get("uid", "") for ref in refs}
                entry = dependents.get(uid)
                deleted_at = entry[3] if entry is not None else None
                if (after is None or is_deleting(after)) and deleted_at is None:
                    deleted_at = t
                    deleted_states[uid] = {owner: owner_state(owner, _namespace_of(key)) for owner in sorted(owner_uids)}
                if entry is None and _namespace_of(key):
                    elsewhere = [objects[owner] for owner in sorted(owner_uids) if owner in objects and _namespace_of(objects[owner][1]) not in ("", _namespace_of(key))]
                    if elsewhere and len(elsewhere) == len(owner_uids):
                        invalid[uid] = (t, f"{elsewhere[0][0]} {elsewhere[0][1]}")
                dependents[uid] = (resource, key, owner_uids, deleted_at)
                for owner in owner_uids:
                    refs_to.setdefault(owner, set()).add(uid)
                    first_ref_t.setdefault((uid, owner), t)
            # owners: any object some dependent references, or that carries a GC finalizer
            finalizers = _meta(current).get("finalizers") or ()
            if uid in owners or ORPHAN_FINALIZER in finalizers or FOREGROUND_FINALIZER in finalizers or uid in refs_to:
                owner = owners.setdefault(uid, _Owner(resource, key, uid, key.partition("/")[0] if "/" in key else ""))
                withdrawn = before is not None and ORPHAN_FINALIZER in (_meta(before).get("finalizers") or ()) and str(
                    revision if after is not None else before_revision) in withdrawing.get((resource, key), ())
                owner.orphaning = (owner.orphaning or ORPHAN_FINALIZER in finalizers) and not withdrawn
                owner.foreground = FOREGROUND_FINALIZER in finalizers
                owner.finalizers = tuple(finalizers)
                if is_deleting(current) and owner.marked_t is None:
                    owner.marked_t = t
                owner.referenced_by = refs_to.setdefault(uid, set())
                if after is None:
                    owner.removed_t = t
                    counts["owners_removed"] += 1
                    counts["orphaned"] += owner.orphaning
                    problem = _judge_removal(owner, before, objects, dependents, t, first_ref_t)
                    if problem is not None:
                        findings.append((t, problem, ({"type": "store", "t": t, "revision": revision, "object": f"{resource}/{key}", "change": "deleted"},)))
    counts["dependents"] = len(dependents)
    counts["gc_deletes"] = len(gc_deleted)
    orphaned_by = {uid: owner for uid, owner in owners.items() if owner.orphaning}
    for record in gc_deleted:
        states = deleted_states.get(record.get("uid", ""))
        if states is None:
            continue
        alive = [owner for owner, state in states.items() if state == "present"]
        if alive:
            findings.append((record["t"], f"the garbage collector deleted {record['resource']} {record['namespace']}/{record['name']} while its owner {alive[0]} existed", (record,)))
            continue
        # A dependent that first referenced the owner after it had left the store (a
        # controller's create in flight when the owner went) holds a dangling reference:
        # the garbage collector deletes it (garbagecollector.go attemptToDeleteItem: no
        # solid owner, a dangling one), whatever the owner's deletion asked for.
        dependent = record.get("uid", "")
        orphans = [
            owner for owner in record.get("owners") or ()
            if owner in orphaned_by and first_ref_t.get((dependent, owner), math.inf) < (orphaned_by[owner].removed_t if orphaned_by[owner].removed_t is not None else math.inf)
        ]
        if orphans:
            findings.append((record["t"], f"the garbage collector deleted {record['resource']} {record['namespace']}/{record['name']}, a dependent of {orphans[0]}, which was deleted with propagationPolicy Orphan", (record,)))
    # background: dependents of removed (non-orphaning) owners go within the bound
    acting = acting_intervals(events, CONTROLLER_MANAGER_LEASE)
    end_t = events[-1]["t"] if events else 0.0
    for owner in owners.values():
        if owner.removed_t is None or owner.orphaning:
            continue
        deadline = deadline_under_leader(owner.removed_t, acting, background_bound_s)
        for dependent_uid in sorted(owner.referenced_by):
            resource, key, owner_uids, deleted_at = dependents[dependent_uid]
            if any(other != owner.uid and other in objects for other in owner_uids):
                continue  # another owner still holds it
            live = objects.get(dependent_uid)
            if live is not None and owner.uid not in {ref.get("uid") for ref in _refs(live[2])}:
                continue  # no longer a dependent (orphaned before)
            if deadline <= end_t and (deleted_at is None or deleted_at > deadline):
                findings.append((deadline, f"{resource} {key} was not deleted within {background_bound_s:g} s of its owner {owner.resource} {owner.key} going (at t={owner.removed_t:.3f})", ({"type": "dependent", "object": f"{resource}/{key}", "uid": dependent_uid, "deleted_at": deleted_at},)))
    # invalid cross-namespace references: the owner is absent where the dependent is
    for dependent_uid, (since, elsewhere) in sorted(invalid.items(), key=lambda item: item[1][0]):
        resource, key, owner_uids, deleted_at = dependents[dependent_uid]
        deadline = deadline_under_leader(since, acting, background_bound_s)
        if deadline <= end_t and (deleted_at is None or deleted_at > deadline):
            findings.append((deadline, (
                f"{resource} {key} references only owners in other namespaces ({elsewhere}), absent from its own (OwnerRefInvalidNamespace), "
                f"and was not deleted within {background_bound_s:g} s (stored at t={since:.3f})"
            ), ({"type": "dependent", "object": f"{resource}/{key}", "uid": dependent_uid, "deleted_at": deleted_at},)))
    counts["invalid_references"] = len(invalid)
    # release: an owner held only by the collector's finalizers leaves once its dependents let go
    for owner in owners.values():
        if owner.removed_t is not None or owner.marked_t is None or not owner.finalizers:
            continue
        if not set(owner.finalizers) <= {ORPHAN_FINALIZER, FOREGROUND_FINALIZER}:
            continue  # another controller's finalizer holds it: not the collector's to release
        holding = []
        for dependent_uid in sorted(owner.referenced_by):
            live = objects.get(dependent_uid)
            reference = next((ref for ref in _refs(live[2]) if ref.get("uid") == owner.uid), None) if live is not None else None
            if reference is not None and (ORPHAN_FINALIZER in owner.finalizers or reference.get("blockOwnerDeletion")):
                holding.append(dependent_uid)
        if holding:
            continue
        released = max(owner.marked_t, owner.released_t)
        deadline = deadline_under_leader(released, acting, background_bound_s)
        if deadline <= end_t:
            findings.append((deadline, (
                f"{owner.resource} {owner.key} is still in the store {background_bound_s:g} s after nothing held it any more (t={released:.3f}), "
                f"with the collector's finalizer(s) {', '.join(owner.finalizers)} left on it"
            ), ({"type": "owner", "object": f"{owner.resource}/{owner.key}", "uid": owner.uid, "marked_t": owner.marked_t, "released_t": released, "finalizers": list(owner.finalizers)},)))
    counts["foreground"] = sum(1 for owner in owners.values() if owner.foreground or owner.removed_t is not None and not owner.orphaning)
    if findings:
        findings.sort(key=lambda item: item[0])
        return Verdict(False, findings[0][1], findings[0][2], counts | {"violations": len(findings)})
    if not counts["owners_removed"] and not gc_deleted:
        return nothing_to_judge("no owner was deleted and the garbage collector deleted nothing: nothing to judge", (), counts)
    return Verdict(
        True,
        f"{counts['owners_removed']} owner(s) deleted ({counts['orphaned']} orphaning); {counts['gc_deletes']} collection(s) by the garbage collector, none while an owner existed; "
        f"dependents collected within {background_bound_s:g} s, orphans kept, foreground owners waited for their blocking dependents, owners released",
        (), counts,
    )


def _judge_removal(owner: _Owner, before: Obj | None, objects: dict[str, tuple[str, str, Obj]], dependents: dict[str, tuple[str, str, set[str], float | None]], t: float,
                   first_ref_t: dict[tuple[str, str], float]) -> str | None:
    """Rules 3 and 4 at the owner's removal from the store."""
    for dependent_uid in sorted(owner.referenced_by):
        live = objects.get(dependent_uid)
        if live is None:
            continue
        resource, key, dependent = live
        reference = next((ref for ref in _refs(dependent) if ref.get("uid") == owner.uid), None)
        if reference is None:
            continue
        if owner.orphaning:
            return f"{owner.resource} {owner.key} (deleted with propagationPolicy Orphan) left the store while its dependent {resource} {key} still referenced it"
        if owner.foreground and reference.get("blockOwnerDeletion"):
            if first_ref_t.get((dependent_uid, owner.uid), -math.inf) > t - COLLECTOR_CACHE_LAG_S:
                continue  # created as the collector let go: a race it could not see (then dangling, rule 2)
            return f"{owner.resource} {owner.key} (deleted in the foreground) left the store while its blocking dependent {resource} {key} still existed"
    return None

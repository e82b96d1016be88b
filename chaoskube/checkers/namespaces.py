"""Namespace deletion, judged from the store's history: what the namespace controller and
NamespaceLifecycle admission promise about a namespace being deleted.

The Kubernetes behaviour checked ("Namespaces",
https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/; "Namespace
deletion", KEP/design "namespaces.md"; NamespaceLifecycle admission,
https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle;
``pkg/controller/namespace/deletion/namespaced_resources_deleter.go``):

1. **Finalized only when empty**: "the namespace controller ... deletes all content in the
   namespace; once all content is removed, it removes the kubernetes finalizer and the
   namespace is deleted" -- when a Namespace leaves the store, no object of any namespaced
   resource is left in it.
2. **Nothing of it left after**: no object is written into a namespace after its Namespace
   left the store (until a Namespace of that name is created again).
3. **Nothing created while Terminating**: NamespaceLifecycle refuses "new content in
   namespace X because it is being terminated" -- no object is first stored in a namespace
   whose Namespace had been marked for deletion ``lag_s`` before (the plugin reads its
   namespaces from an informer: kubernetes/kubernetes#37431 is the bug of a create that
   slipped in), admitted (its ``creationTimestamp``) that long after too: a write admitted
   before and stalled behind a paused etcd member may land later. Events are not judged (recorders write them for objects being deleted).

``check_namespace_invariants(events)`` answers False with the first finding, unknown when no
Namespace was deleted, True otherwise. Objects are those under ``/registry/<resource>/<namespace>/<name>``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from chaoskube.checkers.replay import parse_key
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_namespace_invariants"]

Event = dict[str, Any]

LAG_S = 10.0
#: Resources whose writes into a namespace being deleted are not judged.
NOT_JUDGED = frozenset({"events"})


def check_namespace_invariants(events: Sequence[Event], *, lag_s: float = LAG_S) -> Verdict:
    """Judge the namespace rules (module docstring)."""
    live: dict[str, set[tuple[str, str]]] = {}  # namespace -> (resource, key) stored now
    terminating: dict[str, float] = {}  # namespace -> when its Namespace was first stored marked
    gone: dict[str, float] = {}  # namespace -> when its Namespace left the store
    exists: set[str] = set()
    seen: set[int] = set()
    counts = {"namespaces_deleted": 0, "creates_checked": 0}
    for event in events:
        if event.get("type") != "raft-apply" or not event.get("events"):
            continue
        revision = event.get("revision")
        if revision is None or revision in seen:
            continue
        seen.add(revision)
        t = event["t"]
        for entry in event["events"]:
            kind, key, value = entry[0], entry[1], entry[2]
            parsed = parse_key(key)
            if parsed is None:
                continue
            resource, name = parsed
            if resource == "namespaces":
                if kind == "DELETE":
                    if name in exists:
                        exists.discard(name)
                        gone[name] = t
                        counts["namespaces_deleted"] += 1
                        left = sorted(f"{res}/{obj}" for res, obj in live.get(name, ()) if res not in NOT_JUDGED)
                        if left:
                            return _violation("namespace-finalized-with-content", t, name,
                                              f"namespace {name} left the store at t={t:.3f} with {len(left)} object(s) still in it: {', '.join(left[:5])}",
                                              counts, {"left": left[:20]})
                else:
                    if name not in exists:
                        exists.add(name)
                        gone.pop(name, None)
                        terminating.pop(name, None)
                    if '"deletionTimestamp"' in (value or "") and name not in terminating:
                        terminating[name] = t
                continue
            namespace, _, _ = name.partition("/")
            if not namespace or "/" not in name:
                continue
            item = (resource, name)
            members = live.setdefault(namespace, set())
            if kind == "DELETE":
                members.discard(item)
                continue
            if item in members:
                continue
            members.add(item)
            if resource in NOT_JUDGED:
                continue
            counts["creates_checked"] += 1
            if namespace in gone and namespace not in exists:
                return _violation("namespace-content-after-deletion", t, namespace,
                                  f"{resource}/{name} was stored at t={t:.3f}, after namespace {namespace} left the store at t={gone[namespace]:.3f}",
                                  counts, {"object": f"{resource}/{name}"})
            since = terminating.get(namespace, math.inf)
            # admission ran when the API server took the request, which stamped
            # creationTimestamp (whole seconds, rounded down); a write stalled behind a
            # paused etcd member may land long after (swarm-apps seed 12: a Lease sent 5 s
            # before the deletion, answered 504, stored 23 s after it)
            admitted = _created_at(value)
            if since + lag_s <= t and (admitted is None or admitted >= since + lag_s):
                return _violation("namespace-create-while-terminating", t, namespace,
                                  f"{resource}/{name} was created at t={t:.3f} in namespace {namespace}, Terminating since t={since:.3f}: NamespaceLifecycle refuses new content in a namespace being terminated",
                                  counts, {"object": f"{resource}/{name}", "terminating_since": since})
    if not counts["namespaces_deleted"] and not terminating:
        return nothing_to_judge("no namespace was deleted: nothing to judge", (), counts)
    return Verdict(True, (
        f"{counts['namespaces_deleted']} namespace(s) deleted, each only once empty; {counts['creates_checked']} object creation(s): "
        f"none in a namespace Terminating for {lag_s:g} s, none after its namespace was gone"
    ), (), counts)


def _created_at(value: str | None) -> float | None:
    """The object's ``creationTimestamp`` in virtual seconds, or None."""
    import json

    from chaoskube.api.protocol import parse_timestamp

    try:
        stamp = (json.loads(value or "null") or {}).get("metadata", {}).get("creationTimestamp")
        return parse_timestamp(stamp) if stamp else None
    except (ValueError, AttributeError, TypeError):
        return None


def _violation(rule: str, t: float, namespace: str, problem: str, counts: dict[str, int], evidence: dict[str, Any]) -> Verdict:
    return Verdict(False, problem, ({"rule": rule, "t": t, "object": f"namespaces/{namespace}", "problem": problem, **evidence},), {"rule": rule, **counts})

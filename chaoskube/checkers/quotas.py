"""ResourceQuota hard limits, judged from the store's history: usage recomputed from the
objects stored, never from the quota's ``status``.

The Kubernetes behaviour checked ("Resource Quotas",
https://kubernetes.io/docs/concepts/policy/resource-quotas/: "If creating or updating a
resource violates a quota constraint, the request will fail with HTTP status code 403";
``plugin/pkg/admission/resourcequota/controller.go``, which charges every admitted create to
the quota's ``status.used`` with an optimistic-concurrency update, so concurrent creates
through several API servers cannot both spend the same headroom;
``pkg/quota/v1/evaluator/core/pods.go`` for what a pod uses):

- **Hard never exceeded through admission**: at every stored revision, the objects of a
  namespace that were admitted while a ResourceQuota existed (their ``creationTimestamp``,
  whole seconds rounded down, after the quota was first stored) and are still live use, per
  resource the quota constrains, no more than the largest ``spec.hard`` the quota has had so
  far. Usage is :func:`chaoskube.api.quota.usage` of the stored object (``pods``,
  ``count/<resource>``, ``requests.*``, ``limits.*``, bare ``cpu`` / ``memory``); a terminal
  pod or one marked for deletion uses nothing here.

Bounds, on the side of no false alarm: objects created before the quota are left out (upstream
counts them once the controller recalculates, but admission never judged them); a ``hard``
lowered below what is in use is not a violation (upstream never evicts), so the bound is the
largest hard seen. Unknown cases, left out and listed in the details: quotas with ``scopes`` or
a ``scopeSelector`` (Terminating, BestEffort, PriorityClass...), not modelled here.

``check_quota_invariants(events)`` answers False with the first finding, unknown when no
unscoped ResourceQuota guarded any create, True otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chaoskube.checkers.replay import parse_key
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_quota_invariants"]

Event = dict[str, Any]


class _Quota:
    __slots__ = ("stored_t", "hard", "ceiling")

    def __init__(self, stored_t: float) -> None:
        self.stored_t = stored_t
        self.hard: dict[str, int] = {}
        self.ceiling: dict[str, int] = {}  # largest hard per resource seen so far


def check_quota_invariants(events: Sequence[Event]) -> Verdict:
    """Judge the quota rule (module docstring)."""
    from chaoskube.api.objects import parse_quantity

    quotas: dict[str, dict[str, _Quota]] = {}  # namespace -> name -> quota
    scoped: set[str] = set()
    live: dict[str, dict[tuple[str, str], tuple[float | None, dict[str, int]]]] = {}  # ns -> (resource, key) -> (created, usage)
    seen: set[int] = set()
    counts = {"quotas": 0, "creates_checked": 0}
    for event in events:
        if event.get("type") != "raft-apply" or not event.get("events"):
            continue
        revision = event.get("revision")
        if revision is None or revision in seen:
            continue
        seen.add(revision)
        t = event["t"]
        touched: list[tuple[str, tuple[str, str]]] = []
        for entry in event["events"]:
            kind, key, value = entry[0], entry[1], entry[2]
            parsed = parse_key(key)
            if parsed is None:
                continue
            resource, name = parsed
            namespace, slash, short = name.partition("/")
            if not slash:
                continue
            data = _load(value) if kind != "DELETE" else None
            if resource == "resourcequotas":
                if kind == "DELETE":
                    quotas.get(namespace, {}).pop(short, None)
                    continue
                spec = (data or {}).get("spec") or {}
                if spec.get("scopes") or spec.get("scopeSelector"):
                    scoped.add(name)
                    quotas.get(namespace, {}).pop(short, None)
                    continue
                quota = quotas.setdefault(namespace, {}).get(short)
                if quota is None:
                    quota = quotas[namespace][short] = _Quota(t)
                    counts["quotas"] += 1
                try:
                    quota.hard = {res: parse_quantity(amount) for res, amount in (spec.get("hard") or {}).items()}
                except (ValueError, TypeError):
                    quota.hard = {}
                for res, amount in quota.hard.items():
                    quota.ceiling[res] = max(quota.ceiling.get(res, amount), amount)
                continue
            members = live.setdefault(namespace, {})
            item = (resource, name)
            if kind == "DELETE":
                members.pop(item, None)
                continue
            fresh = item not in members
            created = _created_at(data)
            members[item] = (created if fresh else members[item][0], _usage(data, resource))
            if fresh:
                touched.append((namespace, item))
        for namespace, item in touched:
            for quota_name, quota in sorted(quotas.get(namespace, {}).items()):
                created, used = live[namespace][item]
                if created is None or created <= quota.stored_t or not any(res in quota.ceiling for res in used):
                    continue
                counts["creates_checked"] += 1
                total: dict[str, int] = {}
                for other_created, other_used in live[namespace].values():
                    if other_created is None or other_created <= quota.stored_t:
                        continue
                    for res, amount in other_used.items():
                        if res in quota.ceiling:
                            total[res] = total.get(res, 0) + amount
                for res, amount in sorted(total.items()):
                    if amount > quota.ceiling[res]:
                        problem = (f"{item[0]}/{item[1]} stored at t={t:.3f} (revision {revision}) brings {res} of the objects admitted under "
                                   f"ResourceQuota {namespace}/{quota_name} to {_show(amount)}, above its hard {_show(quota.ceiling[res])}: "
                                   "admission must refuse a create that exceeds quota")
                        return Verdict(False, problem, ({"rule": "quota-exceeded", "t": t, "revision": revision, "object": f"resourcequotas/{namespace}/{quota_name}",
                                                         "resource": res, "used": amount, "hard": quota.ceiling[res], "problem": problem},),
                                       {"rule": "quota-exceeded", **counts, "scoped_left_out": sorted(scoped)})
    details = {**counts, "scoped_left_out": sorted(scoped)}
    if not counts["creates_checked"]:
        return nothing_to_judge("no create was admitted under an unscoped ResourceQuota", (), details)
    return Verdict(True, f"{counts['creates_checked']} create(s) under {counts['quotas']} ResourceQuota(s): usage never above hard", (), details)


def _show(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _load(value: str | None) -> dict[str, Any] | None:
    try:
        data = json.loads(value or "null")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _created_at(data: dict[str, Any] | None) -> float | None:
    """The object's ``creationTimestamp`` in virtual seconds, or None."""
    from chaoskube.api.protocol import parse_timestamp

    try:
        stamp = ((data or {}).get("metadata") or {}).get("creationTimestamp")
        return parse_timestamp(stamp) if stamp else None
    except (ValueError, AttributeError, TypeError):
        return None


def _usage(data: dict[str, Any] | None, resource: str) -> dict[str, int]:
    """What the stored object uses against quotas; a pod marked for deletion uses nothing
    here (it is on its way out; the bound errs towards no false alarm)."""
    from chaoskube.api.manifests import ManifestError, from_dict
    from chaoskube.api.quota import usage

    if not data or ((data.get("metadata") or {}).get("deletionTimestamp")):
        return {}
    try:
        return usage(from_dict(data), resource)
    except (ManifestError, ValueError, TypeError, KeyError):
        return {f"count/{resource}": 1000}

"""Authorization under faults, judged from the journal: every attempt of the adversarial
tenants (``tenant-attempt`` events, :mod:`chaoskube.tenants`) got what the cluster's
policy allowed -- by an oracle of its own (:mod:`chaoskube.checkers.authz_oracle`, written
from the Kubernetes documentation), never by asking the API server's code.

For each attempt the store is replayed (:class:`~chaoskube.checkers.replay.StoreReplay`
over ``raft-apply`` events) to the policy objects -- Roles, ClusterRoles, their bindings,
ServiceAccounts, Namespaces, and the Pods and Nodes the request names -- as they were at
every revision from ``lag_bound_s`` before the request was sent to when it was answered,
and the oracle decides each of those states.

- An attempt answered 2xx is a **finding** when no state in [sent, answered] allows it: a
  forbidden action succeeded. The finding names the request, the identity, and the stage
  and rule that should have denied it (the oracle's reason at the answer's state).
- An API server authorizes with its *watch cache* (``docs/api-server.md`` section 1: RBAC
  changes take effect on each replica when its cache sees them), so an attempt allowed
  only by a state in [sent - ``lag_bound_s``, sent) -- a binding removed shortly before,
  honoured by a lagging cache -- is an **eventual-consistency window**: it is reported
  (``details["windows"]``: the attempt and by how much the policy had changed before it)
  and is not a finding. One allowed only by older states is a finding: the window is
  bounded, not excused for ever.
- Symmetrically, an attempt refused by authentication (401) or by authorization (403
  "User ... cannot ...") that every state in the window allows is a **finding** (a
  permitted action refused); one refused only within the window is reported. Refusals by
  other admission (webhooks), 404s, 409s, 429s, 5xx and timeouts are not judged: the
  oracle models the authentication, authorization, NodeRestriction and NamespaceLifecycle
  boundaries only.

The bound (:data:`LAG_BOUND_S`, 10 s) is how stale an API server's cache can be here: a
stream whose etcd member lost its leader is dropped after three election timeouts (3 s,
``WithRequireLeader``), an idle stream is probed every 1 s and a probe that gets no answer
times out after the etcd request timeout (5 s), then the cache re-watches (0.2 s) --
about 9.2 s; upstream bounds nothing (its informers have no staleness bound), so this is
the simulation's, stated and reported.

Answers False with the first finding in time; unknown when the journal has no tenant
attempt or no store history; True otherwise, with per-boundary counts, the windows and
the longest staleness honoured in ``details``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chaoskube.checkers.authz_oracle import Expectation, Request, State, expect
from chaoskube.checkers.replay import Change, StoreReplay
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["LAG_BOUND_S", "POLICY_RESOURCES", "TRACKED_RESOURCES", "check_authorization"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: How long an API server's cache may lag the store (module docstring).
LAG_BOUND_S = 10.0
#: Changes older than this before an attempt's answer are forgotten (the lag bound plus the
#: longest an API client keeps one request going, 50 s, with room).
RETAIN_S = 120.0
POLICY_RESOURCES = ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
GRAPH_RESOURCES = ("persistentvolumes", "volumeattachments", "resourceslices")
TRACKED_RESOURCES = (*POLICY_RESOURCES, "serviceaccounts", "namespaces", "pods", "nodes", *GRAPH_RESOURCES)
GRAPH_KINDS = ("secrets", "configmaps", "persistentvolumeclaims", "persistentvolumes", "resourceclaims", "volumeattachments", "resourceslices", "serviceaccounts")


class _Overlay(State):
    """The replay's current tables with some keys set back to an earlier value."""

    def __init__(self, store: StoreReplay, overrides: dict[tuple[str, str], Obj | None]) -> None:
        super().__init__()
        self.store = store
        self.overrides = overrides

    def get(self, resource: str, key: str) -> Obj | None:
        if (resource, key) in self.overrides:
            return self.overrides[(resource, key)]
        if resource not in self.store.resources:
            return None
        return self.store.get(resource, key)

    def items(self, resource: str) -> Iterable[tuple[str, Obj]]:
        if resource not in self.store.resources:
            return []
        current = dict(self.store.objects(resource))
        for (kind, key), obj in self.overrides.items():
            if kind != resource:
                continue
            if obj is None:
                current.pop(key, None)
            else:
                current[key] = obj
        return sorted(current.items())


@dataclass(frozen=True, slots=True)
class _Judged:
    expectation: Expectation
    start: float  # the state held from here ...
    end: float  # ... to here


def _request_of(event: Event) -> Request:
    return Request(
        verb=event["verb"], resource=event["resource"], subresource=event.get("subresource", ""),
        namespace=event.get("namespace", ""), name=event.get("name", "") if not (event["verb"] == "create" and not event.get("subresource")) else "",
        api_group=event.get("api_group", ""), field_selector=event.get("field_selector", ""), body=event.get("body"),
    )


def _relevant(change: Change, event: Event) -> bool:
    """Whether a store change can matter to this attempt's decision."""
    if change.resource in POLICY_RESOURCES:
        return True
    credentials = event.get("credentials") or {}
    if change.resource == "serviceaccounts":
        if credentials.get("kind") == "service-account-token" and change.key == f"{credentials.get('namespace')}/{credentials.get('name')}":
            return True
        return event["resource"] in GRAPH_KINDS
    if change.resource == "namespaces":
        return change.key == event.get("namespace")
    if change.resource == "pods":
        return change.key == f"{event.get('namespace')}/{event.get('name')}" or event["resource"] in GRAPH_KINDS
    if change.resource == "nodes":
        return change.key == event.get("name") and event["resource"] == "nodes"
    return event["resource"] in GRAPH_KINDS


def _states(store: StoreReplay, log: deque[Change], event: Event, since: float, until: float) -> list[tuple[_Overlay, float, float, bool]]:
    """Every state the relevant objects were in during [since, until], newest first, each
    with the interval it held and whether it is the attempt's own doing (a state from the
    attempt's own write on: admission judged the object *before* that write)."""
    own = _own_revision(event)
    if own is not None and not any(change.revision == own and _relevant(change, event) for change in log if change.t > since):
        own = None  # its write is not among the objects judged (a Lease, say)
    overrides: dict[tuple[str, str], Obj | None] = {}
    states = []
    end = until
    own_seen = own is None
    for change in reversed(log):
        if change.t <= since:
            break
        if not _relevant(change, event):
            continue
        states.append((_Overlay(store, dict(overrides)), change.t, end, not own_seen))
        overrides[(change.resource, change.key)] = change.before
        end = change.t
        if not own_seen and change.revision == own:
            own_seen = True
    states.append((_Overlay(store, dict(overrides)), since, end, not own_seen))
    return states


def _own_revision(event: Event) -> int | None:
    """The store revision of the attempt's own write (a successful, real write)."""
    version = event.get("resource_version")
    if not version or event.get("dry_run") or event.get("verb") in ("get", "list", "watch"):
        return None
    try:
        return int(version)
    except ValueError:
        return None


def _summary(event: Event) -> dict[str, Any]:
    keep = ("t", "tenant", "boundary", "action", "user", "verb", "resource", "subresource", "namespace", "name", "code", "server", "dry_run", "invoked")
    return {"type": "tenant-attempt", **{key: event.get(key) for key in keep}}


def _target(event: Event) -> str:
    resource = event["resource"] + (f"/{event['subresource']}" if event.get("subresource") else "")
    where = f" in {event['namespace']}" if event.get("namespace") else ""
    name = f" {event['name']}" if event.get("name") else ""
    return f"{event['verb']} {resource}{name}{where}"


def check_authorization(events: Iterable[Event], *, lag_bound_s: float = LAG_BOUND_S, selector_authz: bool = False) -> Verdict:
    """Judge every tenant attempt of the journal (module docstring)."""
    assert lag_bound_s >= 0
    store = StoreReplay(TRACKED_RESOURCES)
    log: deque[Change] = deque()
    attempts = judged = 0
    per_boundary: dict[str, dict[str, int]] = {}
    windows: list[dict[str, Any]] = []
    unjudged: dict[str, int] = {}
    first: Verdict | None = None
    for event in events:
        changes = store.apply(event)
        if changes:
            log.extend(changes)
            horizon = changes[-1].t - RETAIN_S - lag_bound_s
            while log and log[0].t < horizon:
                log.popleft()
        if event.get("type") != "tenant-attempt":
            continue
        attempts += 1
        code = event.get("code")
        counts = per_boundary.setdefault(event.get("boundary", "?"), {"attempts": 0, "succeeded": 0, "refused": 0, "findings": 0, "windows": 0})
        counts["attempts"] += 1
        succeeded = isinstance(code, int) and 200 <= code < 300
        refused = code == 401 or (code == 403 and "admission webhook" not in str(event.get("message", "")))
        if not (succeeded or refused):
            unjudged[str(code)] = unjudged.get(str(code), 0) + 1
            continue
        if not store.revisions_applied:
            unjudged["no store history yet"] = unjudged.get("no store history yet", 0) + 1
            continue
        judged += 1
        counts["succeeded" if succeeded else "refused"] += 1
        request = _request_of(event)
        invoked = float(event.get("invoked", event["t"]))
        credentials = event.get("credentials") or {}
        judgements = [
            _Judged(expect(credentials, request, state, selector_authz=selector_authz), start, end)
            for state, start, end, own_doing in _states(store, log, event, invoked - lag_bound_s, event["t"])
            if not own_doing
        ]
        if not judgements:
            unjudged["no state to judge"] = unjudged.get("no state to judge", 0) + 1
            continue
        in_request = [j for j in judgements if j.end >= invoked]
        lagging = [j for j in judgements if j.end < invoked]
        agrees = (lambda j: j.expectation.allowed) if succeeded else (lambda j: not j.expectation.allowed)
        if any(agrees(j) for j in in_request):
            continue
        stale = [j for j in lagging if agrees(j)]
        if stale:
            counts["windows"] += 1
            windows.append({**_summary(event), "stale_by_s": round(invoked - max(j.end for j in stale), 6), "outcome": "allowed" if succeeded else "refused"})
            continue
        if refused and code == 403 and 'is forbidden: User "' not in str(event.get("message", "")):
            unjudged["403 by admission"] = unjudged.get("403 by admission", 0) + 1
            continue
        counts["findings"] += 1
        if first is None:
            now = judgements[0].expectation
            who = f"{event.get('user')} ({event.get('tenant')} tenant, {credentials.get('kind', '?')})"
            if succeeded:
                reason = (f"forbidden action succeeded at t={event['t']:.3f}: {who} could {_target(event)} ({event.get('action')}, code {code} from {event.get('server')})"
                          f"; {now.stage} should have denied it: {now.why}")
            else:
                reason = (f"permitted action refused at t={event['t']:.3f}: {who} was refused {_target(event)} ({event.get('action')}, code {code} from {event.get('server')})"
                          f" although every policy state since {lag_bound_s:g} s before the request allows it")
            evidence = ({**_summary(event), "expected": "deny" if succeeded else "allow", "stage": now.stage, "rule": now.why,
                         "window_s": [round(invoked - lag_bound_s, 6), round(event["t"], 6)], "states_judged": len(judgements)},)
            first = Verdict(False, reason, evidence)
    details = {
        "attempts": attempts, "judged": judged, "per_boundary": dict(sorted(per_boundary.items())),
        "windows": windows[:50], "window_count": len(windows),
        "longest_window_s": max((w["stale_by_s"] for w in windows), default=0.0), "lag_bound_s": lag_bound_s,
        "unjudged": dict(sorted(unjudged.items())),
    }
    if first is not None:
        return Verdict(first.valid, first.reason, first.evidence, details)
    if not attempts:
        return nothing_to_judge("no tenant attempt in the journal (run with workload `tenants: true`)", details=details)
    if not store.revisions_applied:
        return Verdict(None, "the journal has no store history (raft-apply events): the policy cannot be replayed", details=details)
    denied = sum(c["refused"] for c in per_boundary.values())
    return Verdict(
        True,
        f"{judged} tenant attempt(s) on {len(per_boundary)} boundary(ies) judged: no forbidden action succeeded, no permitted one refused"
        f" ({denied} refused as the policy says; {len(windows)} within the {lag_bound_s:g} s cache-lag window, longest {details['longest_window_s']:.3f} s)",
        details=details,
    )

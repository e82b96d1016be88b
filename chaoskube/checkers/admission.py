"""Admission, judged from the journal: nothing a Fail-policy webhook could not vouch for was
persisted; what an Ignore-policy webhook let through unvalidated is listed.

The Kubernetes behaviour checked ("Dynamic Admission Control", Failure policy:
https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/;
``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/validating/dispatcher.go``,
``mutating/dispatcher.go``, ``predicates/rules/rules.go``): every request a webhook's rules
match is sent to it; when the call fails (refused, timed out, an invalid answer),
``failurePolicy: Fail`` (the default) rejects the request and ``Ignore`` lets it through as
if the webhook had allowed it; a denial always rejects it. So a create or update answered
2xx must have had a passing call of every Fail webhook that matched it, and no call that
failed under Fail or denied it.

Inputs: ``webhook-call`` records (:mod:`chaoskube.apiserver.webhooks`: ``server``, ``webhook``,
``configuration``, ``operation``, ``kind``, ``outcome`` allowed | denied | patched | error |
ignored-error, ``reason``, ``latency_s``), ``api-request`` records of the API servers
(``server``, ``id``, ``verb``, ``resource``, ``subresource``, ``namespace``, ``name``,
``code``, ``resource_version``), the clients' ``api-op`` invokes (when a request started),
the webhook configurations in the store (``raft-apply``: validating or mutating, each
webhook's rules, selectors and ``failurePolicy``) and the runtime's ``process`` events.

Terms. A request is *persisted* when its ``api-request`` is a 2xx create, update or patch
with a ``resource_version`` (a dry run has none). A call *must refuse* its request when its
outcome is ``error`` or ``denied``, or ``ignored-error`` although its webhook stayed
``failurePolicy: Fail`` in the store throughout ``config_lag_s`` before the call (the
server reads configurations from its informer, which may trail a change). A call is a
*bypass* when it is ``ignored-error`` otherwise.

Three checks:

1. **A failed call refused its request** — linked exactly when the call record carries the
   API request id (``request``): a persisted request with a must-refuse call is a
   violation, with a bypass call a bypass. Otherwise by elimination, per API server,
   webhook, resource and operation: each must-refuse call is matched, in time order, with
   the earliest unmatched refusal (a non-2xx answer other than 504, whose outcome is
   unknown) of that resource and operation by that server within ``request_timeout_s``
   after it; a call left without one is a violation when that server persisted such a
   request in that time and was not killed in between (the evidence names the first, the
   likely culprit). Bypass calls are then matched with the refusals left.
2. **A matching Fail webhook was called and passed** — for each persisted request, every
   webhook whose rules match it (scope, operation, group, version, resource and
   subresource), with ``failurePolicy: Fail`` and no namespace or object selector, and that
   stayed unchanged from ``config_lag_s`` before the request started (its client's
   ``api-op`` invoke, else its answer) to its answer, must have a call that allowed or
   patched it: by request id, or else a call of that webhook, kind and operation on that
   server within ``request_timeout_s`` before the answer, each call vouching for one
   request. This catches a server that skips an unreachable webhook without a call.
3. With ``strict``, bypasses are violations too.

Answers False with the first violation in time, unknown when no webhook was ever
configured or called, True otherwise. ``details`` counts the calls by outcome and lists the
bypasses and the failed calls that could not be resolved (no answer journaled: the request
timed out in the server, or the server died).

Limits: by elimination, a refusal of an unrelated request (refused by RBAC, say) can absorb
a failed call, and a passing call of a request that then failed can vouch for another (false
negatives); a request the server timed out after a failed call (``--request-timeout``: no
``api-request`` record) can leave that call beside an unrelated success of the same resource
(a false positive, only when no refusal follows). Webhooks with selectors are not checked
by 2; deletes and connects are not judged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.api.objects import KINDS
from chaoskube.checkers.replay import StoreReplay, request_invokes
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["check_admission", "rule_matches"]

Event = dict[str, Any]
Obj = dict[str, Any]

CONFIG_RESOURCES = {"validatingwebhookconfigurations": "validating", "mutatingwebhookconfigurations": "mutating"}
OPERATION_OF_VERB = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE"}
MUST_REFUSE = ("error", "denied")


def _resource_of(kind: str) -> str:
    info = KINDS.get(kind)
    return info.resource if info is not None else f"{kind.lower()}s"


def _persisted(request: Event) -> bool:
    return request.get("verb") in OPERATION_OF_VERB and 200 <= request.get("code", 0) < 300 and bool(request.get("resource_version"))


def _refused(request: Event) -> bool:
    code = request.get("code", 0)
    return code >= 400 and code != 504


@dataclass(slots=True)
class _Configs:
    """Each configuration's phase and each of its webhooks over time (the stored entry, or
    None while absent)."""

    phase: dict[str, str] = field(default_factory=dict)
    history: dict[tuple[str, str], list[tuple[float, Obj | None]]] = field(default_factory=dict)

    def record(self, t: float, resource: str, name: str, obj: Obj | None) -> None:
        self.phase[name] = CONFIG_RESOURCES[resource]
        hooks = {hook.get("name", ""): hook for hook in (obj or {}).get("webhooks") or ()}
        known = {webhook for (config, webhook) in self.history if config == name}
        for webhook in sorted(known | set(hooks)):
            self.history.setdefault((name, webhook), []).append((t, hooks.get(webhook)))

    def held(self, configuration: str, webhook: str, start_t: float, end_t: float) -> Obj | None:
        """The webhook's entry if it stayed the same throughout [start_t, end_t]; None
        otherwise (absent at some point, or changed)."""
        rows = self.history.get((configuration, webhook), [])
        before = [hook for t, hook in rows if t <= start_t]
        states = [before[-1] if before else None] + [hook for t, hook in rows if start_t < t <= end_t]
        first = states[0]
        return first if first is not None and all(state == first for state in states[1:]) else None

    def policy(self, configuration: str, webhook: str, start_t: float, end_t: float) -> str | None:
        """"Fail" or "Ignore" if the webhook stayed as it was throughout [start_t, end_t]."""
        hook = self.held(configuration, webhook, start_t, end_t)
        return None if hook is None else hook.get("failurePolicy") or "Fail"


@dataclass(slots=True)
class _Call:
    event: Event
    phase: str
    policy: str | None
    must_refuse: bool

    @property
    def t(self) -> float:
        return self.event["t"]

    def describe(self) -> str:
        e = self.event
        policy = f"failurePolicy {self.policy}" if self.policy else "failurePolicy unknown"
        return f"{self.phase} webhook {e.get('webhook')} ({policy}) answered {e.get('outcome')}"


def _calls(events: list[Event], config_lag_s: float) -> tuple[list[_Call], dict[int, Event], _Configs]:
    store = StoreReplay(CONFIG_RESOURCES)
    configs = _Configs()
    applies: dict[int, Event] = {}
    calls = []
    for event in events:
        if event.get("type") == "raft-apply" and event.get("revision") is not None:
            applies.setdefault(event["revision"], event)
        for change in store.apply(event):
            configs.record(change.t, change.resource, change.key, change.after)
        if event.get("type") != "webhook-call":
            continue
        name, webhook = event.get("configuration", ""), event.get("webhook", "")
        start = event["t"] - float(event.get("latency_s", 0.0))
        policy = configs.policy(name, webhook, start - config_lag_s, event["t"]) if name in configs.phase else None
        outcome = event.get("outcome", "")
        must = outcome in MUST_REFUSE or (outcome == "ignored-error" and policy == "Fail")
        calls.append(_Call(event, configs.phase.get(name, "unknown"), policy, must))
    return calls, applies, configs


def _store_summary(request: Event, applies: dict[int, Event]) -> dict[str, Any] | None:
    try:
        revision = int(request.get("resource_version", ""))
    except ValueError:
        return None
    apply = applies.get(revision)
    if apply is None:
        return None
    keys = [entry[1] for entry in apply.get("events") or () if entry[0] == "PUT"]
    return {"type": "store", "t": apply["t"], "revision": revision, "keys": keys}


@dataclass(slots=True)
class _Findings:
    violations: list[tuple[float, Verdict]] = field(default_factory=list)
    bypasses: list[dict[str, Any]] = field(default_factory=list)
    unresolved: list[dict[str, Any]] = field(default_factory=list)


def _object_name(request: Event) -> str:
    namespace, name = request.get("namespace", ""), request.get("name", "")
    return f"{request.get('resource', '')} {namespace + '/' if namespace else ''}{name}"


def _violation(call: _Call, request: Event, applies: dict[int, Event], how: str) -> tuple[float, Verdict]:
    store = _store_summary(request, applies)
    evidence = tuple(item for item in (call.event, request, store) if item is not None)
    reason = (
        f"{_object_name(request)} was persisted at t={request['t']:.3f} by {request.get('server')} although its "
        f"{call.describe()} at t={call.t:.3f}{how}: {call.event.get('reason', '')}"
    )
    return request["t"], Verdict(False, reason, evidence)


def _bypass(call: _Call, request: Event, how: str) -> dict[str, Any]:
    return {"call": call.event, "request": request, "object": _object_name(request), "linked": how}


def _exact(calls: list[_Call], requests: list[Event], applies: dict[int, Event], findings: _Findings) -> None:
    by_id = {(request.get("server"), request.get("id")): request for request in requests}
    for call in calls:
        request = by_id.get((call.event.get("server"), call.event.get("request")))
        if request is None:
            if call.must_refuse:
                findings.unresolved.append({"call": call.event, "why": "its request has no api-request record"})
            continue
        if not _persisted(request):
            continue
        if call.must_refuse:
            findings.violations.append(_violation(call, request, applies, ""))
        elif call.event.get("outcome") == "ignored-error":
            findings.bypasses.append(_bypass(call, request, "request id"))


def _killed(kills: dict[str, list[float]], server: str, start_t: float, end_t: float) -> bool:
    return any(start_t <= t <= end_t for t in kills.get(server, ()))


def _by_elimination(
    calls: list[_Call], requests: list[Event], kills: dict[str, list[float]], applies: dict[int, Event], request_timeout_s: float, findings: _Findings,
) -> None:
    pools: dict[tuple[str, str, str], list[Event]] = {}
    for request in requests:
        operation = OPERATION_OF_VERB.get(request.get("verb", ""))
        if operation is not None:
            pools.setdefault((request.get("server", ""), request.get("resource", ""), operation), []).append(request)
    groups: dict[tuple[str, str, str, str, str], list[_Call]] = {}
    for call in calls:
        e = call.event
        if e.get("operation") in ("CREATE", "UPDATE"):
            key = (e.get("server", ""), e.get("configuration", ""), e.get("webhook", ""), _resource_of(e.get("kind", "")), e.get("operation", ""))
            groups.setdefault(key, []).append(call)
    for (server, _, _, resource, operation), group in sorted(groups.items()):
        pool = pools.get((server, resource, operation), [])
        used: set[int] = set()

        def take_refusal(call: _Call) -> bool:
            for index, request in enumerate(pool):
                if index not in used and _refused(request) and call.t <= request["t"] <= call.t + request_timeout_s:
                    used.add(index)
                    return True
            return False

        def persisted_after(call: _Call) -> Event | None:
            return next((r for r in pool if _persisted(r) and call.t <= r["t"] <= call.t + request_timeout_s), None)

        for call in sorted((c for c in group if c.must_refuse), key=lambda c: c.t):
            if take_refusal(call):
                continue
            suspect = persisted_after(call)
            if suspect is None or _killed(kills, server, call.t, suspect["t"]):
                findings.unresolved.append({"call": call.event, "why": "no refusal and no persisted request of its kind followed"})
                continue
            findings.violations.append(_violation(call, suspect, applies, " (linked by elimination: no refusal followed it)"))
        for call in sorted((c for c in group if not c.must_refuse and c.event.get("outcome") == "ignored-error"), key=lambda c: c.t):
            if take_refusal(call):
                continue
            suspect = persisted_after(call)
            if suspect is not None:
                findings.bypasses.append(_bypass(call, suspect, "elimination"))


# =========================================================================== unvouched requests
_KIND_OF_RESOURCE = {info.resource: info for info in KINDS.values()}
PASSING = ("allowed", "patched")


def rule_matches(rule: Obj, *, operation: str, group: str, version: str, resource: str, subresource: str, namespace: str) -> bool:
    """``predicates/rules/rules.go`` ``Matcher.Matches``: scope, operation, group, version and
    resource ("*" and "r/*", "*/s", "*/*" for subresources)."""
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and not (resource == "namespaces" or not namespace):
        return False
    if scope == "Namespaced" and (resource == "namespaces" or not namespace):
        return False
    if not any(op in ("*", operation) for op in rule.get("operations") or ()):
        return False
    if not any(g in ("*", group) for g in rule.get("apiGroups") or ()):
        return False
    if not any(v in ("*", version) for v in rule.get("apiVersions") or ()):
        return False
    for entry in rule.get("resources") or ():
        want, _, sub = entry.partition("/")
        if want in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def _selects_everything(selector: Obj | None) -> bool:
    return not selector or (not selector.get("matchLabels") and not selector.get("matchExpressions"))


def _matching_fail_hooks(request: Event, configs: _Configs, start_t: float) -> list[tuple[str, str, Obj]]:
    """The Fail webhooks whose rules match ``request`` and that stayed unchanged from
    ``start_t`` to the request's answer; webhooks with a namespace or object selector are
    left out (their match depends on labels the journal may not hold)."""
    info = _KIND_OF_RESOURCE.get(request.get("resource", ""))
    if info is None or request.get("resource") in CONFIG_RESOURCES:
        return []  # unknown kinds; webhook configurations never go to webhooks (IsExemptAdmissionConfigurationResource)
    group, _, version = info.api_version.rpartition("/")
    found = []
    for (configuration, webhook) in sorted(configs.history):
        hook = configs.held(configuration, webhook, start_t, request["t"])
        if hook is None or (hook.get("failurePolicy") or "Fail") != "Fail":
            continue
        if not (_selects_everything(hook.get("namespaceSelector")) and _selects_everything(hook.get("objectSelector"))):
            continue
        attributes = {"operation": OPERATION_OF_VERB[request["verb"]], "group": group, "version": version, "resource": request.get("resource", ""),
                      "subresource": request.get("subresource", ""), "namespace": request.get("namespace", "")}
        if any(rule_matches(rule, **attributes) for rule in hook.get("rules") or ()):
            found.append((configuration, webhook, hook))
    return found


def _unvouched(
    calls: list[_Call], requests: list[Event], configs: _Configs, starts: dict[str, float], config_lag_s: float, request_timeout_s: float,
    applies: dict[int, Event], findings: _Findings,
) -> None:
    """A persisted request that a Fail webhook's rules matched must have had a passing call
    of that webhook: by request id when the calls carry it, otherwise a call of that
    webhook, kind and operation on the same server in the request's time, each call
    vouching for one request."""
    passing: dict[tuple[str, str, str, str, str], list[_Call]] = {}
    by_request: dict[tuple[str, str, str, str], _Call] = {}
    for call in calls:
        e = call.event
        if e.get("outcome") not in PASSING:
            continue
        if e.get("request"):
            by_request[(e.get("server", ""), e["request"], e.get("configuration", ""), e.get("webhook", ""))] = call
        else:
            key = (e.get("server", ""), e.get("configuration", ""), e.get("webhook", ""), _resource_of(e.get("kind", "")), e.get("operation", ""))
            passing.setdefault(key, []).append(call)
    used: set[int] = set()
    for request in sorted((r for r in requests if _persisted(r)), key=lambda r: r["t"]):
        start = starts.get(request.get("id", ""), request["t"])
        for configuration, webhook, hook in _matching_fail_hooks(request, configs, start - config_lag_s):
            server = request.get("server", "")
            if (server, request.get("id", ""), configuration, webhook) in by_request:
                continue
            pool = passing.get((server, configuration, webhook, request.get("resource", ""), OPERATION_OF_VERB[request["verb"]]), [])
            earliest = start if request.get("id", "") in starts else request["t"] - request_timeout_s
            vouch = next((c for c in pool if id(c) not in used and earliest <= c.t <= request["t"]), None)
            if vouch is not None:
                used.add(id(vouch))
                continue
            failed = [c.event for c in calls if c.event.get("webhook") == webhook and c.event.get("server") == server and earliest <= c.t <= request["t"]
                      and c.event.get("outcome") not in PASSING][-1:]
            store = _store_summary(request, applies)
            reason = (
                f"{_object_name(request)} was persisted at t={request['t']:.3f} by {server} without a passing call of webhook {webhook} "
                f"(failurePolicy Fail, its rules match the request)" + (f"; its last call answered {failed[0].get('outcome')}" if failed else "")
            )
            evidence = tuple(item for item in (request, {"configuration": configuration, "webhook": hook}, *failed, store) if item is not None)
            findings.violations.append((request["t"], Verdict(False, reason, evidence)))


def check_admission(events: Iterable[Event], *, strict: bool = False, config_lag_s: float = 1.0, request_timeout_s: float = 60.0) -> Verdict:
    """Judge admission on a cluster's journal (module docstring). ``request_timeout_s`` is
    kube-apiserver's ``--request-timeout`` (default 1m0s, as
    :class:`chaoskube.apiserver.server.ApiServerConfig`)."""
    events = list(events)
    calls, applies, configs = _calls(events, config_lag_s)
    if not calls and not configs.history:
        return nothing_to_judge("no admission webhook was configured or called in the journal: nothing to judge")
    requests = [event for event in events if event.get("type") == "api-request"]
    starts, _ = request_invokes(events)
    kills: dict[str, list[float]] = {}
    for event in events:
        if event.get("type") == "process" and event.get("event") in ("kill", "exit"):
            kills.setdefault(event.get("process", ""), []).append(event["t"])
    findings = _Findings()
    _exact([call for call in calls if call.event.get("request")], requests, applies, findings)
    _by_elimination([call for call in calls if not call.event.get("request")], requests, kills, applies, request_timeout_s, findings)
    _unvouched(calls, requests, configs, starts, config_lag_s, request_timeout_s, applies, findings)
    if strict:
        for bypass in findings.bypasses:
            request, call = bypass["request"], bypass["call"]
            reason = (
                f"{bypass['object']} was persisted at t={request['t']:.3f} by {request.get('server')} without validation: "
                f"webhook {call.get('webhook')} failed open (failurePolicy Ignore) at t={call['t']:.3f}: {call.get('reason', '')}"
            )
            findings.violations.append((request["t"], Verdict(False, reason, (call, request))))
    details = {
        "calls": len(calls),
        "outcomes": _count(call.event.get("outcome", "") for call in calls),
        "bypasses": findings.bypasses,
        "unresolved": findings.unresolved,
    }
    if findings.violations:
        findings.violations.sort(key=lambda row: row[0])
        first = findings.violations[0][1]
        return Verdict(False, first.reason, first.evidence, details)
    must = sum(1 for call in calls if call.must_refuse)
    return Verdict(
        True,
        f"{len(calls)} webhook call(s), {must} that had to refuse: nothing they could not vouch for was persisted; "
        f"{len(findings.bypasses)} bypass(es) under failurePolicy Ignore, {len(findings.unresolved)} unresolved",
        (),
        details,
    )


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))

"""Admission webhook timing, judged from the journal: every call is abandoned within its
``timeoutSeconds``, and a call that ran out of time is treated as its ``failurePolicy``
says.

The Kubernetes behaviour checked ("Dynamic Admission Control", Timeouts and Failure
policy, https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#timeouts;
``staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go`` and
``pkg/util/webhook/client.go``, which put the webhook's ``timeoutSeconds`` on the call's
context): "the timeout value for this webhook ... If the webhook call times out, the
request is handled according to the webhook's failure policy"; failurePolicy ``Fail``
rejects the request, ``Ignore`` lets it through.

Inputs: the API servers' ``webhook-call`` records (``latency_s`` on the server's clock,
``timeout_s``, ``policy``, ``outcome`` allowed | denied | patched | error | ignored-error,
``request``: the API request id; :mod:`chaoskube.apiserver.webhooks`), their ``api-request``
records (the answer to each request: ``id``, ``code``, ``message`` of a 500), and the
runtime's ``process`` (pause, resume, kill) and ``clock`` (jumps) events.

Three rules:

1. **Abandoned in time**: a call's latency is at most its ``timeoutSeconds`` plus
   :data:`NETWORK_SLACK_S` (the last message in flight; the server measures the call on its
   own clock), unless the calling server was paused or its clock jumped during the call
   (a paused server's timers fire late, as a stopped process's do).
2. **Fail never admits late**: a ``Fail`` call that ran past its ``timeoutSeconds`` is
   a failed call: it must not allow or patch the request, and the API request it belongs
   to must not be answered 2xx.
3. **Ignore never refuses**: an ``Ignore`` call that failed is journaled ``ignored-error``
   (never ``error``), and the request it belongs to is not refused for it (a 500 naming
   that webhook: ``failed calling webhook "<name>"``).

Answers False with the first violation in time (evidence: the call and, for 2 and 3, the
answer), unknown when no webhook was called, True otherwise with counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["NETWORK_SLACK_S", "check_admission_timing"]

Event = dict[str, Any]

#: The slack over ``timeoutSeconds``: the reply in flight when the deadline passes, and
#: timers of one virtual instant. A second is far more than the simulated network takes.
NETWORK_SLACK_S = 1.0
_EPSILON_S = 1e-6


def check_admission_timing(events: Sequence[Event], *, slack_s: float = NETWORK_SLACK_S) -> Verdict:
    """Judge every webhook call (module docstring)."""
    answers: dict[str, Event] = {}
    disturbed: dict[str, list[float]] = {}
    calls: list[Event] = []
    for event in events:
        kind = event["type"]
        if kind == "api-request" and event.get("id"):
            answers[event["id"]] = event
        elif kind == "webhook-call":
            calls.append(event)
        elif kind == "process" and event.get("event") in ("pause", "resume", "kill", "start", "restart"):
            disturbed.setdefault(event["process"], []).append(event["t"])
        elif kind == "clock":
            disturbed.setdefault(event["process"], []).append(event["t"])
    if not calls:
        return nothing_to_judge("no admission webhook was called: nothing to judge")
    counts = {"calls": len(calls), "timed_out": 0, "fail_policy": 0, "ignore_policy": 0}
    for call in calls:
        policy, timeout_s, latency_s = call.get("policy", "Fail"), call.get("timeout_s"), float(call.get("latency_s", 0.0))
        counts["fail_policy" if policy == "Fail" else "ignore_policy"] += 1
        if timeout_s is None:
            continue
        started = call["t"] - latency_s
        server = call.get("server", "")
        late = latency_s > float(timeout_s) + _EPSILON_S
        counts["timed_out"] += latency_s >= float(timeout_s) - _EPSILON_S
        answer = answers.get(call.get("request", ""))
        if latency_s > float(timeout_s) + slack_s and not _disturbed(disturbed.get(server, ()), started, call["t"]):
            return Verdict(False, f"{server} called webhook {call['webhook']} for {latency_s:.3f} s, past its timeoutSeconds {timeout_s} (+{slack_s:g} s slack)", (call,), counts)
        if policy == "Fail" and late:
            if call.get("outcome") in ("allowed", "patched"):
                return Verdict(False, f"{server} took the answer of Fail-policy webhook {call['webhook']} after {latency_s:.3f} s, past its timeoutSeconds {timeout_s}: a timed-out call admitted the request", (call,), counts)
            if answer is not None and 200 <= answer.get("code", 0) < 300:
                return Verdict(False, f"request {answer['id']} was admitted ({answer['code']}) although Fail-policy webhook {call['webhook']} ran past its timeoutSeconds {timeout_s}", (call, answer), counts)
        if policy == "Ignore":
            if call.get("outcome") == "error":
                return Verdict(False, f"Ignore-policy webhook {call['webhook']} failed and {server} refused the request for it (outcome error, not ignored-error)", (call,) + ((answer,) if answer else ()), counts)
            if call.get("outcome") == "ignored-error" and answer is not None and answer.get("code") == 500 and f'failed calling webhook "{call["webhook"]}"' in answer.get("message", ""):
                return Verdict(False, f"request {answer['id']} was refused for Ignore-policy webhook {call['webhook']}'s failure", (call, answer), counts)
    return Verdict(
        True,
        f"{counts['calls']} webhook call(s) ({counts['fail_policy']} Fail, {counts['ignore_policy']} Ignore), each abandoned within timeoutSeconds + {slack_s:g} s; "
        f"{counts['timed_out']} timed out, none admitted under Fail nor refused under Ignore",
        (), counts,
    )


def _disturbed(times: Sequence[float], start: float, end: float) -> bool:
    return any(start - _EPSILON_S <= t <= end + _EPSILON_S for t in times)

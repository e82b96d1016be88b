"""Service availability, as a user of each Service saw it: failed requests and outages.

Input: the ``traffic`` records of :class:`chaoskube.node.proxy.TrafficProbe`, ``{"type":
"traffic", "t", "node", "service", "port", "outcome": "ok" | "no-endpoints" | "refused" |
"timeout", "latency_s", "endpoint"}``: one per request sent through a node's kube-proxy
rules, recorded when it ended (``t``; it started at ``t - latency_s``). Any outcome but
``ok`` is a failure: no ready endpoint in the rules ("no-endpoints"; kube-proxy then
rejects the connection, as its REJECT rule for a Service without endpoints does), a
connection refused by a dead or absent pod, or no answer in time.

Figures, per Service (``namespace/name``, all ports and probing nodes together):

- the fraction of failed requests;
- the longest outage: a run of consecutive failed requests, in the order they ended, lasts
  from the start of its first failure to the start of the first successful request after
  it (from then on the Service worked again), or to the end of its last failure when no
  success follows (the outage is then ``ongoing`` at the end of the journal). A lone
  failure with no latency is an outage of 0 s: one observation, no duration.

``check_service_availability`` answers False when a Service exceeds ``max_failed_fraction``
or ``max_outage_s`` (a longest outage over the bound first, then the fraction; Services in
name order), unknown when there is no traffic record (in ``between``, a (from, to) window
of record times, when given), and True otherwise; the reason always carries the figures.
Evidence: the first and last failures of the outage and the success that ended it, or the
first and last failures for a fraction over its bound.

Non-guarantees: the figures are only as dense as the probes (an outage shorter than the
probe interval can fall between two requests), and requests from several nodes interleave:
one node's success ends another node's run of failures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.verdict import Verdict

__all__ = ["ServiceFigures", "check_service_availability", "service_figures"]

Event = dict[str, Any]


@dataclass(slots=True)
class ServiceFigures:
    service: str
    requests: int = 0
    failed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    outages: int = 0
    longest_outage_s: float = 0.0
    outage_evidence: tuple[Event, ...] = ()
    ongoing: bool = False
    first_failure: Event | None = None
    last_failure: Event | None = None

    @property
    def failed_fraction(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def text(self) -> str:
        outage = f"longest outage {self.longest_outage_s:.2f} s"
        if self.outage_evidence:
            outage += f" from t={_start(self.outage_evidence[0]):.3f}" + (" (ongoing)" if self.ongoing else "")
        return f"{self.service}: {self.failed}/{self.requests} failed ({100 * self.failed_fraction:.1f}%), {outage}"

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "failed": self.failed, "failed_fraction": self.failed_fraction,
            "outcomes": dict(sorted(self.outcomes.items())), "outages": self.outages, "longest_outage_s": self.longest_outage_s,
            "outage_from": _start(self.outage_evidence[0]) if self.outage_evidence else None, "ongoing": self.ongoing,
        }


def _start(record: Event) -> float:
    return record["t"] - float(record.get("latency_s", 0.0))


def service_figures(events: Iterable[Event], between: tuple[float, float] | None = None) -> dict[str, ServiceFigures]:
    """The figures of every Service that has traffic records (in ``between``), by name."""
    records: dict[str, list[Event]] = {}
    for event in events:
        if event.get("type") != "traffic":
            continue
        if between is not None and not between[0] <= event["t"] <= between[1]:
            continue
        records.setdefault(event["service"], []).append(event)
    return {service: _figures(service, rows) for service, rows in sorted(records.items())}


def _figures(service: str, rows: list[Event]) -> ServiceFigures:
    rows = sorted(rows, key=lambda row: row["t"])  # stable: journal order breaks ties
    figures = ServiceFigures(service)
    run: list[Event] = []

    def close(recovery: Event | None) -> None:
        if not run:
            return
        figures.outages += 1
        end = max(_start(recovery), _start(run[0])) if recovery is not None else run[-1]["t"]
        length = end - _start(run[0])
        if length > figures.longest_outage_s or figures.outages == 1:
            figures.longest_outage_s = length
            figures.outage_evidence = _unique((run[0], run[-1], recovery) if recovery is not None else (run[0], run[-1]))
            figures.ongoing = recovery is None
        run.clear()

    for row in rows:
        outcome = row.get("outcome", "")
        figures.requests += 1
        figures.outcomes[outcome] = figures.outcomes.get(outcome, 0) + 1
        if outcome == "ok":
            close(row)
            continue
        figures.failed += 1
        figures.first_failure = figures.first_failure or row
        figures.last_failure = row
        run.append(row)
    close(None)
    return figures


def _unique(records: tuple[Event, ...]) -> tuple[Event, ...]:
    seen: list[Event] = []
    for record in records:
        if not any(record is other for other in seen):
            seen.append(record)
    return tuple(seen)


def check_service_availability(
    events: Iterable[Event],
    *,
    max_failed_fraction: float | None = None,
    max_outage_s: float | None = None,
    between: tuple[float, float] | None = None,
) -> Verdict:
    """Judge what the traffic probes saw against the caller's bounds (module docstring)."""
    assert max_failed_fraction is None or 0.0 <= max_failed_fraction <= 1.0, max_failed_fraction
    assert max_outage_s is None or max_outage_s >= 0.0, max_outage_s
    figures = service_figures(events, between)
    if not figures:
        window = f" between t={between[0]} and t={between[1]}" if between is not None else ""
        return Verdict(None, f"no traffic record{window}: no Service was probed")
    details = {service: row.to_json() for service, row in figures.items()}
    summary = "; ".join(row.text() for row in figures.values())
    for service, row in figures.items():
        if max_outage_s is not None and row.longest_outage_s > max_outage_s:
            return Verdict(False, f"outage over {max_outage_s} s: {summary}", row.outage_evidence, details)
        if max_failed_fraction is not None and row.failed_fraction > max_failed_fraction:
            assert row.first_failure is not None and row.last_failure is not None
            evidence = _unique((row.first_failure, row.last_failure))
            return Verdict(False, f"failed fraction over {100 * max_failed_fraction:.1f}%: {summary}", evidence, details)
    return Verdict(True, summary, (), details)

"""Leader election, judged from the journal: who acted as leader of each lease, and when.

Inputs (journaled by :mod:`chaoskube.client.leaderelection` and the runtime):

- ``{"type": "leader", "event": "candidate" | "start" | "stop", "lease", "identity",
  "process"}`` — an elector began to campaign, started acting as leader, stopped;
- ``{"type": "process", "event": "kill" | "exit" | "pause" | "resume" | "start" |
  "restart", "process"}`` — the runtime's lifecycle events;
- ``{"type": "partition", "grudge"}`` — the network's grudge (for candidate health).

How a process's acting interval is built:

- it opens at ``start`` and closes at ``stop``;
- a ``kill`` or ``exit`` closes it at that instant: a dead process does nothing;
- a **pause does not close it**. From the paused process's own point of view nothing
  happened: it still believes it leads, and whatever it started before the pause (a write
  in flight, a decision about to be sent) can take effect after it. That is exactly the
  hazard client-go documents ("does not guarantee that only one client is acting as a
  leader"), so the pause counts as acting. The overlap *while both were running* is
  reported separately (``active_overlap_s``) for a reader who wants the narrower figure;
- an interval still open at the end of the journal closes at its last event.

Violations:

1. **Overlap** — two intervals of different holders on one lease intersect for longer
   than ``overlap_tolerance_s`` (default 0: touching at one instant is not an overlap).
   Evidence: the two ``start`` events and the event that ended the overlap.
2. **Gap** — with ``max_gap_s`` set: a stretch longer than it during which no process acted
   as leader while at least one candidate was healthy (running, not paused, and — when
   ``lease_server`` or ``lease_servers`` are given — able to reach one of them: a server
   running, not paused, and not cut from the candidate in either direction by the grudge;
   a Kubernetes lease lives behind the API servers, so with every one of them down no
   candidate can lead, and a stretch with no leader then is no gap) and, when
   ``store_members`` are given (the etcd members behind the API servers), while a majority
   of them ran (killed or paused members do not count: without a quorum no lease is written).
   Evidence: the last event before the gap and the event that ended it.

``check_leader_election`` answers False with the first violation in time (overlaps before
gaps at the same instant), True when there is none, and unknown when no process ever led.
``details`` carries every interval, overlap and gap, with lengths in seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskube.checkers.replay import failed_calls
from chaoskube.checkers.verdict import Verdict

Event = dict[str, Any]


@dataclass(slots=True)
class Interval:
    lease: str
    process: str
    identity: str
    start: float
    end: float | None = None
    start_event: Event | None = None
    end_event: Event | None = None
    paused: list[tuple[float, float | None]] = field(default_factory=list)

    @property
    def length(self) -> float:
        assert self.end is not None
        return self.end - self.start

    def running_pieces(self) -> list[tuple[float, float]]:
        """The parts of the interval in which the process was not paused."""
        assert self.end is not None
        pieces: list[tuple[float, float]] = []
        cursor = self.start
        for begin, finish in self.paused:
            finish = self.end if finish is None else finish
            if begin > cursor:
                pieces.append((cursor, min(begin, self.end)))
            cursor = max(cursor, finish)
        if cursor < self.end:
            pieces.append((cursor, self.end))
        return pieces

    def to_json(self) -> dict[str, Any]:
        return {
            "lease": self.lease,
            "process": self.process,
            "identity": self.identity,
            "start": self.start,
            "end": self.end,
            "paused": [list(piece) for piece in self.paused],
        }


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total = 0.0
    for a_start, a_end in a:
        for b_start, b_end in b:
            total += max(0.0, min(a_end, b_end) - max(a_start, b_start))
    return total


def leader_intervals(events: Iterable[Event]) -> tuple[list[Interval], dict[str, set[str]], float]:
    """Every acting interval (closed), the candidates of each lease (process names), and
    the time of the last event."""
    open_by_process: dict[str, list[Interval]] = {}
    closed: list[Interval] = []
    candidates: dict[str, set[str]] = {}
    last_t = 0.0
    for event in events:
        last_t = max(last_t, event["t"])
        kind = event["type"]
        if kind == "leader":
            process = event.get("process") or event["identity"]
            lease = event["lease"]
            candidates.setdefault(lease, set()).add(process)
            if event["event"] == "start":
                intervals = open_by_process.setdefault(process, [])
                if not any((interval.lease, interval.identity) == (lease, event["identity"]) for interval in intervals):
                    intervals.append(Interval(lease, process, event["identity"], event["t"], start_event=event))
            elif event["event"] == "stop":
                for interval in list(open_by_process.get(process, [])):
                    if (interval.lease, interval.identity) == (lease, event["identity"]):
                        interval.end, interval.end_event = event["t"], event
                        open_by_process[process].remove(interval)
                        closed.append(interval)
        elif kind == "process":
            process = event["process"]
            what = event["event"]
            intervals = open_by_process.get(process, [])
            if what in ("kill", "exit"):
                for interval in intervals:
                    if interval.paused and interval.paused[-1][1] is None:
                        interval.paused[-1] = (interval.paused[-1][0], event["t"])
                    interval.end, interval.end_event = event["t"], event
                    closed.append(interval)
                open_by_process[process] = []
            elif what == "pause":
                for interval in intervals:
                    interval.paused.append((event["t"], None))
            elif what == "resume":
                for interval in intervals:
                    if interval.paused and interval.paused[-1][1] is None:
                        interval.paused[-1] = (interval.paused[-1][0], event["t"])
    for intervals in open_by_process.values():
        for interval in intervals:
            interval.end = last_t
            closed.append(interval)
    closed.sort(key=lambda interval: (interval.lease, interval.start, interval.process))
    return closed, candidates, last_t


def overlaps(intervals: list[Interval], tolerance_s: float = 0.0) -> list[dict[str, Any]]:
    """Pairs of intervals of different holders (process, identity) on one lease that intersect."""
    found = []
    for index, first in enumerate(intervals):
        for second in intervals[index + 1 :]:
            if second.lease != first.lease or (second.process, second.identity) == (first.process, first.identity):
                continue
            assert first.end is not None and second.end is not None
            length = min(first.end, second.end) - max(first.start, second.start)
            if length <= tolerance_s:
                continue
            ends_first = first if first.end <= second.end else second
            found.append(
                {
                    "lease": first.lease,
                    "processes": [first.process, second.process],
                    "from": max(first.start, second.start),
                    "to": min(first.end, second.end),
                    "overlap_s": length,
                    "active_overlap_s": _overlap(first.running_pieces(), second.running_pieces()),
                    "evidence": tuple(e for e in (first.start_event, second.start_event, ends_first.end_event) if e is not None),
                }
            )
    found.sort(key=lambda overlap: (overlap["from"], overlap["lease"]))
    return found


def _health_timeline(events: list[Event], candidates: set[str], lease_servers: Sequence[str], store_members: Sequence[str] = ()) -> list[tuple[float, bool]]:
    """(time, some candidate healthy from then on), one row per event that may change it."""
    running: dict[str, bool] = {}
    grudge: dict[str, set[str]] = {}
    rows: list[tuple[float, bool]] = []

    def healthy(process: str) -> bool:
        if not running.get(process):
            return False
        if store_members and 2 * sum(1 for member in store_members if running.get(member, True)) <= len(store_members):
            return False  # the store behind the lease has lost its quorum: no one can write it
        if not lease_servers:
            return True
        return any(running.get(server, True) and process not in grudge.get(server, ()) and server not in grudge.get(process, ()) for server in lease_servers)

    for event in events:
        if event["type"] == "process":
            running[event["process"]] = event["event"] in ("start", "restart", "resume")
        elif event["type"] == "partition":
            grudge = {dst: set(sources) for dst, sources in event["grudge"].items()}
        elif event["type"] == "leader" and event["event"] == "candidate":
            running.setdefault(event.get("process") or event["identity"], True)
        else:
            continue
        rows.append((event["t"], any(healthy(process) for process in candidates)))
    return rows


def gaps(
    events: list[Event],
    intervals: list[Interval],
    candidates: dict[str, set[str]],
    max_gap_s: float,
    *,
    lease_servers: Sequence[str] = (),
    store_members: Sequence[str] = (),
    end_t: float,
) -> list[dict[str, Any]]:
    """Stretches longer than ``max_gap_s`` with no leader while a candidate was healthy."""
    found = []
    failed = _failed_requests(events)
    for lease in sorted(candidates):
        health = _health_timeline(events, candidates[lease], lease_servers, store_members)
        stuck = sorted(span for process in candidates[lease] for span in failed.get(process, ()))
        led = sorted((i.start, i.end) for i in intervals if i.lease == lease)
        # times at which "no leader and some candidate healthy" may change
        cuts = sorted({t for t, _ in health} | {t for piece in led for t in piece} | {end_t})
        stretch_start: float | None = None
        healthy_now, row = False, 0
        for index, t in enumerate(cuts):
            nxt = cuts[index + 1] if index + 1 < len(cuts) else None
            while row < len(health) and health[row][0] <= t:
                healthy_now = health[row][1]
                row += 1
            leaderless = not any(start <= t < end for start, end in led if end is not None)
            bad = healthy_now and leaderless and nxt is not None
            if bad and stretch_start is None:
                stretch_start = t
            if not bad and stretch_start is not None:
                # a candidate's request the control plane did not answer (a timeout, an
                # error) is time it tried and could not: not counted against the bound
                waited = _covered(stuck, stretch_start, t)
                if t - stretch_start - waited > max_gap_s:
                    found.append({"lease": lease, "from": stretch_start, "to": t, "gap_s": t - stretch_start, "requests_failed_s": waited})
                stretch_start = None
    return found


def _failed_requests(events: list[Event]) -> dict[str, list[tuple[float, float]]]:
    """Process -> (sent, ended) of each leader-election request of its that ended without
    an answer or with an error (``api-read`` and ``api-op`` records of its
    ``<process>/leader-election`` client)."""
    def elector(event: Event) -> bool:
        return str(event.get("client", "")).endswith("/leader-election")

    failed: dict[str, list[tuple[float, float]]] = {}
    for event in events:
        if event["type"] == "api-read" and elector(event) and event.get("phase") != "ok" and event.get("call") is not None:
            failed.setdefault(str(event["client"]).rpartition("/")[0], []).append((float(event["call"]), event["t"]))
    for started, ended in failed_calls(events, elector):
        if ended.get("code") != 409:  # a conflict is an answer
            failed.setdefault(str(ended["client"]).rpartition("/")[0], []).append((started, ended["t"]))
    return failed


def _covered(spans: list[tuple[float, float]], start: float, end: float) -> float:
    """How much of [start, end] the (sorted) spans cover."""
    covered, reach = 0.0, start
    for low, high in spans:
        low, high = max(low, reach), min(high, end)
        if high > low:
            covered += high - low
            reach = high
    return covered


def check_leader_election(
    events: Iterable[Event],
    *,
    max_gap_s: float | None = None,
    lease_server: str | None = None,
    overlap_tolerance_s: float = 0.0,
    lease_servers: Sequence[str] = (),
    store_members: Sequence[str] = (),
) -> Verdict:
    events = list(events)
    lease_servers = [*lease_servers, *([lease_server] if lease_server is not None else [])]
    intervals, candidates, end_t = leader_intervals(events)
    if not intervals:
        return Verdict(None, "no process ever acted as leader", details={"candidates": {k: sorted(v) for k, v in candidates.items()}})
    found_overlaps = overlaps(intervals, overlap_tolerance_s)
    found_gaps = gaps(events, intervals, candidates, max_gap_s, lease_servers=lease_servers, store_members=store_members, end_t=end_t) if max_gap_s is not None else []
    details = {
        "intervals": [interval.to_json() for interval in intervals],
        "overlaps": [{key: value for key, value in overlap.items() if key != "evidence"} for overlap in found_overlaps],
        "gaps": found_gaps,
        "max_overlap_s": max((overlap["overlap_s"] for overlap in found_overlaps), default=0.0),
        "max_active_overlap_s": max((overlap["active_overlap_s"] for overlap in found_overlaps), default=0.0),
    }
    violations: list[tuple[float, int, Verdict]] = []
    if found_overlaps:
        first = found_overlaps[0]
        a, b = first["processes"]
        violations.append(
            (
                first["from"],
                0,
                Verdict(
                    False,
                    f"lease {first['lease']}: {a} and {b} both acted as leader for {first['overlap_s']:.3f} s "
                    f"from t={first['from']:.3f} ({first['active_overlap_s']:.3f} s while both were running)",
                    first["evidence"],
                    details,
                ),
            )
        )
    if found_gaps:
        first = found_gaps[0]
        evidence = tuple(
            e
            for e in (
                max((e for e in events if e["t"] <= first["from"] and e["type"] in ("leader", "process", "partition")), key=lambda e: e["t"], default=None),
                next((e for e in events if e["t"] >= first["to"] and e["type"] in ("leader", "process", "partition")), None),
            )
            if e is not None
        )
        violations.append(
            (
                first["from"],
                1,
                Verdict(
                    False,
                    f"lease {first['lease']}: no leader for {first['gap_s']:.3f} s from t={first['from']:.3f} "
                    f"while a candidate was healthy (bound {max_gap_s} s)",
                    evidence,
                    details,
                ),
            )
        )
    if violations:
        violations.sort(key=lambda row: (row[0], row[1]))
        return violations[0][2]
    leases = sorted({interval.lease for interval in intervals})
    bound = f", no gap over {max_gap_s:g} s" if max_gap_s is not None else ""
    return Verdict(True, f"{len(intervals)} leadership intervals on {len(leases)} lease(s), never two at once{bound}", details=details)

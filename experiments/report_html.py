"""``report.html``: one run on one page — the verdicts, their evidence, and a timeline.

Contract:

- :func:`render_html` is a pure function of a run's result and its journal events (the
  bulky network events are not needed and are ignored). The same run renders the same
  bytes, except the one line that states the wall-clock time the run took.
- The page is self-contained: inline CSS and an inline SVG drawn here, in Python. No
  script, no web font, no image, no stylesheet link: it opens from a ``file://`` URL with
  the network off, and nothing on it can load anything.
- Every string that comes from a run (names, reasons, evidence, options, the command) is
  escaped with :func:`html.escape`, and the characters XML 1.0 forbids are replaced, so the
  inline SVG also parses as XML on its own.
- Stable hooks for tests and browsers: ``table#verdicts`` with one
  ``tr.verdict[data-checker][data-verdict]`` per checker (verdict ``pass``/``fail``/
  ``unknown``); ``section.evidence[data-checker]`` per violation; ``svg#timeline`` with
  ``g.lane[data-lane]`` per lane and ``g.fault[data-kind][data-target]`` per fault band;
  ``code#replay`` (the exact replay command); ``#fingerprint`` (the journal sha256).

The timeline (x: simulated seconds from the start of the run; real seconds for a
real-process run) draws what the journal holds, each lane only when its events exist:

- fault bands: from each ``{"type": "fault", "event": "apply", "id"}`` to the ``heal``
  with the same id, or to the end of the run (``faults/schedule.py`` journals both),
  labelled with the fault kind and the processes it hit; the hover title names the target
  selector and the parameters;
- ``etcd-leader``: who leads, by member and term, from ``raft-role`` events
  (``chaoskube/etcd/server.py``: ``member``, ``role``, ``term``). A leadership ends when the
  member records another role or its process is killed or exits; while the process is
  paused it still believes it leads (as the leader-election checker counts it), and that
  stretch is drawn hatched (class ``paused``);
- ``etcd-leader`` for real-process runs: from the status polls
  (``{"type": "leader", "member", "leader", "term"}``, ``experiments/real/etcd.py``):
  each (leader, term) spans its first to its last poll that named it;
- ``lease:<name>``, one lane per Lease: ``{"type": "leader", "event": "start"|"stop",
  "lease", "identity", "process"}`` (``chaoskube/client/leaderelection.py``, client-go's
  ``leaderelection.go``); a kill or exit of the process ends its term, a pause does not;
- ``availability``: per second bucket, the fraction of client operations that completed
  ok among those that completed (``client-op`` of ``chaoskube/etcd/client.py`` and
  ``api-op`` of ``chaoskube/client/client.py``: phase ok / fail / info; invokes are not
  counted). A bucket in which nothing completed is a gap in the line, not a zero;
- ``service:<name>`` (or ``service``): the same fraction for ``traffic`` events — the
  kube-proxy traffic probe, which does not exist yet; its outcome is read from ``phase``
  (ok/fail/info), else a boolean ``ok``, else ``status``/``outcome`` (``ok`` is ok,
  ``info``/``timeout`` unknown, anything else failed);
- ``probes``: the same fraction for the mesh system's ``probe`` events (``status``);
- ``ready-pods``: the number of pods whose Ready condition is True in the store (the
  ``raft-apply`` events replayed: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-conditions);
  without store history (a journal of another system), from ``pod-phase`` events: ready
  when the event says ``ready: true``, or, without ``ready``, when ``phase`` is ``Running``.

Bounds: buckets are 1 s wide up to ``MAX_BUCKETS`` seconds of run and wider beyond (the
lane says so); an evidence table shows at most ``MAX_EVIDENCE_ROWS`` rows and a cell at most
``MAX_CELL_CHARS`` characters; fault labels use at most ``MAX_LABEL_ROWS`` rows (later ones
overlap). Non-guarantees: labels inside narrow segments are left out (the hover title has
them); the page is not meant to be diffed across chaoskube versions.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import orjson

from chaoskube.experiments.result import write_atomic

if TYPE_CHECKING:
    from chaoskube.experiments.result import RunResult

MAX_BUCKETS = 1000
MAX_EVIDENCE_ROWS = 200
MAX_CELL_CHARS = 300
MAX_LABEL_ROWS = 4

# The journal event types the page reads; everything else (notably the network's
# send/deliver/drop, most of a journal's bytes) is skipped unparsed.
TIMELINE_TYPES = frozenset({
    "raft-role", "leader", "fault", "client-op", "api-op", "traffic", "probe", "pod-phase", "process", "phase", "world",
    # what the report's answers read (experiments/answers.py): the store, evictions, refused pods
    "raft-apply", "eviction", "taint-eviction", "api-request", "apiserver-warning",
})
_SKIP_MARKERS = (b'"type":"send"', b'"type":"deliver"', b'"type":"drop"')

VERDICT_WORDS = {"true": "pass", "false": "fail", "unknown": "unknown"}
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f", "#bab0ac", "#e15759")

# -- the journal ----------------------------------------------------------------------------


def read_timeline_events(path: str | Path) -> list[dict[str, Any]]:
    """The events of a journal file that the page draws, in journal order ([] if the file
    is missing: an interrupted run may not have one)."""
    events: list[dict[str, Any]] = []
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return events
    with file:
        for line in file:
            if not line.strip() or any(marker in line for marker in _SKIP_MARKERS):
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short (the process was killed mid-write): not drawn
            if isinstance(event, dict) and event.get("type") in TIMELINE_TYPES:
                events.append(event)
    return events


# -- the timeline, as data ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """Someone holds something from ``start_s`` to ``end_s`` (a leadership, a lease)."""

    start_s: float
    end_s: float
    holder: str
    label: str
    paused: bool = False


@dataclass(frozen=True, slots=True)
class Band:
    """A fault, applied at ``start_s`` and healed at ``end_s`` (None: never healed)."""

    id: int
    kind: str
    target: str
    targets: tuple[str, ...]
    start_s: float
    end_s: float | None
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"#{self.id} {self.kind} {', '.join(self.targets) or self.target}"


@dataclass(frozen=True, slots=True)
class Bucket:
    """Operations that completed in ``[start_s, start_s + width)``, by outcome."""

    start_s: float
    ok: int = 0
    fail: int = 0
    info: int = 0

    @property
    def total(self) -> int:
        return self.ok + self.fail + self.info

    @property
    def fraction(self) -> float | None:
        return self.ok / self.total if self.total else None


@dataclass
class Timeline:
    end_s: float
    bucket_s: float
    bands: list[Band] = field(default_factory=list)
    segment_lanes: dict[str, list[Segment]] = field(default_factory=dict)
    rate_lanes: dict[str, list[Bucket]] = field(default_factory=dict)
    ready_pods: list[tuple[float, int]] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)


class _Holdings:
    """Open segments keyed by process; closed by the caller, by a kill or exit, or at the
    end; a pause splits the open segment of that process into a paused part."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[float, str, str, bool]] = {}  # process -> (start, holder, label, paused)
        self.closed: list[Segment] = []

    def begin(self, process: str, t: float, holder: str, label: str) -> None:
        self.end(process, t)
        self.open[process] = (t, holder, label, False)

    def end(self, process: str, t: float) -> None:
        opened = self.open.pop(process, None)
        if opened is not None:
            start, holder, label, paused = opened
            self.closed.append(Segment(start, max(t, start), holder, label, paused))

    def set_paused(self, process: str, t: float, paused: bool) -> None:
        opened = self.open.get(process)
        if opened is not None and opened[3] != paused:
            self.end(process, t)
            self.open[process] = (t, opened[1], opened[2], paused)

    def on_process(self, event: Mapping[str, Any]) -> None:
        process, kind, t = event.get("process", ""), event.get("event"), event["t"]
        if kind in ("kill", "exit"):
            self.end(process, t)
        elif kind == "pause":
            self.set_paused(process, t, True)
        elif kind == "resume":
            self.set_paused(process, t, False)

    def finish(self, end_s: float) -> list[Segment]:
        for process in sorted(self.open):
            self.end(process, end_s)
        return sorted(self.closed, key=lambda segment: (segment.start_s, segment.holder))


def etcd_leader_segments(events: Iterable[Mapping[str, Any]], end_s: float) -> list[Segment]:
    """Leaderships from ``raft-role`` events (simulated etcd), ended by another role, a
    kill or an exit; paused stretches are marked."""
    holdings = _Holdings()
    for event in events:
        if event["type"] == "raft-role":
            member = event["member"]
            if event["role"] == "leader":
                holdings.begin(member, event["t"], member, f"{member} t{event['term']}")
            else:
                holdings.end(member, event["t"])
        elif event["type"] == "process":
            holdings.on_process(event)
    return holdings.finish(end_s)


def polled_leader_segments(events: Iterable[Mapping[str, Any]]) -> list[Segment]:
    """Leaderships from a real cluster's status polls: each (leader, term) from the first
    to the last poll that named it."""
    spans: dict[tuple[str, int], list[float]] = {}
    for event in events:
        if event["type"] == "leader" and "lease" not in event and event.get("leader") is not None:
            key = (str(event["leader"]), int(event.get("term") or 0))
            span = spans.setdefault(key, [event["t"], event["t"]])
            span[1] = event["t"]
    return sorted((Segment(start, end, leader, f"{leader} t{term}") for (leader, term), (start, end) in spans.items()), key=lambda segment: (segment.start_s, segment.holder))


def lease_segments(events: Iterable[Mapping[str, Any]], end_s: float) -> dict[str, list[Segment]]:
    """Per Lease: who acted as its leader, from the electors' start/stop events."""
    holdings: dict[str, _Holdings] = {}
    for event in events:
        if event["type"] == "leader" and "lease" in event:
            lease = holdings.setdefault(event["lease"], _Holdings())
            process = event.get("process") or event.get("identity", "")
            if event.get("event") == "start":
                identity = event.get("identity") or process
                lease.begin(process, event["t"], identity, identity)
            elif event.get("event") == "stop":
                lease.end(process, event["t"])
        elif event["type"] == "process":
            for lease in holdings.values():
                lease.on_process(event)
    return {name: holdings[name].finish(end_s) for name in sorted(holdings)}


def fault_bands(events: Iterable[Mapping[str, Any]]) -> list[Band]:
    """Applied faults with their heal times, in order of application."""
    applied: dict[int, Mapping[str, Any]] = {}
    healed: dict[int, float] = {}
    for event in events:
        if event["type"] != "fault":
            continue
        if event.get("event") == "apply":
            applied[event["id"]] = event
        elif event.get("event") == "heal" and event["id"] not in healed:
            healed[event["id"]] = event["t"]
    bands = [
        Band(fault_id, str(event["kind"]), str(event.get("target", "")), tuple(map(str, event.get("targets", ()))), event["t"], healed.get(fault_id), dict(event.get("params") or {}))
        for fault_id, event in applied.items()
    ]
    return sorted(bands, key=lambda band: (band.start_s, band.id))


def outcome(event: Mapping[str, Any]) -> str | None:
    """ok / fail / info for a completed operation or probe, None for an invoke."""
    phase = event.get("phase")
    if phase is not None:
        return phase if phase in ("ok", "fail", "info") else None
    ok = event.get("ok")
    if isinstance(ok, bool):
        return "ok" if ok else "fail"
    status = event.get("status", event.get("outcome"))
    if status is None:
        return None
    status = str(status)
    return "ok" if status == "ok" else "info" if status in ("info", "timeout", "unknown") else "fail"


def bucket_width_s(end_s: float) -> float:
    """1 s, widened to whole seconds so a run has at most MAX_BUCKETS buckets."""
    return float(max(1, math.ceil(end_s / MAX_BUCKETS)))


def rate_buckets(events: Iterable[Mapping[str, Any]], types: Sequence[str], bucket_s: float, end_s: float) -> list[Bucket]:
    """Completed operations of ``types`` per bucket, from 0 to ``end_s``."""
    assert bucket_s > 0, bucket_s
    count = max(1, math.ceil(end_s / bucket_s))
    tallies = [[0, 0, 0] for _ in range(count)]
    slot = {"ok": 0, "fail": 1, "info": 2}
    found = False
    for event in events:
        if event["type"] not in types:
            continue
        result = outcome(event)
        if result is None:
            continue
        found = True
        index = min(count - 1, max(0, int(event["t"] // bucket_s)))
        tallies[index][slot[result]] += 1
    if not found:
        return []
    return [Bucket(index * bucket_s, *tally) for index, tally in enumerate(tallies)]


def stalled_buckets(buckets: Sequence[Bucket]) -> list[Bucket]:
    """Buckets in which nothing completed, between the first and the last that had a
    completion: the workload was running, and every operation was stuck."""
    busy = [index for index, bucket in enumerate(buckets) if bucket.total]
    if not busy:
        return []
    return [bucket for bucket in buckets[busy[0] : busy[-1] + 1] if not bucket.total]


def availability_figures(buckets: Sequence[Bucket], bucket_s: float) -> dict[str, Any]:
    """What the availability line says, in numbers: operations, the overall ok fraction,
    ``lost_s`` (the sum over buckets of the share that did not complete ok, times the
    bucket width: the seconds of full unavailability it is worth), ``stalled_s`` (buckets
    in which nothing completed while the workload ran, times the width: counted apart,
    since a sparse workload has empty buckets too), the worst bucket and how many were
    below 100 %."""
    ok = sum(bucket.ok for bucket in buckets)
    total = sum(bucket.total for bucket in buckets)
    fractions = [(bucket.fraction, bucket.start_s) for bucket in buckets if bucket.fraction is not None]
    worst = min(fractions, default=None)
    return {
        "operations": total,
        "ok": ok,
        "ok_fraction": round(ok / total, 6) if total else None,
        "lost_s": round(sum((1.0 - fraction) * bucket_s for fraction, _ in fractions), 6),
        "stalled_s": round(len(stalled_buckets(buckets)) * bucket_s, 6),
        "worst_fraction": round(worst[0], 6) if worst else None,
        "worst_at_s": worst[1] if worst else None,
        "buckets_below_full": sum(1 for fraction, _ in fractions if fraction < 1.0),
    }


def ready_pod_steps(events: Iterable[Mapping[str, Any]]) -> list[tuple[float, int]]:
    """(time, ready pods) after each ``pod-phase`` event."""
    ready: dict[tuple[str, str], bool] = {}
    steps: list[tuple[float, int]] = []
    for event in events:
        if event["type"] != "pod-phase":
            continue
        key = (str(event.get("namespace", "")), str(event.get("name", event.get("pod", ""))))
        flag = event.get("ready")
        ready[key] = bool(flag) if isinstance(flag, bool) else event.get("phase") == "Running"
        steps.append((event["t"], sum(ready.values())))
    return steps


def build_timeline(events: Sequence[Mapping[str, Any]], end_s: float = 0.0) -> Timeline:
    """Everything the SVG draws, as data (tests read this directly)."""
    end_s = max([end_s, *(event["t"] for event in events)], default=0.0) or 1.0
    bucket_s = bucket_width_s(end_s)
    timeline = Timeline(end_s=end_s, bucket_s=bucket_s, bands=fault_bands(events))
    etcd = etcd_leader_segments(events, end_s) or polled_leader_segments(events)
    if etcd:
        timeline.segment_lanes["etcd-leader"] = etcd
    for lease, segments in lease_segments(events, end_s).items():
        timeline.segment_lanes[f"lease:{lease}"] = segments
    availability = rate_buckets(events, ("client-op", "api-op"), bucket_s, end_s)
    if availability:
        timeline.rate_lanes["availability"] = availability
    traffic: dict[str, list[Mapping[str, Any]]] = {}  # by service, in one pass over the journal
    for event in events:
        if event["type"] == "traffic":
            traffic.setdefault(str(event.get("service", "")), []).append(event)
    for service in sorted(traffic):
        buckets = rate_buckets(traffic[service], ("traffic",), bucket_s, end_s)
        if buckets:
            timeline.rate_lanes[f"service:{service}" if service else "service"] = buckets
    probes = rate_buckets(events, ("probe",), bucket_s, end_s)
    if probes:
        timeline.rate_lanes["probes"] = probes
    from chaoskube.experiments.answers import ready_pod_steps_from_store

    timeline.ready_pods = ready_pod_steps_from_store(events) or ready_pod_steps(events)
    timeline.phases = {str(event["name"]): event["t"] for event in events if event["type"] == "phase"}
    return timeline


# -- escaping -------------------------------------------------------------------------------

_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def esc(value: Any) -> str:
    """Text or attribute value: HTML-escaped, XML-forbidden characters replaced."""
    return html.escape(_XML_FORBIDDEN.sub("\ufffd", str(value)), quote=True)


def _compact(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, (bool, int, float)):
        text = orjson.dumps(value).decode()
    else:
        text = orjson.dumps(value, default=repr, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


# -- the SVG --------------------------------------------------------------------------------

WIDTH = 1000
LEFT = 170
RIGHT = 20
SEGMENT_LANE_H = 26
RATE_LANE_H = 56
LANE_GAP = 8
LABEL_ROW_H = 14
CHAR_W = 6.2  # an estimate of a 11 px sans-serif character, to keep labels apart


def _nice_step(end_s: float) -> float:
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600):
        if end_s / step <= 12:
            return float(step)
    return float(math.ceil(end_s / 12 / 3600) * 3600)


def _rows(spans: Sequence[tuple[float, float]], max_rows: int) -> list[int]:
    """A row for each (x0, x1), first fit, so that labels in one row do not overlap;
    past ``max_rows`` they share the last row."""
    taken: list[list[tuple[float, float]]] = []
    rows = []
    for x0, x1 in spans:
        row = next((index for index, placed in enumerate(taken) if all(x1 <= a or b <= x0 for a, b in placed)), None)
        if row is None:
            if len(taken) < max_rows:
                taken.append([])
            row = len(taken) - 1
        taken[row].append((x0, x1))
        rows.append(row)
    return rows


class _Scale:
    def __init__(self, end_s: float) -> None:
        self.end_s = end_s
        self.width = WIDTH - LEFT - RIGHT

    def x(self, t: float) -> float:
        return LEFT + self.width * min(max(t, 0.0), self.end_s) / self.end_s


def _fmt(value: float) -> str:
    return f"{value:.1f}"


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


def render_timeline_svg(timeline: Timeline) -> str:
    scale = _Scale(timeline.end_s)
    colours = _colours(timeline)
    label_spans = [(scale.x(band.start_s), scale.x(band.start_s) + CHAR_W * len(band.label) + 6) for band in timeline.bands]
    label_rows = _rows(label_spans, MAX_LABEL_ROWS)
    top = 6 + LABEL_ROW_H * (max(label_rows, default=-1) + 1)
    lanes: list[str] = []
    y = top
    for name, segments in timeline.segment_lanes.items():
        lanes.append(_segment_lane(name, segments, y, scale, colours))
        y += SEGMENT_LANE_H + LANE_GAP
    for name, buckets in timeline.rate_lanes.items():
        lanes.append(_rate_lane(name, buckets, timeline.bucket_s, y, scale))
        y += RATE_LANE_H + LANE_GAP
    if timeline.ready_pods:
        lanes.append(_ready_lane(timeline.ready_pods, y, scale))
        y += RATE_LANE_H + LANE_GAP
    if not lanes:
        lanes.append(f'<text class="empty" x="{LEFT}" y="{y + 16}">no leader, availability or pod events in this journal</text>')
        y += SEGMENT_LANE_H
    lanes_bottom = y
    bands = [_band(band, row, top, lanes_bottom, scale) for band, row in zip(timeline.bands, label_rows)]
    axis, height = _axis(timeline, lanes_bottom, scale)
    parts = [
        f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline of the run">',
        "<defs>"
        '<pattern id="paused-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">'
        '<rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#888888" stroke-width="3"/></pattern>'
        "</defs>",
        '<g class="lanes">',
        *lanes,
        "</g>",
        '<g class="faults">',
        *bands,
        "</g>",
        axis,
        "</svg>",
    ]
    return "\n".join(parts)


def _colours(timeline: Timeline) -> dict[str, str]:
    holders = sorted({segment.holder for segments in timeline.segment_lanes.values() for segment in segments})
    return {holder: PALETTE[index % len(PALETTE)] for index, holder in enumerate(holders)}


#: Characters of a lane label that fit left of the plot; longer ones keep their end.
LABEL_CHARS = 24


def _lane_label(name: str, y: float, height: float, note: str = "") -> str:
    shown = name if len(name) <= LABEL_CHARS else "…" + name[-(LABEL_CHARS - 1):]
    label = f'<text class="lane-label" x="{LEFT - 8}" y="{_fmt(y + height / 2 + (0 if not note else -3))}" text-anchor="end"><title>{esc(name)}</title>{esc(shown)}</text>'
    if note:
        label += f'<text class="lane-note" x="{LEFT - 8}" y="{_fmt(y + height / 2 + 10)}" text-anchor="end">{esc(note)}</text>'
    return label


def _segment_lane(name: str, segments: Sequence[Segment], y: float, scale: _Scale, colours: Mapping[str, str]) -> str:
    parts = [f'<g class="lane" data-lane="{esc(name)}">', _lane_label(name, y, SEGMENT_LANE_H)]
    parts.append(f'<rect class="lane-bg" x="{LEFT}" y="{_fmt(y)}" width="{_fmt(scale.width)}" height="{SEGMENT_LANE_H}"/>')
    # Two holders at once (a paused leader and its successor, two leaders of one lease)
    # is what the reader looks for: overlapping segments get rows of their own.
    rows = _rows([(scale.x(segment.start_s), scale.x(segment.end_s)) for segment in segments], MAX_LABEL_ROWS)
    row_h = (SEGMENT_LANE_H - 4) / (max(rows, default=0) + 1)
    for segment, row in zip(segments, rows):
        x0, x1 = scale.x(segment.start_s), scale.x(segment.end_s)
        width = max(x1 - x0, 1.0)
        fill = "url(#paused-hatch)" if segment.paused else colours.get(segment.holder, PALETTE[0])
        state = " (paused: still believes it leads)" if segment.paused else ""
        top = y + 2 + row * row_h
        parts.append(
            f'<rect class="segment{" paused" if segment.paused else ""}" data-holder="{esc(segment.holder)}" x="{_fmt(x0)}" y="{_fmt(top)}" width="{_fmt(width)}" height="{_fmt(row_h)}" fill="{fill}" stroke="{colours.get(segment.holder, PALETTE[0])}">'
            f"<title>{esc(segment.label)}{state}: {_seconds(segment.start_s)} – {_seconds(segment.end_s)}</title></rect>"
        )
        if width >= CHAR_W * len(segment.label) + 6 and not segment.paused and row_h >= 10:
            parts.append(f'<text class="segment-label" x="{_fmt(x0 + 3)}" y="{_fmt(top + row_h / 2 + 4)}">{esc(segment.label)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _line_points(points: Sequence[tuple[float, float | None]]) -> list[str]:
    """Polyline point lists, broken where a value is missing."""
    runs: list[list[str]] = [[]]
    for x, y in points:
        if y is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{_fmt(x)},{_fmt(y)}")
    return [" ".join(run) for run in runs if run]


def _rate_lane(name: str, buckets: Sequence[Bucket], bucket_s: float, y: float, scale: _Scale) -> str:
    pad = 4
    inner = RATE_LANE_H - 2 * pad

    def y_of(fraction: float | None) -> float | None:
        return None if fraction is None else y + pad + (1.0 - fraction) * inner

    figures = availability_figures(buckets, bucket_s)
    note = f"ok share per {bucket_s:g} s"
    title = (
        f"{name}: {figures['ok']} of {figures['operations']} completed ok"
        + (f" ({figures['ok_fraction']:.1%}); lowest {figures['worst_fraction']:.0%} at {figures['worst_at_s']:g} s" if figures["ok_fraction"] is not None else "")
    )
    parts = [f'<g class="lane rate" data-lane="{esc(name)}">', _lane_label(name, y, RATE_LANE_H, note)]
    parts.append(f'<rect class="lane-bg" x="{LEFT}" y="{_fmt(y)}" width="{_fmt(scale.width)}" height="{RATE_LANE_H}"/>')
    parts.append(f'<line class="full" x1="{LEFT}" y1="{_fmt(y + pad)}" x2="{_fmt(LEFT + scale.width)}" y2="{_fmt(y + pad)}"/>')
    parts.append(f'<text class="scale" x="{LEFT + 2}" y="{_fmt(y + pad + 9)}">100%</text><text class="scale" x="{LEFT + 2}" y="{_fmt(y + RATE_LANE_H - pad - 1)}">0%</text>')
    points = [(scale.x(bucket.start_s + bucket_s / 2), y_of(bucket.fraction)) for bucket in buckets]
    for run in _line_points(points):
        parts.append(f'<polyline class="rate-line" points="{run}"><title>{esc(title)}</title></polyline>')
    for bucket in stalled_buckets(buckets):
        x0, x1 = scale.x(bucket.start_s), scale.x(bucket.start_s + bucket_s)
        parts.append(
            f'<rect class="stalled" x="{_fmt(x0)}" y="{_fmt(y + RATE_LANE_H - pad - 3)}" width="{_fmt(max(x1 - x0, 1.0))}" height="3">'
            f"<title>nothing completed in {bucket.start_s:g}–{bucket.start_s + bucket_s:g} s</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)


def _ready_lane(steps: Sequence[tuple[float, int]], y: float, scale: _Scale) -> str:
    pad = 4
    inner = RATE_LANE_H - 2 * pad
    top = max(count for _, count in steps) or 1

    def y_of(count: int) -> float:
        return y + pad + (1.0 - count / top) * inner

    points = [f"{_fmt(scale.x(0.0))},{_fmt(y_of(0))}"]
    for t, count in steps:
        previous = points[-1].split(",")[1]
        points.append(f"{_fmt(scale.x(t))},{previous}")
        points.append(f"{_fmt(scale.x(t))},{_fmt(y_of(count))}")
    points.append(f"{_fmt(scale.x(scale.end_s))},{points[-1].split(',')[1]}")
    parts = ['<g class="lane rate" data-lane="ready-pods">', _lane_label("ready pods", y, RATE_LANE_H, f"0 – {top}")]
    parts.append(f'<rect class="lane-bg" x="{LEFT}" y="{_fmt(y)}" width="{_fmt(scale.width)}" height="{RATE_LANE_H}"/>')
    parts.append(f'<polyline class="rate-line ready" points="{" ".join(points)}"><title>ready pods (most: {top}; last: {steps[-1][1]})</title></polyline>')
    parts.append("</g>")
    return "".join(parts)


def _band(band: Band, row: int, top: float, bottom: float, scale: _Scale) -> str:
    x0 = scale.x(band.start_s)
    x1 = scale.x(band.end_s if band.end_s is not None else scale.end_s)
    healed = _seconds(band.end_s) if band.end_s is not None else "never healed"
    params = ", ".join(f"{key}={value}" for key, value in sorted(band.params.items()))
    title = f"fault {band.label} (target {band.target}{'; ' + params if params else ''}): applied {_seconds(band.start_s)}, healed {healed}"
    label_y = 6 + LABEL_ROW_H * row + 10
    return (
        f'<g class="fault" data-kind="{esc(band.kind)}" data-target="{esc(band.target)}" data-id="{band.id}">'
        f'<rect class="fault-band" x="{_fmt(x0)}" y="{_fmt(top - 2)}" width="{_fmt(max(x1 - x0, 1.0))}" height="{_fmt(bottom - top)}"><title>{esc(title)}</title></rect>'
        f'<line class="fault-edge" x1="{_fmt(x0)}" y1="{_fmt(label_y - 9)}" x2="{_fmt(x0)}" y2="{_fmt(bottom - LANE_GAP + 2)}"/>'
        f'<text class="fault-label" x="{_fmt(x0 + 3)}" y="{_fmt(label_y)}">{esc(band.label)}<title>{esc(title)}</title></text>'
        "</g>"
    )


def _axis(timeline: Timeline, y: float, scale: _Scale) -> tuple[str, int]:
    step = _nice_step(timeline.end_s)
    parts = ['<g class="axis">', f'<line x1="{LEFT}" y1="{_fmt(y)}" x2="{_fmt(LEFT + scale.width)}" y2="{_fmt(y)}"/>']
    ticks = int(timeline.end_s // step)
    for index in range(ticks + 1):
        t = index * step
        x = scale.x(t)
        parts.append(f'<line x1="{_fmt(x)}" y1="{_fmt(y)}" x2="{_fmt(x)}" y2="{_fmt(y + 4)}"/><text class="tick" x="{_fmt(x)}" y="{_fmt(y + 15)}" text-anchor="middle">{t:g}</text>')
    parts.append(f'<text class="axis-title" x="{LEFT - 8}" y="{_fmt(y + 15)}" text-anchor="end">seconds</text>')
    phases = sorted(timeline.phases.items(), key=lambda item: (item[1], item[0]))
    widths = [CHAR_W * len(name) + 4 for name, _ in phases]
    # A label that would leave the picture at the right edge ends at its line instead.
    right = [scale.x(t) + width > WIDTH for (_, t), width in zip(phases, widths)]
    spans = [(scale.x(t) - width, scale.x(t)) if flip else (scale.x(t), scale.x(t) + width) for (_, t), width, flip in zip(phases, widths, right)]
    rows = _rows(spans, 3)
    for (name, t), row, flip in zip(phases, rows, right):
        x = scale.x(t)
        label_y = y + 30 + row * LABEL_ROW_H
        anchor = ' text-anchor="end"' if flip else ""
        parts.append(
            f'<g class="phase" data-phase="{esc(name)}"><line x1="{_fmt(x)}" y1="{_fmt(y - 2)}" x2="{_fmt(x)}" y2="{_fmt(label_y - 9)}"/>'
            f'<text x="{_fmt(x - 2 if anchor else x + 2)}" y="{_fmt(label_y)}"{anchor}>{esc(name)}<title>phase {esc(name)} at {_seconds(t)}</title></text></g>'
        )
    parts.append("</g>")
    height = int(y + 30 + (max(rows, default=0) + 1) * LABEL_ROW_H)
    return "".join(parts), height


# -- the page -------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1060px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; } th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
.outcome { display: inline-block; padding: 2px 10px; border-radius: 3px; font-weight: bold; }
.outcome.as-expected { background: #e3f4e1; color: #1d6b12; } .outcome.not-as-expected { background: #fde2e1; color: #a11; }
.outcome.inconclusive { background: #fff3cd; color: #7a5b00; } .outcome.interrupted { background: #eee; color: #555; }
tr.verdict.pass td.word { color: #1d6b12; font-weight: bold; } tr.verdict.fail td.word { color: #b00; font-weight: bold; }
tr.verdict.unknown td.word { color: #a60; font-weight: bold; } tr.unexpected { background: #fff4f4; }
.scroll { overflow-x: auto; max-width: 100%; } table.evidence-table td { white-space: nowrap; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.facts th { width: 11em; } .muted { color: #777; }
svg#timeline { border: 1px solid #ddd; background: #fff; }
svg text { font: 11px system-ui, sans-serif; fill: #333; } svg .lane-note, svg .scale { fill: #888; font-size: 9.5px; }
svg .lane-bg { fill: #f6f6f6; } svg .segment { fill-opacity: 0.85; } svg .segment-label { fill: #fff; font-weight: 600; }
svg .rate-line { fill: none; stroke: #2a6fb0; stroke-width: 1.5; } svg .rate-line.ready { stroke: #2f8f46; }
svg .stalled { fill: #d62728; } svg .full { stroke: #ccc; stroke-dasharray: 3 3; } svg .fault-band { fill: #e15759; fill-opacity: 0.13; }
svg .fault-edge { stroke: #e15759; stroke-width: 1; } svg .fault-label { fill: #b3262a; }
svg .axis line, svg .phase line { stroke: #999; } svg .phase line { stroke-dasharray: 2 3; } svg .phase text { fill: #666; font-size: 10px; }
"""


def render_html(result: RunResult, events: Sequence[Mapping[str, Any]], answers: Any = None) -> str:
    """report.html. ``answers``: the run's :func:`~chaoskube.experiments.answers.answer`, when
    the caller has it already (computed from ``events`` otherwise)."""
    payload = result.to_json()
    experiment = result.experiment
    timeline = build_timeline(events, round(result.simulated_seconds, 6))  # as result.json records it
    title = f"{experiment.name} — seed {result.seed}"
    outcome_class = result.outcome
    words = {"as-expected": "as expected", "not-as-expected": "NOT as expected", "inconclusive": "INCONCLUSIVE", "interrupted": "interrupted"}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<header><h1>{esc(title)}</h1><p><strong>{esc(experiment.title)}</strong></p>",
        f'<p>Outcome: <span id="outcome" class="outcome {outcome_class}">{words[result.outcome]}</span> '
        f"(expected: {esc(experiment.expected.outcome)}{esc(' — ' + experiment.expected.failure_mode) if experiment.expected.failure_mode else ''})"
        f"{' — the run was interrupted' if result.interrupted else ''}</p>"
        + (f'<p id="inconclusive"><strong>Inconclusive:</strong> {len(result.skipped_faults)} fault(s) were not applied when they fell due, so the run did not test what the experiment says: {esc("; ".join(result.skipped_faults))}</p>' if result.inconclusive else "")
        + (f'<p id="dropped"><strong>Left out</strong> (the changed faults left them nothing to judge): {esc("; ".join(f"{name} ({reason})" for name, reason in result.dropped_checkers.items()))}</p>' if result.dropped_checkers else "")
        + "</header>",
        _facts(result, payload),
        _answers(result, events, answers),
        _verdicts(result, payload),
        *_evidence(payload),
        '<section id="timeline-section"><h2>Timeline</h2>',
        render_timeline_svg(timeline),
        _legend(timeline),
        "</section>",
        _faults(result),
        _phases_and_metrics(result, timeline),
        _options(result),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _answers(result: RunResult, events: Sequence[Mapping[str, Any]], answers: Any = None) -> str:
    """The answers to the user's questions (:mod:`chaoskube.experiments.answers`):
    ``section#answers`` with ``table#workloads`` (``tr[data-workload]``), ``table#services``
    (``tr[data-service]``), ``ul#refused-evictions``, ``ul#taint-evictions``,
    ``ul#unready-pods``."""
    from chaoskube.experiments.answers import answer, windows_text, workload_when

    if answers is None:
        answers = answer(events, result.simulated_seconds, skipped=result.skipped_unsupported)
    if answers.empty:
        return ""

    def t(value: float | None) -> str:
        return "end of run" if value is None else f"{value:.1f} s"

    parts = ['<section id="answers"><h2>What your workloads saw</h2>']
    if answers.skipped:
        items = "".join(f"<li>{esc(line)}</li>" for line in answers.skipped)
        parts.append(f'<p>Left out (--skip-unsupported): {len(answers.skipped)} document(s)</p><ul id="skipped">{items}</ul>')
    if answers.workloads:
        rows = []
        for w in answers.workloads:
            if w.converged_at is None:
                rows.append(f'<tr data-workload="{esc(w.name)}"><td>{esc(w.name)}</td><td>{w.desired}</td><td colspan="2">never reached its desired replicas</td><td>{esc(w.why)}</td></tr>')
                continue
            lowest = "—" if w.minimum_ready is None else f"{w.minimum_ready}/{w.desired}"
            when = workload_when(w, t)
            rows.append(f'<tr data-workload="{esc(w.name)}"><td>{esc(w.name)}</td><td>{w.desired}</td><td>{w.below_s:.1f} s</td><td>{lowest}</td><td>{esc(when)}</td></tr>')
        parts.append('<table id="workloads"><tr><th>workload</th><th>desired</th><th>below desired</th><th>lowest ready</th><th>when</th></tr>' + "".join(rows) + "</table>")
    if answers.services:
        rows = []
        for s in answers.services:
            windows = windows_text(s.windows, lambda window: f"{t(window[0])} – {t(window[1])} ({window[2]} failed)", "none")
            rows.append(f'<tr data-service="{esc(s.service)}"><td>{esc(s.service)}</td><td>{100 * s.availability:.1f}% of {s.requests}</td><td>{s.down_s:.1f} s</td><td>{s.longest_s:.1f} s</td><td>{esc(windows)}</td></tr>')
        parts.append('<table id="services"><tr><th>Service</th><th>availability</th><th>down</th><th>longest outage</th><th>outage windows</th></tr>' + "".join(rows) + "</table>")
    refused = "".join(f"<li>{row['t']:.1f} s: pod {esc(row['pod'])}, PodDisruptionBudget {esc(row['pdb'])}: {esc(row['reason'])}</li>" for row in answers.refused_evictions[:50])
    parts.append(f'<p>Refused evictions: {len(answers.refused_evictions) or "none"}</p><ul id="refused-evictions">{refused}</ul>')
    taints = "".join(f"<li>{row['t']:.1f} s: pod {esc(row['pod'])} from node {esc(row['node'])}</li>" for row in answers.taint_evictions[:50])
    parts.append(f'<p>Taint-based evictions: {len(answers.taint_evictions) or "none"}</p><ul id="taint-evictions">{taints}</ul>')
    if answers.warnings:
        warnings = "".join(f"<li>{esc(line)}</li>" for line in answers.warnings)
        parts.append(f'<p>API server warnings:</p><ul id="apiserver-warnings">{warnings}</ul>')
    if answers.unready:
        unready = "".join(f"<li>{esc(row['pod'])} on {esc(row['node'] or 'no node')}: {t(row['from'])} – {t(row['to'])}: {esc(row['why'])}</li>" for row in answers.unready)
        parts.append(f'<p>Pods that were unready during the faults, and why:</p><ul id="unready-pods">{unready}</ul>')
    parts.append("</section>")
    return "".join(parts)


def _facts(result: RunResult, payload: Mapping[str, Any]) -> str:
    clock = "real" if result.mode == "real" else "simulated"
    rows = [
        ("experiment", esc(result.experiment.name)),
        ("seed", f'<span id="seed">{result.seed}</span>'),
        ("journal sha256", f'<code id="fingerprint">{esc(result.journal_sha256)}</code>'),
        ("replay", f'<code id="replay">{esc(result.replay)}</code>'),
        # as result.json records them (rounded first), so a report made again is the same
        (f"{clock} time", f"{round(result.simulated_seconds, 6):.3f} s"),
        ("wall time", f"{round(result.wall_seconds, 3):.2f} s"),
        ("chaoskube", esc(payload.get("chaoskube_version", ""))),
        ("source", esc(result.experiment.source)),
    ]
    body = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    description = esc(result.experiment.description.strip())
    return f'<section id="run"><h2>Run</h2><p>{description}</p><table class="facts">{body}</table></section>'


def _expectation(name: str, result: RunResult) -> str:
    expected = result.experiment.expected
    if name in expected.failing:
        return "fail"
    if name in expected.may_fail:
        return "pass or fail"
    return "pass"


def _meets(word: str, expectation: str) -> bool:
    return word != "unknown" and (expectation == "pass or fail" or word == expectation)


def _verdicts(result: RunResult, payload: Mapping[str, Any]) -> str:
    rows = []
    for name, verdict in payload["verdicts"].items():
        word = VERDICT_WORDS[verdict["valid"]]
        expectation = _expectation(name, result)
        unexpected = "" if _meets(word, expectation) else " unexpected"
        rows.append(
            f'<tr class="verdict {word}{unexpected}" data-checker="{esc(name)}" data-verdict="{word}">'
            f'<td class="checker">{esc(name)}</td><td class="word">{word}</td><td class="reason">{esc(verdict["reason"])}</td>'
            f'<td class="expected">{esc(expectation)}</td></tr>'
        )
    if not rows:
        rows.append('<tr><td colspan="4" class="muted">no checker ran (the run was interrupted or broke before the checks)</td></tr>')
    return (
        '<section id="verdicts-section"><h2>Verdicts</h2>'
        '<table id="verdicts"><thead><tr><th>checker</th><th>verdict</th><th>reason</th><th>expected</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def evidence_table(items: Sequence[Any]) -> str:
    """The shortest history a checker returned, as a table: one row per item; for dicts
    one column per key (``t`` and ``type`` first, then by name)."""
    shown = items[:MAX_EVIDENCE_ROWS]
    if shown and all(isinstance(item, Mapping) for item in shown):
        columns: list[str] = [key for key in ("t", "type") if any(key in item for item in shown)]
        # then by name: result.json stores items with sorted keys, so a report made again
        # from it (`chaoskube report`) lays the table out the same way
        columns += sorted({str(key) for item in shown for key in item} - set(columns))
        head = "".join(f"<th>{esc(column)}</th>" for column in columns)
        cells = ["".join(f"<td>{esc(_compact(item[column])) if column in item else ''}</td>" for column in columns) for item in shown]
    else:
        head = "<th>item</th>"
        cells = [f"<td>{esc(_compact(item))}</td>" for item in shown]
    body = "".join(f"<tr><td>{index}</td>{row}</tr>" for index, row in enumerate(cells, 1))
    more = f'<p class="muted">{len(items) - len(shown)} more items in result.json</p>' if len(items) > len(shown) else ""
    return f'<div class="scroll"><table class="evidence-table"><thead><tr><th>#</th>{head}</tr></thead><tbody>{body}</tbody></table></div>{more}'


def _evidence(payload: Mapping[str, Any]) -> list[str]:
    sections = []
    for name, verdict in payload["verdicts"].items():
        if verdict["valid"] != "false":
            continue
        items = verdict.get("evidence") or []
        table = evidence_table(items) if items else '<p class="muted">the checker returned no history slice</p>'
        sections.append(
            f'<section class="evidence" data-checker="{esc(name)}"><h3>{esc(name)}: the shortest history that shows it</h3>'
            f"<p>{esc(verdict['reason'])}</p>{table}</section>"
        )
    return sections


def _legend(timeline: Timeline) -> str:
    notes = [
        "Shaded bands: faults, from apply to heal (hover for the target selector and parameters).",
        "Leader lanes: who leads, coloured by holder; a hatched stretch is a paused leader that still believes it leads.",
    ]
    if timeline.rate_lanes:
        notes.append(f"Rate lanes: the share of operations completing ok per {timeline.bucket_s:g} s bucket (ok / (ok + fail + unknown)); a gap with a red mark at 0 % is a bucket in which nothing completed.")
    return '<ul class="legend muted">' + "".join(f"<li>{esc(note)}</li>" for note in notes) + "</ul>"


def _faults(result: RunResult) -> str:
    rows = []
    for fault in result.faults:
        healed = f"{fault['healed_at']:.3f}" if fault.get("healed_at") is not None else "never"
        params = ", ".join(f"{key}={value}" for key, value in sorted((fault.get("params") or {}).items()))
        rows.append(
            f"<tr><td>{esc(fault['id'])}</td><td>{esc(fault['kind'])}</td><td>{esc(fault.get('target', ''))}</td><td>{esc(', '.join(fault.get('targets', [])))}</td>"
            f"<td>{esc(params)}</td><td>{fault['applied_at']:.3f}</td><td>{esc(healed)}</td></tr>"
        )
    table = (
        '<table id="faults"><thead><tr><th>#</th><th>kind</th><th>target</th><th>hit</th><th>params</th><th>applied (s)</th><th>healed (s)</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else "<p>None.</p>"
    )
    skipped = "".join(f"<li>skipped (not applied): {esc(note)}</li>" for note in result.skipped_faults)
    return f'<section id="faults-section"><h2>Faults</h2>{table}{"<ul>" + skipped + "</ul>" if skipped else ""}</section>'


def _phases_and_metrics(result: RunResult, timeline: Timeline) -> str:
    phases = "".join(f"<tr><td>{esc(name)}</td><td>{when:.3f}</td></tr>" for name, when in result.phases.items())
    metrics = dict(sorted(result.metrics.items()))
    for name, buckets in timeline.rate_lanes.items():
        for key, value in availability_figures(buckets, timeline.bucket_s).items():
            metrics[f"{name}.{key}"] = value
    rows = "".join(f"<tr><td>{esc(name)}</td><td>{esc(_compact(value))}</td></tr>" for name, value in metrics.items())
    return (
        '<section id="phases-section"><h2>Phases and metrics</h2>'
        f'<table id="phases"><thead><tr><th>phase</th><th>at (s)</th></tr></thead><tbody>{phases}</tbody></table>'
        f'<table id="metrics"><thead><tr><th>metric</th><th>value</th></tr></thead><tbody>{rows}</tbody></table></section>'
    )


def _options(result: RunResult) -> str:
    experiment = result.experiment
    options = {
        "system": experiment.system,
        "cluster": experiment.cluster,
        "workload": experiment.workload,
        "phases": msgspec.to_builtins(experiment.phases),
        "schedule": msgspec.to_builtins(experiment.schedule),
        "checkers": experiment.checkers,
        "expected": msgspec.to_builtins(experiment.expected),
        "file": experiment.path,
    }
    text = orjson.dumps(options, default=repr, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    return f'<section id="options"><h2>Options</h2><pre>{esc(text)}</pre></section>'


def write_html(result: RunResult, events: Sequence[Mapping[str, Any]] | None = None, answers: Any = None) -> Path:
    """Write ``report.html`` into the run directory; reads the journal when ``events`` is
    None. ``answers``: as for :func:`render_html`."""
    if events is None:
        events = read_timeline_events(result.out_dir / "journal.jsonl")
    path = result.out_dir / "report.html"
    write_atomic(path, render_html(result, events, answers))
    return path

"""report.html and junit.xml: what a reader and a CI tool get from a run.

Two real runs (module fixtures): etcd-leader-kill seed 1 (passes; two leader kills) and
etcd-lost-fsync seed 1 (raft-safety fails, as the experiment expects). The timeline's pure
builders are checked on hand-made journals, including the event kinds no system produces
yet (Lease leaders, traffic, pod phases). The headless-browser check is marked slow.
"""

from __future__ import annotations

import html.parser
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments import registry
from chaoskube.experiments.junit import junit_testsuite, render_junit
from chaoskube.experiments.report_html import (
    LEFT,
    RIGHT,
    WIDTH,
    Bucket,
    availability_figures,
    build_timeline,
    etcd_leader_segments,
    lease_segments,
    outcome,
    polled_leader_segments,
    rate_buckets,
    ready_pod_steps,
    render_html,
)
from chaoskube.experiments.result import RunResult
from chaoskube.experiments.runner import run_experiment
from chaoskube.sim.journal import read_journal
from tests.debian import require

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def leader_kill(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "etcd-leader-kill-1"
    return run_experiment(registry.find("etcd-leader-kill"), 1, out)


@pytest.fixture(scope="module")
def lost_fsync(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports") / "etcd-lost-fsync-1"
    return run_experiment(registry.find("etcd-lost-fsync"), 1, out)


class Page(html.parser.HTMLParser):
    """The parts of report.html a test looks at: elements by id, verdict rows, evidence
    sections with their row counts, and every attribute seen."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: dict[str, str] = {}
        self.verdicts: dict[str, str] = {}
        self.evidence_rows: dict[str, int] = {}
        self.attributes: list[tuple[str, str, str]] = []
        self.tags: list[str] = []
        self._section: str | None = None
        self._in_body = False
        self._text_of: str | None = None
        self.texts: dict[str, str] = {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append(tag)
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))
        if "id" in attributes:
            self.ids[attributes["id"]] = tag
            if attributes["id"] in ("replay", "fingerprint", "seed"):
                self._text_of = attributes["id"]
                self.texts[self._text_of] = ""
        if tag == "tr" and "verdict" in attributes.get("class", "").split():
            self.verdicts[attributes["data-checker"]] = attributes["data-verdict"]
        if tag == "section" and attributes.get("class") == "evidence":
            self._section = attributes["data-checker"]
            self.evidence_rows[self._section] = 0
        if tag == "tbody" and self._section is not None:
            self._in_body = True
        if tag == "tr" and self._in_body and self._section is not None:
            self.evidence_rows[self._section] += 1

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
            self._in_body = False
        if tag in ("code", "span"):
            self._text_of = None

    def handle_data(self, data):
        if self._text_of is not None:
            self.texts[self._text_of] += data


def svg_of(text: str) -> ET.Element:
    """The inline SVG, parsed as XML on its own (it must be well-formed)."""
    start, end = text.index("<svg"), text.index("</svg>") + len("</svg>")
    return ET.fromstring(text[start:end])


def lanes(svg: ET.Element) -> dict[str, ET.Element]:
    return {group.get("data-lane"): group for group in svg.iter(f"{SVG}g") if "lane" in (group.get("class") or "").split()}


def x_of(t: float, end_s: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * t / end_s


# -- report.html of real runs -----------------------------------------------------------------


def test_every_run_writes_html_and_junit_next_to_the_markdown(leader_kill):
    for name in ("result.json", "report.md", "report.html", "junit.xml"):
        assert (leader_kill.out_dir / name).is_file(), name


def test_html_report_has_the_verdict_table_and_the_replay_facts(leader_kill):
    page = Page((leader_kill.out_dir / "report.html").read_text())
    assert page.ids["verdicts"] == "table"
    assert page.verdicts == {"raft-safety": "pass", "linearizability": "pass", "watch": "pass", "steady-state": "pass"}
    assert page.texts["replay"] == leader_kill.replay
    assert page.texts["fingerprint"] == leader_kill.journal_sha256
    assert page.texts["seed"] == "1"
    assert page.evidence_rows == {}  # nothing failed: no evidence section


def test_timeline_draws_etcd_leaders_by_term_availability_and_one_band_per_fault(leader_kill):
    text = (leader_kill.out_dir / "report.html").read_text()
    svg = svg_of(text)
    assert svg.get("id") == "timeline"
    found = lanes(svg)
    assert set(found) == {"etcd-leader", "availability"}
    # The leaders drawn are the members that won elections, with their terms, in order.
    events = list(read_journal(leader_kill.out_dir / "journal.jsonl"))
    elected = [f"{event['member']} t{event['term']}" for event in events if event["type"] == "raft-role" and event["role"] == "leader"]
    drawn = [rect.find(f"{SVG}title").text.split(":")[0] for rect in found["etcd-leader"].iter(f"{SVG}rect") if "segment" in rect.get("class", "")]
    assert drawn == elected and len(drawn) == 3
    # Two kills: two bands, each starting where the fault was applied.
    bands = [group for group in svg.iter(f"{SVG}g") if group.get("class") == "fault"]
    assert [(band.get("data-kind"), band.get("data-target")) for band in bands] == [("kill", "leader:etcd"), ("kill", "leader:etcd")]
    end_s = max(leader_kill.simulated_seconds, events[-1]["t"])
    for band, fault in zip(bands, leader_kill.faults):
        rect = band.find(f"{SVG}rect")
        assert float(rect.get("x")) == pytest.approx(x_of(fault["applied_at"], end_s), abs=0.06)
        assert float(rect.get("x")) + float(rect.get("width")) == pytest.approx(x_of(fault["healed_at"], end_s), abs=0.12)
        label = "".join(band.find(f"{SVG}text").itertext())
        assert label.startswith(f"#{fault['id']} kill {fault['targets'][0]}")
    # The availability line exists and dips below 100 % somewhere (writes in flight on a killed leader).
    lines = [line for line in found["availability"].iter(f"{SVG}polyline")]
    assert lines
    top = min(float(point.split(",")[1]) for line in lines for point in line.get("points").split())
    bottom = max(float(point.split(",")[1]) for line in lines for point in line.get("points").split())
    assert bottom > top


def test_html_report_is_self_contained(leader_kill):
    text = (leader_kill.out_dir / "report.html").read_text()
    page = Page(text)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags and "iframe" not in page.tags
    for tag, name, value in page.attributes:
        assert name not in ("src", "srcset", "href") or not re.match(r"^(https?:)?//", value), (tag, name, value)
    assert "@import" not in text and not re.search(r"url\((?!#)", text)


def test_failing_run_shows_each_violation_as_a_table_of_its_evidence(lost_fsync):
    page = Page((lost_fsync.out_dir / "report.html").read_text())
    assert page.verdicts["raft-safety"] == "fail"
    failing = [name for name, verdict in lost_fsync.verdicts.items() if verdict.valid is False]
    assert set(page.evidence_rows) == set(failing)
    for name in failing:
        assert page.evidence_rows[name] == min(len(lost_fsync.verdicts[name].evidence), 200)
    assert page.ids["outcome"] == "span"
    bands = [group.get("data-kind") for group in svg_of((lost_fsync.out_dir / "report.html").read_text()).iter(f"{SVG}g") if group.get("class") == "fault"]
    assert bands == ["skip-fsync", "lossy-crash"]


# -- junit.xml ------------------------------------------------------------------------------------


def test_junit_of_a_failing_experiment_has_one_testcase_per_checker_and_the_failures(lost_fsync):
    root = ET.parse(lost_fsync.out_dir / "junit.xml").getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    properties = {prop.get("name"): prop.get("value") for prop in suite.find("properties")}
    assert properties["seed"] == "1" and properties["fingerprint"] == lost_fsync.journal_sha256
    assert properties["as_expected"] == "true" and properties["expected_outcome"] == "fail"
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert list(cases) == ["raft-safety", "linearizability", "watch", "steady-state"]
    # The run met its expected outcome, so the suite has no failure (CI and the exit code
    # agree); each expected false verdict keeps its reason in system-out and a property.
    for name, verdict in lost_fsync.verdicts.items():
        assert cases[name].find("failure") is None and cases[name].find("error") is None, name
        values = {prop.get("name"): prop.get("value") for prop in cases[name].find("properties")}
        assert values["verdict"] == verdict.label
        if verdict.valid is False:
            assert cases[name].find("system-out").text.startswith("false, as the experiment allows")
    assert lost_fsync.verdicts["raft-safety"].reason in cases["raft-safety"].find("system-out").text
    assert suite.get("tests") == "4" and suite.get("failures") == "0" and suite.get("errors") == "0"


def test_junit_fails_exactly_the_checkers_that_missed_their_expectation():
    expected = {"outcome": "fail", "failing": ["a"], "may_fail": ["b"], "failure_mode": "a breaks"}
    suite = junit_testsuite(payload(a="true", b="false", c="false") | {"expected": expected})
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["a"].find("failure").get("type") == "chaoskube.verdict.unexpected-pass"
    assert "expected to fail (a breaks)" in cases["a"].find("failure").get("message")
    assert cases["b"].find("failure") is None  # may fail
    assert cases["c"].find("failure").get("type") == "chaoskube.verdict.false"
    assert suite.get("failures") == "2"
    broken = junit_testsuite(payload(a="false") | {"expected": {"outcome": "fail", "failing": ["a"]}, "broken": ["broken-raft"]})
    assert broken.get("failures") == "1", "with --broken every false verdict is a finding"
    inconclusive = junit_testsuite(payload(a="true") | {"skipped_faults": ["kill leader:etcd: no process matches 'leader:etcd' now"]})
    faults = [case for case in inconclusive.findall("testcase") if case.get("name") == "faults"]
    assert faults and faults[0].find("error").get("type") == "chaoskube.run.inconclusive" and inconclusive.get("errors") == "1"


def payload(**verdicts):
    return {
        "experiment": "demo", "seed": 7, "journal_sha256": "ab" * 32, "expected": {"outcome": "pass", "failing": [], "may_fail": []},
        "as_expected": False, "replay": "chaoskube run demo --seed 7", "wall_seconds": 1.5, "interrupted": False,
        "verdicts": {name: {"valid": valid, "reason": f"{name} says {valid}", "evidence": [], "details": {}} for name, valid in verdicts.items()},
    }  # fmt: skip


def test_junit_unknown_is_an_error_not_a_skip_and_an_interrupted_run_is_not_green():
    suite = junit_testsuite(payload(a="true", b="unknown", c="false"))
    cases = {case.get("name"): case for case in suite.findall("testcase")}
    assert cases["a"].find("failure") is None and cases["a"].find("error") is None
    assert cases["b"].find("error").get("message") == "b says unknown" and cases["b"].find("skipped") is None
    assert cases["c"].find("failure").get("type") == "chaoskube.verdict.false"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("3", "1", "1", "0")
    interrupted = junit_testsuite(payload() | {"interrupted": True})
    (case,) = interrupted.findall("testcase")
    assert case.get("name") == "run" and case.find("error") is not None and interrupted.get("errors") == "1"


def test_junit_many_runs_and_hostile_text_still_parse():
    hostile = payload(a="false")
    hostile["verdicts"]["a"]["reason"] = 'lost <write> & "quote" \x00\x1b end'
    hostile["verdicts"]["a"]["evidence"] = [{"value": "]]><bad/>"}]
    root = ET.fromstring(render_junit([hostile, payload(b="true")]))
    assert [suite.get("name") for suite in root.findall("testsuite")] == ["demo seed 7", "demo seed 7"]
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    failure = root.find("testsuite/testcase/failure")
    assert failure.get("message").startswith('lost <write> & "quote" \ufffd\ufffd end')
    assert "]]><bad/>" in failure.text


# -- the timeline's builders, on hand-made journals ------------------------------------------------


def event(t, type_, **fields):
    return {"t": t, "type": type_, **fields}


def test_etcd_leaders_end_on_role_change_or_kill_and_a_pause_is_marked():
    events = [
        event(1.0, "raft-role", member="e1", role="leader", term=1),
        event(5.0, "process", event="pause", process="e1"),
        event(6.0, "raft-role", member="e2", role="leader", term=2),
        event(9.0, "process", event="resume", process="e1"),
        event(9.1, "raft-role", member="e1", role="follower", term=2),
        event(12.0, "process", event="kill", process="e2"),
        event(14.0, "raft-role", member="e3", role="leader", term=3),
    ]
    segments = [(s.start_s, s.end_s, s.label, s.paused) for s in etcd_leader_segments(events, 20.0)]
    assert segments == [(1.0, 5.0, "e1 t1", False), (5.0, 9.0, "e1 t1", True), (6.0, 12.0, "e2 t2", False), (9.0, 9.1, "e1 t1", False), (14.0, 20.0, "e3 t3", False)]


def test_lease_lanes_follow_start_stop_and_kills_per_lease():
    events = [
        event(0.0, "leader", event="candidate", lease="kube-scheduler", identity="s1", process="s1"),
        event(1.0, "leader", event="start", lease="kube-scheduler", identity="s1", process="s1"),
        event(2.0, "leader", event="start", lease="kube-controller-manager", identity="c1", process="c1"),
        event(8.0, "process", event="kill", process="s1"),
        event(10.0, "leader", event="start", lease="kube-scheduler", identity="s2", process="s2"),
        event(11.0, "leader", event="stop", lease="kube-controller-manager", identity="c1", process="c1"),
    ]
    lanes_ = lease_segments(events, 30.0)
    assert list(lanes_) == ["kube-controller-manager", "kube-scheduler"]
    assert [(s.start_s, s.end_s, s.holder) for s in lanes_["kube-scheduler"]] == [(1.0, 8.0, "s1"), (10.0, 30.0, "s2")]
    assert [(s.start_s, s.end_s, s.holder) for s in lanes_["kube-controller-manager"]] == [(2.0, 11.0, "c1")]


def test_real_cluster_polls_give_leaders_by_first_and_last_poll():
    events = [event(t, "leader", member=member, leader=leader, term=term, reachable=leader is not None) for t, member, leader, term in [(1.0, "m1", "m1", 2), (1.1, "m2", "m1", 2), (3.0, "m2", None, None), (4.0, "m2", "m2", 3), (5.0, "m1", "m2", 3)]]
    assert [(s.start_s, s.end_s, s.label) for s in polled_leader_segments(events)] == [(1.0, 1.1, "m1 t2"), (4.0, 5.0, "m2 t3")]


def test_availability_buckets_against_a_simple_oracle():
    phases = ["ok", "ok", "fail", "info", "ok", "invoke", "ok"]
    times = [0.1, 0.5, 0.9, 1.2, 3.5, 3.6, 3.9]
    events = [event(t, "client-op", phase=phase) for t, phase in zip(times, phases)]
    buckets = rate_buckets(events, ("client-op",), 1.0, 4.0)
    assert buckets == [Bucket(0.0, 2, 1, 0), Bucket(1.0, 0, 0, 1), Bucket(2.0), Bucket(3.0, 2, 0, 0)]
    figures = availability_figures(buckets, 1.0)
    oracle_lost = sum(1.0 - bucket.ok / bucket.total for bucket in buckets if bucket.total)
    assert figures["lost_s"] == pytest.approx(oracle_lost) == pytest.approx(1 / 3 + 1.0)
    assert figures["stalled_s"] == 1.0  # bucket 2 s: nothing completed between busy buckets
    assert (figures["operations"], figures["ok"], figures["worst_fraction"], figures["buckets_below_full"]) == (6, 4, 0.0, 2)
    assert rate_buckets([event(1.0, "client-op", phase="invoke")], ("client-op",), 1.0, 4.0) == []


def test_traffic_outcomes_as_kube_proxy_records_them():
    """chaoskube/node/proxy.py journals outcome ok / refused / timeout / no-endpoints."""
    assert [outcome(event(1.0, "traffic", outcome=word)) for word in ("ok", "refused", "timeout", "no-endpoints")] == ["ok", "fail", "info", "fail"]
    assert outcome(event(1.0, "client-op", phase="invoke")) is None


def test_ready_pods_count_readiness_not_phase_when_ready_is_given():
    events = [
        event(1.0, "pod-phase", namespace="d", name="a", phase="Running", ready=False),
        event(2.0, "pod-phase", namespace="d", name="a", phase="Running", ready=True),
        event(3.0, "pod-phase", pod="d/b", phase="Running"),  # as the kubelet journals it: no ready field
        event(4.0, "pod-phase", namespace="d", name="a", phase="Failed", ready=False),
    ]
    assert ready_pod_steps(events) == [(1.0, 0), (2.0, 1), (3.0, 2), (4.0, 1)]


def fake_result(tmp_path: Path, verdicts: dict[str, Verdict], faults: list[dict]) -> RunResult:
    return RunResult(
        experiment=registry.find("mesh-partition"), seed=3, out_dir=tmp_path, verdicts=verdicts, journal_sha256="cd" * 32,
        simulated_seconds=30.0, wall_seconds=0.1, faults=faults,
    )  # fmt: skip


def test_page_draws_lease_service_and_ready_pod_lanes_when_their_events_exist(tmp_path):
    events = [
        event(1.0, "leader", event="start", lease="kube-scheduler", identity="scheduler-1", process="scheduler-1"),
        event(2.0, "traffic", service="web", ok=True),
        event(2.5, "traffic", service="web", ok=False),
        event(3.0, "pod-phase", namespace="default", name="web-1", phase="Running", ready=True),
        event(4.0, "api-op", phase="ok", verb="create"),
        event(5.0, "fault", event="apply", id=1, kind="pause", target="leader:scheduler", targets=["scheduler-1"], params={}),
    ]
    text = render_html(fake_result(tmp_path, {"leader-election": Verdict(True, "one leader")}, []), events)
    found = lanes(svg_of(text))
    assert set(found) == {"lease:kube-scheduler", "service:web", "ready-pods", "availability"}
    (band,) = [group for group in svg_of(text).iter(f"{SVG}g") if group.get("class") == "fault"]
    title = band.find(f"{SVG}rect/{SVG}title").text
    assert "never healed" in title and "leader:scheduler" in title
    timeline = build_timeline(events, 30.0)
    assert timeline.bands[0].end_s is None


def test_everything_from_the_run_is_escaped(tmp_path):
    evil = '<script>alert("x")</script>'
    verdicts = {evil: Verdict(False, f"reason {evil} & more", ({"type": evil, "t": 1.0, "x\x00": "\x07"}, "plain <b>string</b>"))}
    faults = [{"id": 1, "kind": "kill", "target": f'name:"{evil}"', "targets": [evil], "params": {}, "applied_at": 1.0, "healed_at": 2.0}]
    events = [event(1.0, "fault", event="apply", id=1, kind="kill", target=f'name:"{evil}"', targets=[evil], params={}), event(2.0, "fault", event="heal", id=1, kind="kill", targets=[evil])]
    text = render_html(fake_result(tmp_path, verdicts, faults), events)
    assert "<script" not in text and "<b>" not in text
    assert "&lt;script&gt;" in text
    svg_of(text)  # still well-formed XML, control characters replaced
    page = Page(text)
    assert page.verdicts == {evil: "fail"}
    assert page.evidence_rows == {evil: 2}


# -- a real browser (slow) -------------------------------------------------------------------------


def find_chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed when missing (tests/debian.py)."""
    return require("chromium", find_chromium, "a chromium binary on PATH")


@pytest.mark.slow
def test_headless_chromium_renders_the_report_with_verdicts_and_timeline(chromium, leader_kill, tmp_path):
    url = (leader_kill.out_dir / "report.html").resolve().as_uri()
    # --no-sandbox: chromium refuses to run as root with its sandbox; a private profile
    # keeps parallel test workers apart; no network is needed (the page loads nothing).
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dumped = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=False)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = Page(dumped.stdout)
    assert dom.ids.get("verdicts") == "table" and dom.ids.get("timeline") == "svg"
    assert dom.verdicts == {"raft-safety": "pass", "linearizability": "pass", "watch": "pass", "steady-state": "pass"}
    assert {"etcd-leader", "availability"} <= {value for tag, name, value in dom.attributes if name == "data-lane"}
    shot = tmp_path / "report.png"
    taken = subprocess.run([chromium, *flags, f"--screenshot={shot}", "--window-size=1100,1400", url], capture_output=True, text=True, timeout=120, check=False)
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

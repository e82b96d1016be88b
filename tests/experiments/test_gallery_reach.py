"""Whether a run reached the broken code: the gallery counts each call of a variant's
replacement while it is applied (chaoskube/gallery.py, ``calls``), the runner records the
counts in ``metrics["broken_calls"]``, and "not caught" then says whether the run never
ran the broken code (a coverage gap) or ran it unnoticed (an oracle gap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from chaoskube import gallery
from chaoskube.experiments.campaign import _findings, _findings_lines, reach_line, reached

ROOT = Path(__file__).resolve().parents[2]


class Component:
    LIMIT = 3

    def step(self, value: int) -> int:
        return value + 1

    async def call(self, value: int) -> int:
        return value + 1

    @staticmethod
    def helper(value: int) -> int:
        return value + 1


def _broken_step(self: Component, value: int) -> int:
    return value + 2


async def _broken_call(self: Component, value: int) -> int:
    return value + 2


@pytest.fixture
def variants(monkeypatch):
    def add(name, attribute, replacement):
        monkeypatch.setitem(gallery.VARIANTS, name, gallery.Variant(name, "test", "broken on purpose", "none", "none", f"{__name__}:Component.{attribute}", replacement))

    add("t-step", "step", lambda: _broken_step)
    add("t-call", "call", lambda: _broken_call)
    add("t-helper", "helper", lambda: staticmethod(lambda value: value + 2))
    add("t-limit", "LIMIT", lambda: 99)


def test_each_call_of_a_replaced_function_coroutine_or_static_method_is_counted_and_values_are_not(variants):
    with gallery.applied(["t-step", "t-call", "t-helper", "t-limit"]):
        component = Component()
        assert gallery.calls() == {"t-call": 0, "t-helper": 0, "t-limit": None, "t-step": 0}
        assert [component.step(1), component.step(1), Component.helper(1), Component.LIMIT] == [3, 3, 3, 99]
        assert trio.run(component.call, 1) == 3
        assert Component.step.__name__ == "_broken_step"  # functools.wraps: the replacement's name
        assert gallery.calls() == {"t-call": 1, "t-helper": 1, "t-limit": None, "t-step": 2}
    assert gallery.calls() == {}
    assert [Component().step(1), Component.helper(1), Component.LIMIT, trio.run(Component().call, 1)] == [2, 2, 3, 2]


def test_counts_start_at_zero_each_time_and_an_inner_application_leaves_the_outer_counting(variants):
    with gallery.applied(["t-step"]):
        Component().step(0)
        with gallery.applied(["t-call"]), gallery.applied([]):  # a run inside a test's own application
            Component().step(0)
            assert gallery.calls() == {"t-call": 0, "t-step": 2} and gallery.calls(["t-call"]) == {"t-call": 0}
        assert gallery.calls() == {"t-step": 2}
    with gallery.applied(["t-step"]):
        assert gallery.calls() == {"t-step": 0}
    assert gallery.calls() == {}


def test_reach_in_words():
    assert gallery.reach(None) == "" and gallery.reach({"v": None}) == ""
    assert gallery.reach({"v": 0}) == "the broken code never ran (0 calls): this run did not reach it"
    assert gallery.reach({"v": 1}) == "the broken code ran 1 time"
    assert gallery.reach({"v": 1158}) == "the broken code ran 1,158 times"
    assert gallery.reach({"a": 0, "b": 2}) == "the broken code ran: a 0 times, b 2 times"


def _record(seed, calls, findings=()):
    return {"experiment": "e", "seed": seed, "broken": ["v"], "caught_by": ["api-watch"], "findings": list(findings), "replay": "", "out_dir": "/x",
            "metrics": {} if calls is None else {"broken_calls": {"v": calls}}}


def test_a_campaign_counts_the_runs_that_ran_the_broken_code_and_those_where_it_went_unnoticed():
    assert [reached(_record(1, 0)), reached(_record(1, 3)), reached(_record(1, None))] == [False, True, None]
    (item,) = _findings([_record(1, 0), _record(2, 5), _record(3, 7, ["api-watch"])])
    assert (item["runs_reaching"], item["reached_unnoticed"]) == (2, 1)
    assert reach_line(item) == "the broken code ran in 2 of 3 runs, unnoticed in 1 of them"
    assert "  - the broken code ran in 2 of 3 runs, unnoticed in 1 of them" in _findings_lines({"findings": [item]})
    (never,) = _findings([_record(1, 0), _record(2, 0)])
    assert reach_line(never).startswith("the broken code ran in 0 of 2 runs: these runs never reached it (a coverage gap")
    (uncounted,) = _findings([_record(1, None)])
    assert uncounted["runs_reaching"] is None and reach_line(uncounted) == ""


def chaoskube(*args):
    environment = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", *args], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=600)


def test_a_run_says_whether_the_checkers_missed_the_broken_code_or_the_run_never_reached_it(tmp_path):
    # Ran unnoticed: etcd-leader-isolation's rotating clients never read from the deposed
    # leader in its window (docs/checkers.md), though its ReadIndex path runs all along.
    ran = chaoskube("run", "etcd-leader-isolation", "--broken", "raft-read-index-without-quorum-check", "--seed", "1", "--out", str(tmp_path / "ran"))
    assert ran.returncode == 0, ran.stderr
    calls = json.loads((tmp_path / "ran" / "result.json").read_text())["metrics"]["broken_calls"]["raft-read-index-without-quorum-check"]
    assert calls > 0
    assert f"not caught: with raft-read-index-without-quorum-check broken on purpose every checker passed on seed 1; the broken code ran {calls:,} times" in ran.stdout
    assert f"the broken code ran {calls:,} times" in (tmp_path / "ran" / "report.md").read_text()
    # Never reached: no eviction is requested in scheduler-leader-failover.
    never = chaoskube("run", "scheduler-leader-failover", "--broken", "eviction-spend-without-precondition", "--seed", "1", "--out", str(tmp_path / "never"))
    assert never.returncode == 0, never.stderr
    assert json.loads((tmp_path / "never" / "result.json").read_text())["metrics"]["broken_calls"] == {"eviction-spend-without-precondition": 0}
    assert "the broken code never ran (0 calls): this run did not reach it (an experiment or seeds that reach it" in never.stdout


def test_a_forked_run_counts_its_boot_as_an_unforked_one_does(tmp_path):
    """The booter applies the variants and forks each run from inside them: a forked run's
    count is its boot's and its own, the same as the unforked run's (and as ``chaoskube run``'s)."""
    counts = {}
    for mode in ("forked", "whole"):
        out = tmp_path / mode
        done = chaoskube("explore", "etcd-leader-isolation", "--broken", "raft-read-index-without-quorum-check", "--seeds", "1..2", "--jobs", "1", "--out", str(out), *(["--no-fork"] if mode == "whole" else []))
        assert done.returncode == 0, done.stderr
        assert "not caught (its code ran)" in done.stderr + done.stdout
        assert "the broken code ran in 2 of 2 runs, unnoticed in 2 of them" in done.stdout
        counts[mode] = [json.loads(path.read_text())["metrics"]["broken_calls"] for path in sorted(out.glob("*/result.json"))]
    single = chaoskube("run", "etcd-leader-isolation", "--broken", "raft-read-index-without-quorum-check", "--seed", "2", "--out", str(tmp_path / "single"))
    assert single.returncode == 0, single.stderr
    assert counts["forked"] == counts["whole"] and len(counts["forked"]) == 2
    assert counts["forked"][1] == json.loads((tmp_path / "single" / "result.json").read_text())["metrics"]["broken_calls"]

"""Guided exploration without noise (issue 36): a mutated schedule stays an experiment that
applies its faults (no ``leader:`` fault where an earlier one may have left the role
leaderless), a checker a mutation left with nothing to judge is dropped from that run
instead of making it "NOT as expected", and ``--fail-fast`` stops on findings only."""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.checkers.verdict import Verdict, judged_nothing, nothing_to_judge
from chaoskube.experiments import registry
from chaoskube.experiments.campaign import CampaignResult, summarize, violation
from chaoskube.experiments.model import FaultEntry
from chaoskube.experiments.mutation import context_for, mutate, timeline_problems
from chaoskube.experiments.result import RunResult

# -- a mutant applies its faults -----------------------------------------------------------------


def _with_schedule(name: str, entries: list[dict]) -> tuple:
    experiment = registry.find(name)
    schedule = [msgspec.convert(entry, type=FaultEntry) for entry in entries]
    return experiment, msgspec.structs.replace(experiment, schedule=schedule), context_for(experiment)


# The three inconclusive mutants the issue reports, as their schedules were after mutation.
REPORTED = [
    (
        "etcd-leader-kill",  # seed 33: schedule[1] shifted to 23.99, a copy of the kill added at 24.95
        [{"at_s": 3, "kind": "kill", "target": "leader:etcd", "duration_s": 10}, {"at_s": 23.99, "kind": "kill", "target": "leader:etcd", "duration_s": 5},
         {"at_s": 24.95, "kind": "kill", "target": "leader:etcd", "duration_s": 3.08}],
    ),
    (
        "cascading-deletion-under-failover",  # seed 21: a copy of the kill added at 2.23
        [{"at_s": 3, "kind": "kill", "target": "leader:kube-controller-manager", "duration_s": 20},
         {"at_s": 2.23, "kind": "kill", "target": "leader:kube-controller-manager", "duration_s": 10.48}],
    ),
    (
        "scheduler-leader-failover",  # seed 15: schedule[1] shifted 27 -> 17.65 -> 13.30
        [{"at_s": 2, "kind": "kill", "target": "leader:kube-scheduler"}, {"at_s": 13.30, "kind": "kill", "target": "leader:kube-scheduler"}],
    ),
]


@pytest.mark.parametrize(("name", "entries"), REPORTED, ids=[name for name, _ in REPORTED])
def test_the_reported_inconclusive_mutants_are_refused(name, entries):
    experiment, mutant, context = _with_schedule(name, entries)
    assert timeline_problems(experiment, context) == []  # the catalogue's own schedule applies
    found = timeline_problems(mutant, context)
    assert found and "without a leader" in found[0], found


def test_a_leader_fault_after_the_election_time_is_accepted():
    _, mutant, context = _with_schedule("scheduler-leader-failover", [{"at_s": 2, "kind": "kill", "target": "leader:kube-scheduler"}, {"at_s": 27, "kind": "kill", "target": "leader:kube-scheduler"}])
    assert timeline_problems(mutant, context) == []
    # A fault that only delays messages leaves the leader in place.
    _, delayed, context = _with_schedule("etcd-leader-kill", [{"at_s": 3, "kind": "link-delay", "target": "leader:etcd", "duration_s": 10}, {"at_s": 4, "kind": "kill", "target": "leader:etcd", "duration_s": 5}])
    assert timeline_problems(delayed, context) == []


def test_a_majority_down_keeps_the_role_leaderless_until_its_heal_and_an_election():
    _, mutant, context = _with_schedule("etcd-leader-kill", [{"at_s": 3, "kind": "kill", "target": "majority:etcd", "duration_s": 10}, {"at_s": 14, "kind": "kill", "target": "leader:etcd", "duration_s": 5}])
    gap = context.leader_gap_s["etcd"]
    assert 14 < 13 + gap
    assert timeline_problems(mutant, context)
    _, later, _ = _with_schedule("etcd-leader-kill", [{"at_s": 3, "kind": "kill", "target": "majority:etcd", "duration_s": 10}, {"at_s": 13 + gap, "kind": "kill", "target": "leader:etcd", "duration_s": 5}])
    assert timeline_problems(later, context) == []


LEADER_EXPERIMENTS = ("etcd-leader-kill", "cascading-deletion-under-failover", "scheduler-leader-failover", "controller-manager-leader-kill")


@pytest.fixture(scope="module")
def contexts():
    return {name: (registry.find(name), context_for(registry.find(name))) for name in LEADER_EXPERIMENTS}


@settings(max_examples=80, deadline=None)
@given(name=st.sampled_from(LEADER_EXPERIMENTS), seed=st.integers(0, 2**32), rounds=st.integers(1, 3))
def test_no_mutant_adds_a_leader_fault_that_may_find_no_leader(contexts, name, seed, rounds):
    experiment, context = contexts[name]
    rng = random.Random(seed)
    current = experiment
    for _ in range(rounds):
        parent = current
        current = mutate(parent, rng, context).experiment
        assert set(timeline_problems(current, context)) <= set(timeline_problems(parent, context))


# -- a checker a mutation left nothing to judge is dropped -----------------------------------------


def _result(tmp_path: Path, *, faults_file: str | None, verdicts: dict[str, Verdict]) -> RunResult:
    experiment = msgspec.structs.replace(registry.find("etcd-leader-kill"), faults_file=faults_file)
    return RunResult(experiment=experiment, seed=1, out_dir=tmp_path, verdicts=dict(verdicts), journal_sha256="", simulated_seconds=1.0, wall_seconds=0.1)


def test_a_mutants_run_drops_a_checker_with_nothing_to_judge(tmp_path):
    verdicts = {
        "raft-safety": Verdict(True, "ok"),
        "watch": nothing_to_judge("the store produced no events to watch"),
        "linearizability": Verdict(None, "out of time"),  # a real unknown: it stays
    }
    assert judged_nothing(verdicts["watch"]) and not judged_nothing(verdicts["linearizability"])
    mutant = _result(tmp_path, faults_file=str(tmp_path / "mutant.yaml"), verdicts=verdicts)
    assert mutant.dropped_checkers == {"watch": "the store produced no events to watch"}
    assert sorted(mutant.verdicts) == ["linearizability", "raft-safety"]
    assert mutant.to_json()["dropped_checkers"] == {"watch": "the store produced no events to watch"}
    assert not mutant.as_expected  # the genuine unknown still counts

    without = _result(tmp_path, faults_file=str(tmp_path / "mutant.yaml"), verdicts={"raft-safety": Verdict(True, "ok"), "watch": nothing_to_judge("nothing")})
    assert without.as_expected and without.outcome == "as-expected"
    plain = _result(tmp_path, faults_file=None, verdicts={"raft-safety": Verdict(True, "ok"), "watch": nothing_to_judge("nothing")})
    assert plain.dropped_checkers == {} and not plain.as_expected  # the experiment's own faults: the unknown counts


# -- --fail-fast stops on findings only ------------------------------------------------------------


def _record(seed: int, verdicts: dict[str, str], **extra) -> dict:
    record = {
        "experiment": "etcd-leader-kill", "seed": seed, "out_dir": f"/tmp/x/etcd-leader-kill-seed{seed}", "replay": f"chaoskube run etcd-leader-kill --seed {seed}",
        "as_expected": all(value == "true" for value in verdicts.values()) and not extra.get("inconclusive") and not extra.get("error"),
        "checkers_as_expected": all(value == "true" for value in verdicts.values()) and not extra.get("error"),
        "verdicts": {name: {"valid": value, "reason": f"{name} said {value}", "details": {}} for name, value in verdicts.items()},
        "expected": {"outcome": "pass", "failing": [], "may_fail": ["watch"]}, "broken": [], "findings": [], "error": None, "inconclusive": False, "skipped_faults": [],
        "metrics": {}, "fault_effects": [], "availability": {}, "job_seconds": 1.0, "journal_sha256": "", "interrupted": False,
    }
    return record | extra


@pytest.mark.parametrize(
    ("record", "finding"),
    [
        (_record(1, {"raft-safety": "true"}), False),
        (_record(2, {"raft-safety": "false"}), True),  # a violation
        (_record(3, {"livelock": "false"}), True),  # the watchdog
        (_record(4, {"raft-safety": "true"}, error="ValueError: boom"), True),  # our own code crashed
        (_record(5, {"raft-safety": "unknown"}), False),  # unknown: no finding
        (_record(6, {"raft-safety": "true"}, inconclusive=True, skipped_faults=["kill leader:etcd: no process matches"]), False),
        (_record(7, {"watch": "false"}), False),  # may fail: expected
        (_record(8, {"raft-safety": "true"}, broken=["raft-vote-without-log-check"], findings=[]), False),
        (_record(9, {"raft-safety": "false"}, broken=["raft-vote-without-log-check"], findings=["raft-safety"]), True),
    ],
)
def test_a_violation_is_a_finding_and_noise_is_not(record, finding):
    assert violation(record) is finding


def test_the_summary_lists_runs_without_a_finding_apart(tmp_path):
    records = [
        _record(1, {"raft-safety": "true"}),
        _record(2, {"raft-safety": "unknown"}, guided={"mutations": ["shift schedule[1] at_s 18 -> 23.99"]}),
        _record(3, {"raft-safety": "true"}, inconclusive=True, skipped_faults=["kill leader:etcd: no process matches"]),
        _record(4, {"raft-safety": "false"}),
        _record(5, {"raft-safety": "true"}, dropped_checkers={"timing-contracts": "no timer"}, guided={"mutations": ["nemesis kinds - kill-scheduler"]}),
    ]
    summary = summarize(CampaignResult(records=records, planned=len(records)), "1..5", 1)
    assert summary["noise"] == {"runs": 2, "mutated": 1, "dropped_checkers": {"timing-contracts": 1}}
    kinds = {item["seed"]: (item["finding"], item["mutated"]) for item in summary["unexpected_runs"]}
    assert kinds == {2: (False, True), 3: (False, False), 4: (True, False)}
    from chaoskube.experiments.campaign import end_line, render_summary_markdown

    assert "1 mutant run(s) with no finding (inconclusive or unknown)" in end_line(summary)
    markdown = render_summary_markdown(summary)
    assert "seed 2 (no finding, a mutant):" in markdown and "timing-contracts (1 run(s))" in markdown

"""Coverage-guided explore (issue 16, deliverable 6): the coverage signal (a pure function
of the journal), the mutations (every mutant is a valid experiment that shares the boot),
the faults file that replays a mutant, a guided campaign's determinism, and the CLI's
checks of the new flags."""

from __future__ import annotations

import random
import subprocess

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.experiments import registry
from chaoskube.experiments.coverage import MAX_TUPLES, component, cumulative, event_kind, journal_tuples, token
from chaoskube.experiments.model import ExperimentError
from chaoskube.experiments.mutation import FIELD_MUTATORS, context_for, faults_yaml, mutate, mutate_struct, problems, with_faults
from chaoskube.faults.nemesis import NEMESIS_KINDS, NemesisSpec

# -- the coverage signal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "abstract"),
    [
        ("etcd-2", "etcd"),
        ("kube-apiserver-1", "kube-apiserver"),
        ("node-1/kube-proxy", "node/kube-proxy"),
        ("kube-scheduler-2_dda2ba5c-c1d4-49aa-9111-1a7a7f00f45b", "kube-scheduler"),
        ("node-3/kubelet/pods?spec.nodeName=node-3", "node/kubelet/pods"),
        ("kube-controller-manager-1/controllers/1/watch/12", "kube-controller-manager/controllers/#"),
        ("", "-"),
        (None, "-"),
    ],
)
def test_component_abstracts_instances_away(name, abstract):
    assert component(name) == abstract


def test_tokens_are_a_closed_vocabulary():
    assert token("PUT") == "PUT"
    assert token("pre_candidate") == "pre_candidate"
    assert token(True) == "true"
    assert token("node-12") == "node-#"  # digits masked
    assert token("3 node(s) Ready; the workload is not created yet") is None  # free text
    assert token(17) is None  # a counter
    assert token({"a": 1}) is None


def test_event_kind_keeps_what_happened_and_drops_ids_times_and_counters():
    event = {"type": "api-op", "verb": "create", "resource": "pods", "phase": "ok", "code": 201, "op_id": "1.7", "t": 3.2, "client": "kubectl", "name": "web-5db745889c-lvf9n"}
    assert event_kind(event) == "api-op verb=create resource=pods code=201 phase=ok"
    assert event_kind({"type": "steady-state", "valid": True, "reason": "3 node(s) Ready"}) == "steady-state valid=true"  # free-text reason left out


def test_state_transitions_follow_each_entity():
    events = [
        {"type": "raft-role", "member": "etcd-1", "role": "follower", "t": 0.0},
        {"type": "raft-role", "member": "etcd-2", "role": "follower", "t": 0.0},
        {"type": "raft-role", "member": "etcd-1", "role": "candidate", "t": 1.0},
        {"type": "raft-role", "member": "etcd-1", "role": "leader", "t": 1.1},
        {"type": "client-op", "client": "client-1", "op_id": 1, "f": "read", "phase": "invoke", "t": 2.0},
        {"type": "client-op", "client": "client-2", "op_id": 1, "f": "read", "phase": "invoke", "t": 2.0},
        {"type": "client-op", "client": "client-1", "op_id": 1, "f": "read", "phase": "info", "t": 2.5},
    ]
    tuples, dropped = journal_tuples(events)
    assert dropped == 0
    assert ("etcd", "raft-role role=candidate", "follower -> candidate") in tuples
    assert ("etcd", "raft-role role=leader", "candidate -> leader") in tuples
    assert ("etcd", "raft-role role=follower", "none -> follower") in tuples
    assert ("client", "client-op f=read phase=info", "invoke -> info") in tuples
    assert len([item for item in tuples if item[0] == "client"]) == 2  # the two invokes are one tuple


def test_events_under_a_fault_are_another_tuple_and_network_sends_are_skipped():
    events = [
        {"type": "send", "src": "a", "dst": "b", "id": 1, "t": 0.0},
        {"type": "deliver", "src": "a", "dst": "b", "id": 1, "t": 0.1},
        {"type": "watch-event", "member": "etcd-1", "event": "PUT", "t": 1.0},
        {"type": "fault", "event": "apply", "id": 1, "kind": "kill", "t": 2.0},
        {"type": "watch-event", "member": "etcd-1", "event": "PUT", "t": 3.0},
        {"type": "fault", "event": "heal", "id": 1, "kind": "kill", "t": 4.0},
        {"type": "watch-event", "member": "etcd-1", "event": "PUT", "t": 5.0},
    ]
    tuples, _ = journal_tuples(events)
    kinds = {item[1] for item in tuples}
    assert "watch-event event=PUT" in kinds and "watch-event event=PUT +fault" in kinds
    assert not any(item[1].startswith(("send", "deliver")) for item in tuples)
    assert ("kill", "fault kind=kill event=apply", "none -> apply") in tuples
    assert ("kill", "fault kind=kill event=heal", "apply -> heal") in tuples


def test_the_signal_is_bounded_and_counts_what_it_leaves_out():
    events = [{"type": f"kind-{index}", "member": "etcd-1", "t": 0.0} for index in range(50)]
    tuples, dropped = journal_tuples(events, max_tuples=10)
    assert len(tuples) == 10 and dropped == 40
    # Ids, times and counters never make a new tuple: 1,000 writes of distinct values are a handful.
    writes = [{"type": "client-op", "client": f"client-{i % 5}", "op_id": i, "f": "write", "phase": phase, "value": i, "t": i / 10} for i in range(1000) for phase in ("invoke", "ok")]
    tuples, _ = journal_tuples(writes)
    assert len(tuples) == 2 and MAX_TUPLES >= 10_000


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["raft-role", "process", "watch-event", "fault", "drop"]),
                "member": st.sampled_from(["etcd-1", "etcd-2"]),
                "role": st.sampled_from(["follower", "leader"]),
                "event": st.sampled_from(["apply", "heal", "kill", "start"]),
                "id": st.integers(1, 3),
                "t": st.floats(0, 100),
            }
        ),
        max_size=40,
    )
)
def test_the_signal_is_a_pure_function_of_the_events(events):
    assert journal_tuples(events) == journal_tuples([dict(event) for event in events])
    tuples, dropped = journal_tuples(events)
    assert dropped == 0 and len(tuples) <= len(events)
    assert all(isinstance(part, str) and len(part) < 200 for item in tuples for part in item)


def test_cumulative_is_the_union_curve():
    assert cumulative([{1, 2}, {2}, {3}, set()]) == [2, 2, 3, 3]


# -- mutations -------------------------------------------------------------------------------------

MUTATED = ("etcd-leader-kill", "etcd-failover-under-kubernetes", "random-nemesis", "mesh-partition", "node-drain-with-pdb")


@pytest.fixture(scope="module")
def catalogue():
    return {name: (registry.find(name), context_for(registry.find(name))) for name in MUTATED}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(MUTATED), seed=st.integers(0, 2**32), rounds=st.integers(1, 4))
def test_every_mutant_is_a_valid_experiment_that_shares_the_boot(catalogue, name, seed, rounds):
    experiment, context = catalogue[name]
    rng = random.Random(seed)
    current = experiment
    for _ in range(rounds):
        mutant = mutate(current, rng, context)
        assert problems(mutant.experiment) == [], mutant.steps
        assert (mutant.experiment.cluster, mutant.experiment.workload, mutant.experiment.phases, mutant.experiment.checkers, mutant.experiment.broken) == (
            experiment.cluster, experiment.workload, experiment.phases, experiment.checkers, experiment.broken,
        )  # fmt: skip
        for entry in mutant.experiment.schedule:
            assert 0 <= entry.at_s <= experiment.phases.faults_s
            assert entry.clip_to_phase or entry.duration_s is None or entry.at_s + entry.duration_s <= experiment.phases.faults_s + 1e-9
        current = mutant.experiment


def test_mutations_are_a_function_of_the_generator(catalogue):
    experiment, context = catalogue["etcd-failover-under-kubernetes"]
    first = [mutate(experiment, random.Random(seed), context) for seed in range(20)]
    again = [mutate(experiment, random.Random(seed), context) for seed in range(20)]
    assert first == again
    assert len({msgspec.json.encode(mutant.experiment.schedule) for mutant in first}) > 10  # they do differ
    assert all(mutant.steps for mutant in first)


def test_retargets_aim_at_the_system_not_the_harness(catalogue):
    _, context = catalogue["etcd-leader-kill"]
    targets = context.targets()
    assert "leader:etcd" in targets and "name:etcd-2" in targets
    assert not any(word in target for target in targets for word in ("probe", "watcher", "client"))


def test_nemesis_fields_mutate_generically_and_stay_valid():
    spec = NemesisSpec(kinds=["kill-etcd-leader", "pause-etcd"], count=4, window_s=30.0)
    rng = random.Random(3)
    seen = set()
    for _ in range(200):
        found = mutate_struct(rng, spec, {"kinds": sorted(NEMESIS_KINDS)})
        if found is None:
            continue
        changed, what = found
        assert isinstance(changed, NemesisSpec) and changed != spec, what
        seen.add(what.split()[0])
    assert {"kinds", "count", "window_s", "seed_offset"} <= seen
    assert set(FIELD_MUTATORS) >= {"schedule", "nemesis"}


def test_an_experiment_without_room_for_change_comes_back_valid():
    import dataclasses

    experiment = registry.find("etcd-leader-kill")
    context = dataclasses.replace(context_for(experiment), processes=())  # nothing to retarget to
    for seed in range(10):
        mutant = mutate(experiment, random.Random(seed), context, stack=1)
        assert problems(mutant.experiment) == [] and not any(step.startswith("retarget") for step in mutant.steps)


# -- the faults file -------------------------------------------------------------------------------


def test_a_faults_file_round_trips_a_mutant(tmp_path, catalogue):
    experiment, context = catalogue["random-nemesis"]
    mutant = mutate(experiment, random.Random(11), context, stack=3)
    path = tmp_path / "faults.yaml"
    path.write_text(faults_yaml(mutant.experiment, ["a comment", *mutant.steps]))
    again = with_faults(experiment, path)
    assert (again.schedule, again.nemesis) == (mutant.experiment.schedule, mutant.experiment.nemesis)
    assert again.faults_file == str(path.resolve())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("schedule: [{at_s: 1, kind: kill, target: 'leader:etcd', duration_s: 500}]", "outlasts the fault phase"),
        ("schedule: [{at_s: 1, kind: kill, target: 'name:etcd-9', duration_s: 5}]", "no process named 'etcd-9'"),
        ("schedule: [{at_s: 1, kind: kil, target: 'leader:etcd'}]", "kil"),
        ("shedule: []", "field `shedule`"),
        ("- 1", "not a mapping"),
        ("nemesis: {kinds: [nope]}", "unknown nemesis kind"),
    ],
)
def test_a_bad_faults_file_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as error:
        with_faults(registry.find("etcd-leader-kill"), path)
    assert message in str(error.value) and str(path) in str(error.value) and "\n" not in str(error.value)


# -- a guided campaign -----------------------------------------------------------------------------


def _fingerprints(records):
    return [(record["seed"], record["journal_sha256"], tuple(record["guided"]["mutations"]), record["guided"]["parent"], record["guided"]["new_tuples"]) for record in records]


@pytest.mark.slow  # eight runs (about a minute on a loaded 2-core machine)
def test_a_guided_campaign_is_the_same_with_any_jobs_and_replays(tmp_path):
    from chaoskube.experiments.campaign import plan_jobs, replay_run
    from chaoskube.experiments.guided import run_guided_campaign

    experiment = registry.find("etcd-leader-kill")
    runs = []
    for index, (workers, fork) in enumerate(((2, True), (1, False))):  # two processes forked from one boot; one, each run whole
        jobs = plan_jobs([("etcd-leader-kill", experiment)], [1, 2, 3, 4], tmp_path / f"c{index}")
        result, states = run_guided_campaign(jobs, workers, generation_size=2, fork=fork)
        assert len(result.records) == 4 and not any(record.get("error") for record in result.records)
        runs.append((_fingerprints(result.records), states["etcd-leader-kill"].curve))
    assert runs[0] == runs[1]
    fingerprints, curve = runs[0]
    assert [item[0] for item in fingerprints] == [1, 2, 3, 4] and curve == sorted(curve)
    mutants = [item for item in fingerprints if item[2]]
    assert mutants, fingerprints  # generation 1 ran mutants
    seed = mutants[0][0]
    faults = (tmp_path / "c0" / "mutants" / f"etcd-leader-kill-seed{seed}.yaml").read_text()
    assert f"# replay: chaoskube run etcd-leader-kill --seed {seed} --faults {tmp_path / 'c0' / 'mutants'}" in faults
    outcome = replay_run(tmp_path / "c1" / f"etcd-leader-kill-seed{seed}")  # unforked, from its --faults file
    assert outcome.match, outcome


# -- the CLI ---------------------------------------------------------------------------------------


@pytest.fixture
def in_process(capsys):
    from loguru import logger

    from chaoskube.experiments.cli import main

    def call(*args):
        with pytest.raises(SystemExit) as exited:
            main([str(arg) for arg in args])
        logger.remove()
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, exited.value.code, captured.out, captured.err)

    return call


def test_the_new_flags_are_checked_in_one_line(tmp_path, in_process):
    bad = tmp_path / "bad.yaml"
    bad.write_text("schedule: [{at_s: 1, kind: kill, target: 'name:etcd-9'}]")
    old = tmp_path / "old-campaign"
    old.mkdir()
    (old / "summary.json").write_text('{"seeds": "1..2"}')
    cases = [
        (["explore", "etcd-leader-kill", "--seeds", "1", "--guided", "--dask", "local:1"], "--dask"),
        (["explore", "etcd-leader-kill", "--seeds", "1", "--generation", "4"], "give --guided too"),
        (["explore", "etcd-leader-kill", "--seeds", "1", "--guided", "--generation", "0"], "--generation"),
        (["explore", "etcd-leader-kill", "--seeds", "1", "--baseline", str(tmp_path / "nowhere")], "no summary.json"),
        (["explore", "etcd-leader-kill", "--seeds", "1", "--baseline", str(old)], "records no coverage"),
        (["run", "etcd-leader-kill", "--faults", str(bad)], "no process named 'etcd-9'"),
        (["run", "etcd-leader-kill", "--faults", str(tmp_path / "missing.yaml")], "cannot read"),
    ]
    for args, message in cases:
        result = in_process(*args)
        assert result.returncode == 2, (args, result)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, result.stderr)


def test_line_coverage_without_coverage_py_is_one_line(in_process, monkeypatch):
    from chaoskube.experiments import coverage

    monkeypatch.setattr(coverage, "line_coverage_available", lambda: "--line-coverage needs coverage.py: pip install 'chaoskube[coverage]' (or pip install coverage)")
    result = in_process("explore", "etcd-leader-kill", "--seeds", "1", "--line-coverage")
    assert result.returncode == 2 and "needs coverage.py" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_summary_plots_coverage_beside_the_baseline():
    from chaoskube.experiments.campaign import _coverage_html, _coverage_lines, coverage_rows, with_baseline

    guided = {"e": {"mode": "guided", "runs": 4, "tuples": 70, "curve": [60, 62, 66, 70], "lines": None, "lines_curve": None, "corpus": [{"seed": 1, "new": 60}, {"seed": 3, "new": 4}]}}
    plain = {"e": {"mode": "plain", "runs": 6, "tuples": 64, "curve": [60, 61, 61, 62, 63, 64]}, "other": {"mode": "plain", "curve": [1]}}
    summary = {"coverage": with_baseline(guided, plain)}
    assert summary["coverage"]["e"]["baseline"]["curve"] == [60, 61, 61, 62, 63, 64] and "other" not in summary["coverage"]
    (row,) = coverage_rows(summary)
    assert (row["tuples"], row["baseline_tuples"], row["ratio"], row["corpus"]) == (70, 62, round(70 / 62, 3), 2)  # the baseline after as many runs
    assert any("| e | guided | 4 | 70 |" in line and "| 62 | 1.129 |" in line for line in _coverage_lines(summary))
    page = _coverage_html(summary)
    assert page.count("<polyline") == 2 and "plain (--baseline): 64" in page and "guided: 70" in page
    assert _coverage_html({"coverage": with_baseline(guided, None)}).count("<polyline") == 1

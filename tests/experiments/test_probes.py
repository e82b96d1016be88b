"""Probes and a steady-state hypothesis in experiment files (experiments/probes.py).

Pure parts by table (tolerances, field paths, the judging of each Litmus mode from a
journal), then runs: a kubernetes experiment whose probes hold (every mode evaluated where
its mode says), and one whose probes and hypothesis fail, with the failing evaluations as
evidence; and the loader's checks.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import yaml

from chaoskube.experiments import registry
from chaoskube.experiments.model import ExperimentError
from chaoskube.experiments.probes import Probe, SteadyStateHypothesis, Tolerance, judge_hypothesis_before, judge_probe, resolve_path, within
from chaoskube.experiments.runner import run_experiment

# ------------------------------------------------------------------------- tolerances
TOLERANCES = [
    # (value, tolerance, holds)
    (3, Tolerance(min=3), True),
    (2, Tolerance(min=3), False),
    (3.5, Tolerance(min=1, max=3), False),
    ("True", Tolerance(equals="True"), True),
    ("False", Tolerance(equals="True"), False),
    (True, Tolerance(equals=1), False),  # a bool is not a number here (Go and Python disagree; we say no)
    (1, Tolerance(equals=1.0), True),
    ("ok", Tolerance(one_of=["ok", "slow"]), True),
    ("timeout", Tolerance(one_of=["ok", "slow"]), False),
    ("nginx:1.27", Tolerance(regex=r"nginx:1\.2[0-9]"), True),
    ("nginx:1.27-alpine", Tolerance(regex=r"nginx:1\.2[0-9]"), False),  # the whole value must match
    (None, Tolerance(min=0), False),
    ("3", Tolerance(min=0), False),
    (None, Tolerance(), False),  # empty: the field is set
    (0, Tolerance(), True),
    (True, Tolerance(regex="true"), True),
]


@pytest.mark.parametrize(("value", "tolerance", "holds"), TOLERANCES)
def test_tolerances(value, tolerance, holds):
    ok, why = within(value, tolerance)
    assert ok is holds and (bool(why) is not holds), (value, tolerance, why)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("status.readyReplicas", 3),
        ("spec.template.spec.containers[0].image", "nginx:1.27"),
        ("spec.template.spec.containers[1].image", None),
        ("status.missing.deeper", None),
        ("metadata.labels.app", "web"),
        ("spec.replicas[0]", None),
        ("status.conditions[type=Ready].status", "True"),
        ("status.conditions[type=Available].reason", "MinimumReplicasAvailable"),
        ("status.conditions[type=Progressing].status", None),
        ("status.conditions[status=True].type", "Ready"),
    ],
)
def test_field_paths(path, value):
    conditions = [{"type": "Ready", "status": "True"}, {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]
    document = {"metadata": {"labels": {"app": "web"}}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "nginx:1.27"}]}}}, "status": {"readyReplicas": 3, "conditions": conditions}}
    assert resolve_path(document, path) == value


def probe(**fields) -> Probe:
    return msgspec.convert(fields, type=Probe)


def test_each_kind_has_the_default_tolerance_a_user_expects():
    assert probe(name="a", http={"service": "web"}).effective_tolerance() == Tolerance(equals="ok")
    assert probe(name="a", count={"resource": "pods"}).effective_tolerance() == Tolerance(min=1)
    assert probe(name="a", object={"resource": "deployments", "name": "web", "condition": "Available"}).effective_tolerance() == Tolerance(equals="True")
    assert probe(name="a", object={"resource": "deployments", "name": "web"}).effective_tolerance() == Tolerance(equals=True)
    assert probe(name="a", object={"resource": "deployments", "name": "web", "field": "status.readyReplicas"}).effective_tolerance() == Tolerance()


# ------------------------------------------------------------------------- judging (pure)
def events(*probes: tuple[float, str, str, bool], faults_at: float = 10.0, healed_at: float = 20.0) -> list[dict]:
    journal = [{"t": 0.0, "type": "phase", "name": "setup"}, {"t": faults_at, "type": "phase", "name": "faults"}, {"t": healed_at, "type": "phase", "name": "heal"}]
    journal += [{"t": t, "type": "user-probe", "probe": name, "at": at, "ok": ok, "value": 1, "reason": "r", "attempts": 1} for t, name, at, ok in probes]
    return sorted(journal, key=lambda event: event["t"])


MODES = [
    # (mode, evaluations, valid)
    ("SOT", [(10.0, "SOT", True)], True),
    ("SOT", [(10.0, "SOT", False), (30.0, "EOT", True)], False),
    ("EOT", [(10.0, "SOT", False), (30.0, "EOT", True)], True),  # an EOT probe does not judge the start
    ("Edge", [(10.0, "SOT", True), (30.0, "EOT", True)], True),
    ("Edge", [(10.0, "SOT", True)], None),  # the run ended before the end of the test
    ("Edge", [(10.0, "SOT", True), (30.0, "EOT", False)], False),
    ("Continuous", [(5.0, "continuous", True), (15.0, "continuous", True)], True),
    ("Continuous", [(5.0, "continuous", True), (15.0, "continuous", False)], False),
    ("Continuous", [], None),
    ("OnChaos", [(12.0, "onchaos", True), (14.0, "onchaos", True)], True),
    ("OnChaos", [(12.0, "onchaos", False)], False),
    ("OnChaos", [(5.0, "continuous", False)], None),  # another mode's evaluations do not count
]


@pytest.mark.parametrize(("mode", "evaluations", "valid"), MODES)
def test_each_litmus_mode_is_judged_from_the_journal(mode, evaluations, valid):
    verdict = judge_probe(probe(name="p", count={"resource": "pods"}, mode=mode), events(*[(t, "p", at, ok) for t, at, ok in evaluations]))
    assert verdict.valid is valid, verdict
    if valid is False:
        assert verdict.evidence and all(not item["ok"] for item in verdict.evidence)


def test_the_hypothesis_must_hold_before_the_faults():
    hypothesis = msgspec.convert({"title": "shop", "probes": [{"name": "a", "count": {"resource": "pods"}}, {"name": "b", "count": {"resource": "pods"}}]}, type=SteadyStateHypothesis)
    held = events((10.0, "a", "steady-state", True), (10.1, "b", "steady-state", True))
    for event in held:
        if event["type"] == "user-probe":
            event["before"] = True
    assert judge_hypothesis_before(hypothesis, held).valid is True
    [probe_event for probe_event in held if probe_event["type"] == "user-probe"][-1]["ok"] = False
    assert judge_hypothesis_before(hypothesis, held).valid is False
    assert judge_hypothesis_before(hypothesis, events()).valid is None


# ------------------------------------------------------------------------- runs
DEMO = {
    "name": "probes-demo",
    "title": "Probes and a steady-state hypothesis around a node power-off",
    "description": "Every kind of probe in every mode, around the power-off of a node.",
    "source": "Litmus probes: https://docs.litmuschaos.io/docs/concepts/probes",
    "system": "kubernetes",
    "cluster": {"etcdMembers": 3, "apiServers": 1, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3}]},
    "workload": {"deployments": [{"name": "web", "replicas": 3, "service": True}]},
    "phases": {"setup_s": 30, "warmup_s": 2, "faults_s": 20, "recovery_s": 60, "settle_s": 2},
    "schedule": [{"at_s": 2, "kind": "kill", "target": "random:node", "duration_s": 10}],
    "checkers": ["steady-state"],
    "steady_state": {
        "title": "the shop answers and keeps its replicas",
        "probes": [
            {"name": "web-answers", "http": {"service": "web", "port": 80}},
            {"name": "web-ready", "object": {"resource": "deployments", "name": "web", "field": "status.readyReplicas"}, "tolerance": {"min": 3}},
        ],
    },
    "probes": [
        {"name": "web-available", "object": {"resource": "deployments", "name": "web", "condition": "Available"}, "mode": "Edge"},
        {"name": "pods-running", "count": {"resource": "pods", "selector": "app=web", "field_selector": "status.phase=Running"}, "tolerance": {"min": 2}, "mode": "OnChaos", "interval_s": 2},
        # While node-2 is off, its pod stays an endpoint (until the node is healed) and
        # refuses; every attempt picks an endpoint anew, as kube-proxy does per connection,
        # so a client that retries gets through: six attempts fail together 1 time in 729.
        {"name": "answers", "http": {"service": "default/web"}, "mode": "Continuous", "interval_s": 1, "attempts": 6, "retry_s": 0.5},
        {"name": "image", "object": {"resource": "deployments", "name": "web", "field": "spec.template.spec.containers[0].image"}, "tolerance": {"regex": "nginx:.*"}, "mode": "SOT"},
        {"name": "node-3-ready", "object": {"resource": "nodes", "name": "node-3", "condition": "Ready"}, "mode": "EOT"},
    ],
}


def write(tmp_path: Path, document: dict) -> Path:
    path = tmp_path / f"{document['name']}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("probes")
    return run_experiment(registry.load_experiment(write(tmp, DEMO)), 1, tmp / "run")


def test_probes_are_checkers_and_hold_in_every_mode(demo):
    assert demo.experiment.checkers == ["steady-state", "probe:web-available", "probe:pods-running", "probe:answers", "probe:image", "probe:node-3-ready"]
    summary = {name: (verdict.valid, verdict.details.get("evaluations")) for name, verdict in demo.verdicts.items()}
    assert all(valid for valid, _ in summary.values()), {name: demo.verdicts[name].reason for name in demo.verdicts}
    assert summary["probe:web-available"][1] == 2 and summary["probe:image"][1] == 1 and summary["probe:node-3-ready"][1] == 1
    assert summary["probe:pods-running"][1] >= 8, "every 2 s through the 20 s fault phase"
    assert summary["probe:answers"][1] >= 20, "every second from the workload's start to its end"
    assert demo.as_expected


def test_each_mode_evaluates_in_its_window(demo):
    journal = [event for event in demo_events(demo)]
    phases = {event["name"]: event["t"] for event in journal if event["type"] == "phase"}
    probes = [event for event in journal if event["type"] == "user-probe"]
    onchaos = [event["t"] for event in probes if event["at"] == "onchaos"]
    assert onchaos and phases["faults"] <= min(onchaos) and max(onchaos) <= phases["heal"]
    sot = [event["t"] for event in probes if event["at"] == "SOT"]
    eot = [event["t"] for event in probes if event["at"] == "EOT"]
    assert sot and max(sot) <= min(event["t"] for event in journal if event["type"] == "fault"), "SOT before the first fault"
    assert eot and min(eot) >= phases["stop-workload"] >= phases["recovered"] and max(eot) <= phases["check"]
    before = [event for event in probes if event["at"] == "steady-state" and event.get("before")]
    assert {event["probe"] for event in before} == {"web-answers", "web-ready"}


def demo_events(result):
    from chaoskube.sim import read_journal

    return list(read_journal(result.out_dir / "journal.jsonl"))


def test_failing_probes_and_hypothesis_show_their_evaluations(tmp_path):
    document = yaml.safe_load(yaml.safe_dump(DEMO))
    document["name"] = "probes-failing"
    document["steady_state"]["probes"][1]["tolerance"] = {"min": 4}  # never 4 ready replicas
    document["probes"][2]["tolerance"] = {"equals": "timeout"}  # it answers ok
    document["probes"] = document["probes"][2:3]
    document["phases"]["recovery_s"] = 10
    result = run_experiment(registry.load_experiment(write(tmp_path, document)), 1, tmp_path / "run")
    steady = result.verdicts["steady-state"]
    assert steady.valid is False and "did not hold before the faults: web-ready: 3 is below 4" in steady.reason
    answers = result.verdicts["probe:answers"]
    assert answers.valid is False and answers.reason.startswith("Continuous probe 'answers' failed ")
    assert answers.evidence and answers.evidence[0]["value"] == "ok" and answers.evidence[0]["reason"] == "'ok' is not 'timeout'"
    assert "### probe:answers: the shortest history that shows it" in (tmp_path / "run" / "report.md").read_text()
    assert not result.as_expected


def test_a_run_without_probes_journals_as_before(tmp_path):
    """Probes cost nothing when an experiment has none: no probes process, no events."""
    result = run_experiment(registry.find("node-failure"), 1, tmp_path / "run")
    assert not any(event["type"] == "user-probe" or (event["type"] == "process" and event.get("process") == "probes") for event in demo_events(result))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda doc: doc["probes"].append(dict(doc["probes"][0])), "names two probes"),
        (lambda doc: doc.update(system="etcd", cluster={}, workload={}, schedule=[], checkers=["steady-state"]), "has nothing to probe"),
        (lambda doc: doc["probes"][0]["object"].update(resource="deploymentz"), "unknown resource 'deploymentz'"),
        (lambda doc: doc["probes"][1]["count"].update(selector="app in (web"), "`selector`"),
        (lambda doc: doc["steady_state"]["probes"][0].update(mode="Edge"), "a steady-state probe has no `mode`"),
        (lambda doc: doc.update(expected={"outcome": "fail", "failing": ["probe:nope"]}), "'probe:nope' is not one of this experiment's checkers"),
    ],
)
def test_the_loader_checks_probes(tmp_path, edit, message):
    document = yaml.safe_load(yaml.safe_dump(DEMO))
    edit(document)
    with pytest.raises(ExperimentError, match=message.replace("(", r"\(").replace(")", r"\)").replace("`", "`")):
        registry.load_experiment(write(tmp_path, document))


def test_an_expected_probe_failure_can_be_declared(tmp_path):
    document = yaml.safe_load(yaml.safe_dump(DEMO))
    document["name"] = "probes-expected"
    document["probes"] = [{"name": "never-four", "count": {"resource": "pods", "selector": "app=web"}, "tolerance": {"min": 4}, "mode": "SOT"}]
    document["expected"] = {"outcome": "fail", "failing": ["probe:never-four"], "failure_mode": "three replicas, not four"}
    experiment = registry.load_experiment(write(tmp_path, document))
    assert "probe:never-four" in experiment.checkers

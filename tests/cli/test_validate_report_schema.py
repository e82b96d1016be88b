"""``chaoskube validate``, ``report``, ``schema`` and ``mark-fixed``, as a user runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from chaoskube.experiments import registry
from chaoskube.experiments.schema import SHIPPED, experiment_schema, schema_bytes
from tests.cli.test_cli import ROOT, chaoskube


# =========================================================================== validate
def test_validate_lists_every_problem_with_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: ../escape\ntitle: t\ndescription: d\nsource: s\nsystem: kubernetes\n"
        "checkers: [steady-state, psychic]\nphases: {faults_s: 20}\n"
        "schedule:\n  - {at_s: 1, kind: kill, target: 'zone:zone-x', duration_s: 60}\n  - {at_s: 1, kind: kill, target: 'leader:node'}\n"
    )
    result = chaoskube("validate", "mesh-partition", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip() == "chaoskube: error: 5 problem(s) in 1 of 2 file(s)"
    lines = result.stdout.splitlines()
    assert lines[0].endswith("mesh-partition.yaml: valid (system mesh, 3 checker(s), 4 scheduled fault(s))")
    problems = lines[1:]
    assert len(problems) == 5 and all(line.startswith(f"{bad}: field `") for line in problems), problems
    for fragment in ("field `name`", "field `schedule[0].duration_s` = 60 outlasts the fault phase", "field `checkers[1]`: unknown checker 'psychic'", "field `schedule[0].target`: zone:zone-x: no zone 'zone-x'", "field `schedule[1].target`: leader:node"):
        assert any(fragment in line for line in problems), (fragment, problems)


def test_validate_accepts_the_whole_catalogue():
    result = chaoskube("validate", *registry.names())
    assert result.returncode == 0 and len(result.stdout.splitlines()) == len(registry.names()), result.stdout + result.stderr


# =========================================================================== schema
def test_the_shipped_schema_is_the_one_the_model_generates():
    assert SHIPPED.read_bytes() == schema_bytes(), "run: python -c 'from chaoskube.experiments.schema import *; SHIPPED.write_bytes(schema_bytes())'"
    assert chaoskube("schema").stdout.encode() == schema_bytes()


def test_every_catalogue_experiment_validates_against_the_schema():
    validator = jsonschema.Draft202012Validator(experiment_schema())
    jsonschema.Draft202012Validator.check_schema(experiment_schema())
    for name, path in registry.catalog_paths().items():
        errors = [error.message for error in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, (name, errors[:3])


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda doc: doc["schedule"][0].update(kind="explode"), "'explode' is not one of"),
        (lambda doc: doc["schedule"][0].update(target="etcd"), "does not match"),
        (lambda doc: doc.update(colour="blue"), "Additional properties are not allowed"),
        (lambda doc: doc.update(system="zookeeper"), "'zookeeper' is not one of"),
        (lambda doc: doc["cluster"].update(members="three"), "'three' is not of type 'integer'"),
        (lambda doc: doc.update(checkers=["raft-safety", "psychic"]), "'psychic'"),
        (lambda doc: doc.update(seed=2**64), "18446744073709551616 is not valid under any of the given schemas"),
        (lambda doc: doc.update(broken=["no-such-bug"]), "'no-such-bug' is not one of"),
        (lambda doc: doc.update(probes=[{"name": "p", "count": {"resource": "pods"}}]), "is expected to be empty"),
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(edit, fragment):
    document = yaml.safe_load((registry.CATALOG / "etcd-leader-kill.yaml").read_text())
    edit(document)
    messages = [error.message for error in jsonschema.Draft202012Validator(experiment_schema()).iter_errors(document)]
    assert any(fragment in message for message in messages), messages


def test_the_schema_is_packaged_with_the_catalogue():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"schema/*.json"' in text and SHIPPED.parent.name == "schema"


# =========================================================================== report
@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "campaign"
    result = chaoskube("explore", "etcd-lost-fsync", "--seeds", "1..2", "--jobs", "2", "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_report_renders_a_run_again_from_its_journal_and_result(campaign, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(campaign / "etcd-lost-fsync-seed1", run)
    before = {name: (run / name).read_bytes() for name in ("report.md", "report.html", "junit.xml")}
    for name in before:
        (run / name).unlink()
    result = chaoskube("report", str(run))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"wrote {run / 'report.md'}")
    for name, data in before.items():
        assert (run / name).read_bytes() == data, f"{name} differs when made again"


def test_report_merges_runs_into_one_summary(campaign, tmp_path):
    single = tmp_path / "single"
    assert chaoskube("run", "mesh-partition", "--seed", "3", "--out", str(single)).returncode == 0
    out = tmp_path / "merged"
    result = chaoskube("report", str(campaign), str(single), "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [(run["experiment"], run["seed"]) for run in summary["runs"]] == [("etcd-lost-fsync", 1), ("etcd-lost-fsync", 2), ("mesh-partition", 3)]
    assert summary["outcome"] == "as-expected" and summary["merged_from"] == [str(campaign), str(single)]
    links = {item["report"] for item in summary["violations"]}
    assert links and all((out / link).is_file() for link in links), links
    assert "as-expected: 3 of 3 runs as expected" in result.stdout


def test_report_on_a_campaign_directory_rewrites_its_summary(campaign):
    before = json.loads((campaign / "summary.json").read_text())
    result = chaoskube("report", str(campaign))
    assert result.returncode == 0, result.stdout + result.stderr
    after = json.loads((campaign / "summary.json").read_text())
    assert [run["journal_sha256"] for run in after["runs"]] == [run["journal_sha256"] for run in before["runs"]]
    assert after["outcome"] == before["outcome"] and after["violations"] == before["violations"]


# =========================================================================== mark-fixed
MACHINES = """\
from chaoskube.examples.machine import PdbGuardStories


class GuardStories(PdbGuardStories):
    guard_fixed = {fixed}
"""


#: A seed on which the buggy pdb-guard's race shows in two steps (about one seed in five:
#: which list arrives first after the restart depends on the task order the seed draws, and
#: moves whenever the cluster starts other processes; seed 0 stopped showing it when the
#: cluster gained its bootstrap StorageClass and the workload controllers; seed 3 when the
#: garbage collector came to watch every kind; seed 6 when the API servers came to record
#: Events, managedFields and ClusterIPs; seed 17 when the pvc/pv-protection controllers joined
#: and NamespaceLifecycle learned its live lookup; the seeds that show it now: 6, 19, 24).
SAVED_SEED = 19


def example(project: Path, *, fixed: bool) -> Path:
    """A user's project: a module with a machine (the controller buggy or fixed), and a
    saved failing example of it under .chaoskube/failures, as the plugin saves one."""
    (project / "guard_machines.py").write_text(MACHINES.format(fixed=fixed))
    path = project / ".chaoskube" / "failures" / "test_guard" / "runTest.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "name": "runTest", "title": "pdb-guard deletes a live Deployment's guard after a restart", "description": "A saved Hypothesis example.",
        "source": "https://hypothesis.readthedocs.io/en/latest/stateful.html", "system": "hypothesis", "seed": SAVED_SEED, "cluster": {},
        "workload": {"machine": "guard_machines:GuardStories", "import_path": "../../..", "steps": [["create_deployment", {"name": "web", "replicas": 1}], ["restart_guard", {}]]},
        "checkers": ["steps"],  # what the example judged (the plugin drops the checkers with nothing to judge)
        "expected": {"outcome": "fail", "failing": ["steps"], "failure_mode": "pdb-guard promise: guard web-guard was deleted"},
    }, sort_keys=False))  # fmt: skip
    return path


def test_a_saved_example_replays_from_anywhere_and_mark_fixed_flips_it_once_fixed(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    path = example(project, fixed=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    replayed = chaoskube("run", str(path), "--out", str(tmp_path / "run"), cwd=elsewhere)  # no PYTHONPATH to the project
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # it fails, as expected
    still = chaoskube("mark-fixed", str(path), cwd=elsewhere)
    assert still.returncode == 1 and "still failing: steps still fails: " in still.stdout and "pdb-guard promise" in still.stdout
    assert registry.load_experiment(path).expected.outcome == "fail", "left alone"
    (project / "guard_machines.py").write_text(MACHINES.format(fixed=True))  # the bug is fixed
    result = chaoskube("mark-fixed", str(path), cwd=elsewhere)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"marked {path} expected: pass — every checker passed: ")
    marked = registry.load_experiment(path)
    assert marked.expected.outcome == "pass" and not marked.expected.failing
    assert "convergence" in marked.checkers, "the fixed example reaches the liveness phase: judged too"
    assert f"Fixed (chaoskube mark-fixed, seed {SAVED_SEED}" in marked.description and "it failed steps (pdb-guard promise" in marked.description
    again = chaoskube("run", str(path), "--out", str(tmp_path / "again"), cwd=elsewhere)
    assert again.returncode == 0, again.stdout + again.stderr
    (project / "guard_machines.py").write_text(MACHINES.format(fixed=False))  # a regression: CI goes red
    assert chaoskube("run", str(path), "--out", str(tmp_path / "regressed"), cwd=elsewhere).returncode == 1


def test_a_user_package_named_faults_or_experiments_does_not_collide(tmp_path):
    """A project with tests/faults/__init__.py and experiments/__init__.py of its own: the
    toolkit's packages are chaoskube.faults and chaoskube.experiments, so a saved example of
    that project still replays."""
    project = tmp_path / "project"
    for package in ("faults", "experiments", "tests", "tests/faults"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("raise ImportError('the user\'s own package, not chaoskube\'s')\n")
    (project / "tests" / "__init__.py").write_text("")
    path = example(project, fixed=True)
    result = chaoskube("run", str(path), "--out", str(tmp_path / "run"), cwd=project)
    assert result.returncode == 1, result.stdout + result.stderr  # the fixed controller passes: not the expected failure
    assert "outcome: NOT as expected (expected fail)" in result.stdout and "Traceback" not in result.stderr

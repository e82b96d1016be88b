"""Bad input, each answered with exit code 2, one line on stderr that names the file, field
or flag, and no traceback: unknown experiments, malformed experiment files, malformed
manifests (through --manifests DIR and through an experiment's workload.manifests) and
bad flags, on `run`, `explore` and `describe`.

tests/cli/test_cli.py covers the experiment file's fields one by one for `run` (YAML
syntax, unknown and missing fields, wrong types, fault kinds, targets, checkers, etcd
options) and tests/experiments/test_campaign.py the --seeds syntax; this file fills the
rest. Most cases run in this process (they end before any run starts); a few run as a
separate process, as a user would."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli import ROOT, chaoskube, one_line_error

GOOD_EXPERIMENT = (ROOT / "experiments" / "catalog" / "mesh-partition.yaml").read_text()

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, labels: {app: shop}}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: app, image: "nginx:1.27", resources: {requests: {cpu: 100m}}}]}
"""

#: name -> (manifest text, what the one-line error must say)
BAD_MANIFESTS = {
    "bad-yaml": ("apiVersion: v1\nkind: Service\nmetadata: {name: shop\n", "not valid YAML"),
    "unknown-kind": ("apiVersion: v1\nkind: Frobnicator\nmetadata: {name: shop}\n", "kind Frobnicator is not supported"),
    "invalid-field": (DEPLOYMENT.replace("replicas: 2", "replicas: two"), "field `spec.replicas`: expected int, got str"),
}


@pytest.fixture
def in_process(capsys):
    """`chaoskube ARGS` in this process: exit code and captured output. main() replaces
    loguru's handlers: take its handler away again."""
    from loguru import logger

    from chaoskube.experiments.cli import main

    def call(*args):
        with pytest.raises(SystemExit) as exited:
            main([str(arg) for arg in args])
        logger.remove()
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, exited.value.code, captured.out, captured.err)

    return call


def manifests_dir(root: Path, name: str) -> Path:
    text, _ = BAD_MANIFESTS[name]
    directory = root / name
    directory.mkdir()
    (directory / "00-deployment.yaml").write_text(DEPLOYMENT)
    (directory / "10-broken.yaml").write_text(text)
    return directory


# =========================================================================== unknown experiment
@pytest.mark.parametrize("command", [["run"], ["describe"], ["explore", "--seeds", "1"], ["run", "--dry-run"]])
def test_an_unknown_experiment_is_one_line_and_exit_2(in_process, command):
    line = one_line_error(in_process(*command[:1], "zone-outag", *command[1:]))
    assert "unknown experiment 'zone-outag'" in line and "did you mean zone-outage?" in line


def test_an_unknown_experiment_as_a_user_sees_it():
    line = one_line_error(chaoskube("explore", "no-such-experiment", "--seeds", "1..3"))
    assert line == "chaoskube: error: unknown experiment 'no-such-experiment'; `chaoskube list` shows them"


# =========================================================================== malformed experiment file
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text + "  - [unclosed\n", "not valid YAML"),
        (lambda text: text.replace("title:", "titel:"), "field `titel`: unknown field"),
        (lambda text: text.replace("nodes: 5", "nodes: five"), "field `cluster.nodes`"),
        (lambda text: text.replace("kind: kill", "kind: explode"), "unknown fault kind 'explode'"),
        (lambda text: text.replace('random:node", duration_s: 3', 'nowhere", duration_s: 3'), "bad target 'nowhere'"),
        (lambda text: text.replace("system: mesh", "system: mesh\nbroken: [no-such-bug]"), "field `broken`: unknown broken variant 'no-such-bug'"),
        (lambda text: text.replace("system: mesh", "system: mesh\nseed: -1"), "field `seed`: a seed is between 0 and 2**64 - 1"),
        (lambda text: text.replace("system: mesh", "system: mesh\nseed: one"), "field `seed`"),
    ],
)
@pytest.mark.parametrize("command", ["run", "explore"])
def test_a_malformed_experiment_file_names_the_file_and_field(tmp_path, in_process, command, edit, message):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(GOOD_EXPERIMENT))
    args = ["run", path] if command == "run" else ["explore", path, "--seeds", "1..2", "--out", tmp_path / "out"]
    line = one_line_error(in_process(*args))
    assert str(path) in line and message in line
    assert not (tmp_path / "out").exists(), "nothing ran"


def test_a_malformed_experiment_file_as_a_user_sees_it(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD_EXPERIMENT.replace("kind: kill", "kind: explode"))
    line = one_line_error(chaoskube("explore", str(path), "--seeds", "1"))
    assert line.startswith(f"chaoskube: error: {path}: field `schedule[") and "unknown fault kind 'explode'" in line


# =========================================================================== malformed manifests
@pytest.mark.parametrize("name", sorted(BAD_MANIFESTS))
@pytest.mark.parametrize("command", ["run", "explore", "dry-run"])
def test_malformed_manifests_through_the_manifests_flag(tmp_path, in_process, name, command):
    directory = manifests_dir(tmp_path, name)
    args = {"run": ["run", "node-drain-with-pdb"], "dry-run": ["run", "node-drain-with-pdb", "--dry-run"], "explore": ["explore", "node-drain-with-pdb", "--seeds", "1..3"]}[command]
    line = one_line_error(in_process(*args, "--manifests", directory, "--out", tmp_path / "out"))
    assert line.startswith(f"chaoskube: error: --manifests {directory}: {directory / '10-broken.yaml'}: document 1")
    assert BAD_MANIFESTS[name][1] in line
    assert not (tmp_path / "out").exists(), "nothing ran"


@pytest.mark.parametrize("name", sorted(BAD_MANIFESTS))
def test_malformed_manifests_through_the_experiment_file(tmp_path, in_process, name):
    text, message = BAD_MANIFESTS[name]
    (tmp_path / "mine.yaml").write_text(text)
    experiment = tmp_path / "my-workload.yaml"
    experiment.write_text(
        "name: my-workload\ntitle: My own workload\ndescription: Manifests of my own.\n"
        'source: "https://kubernetes.io/docs/concepts/overview/working-with-objects/"\n'
        "system: kubernetes\ncluster: {nodeGroups: [{count: 3}]}\n"
        "workload: {manifests: [mine.yaml], traffic: true}\ncheckers: [steady-state]\n"
    )
    for args in (["run", experiment], ["explore", experiment, "--seeds", "1"]):
        line = one_line_error(in_process(*args))
        assert line.startswith(f"chaoskube: error: {experiment}: field `workload.manifests[0]`: {tmp_path / 'mine.yaml'}: document 1")
        assert message in line


def test_a_manifest_file_the_experiment_names_must_exist(tmp_path, in_process):
    experiment = tmp_path / "my-workload.yaml"
    experiment.write_text(
        "name: my-workload\ntitle: t\ndescription: d\nsource: s\nsystem: kubernetes\n"
        "workload: {manifests: [missing.yaml]}\ncheckers: [steady-state]\n"
    )
    line = one_line_error(in_process("run", experiment))
    assert f"{experiment}: field `workload.manifests[0]`: no such file 'missing.yaml'" in line


def test_malformed_manifests_as_a_user_sees_them(tmp_path):
    directory = manifests_dir(tmp_path, "unknown-kind")
    line = one_line_error(chaoskube("run", "node-drain-with-pdb", "--manifests", str(directory)))
    assert f"--manifests {directory}" in line and "kind Frobnicator is not supported" in line


# =========================================================================== bad flags
def test_bad_flags(tmp_path, in_process):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    good = tmp_path / "good"
    good.mkdir()
    (good / "shop.yaml").write_text(DEPLOYMENT)
    cases = [
        (["run", "mesh-partition", "--seed", "-1"], "Invalid value for '--seed': -1 is not in the range 0<=x<=18446744073709551615"),
        (["explore", "mesh-partition", "--seeds", "5..1"], "--seeds '5..1': the range 5..1 is empty"),
        (["explore", "mesh-partition", "--seeds", "1", "--jobs", "0"], "Invalid value for '--jobs': 0"),
        (["run", "node-drain-with-pdb", "--broken", "eviction-skips-pbd"], "--broken: unknown broken variant 'eviction-skips-pbd'; known: "),
        (["explore", "node-drain-with-pdb", "--seeds", "1", "--broken", "nope"], "--broken: unknown broken variant 'nope'"),
        (["run", "node-drain-with-pdb", "--broken"], "Option '--broken' requires an argument"),
        (["run", "node-drain-with-pdb", "--manifests", tmp_path / "missing"], f"--manifests {tmp_path / 'missing'}: not a directory"),
        (["explore", "node-drain-with-pdb", "--seeds", "1", "--manifests", blocker], f"--manifests {blocker}: not a directory"),
        (["run", "etcd-leader-kill", "--manifests", good], "--manifests: experiment 'etcd-leader-kill' runs system 'etcd', which takes no manifests"),
        (["run", "mesh-partition", "--out", blocker / "sub"], f"--out {blocker / 'sub'}: cannot write there"),
        (["explore", "mesh-partition", "--seeds", "1", "--out", blocker / "sub"], f"--out {blocker / 'sub'}: cannot write there"),
        (["explore", "mesh-partition", "--seeds", "1", "--out", blocker], f"Invalid value for '--out': Directory '{blocker}' is a file"),
        (["explore", "mesh-partition", "--seeds", "1", "--fail-fast=yes"], "--fail-fast"),
        (["list", "--brokn"], "No such option '--brokn'. Did you mean '--broken'?"),
        (["explore", "mesh-partition", "--seeds", "1", "--boot-seed", "some"], "Invalid value for '--boot-seed': 'some' is neither a seed (0 to 2**64-1) nor the word `seed`"),
        (["explore", "mesh-partition", "--seeds", "1", "--max-wall", "0"], "Invalid value for '--max-wall'"),
    ]
    for args, message in cases:
        line = one_line_error(in_process(*args))
        assert message in line, (args, line)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "mesh-partition", "--seed", "-1"], "--seed"),
        (["explore", "mesh-partition", "--seeds", "5..1"], "--seeds '5..1'"),
        (["explore", "mesh-partition", "--seeds", "1", "--jobs", "0"], "--jobs"),
        (["run", "node-drain-with-pdb", "--broken", "nope"], "--broken"),
        (["run", "node-drain-with-pdb", "--manifests", "/nonexistent/chaoskube-manifests"], "--manifests /nonexistent/chaoskube-manifests: not a directory"),
    ],
)
def test_bad_flags_as_a_user_sees_them(args, message):
    assert message in one_line_error(chaoskube(*args))



def test_an_empty_manifests_directory_is_refused_in_one_line(in_process, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_error(in_process("run", "node-failure", "--manifests", empty, "--out", tmp_path / "out"))
    assert f"--manifests {empty}: no .yaml, .yml or .json file in it" in line

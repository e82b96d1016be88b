"""A fuzz suite: Hypothesis-generated experiment files, manifests and histories — valid and
broken — through ``validate``, ``run --dry-run`` and ``check-history``. Whatever comes in:
never a traceback; always exit 0, 1, 2 or 3; on exit 2, exactly one line on stderr; and
``validate`` and ``run --dry-run`` agree on whether a file can run.

Generators: experiment documents grown from a valid one by replacing, adding or dropping
fields with values of every JSON type (and fault entries drawn from the real kinds,
selectors, roles, zones and parameters, so many are valid and the rest fail deep in the
checks, not only at the first field); raw text and bytes as experiment files; manifest
documents of every supported kind with random fields; Jepsen etcd history lines with
random fields. Examples per run are printed by pytest's ``-s`` summary line of each test
(``EXAMPLES``) and recorded in docs/experiments.md.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.api.objects import KINDS as OBJECT_KINDS
from chaoskube.faults.kinds import CHOICES, KINDS
from chaoskube.faults.nemesis import NEMESIS_KINDS
from chaoskube.faults.targets import SELECTORS

#: Examples per test and run (the fuzz suite's size; docs/experiments.md quotes it).
EXAMPLES = {"experiments": 250, "raw": 150, "manifests": 150, "histories": 200}
FUZZ = settings(deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
ROOT = Path(__file__).resolve().parents[2]


def call(*argv: Any) -> tuple[int, str, str]:
    """``chaoskube ARGV`` in this process: (exit code, stdout, stderr)."""
    from loguru import logger

    from chaoskube.experiments.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(item) for item in argv])
        except SystemExit as exit_:
            code = exit_.code
        else:
            code = 0
    logger.remove()
    return code, out.getvalue(), err.getvalue()


def well_behaved(code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2, 3), (code, out[-1000:], err[-1000:])
    assert "Traceback" not in out + err, err[-3000:]
    if code == 2:
        assert len(err.strip().splitlines()) == 1, err


# =========================================================================== experiment files
json_scalars = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)

ROLES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "node", "webhook", "traffic", "nobody", "*"]
ZONES = ["zone-a", "zone-b", "zone-c", "zone-x"]
NAMES = ["etcd-1", "etcd-4", "node-1", "node-9", "kube-apiserver-1", "kubectl"]


@st.composite
def targets(draw: st.DrawFn) -> str:
    selector = draw(st.sampled_from([*SELECTORS, "boss", ""]))
    argument = draw(st.sampled_from(ZONES) if selector == "zone" else st.sampled_from(NAMES) if selector == "name" else st.sampled_from(ROLES) | st.text(max_size=6))
    return f"{selector}:{argument}" if draw(st.booleans()) or selector else argument


@st.composite
def fault_entries(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from([*KINDS, "explode"]))
    params = {}
    for name, default in KINDS.get(kind, {}).items():
        if draw(st.booleans()):
            params[name] = draw(st.sampled_from(CHOICES[name]) if name in CHOICES else st.just(default) | json_scalars)
    entry: dict[str, Any] = {"at_s": draw(st.sampled_from([0, 1, 5, 19, 25, -1])), "kind": kind, "target": draw(targets())}
    if draw(st.booleans()):
        entry["duration_s"] = draw(st.sampled_from([None, 1, 5, 30, 0, -2]))
    if params:
        entry["params"] = params
    if draw(st.integers(0, 9)) == 0:
        entry["clip_to_phase"] = True
    return entry


BASES: dict[str, dict[str, Any]] = {
    "kubernetes": {
        "name": "fuzz", "title": "t", "description": "d", "source": "s", "system": "kubernetes",
        "cluster": {"etcdMembers": 3, "apiServers": 1, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 3}]},
        "workload": {"deployments": [{"name": "web", "replicas": 2, "service": True}], "traffic": True},
        "phases": {"setup_s": 10, "warmup_s": 1, "faults_s": 20, "recovery_s": 10, "settle_s": 1},
        "schedule": [], "checkers": ["steady-state"],
    },
    "etcd": {
        "name": "fuzz", "title": "t", "description": "d", "source": "s", "system": "etcd", "cluster": {"members": 3},
        "workload": {"clients": 2}, "phases": {"warmup_s": 1, "faults_s": 20, "recovery_s": 10, "settle_s": 1}, "schedule": [], "checkers": ["raft-safety"],
    },
    "mesh": {
        "name": "fuzz", "title": "t", "description": "d", "source": "s", "system": "mesh", "cluster": {"nodes": 5},
        "phases": {"faults_s": 20}, "schedule": [], "checkers": ["steady-state"],
    },
}  # fmt: skip
FIELDS = ["name", "title", "system", "checkers", "cluster", "workload", "phases", "schedule", "nemesis", "expected", "broken", "seed", "probes", "steady_state", "colour"]


@st.composite
def experiments(draw: st.DrawFn) -> dict[str, Any]:
    document = yaml.safe_load(yaml.safe_dump(BASES[draw(st.sampled_from(sorted(BASES)))]))
    document["schedule"] = draw(st.lists(fault_entries(), max_size=3))
    if draw(st.integers(0, 3)) == 0:
        document["nemesis"] = {"kinds": draw(st.lists(st.sampled_from([*NEMESIS_KINDS, "meteor"]), min_size=1, max_size=3)), "window_s": draw(st.sampled_from([5, 15, 60])), "max_duration_s": 4}
    if document["system"] == "kubernetes" and draw(st.booleans()):
        document["probes"] = [{"name": draw(st.sampled_from(["p", "web", "Bad Name"])), draw(st.sampled_from(["count", "object", "http"])): draw(st.sampled_from([{"resource": "pods", "selector": "app=web"}, {"resource": "deployments", "name": "web", "field": "status.readyReplicas"}, {"service": "web"}, {"resource": "widgets"}])), "mode": draw(st.sampled_from(["SOT", "EOT", "Edge", "Continuous", "OnChaos", "Never"]))}]
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["replace", "drop"]))
        if action == "drop":
            document.pop(field, None)
        else:
            document[field] = draw(json_values)
    return document


def write(directory: Path, text: str | bytes) -> Path:
    path = directory / "fuzz.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@settings(FUZZ, max_examples=EXAMPLES["experiments"])
@given(experiments())
def test_generated_experiment_files_through_validate_and_dry_run(document):
    with tempfile.TemporaryDirectory() as directory:
        try:
            text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
        except (yaml.YAMLError, OverflowError):
            return
        path = write(Path(directory), text)
        validated = call("validate", path)
        well_behaved(*validated)
        dry = call("run", path, "--dry-run")
        well_behaved(*dry)
        assert (validated[0] == 0) == (dry[0] == 0), (validated, dry)


@settings(FUZZ, max_examples=EXAMPLES["raw"])
@given(st.text(max_size=400) | st.binary(max_size=400) | st.sampled_from(["name: x\n" * 3, "- [" * 50, "a: &a [*a]", "{" * 2000, "\ufeffname: fuzz\n", "---\n---\n", "name: !!python/object:os.system x\n"]))
def test_raw_text_as_an_experiment_file(text):
    with tempfile.TemporaryDirectory() as directory:
        path = write(Path(directory), text)
        for argv in (("validate", path), ("run", path, "--dry-run")):
            well_behaved(*call(*argv))


# =========================================================================== manifests
SUPPORTED = sorted((info.api_version, kind) for kind, info in OBJECT_KINDS.items())


@st.composite
def manifests(draw: st.DrawFn) -> str:
    documents = []
    for _ in range(draw(st.integers(1, 3))):
        api_version, kind = draw(st.sampled_from([*SUPPORTED, ("v1", "Frobnicator"), ("extensions/v1beta1", "Deployment")]))
        document: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": draw(st.sampled_from(["shop", "Bad_Name", "", "x" * 300]))}}
        if draw(st.booleans()):
            document["spec"] = draw(json_values)
        if draw(st.booleans()):
            document[draw(st.sampled_from(["metadata", "status", "data", "extra"]))] = draw(json_values)
        documents.append(document)
    try:
        return "---\n".join(yaml.safe_dump(document, sort_keys=False, allow_unicode=True) for document in documents)
    except (yaml.YAMLError, OverflowError):
        return "kind: [\n"


@settings(FUZZ, max_examples=EXAMPLES["manifests"])
@given(manifests() | st.text(max_size=300))
def test_generated_manifests_through_dry_run(text):
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory) / "manifests"
        folder.mkdir()
        (folder / "fuzz.yaml").write_text(text)
        well_behaved(*call("run", "node-drain-with-pdb", "--manifests", folder, "--dry-run"))


# =========================================================================== histories
@st.composite
def history_lines(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        process = draw(st.integers(-1, 3) | st.sampled_from([":nemesis", "x"]))
        kind = draw(st.sampled_from([":invoke", ":ok", ":fail", ":info", "invoke", ":bogus"]))
        f = draw(st.sampled_from([":read", ":write", ":cas", ":append", ":get", ":put", ":lock"]))
        value = draw(st.sampled_from(["nil", "1", "2", "[1 2]", "[1]", ":x", '"a"', '"x 0 0 y"', "[nil 3]"]))
        key = draw(st.sampled_from(['"0"', '"7"', "nil", "3"]))
        template = draw(st.sampled_from(["INFO  jepsen.util - {p}\t{k}\t{f}\t{v}", "{{:process {p}, :type {k}, :f {f}, :key {key}, :value {v}}}", "{{:process {p}, :type {k}, :f {f}, :value {v}}}", "{p} {k} {f} {v}"]))
        lines.append(template.format(p=process, k=kind, f=f, v=value, key=key))
    return "\n".join(lines) + "\n"


@settings(FUZZ, max_examples=EXAMPLES["histories"])
@given(history_lines() | st.text(max_size=200) | st.binary(max_size=200), st.sampled_from(["jepsen-etcd", "porcupine-kv"]))
def test_generated_histories_through_check_history(text, fmt):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "history.log"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        code, out, err = call("check-history", path, "--format", fmt, "--time-limit", "2")
        well_behaved(code, out, err)


def test_the_fuzz_suite_runs_the_examples_it_says():
    assert sum(EXAMPLES.values()) >= 700

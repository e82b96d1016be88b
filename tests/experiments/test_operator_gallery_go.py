"""The Go gallery (docs/operators/gallery/go: kubernetes/sample-controller's pattern, client-go
informers, listers and a work queue) builds offline against the peers' client-go, and
``chaoskube test-operator`` finds the broken ``record_after_create`` with no hint but the kind:
the plan that loses the answer to its Deployment create makes it create a second Deployment
(duplicated children). The fixed versions and the whole no-hint sweep are measured by
``bench/operator_gallery.py go/NAME`` (docs/operators.md, "The gallery").

Slow: ``go build`` (a few seconds once Go's build cache holds client-go; about 100 s cold,
the cache test_sample_controller_live.py fills too), then two fault-free learning sessions
and one plan session, live, of a one-step workload (about a minute)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apiserver.http.test_protobuf_clients import SAMPLE_CONTROLLER

ROOT = Path(__file__).resolve().parents[2]
GO_GALLERY = ROOT / "docs" / "operators" / "gallery" / "go"
CRD = SAMPLE_CONTROLLER / "gopath" / "src" / "k8s.io" / "sample-controller" / "artifacts" / "examples" / "crd-status-subresource.yaml"
PACKAGES = ["rename_leaves_deployment", "rename_leaves_deployment_fixed", "record_after_create", "record_after_create_fixed"]

pytestmark = pytest.mark.slow


def _go() -> tuple[str, dict]:
    from tests.debian import require

    if not (SAMPLE_CONTROLLER / "gopath" / "src" / "k8s.io" / "client-go").exists():
        pytest.skip(f"client-go's sources are not at {SAMPLE_CONTROLLER}/gopath")
    go = require("golang-go", lambda: shutil.which("go"), "a Go toolchain (go) on PATH")
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{GO_GALLERY}{os.pathsep}{SAMPLE_CONTROLLER / 'gopath'}", "GOFLAGS": "", "GOPROXY": "off"}
    return go, env


def test_the_go_gallery_builds_and_test_operator_finds_the_create_whose_record_is_lost(tmp_path):
    go, env = _go()
    vetted = subprocess.run([go, "vet", *(f"gallery/{package}" for package in PACKAGES), "gallery/foocontroller"], env=env, capture_output=True, text=True, timeout=900)
    assert vetted.returncode == 0, vetted.stderr[-3000:]
    binary = tmp_path / "record_after_create"
    built = subprocess.run([go, "build", "-o", str(binary), "gallery/record_after_create"], env=env, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    workload = tmp_path / "workload.yaml"
    workload.write_text("- create: {apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo, metadata: {name: foo-1}, spec: {deploymentName: web, replicas: 1}}\n")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "chaoskube.experiments.cli", "test-operator", "--run", f"exec {binary} -kubeconfig \"$KUBECONFIG\"", "--manifests", str(CRD),
            "--workload", str(workload), "--out", str(out), "--kind", "lost-response", "--budget", "1", "--jobs", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert (out / "summary.json").exists(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])  # test-operator's own words when it failed
    summary = json.loads((out / "summary.json").read_text())
    (result,) = summary["results"]
    assert result["id"] == "lost-response@create:deployments#1", (summary["results"], done.stdout[-2000:])
    assert done.returncode == 1 and result["status"] == "found", (done.stdout[-2000:], result)
    deployments = [finding for finding in result["findings"] if finding["oracle"] == "duplicated-children" and finding["object"] == "deployments/default/web-[foos.samplecontroller.k8s.io/default/foo-1]*"]
    assert [(finding["run"], finding["reference"]) for finding in deployments] == [("2 objects", "1 object(s)")], result["findings"]  # generated names, known by prefix and owner
    assert "--plan 'lost-response@create:deployments#1'" in summary["replay"][result["id"]]
    learning = json.loads((out / "learning.json").read_text())
    assert not learning["learning_findings"], learning["learning_findings"]  # the fault-free runs made one Deployment each

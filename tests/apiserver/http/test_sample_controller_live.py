"""The real kubernetes/sample-controller (Go, client-go v0.26, built from
``shared/peers/sample-controller``) run by ``chaoskube serve``'s live mode for minutes under
faults, as issue 33's "Measure" asks: an API server killed, the etcd leader killed, the
operator itself killed once. Its Foos converge (each one's Deployment with the Foo's replicas,
the Foo's ``status.availableReplicas`` caught up), a scaled Foo converges again, its Events
("Synced", "Foo synced successfully") are served, and a deleted Foo's Deployment (an
ownerReference to the Foo) is garbage-collected.

Upstream: kubernetes/sample-controller ``controller.go`` (syncHandler, updateFooStatus,
``recorder.Event(foo, Normal, "Synced", "Foo synced successfully")``) and
``artifacts/examples/crd-status-subresource.yaml`` (the controller calls ``UpdateStatus``, which
needs the status subresource)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.apiserver.http.live_cluster import live_cluster
from tests.apiserver.http.test_protobuf_clients import SAMPLE_CONTROLLER

KUBECTL = shutil.which("kubectl")
EXAMPLES = SAMPLE_CONTROLLER / "gopath" / "src" / "k8s.io" / "sample-controller" / "artifacts" / "examples"
FOOS = {"foo-a": 1, "foo-b": 2, "foo-c": 3}
WAIT_S = 120.0
#: Virtual seconds from the fault phase's start (live: virtual time follows the wall clock).
SCHEDULE = [
    {"at_s": 10, "kind": "kill", "target": "random:kube-apiserver", "duration_s": 10},
    {"at_s": 35, "kind": "kill", "target": "leader:etcd", "duration_s": 5},
    {"at_s": 55, "kind": "kill", "target": "role:operator", "duration_s": 5},
]
FAULTS_S = 300.0  # cut short by handle.stop() at ~110 s


def _build(out: Path) -> Path:
    from tests.debian import require

    go = require("golang-go", lambda: shutil.which("go"), "a Go toolchain (go) on PATH")
    binary = out / "sample-controller"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(SAMPLE_CONTROLLER / "gopath"), "GOFLAGS": "", "GOPROXY": "off"}
    built = subprocess.run([go, "build", "-o", str(binary), "k8s.io/sample-controller"], env=env, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    return binary


def _wait(what: str, probe, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except (AssertionError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
            last = error
        else:
            if last is True:
                return
        time.sleep(2)
    pytest.fail(f"{what}: not within {timeout_s:.0f} s (last: {last!r})")


@pytest.mark.slow
def test_the_sample_controller_lives_through_faults_and_its_foos_converge(tmp_path):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine (the machine image has /usr/bin/kubectl)")
    if not (EXAMPLES / "crd-status-subresource.yaml").exists():
        pytest.skip(f"the sample-controller's sources are not at {SAMPLE_CONTROLLER}/gopath")
    binary = _build(tmp_path)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    shutil.copy(EXAMPLES / "crd-status-subresource.yaml", manifests / "crd.yaml")
    run = f"exec {binary} -kubeconfig \"$KUBECONFIG\""
    with live_cluster(tmp_path / "run", run=run, schedule=SCHEDULE, faults_s=FAULTS_S, manifests=manifests) as (handle, outcome):

        def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess:
            done = subprocess.run([KUBECTL, "--kubeconfig", str(handle.kubeconfig), "--request-timeout=20s", *args], capture_output=True, text=True, timeout=60)
            if check:
                assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr.strip()}"
            return done

        def get(*args: str) -> dict:
            return json.loads(kubectl("get", *args, "-o", "json").stdout)

        def converged(name: str, replicas: int):
            def probe():
                deployment = get("deployment", name)
                foo = get("foo", name)
                owners = [ref["name"] for ref in deployment["metadata"].get("ownerReferences", []) if ref["kind"] == "Foo"]
                seen = (deployment["spec"]["replicas"], deployment.get("status", {}).get("availableReplicas"), foo.get("status", {}).get("availableReplicas"), owners)
                return True if seen == (replicas, replicas, replicas, [name]) else seen
            _wait(f"Foo {name} with {replicas} replica(s) converged (Deployment spec/available, Foo status, owner)", probe)

        def phase_and_now() -> tuple[str, float]:
            return handle.call(lambda: (handle._host.phase, handle.world.now))

        _wait("the Foo CRD is served", lambda: kubectl("get", "foos", check=False).returncode == 0 or "no foos")
        for name, replicas in FOOS.items():
            foo = {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {"name": name}, "spec": {"deploymentName": name, "replicas": replicas}}
            done = subprocess.run([KUBECTL, "--kubeconfig", str(handle.kubeconfig), "create", "-f", "-"], input=json.dumps(foo), capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        for name, replicas in FOOS.items():
            converged(name, replicas)
        kubectl("patch", "foo", "foo-b", "--type=merge", "-p", '{"spec":{"replicas":4}}')
        converged("foo-b", 4)
        # Past the operator's kill (and restart): the restarted controller resyncs and converges.
        _wait("the fault phase", lambda: phase_and_now()[0] not in ("", "setup", "warmup") or phase_and_now(), timeout_s=FAULTS_S + 120)
        faults_seen = phase_and_now()[1]
        _wait("the fault phase past the operator's kill", lambda: phase_and_now()[1] > faults_seen + 62 or phase_and_now(), timeout_s=FAULTS_S + 60)
        kubectl("patch", "foo", "foo-a", "--type=merge", "-p", '{"spec":{"replicas":3}}')
        converged("foo-a", 3)
        events = get("events", "--field-selector", "involvedObject.kind=Foo")["items"]
        synced = sorted({event["involvedObject"]["name"] for event in events if event["reason"] == "Synced" and event["message"] == "Foo synced successfully"
                         and event["source"].get("component") == "sample-controller"})
        assert synced == sorted(FOOS), [(event["involvedObject"]["name"], event["reason"], event["message"]) for event in events]
        converged("foo-b", 4)
        kubectl("delete", "foo", "foo-c")
        _wait("foo-c's Deployment garbage-collected", lambda: kubectl("get", "deployment", "foo-c", check=False).returncode != 0 and "NotFound" in kubectl("get", "deployment", "foo-c", check=False).stderr or "still there")
        remaining = sorted(item["metadata"]["name"] for item in get("deployments")["items"])
        assert remaining == ["foo-a", "foo-b"], remaining
        print(f"sample-controller: Synced Events for {synced} ({len(events)} Foo Events); Deployments after deleting foo-c: {remaining}")
        # The controller keeps running under the cluster for 110 s of faults, then the run is
        # stopped (the fault phase is cut short, as Ctrl-C does; the operator gets SIGTERM).
        _wait("110 s into the fault phase", lambda: phase_and_now()[1] > faults_seen + 110 or phase_and_now(), timeout_s=FAULTS_S)
        converged("foo-a", 3)
        handle.stop()
    result = outcome.get("result")
    assert result is not None, outcome.get("error")
    runs = result.live["operator"]["runs"]
    faults_at = result.phases["faults"]
    # Killed once, by the schedule (SIGKILL 55 s into the faults), restarted 5 s later, and
    # alive until the run's end (SIGTERM then): not killed by chaoskube's own threads.
    assert len(runs) == 2, runs
    assert runs[0]["exit_code"] == -9 and runs[0]["ended_at"] == pytest.approx(faults_at + 55, abs=2.0), runs
    assert runs[1]["exit_code"] != -9 and runs[1]["ended_at"] - runs[1]["started_at"] > 20, runs
    assert runs[0]["started_at"] < faults_at, runs
    for name in ("steady-state", "leader-election"):
        assert result.verdicts[name].valid is True, (name, result.verdicts[name])

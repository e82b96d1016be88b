"""The user's program under ``chaoskube serve --run`` lives as long as the run (issue 33):
it is forked from the run's own thread, so the parent-death signal (tied by Linux to the
forking thread) fires only when the run ends; faults of role:operator from an experiment
file kill, restart and pause it, and every start and exit is journaled. The slow tests run
an operator for more than a minute of wall time."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.model import ExperimentError

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
CLUSTER = "{etcdMembers: 3, apiServers: 2, controllerManagers: 1, schedulers: 1, nodeGroups: [{count: 2, zones: [zone-a, zone-b]}]}"

HEARTBEAT = """\
import os, sys, tempfile, time
left = tempfile.NamedTemporaryFile(delete=False)  # as the kubernetes client's certificate files: gone only at a clean exit
print("tmp", os.environ["TMPDIR"], left.name, flush=True)
while True:
    print("beat", os.getpid(), round(time.monotonic(), 3), flush=True)
    time.sleep(0.5)
"""


def _experiment(path: Path, *, faults_s: float = 70.0, schedule: str | None = None) -> Path:
    schedule = schedule or textwrap.dedent("""\
        schedule:
          - {at_s: 3, kind: kill, target: "role:operator", duration_s: 3}
          - {at_s: 20, kind: pause, target: "name:operator", duration_s: 10}
        """)
    path.write_text(textwrap.dedent(f"""\
        name: operator-kill-and-pause
        title: The user's program killed, restarted and paused
        description: A live run's operator (serve --run) is killed for 3 s, then paused for 10 s.
        source: "issue 33"
        system: kubernetes
        cluster: {CLUSTER}
        phases: {{setup_s: 60, warmup_s: 0, faults_s: {faults_s}, recovery_s: 30, settle_s: 0}}
        """) + schedule + "checkers: [steady-state, leader-election]\nexpected: {outcome: pass}\n")
    return path


def test_operator_targets_are_refused_without_run_and_accepted_with_it(tmp_path):
    path = _experiment(tmp_path / "op.yaml")
    with pytest.raises(ExperimentError, match=r"schedule\[0\]\.target`: role:operator: this run has no operator: only `chaoskube serve EXPERIMENT --run COMMAND`"):
        registry.find(str(path))
    found = registry.find(str(path), operator=True)
    assert [entry.target for entry in found.schedule] == ["role:operator", "name:operator"]
    run = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "run", str(path), "--dry-run"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1 and "this run has no operator" in run.stderr, run.stderr
    validate = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "validate", str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert validate.returncode == 0 and validate.stdout.strip() == (
        f"{path}: valid (system kubernetes, 2 checker(s), 2 scheduled fault(s)) -- for `chaoskube serve FILE --run COMMAND` only: its faults target the operator (`chaoskube run` refuses it)"), validate
    trigger = _experiment(tmp_path / "trigger.yaml", schedule='schedule:\n  - {when: {type: api-op, fields: {client: "name:operator", verb: create}}, kind: kill, target: "name:kube-apiserver-1", duration_s: 3}\n')
    with pytest.raises(ExperimentError, match=r"schedule\[0\]\.when`: it matches the operator's events, but this run has no operator"):
        registry.find(str(trigger))


def _serve(tmp_path: Path, command: str) -> tuple[subprocess.CompletedProcess[str], dict, list[dict]]:
    experiment = _experiment(tmp_path / "operator.yaml")
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "serve", str(experiment), "--listen", "127.0.0.1:0", "--out", str(out), "--run", command],
                         capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert (out / "result.json").exists(), run.stderr[-3000:]
    result = orjson.loads((out / "result.json").read_bytes())
    journal = [orjson.loads(line) for line in (out / "journal.jsonl").read_bytes().splitlines()]
    return run, result, journal


def _lifecycle(journal: list[dict]) -> tuple[list[dict], list[dict]]:
    operator = [event for event in journal if event["type"] == "operator"]
    process = [event for event in journal if event["type"] == "process" and event.get("process") == "operator"]
    return operator, process


def _assert_killed_restarted_paused(result: dict, journal: list[dict]) -> list[dict]:
    operator, process = _lifecycle(journal)
    assert [event["event"] for event in process][:5] == ["start", "kill", "restart", "pause", "resume"], process
    terminate = [event for event in operator if event["event"] == "terminate"]
    assert len(terminate) == 1 and terminate[0]["grace_s"] == 30  # the end of the run: SIGTERM first
    starts = [event for event in operator if event["event"] == "start"]
    assert [event["incarnation"] for event in starts] == [1, 2]
    reaped = [event for event in operator if event["event"] == "reaped"]
    assert [event["pid"] for event in reaped] == [event["pid"] for event in starts]  # both reaped
    assert reaped[0]["code"] == -9  # the kill fault: SIGKILL
    runs = result["live"]["operator"]["runs"]
    assert len(runs) == 2 and all(entry["exit_code"] is not None for entry in runs)
    # Killed by the fault 3 s into the fault phase, not by chaoskube's own threads: the
    # restarted program ran until the end of the run, over a minute later.
    faults_at = result["phases"]["faults"]
    assert runs[0]["ended_at"] == pytest.approx(faults_at + 3, abs=1.0)
    assert runs[1]["ended_at"] - runs[1]["started_at"] > 60, runs
    for pid in (entry["pid"] for entry in runs):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], f"pid {pid} outlived the run"
    return runs


@pytest.mark.slow
def test_a_run_program_lives_over_a_minute_through_a_kill_and_a_pause_from_an_experiment_file(tmp_path):
    (tmp_path / "beat.py").write_text(HEARTBEAT)
    run, result, journal = _serve(tmp_path, f"{sys.executable} beat.py")
    runs = _assert_killed_restarted_paused(result, journal)
    beats = [(int(event["line"].split()[1]), float(event["line"].split()[2]), event["t"]) for event in journal if event["type"] == "operator-output" and event["line"].startswith("beat")]
    second = [beat for beat in beats if beat[2] > runs[1]["started_at"]]  # the pid is /bin/sh's child's
    assert len({beat[0] for beat in second}) == 1
    assert second[-1][1] - second[0][1] > 60, "the restarted program's own clock: over a minute of wall time"
    # Paused (SIGSTOP) for 10 s: no heartbeat in that stretch, then it goes on.
    gaps = [later[1] - earlier[1] for earlier, later in zip(second, second[1:])]
    assert max(gaps) > 8, gaps
    assert sorted(gaps)[-2] < 3, "only the pause stopped it"
    assert result["verdicts"]["leader-election"]["valid"] == "true"
    # Each incarnation had a /tmp of its own, as a restarted container has: what the
    # killed one left there is gone with it, and the last one's at the end of the run.
    scratch = [event["line"].split()[1:] for event in journal if event["type"] == "operator-output" and event["line"].startswith("tmp ")]
    assert len(scratch) == 2 and scratch[0][0] != scratch[1][0], scratch
    for directory, left in scratch:
        assert Path(left).parent == Path(directory) and Path(directory).name.startswith("chaoskube-operator-tmp-")
        assert not Path(directory).exists(), f"{directory} outlived its incarnation"
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.slow
def test_a_kopf_operator_lives_over_a_minute_through_a_kill_and_a_pause(tmp_path):
    pytest.importorskip("kopf", reason="kopf is in the test extra (pip install -e '.[test]')")
    operator = ROOT / "docs" / "operators" / "pdb_keeper_fixed.py"
    run, result, journal = _serve(tmp_path, f"{sys.executable} -m kopf run --standalone -A {operator}")
    runs = _assert_killed_restarted_paused(result, journal)
    requests = [event for event in journal if event["type"] == "http-request" and event.get("client") == "operator"]
    resumed = next(event["t"] for event in journal if event["type"] == "process" and event.get("process") == "operator" and event["event"] == "resume")
    assert any(event["t"] > runs[1]["started_at"] for event in requests), "the restarted operator talked to the API"
    assert any(event["t"] > resumed + 1 for event in requests), "the resumed operator talked to the API again"
    assert run.returncode == 0, run.stderr[-2000:]


# ------------------------------------------------------------------ Ctrl-C and SIGTERM
def _serve_until_signalled(tmp_path: Path, command: str, signals: list[tuple[float, int]], *, grace_s: float = 30.0) -> tuple[int, str, dict, list[dict]]:
    """``chaoskube serve`` of a small fault-free experiment with ``--run command``; once it
    serves, sends each signal after its delay (seconds after the previous one)."""
    import threading
    import time

    experiment = _experiment(tmp_path / "quiet.yaml", faults_s=600.0, schedule="schedule: []\n")
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "serve", str(experiment), "--listen", "127.0.0.1:0", "--out", str(out), "--run", command, "--grace-period", str(grace_s)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    lines: list[str] = []
    serving = threading.Event()

    def drain() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            lines.append(line)
            if line.startswith("export KUBECONFIG"):
                serving.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert serving.wait(120), "".join(lines)
        for delay, signum in signals:
            time.sleep(delay)
            child.send_signal(signum)
        assert child.stdout is not None
        stdout = child.stdout.read()  # until it exits (the reader thread has stderr)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    reader.join(10)
    result = orjson.loads((out / "result.json").read_bytes())
    journal = [orjson.loads(line) for line in (out / "journal.jsonl").read_bytes().splitlines()]
    return child.returncode, "".join(lines) + stdout, result, journal


GRACEFUL = "trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.1; done"
STUBBORN = "trap 'echo ignoring TERM' TERM; echo ready; while :; do sleep 0.1; done"


def test_ctrl_c_gives_the_operator_sigterm_marks_the_run_interrupted_and_judges_what_was_observed(tmp_path):
    import signal

    code, output, result, journal = _serve_until_signalled(tmp_path, GRACEFUL, [(4.0, signal.SIGINT)])
    assert code == 130, output[-2000:]
    assert result["interrupted"] is True and result["outcome"] == "interrupted"
    assert result["live"]["interrupted"]["signal"] == "SIGINT" and result["live"]["interrupted"]["phase"] == "faults"
    assert result["live"]["aborted"] is False
    # What was observed is judged; the end of the run did not happen: steady-state is left
    # out (never probed after heal), and the notes say why.
    assert result["verdicts"]["leader-election"]["valid"] == "true"
    assert "steady-state" not in result["verdicts"]
    assert any(note.startswith("checker steady-state not judged: the run was interrupted (SIGINT) in phase faults") for note in result["notes"])
    assert "heal" not in result["phases"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "**Interrupted** by SIGINT in phase faults" in report and "steady-state not judged" in report
    # The operator: SIGTERM, its trap ran, it exited 0 within the grace period.
    events = [event for event in journal if event["type"] == "operator"]
    assert [event["event"] for event in events] == ["start", "terminate", "exit", "reaped"], events
    assert events[2]["code"] == 0
    assert any(event["type"] == "operator-output" and event["line"] == "got TERM" for event in journal)


def test_a_program_that_ignores_sigterm_is_killed_when_its_grace_period_is_over(tmp_path):
    import signal

    code, output, result, journal = _serve_until_signalled(tmp_path, STUBBORN, [(3.0, signal.SIGTERM)], grace_s=2.0)
    assert code == 143, output[-2000:]
    events = [event for event in journal if event["type"] == "operator"]
    assert [event["event"] for event in events] == ["start", "terminate", "grace-period-over", "reaped"], events
    assert events[-1]["code"] == -9
    assert events[2]["t"] - events[1]["t"] == pytest.approx(2.0, abs=0.5)
    assert result["live"]["interrupted"]["signal"] == "SIGTERM" and "leader-election" in result["verdicts"]


def test_a_second_sigterm_aborts_serve_with_143(tmp_path):
    """Issue 32: the second SIGTERM aborts (no verdicts) and the exit code says SIGTERM."""
    import signal

    code, output, result, journal = _serve_until_signalled(tmp_path, STUBBORN, [(3.0, signal.SIGTERM), (1.0, signal.SIGTERM)], grace_s=30.0)
    assert code == 143, output[-2000:]
    assert "aborted by a second SIGTERM" in output
    assert result["live"]["aborted"] is True and result["verdicts"] == {} and result["interrupted"] is True
    reaped = [event for event in journal if event["type"] == "operator" and event["event"] == "reaped"]
    assert len(reaped) == 1 and reaped[0]["code"] == -9  # still stopped and reaped


def test_a_second_ctrl_c_aborts_serve_with_130(tmp_path):
    import signal

    code, output, result, _ = _serve_until_signalled(tmp_path, STUBBORN, [(3.0, signal.SIGINT), (1.0, signal.SIGINT)], grace_s=30.0)
    assert code == 130, output[-2000:]
    assert result["live"]["aborted"] is True and result["verdicts"] == {}


# ------------------------------------------------------------------ judged honestly (deliverable 7)
def test_a_live_run_leaves_out_differential_says_why_and_replays_into_a_directory_of_its_own(tmp_path):
    from chaoskube.experiments.live import live_experiment, run_live, LiveOptions
    from chaoskube.experiments.systems.kubernetes import KubernetesSystem
    import msgspec

    found = registry.find("apiserver-crash")
    assert "differential" in found.checkers
    live = live_experiment(found)
    assert "differential" not in live.checkers and set(live.checkers) == set(found.checkers) - {"differential"}
    assert any(note.startswith("checker differential left out of this live run: it compares the end state with a fault-free reference run") for note in live.notes)
    # A short run of it, stopped by the tool's stop() (the fault phase cut short).
    quick = msgspec.structs.replace(found, cluster={"etcdMembers": 3, "apiServers": 2, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 2, "zones": ["zone-a", "zone-b"]}]},
                                    phases=msgspec.structs.replace(found.phases, warmup_s=1.0, faults_s=2.0, recovery_s=30.0, settle_s=0.0), schedule=[], checkers=["leader-election", "differential"])
    out = tmp_path / "apiserver-crash-live-seed1"
    result = run_live(quick, KubernetesSystem, 1, out, LiveOptions(port=0))
    assert set(result.verdicts) == {"leader-election"}
    payload = orjson.loads((out / "result.json").read_bytes())
    assert payload["replay"] == f"chaoskube run apiserver-crash --seed 1 --out {tmp_path / 'apiserver-crash-live-seed1-replay'}"
    assert any("differential left out" in note for note in payload["notes"])
    assert "differential left out" in (out / "report.md").read_text()
    # `chaoskube replay` refuses the live directory in one line, exit 2.
    replay = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "replay", str(out)], capture_output=True, text=True, timeout=120)
    assert replay.returncode == 2 and replay.stderr.count("\n") == 1, replay.stderr
    assert "a live run (chaoskube serve) does not replay byte for byte" in replay.stderr and "apiserver-crash-live-seed1-replay" in replay.stderr


def test_a_plain_serve_prints_no_run_command(tmp_path):
    from chaoskube.experiments.live import _replay_command, default_experiment

    assert _replay_command(default_experiment(), 1, tmp_path / "serve-live-seed1") == ""


CRD_ONLY = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
"""


def test_serve_accepts_manifests_of_only_crds_and_custom_resources(tmp_path):
    import threading

    from chaoskube.experiments.live import LiveOptions, default_experiment, run_live
    from chaoskube.experiments.systems.kubernetes import KubernetesSystem

    manifests = tmp_path / "crds"
    manifests.mkdir()
    (manifests / "widgets.yaml").write_text(CRD_ONLY)
    with pytest.raises(ExperimentError, match="no workload"):
        registry.with_manifests(default_experiment(), manifests)  # `chaoskube run`: the experiment judges pods
    experiment = registry.with_manifests(default_experiment(), manifests, live=True)
    seen: dict[str, object] = {}

    def on_ready(handle) -> None:
        def client() -> None:
            try:
                from kubernetes import client as k8s, config

                import time

                api = k8s.CustomObjectsApi(config.new_client_from_config(config_file=str(handle.kubeconfig)))
                from kubernetes.client.rest import ApiException

                for _ in range(60):  # the workload (the CRD first) is created once the front serves
                    try:
                        seen["widgets"] = [item["metadata"]["name"] for item in api.list_namespaced_custom_object("example.com", "v1", "default", "widgets")["items"]]
                    except ApiException as error:
                        if error.status != 404:  # not served yet
                            raise
                    if seen.get("widgets"):
                        break
                    time.sleep(0.5)
            except Exception as error:  # noqa: BLE001 - reported below
                seen["error"] = repr(error)
            finally:
                handle.interrupt()

        threading.Thread(target=client, daemon=True).start()

    result = run_live(experiment, KubernetesSystem, 1, tmp_path / "run", LiveOptions(port=0, on_ready=on_ready))
    assert seen == {"widgets": ["w1"]}
    assert result.live["interrupted"]["signal"] == "interrupt" and result.verdicts["leader-election"].valid is True
    assert "- Replay: none (a plain `chaoskube serve` has no experiment to run again; see Live run)" in (tmp_path / "run" / "report.md").read_text()
    assert orjson.loads((tmp_path / "run" / "result.json").read_bytes())["replay"] == ""


def test_serve_run_starts_the_operator_once_the_manifests_crds_are_established(tmp_path):
    """``serve --manifests DIR --run CMD`` starts CMD as ``kubectl apply -f DIR && kubectl
    wait --for condition=established crd --all && CMD`` would: its first discovery already
    lists the custom resource. Started as the front opened, before the manifests were
    applied, kopf found no resource to serve (the discovery lists only Established CRDs,
    and no later CRD event made it look again)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    manifests = tmp_path / "crds"
    manifests.mkdir()
    (manifests / "widgets.yaml").write_text(CRD_ONLY)
    out = tmp_path / "run"
    # the operator's first act: the discovery of the group, as a client's first request
    command = f"{KUBECTL} api-resources --api-group=example.com -o name && {KUBECTL} get widgets -A -o name >/dev/null && echo served; exec sleep 600"
    run = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "serve", "--manifests", str(manifests), "--listen", "127.0.0.1:0", "--out", str(out), "--run", command],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    journal = out / "journal.jsonl"
    try:
        for _ in range(240):
            if journal.exists() and b'"line":"served"' in journal.read_bytes():
                break
            time.sleep(0.5)
    finally:
        run.send_signal(signal.SIGINT)
        try:
            run.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            run.kill()
            run.communicate()
    events = [orjson.loads(line) for line in journal.read_bytes().splitlines()]
    operator = [event for event in events if event["type"] == "operator"]
    assert operator[0]["event"] == "definitions-established" and operator[0]["definitions"] == ["widgets.example.com"], operator[:2]
    assert operator[1]["event"] == "start", operator[:2]
    lines = [event["line"] for event in events if event["type"] == "operator-output" and event["stream"] == "stdout"]
    assert lines[:2] == ["widgets.example.com", "served"], (lines, [event["line"] for event in events if event["type"] == "operator-output"])


def test_end_state_evidence_names_the_objects_found_and_their_owners():
    from chaoskube.experiments.systems.kubernetes import check_end_state

    events = [{"type": "end-state", "index": 0, "assertion": "one budget per Deployment", "valid": False, "found": 2,
               "objects": ["default/api-pdb (owner Deployment/api)", "default/api-pdb-2 (owner Deployment/api)"], "more": 0}]
    verdict = check_end_state(events, 1)
    assert verdict.valid is False
    assert verdict.reason == "1 end-state assertion(s) failed: one budget per Deployment (found 2: default/api-pdb (owner Deployment/api), default/api-pdb-2 (owner Deployment/api))"
    events[0] |= {"objects": [f"default/p{index}" for index in range(20)], "more": 5, "found": 25}
    assert check_end_state(events, 1).reason.endswith("default/p19 and 5 more)")
    from chaoskube.api.manifests import from_dict
    from chaoskube.experiments.systems.kubernetes import _end_state_name

    owned = from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", "ownerReferences": [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1", "uid": "u1"}]}})
    assert _end_state_name(owned) == "default/c (owner Widget/w1)"


@pytest.mark.slow
def test_the_cli_takes_faults_on_the_operator_with_serve_faults(tmp_path):
    """``chaoskube serve --run CMD --faults FILE``: the faults file may kill role:operator
    (refused in one line without --run); the program is killed, restarted and journaled."""
    import signal
    import threading
    import time

    faults = tmp_path / "faults.yaml"
    faults.write_text('schedule:\n  - {at_s: 2, kind: kill, target: "role:operator", duration_s: 2}\n')
    refused = subprocess.run([sys.executable, "-m", "chaoskube.experiments.cli", "serve", "--faults", str(faults), "--listen", "127.0.0.1:0", "--out", str(tmp_path / "no")],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "this run has no operator" in refused.stderr, refused.stderr
    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "serve", "--faults", str(faults), "--run", "echo up; exec sleep 600", "--listen", "127.0.0.1:0", "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    serving = threading.Event()

    def drain() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith("export KUBECONFIG"):
                serving.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert serving.wait(120)
        time.sleep(8.0)
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=120) == 130
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    journal = [orjson.loads(line) for line in (out / "journal.jsonl").read_bytes().splitlines()]
    _, process = _lifecycle(journal)
    assert [event["event"] for event in process] == ["start", "kill", "restart", "exit"]  # the last: SIGTERM at Ctrl-C
    assert [event["line"] for event in journal if event["type"] == "operator-output"] == ["up", "up"]


@pytest.mark.slow
def test_a_partition_of_the_operator_from_an_experiment_file_stalls_its_requests(tmp_path):
    """``isolate`` of role:operator (scope all: it has no peers): its requests (kubectl in a
    loop) go unanswered while it lasts, answered before and after."""
    import signal
    import shutil

    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    peers = _experiment(tmp_path / "peers.yaml", schedule='schedule:\n  - {at_s: 4, kind: isolate, target: "role:operator", duration_s: 6}\n')
    with pytest.raises(ExperimentError, match=r"isolate of role:operator with scope peers cuts nothing .* give `params: \{scope: all\}`"):
        registry.find(str(peers), operator=True)
    schedule = 'schedule:\n  - {at_s: 4, kind: isolate, target: "role:operator", duration_s: 6, params: {scope: all}}\n'
    experiment = _experiment(tmp_path / "isolate.yaml", faults_s=600.0, schedule=schedule)
    loop = "while :; do kubectl get namespaces -o name --request-timeout=2s >/dev/null 2>&1 && echo ok || echo failed; sleep 0.3; done"
    import threading
    import time

    out = tmp_path / "run"
    child = subprocess.Popen([sys.executable, "-m", "chaoskube.experiments.cli", "serve", str(experiment), "--run", loop, "--listen", "127.0.0.1:0", "--out", str(out), "--grace-period", "2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    serving = threading.Event()

    def drain() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith("export KUBECONFIG"):
                serving.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        assert serving.wait(120)
        time.sleep(16.0)
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=120) == 130
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    result = orjson.loads((out / "result.json").read_bytes())
    journal = [orjson.loads(line) for line in (out / "journal.jsonl").read_bytes().splitlines()]
    [fault] = result["faults"]
    assert fault["targets"] == ["operator"] and fault["healed_at"] is not None
    requests = [event for event in journal if event["type"] == "http-request" and event.get("client") == "operator"]
    # Cut off: nothing it sent was answered while the isolation lasted (its requests stall
    # until the front's call deadline), and kubectl gave up; answered again after heal.
    assert not [event for event in requests if fault["applied_at"] + 0.1 < event["t"] < fault["healed_at"] and event["outcome"] == "answered"]
    assert any(event["outcome"] == "answered" and event["t"] < fault["applied_at"] for event in requests)
    assert any(event["outcome"] == "answered" and event["t"] > fault["healed_at"] for event in requests)
    output = [(event["t"], event["line"]) for event in journal if event["type"] == "operator-output"]
    assert any(line == "failed" and fault["applied_at"] < t < fault["healed_at"] + 3 for t, line in output), output
    assert any(line == "ok" and t > fault["healed_at"] for t, line in output)

"""The experiments issue 13 adds, run whole (scenario tests), and what the runner does for
the detection checkers: the differential checker's reference run, and --manifests
dropping the checkers that judge only the workload steps it drops."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from chaoskube.checkers.replay import StoreReplay
from chaoskube.experiments import registry
from chaoskube.experiments.registry import with_manifests
from chaoskube.experiments.runner import run_experiment
from chaoskube.experiments.simulated import REFERENCE_AFTER_LAST_STEP_S, fault_free

SHOP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: app, image: "nginx:1.27"}]}
"""


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def test_the_reference_run_cuts_the_idle_fault_phase_after_the_last_step():
    drain = registry.find("node-drain-with-pdb")  # a drain 7 s after convergence, warmup 5 s
    reference = fault_free(drain)
    assert reference.schedule == [] and reference.nemesis is None and reference.checkers == []
    assert reference.phases.faults_s == 2.0 + REFERENCE_AFTER_LAST_STEP_S
    failure = registry.find("node-failure")  # no step: only the margin is left of 460 s
    assert fault_free(failure).phases.faults_s == REFERENCE_AFTER_LAST_STEP_S
    assert fault_free(failure).phases.recovery_s == failure.phases.recovery_s


def test_manifests_drop_the_checkers_that_judge_only_the_dropped_steps(tmp_path):
    (tmp_path / "shop.yaml").write_text(SHOP)
    # A step that names the built-in Deployment and gives no `workload` role has nothing of
    # the manifests to act on: dropped, with the checkers that judge only the steps (issue
    # 14: a step with a role acts on the workloads it selects, or the run is refused).
    experiment = registry.find("node-drain-with-pdb")
    steps = [{key: value for key, value in step.items() if key != "workload"} for step in experiment.workload["steps"]]
    roleless = msgspec.structs.replace(experiment, workload={**experiment.workload, "steps": steps})
    drained = with_manifests(roleless, tmp_path)
    assert drained.workload["steps"] == [] and "graceful-termination" not in drained.checkers
    assert "api-linearizability" in drained.checkers
    assert any("graceful-termination left out" in note for note in drained.notes)
    failed = with_manifests(registry.find("node-failure"), tmp_path)  # no step dropped: taint evictions still delete pods
    assert "graceful-termination" in failed.checkers


def test_cascading_deletion_honours_each_propagation_policy(tmp_path):
    result = run_experiment(registry.find("cascading-deletion-under-failover"), 1, tmp_path / "run")
    assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
    for name in ("garbage-collection", "graceful-termination", "workload-invariants", "differential"):
        assert result.verdicts[name].valid is True, (name, result.verdicts[name].reason)
    events = _events(tmp_path / "run")
    steps = {event["target"]: event["outcome"] for event in events if event["type"] == "workload-step"}
    assert steps == {
        "default/bg": "deleted (Background)", "default/fg": "deleted (Foreground)", "default/orphan": "deleted (Orphan)",
        "default/web -> backup": "copied 1 ReplicaSet(s) with their owner references",
    }
    orphaned = [event for event in events if event["type"] == "gc-orphan"]
    assert orphaned and all(event["name"].startswith("orphan-") for event in orphaned)
    finalizers = {(event["name"], event["finalizer"]) for event in events if event["type"] == "gc-finalizer"}
    assert ("orphan", "orphan") in finalizers and ("fg", "foregroundDeletion") in finalizers
    store = StoreReplay(["deployments", "replicasets", "pods"])
    for event in events:
        store.apply(event)
    deployments = set(store.objects("deployments"))
    assert deployments == {"default/web"}, deployments
    replica_sets = store.objects("replicasets")
    # the copy in backup (owner references to web, absent there) is collected, web's own is not
    assert [key for key in replica_sets if key.startswith("backup/")] == [] and any(key.startswith("default/web-") for key in replica_sets)
    assert any(event["type"] == "gc-delete" and event["namespace"] == "backup" and event["resource"] == "replicasets" for event in events)
    assert result.verdicts["garbage-collection"].details["invalid_references"] >= 1
    survivors = [key for key in replica_sets if key.startswith("default/orphan-")]
    assert len(survivors) == 1 and not replica_sets[survivors[0]]["metadata"].get("ownerReferences"), "the orphaned ReplicaSet keeps running, owned by nobody"
    assert not [key for key in replica_sets if key.startswith(("default/bg-", "default/fg-"))]
    orphan_pods = [key for key, pod in store.objects("pods").items() if key.startswith("default/orphan-") and not pod["metadata"].get("deletionTimestamp")]
    assert len(orphan_pods) == 2


def test_the_scale_down_during_a_node_outage_deletes_the_not_ready_pods_first(tmp_path):
    result = run_experiment(registry.find("scale-down-during-node-outage"), 1, tmp_path / "run")
    assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
    events = _events(tmp_path / "run")
    failed = next(event["targets"][0] for event in events if event["type"] == "fault" and event.get("event") == "apply")
    deleted = next(event["pods"] for event in events if event["type"] == "replicaset-pods" and event["action"] == "delete")
    store = StoreReplay(["pods"])
    on_failed_node = set()
    for event in events:
        for change in store.apply(event):
            if change.after is not None and change.after.get("spec", {}).get("nodeName") == failed:
                on_failed_node.add(change.key)
    assert len(deleted) == 3
    assert len(on_failed_node & set(deleted)) == 2, (failed, deleted, on_failed_node)

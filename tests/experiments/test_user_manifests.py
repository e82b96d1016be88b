"""Experiments on the user's own manifests (``--manifests``): steps by role, one-line
refusals when the manifests cannot give the experiment its meaning, checkers left out with
a note, ``--skip-unsupported``, the record of the manifests for replay, node groups with
extended resources agreed by the scheduler and the ``scheduling`` checker, and the report's
answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskube.experiments import registry
from chaoskube.experiments.campaign import manifests_change
from chaoskube.experiments.model import ExperimentError, manifests_sha256
from chaoskube.experiments.runner import run_experiment

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80}]}
"""
PDB = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
"""


def manifests(tmp_path: Path, *documents: str, name: str = "app") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "app.yaml").write_text("---\n".join(documents))
    return directory


def test_steps_act_on_the_workloads_their_role_selects(tmp_path: Path) -> None:
    found = registry.with_manifests(registry.find("node-drain-with-pdb"), manifests(tmp_path, DEPLOYMENT, SERVICE, PDB))
    steps = found.workload["steps"]
    assert steps and all("deployment" not in step for step in steps) and steps[0]["workload"] == "with-pdb"
    assert found.manifests_dir == str((tmp_path / "app").resolve()) and found.notes == []


def test_a_role_that_selects_nothing_is_refused_in_one_line(tmp_path: Path) -> None:
    directory = manifests(tmp_path, DEPLOYMENT, SERVICE)
    with pytest.raises(ExperimentError) as caught:
        registry.with_manifests(registry.find("node-drain-with-pdb"), directory)
    message = str(caught.value)
    assert "\n" not in message
    assert message == f"node-drain-with-pdb: no workload with a PodDisruptionBudget in {directory} (step `drain`, workload.steps[0], needs one)"


def test_manifests_without_any_workload_are_refused(tmp_path: Path) -> None:
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {a: b}\n"
    directory = manifests(tmp_path, config, SERVICE)
    with pytest.raises(ExperimentError, match=r"node-failure: no workload \(Deployment, .*CronJob or Pod\) in .* \(its 2 object\(s\) \(ConfigMap, Service\) create no pods"):
        registry.with_manifests(registry.find("node-failure"), directory)


def test_a_checker_with_nothing_to_judge_is_left_out_with_a_note(tmp_path: Path) -> None:
    directory = manifests(tmp_path, DEPLOYMENT)
    found = registry.with_manifests(registry.find("node-failure"), directory)
    assert "service-availability" not in found.checkers and "pdb-eviction" not in found.checkers
    assert found.notes == [
        f"checker service-availability left out: no Service with a selector to send traffic to in {directory}",
        f"checker pdb-eviction left out: no PodDisruptionBudget to hold evictions to in {directory}",
    ]


def test_unsupported_kinds_are_refused_or_skipped(tmp_path: Path) -> None:
    monitor = "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web, namespace: default}\nspec: {}\n"
    directory = manifests(tmp_path, DEPLOYMENT, monitor)
    with pytest.raises(ExperimentError) as caught:
        registry.with_manifests(registry.find("node-failure"), directory)
    assert str(caught.value) == (
        f'--manifests {directory}: {directory / "app.yaml"}: document 2: no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1": '
        "ensure CRDs are installed first (no CustomResourceDefinition in these manifests serves it)"
    )
    found = registry.with_manifests(registry.find("node-failure"), directory, skip_unsupported=True)
    assert found.skip_unsupported and found.workload["skip_unsupported"] is True
    only_monitor = manifests(tmp_path, monitor, name="monitor")
    with pytest.raises(ExperimentError, match="nothing to run in .*: --skip-unsupported left out all 1 of its documents"):
        registry.with_manifests(registry.find("node-failure"), only_monitor, skip_unsupported=True)


def test_the_manifests_are_recorded_for_replay(tmp_path: Path) -> None:
    directory = manifests(tmp_path, DEPLOYMENT, SERVICE)
    payload = {"manifests": {"directory": str(directory), "sha256": manifests_sha256(directory)}}
    assert manifests_change(payload) is None
    (directory / "app.yaml").write_text(DEPLOYMENT.replace("replicas: 2", "replicas: 3"))
    changed = manifests_change(payload)
    assert changed is not None and changed.startswith(f"the manifests in {directory} changed since the run")
    (directory / "app.yaml").unlink()
    directory.rmdir()
    assert manifests_change(payload) == f"the manifests directory {directory} of the run is gone"


GPU_EXPERIMENT = """\
name: gpu-fit
title: t
description: d
source: s
system: kubernetes
cluster:
  apiServers: 1
  controllerManagers: 1
  schedulers: 1
  nodeGroups:
    - {prefix: cpu, count: 2, zones: [zone-a]}
    - {prefix: gpu, count: 1, zones: [zone-b], extendedResources: {nvidia.com/gpu: "2"}, ephemeralStorage: 20Gi}
workload: {manifests: [train.yaml]}
phases: {setup_s: 40, warmup_s: 2, faults_s: 5, recovery_s: 20, settle_s: 2}
schedule: []
checkers: [steady-state, scheduling]
expected: {outcome: fail, failing: [steady-state]}
"""
TRAIN = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: train, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
        - name: c
          image: "trainer:1"
          resources:
            requests: {nvidia.com/gpu: "1", ephemeral-storage: 5Gi}
            limits: {nvidia.com/gpu: "1"}
"""


def test_extended_resources_of_a_node_group_are_agreed_by_scheduler_and_checker(tmp_path: Path) -> None:
    (tmp_path / "train.yaml").write_text(TRAIN)
    path = tmp_path / "gpu.yaml"
    path.write_text(GPU_EXPERIMENT)
    result = run_experiment(registry.find(str(path)), 1, tmp_path / "run")
    verdicts = {name: verdict.valid for name, verdict in result.verdicts.items()}
    assert verdicts == {"steady-state": False, "scheduling": True}, {name: verdict.reason for name, verdict in result.verdicts.items()}
    payload = json.loads((tmp_path / "run" / "result.json").read_text())
    (row,) = payload["answers"]["workloads"]
    assert row["workload"] == "Deployment default/train" and row["converged_at"] is None
    assert "Insufficient nvidia.com/gpu" in row["why"], row
    journal = (tmp_path / "run" / "journal.jsonl").read_text()
    assert 'nodeName\\":\\"gpu-1' in journal and 'nodeName\\":\\"cpu-1' not in journal  # inside the stored JSON


MISSING_CONFIG = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - name: c
          image: "app:1"
          envFrom: [{configMapRef: {name: app-config}}]
          env: [{name: PASSWORD, valueFrom: {secretKeyRef: {name: app-secret, key: password}}}]
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret, namespace: default}
stringData: {user: u}
"""


def test_a_missing_config_map_or_key_is_why_a_workload_never_became_ready(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(MISSING_CONFIG)
    path = tmp_path / "exp.yaml"
    path.write_text(GPU_EXPERIMENT.replace("name: gpu-fit", "name: env-refs").replace("train.yaml", "app.yaml"))
    run_experiment(registry.find(str(path)), 1, tmp_path / "run")
    (row,) = json.loads((tmp_path / "run" / "result.json").read_text())["answers"]["workloads"]
    assert row["converged_at"] is None
    assert row["why"].endswith('(CreateContainerConfigError: configmap "app-config" not found)'), row["why"]
    (tmp_path / "app.yaml").write_text(MISSING_CONFIG.replace("envFrom: [{configMapRef: {name: app-config}}]", "envFrom: []"))
    run_experiment(registry.find(str(path)), 1, tmp_path / "run2")
    (row,) = json.loads((tmp_path / "run2" / "result.json").read_text())["answers"]["workloads"]
    assert row["why"].endswith("(CreateContainerConfigError: couldn't find key password in Secret default/app-secret)"), row["why"]


STATEFUL = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: "db:1"}]}
"""


def test_a_fault_can_target_the_nodes_of_a_workload(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(STATEFUL + "---\n" + DEPLOYMENT)
    path = tmp_path / "exp.yaml"
    text = GPU_EXPERIMENT.replace("name: gpu-fit", "name: kill-db").replace("train.yaml", "app.yaml")
    text = text.replace("schedule: []", 'schedule: [{at_s: 1, kind: kill, target: "workload:kind:StatefulSet", duration_s: 2}]')
    text = text.replace("expected: {outcome: fail, failing: [steady-state]}", "expected: {outcome: pass}")
    path.write_text(text)
    result = run_experiment(registry.find(str(path)), 1, tmp_path / "run")
    faults = [event for event in (tmp_path / "run" / "journal.jsonl").read_text().splitlines() if '"type":"fault"' in event and '"event":"apply"' in event]
    assert faults, "the fault was applied"
    applied = json.loads(faults[0])
    journal_pods = (tmp_path / "run" / "journal.jsonl").read_text()
    assert applied["targets"] and all(target.startswith(("cpu-", "gpu-")) for target in applied["targets"]), applied
    assert all(f'nodeName\\":\\"{node}' in journal_pods for node in applied["targets"])
    assert result.verdicts["steady-state"].valid is True
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("workload:kind:StatefulSet", "workload:kind:DaemonSet"))
    with pytest.raises(ExperimentError, match=r"field `schedule\[0\]\.target`: no DaemonSet in the experiment's workload"):
        registry.find(str(bad))


CRD_EXPERIMENT = """\
name: crd-end-state
title: t
description: d
source: s
system: kubernetes
cluster: {apiServers: 1, controllerManagers: 1, schedulers: 1, nodeGroups: [{count: 2, zones: [zone-a]}]}
workload:
  manifests: [app.yaml]
  end_state:
    - {resource: promotions.shop.example.com, namespace: shop, count: 1, description: one promotion}
    - {resource: promotions.shop.example.com, namespace: shop, label_selector: "tier=gold", count: 1}
    - {resource: coupons.shop.example.com, count: 0}
phases: {setup_s: 40, warmup_s: 2, faults_s: 5, recovery_s: 20, settle_s: 2}
schedule: []
checkers: [steady-state, end-state]
expected: {outcome: fail, failing: [end-state]}
"""
CRD_APP = """\
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: promotions.shop.example.com}
spec:
  group: shop.example.com
  scope: Namespaced
  names: {plural: promotions, kind: Promotion}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: shop.example.com/v1
kind: Promotion
metadata: {name: spring, namespace: shop, labels: {tier: silver}}
spec: {discountPercent: 20}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
"""


def test_end_state_assertions_count_custom_resources(tmp_path: Path) -> None:
    """``workload.end_state`` names a custom resource as <plural>.<group>: counted through
    the API at the end; one whose CRD is not served is an unknown verdict, not a pass."""
    (tmp_path / "app.yaml").write_text(CRD_APP)
    path = tmp_path / "exp.yaml"
    path.write_text(CRD_EXPERIMENT)
    result = run_experiment(registry.find(str(path)), 1, tmp_path / "run")
    assert result.as_expected, {name: verdict.reason for name, verdict in result.verdicts.items()}
    events = [json.loads(line) for line in (tmp_path / "run" / "journal.jsonl").read_text().splitlines() if '"type":"end-state"' in line]
    assert [(event["valid"], event.get("found")) for event in events] == [(True, 1), (False, 0), (None, None)]
    assert (events[0]["objects"], events[0]["more"], events[1]["objects"]) == (["shop/spring"], 0, [])  # which, not only how many (issue 33)
    assert "not found" in events[2]["reason"] or "could not find" in events[2]["reason"]


def test_an_end_state_resource_that_is_neither_served_nor_a_custom_resource_is_refused(tmp_path: Path) -> None:
    (tmp_path / "app.yaml").write_text(CRD_APP)
    path = tmp_path / "exp.yaml"
    path.write_text(CRD_EXPERIMENT.replace("coupons.shop.example.com", "Coupons"))
    with pytest.raises(ExperimentError, match="`resource` 'Coupons' is not a served resource"):
        registry.find(str(path))

"""Server-side apply by real clients against ``chaoskube serve``'s HTTPS front: kubectl 1.32's
``apply --server-side`` (create, a conflict with another manager, ``--force-conflicts``,
``get --show-managed-fields``) and the official Python client's apply patch."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from tests.apiserver.http.live_cluster import live_cluster
from tests.apiserver.http.test_real_clients import kubectl

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa", "namespace": "default", "labels": {"app": "ssa"}},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "ssa"}},
             "template": {"metadata": {"labels": {"app": "ssa"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}},
}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_cluster(tmp_path_factory.mktemp("live-ssa")) as (handle, outcome):
        yield handle
    assert outcome.get("result") is not None, outcome.get("error")


def test_kubectl_apply_server_side_conflicts_and_force(live, tmp_path):
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(yaml.safe_dump(DEPLOYMENT))
    created = kubectl(live, "apply", "--server-side", "-f", str(manifest))
    assert created.stdout.strip() == "deployment.apps/ssa serverside-applied"
    # a second manager changes a field kubectl applied
    kubectl(live, "patch", "deployment", "ssa", "-p", '{"spec":{"replicas":3}}')
    refused = kubectl(live, "apply", "--server-side", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1: .spec.replicas' in refused.stderr
    assert "--force-conflicts" in refused.stderr  # kubectl's advice follows the server's message
    # a server-side dry run and a server-side diff see the conflict-free forced result
    dry = kubectl(live, "apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", str(manifest))
    assert "serverside-applied (server dry run)" in dry.stdout
    assert kubectl(live, "get", "deployment", "ssa", "-o", "jsonpath={.spec.replicas}").stdout == "3"
    diff = kubectl(live, "diff", "--server-side", "--force-conflicts", "-f", str(manifest), check=False)
    assert diff.returncode == 1 and "-  replicas: 3" in diff.stdout and "+  replicas: 2" in diff.stdout, diff.stderr
    forced = kubectl(live, "apply", "--server-side", "--force-conflicts", "-f", str(manifest))
    assert "serverside-applied" in forced.stdout
    shown = yaml.safe_load(kubectl(live, "get", "deployment", "ssa", "-o", "yaml", "--show-managed-fields").stdout)
    assert shown["spec"]["replicas"] == 2
    managers = {(entry["manager"], entry["operation"]): entry for entry in shown["metadata"]["managedFields"]}
    applied = managers[("kubectl", "Apply")]
    assert applied["apiVersion"] == "apps/v1" and applied["fieldsType"] == "FieldsV1"
    assert "f:replicas" in applied["fieldsV1"]["f:spec"]
    ports = applied["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']["f:ports"]
    assert list(ports) == ['k:{"containerPort":80,"protocol":"TCP"}']
    assert ("kubectl-patch", "Update") not in managers  # its only field was taken by force
    plain = yaml.safe_load(kubectl(live, "get", "deployment", "ssa", "-o", "yaml").stdout)
    assert "managedFields" not in plain["metadata"]  # kubectl hides them unless asked
    # a field no longer in the applied configuration is removed
    smaller = json.loads(json.dumps(DEPLOYMENT))
    del smaller["metadata"]["labels"]
    manifest.write_text(yaml.safe_dump(smaller))
    kubectl(live, "apply", "--server-side", "-f", str(manifest))
    labels = kubectl(live, "get", "deployment", "ssa", "-o", "jsonpath={.metadata.labels}").stdout
    assert labels in ("", "{}")
    kubectl(live, "delete", "deployment", "ssa")


def test_kubectl_upgrades_from_client_side_to_server_side_apply(live, tmp_path):
    """A Deployment made by client-side ``kubectl apply``, then applied server-side with a
    changed replica count: kubectl-client-side-apply owns .spec.replicas, but its
    last-applied annotation still holds the live value, so kubectl's apply goes through
    (lastAppliedManager); a change by another manager in between is a conflict again."""
    manifest = tmp_path / "upgrade.yaml"
    body = json.loads(json.dumps(DEPLOYMENT))
    body["metadata"]["name"] = "upgrade"
    manifest.write_text(yaml.safe_dump(body))
    kubectl(live, "apply", "-f", str(manifest))
    body["spec"]["replicas"] = 4
    manifest.write_text(yaml.safe_dump(body))
    upgraded = kubectl(live, "apply", "--server-side", "-f", str(manifest))
    assert "serverside-applied" in upgraded.stdout
    shown = yaml.safe_load(kubectl(live, "get", "deployment", "upgrade", "-o", "yaml", "--show-managed-fields").stdout)
    assert shown["spec"]["replicas"] == 4
    managers = {(entry["manager"], entry["operation"]) for entry in shown["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers
    kubectl(live, "delete", "deployment", "upgrade")


def test_kubectl_applies_custom_resources_by_their_list_map_keys(live, tmp_path):
    """Two managers apply one custom resource: its ``x-kubernetes-list-type: map`` list keeps
    each manager's items (keyed by name); the atomic list is one manager's, a conflict for
    the other."""
    from tests.apiserver.test_server_side_apply import CRD

    crd = tmp_path / "crd.yaml"
    crd.write_text(yaml.safe_dump(CRD))
    kubectl(live, "apply", "--server-side", "-f", str(crd))
    kubectl(live, "wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=60s", timeout=90)

    def widget(ports, tags=None):
        spec = {"ports": ports, **({"tags": tags} if tags is not None else {})}
        return yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": spec})

    first, second = tmp_path / "one.yaml", tmp_path / "two.yaml"
    first.write_text(widget([{"name": "http", "port": 80}], ["a"]))
    second.write_text(widget([{"name": "https", "port": 443}]))
    for manager, path in (("one", first), ("two", second)):
        for _ in range(30):  # discovery may not list the new kind at once
            done = kubectl(live, "apply", "--server-side", f"--field-manager={manager}", "-f", str(path), check=False)
            if done.returncode == 0:
                break
            time.sleep(1)
        assert done.returncode == 0, done.stderr
    names = kubectl(live, "get", "widgets.example.com", "w", "-o", "jsonpath={.spec.ports[*].name}").stdout
    assert names.split() == ["http", "https"]
    second.write_text(widget([{"name": "https", "port": 443}], ["b"]))
    refused = kubectl(live, "apply", "--server-side", "--field-manager=two", "-f", str(second), check=False)
    assert refused.returncode == 1 and 'conflict with "one": .spec.tags' in refused.stderr
    kubectl(live, "delete", "widgets.example.com", "w")


def test_kubectl_generators_record_their_update_managers(live):
    """``kubectl create`` sends protobuf; its manager is "kubectl-create" (kubectl's default
    --field-manager), recorded as an Update at v1 with the fields it set."""
    kubectl(live, "create", "configmap", "generated", "--from-literal=a=1")
    kubectl(live, "label", "configmap", "generated", "tier=x")
    shown = yaml.safe_load(kubectl(live, "get", "configmap", "generated", "-o", "yaml", "--show-managed-fields").stdout)
    managers = {(entry["manager"], entry["operation"]): entry for entry in shown["metadata"]["managedFields"]}
    assert managers[("kubectl-create", "Update")]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert managers[("kubectl-label", "Update")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}}
    assert managers[("kubectl-create", "Update")]["apiVersion"] == "v1" and managers[("kubectl-create", "Update")]["time"].endswith("Z")
    kubectl(live, "delete", "configmap", "generated")


def test_python_client_apply_patch(live):
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(api_client=config.new_client_from_config(str(live.kubeconfig)))
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}}
    created = api.patch_namespaced_config_map("applied", "default", body, field_manager="py-one", _content_type="application/apply-patch+yaml")
    assert created.data == {"a": "1"}
    assert [(entry.manager, entry.operation) for entry in created.metadata.managed_fields] == [("py-one", "Apply")]
    with pytest.raises(ApiException) as conflict:
        api.patch_namespaced_config_map("applied", "default", {**body, "data": {"a": "2"}}, field_manager="py-two", _content_type="application/apply-patch+yaml")
    assert conflict.value.status == 409
    status = json.loads(conflict.value.body)
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "py-one": .data.a'
    assert status["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "py-one"', "field": ".data.a"}]
    # force=true (Helm 4's, Flux's and controller-runtime's applies force) takes the field
    forced = api.patch_namespaced_config_map("applied", "default", {**body, "data": {"a": "2"}}, field_manager="py-two", force=True, _content_type="application/apply-patch+yaml")
    assert forced.data == {"a": "2"}
    assert [(entry.manager, entry.operation) for entry in forced.metadata.managed_fields] == [("py-two", "Apply")]
    with pytest.raises(ApiException) as unnamed:
        api.patch_namespaced_config_map("applied", "default", body, _content_type="application/apply-patch+yaml")
    assert unnamed.value.status == 422 and "fieldManager: Required value: is required for apply patch" in unnamed.value.body
    api.delete_namespaced_config_map("applied", "default")

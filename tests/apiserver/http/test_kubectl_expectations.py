"""What kubectl and client users expect of an API server, against ``chaoskube serve``:
the ``scale`` subresource right after a create, Events (``kubectl get events``,
``kubectl describe``), ``kubectl auth can-i`` / ``whoami``, ``kubectl logs``, refused
``exec``, ``deletecollection``, the ``default/kubernetes`` Service and ClusterIPs (issue 33)."""

from __future__ import annotations

import pytest

from tests.apiserver.http.live_cluster import live_cluster
from tests.apiserver.http.test_real_clients import kubectl


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_cluster(tmp_path_factory.mktemp("live")) as (handle, outcome):
        yield handle
    result = outcome.get("result")
    assert result is not None, outcome.get("error")


def _apps(live):
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config

    return client.AppsV1Api(api_client=config.new_client_from_config(str(live.kubeconfig)))


def _deployment(name: str, replicas: int = 1) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
    }


def test_a_scale_patch_right_after_the_create_is_retried_on_a_conflict_as_upstream(live):
    # The deployment controller writes the new Deployment's status at once; the /scale
    # PATCH must read-modify-write (GuaranteedUpdate), not fail on the version it read.
    apps = _apps(live)
    for index in range(3):
        name = f"scaled-{index}"
        apps.create_namespaced_deployment("default", _deployment(name))
        scale = apps.patch_namespaced_deployment_scale(name, "default", {"spec": {"replicas": 3}})
        assert scale.spec.replicas == 3
        assert apps.read_namespaced_deployment(name, "default").spec.replicas == 3
    # A precondition the client gives itself still holds: a stale version is 409.
    from kubernetes.client.rest import ApiException

    stale = apps.read_namespaced_deployment_scale("scaled-0", "default")
    apps.patch_namespaced_deployment_scale("scaled-0", "default", {"spec": {"replicas": 2}})
    stale.spec.replicas = 4
    with pytest.raises(ApiException) as conflict:
        apps.replace_namespaced_deployment_scale("scaled-0", "default", stale)
    assert conflict.value.status == 409
    kubectl(live, "delete", "deployment", "scaled-0", "scaled-1", "scaled-2")

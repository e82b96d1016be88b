"""Garbage collection of a custom resource's dependents, through the HTTPS front (issue 33):
the sample-controller's pattern, driven by the official Python client as a real operator
would -- a Foo, a Deployment owned by it; ``kubectl delete foo foo-4`` (here the client's
delete) and the Deployment goes, with its ReplicaSet."""

from __future__ import annotations

import time

import pytest

from tests.apiserver.http.live_cluster import live_cluster

FOO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "foos.samplecontroller.k8s.io"},
    "spec": {"group": "samplecontroller.k8s.io", "scope": "Namespaced", "names": {"plural": "foos", "singular": "foo", "kind": "Foo"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                 "spec": {"type": "object", "properties": {"deploymentName": {"type": "string"}, "replicas": {"type": "integer"}}}}}}}]},
}


def _until(check, within_s=60.0):
    deadline = time.monotonic() + within_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.5)


def test_deleting_a_foo_collects_its_deployment_through_the_front(tmp_path):
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes.client.rest import ApiException

    with live_cluster(tmp_path / "run") as (handle, _):
        api_client = kubernetes.config.new_client_from_config(config_file=str(handle.kubeconfig))
        extensions = kubernetes.client.ApiextensionsV1Api(api_client)
        custom = kubernetes.client.CustomObjectsApi(api_client)
        apps = kubernetes.client.AppsV1Api(api_client)
        extensions.create_custom_resource_definition(FOO_CRD)

        def established():
            crd = extensions.read_custom_resource_definition("foos.samplecontroller.k8s.io")
            return any(c.type == "Established" and c.status == "True" for c in ((crd.status.conditions if crd.status else None) or []))

        _until(established)

        def create_foo():
            try:
                return custom.create_namespaced_custom_object("samplecontroller.k8s.io", "v1alpha1", "default", "foos",
                                                              {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "metadata": {"name": "foo-4"}, "spec": {"deploymentName": "foo-4-deploy", "replicas": 1}})
            except ApiException as error:
                if error.status == 404:  # served by every replica's discovery a moment later
                    return None
                raise

        foo = _until(create_foo)
        owner = {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo", "name": "foo-4", "uid": foo["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        apps.create_namespaced_deployment("default", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "foo-4-deploy", "ownerReferences": [owner]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "foo-4"}}, "template": {"metadata": {"labels": {"app": "foo-4"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
        })
        _until(lambda: apps.list_namespaced_replica_set("default", label_selector="app=foo-4").items)
        time.sleep(3.0)
        assert apps.read_namespaced_deployment("foo-4-deploy", "default").metadata.uid  # its owner lives: kept
        custom.delete_namespaced_custom_object("samplecontroller.k8s.io", "v1alpha1", "default", "foos", "foo-4")

        def collected():
            try:
                apps.read_namespaced_deployment("foo-4-deploy", "default")
            except ApiException as error:
                return error.status == 404
            return False

        _until(collected)
        _until(lambda: not apps.list_namespaced_replica_set("default", label_selector="app=foo-4").items)
        world = handle.world
        deletions = handle.call(lambda: [(event["resource"], event["name"]) for event in world.journal.events if event["type"] == "gc-delete"])
    assert ("deployments", "foo-4-deploy") in deletions

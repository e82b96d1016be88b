"""The common kinds and custom resources through the HTTP front's pure parts: paths,
discovery, OpenAPI, Tables, strategic merge patch merge keys, and objects the official
Python client deserializes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import CustomResourceDefinition, CustomResourceDefinitionCondition, DaemonSet, StatefulSet
from chaoskube.api.strategic import strategic_merge_patch
from chaoskube.apiserver.http import codec, discovery, openapi, tables
from chaoskube.apiserver.http.routes import custom_kinds, parse_path

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "promotions.shop.example.com"},
    "spec": {
        "group": "shop.example.com", "scope": "Namespaced",
        "names": {"plural": "promotions", "singular": "promotion", "kind": "Promotion", "shortNames": ["promo"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [
                {"name": "Discount", "type": "integer", "jsonPath": ".spec.discountPercent"},
                {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"discountPercent": {"type": "integer"}, "replicas": {"type": "integer"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}


def established(document: dict[str, Any] = CRD) -> CustomResourceDefinition:
    crd = from_dict(document)
    assert isinstance(crd, CustomResourceDefinition)
    crd.status.conditions = [CustomResourceDefinitionCondition(type="Established", status="True", reason="InitialNamesAccepted")]
    return crd


def test_a_custom_kind_is_served_at_its_group_version_path():
    custom = custom_kinds([established()])
    info = parse_path("GET", "/apis/shop.example.com/v1/namespaces/shop/promotions/spring", False, custom)
    assert info.kind is not None and info.kind.resource == "promotions.shop.example.com" and info.kind.kind == "Promotion"
    assert (info.namespace, info.name, info.verb) == ("shop", "spring", "get")
    assert parse_path("GET", "/apis/shop.example.com/v1/namespaces/shop/promotions/spring", False).kind is None  # not without the CRD
    assert parse_path("GET", "/apis/shop.example.com/v2/promotions", False, custom).kind is None  # a version it does not serve


def test_a_crd_not_established_is_not_served():
    crd = established()
    crd.status.conditions = []
    assert custom_kinds([crd]) == []


def test_discovery_lists_custom_kinds_with_their_names_and_subresources():
    custom = custom_kinds([established()])
    resources = discovery.api_resource_list("shop.example.com", "v1", custom)
    assert resources is not None
    entries = {entry["name"]: entry for entry in resources["resources"]}
    assert set(entries) == {"promotions", "promotions/scale", "promotions/status"}
    assert entries["promotions"]["shortNames"] == ["promo"] and entries["promotions"]["categories"] == ["all"]
    assert entries["promotions"]["singularName"] == "promotion" and entries["promotions"]["namespaced"] is True
    assert entries["promotions/scale"]["kind"] == "Scale" and entries["promotions/scale"]["group"] == "autoscaling"
    group = discovery.api_group("shop.example.com", custom)
    assert group is not None and group["preferredVersion"]["groupVersion"] == "shop.example.com/v1"
    assert "shop.example.com" in [g["name"] for g in discovery.api_group_list(custom)["groups"]]
    aggregated = discovery.aggregated(False, "v2", custom)
    (shop,) = [item for item in aggregated["items"] if item["metadata"]["name"] == "shop.example.com"]
    (resource,) = shop["versions"][0]["resources"]
    assert resource["resource"] == "promotions" and resource["responseKind"] == {"group": "shop.example.com", "version": "v1", "kind": "Promotion"}
    assert [sub["subresource"] for sub in resource["subresources"]] == ["scale", "status"]


def test_discovery_of_the_common_kinds():
    apps = {entry["name"] for entry in discovery.api_resource_list("apps", "v1")["resources"]}
    assert {"statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets", "daemonsets/status", "controllerrevisions"} <= apps
    batch = {entry["name"] for entry in discovery.api_resource_list("batch", "v1")["resources"]}
    assert {"jobs", "jobs/status", "cronjobs", "cronjobs/status"} <= batch
    core = {entry["name"]: entry for entry in discovery.api_resource_list("", "v1")["resources"]}
    assert core["replicationcontrollers/scale"]["kind"] == "Scale" and core["persistentvolumeclaims"]["shortNames"] == ["pvc"]
    assert core["persistentvolumes"]["namespaced"] is False and core["configmaps"]["shortNames"] == ["cm"]
    extensions = {entry["name"] for entry in discovery.api_resource_list("apiextensions.k8s.io", "v1")["resources"]}
    assert extensions == {"customresourcedefinitions", "customresourcedefinitions/status"}


def test_openapi_describes_a_custom_kind_by_its_schema_and_patches_it_without_strategic_merge():
    custom = custom_kinds([established()])
    document = openapi.v3_document("apis/shop.example.com/v1", custom)
    assert document is not None
    schema = document["components"]["schemas"]["com.example.shop.v1.Promotion"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "shop.example.com", "version": "v1", "kind": "Promotion"}]
    assert schema["properties"]["spec"]["properties"]["discountPercent"] == {"type": "integer"}
    assert "$ref" in schema["properties"]["metadata"]["allOf"][0]
    patch = document["paths"]["/apis/shop.example.com/v1/namespaces/{namespace}/promotions/{name}"]["patch"]
    assert set(patch["requestBody"]["content"]) == {"application/json-patch+json", "application/merge-patch+json"}
    assert "/apis/shop.example.com/v1/namespaces/{namespace}/promotions/{name}/scale" in document["paths"]
    assert "apis/shop.example.com/v1" in openapi.v3_root(custom)["paths"] and "apis/shop.example.com/v1" not in openapi.v3_root()["paths"]
    assert "com.example.shop.v1.Promotion" in openapi.v2_document(custom)["definitions"]
    # the built-in kinds keep their strategic merge patch, and publish their merge keys
    apps = openapi.v3_document("apis/apps/v1")
    assert "application/strategic-merge-patch+json" in apps["paths"]["/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}"]["patch"]["requestBody"]["content"]


def test_a_custom_resource_table_has_its_printer_columns():
    (kind,) = custom_kinds([established()])
    promotion = {"apiVersion": "shop.example.com/v1", "kind": "Promotion", "metadata": {"name": "spring", "creationTimestamp": "2026-01-01T00:00:00Z"},
                 "spec": {"discountPercent": 20}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    table = tables.table("Promotion", [promotion], 90.0, custom=kind)
    assert [column["name"] for column in table["columnDefinitions"]] == ["Name", "Discount", "Ready", "Age"]
    assert table["rows"][0]["cells"] == ["spring", 20, "True", "90s"]
    bare = custom_kinds([established({**CRD, "spec": {**CRD["spec"], "versions": [{**CRD["spec"]["versions"][0], "additionalPrinterColumns": []}]}})])[0]
    assert [column["name"] for column in tables.table("Promotion", [promotion], 90.0, custom=bare)["columnDefinitions"]] == ["Name", "Age"]


# (kind, object, expected cells) -- printers.go's columns for the common kinds
TABLE_CASES = [
    ("StatefulSet", {"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}, "status": {"readyReplicas": 2}},
     ["db", "2/3", "<unknown>", "pg", "postgres:16"]),
    ("DaemonSet", {"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "a", "image": "i"}]}}},
                   "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}},
     ["agent", 3, 3, 2, 3, 2, "disk=ssd", "<unknown>", "a", "i", "app=agent"]),
    ("Job", {"metadata": {"name": "migrate"}, "spec": {"completions": 3, "template": {"spec": {"containers": []}}},
             "status": {"succeeded": 3, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:42Z", "conditions": [{"type": "Complete", "status": "True"}]}},
     ["migrate", "Complete", "3/3", "42s", "<unknown>", "", "", "<none>"]),
    ("CronJob", {"metadata": {"name": "report"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "r", "image": "busybox"}]}}}}},
                 "status": {"active": [{"name": "report-1"}], "lastScheduleTime": "2026-01-01T00:00:00Z"}},
     ["report", "*/5 * * * *", "<none>", "False", 1, "2m", "<unknown>", "r", "busybox", "<none>"]),
    ("PersistentVolumeClaim", {"metadata": {"name": "data-db-0"}, "spec": {"volumeName": "pv-1", "storageClassName": "standard"},
                               "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}},
     ["data-db-0", "Bound", "pv-1", "1Gi", "RWO", "standard", "<unset>", "<unknown>", "Filesystem"]),
    ("Secret", {"metadata": {"name": "creds"}, "type": "Opaque", "data": {"a": "eA==", "b": "eQ=="}}, ["creds", "Opaque", 2, "<unknown>"]),
    ("ConfigMap", {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, ["cfg", 1, "<unknown>"]),
    ("StorageClass", {"metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "chaoskube.io/zonal-disk",
                      "volumeBindingMode": "WaitForFirstConsumer"},
     ["standard (default)", "chaoskube.io/zonal-disk", "Delete", "WaitForFirstConsumer", False, "<unknown>"]),
]


@pytest.mark.parametrize(("kind", "obj", "cells"), TABLE_CASES, ids=[case[0] for case in TABLE_CASES])
def test_tables_of_the_common_kinds(kind, obj, cells):
    table = tables.table(kind, [obj], 120.0)
    assert table["rows"][0]["cells"] == cells
    assert len(table["columnDefinitions"]) == len(cells)


def test_a_statefulset_template_merges_its_containers_by_name():
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db", "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
               {"name": "pg", "image": "postgres:15", "env": [{"name": "A", "value": "1"}]}, {"name": "exporter", "image": "exp:1"}]}}}}
    patched = strategic_merge_patch(sts, {"spec": {"template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16", "env": [{"name": "B", "value": "2"}]}]}}}}, StatefulSet)
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("pg", "postgres:16"), ("exporter", "exp:1")]
    assert [e["name"] for e in containers[0]["env"]] == ["B", "A"]  # a new element first, as patch.go's normalizeElementOrder
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}}
    patched = strategic_merge_patch(ds, {"spec": {"template": {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}}}, DaemonSet)
    assert [c["name"] for c in patched["spec"]["template"]["spec"]["containers"]] == ["a"]


def _deserialize(obj: Any, model: str) -> Any:
    from kubernetes.client import ApiClient

    return ApiClient().deserialize(json.dumps(codec.encode_object(obj)), model, "application/json")


def test_the_python_client_deserializes_the_common_kinds_with_zero_counts():
    """Go writes counts without omitempty even when zero; the client's models require them."""
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    ds = from_dict({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "a", "namespace": "d"},
                    "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    ds.status.observed_generation = 1  # a status with every count at zero
    assert codec.encode_object(ds)["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0, "observedGeneration": 1}
    assert _deserialize(ds, "V1DaemonSet").status.number_ready == 0
    sts = from_dict({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "d"},
                     "spec": {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    sts.status.observed_generation = 1
    assert _deserialize(sts, "V1StatefulSet").status.replicas == 0
    crd = established()
    version = _deserialize(crd, "V1CustomResourceDefinition").spec.versions[0]
    assert version.served is True and version.storage is True
    crd.spec.versions[0].storage = False
    assert _deserialize(crd, "V1CustomResourceDefinition").spec.versions[0].storage is False


def test_a_custom_kind_is_routed_and_discovered_at_each_served_version_and_no_other():
    """Upstream's ``crdHandler`` serves every version with ``served: true`` and answers
    404 at the others (``customresource_handler.go``: ``HasServedCRDVersion``); discovery
    lists served versions only (apiextensions ``DiscoveryController``), the storage version
    too only while served. Objects are answered at the version asked (strategy None)."""
    import copy

    from chaoskube.apiserver.http import views

    document = copy.deepcopy(CRD)
    v1 = document["spec"]["versions"][0]
    document["spec"]["versions"] = [
        {**copy.deepcopy(v1), "name": "v1alpha1", "served": False, "storage": False},
        {**copy.deepcopy(v1), "name": "v1", "served": True, "storage": True},
        {**copy.deepcopy(v1), "name": "v2", "served": True, "storage": False, "subresources": {"status": {}}},
    ]
    custom = custom_kinds([established(document)])
    assert [kind.info.api_version for kind in custom] == ["shop.example.com/v1", "shop.example.com/v2"]
    for version, served in (("v1alpha1", False), ("v1", True), ("v2", True), ("v3", False)):
        info = parse_path("GET", f"/apis/shop.example.com/{version}/namespaces/shop/promotions/spring", False, custom)
        assert (info.kind is not None) is served, version
    group = discovery.api_group("shop.example.com", custom)
    assert [entry["version"] for entry in group["versions"]] == ["v2", "v1"]  # kube-aware priority: v2 preferred
    assert discovery.api_resource_list("shop.example.com", "v1alpha1", custom) is None
    v2 = {entry["name"] for entry in discovery.api_resource_list("shop.example.com", "v2", custom)["resources"]}
    assert v2 == {"promotions", "promotions/status"}  # v2's own subresources
    stored = {"apiVersion": "shop.example.com/v1", "kind": "Promotion", "metadata": {"name": "spring"}, "spec": {"discountPercent": 5}}
    assert views.object_out(custom[1].info, stored) == {**stored, "apiVersion": "shop.example.com/v2"}
    assert views.object_out(custom[0].info, stored) == stored
    # the storage version retired (served: false) is neither routed nor discovered
    document["spec"]["versions"][1]["served"] = False
    custom = custom_kinds([established(document)])
    assert [kind.info.api_version for kind in custom] == ["shop.example.com/v2"]
    assert parse_path("GET", "/apis/shop.example.com/v1/namespaces/shop/promotions", False, custom).kind is None


#: apimachinery pkg/version/helpers_test.go, TestCompareKubeAwareVersionStrings: (v1, v2,
#: v1 has the higher priority), every row.
KUBE_AWARE_VERSIONS = [
    ("v1", "v2", False), ("v2", "v1", True), ("v10", "v2", True), ("v1", "v2alpha1", True), ("v1", "v2beta1", True),
    ("v1alpha2", "v1alpha1", True), ("v1beta1", "v2alpha3", True), ("v1alpha10", "v1alpha2", True), ("v1beta10", "v1beta2", True),
    ("foo", "v1beta2", False), ("bar", "foo", True), ("version1", "version2", True), ("version1", "version10", True),
]


@pytest.mark.parametrize(("first", "second", "greater"), KUBE_AWARE_VERSIONS)
def test_versions_are_preferred_as_upstream_compares_them(first, second, greater):
    assert (discovery.version_priority(first) < discovery.version_priority(second)) is greater


#: apimachinery pkg/version/helpers_test.go, Test_parseKubeVersion: (version, (major, type
#: -- 0 alpha, 1 beta, 2 GA --, minor) or None when not kube-like), every row; then what Go's
#: regexp does and Python's would not without fullmatch and [0-9]: "$" is the very end, "\d"
#: ASCII only.
PARSE_KUBE_VERSION = [
    ("v1.1", None), ("v1alpha1.1", None), ("v1alpha1", (1, 0, 1)), ("v2beta10", (2, 1, 10)), ("v3", (3, 2, 0)),
    ("v1\n", None), ("v\u0661", None),
]


@pytest.mark.parametrize(("version", "parsed"), PARSE_KUBE_VERSION)
def test_versions_are_kube_like_as_upstream_parses_them(version, parsed):
    priority = discovery.version_priority(version)
    if parsed is None:
        assert priority == (1, 0, 0, 0, version)  # after every kube-like version, alphabetically
    else:
        major, rank, minor = parsed
        assert priority == (0, -rank, -major, -minor, "")


def test_a_crd_group_prefers_its_highest_priority_served_version():
    """apiextensions DiscoveryController: ``sortGroupDiscoveryByKubeAwareVersion``, then
    ``PreferredVersion: apiVersionsForDiscovery[0]``."""
    import copy

    document = copy.deepcopy(CRD)
    v1 = document["spec"]["versions"][0]
    document["spec"]["versions"] = [{**copy.deepcopy(v1), "name": name, "served": True, "storage": name == "v1"} for name in ("v1alpha1", "v1", "v2beta1", "v2")]
    custom = custom_kinds([established(document)])
    group = discovery.api_group("shop.example.com", custom)
    assert [entry["version"] for entry in group["versions"]] == ["v2", "v1", "v2beta1", "v1alpha1"]
    assert group["preferredVersion"]["version"] == "v2"
    (shop,) = [item for item in discovery.aggregated(False, "v2", custom)["items"] if item["metadata"]["name"] == "shop.example.com"]
    assert [entry["version"] for entry in shop["versions"]] == ["v2", "v1", "v2beta1", "v1alpha1"]

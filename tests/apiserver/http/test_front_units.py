"""Pure parts of the HTTP front: strategic merge patch, paths, discovery, Tables, OpenAPI,
field validation and content negotiation."""

from __future__ import annotations

import pytest

from chaoskube.api.fields import prune_unknown
from chaoskube.api.objects import KINDS, REVIEWS, Deployment, Pod, Service
from chaoskube.api.patch import PatchError
from chaoskube.api.strategic import strategic_merge_patch
from chaoskube.apiserver.http import codec, discovery, openapi, tables
from chaoskube.apiserver.http.routes import parse_path

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "finalizers": ["a", "b"], "labels": {"x": "1"}},
    "spec": {"containers": [{"name": "one", "image": "i1", "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]},
                            {"name": "two", "image": "i2"}]},
}

# (what the patch does, patch, expected result's changed part) -- the directives of
# apimachinery strategicpatch/patch.go, one row each.
STRATEGIC_CASES = [
    ("merge by key: change one container, keep the other", {"spec": {"containers": [{"name": "one", "image": "new"}]}},
     lambda d: [c["image"] for c in d["spec"]["containers"]] == ["new", "i2"]),
    # patch.go's normalizeElementOrder: without $setElementOrder, the patch's new elements
    # come before the server's (mergeSortedSlice takes the patch side when an element is
    # not in the server's order); kubectl sends $setElementOrder to place them.
    ("merge by key: a new container comes first", {"spec": {"containers": [{"name": "three", "image": "i3"}]}},
     lambda d: [c["name"] for c in d["spec"]["containers"]] == ["three", "one", "two"]),
    ("$patch: delete removes the element with that key", {"spec": {"containers": [{"name": "two", "$patch": "delete"}]}},
     lambda d: [c["name"] for c in d["spec"]["containers"]] == ["one"]),
    ("$patch: replace on a list element replaces the whole list", {"spec": {"containers": [{"$patch": "replace"}, {"name": "z", "image": "zz"}]}},
     lambda d: d["spec"]["containers"] == [{"name": "z", "image": "zz"}]),
    ("nested merge list (env by name)", {"spec": {"containers": [{"name": "one", "env": [{"name": "B", "value": "2"}]}]}},
     lambda d: [e["name"] for e in d["spec"]["containers"][0]["env"]] == ["B", "A"]),
    ("merge list of primitives is a union", {"metadata": {"finalizers": ["b", "c"]}},
     lambda d: d["metadata"]["finalizers"] == ["a", "b", "c"]),
    ("$deleteFromPrimitiveList", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
     lambda d: d["metadata"]["finalizers"] == ["b"]),
    ("$setElementOrder orders the merged list", {"spec": {"$setElementOrder/containers": [{"name": "two"}, {"name": "one"}], "containers": [{"name": "one", "image": "x"}]}},
     lambda d: [c["name"] for c in d["spec"]["containers"]] == ["two", "one"]),
    ("null deletes a key", {"metadata": {"labels": {"x": None}}},
     lambda d: "labels" not in d["metadata"] or d["metadata"]["labels"] == {}),
    ("$patch: replace on a map replaces it", {"metadata": {"labels": {"$patch": "replace", "y": "2"}}},
     lambda d: d["metadata"]["labels"] == {"y": "2"}),
    # handleDirectiveInMergeMap: the map is emptied, its key stays (upstream's
    # "delete map from nested map" case)
    ("$patch: delete on a map empties it", {"metadata": {"labels": {"$patch": "delete"}}},
     lambda d: d["metadata"]["labels"] == {}),
    ("an untagged list is replaced (args)", {"spec": {"containers": [{"name": "one", "args": ["b"]}]}},
     lambda d: d["spec"]["containers"][0]["args"] == ["b"]),
]


@pytest.mark.parametrize(("what", "patch", "check"), STRATEGIC_CASES, ids=[case[0] for case in STRATEGIC_CASES])
def test_strategic_merge_patch_directives(what, patch, check):
    before = repr(POD)
    result = strategic_merge_patch(POD, patch, Pod)
    assert check(result), result
    assert repr(POD) == before  # pure


def test_retain_keys_clears_the_other_fields():
    deployment = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patched = strategic_merge_patch(deployment, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, Deployment)
    assert patched["spec"]["strategy"] == {"type": "Recreate"}


def test_service_ports_merge_by_port():
    service = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    patched = strategic_merge_patch(service, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}, Service)
    assert patched["spec"]["ports"] == [{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}]


def test_a_merge_element_without_its_key_is_an_error():
    with pytest.raises(PatchError, match="merge key"):
        strategic_merge_patch(POD, {"spec": {"containers": [{"image": "x"}]}}, Pod)


@pytest.mark.parametrize(("method", "path", "watch", "expected"), [
    ("GET", "/api/v1/pods", False, ("list", "pods", "", "", "")),
    ("GET", "/api/v1/namespaces/ns/pods", True, ("watch", "pods", "ns", "", "")),
    ("GET", "/api/v1/watch/namespaces/ns/pods/p", False, ("watch", "pods", "ns", "p", "")),
    ("POST", "/api/v1/namespaces/ns/pods/p/eviction", False, ("create", "pods", "ns", "p", "eviction")),
    ("PUT", "/api/v1/namespaces/ns", False, ("update", "namespaces", "", "ns", "")),
    ("PUT", "/api/v1/namespaces/ns/finalize", False, ("update", "namespaces", "", "ns", "finalize")),
    ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", False, ("patch", "deployments", "ns", "d", "scale")),
    ("DELETE", "/apis/apps/v1/namespaces/ns/deployments", False, ("deletecollection", "deployments", "ns", "", "")),
])
def test_request_info(method, path, watch, expected):
    info = parse_path(method, path, watch)
    assert info.resource_request
    assert (info.verb, info.resource, info.namespace, info.name, info.subresource) == expected
    assert info.kind is not None


def test_non_resource_paths():
    for path in ("/version", "/api", "/apis", "/apis/apps", "/openapi/v3", "/healthz"):
        assert not parse_path("GET", path, False).resource_request


def test_discovery_serves_every_kind_of_the_registry():
    served = set()
    for core in (True, False):
        for group in discovery.aggregated(core)["items"]:
            for version in group["versions"]:
                for resource in version["resources"]:
                    served.add(resource["responseKind"]["kind"])
    assert served == set(KINDS) | {info.kind for info in REVIEWS.values()}  # reviews: create only
    reviews = {entry["name"]: entry["verbs"] for entry in discovery.api_resource_list("authorization.k8s.io", "v1")["resources"]}
    assert reviews == {"localsubjectaccessreviews": ["create"], "selfsubjectaccessreviews": ["create"], "selfsubjectrulesreviews": ["create"], "subjectaccessreviews": ["create"]}
    pods = next(r for r in discovery.api_resource_list("", "v1")["resources"] if r["name"] == "pods/eviction")
    assert (pods["group"], pods["version"], pods["kind"]) == ("policy", "v1", "Eviction")  # kubectl drain checks this


def test_openapi_patch_operations_take_field_validation_and_strategic_patches():
    for info in KINDS.values():
        group, _, version = info.api_version.rpartition("/")
        document = openapi.v3_document(f"apis/{group}/{version}" if group else f"api/{version}")
        patches = [op["patch"] for op in document["paths"].values() if "patch" in op and op["patch"]["x-kubernetes-group-version-kind"]["kind"] == info.kind]
        assert patches, info.kind
        assert any(p["name"] == "fieldValidation" for p in patches[0]["parameters"])
        assert "application/strategic-merge-patch+json" in patches[0]["requestBody"]["content"]
    core = openapi.v3_document("api/v1")["components"]["schemas"]
    spec = next(schema for name, schema in core.items() if name == "PodSpec")
    assert spec["properties"]["containers"]["x-kubernetes-patch-merge-key"] == "name"
    assert openapi.v3_root()["paths"]["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


# duration.HumanDuration (apimachinery util/duration/duration_test.go's thresholds)
@pytest.mark.parametrize(("seconds", "text"), [
    (-2, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (121, "2m1s"), (599, "9m59s"),
    (600, "10m"), (10799, "179m"), (10800, "3h"), (10860, "3h1m"), (28800, "8h"), (172799, "47h"), (172800, "2d"),
    (176400, "2d1h"), (691200, "8d"), (63072000, "2y"), (63158400, "2y1d"), (252288000, "8y"),
])
def test_human_duration(seconds, text):
    assert tables.human_duration(seconds) == text


def test_table_of_an_unknown_kind_uses_the_default_columns():
    table = tables.table("SomethingNew", [{"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}}], 10.0)
    assert [column["name"] for column in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["x", "2026-01-01T00:00:00Z"]
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_pod_table_row():
    pod = {"metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-01T00:01:00Z"},
           "spec": {"containers": [{"name": "a"}], "nodeName": "n1"},
           "status": {"phase": "Running", "containerStatuses": [{"name": "a", "ready": True, "restartCount": 2, "state": {"running": {}}}]}}
    assert tables.table("Pod", [pod], 30.0)["rows"][0]["cells"][:5] == ["p", "1/1", "Terminating", 2, "30s"]


def test_unknown_fields_are_pruned_with_their_paths():
    pruned, unknown = prune_unknown({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"containers": [{"name": "c", "imagee": "x"}]}}, Pod)
    assert unknown == ["metadata.bogus", "spec.containers[0].imagee"]
    assert pruned["spec"]["containers"] == [{"name": "c"}]


def test_strict_field_validation_refuses_and_warn_warns():
    info = KINDS["Pod"]
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}], "bogus": True}}
    with pytest.raises(Exception, match='strict decoding error: unknown field "spec.bogus"'):
        codec.decode_object(body, info, "Strict")
    obj, warnings = codec.decode_object(body, info, "Warn")
    assert obj.metadata.name == "p" and warnings == ('unknown field "spec.bogus"',)
    assert codec.decode_object(body, info, "Ignore")[1] == ()


def test_negotiation_prefers_the_first_acceptable_entry():
    kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    assert codec.negotiate(kubectl).as_ == "Table"
    assert codec.negotiate("application/vnd.kubernetes.protobuf").protobuf
    assert codec.negotiate("application/vnd.kubernetes.protobuf", protobuf=False) is None  # a custom kind
    assert codec.negotiate("application/vnd.kubernetes.protobuf, application/json").as_ == ""

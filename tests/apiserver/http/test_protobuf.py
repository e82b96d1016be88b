"""Protobuf bodies of the HTTPS front (``application/vnd.kubernetes.protobuf``): the
generated message classes, the converter between the JSON forms and the messages, the
``k8s\\x00`` envelope, watch frames, and content negotiation as kube-apiserver does it."""

from __future__ import annotations

import base64
import re
import struct
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from chaoskube.api.manifests import ManifestError, from_dict
from chaoskube.api.objects import KINDS, KindInfo
from chaoskube.api.protocol import StatusError
from chaoskube.apiserver.http import codec, kubeproto
from chaoskube.apiserver.http.routes import custom_kinds

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = Path("/work/shared/peers/k8s-manifests")
PB = kubeproto.PROTOBUF


# ----------------------------------------------------------------------------- generation
def test_the_committed_modules_are_what_the_committed_schemas_compile_to(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the test extra) bundles protoc")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import k8s_protobuf
    finally:
        sys.path.remove(str(ROOT / "tools"))
    def descriptor(path: Path) -> str:
        """The serialized file descriptor a module registers (what protoc versions agree on;
        headers and runtime checks differ between them)."""
        match = re.search(r"AddSerializedFile\((b'.*?')\)\n", path.read_text(), re.S)
        assert match, path
        return match.group(1)

    built = k8s_protobuf.compile_sources(tmp_path)
    assert len(built) == len(k8s_protobuf.SOURCES)
    for path in built:
        committed = ROOT / k8s_protobuf.PACKAGE / path.name
        assert committed.exists() and descriptor(path) == descriptor(committed), f"{committed.name} is stale: run python tools/k8s_protobuf.py compile"


def test_json_names_come_from_the_go_struct_tags():
    from chaoskube.apiserver.http.k8spb.json_names import JSON_NAMES

    assert JSON_NAMES["k8s.io.api.core.v1.Volume"] == {"volumeSource": ""}
    assert JSON_NAMES["k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration"] == {"Webhooks": "webhooks"}
    assert JSON_NAMES["k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"]["ref"] == "$ref"


# ----------------------------------------------------------------------------- round trips
def _normal(value: Any) -> Any:
    """What protobuf keeps of a JSON form: no nulls, no empty lists or maps (Go's nil and
    empty slices and maps are the same on the wire); numbers written for quantities come
    back as their strings (as Go writes a Quantity)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = _normal(item)
            if item is None or item == []:
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_normal(item) for item in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return value


def _same(original: Any, back: Any, path: str = "") -> list[str]:
    original, back = _normal(original), _normal(back)
    if isinstance(original, dict) and isinstance(back, dict):
        problems = []
        for key in sorted(set(original) | set(back)):
            left, right = original.get(key), back.get(key)
            if left == {} and right is None or right == {} and left is None:
                continue  # an empty map or value struct: the same to Go
            problems += _same(left, right, f"{path}.{key}")
        return problems
    if isinstance(original, list) and isinstance(back, list) and len(original) == len(back):
        return [problem for index, (a, b) in enumerate(zip(original, back, strict=True)) for problem in _same(a, b, f"{path}[{index}]")]
    if isinstance(original, (int, float)) and not isinstance(original, bool) and isinstance(back, str) and str(original) == back:
        return []  # a quantity written as a number
    return [] if original == back else [f"{path}: {original!r} came back as {back!r}"]


def _manifest_objects() -> list[tuple[str, dict[str, Any]]]:
    found = []
    if not MANIFESTS.exists():
        return found
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if not isinstance(document, dict) or document.get("kind") not in KINDS:
                continue
            try:
                obj = from_dict(document, str(path))
            except ManifestError:
                continue
            found.append((f"{path.relative_to(MANIFESTS)}#{index}", codec.encode_object(obj)))
    return found


#: Kinds the manifests lack, written with the fields the simulated components set (statuses,
#: timestamps, raw data, quantities, int-or-strings, schemas).
EXAMPLES: list[dict[str, Any]] = [
    {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "web-7d9", "namespace": "d", "creationTimestamp": "2026-01-01T00:00:05Z"},
     "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}, "revision": 2},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
     "spec": {"holderIdentity": "kube-scheduler-1", "leaseDurationSeconds": 15, "acquireTime": "2026-01-01T00:00:01.250000Z", "renewTime": "2026-01-01T00:01:02.000001Z", "leaseTransitions": 3}},
    {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-abc", "namespace": "d", "labels": {"kubernetes.io/service-name": "web"}},
     "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.4"], "conditions": {"ready": True, "serving": True, "terminating": False}, "nodeName": "node-1", "zone": "zone-a", "targetRef": {"kind": "Pod", "name": "web-1", "namespace": "d", "uid": "u-1"}}],
     "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d"}, "type": "Opaque", "data": {"password": base64.b64encode(b"\x00\xffsecret").decode()}},
    {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "d"}, "spec": {"hard": {"pods": "10", "requests.cpu": "4"}}, "status": {"hard": {"pods": "10"}, "used": {"pods": "3"}}},
    {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l", "namespace": "d"}, "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"memory": "64Mi"}}]}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}, "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "standard",
     "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "d", "name": "data-0", "uid": "u-2"}}, "status": {"phase": "Bound"}},
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "d", "generation": 1}, "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": "web"}}},
     "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
                "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods", "message": "", "lastTransitionTime": "2026-01-01T00:00:09Z", "observedGeneration": 1}]}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"},
    {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": "d"},
     "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": 5432, "protocol": "TCP"}, {"port": "metrics"}]}], "policyTypes": ["Ingress"]}},
    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h", "namespace": "d"},
     "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
              "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]},
     "status": {"currentReplicas": 2, "desiredReplicas": 3, "lastScaleTime": "2026-01-01T00:02:00Z"}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"},
     "webhooks": [{"name": "m.example.com", "clientConfig": {"url": "https://127.0.0.1:9443/mutate", "caBundle": base64.b64encode(b"PEM").decode()}, "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "*"}],
                   "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5, "failurePolicy": "Fail", "reinvocationPolicy": "Never"}]},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "foos.example.com"},
     "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList", "shortNames": ["fo"]},
              "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                            "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1}, "port": {"x-kubernetes-int-or-string": True},
                                         "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}, "extra": {"type": "object", "additionalProperties": {"type": "string"}}, "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                         "mode": {"type": "string", "enum": ["a", "b"]}},
                                         "x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "too many"}]},
                                "status": {"type": "object", "additionalProperties": False, "properties": {"replicas": {"type": "integer"}}}}}}}]},
     "status": {"conditions": [{"type": "Established", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
                "acceptedNames": {"plural": "foos", "kind": "Foo"}, "storedVersions": ["v1"]}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "uid": "u-3", "resourceVersion": "42", "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-01T00:00:40Z", "deletionGracePeriodSeconds": 30,
                                                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-4", "controller": True, "blockOwnerDeletion": True}], "finalizers": ["example.com/f"],
                                                     "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]},
     "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                              "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}, "livenessProbe": {"tcpSocket": {"port": 80}}}],
              "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "cm", "configMap": {"name": "cfg", "defaultMode": 420}}], "nodeName": "node-1", "terminationGracePeriodSeconds": 30,
              "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
     "status": {"phase": "Running", "podIP": "10.0.0.4", "podIPs": [{"ip": "10.0.0.4"}], "startTime": "2026-01-01T00:00:01Z", "qosClass": "Burstable",
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-01-01T00:00:03Z"}],
                "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0, "image": "nginx", "imageID": "", "started": True, "state": {"running": {"startedAt": "2026-01-01T00:00:02Z"}},
                                       "lastState": {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z"}}}]}},
]


def _every_kind_example(info: KindInfo) -> dict[str, Any]:
    """The smallest object of a kind, as the API server writes it (its required fields)."""
    metadata = {"name": "x", "namespace": "d"} if info.namespaced else {"name": "x"}
    return codec.encode_object(from_dict({"apiVersion": info.api_version, "kind": info.kind, "metadata": metadata}, "<example>"))


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases = _manifest_objects()
    cases += [(f"example {doc['kind']}", codec.encode_object(from_dict(doc, "<example>"))) for doc in EXAMPLES]
    for info in KINDS.values():
        try:
            cases.append((f"smallest {info.kind}", _every_kind_example(info)))
        except ManifestError:
            pass  # a kind whose smallest object needs more than a name (covered by EXAMPLES or the manifests)
    return cases


def test_every_kind_the_front_serves_round_trips_through_protobuf():
    cases = _cases()
    covered = {data["kind"] for _, data in cases}
    assert covered >= set(KINDS), f"kinds without a round-trip case: {sorted(set(KINDS) - covered)}"
    failures = []
    for name, data in cases:
        wire = kubeproto.encode(data)
        assert wire.startswith(b"k8s\x00")
        back = kubeproto.decode(wire)
        assert (back["apiVersion"], back["kind"]) == (data["apiVersion"], data["kind"])
        failures += [f"{name}: {problem}" for problem in _same(data, back)]
        assert kubeproto.encode(back) == wire, name  # a fixed point after one trip
    assert not failures, "\n".join(failures[:30])


def test_lists_status_and_partial_metadata_have_protobuf_forms():
    info = KINDS["Pod"]
    pod = codec.encode_object(from_dict(EXAMPLES[-1], "<example>"))
    listed = codec.encode_list(info, [pod, pod], "77", continue_token="abc", remaining=3)
    back = kubeproto.decode(kubeproto.encode(listed))
    assert back["kind"] == "PodList" and back["metadata"] == {"resourceVersion": "77", "continue": "abc", "remainingItemCount": 3}
    assert [item["metadata"]["name"] for item in back["items"]] == ["p", "p"] and "kind" not in back["items"][0]
    from chaoskube.api.protocol import Status

    status = codec.encode_status(Status(409, "Conflict", 'Operation cannot be fulfilled on pods "p"', causes=("spec.replicas: Invalid value: -1: must be >= 0",)), name="p", resource="pods")
    back = kubeproto.decode(kubeproto.encode(status))
    assert back["kind"] == "Status" and back["code"] == 409 and back["details"]["causes"][0] == {"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be >= 0", "field": "spec.replicas"}
    partial = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": {"resourceVersion": "5"}, "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {"name": "a"}}]}
    assert kubeproto.decode(kubeproto.encode(partial))["items"] == [{"metadata": {"name": "a"}}]


def test_the_special_types_map_as_their_go_marshalers_do():
    cls = kubeproto.message_class("v1", "Pod")
    message = kubeproto.to_message({"metadata": {"creationTimestamp": "2026-01-01T00:00:05Z"}, "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}], "livenessProbe": {"httpGet": {"port": "http"}}}]}}, cls)
    assert message.metadata.creationTimestamp.seconds == 1767225605
    assert message.spec.containers[0].livenessProbe.handler.httpGet.port.strVal == "http"  # inline ProbeHandler; IntOrString type 1
    lease = kubeproto.to_message({"spec": {"renewTime": "2026-01-01T00:00:01.000250Z"}}, kubeproto.message_class("coordination.k8s.io/v1", "Lease"))
    assert lease.spec.renewTime.nanos == 250_000
    assert kubeproto.from_message(lease)["spec"]["renewTime"] == "2026-01-01T00:00:01.000250Z"
    empty = cls()
    empty.metadata.creationTimestamp.SetInParent()  # Go writes the zero Time: JSON null
    assert kubeproto.from_message(empty) == {"metadata": {}}
    revision = kubeproto.to_message({"data": {"a": [1, {"b": None}]}}, kubeproto.message_class("apps/v1", "ControllerRevision"))
    assert revision.data.raw == b'{"a":[1,{"b":null}]}'  # RawExtension: the JSON bytes
    schema_cls = kubeproto.message_class("apiextensions.k8s.io/v1", "JSONSchemaProps")
    schema = kubeproto.to_message({"$ref": "#/x", "x-kubernetes-preserve-unknown-fields": True, "additionalProperties": False, "items": [{"type": "string"}], "default": {"a": 1}}, schema_cls)
    assert (schema.ref, schema.xKubernetesPreserveUnknownFields, schema.additionalProperties.allows, len(schema.items.jSONSchemas), schema.default.raw) == ("#/x", True, False, 1, b'{"a":1}')
    assert kubeproto.from_message(schema) == {"$ref": "#/x", "items": [{"type": "string"}], "default": {"a": 1}, "additionalProperties": False, "x-kubernetes-preserve-unknown-fields": True}
    secret = kubeproto.to_message({"data": {"k": "AP8="}}, kubeproto.message_class("v1", "Secret"))
    assert secret.data["k"] == b"\x00\xff"
    review = kubeproto.to_message({"spec": {"extra": {"scopes": ["a", "b"]}}}, kubeproto.message_class("authorization.k8s.io/v1", "SubjectAccessReview"))
    assert list(review.spec.extra["scopes"].items) == ["a", "b"]  # ExtraValue: a Go named slice
    assert kubeproto.from_message(review) == {"spec": {"extra": {"scopes": ["a", "b"]}}}


@pytest.mark.parametrize(("text", "nanos"), [("0s", 0), ("1h0m0s", 3600 * 10**9), ("1m30s", 90 * 10**9), ("1.5s", 1_500_000_000), ("300ms", 300_000_000), ("2µs", 2000), ("-5s", -5 * 10**9)])
def test_durations_are_go_duration_strings(text, nanos):
    assert kubeproto._parse_duration(text, "d") == nanos  # noqa: SLF001
    assert kubeproto._format_duration(nanos) == text  # noqa: SLF001


def test_what_the_schema_cannot_hold_is_refused_with_its_path():
    with pytest.raises(kubeproto.ProtoError, match=r"spec\.bogus: k8s\.io\.api\.apps\.v1\.DeploymentSpec has no such field"):
        kubeproto.encode({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {"bogus": 1}})
    with pytest.raises(kubeproto.ProtoError, match="expected prefix"):
        kubeproto.decode(b'{"kind":"Pod"}')
    assert not kubeproto.supports("example.com/v1", "Foo")


def test_a_watch_frame_is_a_length_then_a_watch_event_holding_the_enveloped_object():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "9"}}
    frame = kubeproto.encode_watch_frame("ADDED", kubeproto.encode(pod))
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    event = kubeproto.message_class("meta.k8s.io/v1", "WatchEvent")()
    event.ParseFromString(frame[4:])
    assert event.type == "ADDED" and kubeproto.decode(event.object.raw)["metadata"] == {"name": "p", "resourceVersion": "9"}


# ----------------------------------------------------------------------------- bodies
def test_request_bodies_in_protobuf_decode_as_their_json_forms():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": ""}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}, "strategy": {}}, "status": {}}
    info = KINDS["Deployment"]
    data = codec.decode_body(kubeproto.encode(deployment), PB, info)
    obj, warnings = codec.decode_object(data, info, "Strict")
    assert obj.spec.replicas == 0 and obj.spec.template.spec.containers[0].image == "nginx" and warnings == ()  # a pointer's zero is kept
    with pytest.raises(StatusError) as refused:
        codec.decode_body(b"not protobuf", PB, info)
    assert refused.value.status.code == 400 and "Deployment in version \"v1\" cannot be handled as a Deployment: provided data does not appear to be a protobuf message" in refused.value.status.message
    with pytest.raises(StatusError) as unsupported:
        codec.decode_body(b"x", "text/plain", info)
    assert unsupported.value.status.code == 415 and "application/vnd.kubernetes.protobuf" in unsupported.value.status.message
    with pytest.raises(StatusError) as cbor:
        codec.decode_body(b"x", "application/cbor", info)
    assert cbor.value.status.code == 415


def test_a_custom_kind_decodes_no_protobuf():
    crd = from_dict(EXAMPLES[-2], "<crd>")
    foo = custom_kinds([crd])[0].info
    body = kubeproto.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    with pytest.raises(StatusError) as refused:
        codec.decode_body(body, PB, foo)
    assert refused.value.status.code == 400 and "does not implement the protobuf marshalling interface" in refused.value.status.message


# ----------------------------------------------------------------------------- negotiation
#: k8s.io/apiserver pkg/endpoints/handlers/negotiation/negotiate_test.go (v0.32.9)
#: TestNegotiate, every row: (Accept, the server's types, the type chosen or None for 406,
#: the parameters the choice carries).
UPSTREAM_NEGOTIATE = [
    (None, ("application/json",), "application/json", {}),  # no Accept header at all
    ("", ("application/json",), "application/json", {}),
    ("*/*", ("application/json",), "application/json", {}),
    ("application/*", ("application/json",), "application/json", {}),
    ("application/json", ("application/json",), "application/json", {}),
    ("application/json", ("application/json", "application/protobuf"), "application/json", {}),
    ("application/protobuf", ("application/json", "application/protobuf"), "application/protobuf", {}),
    ("application/json; pretty=1", ("application/json",), "application/json", {"pretty": "1"}),
    ("unrecognized/stuff,application/json; pretty=1", ("application/json",), "application/json", {"pretty": "1"}),
    ("application/json", ("application/json",), "application/json", {"pretty": "1"}),  # ?pretty=1
    ("application/json", ("application/json",), "application/json", {"pretty": "1"}),  # User-Agent curl
    ("application/json", ("application/json",), "application/json", {"pretty": "1"}),  # User-Agent Wget
    ("application/json", ("application/json",), "application/json", {"pretty": "1"}),  # User-Agent Mozilla/5.0
    ("application/json;as=BOGUS;v=v1beta1;g=meta.k8s.io, application/json", ("application/json",), "application/json", {}),
    ("application/BOGUS, application/json", ("application/json",), "application/json", {}),
    ("application", ("application",), None, {}),
    (None, (), None, {}),
    ("*/*", (), None, {}),
]
#: Rows 10-13 ask for pretty printing by the query or the User-Agent: not modelled (the
#: front writes compact JSON to every client; pretty output changes no client's behaviour).
NOT_MODELLED = {9, 10, 11, 12}


@pytest.mark.parametrize("row", range(len(UPSTREAM_NEGOTIATE)))
def test_negotiation_as_upstream_negotiate_test(row):
    accept, served, chosen, params = UPSTREAM_NEGOTIATE[row]
    if row in NOT_MODELLED:
        pytest.xfail("pretty printing by query or User-Agent is not modelled")
    media = codec.negotiate(accept or "", served=served)
    if chosen is None:
        assert media is None
    else:
        assert media is not None and media.type == chosen
        assert {key: value for key, value in media.params.items() if key == "pretty"} == params


@pytest.mark.parametrize(("accept", "kwargs", "chosen", "as_"), [
    # client-go with ContentType protobuf (kubectl's generators, kube components)
    ("application/vnd.kubernetes.protobuf, */*", {}, PB, ""),
    ("application/vnd.kubernetes.protobuf,application/json", {}, PB, ""),
    ("application/vnd.kubernetes.protobuf, */*", {"protobuf": False}, "application/json", ""),  # a custom resource: JSON from */*
    ("application/vnd.kubernetes.protobuf", {"protobuf": False}, None, ""),  # ... and 406 if nothing else
    # quality values, then concrete types before wildcards (goautoneg)
    ("application/json;q=0.5, application/vnd.kubernetes.protobuf", {}, PB, ""),
    ("*/*;q=0.8, application/vnd.kubernetes.protobuf;q=0.9", {}, PB, ""),
    ("*/*, application/vnd.kubernetes.protobuf", {}, PB, ""),
    ("application/*, application/vnd.kubernetes.protobuf", {}, PB, ""),
    # Tables are JSON only; partial metadata has a protobuf form, custom kinds included
    ("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io", {}, "application/json", "Table"),
    ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io, application/json", {"protobuf": False}, PB, "PartialObjectMetadataList"),
    ("application/json;as=Table;v=v1;g=meta.k8s.io, application/json", {"table": False}, "application/json", ""),
    # watches: YAML has no stream serializer
    ("application/vnd.kubernetes.protobuf;stream=watch", {"stream": True}, PB, ""),
    ("application/yaml", {"stream": True}, None, ""),
    ("application/yaml", {}, "application/json", ""),
])
def test_negotiation_of_protobuf(accept, kwargs, chosen, as_):
    media = codec.negotiate(accept, **kwargs)
    if chosen is None:
        assert media is None
    else:
        assert media is not None and (media.type, media.as_) == (chosen, as_)


def test_an_object_protobuf_cannot_hold_is_a_500_not_a_dropped_connection():
    from chaoskube.apiserver.http.front import ApiFront

    media = codec.negotiate(PB)
    assert ApiFront._render(None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, media).startswith(b"k8s\x00")  # noqa: SLF001
    with pytest.raises(StatusError) as failed:
        ApiFront._render(None, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "newerField": 1}, media)  # noqa: SLF001
    assert failed.value.status.code == 500 and "newerField" in failed.value.status.message

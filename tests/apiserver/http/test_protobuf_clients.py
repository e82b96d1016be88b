"""Real clients in protobuf against the HTTPS front: kubectl 1.32's generators (``create
namespace|configmap|deployment|job``, ``run``, ``expose``) send
``application/vnd.kubernetes.protobuf`` bodies and read protobuf answers; every kind the
cluster holds is listed in protobuf and matches its JSON listing; a watch streams protobuf
frames."""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

from chaoskube.apiserver.http import kubeproto
from tests.apiserver.http.live_cluster import live_cluster

KUBECTL = shutil.which("kubectl")
PB = kubeproto.PROTOBUF


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_cluster(tmp_path_factory.mktemp("live-protobuf")) as (handle, outcome):
        yield handle
    result = outcome.get("result")
    assert result is not None, outcome.get("error")


def kubectl(live, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine (the machine image has /usr/bin/kubectl)")
    result = subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr[-2000:]}"
    return result


def get_json(live, *args: str) -> dict:
    return json.loads(kubectl(live, "get", *args, "-o", "json").stdout)


def test_kubectl_generators_create_in_protobuf(live):
    verbose = kubectl(live, "create", "namespace", "proto", "-v=8")
    # kubectl's typed client sent protobuf and the answer came back in protobuf
    assert f"Content-Type: {PB}" in verbose.stderr and f"Accept: {PB}" in verbose.stderr
    assert '"Content-Type" values=["application/vnd.kubernetes.protobuf"]' in verbose.stderr or f"Content-Type: {PB}" in verbose.stderr.split("Response Status")[-1]
    assert "namespace/proto created" in verbose.stdout
    kubectl(live, "-n", "proto", "create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3")
    kubectl(live, "-n", "proto", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80")
    kubectl(live, "-n", "proto", "create", "job", "once", "--image=busybox", "--", "true")
    for _ in range(30):  # the ServiceAccount controller creates `default` just after the namespace, as upstream
        if kubectl(live, "-n", "proto", "get", "serviceaccount", "default", check=False).returncode == 0:
            break
        time.sleep(0.5)
    kubectl(live, "-n", "proto", "run", "solo", "--image=nginx", "--labels=app=solo", "--env=A=1")
    kubectl(live, "-n", "proto", "expose", "deployment", "web", "--port=8080", "--target-port=80")
    assert get_json(live, "-n", "proto", "configmap", "settings")["data"] == {"level": "3", "mode": "fast"}
    deployment = get_json(live, "-n", "proto", "deployment", "web")
    assert deployment["spec"]["replicas"] == 2 and deployment["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"  # defaulted from the empty strategy protobuf carries
    job = get_json(live, "-n", "proto", "job", "once")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["true"]
    pod = get_json(live, "-n", "proto", "pod", "solo")
    assert pod["metadata"]["labels"] == {"app": "solo"} and pod["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    service = get_json(live, "-n", "proto", "service", "web")
    assert service["spec"]["selector"] == {"app": "web"} and service["spec"]["ports"][0]["port"] == 8080 and service["spec"]["ports"][0]["targetPort"] == 80
    kubectl(live, "-n", "proto", "rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    kubectl(live, "-n", "proto", "scale", "deployment/web", "--replicas=3")
    status, headers, body = _raw(live, "/apis/apps/v1/namespaces/proto/deployments/web/scale", f"{PB}, application/json")
    scale = kubeproto.decode(body)
    assert status == 200 and headers["content-type"] == PB and (scale["apiVersion"], scale["kind"], scale["spec"]) == ("autoscaling/v1", "Scale", {"replicas": 3})
    # a create that fails answers a protobuf Status kubectl reads
    again = kubectl(live, "create", "namespace", "proto", check=False)
    assert again.returncode != 0 and 'namespaces "proto" already exists' in again.stderr


def _raw(live, path: str, accept: str, *, method: str = "GET", body: bytes | None = None, content_type: str = "") -> tuple[int, dict[str, str], bytes]:
    """One request, the answer's bytes undecoded (the Python client's transport)."""
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import config

    api_client = config.new_client_from_config(str(live.kubeconfig))
    headers = {"Accept": accept, **({"Content-Type": content_type} if content_type else {})}
    response = api_client.call_api(method, api_client.configuration.host + path, header_params=headers, body=body)
    return response.status, {key.lower(): value for key, value in response.headers.items()}, response.read()


@pytest.mark.parametrize("path", [
    "/api/v1/pods", "/api/v1/nodes", "/api/v1/namespaces", "/api/v1/services", "/api/v1/serviceaccounts", "/api/v1/configmaps", "/api/v1/endpoints",
    "/apis/apps/v1/deployments", "/apis/apps/v1/replicasets", "/apis/coordination.k8s.io/v1/leases", "/apis/discovery.k8s.io/v1/endpointslices",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
])
def test_every_listing_in_protobuf_is_its_json_listing(live, path):
    status, headers, body = _raw(live, path, f"{PB}, application/json")
    assert status == 200 and headers["content-type"] == PB and body.startswith(b"k8s\x00")
    listed = kubeproto.decode(body)
    status, _, text = _raw(live, path + f"?resourceVersion={listed['metadata']['resourceVersion']}&resourceVersionMatch=Exact", "application/json")
    assert status == 200
    as_json = json.loads(text)
    mine_items = listed.get("items", [])  # an empty list is no field in protobuf
    assert listed["kind"] == as_json["kind"] and len(mine_items) == len(as_json["items"])
    for mine, theirs in zip(mine_items, as_json["items"], strict=True):
        assert kubeproto.encode(mine, api_version=as_json["apiVersion"], kind=as_json["kind"][:-4]) == kubeproto.encode(theirs, api_version=as_json["apiVersion"], kind=as_json["kind"][:-4])


def test_a_watch_streams_protobuf_frames_and_a_missing_object_is_a_protobuf_status(live):
    status, headers, body = _raw(live, "/api/v1/namespaces/default/configmaps/missing", PB)
    assert status == 404 and headers["content-type"] == PB
    assert kubeproto.decode(body)["reason"] == "NotFound"
    status, headers, body = _raw(live, "/api/v1/namespaces?watch=1&timeoutSeconds=1", f"{PB};stream=watch")
    assert status == 200 and headers["content-type"] == f"{PB};stream=watch"
    names = []
    event_class = kubeproto.message_class("meta.k8s.io/v1", "WatchEvent")
    while body:
        (length,) = struct.unpack(">I", body[:4])
        event = event_class()
        event.ParseFromString(body[4:4 + length])
        body = body[4 + length:]
        assert event.type == "ADDED"
        names.append(kubeproto.decode(event.object.raw)["metadata"]["name"])
    assert "default" in names and "kube-system" in names
    status, _, _ = _raw(live, "/api/v1/namespaces?watch=1", "application/yaml")
    assert status == 406  # YAML has no stream form
    # a metadata informer's watch (client-go's metadata client, the garbage collector's)
    status, headers, body = _raw(live, "/api/v1/namespaces?watch=1&timeoutSeconds=1", f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json")
    assert status == 200 and headers["content-type"] == f"{PB};stream=watch"
    (length,) = struct.unpack(">I", body[:4])
    event = event_class()
    event.ParseFromString(body[4:4 + length])
    partial = kubeproto.decode(event.object.raw)
    assert (partial["apiVersion"], partial["kind"], set(partial)) == ("meta.k8s.io/v1", "PartialObjectMetadata", {"apiVersion", "kind", "metadata"})
    status, _, body = _raw(live, "/api/v1/namespaces?watch=1&timeoutSeconds=1", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    first = json.loads(body.splitlines()[0])
    assert status == 200 and first["object"]["kind"] == "PartialObjectMetadata" and "spec" not in first["object"]


CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


def test_a_custom_resource_is_answered_in_json_and_refuses_a_protobuf_body(live):
    """CRDs have no protobuf schema: the CRD handler leaves protobuf out of what it answers
    a plain object in (JSON from the rest of Accept, else 406) and cannot decode a protobuf
    body into an Unstructured (400), apiextensions-apiserver customresource_handler.go."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), "apply", "-f", "-"], input=CRD, text=True, check=True, capture_output=True, timeout=30)
    kubectl(live, "wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=30s", timeout=40)
    gadget = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {size: 3}\n"
    subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), "apply", "-f", "-"], input=gadget, text=True, check=True, capture_output=True, timeout=30)
    path = "/apis/example.com/v1/namespaces/default/gadgets"
    status, headers, body = _raw(live, f"{path}/g1", f"{PB}, application/json")
    assert status == 200 and headers["content-type"] == "application/json" and json.loads(body)["spec"] == {"size": 3}
    status, headers, body = _raw(live, f"{path}/g1", PB)
    assert status == 406 and headers["content-type"] == PB and kubeproto.decode(body)["reason"] == "NotAcceptable"
    status, _, body = _raw(live, f"{path}/g1", f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
    assert status == 200 and kubeproto.decode(body)["metadata"]["name"] == "g1"  # a transform: protobuf is fine
    wire = kubeproto.encode({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "g2"}})  # any protobuf object
    status, _, body = _raw(live, path, "application/json", method="POST", body=wire, content_type=PB)
    assert status == 400 and "does not implement the protobuf marshalling interface" in json.loads(body)["message"]
    status, _, _ = _raw(live, path, "application/json", method="POST", body=b"size: 1", content_type="text/plain")
    assert status == 415


SAMPLE_CONTROLLER = Path(__file__).resolve().parents[4] / "shared" / "peers" / "sample-controller"
if not SAMPLE_CONTROLLER.exists():
    SAMPLE_CONTROLLER = Path("/work/shared/peers/sample-controller")


@pytest.mark.slow
def test_client_go_in_protobuf(live, tmp_path):
    """client-go v0.26 set to protobuf (``goproto/main.go``, built in GOPATH mode beside the
    sample-controller's sources): Go's own protobuf decoders read what the front writes."""
    if not (SAMPLE_CONTROLLER / "gopath" / "src" / "k8s.io" / "client-go").exists():
        pytest.skip(f"client-go's sources are not at {SAMPLE_CONTROLLER}/gopath")
    from tests.debian import require

    go = require("golang-go", lambda: shutil.which("go"), "a Go toolchain (go) on PATH")
    source = tmp_path / "gopath" / "src" / "goproto"
    source.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("goproto") / "main.go", source / "main.go")
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{tmp_path / 'gopath'}:{SAMPLE_CONTROLLER / 'gopath'}", "GOFLAGS": "", "GOPROXY": "off"}
    built = subprocess.run([go, "build", "-o", str(tmp_path / "goproto"), "goproto"], env=env, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    ran = subprocess.run([str(tmp_path / "goproto"), str(live.kubeconfig)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout)
    assert report["listed"] == 1 and report["updated_mode"] == "slow" and report["stale_update_conflict"] is True
    assert report["created_uid"] and report["created_at"].startswith("20")
    assert report["watch_event"] == "MODIFIED" and report["watch_mode"] == "slow" and report["watch_blob"] == base64.b64encode(bytes([0, 255, 7])).decode()
    assert report["get_after_delete_not_found"] is True
    assert report["deployment_strategy"] == "RollingUpdate" and report["deployment_max_surge"] == "25%" and report["scaled_replicas"] == 3
    assert report["pods"] >= 1 and report["running_pods"] >= 1 and report["ready_nodes"] == 2 and report["node_cpu"]
    types = report["content_types"]
    assert set(types) == {f"request {PB}", f"answer {PB}", f"answer {PB};stream=watch"}, types  # protobuf both ways, nothing else

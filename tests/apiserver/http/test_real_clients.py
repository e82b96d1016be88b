"""Real clients against the HTTPS front: kubectl (apply of the guestbook, get -w, rollout
status, scale, drain, delete) and the official Python client (CRUD, conflicts, watches
resumed from a resourceVersion), including an API server killed under them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.apiserver.http.live_cluster import live_cluster

KUBECTL = shutil.which("kubectl")
GUESTBOOK = Path(__file__).resolve().parents[4] / "shared" / "peers" / "k8s-manifests" / "kubernetes" / "examples" / "web" / "guestbook"
if not GUESTBOOK.exists():
    GUESTBOOK = Path("/work/shared/peers/k8s-manifests/kubernetes/examples/web/guestbook")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_cluster(tmp_path_factory.mktemp("live")) as (handle, outcome):
        yield handle
    result = outcome.get("result")
    assert result is not None, outcome.get("error")
    assert result.live["replayable"] is False
    assert result.verdicts["steady-state"].valid is True, result.verdicts["steady-state"].reason
    from chaoskube.api import protocol

    assert protocol.EPOCH == protocol.SIMULATION_EPOCH  # the live run put the simulation's epoch back


def kubectl(live, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine (the machine image has /usr/bin/kubectl)")
    result = subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


def test_object_timestamps_are_the_wall_clock_of_a_live_run(live):
    """Virtual time 0 of a live run is the wall-clock second it began, so the timestamps a
    client reads are wall times (kubectl describe's ages; an operator's requeue after a
    creationTimestamp): before, every object was dated 2026-01-01 plus virtual time."""
    import datetime as dt

    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    kubectl(live, "create", "configmap", "epoch-probe", "--from-literal=k=v")
    stamp = kubectl(live, "get", "configmap", "epoch-probe", "-o", "jsonpath={.metadata.creationTimestamp}").stdout.strip()
    after = dt.datetime.now(dt.timezone.utc)
    created = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before - dt.timedelta(seconds=3) <= created <= after, (before, stamp, after)
    described = kubectl(live, "describe", "configmap", "epoch-probe").stdout
    assert "<invalid>" not in described
    kubectl(live, "delete", "configmap", "epoch-probe")


def test_kubectl_apply_guestbook_get_rollout_scale_delete(live):
    if not GUESTBOOK.exists():
        pytest.skip(f"the guestbook manifests are not at {GUESTBOOK}")
    files = [GUESTBOOK / name for name in ("redis-master-deployment.yaml", "redis-master-service.yaml", "frontend-deployment.yaml", "frontend-service.yaml")]
    out = kubectl(live, "apply", *(arg for path in files for arg in ("-f", str(path)))).stdout
    assert "deployment.apps/frontend created" in out and "service/frontend created" in out
    assert "unchanged" in kubectl(live, "apply", "-f", str(files[2])).stdout  # client-side apply: no diff
    kubectl(live, "rollout", "status", "deployment/frontend", "--timeout=90s", timeout=120)
    table = kubectl(live, "get", "pods", "-l", "tier=frontend").stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "READY", "STATUS"] and len(table) == 4
    assert all(" Running " in line for line in table[1:])
    kubectl(live, "scale", "deployment/frontend", "--replicas=1")
    kubectl(live, "set", "image", "deployment/frontend", "php-redis=nginx:1.27")
    kubectl(live, "rollout", "status", "deployment/frontend", "--timeout=90s", timeout=120)
    # The strategic merge patch kubectl apply computes puts the image back.
    assert "configured" in kubectl(live, "apply", "-f", str(files[2])).stdout
    image = kubectl(live, "get", "deployment", "frontend", "-o", "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image == "gcr.io/google-samples/gb-frontend:v5"
    listed = kubectl(live, "get", "pods", "--chunk-size=1", "-o", "name").stdout.split()
    assert len(listed) >= 2  # pages of one, continue tokens followed to the end
    kubectl(live, "delete", "-f", str(files[3]))
    missing = kubectl(live, "get", "service", "frontend", check=False)
    assert missing.returncode == 1 and 'services "frontend" not found' in missing.stderr


def test_kubectl_get_pods_watch_sees_a_new_pod(live):
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    watcher = subprocess.Popen([KUBECTL, "--kubeconfig", str(live.kubeconfig), "get", "pods", "-w", "-n", "default"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        manifest = "apiVersion: v1\nkind: Pod\nmetadata: {name: watched}\nspec: {containers: [{name: c, image: nginx}]}\n"
        subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), "apply", "-f", "-"], input=manifest, text=True, check=True, capture_output=True, timeout=30)
        time.sleep(4.0)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    kubectl(live, "delete", "pod", "watched", "--grace-period=0", "--force")  # a bare pod would stop kubectl drain
    lines = [line for line in out.splitlines() if line.startswith("watched")]
    assert lines, out
    assert any("Running" in line for line in lines) or any("ContainerCreating" in line or "Pending" in line for line in lines)


def test_kubectl_drain_evicts_through_the_eviction_api(live):
    kubectl(live, "create", "deployment", "drained", "--image=nginx", "--replicas=2")  # a generator: a protobuf body
    kubectl(live, "rollout", "status", "deployment/drained", "--timeout=90s", timeout=120)
    out = kubectl(live, "drain", "node-1", "--ignore-daemonsets", "--timeout=60s", timeout=90)
    assert "node/node-1 cordoned" in out.stdout and "drained" in out.stdout
    nodes = kubectl(live, "get", "nodes").stdout
    assert "SchedulingDisabled" in next(line for line in nodes.splitlines() if line.startswith("node-1"))
    kubectl(live, "uncordon", "node-1")
    events = live.call(lambda: [e for e in live.world.journal.events if e.get("type") == "api-op" and e.get("subresource") == "eviction" and e.get("phase") == "ok"])
    assert events and all(event["client"] == "outside" for event in events)


def test_python_client_crud_conflict_and_watch_resumption(live):
    kubernetes = pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config, watch
    from kubernetes.client.rest import ApiException

    api = client.CoreV1Api(api_client=config.new_client_from_config(str(live.kubeconfig)))
    del kubernetes
    created = api.create_namespaced_service("default", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "py"}, "spec": {"selector": {"app": "py"}, "ports": [{"port": 80}]}})
    stale = created.metadata.resource_version
    read = api.read_namespaced_service("py", "default")
    read.metadata.labels = {"step": "1"}
    updated = api.replace_namespaced_service("py", "default", read)
    assert int(updated.metadata.resource_version) > int(stale)
    read.metadata.resource_version = stale
    with pytest.raises(ApiException) as conflict:
        api.replace_namespaced_service("py", "default", read)
    assert conflict.value.status == 409 and conflict.value.reason == "Conflict" and '"reason":"Conflict"' in conflict.value.body
    patched = api.patch_namespaced_service("py", "default", {"metadata": {"labels": {"step": "2"}}})
    assert patched.metadata.labels == {"step": "2"}
    listed = api.list_namespaced_service("default", label_selector="step=2")
    assert [s.metadata.name for s in listed.items] == ["py"]
    # A watch resumed from the list's resourceVersion sees what happened after it, only.
    api.patch_namespaced_service("py", "default", {"metadata": {"labels": {"step": "3"}}})
    api.delete_namespaced_service("py", "default")
    events = [(event["type"], event["object"].metadata.labels) for event in watch.Watch().stream(api.list_namespaced_service, "default", resource_version=listed.metadata.resource_version, timeout_seconds=2)]
    assert events == [("MODIFIED", {"step": "3"}), ("DELETED", {"step": "3"})]
    with pytest.raises(ApiException) as missing:
        api.read_namespaced_service("py", "default")
    assert missing.value.status == 404


def test_a_killed_api_server_refuses_connections_and_its_restart_serves_again(live):
    def kill() -> None:
        live.world.process("kube-apiserver-1").kill()

    live.call(kill)
    time.sleep(0.5)
    refused = kubectl(live, "get", "nodes", "--request-timeout=5s", check=False)
    assert refused.returncode != 0 and "refused" in refused.stderr
    other = kubectl(live, "--context", "chaoskube-apiserver-2", "get", "nodes")  # the other replica serves
    assert "node-1" in other.stdout
    live.call(lambda: live.world.process("kube-apiserver-1").start())
    deadline = time.monotonic() + 30
    while True:
        again = kubectl(live, "get", "nodes", "--request-timeout=5s", check=False)
        if again.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert again.returncode == 0, again.stderr


def test_a_partitioned_api_server_stalls_requests(live):
    outside = {"outside"}
    live.call(lambda: live.world.network.partition({"kube-apiserver-2": outside}))
    try:
        started = time.monotonic()
        stalled = kubectl(live, "--context", "chaoskube-apiserver-2", "get", "nodes", "--request-timeout=3s", check=False, timeout=30)
        assert stalled.returncode != 0 and time.monotonic() - started >= 2.5
        assert "Timeout" in stalled.stderr or "timeout" in stalled.stderr or "deadline" in stalled.stderr
    finally:
        live.call(live.world.network.heal)
    assert "node-1" in kubectl(live, "--context", "chaoskube-apiserver-2", "get", "nodes").stdout


def test_outside_requests_are_journaled_as_the_simulated_clients_and_judged(live):
    """The front journals what a real client did in the simulated client's shape
    (chaoskube.api.oplog): the replace with a stale resourceVersion as a compare-and-set,
    gets and lists as api-read; api-linearizability judges them with the cluster's own."""
    from chaoskube.checkers.api_linearizability import check_api_linearizability

    test_python_client_crud_conflict_and_watch_resumption(live)
    events = live.call(lambda: list(live.world.journal.events))
    outside_ops = [e for e in events if e.get("type") == "api-op" and e.get("client") == "outside" and e.get("resource") == "services" and e.get("name") == "py"]
    replaces = [e for e in outside_ops if e["verb"] == "update" and e["phase"] == "invoke"]
    assert replaces and all("precondition_rv" in e for e in replaces)
    conflicts = [e for e in outside_ops if e["verb"] == "update" and e["phase"] == "fail" and e["code"] == 409]
    assert conflicts and "message" in conflicts[0]
    assert any(e["phase"] == "ok" and e["verb"] == "create" and e.get("uid") for e in outside_ops)
    reads = [e for e in events if e.get("type") == "api-read" and e.get("client") == "outside" and e.get("resource") == "services"]
    assert {e["verb"] for e in reads} >= {"get", "list"}
    assert any(e["verb"] == "get" and e["code"] == 404 and e["phase"] == "fail" for e in reads)
    verdict = check_api_linearizability(events)
    assert verdict.valid is True, verdict.reason


def test_outside_watches_and_pages_are_journaled_and_judged(live):
    """The front journals a real client's watch as an informer's (api-watch judges it from
    the resourceVersion it resumed at) and each page of a paginated list (api-pagination:
    every page at the first page's revision, its items the store's then)."""
    kubernetes = pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config

    from chaoskube.checkers.api_pagination import check_api_pagination
    from chaoskube.checkers.api_watch import check_api_watch

    del kubernetes
    test_python_client_crud_conflict_and_watch_resumption(live)
    api = client.CoreV1Api(api_client=config.new_client_from_config(str(live.kubeconfig)))
    names, token = [], None
    while True:
        page = api.list_namespace(limit=1, _continue=token) if token else api.list_namespace(limit=1)
        names += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert len(names) >= 3 and names == sorted(names)
    events = live.call(lambda: list(live.world.journal.events))
    opened = [e for e in events if e.get("type") == "watch-open" and e.get("outside")]
    assert opened and any(e["from_rv"] not in ("", "0") for e in opened)
    pages = [e for e in events if e.get("type") == "list-page" and e["resource"] == "namespaces"]
    assert len(pages) >= 3 and {e["token_rv"] for e in pages[1:]} == {pages[0]["resource_version"]}
    watched = check_api_watch(events)
    assert watched.valid is True and watched.details["outside_watches"] >= 1, watched.reason
    paged = check_api_pagination(events)
    assert paged.valid is True and paged.details["continued"] >= 2, paged.reason


def test_outside_patches_of_every_kind_are_judged_against_the_patch_models(live):
    """kubectl's merge, JSON and strategic merge patches, journaled by the front as
    api-patch and judged by the independent models (chaoskube.checkers.api_patch)."""
    from chaoskube.checkers.api_patch import check_api_patch

    manifest = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: patched, labels: {a: '1'}}\nspec:\n  replicas: 1\n"
                "  selector: {matchLabels: {app: patched}}\n  template:\n    metadata: {labels: {app: patched}}\n"
                "    spec: {containers: [{name: one, image: nginx, env: [{name: A, value: '1'}]}, {name: two, image: busybox}]}\n")
    subprocess.run([KUBECTL or "kubectl", "--kubeconfig", str(live.kubeconfig), "apply", "-f", "-"], input=manifest, text=True, check=True, capture_output=True, timeout=30)
    kubectl(live, "patch", "deployment", "patched", "--type", "merge", "-p", '{"metadata": {"labels": {"a": null, "b": "2"}}}')
    kubectl(live, "patch", "deployment", "patched", "--type", "json", "-p", '[{"op": "add", "path": "/metadata/labels/c", "value": "3"}, {"op": "replace", "path": "/spec/replicas", "value": 2}]')
    kubectl(live, "patch", "deployment", "patched", "--type", "strategic", "-p", '{"spec": {"template": {"spec": {"containers": [{"name": "two", "$patch": "delete"}, {"name": "one", "env": [{"name": "B", "value": "2"}]}]}}}}')
    containers = kubectl(live, "get", "deployment", "patched", "-o", "jsonpath={.spec.template.spec.containers[*].name}").stdout
    assert containers == "one"
    events = live.call(lambda: list(live.world.journal.events))
    kinds = {e["patch_type"] for e in events if e.get("type") == "api-patch" and e["key"] == "default/patched"}
    assert kinds >= {"merge", "json", "strategic"}
    verdict = check_api_patch(events)
    assert verdict.valid is True and verdict.details["judged"] >= 3, verdict.reason


def test_every_outside_request_is_journaled(live):
    events = live.call(lambda: [e for e in live.world.journal.events if e.get("type") == "http-request"])
    assert events and all(event["client"] == "outside" for event in events)
    assert {event["method"] for event in events} >= {"GET", "POST", "PATCH", "DELETE"}
    assert os.environ.get("KUBECONFIG") != str(live.kubeconfig)  # tests never touch the user's


def test_python_client_deserializes_every_kind_the_cluster_holds(live):
    """The client's models refuse objects without the fields Go always writes (a
    V1Condition without message, a V1ContainerStatus without imageID): list every kind."""
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config

    api_client = config.new_client_from_config(str(live.kubeconfig))
    core, apps, policy = client.CoreV1Api(api_client), client.AppsV1Api(api_client), client.PolicyV1Api(api_client)
    rbac, coordination, discovery = client.RbacAuthorizationV1Api(api_client), client.CoordinationV1Api(api_client), client.DiscoveryV1Api(api_client)
    admission, scheduling = client.AdmissionregistrationV1Api(api_client), client.SchedulingV1Api(api_client)
    manifest = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: everything}\nspec: {minAvailable: 1, selector: {matchLabels: {app: frontend}}}\n"
    if KUBECTL is not None:
        subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), "apply", "-f", "-"], input=manifest, text=True, check=True, capture_output=True, timeout=30)
        time.sleep(2.0)  # the disruption controller writes its status (metav1.Conditions)
    listed = {
        "pods": core.list_pod_for_all_namespaces().items, "nodes": core.list_node().items, "namespaces": core.list_namespace().items,
        "services": core.list_service_for_all_namespaces().items, "serviceaccounts": core.list_service_account_for_all_namespaces().items,
        "deployments": apps.list_deployment_for_all_namespaces().items, "replicasets": apps.list_replica_set_for_all_namespaces().items,
        "pdbs": policy.list_pod_disruption_budget_for_all_namespaces().items, "clusterroles": rbac.list_cluster_role().items,
        "clusterrolebindings": rbac.list_cluster_role_binding().items, "leases": coordination.list_lease_for_all_namespaces().items,
        "endpointslices": discovery.list_endpoint_slice_for_all_namespaces().items, "priorityclasses": scheduling.list_priority_class().items,
        "webhooks": admission.list_validating_webhook_configuration().items,
    }
    for kind in ("pods", "nodes", "namespaces", "clusterroles", "leases"):
        assert listed[kind], kind
    node = listed["nodes"][0]
    assert node.status.node_info.kubelet_version and all(c.type for c in node.status.conditions)


def test_a_slow_api_server_answers_late(live):
    from chaoskube.sim import LinkProfile

    fast = time.monotonic()
    kubectl(live, "--context", "chaoskube-apiserver-2", "get", "namespace", "default")
    fast = time.monotonic() - fast
    live.call(lambda: live.world.network.set_link("outside", "kube-apiserver-2", LinkProfile(delay_s=1.0, jitter_s=0.0)))
    try:
        slow = time.monotonic()
        kubectl(live, "--context", "chaoskube-apiserver-2", "get", "namespace", "default")
        slow = time.monotonic() - slow
    finally:
        live.call(lambda: live.world.network.set_link("outside", "kube-apiserver-2", None))
    assert slow >= 1.0 and slow >= fast + 0.9, (fast, slow)

"""What kubectl and client users expect of an API server, against ``chaoskube serve``:
the ``scale`` subresource right after a create, Events (``kubectl get events``,
``kubectl describe``), ``kubectl auth can-i`` / ``whoami``, ``kubectl logs``, refused
``exec``, ``deletecollection``, the ``default/kubernetes`` Service and ClusterIPs (issue 33)."""

from __future__ import annotations

import subprocess

import pytest

from tests.apiserver.http.live_cluster import live_cluster
from tests.apiserver.http.test_real_clients import KUBECTL


def kubectl(live, *args: str, timeout: float = 60, check: bool = True, input_text: str | None = None) -> subprocess.CompletedProcess:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine (the machine image has /usr/bin/kubectl)")
    result = subprocess.run([KUBECTL, "--kubeconfig", str(live.kubeconfig), *args], capture_output=True, text=True, timeout=timeout, input=input_text)
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


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


def _wait_for(predicate, *, timeout_s: float = 60.0, every_s: float = 0.5):
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every_s)


def test_kubectl_get_events_and_describe_show_what_the_components_recorded(live):
    kubectl(live, "create", "-f", "-", input_text=_yaml(_deployment("evented", replicas=1)))
    kubectl(live, "rollout", "status", "deployment/evented", "--timeout=90s", timeout=120)
    pod = kubectl(live, "get", "pods", "-l", "app=evented", "-o", "jsonpath={.items[0].metadata.name}").stdout

    def pod_events() -> str:
        out = kubectl(live, "get", "events", "--field-selector", f"involvedObject.name={pod}").stdout
        return out if "Started" in out else ""

    table = _wait_for(pod_events)
    assert table.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    for reason, message in (("Scheduled", f"Successfully assigned default/{pod} to node-"), ("Pulled", 'image "nginx:1.27"'),
                            ("Created", "Created container c"), ("Started", "Started container c")):
        assert any(reason in line and message in line and f"pod/{pod}" in line for line in table.splitlines()), (reason, table)
    described = kubectl(live, "describe", "pod", pod).stdout
    events = described[described.index("Events:"):]
    assert "default-scheduler" in events and "Successfully assigned" in events and "kubelet" in events, events
    deployment = kubectl(live, "describe", "deployment", "evented").stdout
    assert "ScalingReplicaSet" in deployment and "Scaled up replica set evented-" in deployment and "from 0 to 1" in deployment
    replica_set = kubectl(live, "get", "events", "--field-selector", "reason=SuccessfulCreate", "-o", "jsonpath={.items[*].message}").stdout
    assert f"Created pod: {pod}" in replica_set
    # events.k8s.io/v1: the same Events, its field names
    raw = kubectl(live, "get", "--raw", f"/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name={pod},reason=Scheduled").stdout
    import json

    listed = json.loads(raw)
    assert listed["apiVersion"] == "events.k8s.io/v1" and len(listed["items"]) == 1
    item = listed["items"][0]
    assert item["regarding"]["name"] == pod and item["note"].startswith("Successfully assigned") and item["reportingController"] == "default-scheduler"
    refused = kubectl(live, "get", "--raw", "/apis/events.k8s.io/v1/events?fieldSelector=involvedObject.name=x", check=False)
    assert refused.returncode != 0 and "field label not supported: involvedObject.name" in refused.stderr
    kubectl(live, "delete", "deployment", "evented")


def _yaml(document: dict) -> str:
    import json

    return json.dumps(document)


CRASHING = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "crashing", "annotations": {"chaoskube.io/exit-after.app": "3", "chaoskube.io/exit-code.app": "2",
                                                     "chaoskube.io/fail-liveness-after.sidecar": "1"}},
    "spec": {"containers": [
        {"name": "app", "image": "busybox:1.36", "command": ["sh", "-c", "exit 2"]},
        {"name": "sidecar", "image": "nginx:1.27", "livenessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 2, "failureThreshold": 1}},
    ]},
}


def test_kubectl_logs_shows_the_simulated_lifecycle_and_exec_is_refused_clearly(live):
    kubectl(live, "create", "-f", "-", input_text=_yaml(CRASHING))

    def restarted() -> str:
        out = kubectl(live, "logs", "crashing", "-c", "app", "--previous", check=False)
        return out.stdout if out.returncode == 0 and "exited with code 2" in out.stdout else ""

    previous = _wait_for(restarted)
    assert previous, kubectl(live, "logs", "crashing", "-c", "app", "--previous", check=False).stderr
    lines = previous.splitlines()
    assert all(line.startswith("[chaoskube: simulated container]") for line in lines), lines
    assert any("started (restart 0" in line and 'command ["sh", "-c", "exit 2"]' in line for line in lines), lines
    current = kubectl(live, "logs", "crashing", "-c", "app", "--timestamps").stdout.splitlines()
    assert current and current[-1].split(" ", 1)[0].endswith("Z") and "started (restart " in "".join(current)
    assert "(restart 0" not in "".join(current)  # the current instance is a restart
    assert len(kubectl(live, "logs", "crashing", "-c", "app", "--tail=1").stdout.splitlines()) == 1
    sidecar = _wait_for(lambda: (lambda out: out if "liveness probe failed" in out else "")(kubectl(live, "logs", "crashing", "-c", "sidecar", "--previous", check=False).stdout))
    assert "Unhealthy" in sidecar and "Killing" in sidecar and "exited with code" in sidecar, sidecar
    # no container named, two in the pod: 400 with upstream's message (kubectl itself defaults)
    raw = kubectl(live, "get", "--raw", "/api/v1/namespaces/default/pods/crashing/log", check=False)
    assert raw.returncode != 0 and "a container name must be specified for pod crashing, choose one of: [app sidecar]" in raw.stderr
    wrong = kubectl(live, "logs", "crashing", "-c", "nope", check=False)
    assert wrong.returncode != 0 and "container nope is not valid for pod crashing" in wrong.stderr
    missing = kubectl(live, "logs", "nobody", check=False)
    assert missing.returncode != 0 and 'pods "nobody" not found' in missing.stderr
    refused = kubectl(live, "exec", "crashing", "-c", "app", "--", "ls", check=False, timeout=30)
    assert refused.returncode != 0 and "pods/exec is not served by chaoskube" in refused.stderr and "simulated" in refused.stderr
    assert "cannot be handled as a Pod" not in refused.stderr
    kubectl(live, "delete", "pod", "crashing", "--grace-period=0", "--force")


def test_kubectl_auth_can_i_and_whoami(live):
    assert kubectl(live, "auth", "can-i", "get", "pods").stdout.strip() == "yes"
    assert kubectl(live, "auth", "can-i", "*", "*").stdout.strip() == "yes"
    listed = kubectl(live, "auth", "can-i", "--list").stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert any(line.split() == ["*.*", "[]", "[]", "[*]"] for line in listed), listed
    whoami = kubectl(live, "auth", "whoami").stdout.splitlines()
    assert whoami[0].split() == ["ATTRIBUTE", "VALUE"]
    assert whoami[1].split() == ["Username", "kubernetes-admin"] and "system:masters" in whoami[2] and "system:authenticated" in whoami[2]
    # a verb nobody is granted on a resource with no rule: an answer, not an error
    raw = kubectl(live, "create", "--validate=false", "-o", "json", "-f", "-", input_text=_yaml({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "nobody", "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": "default"}},
    })).stdout
    import json

    assert json.loads(raw)["status"]["allowed"] is False


def test_kubectl_sees_the_kubernetes_service_and_cluster_ips(live):
    table = kubectl(live, "get", "svc", "kubernetes").stdout.splitlines()
    assert table[1].split()[:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    slice_ = _wait_for(lambda: (lambda out: out if out.count("172.18.0.") == 2 else "")(kubectl(live, "get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[*].addresses[0]}").stdout))
    assert slice_.split() == ["172.18.0.11", "172.18.0.12"]  # both API server replicas
    generated = kubectl(live, "create", "service", "clusterip", "fronted", "--tcp=80:8080", "--dry-run=client", "-o", "json").stdout
    kubectl(live, "apply", "-f", "-", input_text=generated)
    ip = kubectl(live, "get", "svc", "fronted", "-o", "jsonpath={.spec.clusterIP}").stdout
    import ipaddress

    assert ipaddress.IPv4Address(ip) in ipaddress.IPv4Network("10.96.0.0/12") and ip != "10.96.0.1"
    headless = kubectl(live, "apply", "-f", "-", input_text=_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "selector": {"app": "x"}, "ports": [{"port": 80}]}}))
    assert headless.returncode == 0 and kubectl(live, "get", "svc", "headless", "-o", "jsonpath={.spec.clusterIP}").stdout == "None"
    taken = kubectl(live, "apply", "-f", "-", check=False, input_text=_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "taken"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}))
    assert taken.returncode != 0 and f"failed to allocate IP {ip}: provided IP is already allocated" in taken.stderr
    kubectl(live, "delete", "svc", "fronted", "headless")


def test_deletecollection_deletes_what_the_selectors_select(live):
    pytest.importorskip("kubernetes", reason="the official Python client is in the test extra")
    from kubernetes import client, config

    core = client.CoreV1Api(api_client=config.new_client_from_config(str(live.kubeconfig)))
    for index in range(4):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{index}", "labels": {"batch": "one" if index < 3 else "two"}}, "data": {"i": str(index)}})
    core.delete_collection_namespaced_config_map("default", label_selector="batch=one", dry_run="All")
    assert len(core.list_namespaced_config_map("default", label_selector="batch").items) == 4  # a dry run deletes nothing
    core.delete_collection_namespaced_config_map("default", label_selector="batch=one,i notin (x)", field_selector="metadata.name!=cm-2")
    # the answer is the list of what was deleted (the Python client reads it as a Status)
    raw = kubectl(live, "delete", "--raw", "/api/v1/namespaces/default/configmaps?labelSelector=batch%3Dtwo").stdout
    import json

    answered = json.loads(raw)
    assert answered["kind"] == "ConfigMapList" and [item["metadata"]["name"] for item in answered["items"]] == ["cm-3"]
    left = sorted(item.metadata.name for item in core.list_namespaced_config_map("default", label_selector="batch").items)
    assert left == ["cm-2"]
    bad = kubectl(live, "get", "--raw", "/api/v1/namespaces/default/configmaps/cm-2/status", check=False)
    assert bad.returncode != 0
    core.delete_collection_namespaced_config_map("default", label_selector="batch")
    assert core.list_namespaced_config_map("default", label_selector="batch").items == []


def test_an_events_k8s_io_event_with_a_series_is_kept_and_printed_with_its_count(live):
    # what client-go's tools/events recorder writes: eventTime, reportingController/Instance,
    # action, then series {count, lastObservedTime} on repeats (a PATCH)
    created = kubectl(live, "create", "-f", "-", input_text=_yaml({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "op.1", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:01.000000Z", "reportingController": "example.com/operator", "reportingInstance": "operator-0",
        "action": "Reconciling", "reason": "Degraded", "note": "the widget is degraded", "type": "Warning",
        "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "widget"},
    }))
    assert created.returncode == 0
    kubectl(live, "patch", "events.events.k8s.io", "op.1", "--type=merge", "-p", _yaml({"series": {"count": 5, "lastObservedTime": "2026-01-01T00:00:20.000000Z"}}))
    wide = kubectl(live, "get", "events", "--field-selector", "reason=Degraded", "-o", "wide").stdout.splitlines()
    header, row = wide[0].split(), wide[1]
    assert "COUNT" in header and " 5 " in f" {row} " and "example.com/operator, operator-0" in row and "configmap/widget" in row
    core = kubectl(live, "get", "events", "op.1", "-o", "jsonpath={.series.count} {.reportingComponent} {.message}").stdout
    assert core == "5 example.com/operator the widget is degraded"
    missing = kubectl(live, "create", "-f", "-", check=False, input_text=_yaml({
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "op.2", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:01.000000Z", "reason": "Degraded", "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "widget"},
    }))
    assert missing.returncode != 0 and "reportingComponent: Required value" in missing.stderr


def test_kubectl_auth_can_i_as_another_user(live):
    assert kubectl(live, "auth", "can-i", "get", "pods", "--as=nobody", check=False).stdout.strip() == "no"
    assert kubectl(live, "auth", "can-i", "get", "pods", "--as=nobody", "--as-group=system:masters").stdout.strip() == "yes"
    whoami = kubectl(live, "auth", "whoami", "--as=bob", "--as-group=devs").stdout.splitlines()
    assert whoami[1].split() == ["Username", "bob"] and whoami[2].split() == ["Groups", "[devs", "system:authenticated]"]

"""Manifest loading: the real Kubernetes-project corpus, the quirks, malformed input, fuzz."""

import re
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chaoskube.api import (
    KINDS,
    Deployment,
    Lease,
    ManifestError,
    ManifestIssue,
    MutatingWebhookConfiguration,
    Node,
    Pod,
    PodDisruptionBudget,
    dump_manifest,
    dump_manifests,
    from_dict,
    from_json,
    load_manifests,
    parse_manifests,
    resolve_fenceposts,
    scaled_value,
    to_dict,
    to_json,
)
from tests.conftest import PEERS

CORPUS = PEERS / "k8s-manifests"
FILES = sorted(CORPUS.rglob("*.yaml"))
# The one corpus file with a duplicate mapping key (README, "Loader edge cases").
DUPLICATE_KEY_FILE = "kubernetes/examples/_archived/openshift-origin/etcd-controller.yaml"

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{CORPUS} is not checked out beside the repository")


def readme_documents():
    """file -> ["apiVersion/kind", ...] in document order, from the corpus README's table."""
    table = {}
    for line in (CORPUS / "README.md").read_text().splitlines():
        match = re.match(r"\| `([^`]+\.yaml)` \| ((?:`[^`]+`(?:<br>)?)+|\(none, comment-only\)) \| (\d+) \|", line)
        if match:
            kinds = re.findall(r"`([^`]+)`", match.group(2))
            assert len(kinds) == int(match.group(3)), line
            table[match.group(1)] = kinds
    return table


def round_trips(obj):
    assert parse_manifests(dump_manifest(obj)) == [obj]
    assert from_dict(to_dict(obj)) == obj
    assert from_json(to_json(obj)) == obj
    assert to_dict(from_dict(to_dict(obj))) == to_dict(obj)


# --------------------------------------------------------------------------- the corpus


def test_the_corpus_is_what_its_readme_says():
    table = readme_documents()
    assert len(FILES) == 60
    assert sorted(table) == sorted(str(path.relative_to(CORPUS)) for path in FILES)
    assert sum(len(kinds) for kinds in table.values()) == 112


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(CORPUS)))
def test_every_corpus_file_loads_or_says_exactly_why_not(path):
    relative = str(path.relative_to(CORPUS))
    duplicate_keys = "last-wins" if relative == DUPLICATE_KEY_FILE else "error"
    objects, issues = load_manifests(path, skip_unsupported=True, duplicate_keys=duplicate_keys)
    expected = readme_documents()[relative]
    # Supported kinds load, in order; the rest are issues at exactly the README's positions.
    supported = [entry for entry in expected if entry.rpartition("/")[2] in KINDS and KINDS[entry.rpartition("/")[2]].api_version == entry.rpartition("/")[0]]
    assert [f"{obj.API_VERSION}/{obj.KIND}" for obj in objects] == supported
    assert [(issue.document, f"{issue.api_version}/{issue.kind}") for issue in issues] == [(index + 1, entry) for index, entry in enumerate(expected) if entry not in supported]
    for obj in objects:
        round_trips(obj)
    for issue in issues:
        message = str(issue)
        assert message.startswith((f"{path}: document {issue.document}: kind {issue.kind} ", f'{path}: document {issue.document}: no matches for kind "{issue.kind}" in version "{issue.api_version}": ensure CRDs are installed first'))
        assert "\n" not in message
        assert re.search(r"is not supported: .+$|was removed in Kubernetes 1\.\d+; |is not served; use |ensure CRDs are installed first", message), message
    # Without skip_unsupported, the first issue is the error.
    if issues:
        with pytest.raises(ManifestError) as caught:
            load_manifests(path, duplicate_keys=duplicate_keys)
        assert str(caught.value) == str(issues[0])
    else:
        assert load_manifests(path, duplicate_keys=duplicate_keys) == objects


def test_the_whole_corpus_as_a_directory():
    objects, issues = load_manifests(CORPUS, recursive=True, skip_unsupported=True, duplicate_keys="last-wins")
    # README "Documents per kind": every kind but the two custom kinds without their CRD
    # (ServiceMonitor, PodGroup), APIService (aggregation is not simulated) and the four
    # documents of removed API versions (PodSecurityPolicy x2, policy/v1beta1 PDB,
    # InitializerConfiguration).
    assert len(objects) == 105
    assert len(issues) == 112 - 105
    assert {obj.KIND for obj in objects} == {
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CronJob", "DaemonSet", "Deployment", "Endpoints", "HorizontalPodAutoscaler",
        "Ingress", "IngressClass", "Job", "Namespace", "Node", "PersistentVolumeClaim", "Pod", "ReplicaSet", "ReplicationController",
        "Role", "RoleBinding", "Service", "ServiceAccount", "StatefulSet", "StorageClass", "ValidatingWebhookConfiguration",
    }
    assert sorted(issue.kind for issue in issues) == ["APIService", "InitializerConfiguration", "PodDisruptionBudget", "PodGroup", "PodSecurityPolicy", "PodSecurityPolicy", "ServiceMonitor"]
    assert load_manifests(CORPUS, skip_unsupported=True) == ([], [])  # not recursive: no files at the top


def test_removed_api_versions_name_the_release_and_the_replacement():
    path = CORPUS / "kubernetes/examples/_archived/cockroachdb/cockroachdb-statefulset.yaml"
    _, issues = load_manifests(path, skip_unsupported=True)
    assert [str(issue) for issue in issues] == [
        f"{path}: document 3: kind PodDisruptionBudget in apiVersion policy/v1beta1 was removed in Kubernetes 1.25; use policy/v1",
    ]
    path = CORPUS / "kubernetes/examples/_archived/cloud-controller-manager/persistent-volume-label-initializer-config.yaml"
    with pytest.raises(ManifestError, match=r"document 1: kind InitializerConfiguration in apiVersion admissionregistration.k8s.io/v1alpha1 was removed in Kubernetes 1.14"):
        load_manifests(path)
    with pytest.raises(ManifestError, match=r"^<string>: document 1: kind Deployment in apiVersion extensions/v1beta1 was removed in Kubernetes 1.16; use apps/v1$"):
        parse_manifests("apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: x}\n")
    with pytest.raises(ManifestError, match=r"kind Deployment in apiVersion apps/v9 is not served; use apps/v1$"):
        parse_manifests("apiVersion: apps/v9\nkind: Deployment\nmetadata: {name: x}\n")


def test_duplicate_keys_are_an_error_by_default_as_with_kubectl():
    path = CORPUS / DUPLICATE_KEY_FILE
    with pytest.raises(ManifestError) as caught:
        load_manifests(path)
    assert str(caught.value).startswith(f"{path}: document 1: field `spec.selector`: duplicate key")
    assert caught.value.field == "spec.selector" and caught.value.document == 1
    (deployment,) = load_manifests(path, duplicate_keys="last-wins")
    assert deployment.spec.selector.match_labels == {"name": "etcd"}
    assert deployment.spec.strategy.type == "Recreate"
    # Duplicates inside lists and nested mappings are found, with their path.
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: x\n    image: y\n"
    with pytest.raises(ManifestError, match=r"field `spec.containers\[0\].image`: duplicate key"):
        parse_manifests(text)
    assert parse_manifests(text, duplicate_keys="last-wins")[0].spec.containers[0].image == "y"


def test_corpus_quirks():
    crlf = CORPUS / "kubernetes/examples/_archived/volumes/azure_disk/static-provisioning/managed-disk/pod-uses-existing-managed-disk.yaml"
    assert b"\r\n" in crlf.read_bytes()
    (pod,) = load_manifests(crlf)
    assert isinstance(pod, Pod) and not any("\r" in arg for container in pod.spec.containers for arg in container.args)
    assert load_manifests(CORPUS / "kubernetes/examples/_archived/newrelic/newrelic-config.yaml") == []  # comment-only
    (deployment,) = load_manifests(CORPUS / "kubernetes/examples/web/guestbook-go/redis-master-controller.yaml")  # "kind: Deployment "
    assert isinstance(deployment, Deployment)
    (fake,) = load_manifests(CORPUS / "kubernetes-sigs/kwok/test/kwok/fake-deployment.yaml")
    assert fake.spec.template.spec.node_name == "fake-node"
    (node,) = load_manifests(CORPUS / "kubernetes-sigs/kwok/test/kwok/fake-node.yaml")
    assert isinstance(node, Node) and node.spec.taints[0].effect == "NoSchedule"
    (vllm,) = load_manifests(CORPUS / "kubernetes/examples/AI/vllm-deployment/vllm-deployment.yaml")
    assert set(vllm.spec.template.spec.containers[0].resources.limits) >= {"nvidia.com/gpu", "ephemeral-storage"}
    objects = load_manifests(CORPUS / "kubernetes/ingress-nginx/deploy/static/provider/cloud/deploy.yaml", skip_unsupported=True)[0]
    controller = next(obj for obj in objects if isinstance(obj, Deployment))
    assert controller.spec.strategy.rolling_update.max_unavailable == 1
    assert controller.spec.template.spec.containers[0].readiness_probe.http_get.port == 10254


def test_cpu_quantities_in_every_written_form():
    cpus = [container.resources.requests.get("cpu") for obj in load_manifests(CORPUS, recursive=True, skip_unsupported=True, duplicate_keys="last-wins")[0] if isinstance(obj, (Pod, Deployment)) for container in (obj.spec if isinstance(obj, Pod) else obj.spec.template.spec).containers]
    assert all(cpu is None or isinstance(cpu, str) for cpu in cpus)
    assert {"100m", "500m"} <= set(cpus)


# --------------------------------------------------------------------------- kinds the corpus lacks

MISSING_KINDS = """\
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: kube-scheduler, namespace: kube-system}
spec:
  holderIdentity: scheduler-0_1234
  leaseDurationSeconds: 15
  acquireTime: "2026-01-01T00:00:00.000000Z"
  renewTime: 2026-01-01T00:00:10.000000Z
  leaseTransitions: 3
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000000
globalDefault: false
preemptionPolicy: PreemptLowerPriority
description: For the shop's front end.
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  maxUnavailable: 25%
  selector: {matchLabels: {app: web}}
status: {currentHealthy: 4, desiredHealthy: 3, disruptionsAllowed: 1, expectedPods: 4, observedGeneration: 1}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: sidecar-injector}
webhooks:
- name: inject.example.com
  clientConfig:
    service: {namespace: system, name: injector, path: /mutate, port: 443}
    caBundle: Y2E=
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
    scope: Namespaced
  namespaceSelector:
    matchExpressions: [{key: inject, operator: NotIn, values: ["false"]}]
  objectSelector: {}
  failurePolicy: Ignore
  sideEffects: None
  timeoutSeconds: 5
  admissionReviewVersions: [v1]
  reinvocationPolicy: IfNeeded
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc12, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints:
- addresses: [10.0.0.5]
  conditions: {ready: true, serving: true, terminating: false}
  nodeName: node-1
  targetRef: {kind: Pod, namespace: shop, name: web-1, uid: u-1}
ports: [{name: http, protocol: TCP, port: 8080}]
---
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {topology.kubernetes.io/zone: a}}
spec:
  unschedulable: true
  taints: [{key: node.kubernetes.io/unreachable, effect: NoExecute, timeAdded: "2026-01-01T00:00:00Z"}]
status:
  capacity: {cpu: 4, memory: 16Gi, pods: 110}
  allocatable: {cpu: 3800m, memory: 15Gi, pods: 110}
  conditions: [{type: Ready, status: Unknown, reason: NodeStatusUnknown}]
  addresses: [{type: InternalIP, address: 10.0.0.1}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  uid: u-1
  resourceVersion: "42"
  generation: 1
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f, uid: u-rs, controller: true, blockOwnerDeletion: true}]
  finalizers: [example.com/keep]
  deletionTimestamp: "2026-01-01T00:01:00Z"
spec:
  priorityClassName: high-priority
  priority: 1000000
  serviceAccountName: web
  restartPolicy: Always
  terminationGracePeriodSeconds: 30
  nodeSelector: {disk: ssd}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [a, b]}]}]
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector: {matchLabels: {app: web}}
        topologyKey: kubernetes.io/hostname
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]
  containers:
  - name: web
    image: nginx
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: "1", memory: 128Mi}}
    readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
    livenessProbe: {tcpSocket: {port: 8080}}
    startupProbe: {exec: {command: [cat, /ready]}, failureThreshold: 30}
status:
  phase: Running
  podIP: 10.0.0.5
  hostIP: 10.0.0.1
  conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-01-01T00:00:05Z"}]
  containerStatuses:
  - name: web
    ready: true
    restartCount: 0
    image: nginx
    imageID: docker.io/library/nginx@sha256:00
    containerID: containerd://abc
    started: true
    state: {running: {startedAt: "2026-01-01T00:00:01Z"}}
"""


def test_kinds_the_corpus_lacks_load_and_round_trip():
    objects = parse_manifests(MISSING_KINDS, "fixture.yaml")
    assert [obj.KIND for obj in objects] == ["Lease", "PriorityClass", "PodDisruptionBudget", "MutatingWebhookConfiguration", "EndpointSlice", "Node", "Pod"]
    for obj in objects:
        round_trips(obj)
    lease, priority, pdb, webhook, _, node, pod = objects
    assert isinstance(lease, Lease) and lease.spec.renew_time == "2026-01-01T00:00:10.000000Z"  # not a datetime
    assert priority.value == 1000000
    assert isinstance(pdb, PodDisruptionBudget) and scaled_value(pdb.spec.max_unavailable, 4, round_up=True) == 1
    assert isinstance(webhook, MutatingWebhookConfiguration) and webhook.webhooks[0].timeout_seconds == 5
    assert node.status.capacity == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert pod.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0].topology_key == "kubernetes.io/hostname"
    assert pod.metadata.owner_references[0].controller is True
    assert pod.status.container_statuses[0].state.running.started_at == "2026-01-01T00:00:01Z"
    assert parse_manifests(dump_manifests(objects)) == objects


def test_dump_invents_nothing():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n"
    (deployment,) = parse_manifests(text)
    assert dump_manifest(deployment) == text
    assert list(to_dict(deployment)) == ["apiVersion", "kind", "metadata", "spec"]
    # Unset and set-to-empty read the same: "resources: {}" and "status: {}" are dropped.
    (again,) = parse_manifests(text.replace("image: nginx\n", "image: nginx\n        resources: {}\nstatus: {}\n"))
    assert again == deployment and dump_manifest(again) == text


def test_rolling_update_arithmetic_on_a_loaded_deployment():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 10\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}\n"
    (deployment,) = parse_manifests(text)
    update = deployment.spec.strategy.rolling_update
    assert resolve_fenceposts(update.max_surge, update.max_unavailable, deployment.spec.replicas) == (3, 2)


def test_list_kinds_are_expanded_as_kubectl_does():
    text = """\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: web, namespace: shop}}
---
apiVersion: apps/v1
kind: DeploymentList
items:
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}
"""
    assert [obj.KIND for obj in parse_manifests(text)] == ["Namespace", "ServiceAccount", "Deployment"]
    bad = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: ok}}\n- {apiVersion: apps/v1, kind: Frobnicator, metadata: {name: ds}}\n"
    with pytest.raises(ManifestError, match=r"^<string>: document 1 item 2: kind Frobnicator is not supported"):
        parse_manifests(bad)
    objects, issues = parse_manifests(bad, skip_unsupported=True)
    assert [obj.metadata.name for obj in objects] == ["ok"] and issues[0].item == 2
    with pytest.raises(ManifestError, match=r"document 1 item 1 \(Namespace\): field `metadata.name`"):
        parse_manifests("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: Bad}}]\n")


# --------------------------------------------------------------------------- malformed manifests

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: web\n    image: nginx\n"

MALFORMED = [
    # (manifest, expected error text after "<string>: ")
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: three}\n", "document 1 (Deployment web): field `spec.replicas`: expected int, got str"),
    ("apiVersion: v1\nmetadata: {name: web}\n", "document 1: field `kind`: missing (every object needs apiVersion and kind)"),
    ("kind: Pod\nmetadata: {name: web}\n", "document 1: field `apiVersion`: missing (every object needs apiVersion and kind)"),
    ("apiVersion: v1\nkind: [Pod]\n", "document 1: field `kind`: must be a string, not list"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\n", "document 1 (Pod): field `metadata.name`: 'Web_1' must be a DNS-1123 subdomain"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: 1web}\n", "document 1 (Service): field `metadata.name`: '1web' must be a DNS-1035 label"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {labels: {app: web}}\n", "document 1 (Pod): field `metadata.name`: missing"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: Shop}\n", "document 1 (Pod web): field `metadata.namespace`: 'Shop' must be a DNS-1123 label"),
    (POD.replace("spec:", "spec:\n  replica: 3"), "document 1 (Pod web): field `spec.replica`: unknown field"),
    (POD + "specs: {}\n", "document 1 (Pod web): field `specs`: unknown field"),
    (POD.replace("    image: nginx", "    image: nginx\n    resources: {requests: {cpu: lots}}"), "document 1 (Pod web): field `spec.containers[0].resources.requests.cpu`: invalid quantity 'lots'"),
    (POD.replace("    image: nginx", "    image: nginx\n    readinessProbe: {httpGet: {path: /}}"), "document 1 (Pod web): field `spec.containers[0].readinessProbe.httpGet.port`: missing (it is required)"),
    (POD.replace("  name: web", "  name: web\n  labels: {version: 1}"), "document 1 (Pod web): field `metadata.labels[...]`: expected str, got int"),
    (POD.replace("  name: web", "  name: web\n  labels: {app: has space}"), "document 1 (Pod web): field `metadata.labels.app`: invalid label value"),
    (POD.replace("spec:", "spec:\n  tolerations: {key: x}"), "document 1 (Pod web): field `spec.tolerations`: expected array, got object"),
    (POD.replace("spec:", "spec:\n  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {}}]}}"), "document 1 (Pod web): field `spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey`: missing (it is required)"),
    (POD.replace("spec:", "spec:\n  volumes: [{name: v, emptyDir: {sizeLimit: .nan}}]"), "document 1: field `spec.volumes[0].emptyDir.sizeLimit`: nan is not a JSON number"),
    ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 50}\n---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: q}\nspec: {minAvailable: half}\n", "document 2 (PodDisruptionBudget q): field `spec.minAvailable`: must be an integer or a percentage like '25%', not 'half'"),
    ("- apiVersion: v1\n  kind: Pod\n", "document 1: expected a mapping with apiVersion and kind, got a list"),
    ("just text\n", "document 1: expected a mapping with apiVersion and kind, got a string"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: web\n", "document 1: not valid YAML: while parsing a flow mapping, did not find expected ',' or '}' (line 4, column 1)"),
    ("---\n# empty\n---\napiVersion: v1\nkind: Pod\n  metadata: x\n", "document 2: not valid YAML: mapping values are not allowed in this context (line 6, column 11)"),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED, ids=[expected[:60] for _, expected in MALFORMED])
def test_malformed_manifests_fail_with_one_line_naming_document_and_field(text, expected):
    with pytest.raises(ManifestError) as caught:
        parse_manifests(text)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"<string>: {expected}"), message


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "shop.yaml"
    path.write_text(POD + "---\n" + POD.replace("image: nginx", "image: [nginx]"))
    with pytest.raises(ManifestError) as caught:
        load_manifests(path)
    assert str(caught.value) == f"{path}: document 2 (Pod web): field `spec.containers[0].image`: expected str, got array"
    assert (caught.value.source, caught.value.document, caught.value.field, caught.value.kind) == (str(path), 2, "spec.containers[0].image", "Pod")
    with pytest.raises(ManifestError, match=r"missing.yaml: cannot read"):
        load_manifests(tmp_path / "missing.yaml")
    (tmp_path / "notes.txt").write_text("not a manifest")
    (tmp_path / "bad.yml").write_bytes(b"\xff\xfe")
    with pytest.raises(ManifestError, match=r"bad.yml: not UTF-8 text"):
        load_manifests(tmp_path)


def test_yaml_aliases_cannot_blow_up():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7))
    started = time.monotonic()
    with pytest.raises(ManifestError, match="more than 1000000 values after expanding YAML aliases"):
        parse_manifests(bomb)
    assert time.monotonic() - started < 5
    with pytest.raises(ManifestError, match="nested more than 100 deep"):
        parse_manifests("apiVersion: v1\nkind: Pod\nmetadata: &m {name: p, x: *m}\n")
    # PyYAML's C composer recurses on the C stack: this used to kill the interpreter.
    with pytest.raises(ManifestError, match=r"^<string>: document 1: nested more than 100 deep \(line 1\)$"):
        parse_manifests("[" * 100_000)


def test_from_dict_and_from_json_errors():
    with pytest.raises(ManifestError, match=r"^<dict> \(Pod p\): field `spec.containers`: expected array, got str$"):
        from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "web"}})
    with pytest.raises(ManifestError, match=r"^<dict>: kind PodTemplate is not supported: stand-alone PodTemplates have no controller"):
        from_dict({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "s"}})
    with pytest.raises(ManifestError, match=r"expected one object, got a List"):
        from_dict({"apiVersion": "v1", "kind": "List", "items": []})
    with pytest.raises(ManifestError, match=r"^<json>: not valid JSON"):
        from_json(b"{")


def test_issues_are_values():
    _, issues = parse_manifests("apiVersion: apps/v1\nkind: Frobnicator\nmetadata: {name: s}\n", "x.yaml", skip_unsupported=True)
    assert issues == [ManifestIssue(source="x.yaml", document=1, item=None, api_version="apps/v1", kind="Frobnicator", reason=f"kind Frobnicator is not supported (supported: {', '.join(KINDS)}, and the kinds of CustomResourceDefinitions)")]


# --------------------------------------------------------------------------- never crash

YAML_PIECES = list("abkindapiVersion:-{}[]&*!|>'\"#%@`,?.0123456789 \t\n\r\\") + ["---\n", "apiVersion: v1\n", "kind: Pod\n", "kind: List\n", "items:\n", "metadata:\n  name: x\n", "  ", "<<: ", "!!binary ", "!!set ", ".nan", "1e400", "~"]
YAMLISH = st.lists(st.sampled_from(YAML_PIECES), max_size=80).map("".join)

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), st.sampled_from(["v1", "Pod", "apps/v1", "Deployment", "100m", "25%", "In", "Exists", ""]))
KEYS = st.one_of(st.sampled_from(["apiVersion", "kind", "metadata", "name", "namespace", "labels", "spec", "status", "containers", "replicas", "selector", "matchLabels", "matchExpressions", "operator", "values", "key", "resources", "requests", "cpu", "strategy", "rollingUpdate", "maxSurge", "items", "template", "webhooks", "rules"]), st.text(max_size=6))
STRUCTURES = st.recursive(SCALARS, lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)), max_leaves=30)


def accept_only_manifest_errors(call):
    try:
        result = call()
    except ManifestError as error:
        assert "\n" not in str(error)
        return None
    return result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_random_yaml_text_never_crashes(text):
    objects = accept_only_manifest_errors(lambda: parse_manifests(text, skip_unsupported=True, duplicate_keys="last-wins"))
    for obj in (objects or ([], []))[0]:
        assert from_dict(to_dict(obj)) == obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STRUCTURES, st.sampled_from(sorted(KINDS)))
def test_random_structures_never_crash(structure, kind):
    accept_only_manifest_errors(lambda: from_dict(structure))
    info = KINDS[kind]
    document = {"apiVersion": info.api_version, "kind": kind, "metadata": {"name": "x"}}
    if isinstance(structure, dict):
        document.update({key: value for key, value in structure.items() if key not in ("apiVersion", "kind")})
    obj = accept_only_manifest_errors(lambda: from_dict(document))
    if obj is not None:
        round_trips(obj)
    accept_only_manifest_errors(lambda: parse_manifests(yaml.safe_dump(document, allow_unicode=True)) if _dumpable(document) else None)


def _dumpable(value):
    try:
        yaml.safe_dump(value)
    except yaml.YAMLError:
        return False
    return True


def _corpus_documents():
    documents = []
    for path in FILES:
        documents.extend(document for document in yaml.safe_load_all(path.read_text()) if isinstance(document, dict) and document.get("kind", "").strip() in KINDS)
    return documents


CORPUS_DOCUMENTS = _corpus_documents() if CORPUS.is_dir() else [{}]


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_real_manifests_with_one_value_replaced_never_crash(data):
    """Mutate one field of a real manifest: the loader answers with an object or an error."""
    import copy

    document = copy.deepcopy(data.draw(st.sampled_from(CORPUS_DOCUMENTS)))
    path = data.draw(st.sampled_from([path for path in _paths(document) if path]))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = data.draw(STRUCTURES)
    obj = accept_only_manifest_errors(lambda: from_dict(document))
    if obj is not None:
        round_trips(obj)

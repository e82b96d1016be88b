"""The built-in admission plugins, table-tested in the manner of Kubernetes' own
``admission_test.go`` files, and the chain: order, refusal, idempotence, purity."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.api import ObjectMeta, Pod, deep_copy, from_dict, to_dict
from chaoskube.api.objects import OwnerReference, Toleration
from chaoskube.api.patch import apply_patch
from chaoskube.apiserver import admission
from chaoskube.apiserver.admission import (
    AdmissionRequest,
    AdmissionResult,
    DefaultingPlugin,
    DefaultTolerationSecondsPlugin,
    MutatingPlugin,
    NamespaceLifecyclePlugin,
    NodeRestrictionPlugin,
    PriorityPlugin,
    ServiceAccountPlugin,
    UserInfo,
    ValidatingPlugin,
    default_plugins,
    forbidden_by_admission,
    run_chain,
    run_mutating,
)

ADMIN = UserInfo(name="admin", groups=("system:masters", "system:authenticated"))


def test_module_exports_exactly_what_it_lists():
    for name in admission.__all__:
        assert hasattr(admission, name), name
    assert admission.__all__ == sorted(admission.__all__)


def make_pod(name="web", namespace="default", **spec):
    body = {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    body.update(spec)
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body})


def make(kind, api_version, name, namespace="default", **fields):
    metadata = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return from_dict({"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields})


def request(obj, operation="CREATE", *, old=None, user=ADMIN, subresource="", namespace=None, name=None, kind=None):
    subject = obj if obj is not None else old
    return AdmissionRequest(
        operation=operation,
        kind=kind or subject.KIND,
        namespace=subject.metadata.namespace if namespace is None else namespace,
        name=subject.metadata.name if name is None else name,
        object=obj,
        old_object=old,
        user=user,
        subresource=subresource,
    )


def spec_of(result):
    return to_dict(result.object)["spec"]


# --------------------------------------------------------------------------- protocols and results


def test_plugins_implement_their_phase():
    for plugin in default_plugins():
        assert isinstance(plugin, (MutatingPlugin, ValidatingPlugin)), plugin
    assert isinstance(DefaultingPlugin(), MutatingPlugin) and not isinstance(DefaultingPlugin(), ValidatingPlugin)
    assert isinstance(NamespaceLifecyclePlugin(), MutatingPlugin) and not isinstance(NamespaceLifecyclePlugin(), ValidatingPlugin)
    assert isinstance(PriorityPlugin(), MutatingPlugin) and isinstance(PriorityPlugin(), ValidatingPlugin)


def test_results_are_consistent():
    with pytest.raises(AssertionError):
        AdmissionResult(allowed=False, code=403)  # a refusal says why
    with pytest.raises(AssertionError):
        AdmissionResult(allowed=True, code=403)
    with pytest.raises(AssertionError):
        AdmissionRequest(operation="PATCH", kind="Pod")


def test_forbidden_message_names_the_qualified_resource():
    deployment = make("Deployment", "apps/v1", "web", spec={"selector": {"matchLabels": {"a": "b"}}})
    assert forbidden_by_admission(request(deployment), "no") == 'deployments.apps "web" is forbidden: no'
    assert forbidden_by_admission(request(make_pod()), "no") == 'pods "web" is forbidden: no'
    # admission.NewForbidden -> extractResourceName: name generation has not happened yet,
    # so a generated object is named by its generateName (pods "web-" is forbidden: ...)
    generated = Pod(metadata=ObjectMeta(generate_name="web-", namespace="default"))
    assert forbidden_by_admission(request(generated, name=""), "no") == 'pods "web-" is forbidden: no'
    anonymous = Pod(metadata=ObjectMeta(namespace="default"))
    assert forbidden_by_admission(request(anonymous, name=""), "no") == "pods is forbidden: no"


# --------------------------------------------------------------------------- defaulting


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.local:5000/nginx", "Always"),
        ("registry.local:5000/nginx:1.25", "IfNotPresent"),
        ("nginx@sha256:" + "0" * 64, "IfNotPresent"),
        ("", "Always"),
    ],
)
def test_image_pull_policy(image, policy):
    pod = make_pod(containers=[{"name": "c", "image": image}])
    assert spec_of(DefaultingPlugin().admit(request(pod)))["containers"][0]["imagePullPolicy"] == policy


def test_pod_defaults():
    pod = make_pod(containers=[{"name": "c", "image": "nginx:1.25", "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80}]}])
    spec = spec_of(DefaultingPlugin().admit(request(pod)))
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["enableServiceLinks"] is True
    container = spec["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "1"}, "requests default to limits"
    assert container["ports"][0]["protocol"] == "TCP"
    assert container["terminationMessagePath"] == "/dev/termination-log"


def test_pod_defaults_keep_what_is_set():
    pod = make_pod(restartPolicy="Never", terminationGracePeriodSeconds=0, dnsPolicy="Default", schedulerName="mine",
                   containers=[{"name": "c", "image": "nginx", "imagePullPolicy": "Never", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "100m"}}}])
    spec = spec_of(DefaultingPlugin().admit(request(pod)))
    assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"], spec["dnsPolicy"], spec["schedulerName"]) == ("Never", 0, "Default", "mine")
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["containers"][0]["resources"]["requests"] == {"cpu": "100m"}


def test_deployment_defaults():
    deployment = make("Deployment", "apps/v1", "web", spec={"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}})
    spec = spec_of(DefaultingPlugin().admit(request(deployment)))
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    template = spec["template"]["spec"]
    assert template["restartPolicy"] == "Always" and template["containers"][0]["imagePullPolicy"] == "Always"
    assert "enableServiceLinks" not in template, "SetDefaults_Pod is for pods, not templates"


def test_deployment_recreate_gets_no_rolling_update():
    deployment = make("Deployment", "apps/v1", "web", spec={"replicas": 0, "strategy": {"type": "Recreate"}})
    spec = spec_of(DefaultingPlugin().admit(request(deployment)))
    assert spec["replicas"] == 0
    assert spec["strategy"] == {"type": "Recreate"}


def test_deployment_partial_rolling_update():
    deployment = make("Deployment", "apps/v1", "web", spec={"strategy": {"rollingUpdate": {"maxSurge": 0}}})
    assert spec_of(DefaultingPlugin().admit(request(deployment)))["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": 0}


def test_replica_set_service_and_untouched_kinds():
    replica_set = make("ReplicaSet", "apps/v1", "web", spec={"selector": {"matchLabels": {"a": "b"}}})
    assert spec_of(DefaultingPlugin().admit(request(replica_set)))["replicas"] == 1
    service = make("Service", "v1", "web", spec={"ports": [{"port": 80}], "selector": {"app": "web"}})
    spec = spec_of(DefaultingPlugin().admit(request(service)))
    assert spec["type"] == "ClusterIP" and spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    for obj in (
        make("PodDisruptionBudget", "policy/v1", "pdb", spec={"minAvailable": 1}),
        make("Lease", "coordination.k8s.io/v1", "lease"),
    ):
        result = DefaultingPlugin().admit(request(obj))
        assert result.allowed and result.object is obj and result.patches == ()


# --------------------------------------------------------------------------- ServiceAccount

SERVICE_ACCOUNTS = frozenset({("default", "default"), ("default", "builder")})

SERVICE_ACCOUNT_CASES = [
    # name, pod spec, operation, expected serviceAccountName or refusal
    ("unset becomes default", {}, "CREATE", "default"),
    ("an existing account is kept", {"serviceAccountName": "builder"}, "CREATE", "builder"),
    ("the deprecated alias is taken", {"serviceAccount": "builder"}, "CREATE", "builder"),
    ("a missing account is refused", {"serviceAccountName": "ghost"}, "CREATE",
     'pods "web" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found'),
    ("updates are not handled", {}, "UPDATE", None),
]


@pytest.mark.parametrize(("name", "spec", "operation", "expected"), SERVICE_ACCOUNT_CASES, ids=[c[0] for c in SERVICE_ACCOUNT_CASES])
def test_service_account(name, spec, operation, expected):
    plugin = ServiceAccountPlugin(service_accounts=SERVICE_ACCOUNTS)
    pod = make_pod(**spec)
    if not plugin.handles(operation):
        assert expected is None
        return
    result = plugin.admit(request(pod, operation, old=pod if operation == "UPDATE" else None))
    if expected.startswith("pods "):
        assert (result.allowed, result.code, result.reason) == (False, 403, expected)
    else:
        assert result.allowed
        assert spec_of(result)["serviceAccountName"] == expected
        assert spec_of(result)["serviceAccount"] == expected


def test_service_account_missing_default():
    result = ServiceAccountPlugin(service_accounts=frozenset()).admit(request(make_pod(namespace="team")))
    assert result.reason == 'pods "web" is forbidden: error looking up service account team/default: serviceaccount "default" not found'


def test_service_account_mirror_pods():
    plugin = ServiceAccountPlugin(service_accounts=SERVICE_ACCOUNTS)
    mirror = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "m", "namespace": "default", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [{"name": "c"}]}})
    result = plugin.admit(request(mirror))
    assert result.allowed and result.object is mirror
    mirror.spec.service_account_name = "default"
    assert plugin.admit(request(mirror)).reason == 'pods "m" is forbidden: a mirror pod may not reference service accounts'


def test_service_account_ignores_subresources_and_other_kinds():
    plugin = ServiceAccountPlugin()
    pod = make_pod()
    assert plugin.admit(request(pod, subresource="binding")).allowed
    assert plugin.admit(request(make("Service", "v1", "s"))).allowed


# --------------------------------------------------------------------------- Priority

HIGH = make("PriorityClass", "scheduling.k8s.io/v1", "high", namespace="", value=1000)
LOW_DEFAULT = make("PriorityClass", "scheduling.k8s.io/v1", "low", namespace="", value=-10, globalDefault=True)
OTHER_DEFAULT = make("PriorityClass", "scheduling.k8s.io/v1", "other", namespace="", value=5, globalDefault=True)
OTHER = make("PriorityClass", "scheduling.k8s.io/v1", "other", namespace="", value=5)
NEVER = make("PriorityClass", "scheduling.k8s.io/v1", "never", namespace="", value=7, preemptionPolicy="Never")

PRIORITY_CASES = [
    # name, classes, pod spec, expected (priority, class name, preemption policy) or refusal
    ("no class, no default: 0", (HIGH,), {}, (0, None, "PreemptLowerPriority")),
    ("no class: the global default", (HIGH, LOW_DEFAULT), {}, (-10, "low", "PreemptLowerPriority")),
    ("two defaults: the lowest value", (OTHER_DEFAULT, LOW_DEFAULT), {}, (-10, "low", "PreemptLowerPriority")),
    ("a user class", (HIGH, LOW_DEFAULT), {"priorityClassName": "high"}, (1000, "high", "PreemptLowerPriority")),
    ("the class's preemption policy", (NEVER,), {"priorityClassName": "never"}, (7, "never", "Never")),
    ("system-node-critical", (), {"priorityClassName": "system-node-critical"}, (2000001000, "system-node-critical", "PreemptLowerPriority")),
    ("system-cluster-critical", (), {"priorityClassName": "system-cluster-critical"}, (2000000000, "system-cluster-critical", "PreemptLowerPriority")),
    ("an unknown class", (HIGH,), {"priorityClassName": "nope"}, 'pods "web" is forbidden: no PriorityClass with name nope was found'),
    ("the same priority given is fine", (HIGH,), {"priorityClassName": "high", "priority": 1000}, (1000, "high", "PreemptLowerPriority")),
    ("a different priority given", (HIGH,), {"priorityClassName": "high", "priority": 5},
     'pods "web" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name'),
    ("a priority given against the default", (LOW_DEFAULT,), {"priority": 0},
     'pods "web" is forbidden: the integer value of priority (0) must not be provided in pod spec; priority admission controller computed -10 from the given PriorityClass name'),
    ("a different preemption policy given", (HIGH,), {"priorityClassName": "high", "preemptionPolicy": "Never"},
     'pods "web" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name'),
]


@pytest.mark.parametrize(("name", "classes", "spec", "expected"), PRIORITY_CASES, ids=[c[0] for c in PRIORITY_CASES])
def test_priority(name, classes, spec, expected):
    result = PriorityPlugin(priority_classes=classes).admit(request(make_pod(**spec)))
    if isinstance(expected, str):
        assert (result.allowed, result.code, result.reason) == (False, 403, expected)
        return
    assert result.allowed, result.reason
    got = spec_of(result)
    assert (got["priority"], got.get("priorityClassName"), got["preemptionPolicy"]) == expected


def test_priority_update_keeps_the_stored_priority():
    plugin = PriorityPlugin(priority_classes=(HIGH,))
    old = plugin.admit(request(make_pod(priorityClassName="high"))).object
    new = make_pod(priorityClassName="high")
    result = plugin.admit(request(new, "UPDATE", old=old))
    assert spec_of(result)["priority"] == 1000 and spec_of(result)["preemptionPolicy"] == "PreemptLowerPriority"


PRIORITY_CLASS_CASES = [
    ("a second default is refused", "CREATE", OTHER_DEFAULT, (LOW_DEFAULT,), "PriorityClass low is already marked as default. Only one default can exist"),
    ("the first default is fine", "CREATE", OTHER_DEFAULT, (HIGH,), None),
    ("updating the default itself is fine", "UPDATE", LOW_DEFAULT, (LOW_DEFAULT,), None),
    ("marking another as default is refused", "UPDATE", OTHER_DEFAULT, (LOW_DEFAULT, OTHER), "PriorityClass low is already marked as default"),
    ("a non-default class is fine", "CREATE", HIGH, (LOW_DEFAULT,), None),
]


@pytest.mark.parametrize(("name", "operation", "pc", "existing", "refusal"), PRIORITY_CLASS_CASES, ids=[c[0] for c in PRIORITY_CLASS_CASES])
def test_priority_validates_priority_classes(name, operation, pc, existing, refusal):
    result = PriorityPlugin(priority_classes=existing).validate(request(pc, operation, old=pc if operation == "UPDATE" else None))
    if refusal is None:
        assert result.allowed
    else:
        assert not result.allowed and refusal in result.reason
        assert result.reason.startswith(f'priorityclasses.scheduling.k8s.io "{pc.metadata.name}" is forbidden: ')


# --------------------------------------------------------------------------- DefaultTolerationSeconds

NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}

TOLERATION_CASES = [
    # name, tolerations given, tolerations expected (as in defaulttolerationseconds/admission_test.go)
    ("none: both added", [], [NOT_READY, UNREACHABLE]),
    ("unrelated tolerations are kept", [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}],
     [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}, NOT_READY, UNREACHABLE]),
    ("not-ready already tolerated", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 700}],
     [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 700}, UNREACHABLE]),
    ("unreachable already tolerated", [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 700}],
     [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 700}, NOT_READY]),
    ("both tolerated forever", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}],
     [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]),
    ("a toleration of every taint", [{"operator": "Exists"}], [{"operator": "Exists"}]),
    ("every key for NoExecute", [{"operator": "Exists", "effect": "NoExecute"}], [{"operator": "Exists", "effect": "NoExecute"}]),
    ("the key for every effect", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}], [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}, UNREACHABLE]),
    ("the key for NoSchedule only", [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}, NOT_READY, UNREACHABLE]),
]


@pytest.mark.parametrize(("name", "given", "expected"), TOLERATION_CASES, ids=[c[0] for c in TOLERATION_CASES])
def test_default_toleration_seconds(name, given, expected):
    result = DefaultTolerationSecondsPlugin().admit(request(make_pod(tolerations=given)))
    assert result.allowed
    assert spec_of(result).get("tolerations", []) == expected


def test_default_toleration_seconds_configurable_and_scoped():
    plugin = DefaultTolerationSecondsPlugin(not_ready_toleration_seconds=60, unreachable_toleration_seconds=30)
    seconds = [t["tolerationSeconds"] for t in spec_of(plugin.admit(request(make_pod())))["tolerations"]]
    assert seconds == [60, 30]
    pod = make_pod()
    assert plugin.admit(request(pod, "UPDATE", old=pod, subresource="status")).object is pod
    assert not plugin.handles("DELETE")


# --------------------------------------------------------------------------- NamespaceLifecycle

ACTIVE = make("Namespace", "v1", "team", namespace="", status={"phase": "Active"})
TERMINATING = make("Namespace", "v1", "old", namespace="", status={"phase": "Terminating"})

NAMESPACE_CASES = [
    # name, operation, kind, namespace, name, expected (code, reason) or None for allowed
    ("create in an active namespace", "CREATE", "Pod", "team", "web", None),
    ("create in a missing namespace", "CREATE", "Pod", "ghost", "web", (404, 'namespaces "ghost" not found')),
    ("update in a missing namespace", "UPDATE", "Pod", "ghost", "web", (404, 'namespaces "ghost" not found')),
    ("create in a terminating namespace", "CREATE", "Pod", "old", "web", (403, 'pods "web" is forbidden: unable to create new content in namespace old because it is being terminated')),
    ("update in a terminating namespace", "UPDATE", "Pod", "old", "web", None),
    ("delete in a missing namespace", "DELETE", "Pod", "ghost", "web", None),
    ("kube-system always exists", "CREATE", "Pod", "kube-system", "web", None),
    ("default always exists", "CREATE", "Pod", "default", "web", None),
    ("kube-public always exists", "CREATE", "Pod", "kube-public", "web", None),
    ("cluster-scoped objects pass", "CREATE", "Node", "", "n1", None),
    ("creating a namespace passes", "CREATE", "Namespace", "", "ghost", None),
    ("deleting kube-system is refused", "DELETE", "Namespace", "", "kube-system", (403, 'namespaces "kube-system" is forbidden: this namespace may not be deleted')),
    ("deleting default is refused", "DELETE", "Namespace", "", "default", (403, 'namespaces "default" is forbidden: this namespace may not be deleted')),
    ("deleting another namespace passes", "DELETE", "Namespace", "", "team", None),
]


@pytest.mark.parametrize(("name", "operation", "kind", "namespace", "object_name", "expected"), NAMESPACE_CASES, ids=[c[0] for c in NAMESPACE_CASES])
def test_namespace_lifecycle(name, operation, kind, namespace, object_name, expected):
    objects = {
        "Pod": lambda: make_pod(name=object_name, namespace=namespace),
        "Node": lambda: make("Node", "v1", object_name, namespace=""),
        "Namespace": lambda: make("Namespace", "v1", object_name, namespace=""),
    }
    obj = objects[kind]()
    req = AdmissionRequest(
        operation=operation, kind=kind, namespace=namespace, name=object_name,
        object=obj if operation != "DELETE" else None, old_object=obj if operation != "CREATE" else None, user=ADMIN,
    )
    result = NamespaceLifecyclePlugin(namespaces=(ACTIVE, TERMINATING)).admit(req)
    if expected is None:
        assert result.allowed, result.reason
    else:
        assert (result.allowed, result.code, result.reason) == (False, *expected)


# --------------------------------------------------------------------------- NodeRestriction

NODE1 = UserInfo(name="system:node:n1", groups=("system:nodes", "system:authenticated"))
MIRROR = {"kubernetes.io/config.mirror": "hash"}


def node(name, labels=None, taints=None):
    return from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}})


def owned(obj):
    obj.metadata.owner_references = [OwnerReference(api_version="v1", kind="ConfigMap", name="gone", uid="u-1")]
    return obj


def pod_on(node_name, annotations=None, labels=None):
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "annotations": annotations or {}, "labels": labels or {}}, "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}})


def lease(name, namespace):
    return make("Lease", "coordination.k8s.io/v1", name, namespace=namespace)


NODE_RESTRICTION_CASES = [
    # name, request, expected refusal (substring) or None
    ("other users pass", lambda: request(node("n2"), "UPDATE", old=node("n2")), None),
    ("a node name without the group is no node", lambda: request(node("n2"), "UPDATE", old=node("n2"), user=UserInfo(name="system:node:n1")), None),
    ("an empty node name", lambda: request(node("n1"), user=UserInfo(name="system:node:", groups=("system:nodes",))), 'could not determine node from user "system:node:"'),
    ("create its own node", lambda: request(node("n1", labels={"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a"}), user=NODE1), None),
    ("create another node", lambda: request(node("n2"), user=NODE1), 'node "n1" is not allowed to modify node "n2"'),
    ("update another node", lambda: request(node("n2"), "UPDATE", old=node("n2"), user=NODE1), 'node "n1" is not allowed to modify node "n2"'),
    ("delete another node", lambda: request(None, "DELETE", old=node("n2"), user=NODE1), 'node "n1" is not allowed to modify node "n2"'),
    ("register with a node-restriction label", lambda: request(node("n1", labels={"node-restriction.kubernetes.io/trusted": "yes"}), user=NODE1),
     'node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/trusted'),
    ("register with a foreign kubernetes.io label", lambda: request(node("n1", labels={"node-role.kubernetes.io/master": ""}), user=NODE1),
     "not allowed to set the following labels: node-role.kubernetes.io/master"),
    ("register with node.kubernetes.io labels", lambda: request(node("n1", labels={"node.kubernetes.io/pool": "a"}), user=NODE1), None),
    ("update its taints", lambda: request(node("n1", taints=[]), "UPDATE", old=node("n1", taints=[{"key": "k", "effect": "NoSchedule"}]), user=NODE1), 'node "n1" is not allowed to modify taints'),
    ("update a node-restriction label", lambda: request(node("n1", labels={"example.node-restriction.kubernetes.io/x": "1"}), "UPDATE", old=node("n1"), user=NODE1),
     "is not allowed to modify labels: example.node-restriction.kubernetes.io/x"),
    ("update its own labels", lambda: request(node("n1", labels={"mine": "1"}), "UPDATE", old=node("n1"), user=NODE1), None),
    # CVE-2025-5187 (kubernetes/kubernetes#133471): an owner reference would get the Node garbage-collected
    ("own itself by another object", lambda: request(owned(node("n1")), "UPDATE", old=node("n1"), user=NODE1), 'node "n1" is not allowed to modify ownerReferences'),
    ("register owned", lambda: request(owned(node("n1")), user=NODE1), 'node "n1" is not allowed to modify ownerReferences'),
    ("keep its owner references", lambda: request(owned(node("n1")), "UPDATE", old=owned(node("n1")), user=NODE1), None),
    ("create a mirror pod on itself", lambda: request(pod_on("n1", MIRROR), user=NODE1), None),
    ("create a mirror pod elsewhere", lambda: request(pod_on("n2", MIRROR), user=NODE1), 'node "n1" can only create pods with spec.nodeName set to itself'),
    ("create a plain pod", lambda: request(pod_on("n1"), user=NODE1), 'node "n1" can only create mirror pods'),
    ("delete its own pod", lambda: request(None, "DELETE", old=pod_on("n1"), user=NODE1), None),
    ("delete another node's pod", lambda: request(None, "DELETE", old=pod_on("n2"), user=NODE1), 'node "n1" can only delete pods with spec.nodeName set to itself'),
    ("update a pod", lambda: request(pod_on("n1"), "UPDATE", old=pod_on("n1"), user=NODE1), 'unexpected operation "UPDATE", node "n1" can only create and delete mirror pods'),
    ("update its pod's status", lambda: request(pod_on("n1"), "UPDATE", old=pod_on("n1"), subresource="status", user=NODE1), None),
    ("update another node's pod status", lambda: request(pod_on("n2"), "UPDATE", old=pod_on("n2"), subresource="status", user=NODE1),
     'node "n1" can only update pod status for pods with spec.nodeName set to itself'),
    ("relabel through status", lambda: request(pod_on("n1", labels={"a": "b"}), "UPDATE", old=pod_on("n1"), subresource="status", user=NODE1), 'node "n1" cannot update labels through pod status'),
    ("evict its own pod", lambda: request(None, "CREATE", old=pod_on("n1"), subresource="eviction", user=NODE1, kind="Pod"), None),
    ("evict another node's pod", lambda: request(None, "CREATE", old=pod_on("n2"), subresource="eviction", user=NODE1, kind="Pod"), "node n1 can only evict pods with spec.nodeName set to itself"),
    ("bind a pod", lambda: request(pod_on("n1"), "CREATE", subresource="binding", user=NODE1), "unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed"),
    ("renew its lease", lambda: request(lease("n1", "kube-node-lease"), "UPDATE", old=lease("n1", "kube-node-lease"), user=NODE1), None),
    ("renew another lease", lambda: request(lease("n2", "kube-node-lease"), "UPDATE", old=lease("n2", "kube-node-lease"), user=NODE1), "can only access node lease with the same name as the requesting node"),
    ("a lease elsewhere", lambda: request(lease("n1", "default"), user=NODE1), 'can only access leases in the "kube-node-lease" system namespace'),
    ("other kinds pass", lambda: request(make("Service", "v1", "s"), user=NODE1), None),
]


@pytest.mark.parametrize(("name", "build", "refusal"), NODE_RESTRICTION_CASES, ids=[c[0] for c in NODE_RESTRICTION_CASES])
def test_node_restriction(name, build, refusal):
    result = NodeRestrictionPlugin().validate(build())
    if refusal is None:
        assert result.allowed, result.reason
    else:
        assert not result.allowed and result.code == 403
        assert refusal in result.reason, result.reason
        assert " is forbidden: " in result.reason


# --------------------------------------------------------------------------- the chain


def chain(**snapshot):
    snapshot.setdefault("service_accounts", SERVICE_ACCOUNTS | {("team", "default")})
    snapshot.setdefault("namespaces", (ACTIVE, TERMINATING))
    return default_plugins(**snapshot)


def test_chain_admits_a_pod_with_every_default():
    pod = make_pod(namespace="team")
    result = run_chain(request(pod), chain(priority_classes=(LOW_DEFAULT,)))
    assert result.allowed and result.code == 200
    spec = spec_of(result)
    assert spec["serviceAccountName"] == "default"
    assert (spec["priority"], spec["priorityClassName"]) == (-10, "low")
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]
    assert spec["restartPolicy"] == "Always"
    assert apply_patch(to_dict(pod), list(result.patches)) == to_dict(result.object), "the patches say what changed"
    assert to_dict(pod) == to_dict(make_pod(namespace="team")), "the request's object is untouched"


def test_chain_is_idempotent():
    plugins = chain(priority_classes=(LOW_DEFAULT, HIGH))
    for obj in (
        make_pod(namespace="team", priorityClassName="high", tolerations=[{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]),
        make("Deployment", "apps/v1", "web", spec={"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}),
        make("Service", "v1", "svc", spec={"ports": [{"port": 80}]}),
        make("ReplicaSet", "apps/v1", "rs"),
    ):
        first = run_mutating(request(obj), plugins)
        assert first.allowed and first.patches, obj.KIND
        second = run_mutating(request(first.object), plugins)
        assert second.allowed and second.patches == () and second.object is first.object, obj.KIND


def test_mutating_runs_before_validating():
    """A pod defaulted by a mutating plugin is what the validating plugins see: a kubelet's
    mirror pod gets its defaults, then NodeRestriction checks its (unchanged) node name; and
    a mutating refusal wins over a validating one."""
    mirror = pod_on("n1", MIRROR)
    result = run_chain(request(mirror, user=NODE1), chain())
    assert result.allowed and spec_of(result)["restartPolicy"] == "Always"
    # NamespaceLifecycle is an Admit plugin that runs first of all (upstream): a missing
    # namespace is refused before an unknown priority class is.
    refused = run_chain(request(make_pod(namespace="ghost", priorityClassName="nope")), chain(service_accounts={("ghost", "default")}))
    assert (refused.plugin, refused.code) == ("NamespaceLifecycle", 404)
    # A mutating refusal (Priority: unknown class) wins over a validating one (NodeRestriction:
    # a node creating a pod bound elsewhere).
    foreign = pod_on("n2", MIRROR)
    foreign.spec.priority_class_name = "nope"
    refused = run_chain(request(foreign, user=NODE1), chain())
    assert (refused.plugin, refused.code) == ("Priority", 403)
    missing = run_chain(request(make_pod(namespace="ghost")), chain(service_accounts={("ghost", "default")}))
    assert (missing.plugin, missing.code, missing.reason) == ("NamespaceLifecycle", 404, 'namespaces "ghost" not found')


def test_validating_sees_the_mutated_object():
    class SeesDefaults:
        name = "SeesDefaults"

        def handles(self, operation):
            return True

        def validate(self, req):
            if req.object.spec.restart_policy != "Always":
                return AdmissionResult(allowed=False, reason="not defaulted", code=400)
            return AdmissionResult(allowed=True, object=req.object)

    result = run_chain(request(make_pod()), [SeesDefaults(), DefaultingPlugin()])
    assert result.allowed, result.reason


def test_defaulting_runs_before_default_toleration_seconds():
    """Kubernetes defaults at decode time, before any admission plugin: the plugins see a
    defaulted pod, and the patch lists the defaults first."""
    result = run_mutating(request(make_pod()), chain())
    paths = [op["path"] for op in result.patches]
    assert paths.index("/spec/restartPolicy") < paths.index("/spec/tolerations")
    assert [type(plugin).__name__ for plugin in chain()] == [
        "DefaultingPlugin", "NamespaceLifecyclePlugin", "LimitRangerPlugin", "ServiceAccountPlugin", "NodeRestrictionPlugin", "PriorityPlugin", "DefaultTolerationSecondsPlugin", "DefaultStorageClassPlugin", "StorageObjectInUseProtectionPlugin",
    ]

    seen = []

    class Spy:
        name = "Spy"

        def handles(self, operation):
            return True

        def admit(self, req):
            seen.append((req.object.spec.restart_policy, len(req.object.spec.tolerations)))
            return AdmissionResult(allowed=True, object=req.object)

    run_mutating(request(make_pod()), [DefaultingPlugin(), Spy(), DefaultTolerationSecondsPlugin(), Spy()])
    assert seen == [("Always", 0), ("Always", 2)]


def test_chain_stops_at_the_first_refusal():
    calls = []

    class Recorder:
        def __init__(self, name, allow):
            self.name, self.allow = name, allow

        def handles(self, operation):
            return True

        def admit(self, req):
            calls.append(self.name)
            if self.allow:
                return AdmissionResult(allowed=True, object=req.object)
            return AdmissionResult(allowed=False, reason="no", code=403)

    result = run_chain(request(make_pod()), [Recorder("a", True), Recorder("b", False), Recorder("c", True)])
    assert (result.allowed, result.plugin, calls) == (False, "b", ["a", "b"])


def test_chain_on_delete_and_unhandled_operations():
    pod = pod_on("n1")
    result = run_chain(request(None, "DELETE", old=pod), chain())
    assert result.allowed and result.object is None and result.patches == ()
    connect = run_chain(AdmissionRequest(operation="CONNECT", kind="Pod", namespace="default", name="p", subresource="exec"), chain())
    assert connect.allowed


PURITY_REQUESTS = [
    lambda: request(make_pod(namespace="team")),
    lambda: request(make_pod(namespace="ghost", priorityClassName="nope")),
    lambda: request(make_pod(), "UPDATE", old=make_pod(priority=7)),
    lambda: request(make("Deployment", "apps/v1", "web")),
    lambda: request(make("Service", "v1", "svc", spec={"ports": [{"port": 80}]})),
    lambda: request(node("n1", labels={"a": "b"}), "UPDATE", old=node("n1"), user=NODE1),
    lambda: request(pod_on("n1", MIRROR), user=NODE1),
    lambda: request(OTHER_DEFAULT, old=None),
]


@pytest.mark.parametrize("build", PURITY_REQUESTS)
def test_no_plugin_changes_its_request(build):
    req = build()
    before = (to_dict(req.object) if req.object is not None else None, to_dict(req.old_object) if req.old_object is not None else None)
    plugins = chain(priority_classes=(LOW_DEFAULT,))
    for plugin in plugins:
        if isinstance(plugin, MutatingPlugin) and plugin.handles(req.operation):
            plugin.admit(req)
        if isinstance(plugin, ValidatingPlugin) and plugin.handles(req.operation):
            plugin.validate(req)
    run_chain(req, plugins)
    after = (to_dict(req.object) if req.object is not None else None, to_dict(req.old_object) if req.old_object is not None else None)
    assert after == before


# --------------------------------------------------------------------------- broken plugins the chain catches


def test_a_validating_plugin_that_mutates_is_caught():
    """Gallery: a validating plugin that hands back a changed object breaks the phase
    contract (ValidationInterface "is NOT allowed to mutate"); the chain refuses to go on."""

    class MutatesWhileValidating:
        name = "MutatesWhileValidating"

        def handles(self, operation):
            return True

        def validate(self, req):
            return AdmissionResult(allowed=True, object=make_pod(name="other"))

    with pytest.raises(AssertionError, match="changed the object"):
        run_chain(request(make_pod()), [MutatesWhileValidating()])


def test_a_non_idempotent_mutating_plugin_is_caught_by_the_idempotence_check():
    """Gallery: a plugin that appends a toleration every time (DefaultTolerationSeconds
    without its "already tolerates" test) fails the second-run check used above."""

    class AlwaysAppends:
        name = "AlwaysAppends"

        def handles(self, operation):
            return True

        def admit(self, req):
            pod = deep_copy(req.object)
            pod.spec.tolerations.append(Toleration(key="k", operator="Exists"))
            return AdmissionResult(allowed=True, object=pod)

    first = run_mutating(request(make_pod()), [AlwaysAppends()])
    assert first.patches
    again = run_mutating(request(first.object), [AlwaysAppends()])
    assert again.patches, "the idempotence check would flag it"


# --------------------------------------------------------------------------- idempotence, over drawn pods

_toleration = st.fixed_dictionaries(
    {},
    optional={
        "key": st.sampled_from(["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "foo"]),
        "operator": st.sampled_from(["Exists", "Equal"]),
        "effect": st.sampled_from(["NoExecute", "NoSchedule"]),
        "tolerationSeconds": st.integers(0, 600),
    },
)
_pod_spec = st.fixed_dictionaries(
    {"containers": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["a", "b"]), "image": st.sampled_from(["nginx", "nginx:latest", "nginx:1.25", "r:5000/x", ""])}), min_size=1, max_size=2)},
    optional={
        "tolerations": st.lists(_toleration, max_size=3),
        "priorityClassName": st.sampled_from(["", "high", "low", "system-node-critical"]),
        "serviceAccountName": st.sampled_from(["", "default", "builder"]),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never"]),
        "terminationGracePeriodSeconds": st.integers(0, 60),
    },
)


@settings(max_examples=100, deadline=None)
@given(spec=_pod_spec, namespace=st.sampled_from(["default", "team"]))
def test_mutating_chain_is_idempotent_for_drawn_pods(spec, namespace):
    plugins = chain(priority_classes=(LOW_DEFAULT, HIGH))
    pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace}, "spec": spec})
    first = run_mutating(request(pod), plugins)
    if not first.allowed:
        return
    second = run_mutating(request(first.object), plugins)
    assert second.allowed and second.patches == ()
    assert apply_patch(to_dict(pod), list(first.patches)) == to_dict(first.object)

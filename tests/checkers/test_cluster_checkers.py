"""The cluster checkers (PDB-aware eviction, scheduling, service availability, admission,
convergence): table tests on hand-made journals — a violation found with minimal evidence,
a clean journal passing, unknown when the signals are missing — then small whole clusters,
including a deliberately broken eviction path the PDB checker must catch."""

import json
from fractions import Fraction

import pytest
import trio

from chaoskube.checkers.admission import check_admission
from chaoskube.checkers.availability import check_service_availability
from chaoskube.checkers.convergence import check_convergence
from chaoskube.checkers.eviction import check_pdb_eviction
from chaoskube.checkers.replay import StoreReplay, scaled_value, selector_matches
from chaoskube.checkers.scheduling import check_scheduling, parse_quantity, pod_requests, tolerates
from chaoskube.checkers.verdict import run_checker
from tests.cluster import harness


# =========================================================================== hand-made journals
class Journal:
    """A journal written by hand: store writes as ``raft-apply`` events (one revision each,
    applied by two members so that deduplication is exercised) and other events as given."""

    def __init__(self):
        self.events = []
        self.revision = 1

    def put(self, t, *objects):
        self.revision += 1
        entries = [["PUT", _key(obj), json.dumps(obj), self.revision] for obj in objects]
        for member, lag in (("etcd-1", 0.0), ("etcd-2", 0.002)):
            self.events.append({"type": "raft-apply", "t": t + lag, "member": member, "index": self.revision, "term": 1, "id": self.revision, "revision": self.revision, "error": None, "events": entries})
        self.events.sort(key=lambda event: event["t"])
        return self.revision

    def delete(self, t, obj):
        self.revision += 1
        self.events.append({"type": "raft-apply", "t": t, "member": "etcd-1", "index": self.revision, "term": 1, "id": self.revision, "revision": self.revision, "error": None, "events": [["DELETE", _key(obj), "", self.revision]]})
        self.events.sort(key=lambda event: event["t"])
        return self.revision

    def add(self, t, type, **fields):
        self.events.append({"t": t, "type": type, **fields})
        self.events.sort(key=lambda event: event["t"])


RESOURCES = {"Pod": "pods", "Node": "nodes", "PodDisruptionBudget": "poddisruptionbudgets", "Deployment": "deployments", "ReplicaSet": "replicasets",
             "ValidatingWebhookConfiguration": "validatingwebhookconfigurations", "MutatingWebhookConfiguration": "mutatingwebhookconfigurations"}


def _key(obj):
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"/registry/{RESOURCES[obj['kind']]}/{namespace}/{meta['name']}" if namespace else f"/registry/{RESOURCES[obj['kind']]}/{meta['name']}"


def pod(name, *, app="web", node="", ready=False, deleting=False, cpu="100m", phase=None, tolerations=None, node_selector=None, affinity=None, uid=None, owner=None):
    spec = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    metadata = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}", "labels": {"app": app}}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    if owner:
        metadata["ownerReferences"] = [owner]
    status = {"phase": phase or ("Running" if node else "Pending")}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    elif node:
        status["conditions"] = [{"type": "Ready", "status": "False"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def node(name, *, cpu="4", pods=110, taints=None, labels=None, ready=True, unschedulable=False):
    spec = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": str(pods)}, "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}]}}


def pdb(name="web", *, app="web", min_available=None, max_unavailable=None, status=None):
    spec = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "default", "generation": 1}, "spec": spec, "status": status or {}}


def deployment(name="web", replicas=3, *, ready=0, updated=None, status_replicas=None, generation=1, observed=1):
    status = {"observedGeneration": observed, "replicas": replicas if status_replicas is None else status_replicas,
              "updatedReplicas": replicas if updated is None else updated, "readyReplicas": ready}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "generation": generation},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}, "status": status}


def replicaset(name, deployment_name, replicas):
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment_name, "uid": f"uid-{deployment_name}", "controller": True}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "ownerReferences": [owner]}, "spec": {"replicas": replicas}}


def owned_by(replicaset_name):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset_name, "uid": f"uid-{replicaset_name}", "controller": True}


# =========================================================================== shared helpers
def test_the_store_is_replayed_once_per_revision_in_revision_order():
    journal = Journal()
    journal.put(1.0, node("n1"))
    journal.put(2.0, pod("a", node="n1", ready=True))
    journal.delete(3.0, pod("a"))
    store = StoreReplay(("pods",))
    changes = [change for event in journal.events for change in store.apply(event)]
    assert [(c.revision, c.key, c.before is None, c.after is None) for c in changes] == [(3, "default/a", True, False), (4, "default/a", False, True)]
    assert store.revisions_applied == 3 and not store.objects("pods")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"app": "web"}, False),  # a missing selector selects nothing
        ({}, {"app": "web"}, True),  # an empty one everything
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "1"}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}, {"tier": "c"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": "a"}, False),
    ],
)
def test_label_selectors(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


@pytest.mark.parametrize(("value", "total", "round_up", "expected"), [(2, 10, True, 2), ("25%", 3, True, 1), ("25%", 3, False, 0), ("50%", 5, True, 3)])
def test_scaled_values_round_as_intstr_does(value, total, round_up, expected):
    assert scaled_value(value, total, round_up=round_up) == expected


# =========================================================================== PDB-aware eviction
def _three_ready(journal, *, budget=None):
    journal.put(1.0, node("n1"), node("n2"))
    journal.put(1.5, budget or pdb(min_available=2))
    for index, name in enumerate(("a", "b", "c")):
        journal.put(2.0 + index, pod(name, node="n1" if index < 2 else "n2", ready=True))


def _evict(journal, t, name, *, request_id=None, start=None):
    """An eviction as the journal shows it: the client's invoke, the store write marking the
    pod for deletion, the API server's record."""
    request_id = request_id or f"admin/{name}"
    journal.add(start if start is not None else t - 0.01, "api-op", phase="invoke", client="admin", op_id=request_id, verb="create", resource="pods", subresource="eviction", namespace="default", name=name)
    journal.put(t, pod(name, node="n1", ready=True, deleting=True))
    journal.add(t + 0.005, "api-op", phase="ok", client="admin", op_id=request_id, request=request_id, verb="create", resource="pods", subresource="eviction", namespace="default", name=name, code=201)
    journal.add(t + 0.004, "eviction", server="kube-apiserver-1", id=request_id, namespace="default", pod=name, pdb="web", outcome="evicted")


def test_an_eviction_that_keeps_the_budget_passes():
    journal = Journal()
    _three_ready(journal)
    _evict(journal, 10.0, "a")
    verdict = check_pdb_eviction(journal.events)
    assert verdict.valid is True, verdict.reason
    assert [(row["pod"], row["healthy_after"], row["desired_healthy"]) for row in verdict.details["voluntary"]] == [("default/a", 2, 2)]


def test_a_second_eviction_below_the_budget_is_a_violation_with_minimal_evidence():
    journal = Journal()
    _three_ready(journal)
    _evict(journal, 10.0, "a")
    _evict(journal, 11.0, "b")
    verdict = check_pdb_eviction(journal.events)
    assert verdict.valid is False
    assert verdict.reason.startswith("eviction of default/b at t=11.000 left PDB default/web with 1 healthy pod(s), below desiredHealthy 2")
    event, summary = verdict.evidence
    assert event["type"] == "eviction" and event["pod"] == "b"
    assert (summary["pod"], summary["revision"], summary["healthy_after"], summary["desired_healthy"]) == ("default/b", 8, 1, 2)


def test_involuntary_losses_are_listed_not_violations_but_shown_when_an_eviction_follows():
    def story(evicted_at: float) -> Journal:
        journal = Journal()
        journal.add(0.0, "leader", event="start", lease="kube-system/kube-controller-manager", process="kcm-1")
        _three_ready(journal)
        journal.add(9.0, "node-health", node="n2", ready="Unknown", reason="NodeStatusUnknown")
        journal.put(9.5, pod("c", node="n2", ready=False))  # the node lifecycle controller marks it not ready
        if evicted_at:
            _evict(journal, evicted_at, "a", start=evicted_at - 0.1)
        return journal

    alone = check_pdb_eviction(story(0.0).events)
    assert alone.valid is True and [loss["pod"] for loss in alone.details["other_losses"]] == ["default/c"]
    # 0.5 s after the loss, the disruption controller has not recounted: upstream's
    # eviction.go trusts the stale status, and the eviction goes through on a correct cluster
    stale = check_pdb_eviction(story(10.0).events)
    assert stale.valid is True and "1 that a status the disruption controller had not yet updated allowed" in stale.reason, stale.reason
    assert [row.get("stale_status") for row in stale.details["voluntary"]] == [["default/c"]]
    # 20 s after it, with the controller acting all along, the status should have counted it
    verdict = check_pdb_eviction(story(29.5).events)
    assert verdict.valid is False
    assert "1 other loss(es) of its pods since it last had room: default/c unready" in verdict.reason
    assert [item.get("pod") for item in verdict.evidence[1:]] == ["default/a", "default/c"]


def test_evicting_a_pod_already_being_deleted_is_not_a_voluntary_disruption():
    journal = Journal()
    _three_ready(journal)
    journal.put(8.0, pod("a", node="n1", ready=True, deleting=True))  # the taint manager deleted it
    journal.add(8.01, "taint-eviction", pod="default/a", node="n1", after_s=300)
    journal.put(8.5, pod("b", node="n1", ready=True, deleting=True))
    journal.add(8.51, "taint-eviction", pod="default/b", node="n1", after_s=300)
    _evict(journal, 9.0, "a", start=8.9)  # kubectl drain, later: its pod was already going
    verdict = check_pdb_eviction(journal.events)
    assert verdict.valid is True, verdict.reason
    assert [(loss["pod"], loss["cause"]) for loss in verdict.details["other_losses"]] == [("default/a", "taint-eviction"), ("default/b", "taint-eviction")]


def test_preemption_counts_as_voluntary_unless_told_otherwise():
    journal = Journal()
    _three_ready(journal, budget=pdb(min_available=3))
    journal.add(9.99, "api-op", phase="invoke", client="kube-scheduler-1/scheduler", op_id=1, verb="delete", resource="pods", subresource="", namespace="default", name="c")
    journal.put(10.0, pod("c", node="n2", ready=True, deleting=True))
    journal.add(10.01, "preempted", pod="default/c", preemptor="default/urgent", node="n2", scheduler="kube-scheduler-1")
    assert check_pdb_eviction(journal.events).reason.startswith("preemption of default/c")
    lenient = check_pdb_eviction(journal.events, include_preemption=False)
    assert lenient.valid is True and [loss["cause"] for loss in lenient.details["other_losses"]] == ["preempted"]


def test_desired_healthy_comes_from_the_controllers_scale_for_max_unavailable():
    journal = Journal()
    journal.put(1.0, node("n1"))
    journal.put(1.1, deployment("web", 4), replicaset("web-1", "web", 4))
    journal.put(1.5, pdb(max_unavailable="25%"))  # desired = 4 - ceil(25% of 4) = 3
    for name in "abcd":
        journal.put(2.0, pod(name, node="n1", ready=True, owner=owned_by("web-1")))
    _evict(journal, 10.0, "a")
    assert check_pdb_eviction(journal.events).valid is True
    _evict(journal, 11.0, "b")
    verdict = check_pdb_eviction(journal.events)
    assert verdict.valid is False and verdict.evidence[1]["desired_healthy"] == 3 and verdict.evidence[1]["desired_from"] == "expected 4 - maxUnavailable"


def test_pdb_checker_is_unknown_without_a_store_or_a_pdb():
    assert check_pdb_eviction([{"type": "eviction", "t": 1.0, "namespace": "default", "pod": "a", "outcome": "evicted"}]).valid is None
    journal = Journal()
    journal.put(1.0, pod("a", node="n1", ready=True))
    verdict = check_pdb_eviction(journal.events)
    assert verdict.valid is None and "no PodDisruptionBudget" in verdict.reason


# =========================================================================== scheduling
def _bind(journal, t, obj, *, start=None, request_id=None):
    """A binding as the journal shows it: the scheduler's invoke, the store write, the
    API server's record (which names the revision)."""
    request_id = request_id or f"sched/{obj['metadata']['name']}"
    journal.add(start if start is not None else t - 0.01, "api-op", phase="invoke", client="sched", op_id=request_id, verb="create", resource="pods", subresource="binding", namespace="default", name=obj["metadata"]["name"])
    revision = journal.put(t, obj)
    journal.add(t + 0.005, "api-op", phase="ok", client="sched", op_id=request_id, request=request_id)
    journal.add(t + 0.004, "api-request", server="kube-apiserver-1", id=request_id, verb="create", resource="pods", subresource="binding", namespace="default", name=obj["metadata"]["name"], code=201, resource_version=str(revision))
    journal.add(t + 0.006, "scheduled", pod=f"default/{obj['metadata']['name']}", node=obj["spec"]["nodeName"], attempts=1, scheduler="kube-scheduler-1")


def _pending(journal, t, *pods):
    for obj in pods:
        unbound = json.loads(json.dumps(obj))
        unbound["spec"].pop("nodeName", None)
        unbound["status"] = {"phase": "Pending"}
        journal.put(t, unbound)


def test_bindings_within_allocatable_pass():
    journal = Journal()
    journal.put(1.0, node("n1", cpu="1"), node("n2", cpu="1"))
    pods = [pod("a", node="n1", cpu="500m"), pod("b", node="n1", cpu="500m"), pod("c", node="n2", cpu="1")]
    _pending(journal, 2.0, *pods)
    for index, obj in enumerate(pods):
        _bind(journal, 3.0 + index, obj)
    verdict = check_scheduling(journal.events)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["bindings_per_node"] == {"n1": 2, "n2": 1}


def test_overcommitting_a_node_is_a_violation_and_terminal_pods_do_not_count():
    journal = Journal()
    journal.put(1.0, node("n1", cpu="1"))
    done = pod("old", node="n1", cpu="900m", phase="Succeeded")
    journal.put(1.5, done)  # created bound (as a kubelet's static pod would be): counted, not judged
    a, b = pod("a", node="n1", cpu="600m"), pod("b", node="n1", cpu="600m")
    _pending(journal, 2.0, a, b)
    _bind(journal, 3.0, a)
    assert check_scheduling(journal.events).valid is True  # the Succeeded pod holds nothing
    _bind(journal, 4.0, b)
    verdict = check_scheduling(journal.events)
    assert verdict.valid is False
    assert verdict.reason == "binding default/b to n1 at t=4.000 puts 1.2 cpu on a node with 1 allocatable"
    assert verdict.evidence[1]["pods"] == ["default/a", "default/b"]


def test_the_pod_count_is_a_resource_too():
    journal = Journal()
    journal.put(1.0, node("n1", pods=1))
    a, b = pod("a", node="n1"), pod("b", node="n1")
    _pending(journal, 2.0, a, b)
    _bind(journal, 3.0, a)
    _bind(journal, 4.0, b)
    verdict = check_scheduling(journal.events)
    assert verdict.valid is False and verdict.evidence[1]["resource"] == "pods"


NO_SCHEDULE = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("node_obj", "pod_fields", "problem"),
    [
        (node("n1", taints=[NO_SCHEDULE]), {}, "untolerated taint dedicated=infra:NoSchedule"),
        (node("n1", taints=[NO_SCHEDULE]), {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}, None),
        (node("n1", taints=[{"key": "x", "effect": "PreferNoSchedule"}]), {}, None),
        (node("n1", unschedulable=True), {}, "node unschedulable (cordoned)"),
        (node("n1", labels={"disk": "hdd"}), {"node_selector": {"disk": "ssd"}}, "nodeSelector does not match"),
        (node("n1", labels={"zone": "a"}), {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}}}, "required node affinity does not match"),
        (node("n1", labels={"zone": "a"}), {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}, None),
    ],
)
def test_bindings_must_respect_taints_cordons_and_node_affinity(node_obj, pod_fields, problem):
    journal = Journal()
    journal.put(1.0, node_obj)
    obj = pod("a", node="n1", **pod_fields)
    _pending(journal, 2.0, obj)
    _bind(journal, 10.0, obj)
    verdict = check_scheduling(journal.events)
    if problem is None:
        assert verdict.valid is True, verdict.reason
    else:
        assert verdict.valid is False and problem in verdict.reason and verdict.evidence[1]["problems"] == [problem]


def test_a_taint_newer_than_the_cache_lag_is_a_race_not_a_violation():
    journal = Journal()
    journal.put(1.0, node("n1"))
    obj = pod("a", node="n1")
    _pending(journal, 2.0, obj)
    journal.put(9.7, node("n1", taints=[NO_SCHEDULE]))  # 0.3 s before the binding request
    _bind(journal, 10.0, obj, start=9.99)
    verdict = check_scheduling(journal.events)
    assert verdict.valid is True and [race["problems"] for race in verdict.details["races"]] == [["untolerated taint dedicated=infra:NoSchedule"]]
    assert check_scheduling(journal.events, cache_lag_s=0.1).valid is False


def test_a_pod_bound_to_a_second_node_is_a_violation():
    journal = Journal()
    journal.put(1.0, node("n1"), node("n2"))
    obj = pod("a", node="n1")
    _pending(journal, 2.0, obj)
    _bind(journal, 3.0, obj)
    journal.put(4.0, pod("a", node="n2"))
    verdict = check_scheduling(journal.events)
    assert verdict.valid is False and verdict.reason == "pod default/a was bound to n1, then to n2 at t=4.000 (revision 5)"


def test_two_scheduled_reports_of_one_pod_on_two_nodes_are_a_violation():
    journal = Journal()
    journal.put(1.0, node("n1"), node("n2"))
    obj = pod("a", node="n1")
    _pending(journal, 2.0, obj)
    _bind(journal, 3.0, obj)
    journal.add(5.0, "scheduled", pod="default/a", node="n2", attempts=2, scheduler="kube-scheduler-2")
    verdict = check_scheduling(journal.events)
    assert verdict.valid is False and [e["node"] for e in verdict.evidence] == ["n1", "n2"]


def test_scheduling_checker_is_unknown_without_bindings():
    assert check_scheduling([{"type": "scheduled", "t": 1.0, "pod": "default/a", "node": "n1"}]).valid is None
    journal = Journal()
    journal.put(1.0, node("n1"))
    assert check_scheduling(journal.events).reason == "no pod was bound by a scheduler in the journal"


@pytest.mark.parametrize(("text", "expected"), [("100m", Fraction(1, 10)), ("4", Fraction(4)), ("16Gi", Fraction(16 * 2**30)), ("1e3", Fraction(1000)), ("0.5", Fraction(1, 2)), (2, Fraction(2))])
def test_quantities_parse_exactly(text, expected):
    assert parse_quantity(text) == expected


def test_pod_requests_take_init_containers_sidecars_limits_and_overhead():
    obj = {"spec": {
        "containers": [{"resources": {"requests": {"cpu": "200m"}}}, {"resources": {"limits": {"cpu": "300m", "memory": "1Gi"}}}],
        "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}, {"resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}],
        "overhead": {"cpu": "10m"},
    }}
    assert pod_requests(obj) == {"cpu": Fraction(1110, 1000), "memory": Fraction(2**30)}  # max(0.6, 1 + 0.1 sidecar) + overhead


def test_tolerations_match_as_tolerates_taint_does():
    taint = {"key": "k", "value": "v", "effect": "NoExecute"}
    assert tolerates({"key": "k", "operator": "Equal", "value": "v"}, taint)
    assert not tolerates({"key": "k", "value": "w"}, taint)
    assert tolerates({"operator": "Exists"}, taint)  # empty key with Exists: everything
    assert not tolerates({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, taint)


# =========================================================================== service availability
def traffic(t, outcome, *, service="default/web", latency_s=0.0, node="n1"):
    return {"type": "traffic", "t": t, "service": service, "port": "80", "node": node, "outcome": outcome, "latency_s": latency_s, "endpoint": ""}


def test_availability_reports_the_failed_fraction_and_the_longest_outage():
    journal = [traffic(1.0, "ok"), traffic(2.0, "no-endpoints"), traffic(3.0, "refused"), traffic(4.5, "ok", latency_s=0.5), traffic(5.0, "timeout", latency_s=1.0), traffic(6.0, "ok"),
               traffic(1.0, "ok", service="default/api")]
    verdict = check_service_availability(journal)
    assert verdict.valid is True
    assert verdict.reason == "default/api: 0/1 failed (0.0%), longest outage 0.00 s; default/web: 3/6 failed (50.0%), longest outage 2.00 s from t=2.000"
    assert verdict.details["default/web"]["outcomes"] == {"no-endpoints": 1, "ok": 3, "refused": 1, "timeout": 1}
    outage = check_service_availability(journal, max_outage_s=1.5)
    assert outage.valid is False and [(e["t"], e["outcome"]) for e in outage.evidence] == [(2.0, "no-endpoints"), (3.0, "refused"), (4.5, "ok")]
    fraction = check_service_availability(journal, max_failed_fraction=0.25)
    assert fraction.valid is False and fraction.reason.startswith("failed fraction over 25.0%: ") and [e["t"] for e in fraction.evidence] == [2.0, 5.0]
    assert check_service_availability(journal, max_outage_s=2.0, max_failed_fraction=0.5).valid is True


def test_an_outage_still_running_at_the_end_is_ongoing():
    verdict = check_service_availability([traffic(1.0, "ok"), traffic(2.0, "timeout", latency_s=1.0), traffic(3.0, "timeout", latency_s=1.0)], max_outage_s=1.0)
    assert verdict.valid is False and verdict.details["default/web"]["ongoing"] is True and verdict.details["default/web"]["longest_outage_s"] == 2.0


def test_availability_is_unknown_without_traffic_in_the_window():
    assert check_service_availability([]).valid is None
    assert check_service_availability([traffic(1.0, "ok")], between=(5.0, 10.0)).valid is None


# =========================================================================== admission
def webhook_config(policy, *, kind="ValidatingWebhookConfiguration", name="guard", **fields):
    hook = {"name": f"{name}.chaoskube.io", "failurePolicy": policy, "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}], **fields}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]}


def call(t, outcome, *, request=None, name="guard", server="kube-apiserver-1"):
    fields = {"server": server, "webhook": f"{name}.chaoskube.io", "configuration": name, "uid": "u", "operation": "CREATE", "kind": "Pod", "outcome": outcome,
              "reason": 'failed calling webhook "guard.chaoskube.io": context deadline exceeded' if "error" in outcome else "", "latency_s": 0.0, "round": 0}
    if request:
        fields["request"] = request
    return {"type": "webhook-call", "t": t, **fields}


def answer(t, code, *, request="r1", name="a", server="kube-apiserver-1", revision=None):
    row = {"type": "api-request", "t": t, "server": server, "id": request, "verb": "create", "resource": "pods", "subresource": "", "namespace": "default", "name": name, "code": code}
    if revision is not None:
        row["resource_version"] = str(revision)
    return row


def _guarded(policy):
    journal = Journal()
    journal.put(1.0, webhook_config(policy))
    return journal


def test_a_persisted_request_whose_fail_webhook_failed_is_a_violation_linked_by_request_id():
    journal = _guarded("Fail")
    revision = journal.put(10.0, pod("a"))
    journal.events += [call(9.9, "error", request="r1"), answer(10.01, 201, revision=revision)]
    verdict = check_admission(journal.events)
    assert verdict.valid is False
    assert verdict.reason.startswith("pods default/a was persisted at t=10.010 by kube-apiserver-1 although its validating webhook guard.chaoskube.io (failurePolicy Fail) answered error at t=9.900")
    assert [item["type"] for item in verdict.evidence] == ["webhook-call", "api-request", "store"]
    refused = _guarded("Fail")
    refused.events += [call(9.9, "error", request="r1"), answer(9.91, 500)]
    assert check_admission(refused.events).valid is True


def test_without_request_ids_a_failed_call_must_be_followed_by_a_refusal():
    clean = _guarded("Fail")
    clean.events += [call(9.9, "error"), answer(9.91, 500, request="r1"), call(12.0, "allowed"), answer(12.01, 201, request="r2", name="b", revision=5)]
    assert check_admission(clean.events).valid is True
    broken = _guarded("Fail")
    broken.events += [call(9.9, "error"), answer(9.91, 201, request="r1", revision=3)]
    verdict = check_admission(broken.events)
    assert verdict.valid is False and "linked by elimination" in verdict.reason
    assert [item["type"] for item in verdict.evidence] == ["webhook-call", "api-request"]


def test_ignore_policy_bypasses_are_listed_and_strict_makes_them_violations():
    journal = _guarded("Ignore")
    journal.put(1.0, webhook_config("Ignore"))
    journal.events += [call(9.9, "ignored-error", request="r1"), answer(9.91, 201, revision=4)]
    verdict = check_admission(journal.events)
    assert verdict.valid is True and [bypass["object"] for bypass in verdict.details["bypasses"]] == ["pods default/a"]
    strict = check_admission(journal.events, strict=True)
    assert strict.valid is False and "without validation" in strict.reason


def test_ignoring_a_fail_webhook_is_a_violation_unless_the_policy_just_changed():
    journal = _guarded("Fail")
    journal.events += [call(9.9, "ignored-error", request="r1"), answer(9.91, 201, revision=3)]
    assert check_admission(journal.events).valid is False
    switched = Journal()
    switched.put(1.0, webhook_config("Ignore"))
    switched.put(9.5, webhook_config("Fail"))  # the server's informer may not have it yet
    switched.events += [call(9.9, "ignored-error", request="r1"), answer(9.91, 201, revision=3)]
    assert check_admission(switched.events).valid is True


def test_a_failed_call_on_a_server_that_died_is_unresolved_not_a_violation():
    journal = _guarded("Fail")
    journal.events += [call(9.9, "error"), {"type": "process", "t": 9.95, "event": "kill", "process": "kube-apiserver-1"},
                       call(10.99, "allowed"), answer(11.0, 201, request="r2", revision=3)]
    verdict = check_admission(journal.events)
    assert verdict.valid is True and len(verdict.details["unresolved"]) == 1


def test_a_request_a_fail_webhook_matched_needs_a_passing_call_of_it():
    skipped = _guarded("Fail")
    skipped.events += [answer(10.0, 201, revision=3)]  # no call at all: a server that skipped the webhook
    verdict = check_admission(skipped.events)
    assert verdict.valid is False and "without a passing call of webhook guard.chaoskube.io (failurePolicy Fail" in verdict.reason
    assert [item.get("type", "config") for item in verdict.evidence] == ["api-request", "config"]
    vouched = _guarded("Fail")
    vouched.events += [call(9.99, "allowed"), answer(10.0, 201, revision=3)]
    assert check_admission(vouched.events).valid is True
    selective = Journal()
    selective.put(1.0, webhook_config("Fail", namespaceSelector={"matchLabels": {"team": "a"}}))
    selective.events += [answer(10.0, 201, revision=3)]
    assert check_admission(selective.events).valid is True  # its match depends on labels: not judged
    fresh = Journal()
    fresh.put(9.5, webhook_config("Fail"))
    fresh.events += [answer(10.0, 201, revision=3)]
    assert check_admission(fresh.events).valid is True  # configured 0.5 s before: the server may not know it yet


@pytest.mark.parametrize(
    ("rule", "attributes", "expected"),
    [
        ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}, {"subresource": "status"}, False),  # "*" is no subresource
        ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}, {"subresource": "status"}, True),
        ({"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/status"]}, {"subresource": "status"}, True),
        ({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}, {}, False),  # an UPDATE
        ({"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["pods"]}, {}, False),
        ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods"], "scope": "Cluster"}, {}, False),
        ({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods"], "scope": "Namespaced"}, {}, True),
    ],
)
def test_webhook_rules_match_as_the_api_server_matches_them(rule, attributes, expected):
    from chaoskube.checkers.admission import rule_matches

    request = {"operation": "UPDATE", "group": "", "version": "v1", "resource": "pods", "subresource": "", "namespace": "default", **attributes}
    assert rule_matches(rule, **request) is expected


def test_admission_is_unknown_when_no_webhook_was_called():
    assert check_admission([answer(1.0, 201, revision=2)]).valid is None


# =========================================================================== convergence
def _workload(journal, *, ready_at, node_ready=True):
    journal.put(1.0, node("n1", ready=node_ready))
    journal.put(2.0, deployment("web", 2, ready=0))
    journal.put(3.0, pod("a", node="n1"), pod("b", node="n1"))
    journal.put(ready_at, pod("a", app="web", node="n1", ready=True), pod("b", app="web", node="n1", ready=True))
    journal.put(ready_at + 0.1, deployment("web", 2, ready=2))


def test_convergence_reports_the_time_to_converge():
    journal = Journal()
    _workload(journal, ready_at=12.0)
    journal.add(60.0, "world", event="stop")
    verdict = check_convergence(journal.events, healed_at=10.0, deadline_s=30.0)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["time_to_converge_s"] == pytest.approx(2.1)


def test_a_pod_on_a_node_that_stays_not_ready_blocks_convergence():
    journal = Journal()
    _workload(journal, ready_at=12.0, node_ready=False)
    journal.add(60.0, "world", event="stop")
    verdict = check_convergence(journal.events, healed_at=10.0, deadline_s=30.0)
    assert verdict.valid is False and verdict.reason.startswith("not converged (deadline 30.0 s after the heal at t=10.000); at the deadline: deployment default/web ready 2/2")
    assert {"pod": "default/a", "node": "n1", "problem": "its node is not Ready", "last_change_t": 12.0} in verdict.evidence


def test_convergence_after_the_deadline_is_late():
    journal = Journal()
    _workload(journal, ready_at=50.0)
    journal.add(60.0, "world", event="stop")
    verdict = check_convergence(journal.events, healed_at=10.0, deadline_s=30.0)
    assert verdict.valid is False and verdict.reason.startswith("converged only 40.100 s after the heal")


def test_a_convergence_that_does_not_last_to_the_deadline_does_not_count():
    journal = Journal()
    _workload(journal, ready_at=12.0)
    journal.put(20.0, pod("a", app="web", node="n1", ready=False))
    journal.add(60.0, "world", event="stop")
    verdict = check_convergence(journal.events, healed_at=10.0, deadline_s=30.0)
    assert verdict.valid is False and verdict.details["flaps"] == 1


def test_convergence_is_unknown_without_signals_or_before_the_deadline():
    assert check_convergence([{"type": "world", "t": 100.0}], healed_at=10.0, deadline_s=30.0).valid is None
    journal = Journal()
    _workload(journal, ready_at=12.0, node_ready=False)
    verdict = check_convergence(journal.events, healed_at=10.0, deadline_s=60.0)
    assert verdict.valid is None and "before the deadline" in verdict.reason


def test_the_incremental_tracker_agrees_with_the_plain_oracle_at_every_revision():
    from chaoskube.checkers.convergence import _Tracker, convergence_problems

    journal = Journal()
    _workload(journal, ready_at=12.0)
    journal.put(13.0, node("n1", ready=False))
    journal.put(14.0, pod("c", node="n1", ready=True), deployment("web", 3, ready=2))
    journal.put(15.0, node("n1"))
    journal.delete(16.0, pod("a"))
    store = StoreReplay(("pods", "nodes", "deployments"))
    tracker = _Tracker(store)
    seen = []
    for event in journal.events:
        changes = store.apply(event)
        if changes:
            tracker.update(changes)
            assert tracker.problems() == convergence_problems(store)
            seen.append(len(tracker.problems()))
    assert 0 in seen and max(seen) >= 3


def test_the_watch_fed_a_growing_journal_agrees_with_the_checker_at_every_point():
    """ConvergenceWatch (what a run asks after its settle phase, experiments/phases.py):
    fed a journal as it grows, it is converged exactly when check_convergence, judging
    the journal up to there, finds the stretch converged; None before any workload."""
    from chaoskube.checkers.convergence import ConvergenceWatch

    journal = Journal()
    journal.put(0.5, node("n1"))
    _workload(journal, ready_at=12.0)
    journal.put(13.0, node("n1", ready=False))
    journal.put(15.0, node("n1"))
    journal.delete(16.0, pod("a"))
    watch = ConvergenceWatch()
    answers = []
    for end in range(len(journal.events) + 1):
        watch.feed(journal.events[:end])
        answers.append(watch.converged)
        if end and watch.converged is not None:
            verdict = check_convergence(journal.events[:end], healed_at=0.0, deadline_s=1000.0)
            assert watch.converged is verdict.details["converged_at_end"], (end, verdict.reason)
    assert answers[:3] == [None, None, None] and True in answers and False in answers and answers[-1] is False
    assert watch.problems()[0]["deployment"] == "default/web"


# =========================================================================== crashes stay unknown
def test_a_malformed_journal_makes_a_checker_unknown_never_true():
    broken = [{"type": "raft-apply", "t": 1.0, "revision": 2, "events": [["PUT", "/registry/pods/default/a", "{not json", 2]]}]
    for checker in (check_pdb_eviction, check_scheduling):
        assert run_checker(checker, broken).valid is None


# =========================================================================== whole clusters
async def _until(cluster, predicate, within_s, every_s=1.0):
    return await cluster.wait_for(predicate, within_s=within_s, every_s=every_s)


def _drain_story():
    from chaoskube.api.manifests import from_dict
    from chaoskube.node.kubelet import drain

    async def story(world, cluster, client):
        await client.create(harness.deployment("web", 4))
        await client.create(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
                                       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))

        async def settled():
            return await harness.ready_count(client, "web") == 4 and (await client.get("poddisruptionbudgets", "default", "web")).status.disruptions_allowed == 1

        assert await _until(cluster, settled, 120)
        by_node = {}
        for obj in await harness.pods_of(client, "web"):
            by_node.setdefault(obj.spec.node_name, []).append(obj.metadata.name)
        busiest = max(sorted(by_node), key=lambda name: len(by_node[name]))
        result = await drain(client, busiest, timeout_s=300)
        healed_at = world.now
        assert await _until(cluster, lambda: _ready_is(client, "web", 4), 120)
        await world.sleep(5)
        return len(by_node[busiest]), result, healed_at

    return story


async def _ready_is(client, app, count):
    return await harness.ready_count(client, app) == count


def test_a_drain_that_respects_the_pdb_passes_and_the_cluster_converges():
    world, (drained, result, healed_at) = harness.run_cluster(_drain_story(), harness.spec(nodes=2, zones=("zone-a", "zone-b")))
    assert drained >= 2 and result.completed
    events = world.journal.events
    verdict = check_pdb_eviction(events)
    assert verdict.valid is True, verdict.reason
    assert len(verdict.details["voluntary"]) == drained and all(row["desired_healthy"] == 3 for row in verdict.details["voluntary"])
    scheduling = check_scheduling(events)
    assert scheduling.valid is True, scheduling.reason
    converged = check_convergence(events, healed_at=healed_at, deadline_s=60)
    assert converged.valid is True, converged.reason


def test_an_eviction_path_that_skips_the_pdb_is_caught(monkeypatch):
    """The gallery's broken component: an API server whose eviction never spends the budget."""
    from chaoskube.apiserver.server import ApiServer

    async def skip_the_budget(self, request, pod, pdb):
        return None

    monkeypatch.setattr(ApiServer, "_spend_disruption", skip_the_budget)
    world, (drained, result, _) = harness.run_cluster(_drain_story(), harness.spec(nodes=2, zones=("zone-a", "zone-b")))
    assert drained >= 2
    verdict = check_pdb_eviction(world.journal.events)
    assert verdict.valid is False
    assert "left PDB default/web with 2 healthy pod(s), below desiredHealthy 3" in verdict.reason
    assert verdict.evidence[0]["type"] == "eviction" and len(verdict.evidence) == 2


def test_bindings_of_a_real_scheduler_pass_and_a_probe_gap_shows_in_availability():
    from chaoskube.api.manifests import from_dict
    from chaoskube.cluster import ClusterSpec, NodeGroup, Taint
    from chaoskube.node.proxy import TrafficProbe


    async def story(world, cluster, client):
        selected = harness.deployment("web", 1)
        selected.spec.template.spec.node_selector = {"disk": "ssd"}
        await client.create(selected)
        await client.create(harness.deployment("other", 4))
        await client.create(from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                                       "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}}))
        assert await _until(cluster, lambda: _ready_is(client, "web", 1), 120)
        assert await _until(cluster, lambda: _ready_is(client, "other", 4), 120)
        probe = TrafficProbe(world.process("plain-1"), cluster.proxies["plain-1"], "default/web", 80, every_s=0.5)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(probe.run)
            await world.sleep(5)
            [victim] = await harness.pods_of(client, "web")
            await client.delete("pods", "default", victim.metadata.name)
            deleted_at = world.now
            assert await _until(cluster, lambda: _ready_is(client, "web", 1), 120, every_s=0.5)
            await world.sleep(5)
            nursery.cancel_scope.cancel()
        return deleted_at

    cluster_spec = ClusterSpec(node_groups=[
        NodeGroup(prefix="plain", count=2),
        NodeGroup(prefix="ssd", count=1, labels={"disk": "ssd"}),
        NodeGroup(prefix="infra", count=1, taints=[Taint(key="dedicated", value="infra", effect="NoSchedule")]),
    ])
    world, deleted_at = harness.run_cluster(story, cluster_spec)
    events = world.journal.events
    scheduling = check_scheduling(events)
    assert scheduling.valid is True, scheduling.reason
    assert scheduling.details["bindings"] >= 6 and "infra-1" not in scheduling.details["bindings_per_node"]
    figures = check_service_availability(events)
    assert figures.valid is True and "default/web:" in figures.reason
    web = figures.details["default/web"]
    assert web["failed"] > 0 and web["outage_from"] >= deleted_at - 0.5 and web["longest_outage_s"] > 0.5
    verdict = check_service_availability(events, max_outage_s=0.5)
    assert verdict.valid is False and verdict.evidence[0]["outcome"] != "ok" and verdict.evidence[-1]["outcome"] == "ok"


@pytest.mark.parametrize("fails_open", [False, True], ids=["fail-policy-refuses", "broken-dispatcher-admits"])
def test_a_fail_webhook_that_is_down_refuses_pods_and_a_dispatcher_that_admits_them_is_caught(monkeypatch, fails_open):
    from chaoskube.api.manifests import from_dict
    from chaoskube.apiserver.webhooks import WebhookDispatcher, WebhookResult
    from chaoskube.client.client import ApiError
    from chaoskube.cluster import WebhookSpec

    if fails_open:  # the gallery's broken component: validating call errors are journaled, then ignored
        monkeypatch.setattr(WebhookDispatcher, "_verdict", lambda self, phase, relevant, replies: WebhookResult(True, phase.request.object))
    guard = WebhookSpec(name="guard", type="validating", failure_policy="Fail", timeout_seconds=2)

    async def story(world, cluster, client):
        async def configured():
            try:
                return len((await client.list("validatingwebhookconfigurations")).items) == 1
            except ApiError:
                return False

        assert await _until(cluster, configured, 30)
        await world.sleep(1)
        world.process(guard.service).kill()
        try:
            await client.create(from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "namespace": "default"},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        except ApiError as error:
            return error.code
        return 201

    world, code = harness.run_cluster(story, harness.spec(nodes=1, zones=("zone-a",), webhooks=[guard]))
    verdict = check_admission(world.journal.events)
    assert verdict.details["outcomes"].get("error", 0) >= 1
    if not fails_open:
        assert code == 500 and verdict.valid is True, verdict.reason
    else:
        assert code == 201 and verdict.valid is False
        assert verdict.reason.startswith("pods default/solo was persisted at t=") and "guard.chaoskube.io (failurePolicy Fail) answered error" in verdict.reason

"""The detection-power checkers on hand-built journals (issue 13): each answers unknown when
there is nothing to judge, true on a small healthy history, and false on a crafted
violation, with the evidence pointing at it."""

from __future__ import annotations

import json
from typing import Any

from chaoskube.checkers.admission_timing import check_admission_timing
from chaoskube.checkers.api_linearizability import check_api_linearizability
from chaoskube.checkers.api_watch import check_api_watch
from chaoskube.checkers.availability import check_service_availability, node_unreachable
from chaoskube.checkers.differential import check_differential, end_state
from chaoskube.checkers.garbage_collection import check_garbage_collection
from chaoskube.checkers.termination import check_graceful_termination
from chaoskube.checkers.workloads import check_workload_invariants

UID = {"a": "uid-a", "b": "uid-b"}


def obj(kind: str, name: str, *, namespace: str = "default", uid: str | None = None, **fields: Any) -> dict[str, Any]:
    meta = {"name": name, "uid": uid or f"uid-{name}"}
    if namespace:
        meta["namespace"] = namespace
    meta.update(fields.pop("metadata", {}))
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, **fields}


def put(t: float, revision: int, resource: str, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "raft-apply", "t": t, "revision": revision, "member": "etcd-1", "events": [["PUT", f"/registry/{resource}/{key}", json.dumps(value), revision]]}


def delete(t: float, revision: int, resource: str, key: str) -> dict[str, Any]:
    return {"type": "raft-apply", "t": t, "revision": revision, "member": "etcd-1", "events": [["DELETE", f"/registry/{resource}/{key}", None, revision]]}


def op(client: str, op_id: str, call: float, ret: float, verb: str, name: str, phase: str = "ok", *, resource: str = "pods", rv: str = "", uid: str = "", pre: str = "", code: int = 200, subresource: str = "", **extra: Any) -> list[dict[str, Any]]:
    common = {"type": "api-op", "client": client, "op_id": op_id, "verb": verb, "resource": resource, "subresource": subresource, "namespace": "default", "name": name}
    invoke = {**common, "t": call, "phase": "invoke", **({"precondition_rv": pre} if pre else {})}
    end = {**common, "t": ret, "phase": phase, "code": code, **({"resource_version": rv, "uid": uid} if phase == "ok" else {}), **extra}
    return [invoke, end]


def read(client: str, call: float, ret: float, name: str, rv: str, *, uid: str = "uid-a", verb: str = "get", request_rv: str = "", items: list | None = None, code: int = 200) -> dict[str, Any]:
    event = {"type": "api-read", "client": client, "verb": verb, "resource": "pods", "namespace": "default", "name": name, "call": call, "t": ret,
             "phase": "ok" if code == 200 else "fail", "code": code, "server": "kube-apiserver-1", "request_rv": request_rv, "rv_match": ""}
    if code == 200:
        event["resource_version"] = rv
        if verb == "get":
            event["uid"] = uid
        else:
            event["items"] = items or []
    return event


POD_A = obj("Pod", "a", uid="uid-a")


# =========================================================================== api-linearizability
def base_history() -> list[dict[str, Any]]:
    """A creates pod a (rev 2), then updates it with precondition 2 (rev 3)."""
    return [
        *op("A", "1.1", 1.0, 2.0, "create", "a", rv="2", uid="uid-a")[:1],
        put(1.5, 2, "pods", "default/a", POD_A),
        op("A", "1.1", 1.0, 2.0, "create", "a", rv="2", uid="uid-a")[1],
        op("A", "1.2", 3.0, 4.0, "update", "a", rv="3", uid="uid-a", pre="2")[0],
        put(3.5, 3, "pods", "default/a", POD_A),
        op("A", "1.2", 3.0, 4.0, "update", "a", rv="3", uid="uid-a", pre="2")[1],
    ]


def test_api_linearizability_answers_unknown_with_nothing_judged():
    assert check_api_linearizability([]).valid is None


def test_api_linearizability_accepts_a_linearizable_history():
    events = [*base_history(), read("B", 5.0, 6.0, "a", "3"), read("B", 3.2, 3.8, "a", "2")]
    verdict = check_api_linearizability(events)
    assert verdict.valid is True, verdict.reason


def test_a_stale_quorum_get_is_not_linearizable():
    events = [*base_history(), read("B", 5.0, 6.0, "a", "2")]  # rev 3 was applied at 3.5
    verdict = check_api_linearizability(events)
    assert verdict.valid is False and "pods default/a" in verdict.reason
    assert any(item.f == "read" for item in verdict.evidence)


def test_a_compare_and_set_from_a_stale_version_is_a_lost_update():
    events = [*base_history(), *op("B", "2.1", 5.0, 6.0, "update", "a", rv="4", uid="uid-a", pre="2")]
    events.insert(-1, put(5.5, 4, "pods", "default/a", POD_A))
    verdict = check_api_linearizability(events)
    assert verdict.valid is False
    assert any(item.f == "write" for item in verdict.evidence)


def test_a_create_that_overwrites_an_existing_object_is_not_linearizable():
    events = [*base_history(), *op("B", "2.1", 5.0, 6.0, "create", "a", rv="4", uid="uid-a2")]
    events.insert(-1, put(5.5, 4, "pods", "default/a", obj("Pod", "a", uid="uid-a2")))
    assert check_api_linearizability(events).valid is False


def test_a_404_naming_the_object_is_an_absence_and_a_namespace_404_is_not():
    deleted = [*base_history(), delete(4.5, 4, "pods", "default/a")]
    own = op("B", "2.1", 5.0, 6.0, "update", "a", phase="fail", code=404, message='pods "a" not found')
    assert check_api_linearizability([*deleted, *own]).valid is True
    early = op("B", "2.1", 3.6, 3.9, "update", "a", phase="fail", code=404, message='pods "a" not found')
    assert check_api_linearizability([*deleted, *early]).valid is False  # a existed throughout
    namespace = op("B", "2.1", 3.6, 3.9, "update", "a", phase="fail", code=404, message='namespaces "default" not found')
    assert check_api_linearizability([*deleted, *namespace]).valid is True  # not about the object


def test_a_stale_quorum_list_is_caught_and_a_cached_list_may_lag():
    history = base_history()
    stale = read("B", 5.0, 6.0, "", "2", verb="list", items=[["default/a", "2"]])
    verdict = check_api_linearizability([*history, stale])
    assert verdict.valid is False and "stale" in verdict.reason
    cached = read("B", 5.0, 6.0, "", "2", verb="list", request_rv="0", items=[["default/a", "2"]])
    assert check_api_linearizability([*history, cached]).valid is True
    wrong = read("B", 5.0, 6.0, "", "3", verb="list", items=[["default/a", "2"]])
    assert check_api_linearizability([*history, wrong]).valid is False  # a was at 3 then


def test_the_watch_caches_lag_is_reported_from_cached_lists_and_bookmarks():
    """A cached list at revision 2 sent at t=5 missed the change of revision 3 applied at
    t=3.5: 1.5 s behind; a bookmark at revision 2 received at t=63.5 from another server:
    60 s behind. Reported, not judged ("0" promises nothing)."""
    history = base_history()
    cached = read("B", 5.0, 6.0, "", "2", verb="list", request_rv="0", items=[["default/a", "2"]])
    stale = {"type": "watch-open", "t": 2.0, "name": "kubelet/pods", "watch": "w1", "server": "kube-apiserver-2", "resource": "pods", "namespace": "", "from_rv": "2"}
    bookmark = {"type": "watch-recv", "t": 63.5, "name": "kubelet/pods", "watch": "w1", "events": [["BOOKMARK", "", "2"]]}
    verdict = check_api_linearizability([*history, cached, stale, bookmark])
    assert verdict.valid is True and "lagged at most 60.0 s (kube-apiserver-2, pods)" in verdict.reason
    lags = verdict.details["watch_cache_lag_s"]
    assert lags["kube-apiserver-1"]["lag_s"] == 1.5 and lags["kube-apiserver-2"]["lag_s"] == 60.0
    fresh = {**bookmark, "events": [["BOOKMARK", "", "3"]]}
    assert check_api_linearizability([*history, stale, fresh]).details["watch_cache_lag_s"]["kube-apiserver-2"]["lag_s"] == 0.0


# =========================================================================== api-watch
def informer(t: float, event: str, rv: str, name: str = "kubelet/pods") -> dict[str, Any]:
    return {"type": "informer", "t": t, "name": name, "resource": "pods", "event": event, "resource_version": rv}


def watch_open(t: float, watch: str, from_rv: str, name: str = "kubelet/pods") -> dict[str, Any]:
    return {"type": "watch-open", "t": t, "name": name, "watch": watch, "server": "kube-apiserver-1", "resource": "pods", "namespace": "", "from_rv": from_rv}


def recv(t: float, watch: str, *events: list[str], name: str = "kubelet/pods") -> dict[str, Any]:
    return {"type": "watch-recv", "t": t, "name": name, "watch": watch, "events": [list(event) for event in events]}


def watch_store() -> list[dict[str, Any]]:
    return [put(1.0, 1, "pods", "default/z", obj("Pod", "z")), put(2.0, 2, "pods", "default/a", POD_A), put(3.0, 3, "pods", "default/b", obj("Pod", "b"))]


def test_api_watch_answers_unknown_without_watches():
    assert check_api_watch(watch_store()).valid is None


def test_api_watch_accepts_ordered_gap_free_events_and_an_equal_cache():
    events = [
        *watch_store()[:1], informer(1.5, "synced", "1"), watch_open(1.5, "w1", "1"), *watch_store()[1:],
        recv(2.1, "w1", ["ADDED", "default/a", "2"]), recv(3.1, "w1", ["ADDED", "default/b", "3"], ["BOOKMARK", "", "3"]),
        {"type": "informer-cache", "t": 4.0, "name": "kubelet/pods", "resource": "pods", "namespace": "", "resource_version": "3",
         "items": [["default/a", "2"], ["default/b", "3"], ["default/z", "1"]]},
    ]
    verdict = check_api_watch(events)
    assert verdict.valid is True, verdict.reason


def test_a_missed_event_a_duplicate_and_an_early_bookmark_are_caught():
    start = [*watch_store()[:1], informer(1.5, "synced", "1"), watch_open(1.5, "w1", "1"), *watch_store()[1:]]
    gap = check_api_watch([*start, recv(3.1, "w1", ["ADDED", "default/b", "3"])])
    assert gap.valid is False and "missed the ADDED of default/a" in gap.reason
    duplicate = check_api_watch([*start, recv(2.1, "w1", ["ADDED", "default/a", "2"]), recv(2.2, "w1", ["ADDED", "default/a", "2"])])
    assert duplicate.valid is False and "duplicated or out of order" in duplicate.reason
    early = check_api_watch([*start, recv(3.1, "w1", ["ADDED", "default/a", "2"], ["BOOKMARK", "", "3"])])
    assert early.valid is False and "bookmark" in early.reason


def test_a_410_excuses_the_gap_until_the_relist():
    events = [
        *watch_store()[:1], informer(1.5, "synced", "1"), watch_open(1.5, "w1", "1"), *watch_store()[1:],
        recv(2.1, "w1", ["ERROR", "", "410"]), informer(3.5, "relist", "3"), watch_open(3.5, "w2", "3"),
    ]
    assert check_api_watch([*events, recv(3.6, "w2", ["BOOKMARK", "", "3"])]).valid is True


def test_an_informer_cache_that_lacks_an_object_is_caught():
    events = [*watch_store(), {"type": "informer-cache", "t": 4.0, "name": "x/pods", "resource": "pods", "namespace": "", "resource_version": "3", "items": [["default/a", "2"], ["default/z", "1"]]}]
    verdict = check_api_watch(events)
    assert verdict.valid is False and "lacks default/b" in verdict.reason


# =========================================================================== workload-invariants
def deployment(replicas: int = 3) -> dict[str, Any]:
    return obj("Deployment", "web", spec={"replicas": replicas, "strategy": {"type": "RollingUpdate"}}, metadata={"generation": 1}, status={"observedGeneration": 1})


def replica_set(replicas: int) -> dict[str, Any]:
    return obj("ReplicaSet", "web-1", spec={"replicas": replicas}, metadata={"generation": 1, "ownerReferences": [{"uid": "uid-web", "controller": True, "kind": "Deployment", "name": "web"}]}, status={"observedGeneration": 1})


def pod(name: str, *, ready: bool = True, node: str = "node-1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"ownerReferences": [{"uid": "uid-web-1", "controller": True, "kind": "ReplicaSet", "name": "web-1"}]}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:10Z"
    return obj("Pod", name, metadata=meta, spec={"nodeName": node}, status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]})


def ready_node(name: str = "node-1", ready: str = "True") -> dict[str, Any]:
    return obj("Node", name, namespace="", status={"conditions": [{"type": "Ready", "status": ready}]})


def workload_base() -> list[dict[str, Any]]:
    return [
        put(0.5, 1, "nodes", "node-1", ready_node()),
        put(1.0, 2, "deployments", "default/web", deployment()), put(1.1, 3, "replicasets", "default/web-1", replica_set(3)),
        put(1.2, 4, "pods", "default/p1", pod("p1")), put(1.3, 5, "pods", "default/p2", pod("p2")), put(1.4, 6, "pods", "default/p3", pod("p3")),
    ]


def test_workload_invariants_answer_unknown_without_workloads():
    assert check_workload_invariants([put(0.5, 1, "nodes", "node-1", ready_node())]).valid is None


def test_a_replicaset_with_more_pods_than_replicas_over_creates():
    verdict = check_workload_invariants([*workload_base(), put(2.0, 7, "pods", "default/p4", pod("p4"))])
    assert verdict.valid is False and verdict.details["rule"] in ("replicaset-over-creation", "deployment-surge")


def test_an_extra_pod_from_a_create_that_timed_out_is_explained_not_a_finding():
    """The controller's create timed out (504: a paused etcd leader held the write), so it
    created another; the first write then landed too. client-go: a timeout is no failure."""
    timed_out = {"type": "api-request", "t": 1.8, "verb": "create", "resource": "pods", "subresource": "", "namespace": "default", "code": 504, "reason": "Timeout"}
    verdict = check_workload_invariants([*workload_base(), timed_out, put(2.0, 7, "pods", "default/p4", pod("p4"))])
    rules = verdict.details.get("rule") if verdict.valid is False else None
    assert rules not in ("replicaset-over-creation",), verdict.reason
    elsewhere = {**timed_out, "namespace": "other"}
    assert check_workload_invariants([*workload_base(), elsewhere, put(2.0, 7, "pods", "default/p4", pod("p4"))]).valid is False
    # a create whose answer its client never received (its call cancelled when the
    # controller lost its lease: workload-churn-under-nemesis with BUGGIFY, seed 33) landed
    # unseen; one its client did receive explains nothing
    invoke = {"type": "api-op", "t": 1.0, "client": "kcm/controllers", "op_id": "1.9", "phase": "invoke", "verb": "create", "resource": "pods", "namespace": "default", "name": ""}
    stored = {"type": "api-request", "t": 2.001, "id": "kcm/controllers/1/301", "verb": "create", "resource": "pods", "subresource": "", "namespace": "default", "name": "p4", "code": 201}
    unseen = check_workload_invariants([*workload_base(), invoke, put(2.0, 7, "pods", "default/p4", pod("p4")), stored])
    assert unseen.valid is not False, unseen.reason
    seen = {"type": "api-op", "t": 2.002, "client": "kcm/controllers", "op_id": "1.9", "phase": "ok", "code": 201, "request": "kcm/controllers/1/301", "verb": "create", "resource": "pods", "namespace": "default", "name": "p4"}
    assert check_workload_invariants([*workload_base(), invoke, put(2.0, 7, "pods", "default/p4", pod("p4")), stored, seen]).valid is False


def test_a_create_landing_after_its_replicaset_was_scaled_down_mid_rollout_is_explained_not_a_surge():
    """swarm seed 16: the old ReplicaSet's controller replaced an evicted pod while its size
    was 3; a slow webhook held the create 2 s, the rollout scaled the old ReplicaSet to 2
    meanwhile (the new one up to 2: 4 = 3 + 1 surge), and the create landed: five live pods
    for a moment. Without that scale-down the same fifth pod is a surge past the ceiling."""
    def new_rs_pod(name):
        return obj("Pod", name, metadata={"ownerReferences": [{"uid": "uid-web-2", "controller": True, "kind": "ReplicaSet", "name": "web-2"}]},
                   spec={"nodeName": "node-1"}, status={"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    new_rs = obj("ReplicaSet", "web-2", spec={"replicas": 2}, metadata={"generation": 1, "ownerReferences": [{"uid": "uid-web", "controller": True, "kind": "Deployment", "name": "web"}]}, status={"observedGeneration": 1})
    evicted = put(1.9, 7, "pods", "default/p3", pod("p3", deleting=True))
    rollout = [put(2.0, 9, "replicasets", "default/web-2", new_rs), put(2.1, 10, "pods", "default/n1", new_rs_pod("n1")), put(2.2, 11, "pods", "default/n2", new_rs_pod("n2"))]
    scaled = [*workload_base(), evicted, put(1.95, 8, "replicasets", "default/web-1", replica_set(2)), *rollout, put(2.5, 12, "pods", "default/p4", pod("p4"))]
    verdict = check_workload_invariants(scaled)
    assert verdict.valid is not False or verdict.details.get("rule") != "deployment-surge", verdict.reason
    unscaled = [*workload_base(), evicted, *rollout, put(2.5, 12, "pods", "default/p4", pod("p4"))]
    verdict = check_workload_invariants(unscaled)
    assert verdict.valid is False and verdict.details["rule"] == "deployment-surge", verdict.reason


def test_the_controller_deleting_an_available_pod_below_the_floor_is_caught_unless_explained():
    deleting = [{"type": "replicaset-pods", "t": 2.5, "replicaset": "default/web-1", "action": "delete", "pods": ["default/p1"]}, put(2.0, 7, "pods", "default/p1", pod("p1", deleting=True))]
    verdict = check_workload_invariants([*workload_base(), *deleting])
    assert verdict.valid is False and "below replicas - maxUnavailable" in verdict.reason
    # p2 unavailable because its node is not Ready explains one missing pod of the two
    unready = [put(1.8, 8, "nodes", "node-2", ready_node("node-2", "Unknown")), put(1.9, 9, "pods", "default/p2", pod("p2", ready=False, node="node-2"))]
    events = [*workload_base(), *unready, *deleting]
    events.sort(key=lambda event: event["t"])
    explained = check_workload_invariants(events)
    assert explained.valid is False  # still one short: p1 was taken by the controller itself


def test_a_scale_down_decided_from_a_replicaset_status_that_still_counts_a_deleted_pod_is_explained():
    """watch-resume-under-churn with BUGGIFY, seed 4: the ReplicaSet controller computes a
    status from the pods it listed before its own deletes (syncReplicaSet), and the
    Deployment controller scales down by those statuses (reconcileOldReplicaSets). A
    scale-down decided while the status counted a pod already deleted takes one pod below
    the floor; the same scale-down decided from an accurate status stays a finding."""
    def sized(replicas: int, available: int) -> dict[str, Any]:
        shaped = replica_set(replicas)
        return {**shaped, "status": {**shaped["status"], "availableReplicas": available}}

    start = [put(0.5, 1, "nodes", "node-1", ready_node()), put(1.0, 2, "deployments", "default/web", deployment(2)), put(1.1, 3, "replicasets", "default/web-1", sized(3, 3)),
             put(1.2, 4, "pods", "default/p1", pod("p1")), put(1.3, 5, "pods", "default/p2", pod("p2")), put(1.4, 6, "pods", "default/p3", pod("p3"))]
    first = [{"type": "replicaset-pods", "t": 1.8, "replicaset": "default/web-1", "action": "delete", "pods": ["default/p3", "default/p1"]},
             put(1.8, 7, "pods", "default/p3", pod("p3", deleting=True))]
    decided = {"type": "deployment-scale", "t": 1.9, "deployment": "default/web", "rs": "web-1", "from": 2, "to": 1, "reason": "rolling-old"}
    second = put(2.0, 9, "pods", "default/p1", pod("p1", deleting=True))
    stale = check_workload_invariants([*start, *first, put(1.85, 8, "replicasets", "default/web-1", sized(2, 3)), decided, second])
    assert stale.valid is not False, stale.reason
    assert any("statuses counted 1 available pod(s) more" in reason for entry in stale.details["explained_shortfalls"] for reason in entry["explained_by"])
    accurate = check_workload_invariants([*start, *first, put(1.85, 8, "replicasets", "default/web-1", sized(2, 2)), decided, second])
    assert accurate.valid is False and "below replicas - maxUnavailable = 2" in accurate.reason, accurate.reason
    undecided = check_workload_invariants([*start, *first, put(1.85, 8, "replicasets", "default/web-1", sized(2, 3)), second])
    assert undecided.valid is False, "no scale-down of the Deployment controller to blame"


def test_a_scale_down_mid_rollout_is_split_by_size_not_availability():
    """workload-churn-under-nemesis with BUGGIFY, seed 65: a Deployment scaled 3 -> 1 while
    it rolled out; upstream's proportional scaling (sync.go scale) takes the largest
    ReplicaSet's pods, available or not, so maxUnavailable does not bound it. With one
    ReplicaSet the same deletions stay a finding."""
    newer = obj("ReplicaSet", "web-2", spec={"replicas": 1}, metadata={"generation": 1, "ownerReferences": [{"uid": "uid-web", "controller": True, "kind": "Deployment", "name": "web"}]},
                status={"observedGeneration": 1})
    starting = obj("Pod", "q1", metadata={"ownerReferences": [{"uid": "uid-web-2", "controller": True, "kind": "ReplicaSet", "name": "web-2"}]},
                   spec={"nodeName": "node-1"}, status={"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]})
    rollout = [put(1.5, 7, "replicasets", "default/web-2", newer), put(1.6, 8, "pods", "default/q1", starting)]
    scaled = [put(2.0, 9, "deployments", "default/web", {**deployment(1), "metadata": {**deployment(1)["metadata"], "generation": 2}}),
              put(2.1, 10, "replicasets", "default/web-1", replica_set(0)),
              {"type": "replicaset-pods", "t": 2.25, "replicaset": "default/web-1", "action": "delete", "pods": ["default/p1", "default/p2", "default/p3"]},
              put(2.2, 11, "pods", "default/p1", pod("p1", deleting=True)), put(2.21, 12, "pods", "default/p2", pod("p2", deleting=True)),
              put(2.22, 13, "pods", "default/p3", pod("p3", deleting=True))]
    mid_rollout = sorted([*workload_base(), *rollout, *scaled], key=lambda event: event["t"])
    verdict = check_workload_invariants(mid_rollout)
    assert verdict.valid is not False or verdict.details.get("rule") != "deployment-availability", verdict.reason
    assert "below replicas - maxUnavailable" not in verdict.reason, verdict.reason
    single = sorted([*workload_base(), *scaled], key=lambda event: event["t"])
    assert "below replicas - maxUnavailable" in check_workload_invariants(single).reason


def test_an_eviction_explains_the_shortfall_it_causes():
    evicted = [{"type": "eviction", "t": 2.0, "namespace": "default", "pod": "p1", "outcome": "evicted"}, put(2.0, 7, "pods", "default/p1", pod("p1", deleting=True))]
    verdict = check_workload_invariants([*workload_base(), *evicted])
    assert verdict.valid is True, verdict.reason


def test_a_scale_down_that_keeps_a_not_ready_pod_and_deletes_a_ready_one_is_caught():
    # p3 has been not ready since t=1.5 (settled); the controller deletes ready p1 at t=20
    # (a bare ReplicaSet: no Deployment floor to judge first)
    base = [event for event in workload_base() if "/deployments/" not in event["events"][0][1]] + [put(1.5, 7, "pods", "default/p3", pod("p3", ready=False))]
    shrink = [put(19.0, 8, "replicasets", "default/web-1", replica_set(2)), put(20.0, 9, "pods", "default/p1", pod("p1", deleting=True))]
    record = {"type": "replicaset-pods", "t": 20.0, "replicaset": "default/web-1", "action": "delete", "pods": ["default/p1"]}
    verdict = check_workload_invariants([*base, *shrink, record])
    assert verdict.valid is False and verdict.details["rule"] == "replicaset-scale-down-order", verdict.reason
    assert "kept default/p3" in verdict.reason and "on ready" in verdict.reason
    # deleting the not-ready one is the upstream order
    right = [put(19.0, 8, "replicasets", "default/web-1", replica_set(2)), put(20.0, 9, "pods", "default/p3", pod("p3", ready=False, deleting=True))]
    record_right = {**record, "pods": ["default/p3"]}
    assert check_workload_invariants([*base, *right, record_right]).valid is True
    # a rank that changed within the settling time is not judged (the controller's cache may lag)
    late = [*base[:-1], put(19.5, 7, "pods", "default/p3", pod("p3", ready=False)), *shrink, record]
    assert check_workload_invariants(late).valid is True


def test_a_starting_pod_does_not_excuse_a_shortfall():
    """Only a pod that was Ready once can have lost its readiness to its node: a new pod
    still starting on a faulted node does not explain the controller deleting below the floor."""
    fault = {"type": "fault", "event": "apply", "t": 1.6, "targets": ["node-1"]}
    starting = put(1.7, 7, "pods", "default/p4", pod("p4", ready=False))
    starting_rs = put(1.65, 8, "replicasets", "default/web-1", replica_set(4))
    deleting = [put(2.0, 9, "pods", "default/p1", pod("p1", deleting=True)), {"type": "replicaset-pods", "t": 2.5, "replicaset": "default/web-1", "action": "delete", "pods": ["default/p1"]}]
    verdict = check_workload_invariants([*workload_base(), fault, starting_rs, starting, *deleting])
    assert verdict.valid is False and "below replicas - maxUnavailable" in verdict.reason, verdict.reason


def test_observed_generation_above_generation_is_caught():
    bad = deployment()
    bad["status"]["observedGeneration"] = 2
    verdict = check_workload_invariants([*workload_base(), put(3.0, 7, "deployments", "default/web", bad)])
    assert verdict.valid is False and "observedGeneration" in verdict.reason


# =========================================================================== admission-timing
def call(latency: float, outcome: str, policy: str = "Fail", request: str = "r1", t: float = 10.0) -> dict[str, Any]:
    return {"type": "webhook-call", "t": t, "server": "kube-apiserver-1", "webhook": "policy", "configuration": "c", "outcome": outcome, "reason": "",
            "latency_s": latency, "timeout_s": 5, "policy": policy, "request": request}


def test_admission_timing_answers_unknown_without_calls():
    assert check_admission_timing([]).valid is None


def test_admission_timing_accepts_calls_within_their_timeout():
    events = [call(5.0, "error"), {"type": "api-request", "t": 10.0, "id": "r1", "code": 500, "message": 'failed calling webhook "policy": ...'}]
    assert check_admission_timing(events).valid is True


def test_a_call_past_its_timeout_and_an_admission_after_it_are_caught():
    assert check_admission_timing([call(8.0, "allowed")]).valid is False
    late = check_admission_timing([call(5.5, "allowed")])  # within the slack, but admitted
    assert late.valid is False and "timed-out call admitted" in late.reason


def test_a_paused_server_excuses_a_long_call():
    events = [{"type": "process", "t": 6.0, "event": "resume", "process": "kube-apiserver-1"}, call(8.0, "error")]
    assert check_admission_timing(events).valid is True


def test_an_ignore_policy_call_never_refuses():
    assert check_admission_timing([call(5.0, "error", policy="Ignore")]).valid is False
    refused = [call(5.0, "ignored-error", policy="Ignore"), {"type": "api-request", "t": 10.0, "id": "r1", "code": 500, "message": 'failed calling webhook "policy": context deadline exceeded'}]
    assert check_admission_timing(refused).valid is False
    assert check_admission_timing([call(5.0, "ignored-error", policy="Ignore")]).valid is True


# =========================================================================== garbage-collection
def owned(name: str, owner: str, owner_uid: str, *, block: bool = True, **metadata: Any) -> dict[str, Any]:
    return obj("Pod", name, metadata={"ownerReferences": [{"uid": owner_uid, "name": owner, "kind": "ReplicaSet", "blockOwnerDeletion": block}], **metadata})


def rs(name: str = "rs", **metadata: Any) -> dict[str, Any]:
    return obj("ReplicaSet", name, metadata=metadata)


LEADER = [{"type": "leader", "t": 0.0, "event": "start", "lease": "kube-system/kube-controller-manager", "process": "kcm-1"}]


def test_garbage_collection_answers_unknown_with_nothing_deleted():
    assert check_garbage_collection([put(1.0, 1, "replicasets", "default/rs", rs())]).valid is None


def test_background_deletion_collects_the_dependents_in_time():
    events = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
              delete(10.0, 3, "replicasets", "default/rs"), delete(12.0, 4, "pods", "default/p"),
              {"type": "gc-delete", "t": 12.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]},
              {"type": "phase", "t": 100.0, "name": "check"}]
    verdict = check_garbage_collection(events)
    assert verdict.valid is True, verdict.reason


def test_collecting_a_dependent_while_its_owner_exists_is_caught():
    events = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
              delete(10.0, 3, "pods", "default/p"),
              {"type": "gc-delete", "t": 10.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]}]
    verdict = check_garbage_collection(events)
    assert verdict.valid is False and "while its owner uid-rs existed" in verdict.reason


def test_a_copy_with_a_cross_namespace_owner_reference_is_collected_and_its_owner_absent_there():
    """An object copied into another namespace with its owner references (kubernetes#65200):
    the owner is absent there, so collecting the copy is right (not "while its owner
    existed"), leaving it is a violation, and collecting the owner's valid dependent in its
    own namespace is still caught."""
    store = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
             put(3.0, 3, "pods", "copy/p", owned("p", "rs", "uid-rs", uid="uid-copy", namespace="copy"))]
    collected = [delete(9.0, 4, "pods", "copy/p"), {"type": "gc-delete", "t": 9.0, "resource": "pods", "namespace": "copy", "name": "p", "uid": "uid-copy", "owners": ["uid-rs"]}]
    verdict = check_garbage_collection([*store, *collected, {"type": "phase", "t": 100.0, "name": "check"}])
    assert verdict.valid is True and verdict.details["invalid_references"] == 1, verdict.reason
    verdict = check_garbage_collection([*store, {"type": "phase", "t": 100.0, "name": "check"}])
    assert verdict.valid is False and "references only owners in other namespaces" in verdict.reason
    wrong = [delete(10.0, 5, "pods", "default/p"), {"type": "gc-delete", "t": 10.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]}]
    verdict = check_garbage_collection([*store, *collected, *wrong])
    assert verdict.valid is False and "while its owner uid-rs existed" in verdict.reason


def test_a_dependent_left_behind_by_background_deletion_is_caught():
    events = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
              delete(10.0, 3, "replicasets", "default/rs"), {"type": "phase", "t": 200.0, "name": "check"}]
    verdict = check_garbage_collection(events)
    assert verdict.valid is False and "was not deleted within 60 s" in verdict.reason


def test_collecting_a_dependent_of_an_orphaning_owner_is_caught_unless_it_came_after_the_owner_left():
    orphaning = rs(finalizers=["orphan"], deletionTimestamp="2026-01-01T00:00:05Z")
    before = [put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
              put(5.0, 3, "replicasets", "default/rs", orphaning)]
    # the dependent that was there when the owner was deleted with Orphan: never collected
    kept_ref = [*before, delete(6.0, 4, "replicasets", "default/rs"), delete(8.0, 5, "pods", "default/p"),
                {"type": "gc-delete", "t": 8.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]}]
    verdict = check_garbage_collection(kept_ref)
    assert verdict.valid is False and "(deleted with propagationPolicy Orphan)" in verdict.reason
    assert verdict.details["violations"] == 2  # the owner left with p referencing it, and p was collected
    # a controller's create in flight when the owner left lands with a dangling reference
    # (swarm seed 45: a DaemonSet pod created 2 s after its DaemonSet was orphan-deleted):
    # upstream's collector deletes it (attemptToDeleteItem: no solid owner, a dangling one)
    late = [*before, put(5.5, 4, "pods", "default/p", obj("Pod", "p")), delete(6.0, 5, "replicasets", "default/rs"),
            put(7.0, 6, "pods", "default/q", owned("q", "rs", "uid-rs")), delete(8.0, 7, "pods", "default/q"),
            {"type": "gc-delete", "t": 8.0, "resource": "pods", "namespace": "default", "name": "q", "uid": "uid-q", "owners": ["uid-rs"]}]
    verdict = check_garbage_collection(late)
    assert verdict.valid is True, verdict.reason


def test_a_later_background_or_foreground_delete_withdraws_the_orphan_request():
    """workload-churn-under-nemesis seed 25: the generator deleted a CronJob with Orphan and,
    at once, with Background; the Background delete dropped the orphan finalizer and removed
    the owner (upstream's deletionFinalizersForGarbageCollection), and the collector then
    deleted its Job in the background, as it should. Known from the API server's record of
    that delete; without it, the same store is an owner that left while its dependent still
    referenced it."""
    orphaning = rs(finalizers=["orphan"], deletionTimestamp="2026-01-01T00:00:05Z")
    store = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
             put(5.0, 3, "replicasets", "default/rs", orphaning), delete(6.0, 4, "replicasets", "default/rs")]
    collected = [delete(8.0, 5, "pods", "default/p"),
                 {"type": "gc-delete", "t": 8.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]},
                 {"type": "phase", "t": 100.0, "name": "check"}]
    background = {"type": "api-request", "t": 6.1, "server": "kube-apiserver-1", "verb": "delete", "resource": "replicasets", "namespace": "default",
                  "name": "rs", "code": 200, "resource_version": "3", "propagation": "Background"}
    verdict = check_garbage_collection([*store, background, *collected])
    assert verdict.valid is True, verdict.reason
    assert verdict.details["orphaned"] == 0
    # the Background delete withdrew the orphan request, so its dependent must still go
    verdict = check_garbage_collection([*store, background, {"type": "phase", "t": 100.0, "name": "check"}])
    assert verdict.valid is False and "was not deleted within 60 s" in verdict.reason
    # a delete answered on another version (or an Orphan one) withdrew nothing
    for other in ({**background, "resource_version": "2"}, {**background, "propagation": "Orphan"}, {**background, "code": 409}):
        verdict = check_garbage_collection([*store, other, *collected])
        assert verdict.valid is False and "(deleted with propagationPolicy Orphan)" in verdict.reason, other
    # Foreground: the orphan finalizer swapped for foregroundDeletion in a new version
    swapped = rs(finalizers=["foregroundDeletion"], deletionTimestamp="2026-01-01T00:00:05Z")
    foreground = {**background, "resource_version": "4", "propagation": "Foreground"}
    events = [*store[:-1], put(5.5, 4, "replicasets", "default/rs", swapped), delete(8.0, 5, "pods", "default/p"),
              {"type": "gc-delete", "t": 8.0, "resource": "pods", "namespace": "default", "name": "p", "uid": "uid-p", "owners": ["uid-rs"]},
              foreground, delete(9.0, 6, "replicasets", "default/rs")]
    verdict = check_garbage_collection(events)
    assert verdict.valid is True, verdict.reason


def test_orphan_and_foreground_owners_leave_only_when_allowed():
    orphaning = rs(finalizers=["orphan"], deletionTimestamp="2026-01-01T00:00:05Z")
    events = [put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
              put(5.0, 3, "replicasets", "default/rs", orphaning), delete(6.0, 4, "replicasets", "default/rs")]
    verdict = check_garbage_collection(events)
    assert verdict.valid is False and "Orphan" in verdict.reason
    orphaned = [put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
                put(5.0, 3, "replicasets", "default/rs", orphaning), put(5.5, 4, "pods", "default/p", obj("Pod", "p")), delete(6.0, 5, "replicasets", "default/rs")]
    assert check_garbage_collection(orphaned).valid is True
    foreground = rs(finalizers=["foregroundDeletion"], deletionTimestamp="2026-01-01T00:00:05Z")
    early = [put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
             put(5.0, 3, "replicasets", "default/rs", foreground), delete(6.0, 4, "replicasets", "default/rs")]
    verdict = check_garbage_collection(early)
    assert verdict.valid is False and "blocking dependent" in verdict.reason
    # a blocking dependent created as the collector let go (swarm with BUGGIFY, seed 70: the
    # StatefulSet controller recreated a revision 31 ms before its set left): a race the
    # collector could not see, then a dangling dependent it must collect
    racing = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(5.0, 2, "replicasets", "default/rs", foreground),
              put(5.97, 3, "pods", "default/q", owned("q", "rs", "uid-rs")), delete(6.0, 4, "replicasets", "default/rs")]
    collected = [delete(6.5, 5, "pods", "default/q"), {"type": "gc-delete", "t": 6.5, "resource": "pods", "namespace": "default", "name": "q", "uid": "uid-q", "owners": ["uid-rs"]},
                 {"type": "phase", "t": 100.0, "name": "check"}]
    assert check_garbage_collection([*racing, *collected]).valid is True
    left = check_garbage_collection([*racing, {"type": "phase", "t": 100.0, "name": "check"}])
    assert left.valid is False and "was not deleted within 60 s" in left.reason


def test_an_owner_the_collector_never_releases_is_caught():
    orphaning = rs(finalizers=["orphan"], deletionTimestamp="2026-01-01T00:00:05Z")
    stuck = [*LEADER, put(1.0, 1, "replicasets", "default/rs", rs()), put(2.0, 2, "pods", "default/p", owned("p", "rs", "uid-rs")),
             put(5.0, 3, "replicasets", "default/rs", orphaning), put(5.5, 4, "pods", "default/p", obj("Pod", "p")),
             put(100.0, 5, "pods", "default/other", obj("Pod", "other"))]
    verdict = check_garbage_collection(stuck)
    assert verdict.valid is False and "still in the store 60 s after nothing held it" in verdict.reason, verdict.reason
    # released in time: fine; and an owner another controller's finalizer holds is not the collector's to release
    released = [*stuck[:-1], delete(30.0, 5, "replicasets", "default/rs"), put(100.0, 6, "pods", "default/other", obj("Pod", "other"))]
    assert check_garbage_collection(released).valid is True
    held = rs(finalizers=["orphan", "example.com/keep"], deletionTimestamp="2026-01-01T00:00:05Z")
    foreign = [*stuck[:3], put(5.0, 3, "replicasets", "default/rs", held), *stuck[4:]]
    assert check_garbage_collection(foreign).valid is not False


# =========================================================================== graceful-termination
def term(t: float, exit_after: float, code: int) -> dict[str, Any]:
    return {"type": "container-term", "t": t, "pod": "default/a", "uid": "uid-a", "node": "node-1", "container": "app", "grace_s": 30, "exit_after_s": exit_after, "exit_code": code}


def marked(t: float, revision: int, grace: int = 30) -> dict[str, Any]:
    return put(t, revision, "pods", "default/a", obj("Pod", "a", uid="uid-a", metadata={"deletionTimestamp": "2026-01-01T00:00:40Z", "deletionGracePeriodSeconds": grace}))


def test_graceful_termination_answers_unknown_without_deletions():
    assert check_graceful_termination([put(1.0, 1, "pods", "default/a", POD_A)]).valid is None


def test_a_kill_after_the_grace_period_is_fine_and_before_it_is_caught():
    ok = [put(1.0, 1, "pods", "default/a", POD_A), marked(10.0, 2), term(11.0, 30.0, 137)]
    assert check_graceful_termination(ok).valid is True
    early = [put(1.0, 1, "pods", "default/a", POD_A), marked(10.0, 2), term(11.0, 0.0, 137)]
    verdict = check_graceful_termination(early)
    assert verdict.valid is False and "before the grace period" in verdict.reason
    forced = [put(1.0, 1, "pods", "default/a", POD_A), delete(10.0, 2, "pods", "default/a"), term(11.0, 0.0, 137)]
    assert check_graceful_termination(forced).valid is None  # a force deletion: exempt, nothing graceful to judge


def test_a_running_pod_removed_without_being_marked_is_caught_unless_forced():
    bound = obj("Pod", "a", uid="uid-a", spec={"nodeName": "node-1", "terminationGracePeriodSeconds": 30}, status={"phase": "Running"})
    skipped = [put(1.0, 1, "pods", "default/a", bound), *op("C", "1.1", 9.9, 10.1, "delete", "a")[:1], delete(10.0, 2, "pods", "default/a")]
    verdict = check_graceful_termination(skipped)
    assert verdict.valid is False and "without being marked for deletion" in verdict.reason
    forced_invoke = {**op("C", "1.1", 9.9, 10.1, "delete", "a")[0], "grace_s": 0}
    assert check_graceful_termination([skipped[0], forced_invoke, skipped[2]]).valid is None
    no_grace = obj("Pod", "a", uid="uid-a", spec={"nodeName": "node-1", "terminationGracePeriodSeconds": 0}, status={"phase": "Running"})
    assert check_graceful_termination([put(1.0, 1, "pods", "default/a", no_grace), *skipped[1:]]).valid is None
    done = obj("Pod", "a", uid="uid-a", spec={"nodeName": "node-1"}, status={"phase": "Succeeded"})
    assert check_graceful_termination([put(1.0, 1, "pods", "default/a", done), *skipped[1:]]).valid is None


def slice_with(ready: bool, revision: int, t: float) -> dict[str, Any]:
    value = obj("EndpointSlice", "web-x", metadata={"labels": {"kubernetes.io/service-name": "web"}}, addressType="IPv4",
                endpoints=[{"addresses": ["10.0.0.1"], "conditions": {"ready": ready}, "nodeName": "node-1", "targetRef": {"kind": "Pod", "name": "a", "namespace": "default"}}])
    return put(t, revision, "endpointslices", "default/web-x", value)


def test_an_endpoint_still_ready_after_the_deletion_is_caught():
    base = [*LEADER, put(1.0, 1, "pods", "default/a", POD_A), slice_with(True, 2, 1.5), marked(10.0, 3)]
    assert check_graceful_termination([*base, slice_with(False, 4, 11.0)]).valid is True
    verdict = check_graceful_termination([*base, slice_with(False, 4, 30.0)])
    assert verdict.valid is False and "still ready" in verdict.reason
    # the controller tried in time and the API server did not answer (swarm with BUGGIFY,
    # seed 78: its etcd member paused): another bound from the failure
    timed_out = [{"type": "api-op", "t": 10.5, "client": "kube-controller-manager-1/controllers", "op_id": "1.7", "phase": "invoke", "verb": "update",
                  "resource": "endpointslices", "namespace": "default", "name": "web-x"},
                 {"type": "api-op", "t": 20.5, "client": "kube-controller-manager-1/controllers", "op_id": "1.7", "phase": "info", "verb": "update",
                  "resource": "endpointslices", "namespace": "default", "name": "web-x", "code": 504, "reason": "Timeout"}]
    assert check_graceful_termination([*base, *timed_out, slice_with(False, 4, 21.0)]).valid is True
    assert check_graceful_termination([*base, *timed_out, slice_with(False, 4, 31.0)]).valid is False  # past that bound too


def test_an_endpoint_ready_and_terminating_at_once_is_caught():
    both = obj("EndpointSlice", "web-x", metadata={"labels": {"kubernetes.io/service-name": "web"}}, addressType="IPv4",
               endpoints=[{"addresses": ["10.0.0.1"], "conditions": {"ready": True, "serving": True, "terminating": True}, "nodeName": "node-1",
                           "targetRef": {"kind": "Pod", "name": "a", "namespace": "default"}}])
    events = [*LEADER, put(1.0, 1, "pods", "default/a", POD_A), slice_with(True, 2, 1.5), marked(10.0, 3), put(10.1, 4, "endpointslices", "default/web-x", both)]
    verdict = check_graceful_termination(events)
    assert verdict.valid is False and "ready and terminating at once" in verdict.reason


# =========================================================================== differential
def test_differential_answers_unknown_without_a_store():
    assert check_differential([], end_state([])).valid is None


def test_differential_ignores_what_normalization_removes_and_reports_the_rest():
    def node(uid: str, taints: list[dict[str, Any]]) -> dict[str, Any]:
        return obj("Node", "node-1", namespace="", uid=uid, spec={"taints": taints}, metadata={"creationTimestamp": uid},
                   status={"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": uid}]})

    def generated(uid: str) -> dict[str, Any]:
        return obj("Pod", f"web-{uid}", uid=uid, metadata={"generateName": "web-"}, spec={"nodeName": uid})

    reference = [put(1.0, 1, "nodes", "node-1", node("x", [])), put(2.0, 2, "pods", "default/web-x", generated("x"))]
    same = [put(1.0, 1, "nodes", "node-1", node("y", [])), put(2.0, 2, "pods", "default/web-y", generated("y"))]
    assert check_differential(same, end_state(reference)).valid is True
    tainted = [put(1.0, 1, "nodes", "node-1", node("y", [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "t"}])),
               put(2.0, 2, "pods", "default/web-y", generated("y"))]
    verdict = check_differential(tainted, end_state(reference))
    assert verdict.valid is False and verdict.evidence[0]["object"] == "nodes/node-1"


# =========================================================================== service-availability
def traffic(t: float, outcome: str, endpoint: str = "10.244.1.2:80") -> dict[str, Any]:
    return {"type": "traffic", "t": t, "node": "node-1", "service": "default/web", "port": "80", "outcome": outcome, "latency_s": 0.0, "endpoint": endpoint}


def test_the_error_budget_charges_unexplained_failures_only():
    events = [traffic(float(t), "refused" if t % 4 == 0 else "ok") for t in range(100)]  # a quarter fail
    assert check_service_availability(events, max_outage_s=5.0).valid is True  # no outage over 5 s
    verdict = check_service_availability(events, max_outage_s=5.0, error_budget=0.01)
    assert verdict.valid is False and "error budget" in verdict.reason
    assert check_service_availability(events, max_outage_s=5.0, error_budget=0.01, expected=[(0.0, 100.0)]).valid is True


def test_a_node_clogged_by_link_loss_one_is_unreachable_until_its_fault_heals():
    clog = {"type": "fault", "event": "apply", "id": 7, "kind": "link-loss", "params": {"loss": 1.0}, "t": 5.0, "targets": ["node-1"]}
    heal = {"type": "fault", "event": "heal", "id": 7, "kind": "link-loss", "t": 12.0, "targets": ["node-1"]}
    assert node_unreachable([clog, heal], ["node-1", "node-2"]) == {"node-1": [(5.0, 12.0)], "node-2": []}
    lossy = {**clog, "params": {"loss": 0.2}}  # a lossy link still carries heartbeats
    assert node_unreachable([lossy, heal], ["node-1"]) == {"node-1": []}


def test_an_outage_of_explained_failures_only_is_not_charged_but_one_unexplained_failure_in_it_is():
    """Every endpoint's node clogged at once (a swizzle): the requests fail for 8 s, each
    explained by its node being cut off (Kubernetes lets the endpoint stay ready that long)."""
    clog = {"type": "fault", "event": "apply", "id": 1, "kind": "link-loss", "params": {"loss": 1.0}, "t": 10.0, "targets": ["node-1"]}
    heal = {"type": "fault", "event": "heal", "id": 1, "kind": "link-loss", "t": 18.0, "targets": ["node-1"]}
    pod = put(1.0, 1, "pods", "default/web-1", obj("Pod", "web-1", spec={"nodeName": "node-1"}, status={"podIP": "10.244.1.2"}))
    requests = [traffic(float(t), "timeout" if 10 <= t < 18 else "ok") for t in range(30)]
    events = [*LEADER, pod, clog, *requests[:18], heal, *requests[18:]]
    assert check_service_availability(events, max_outage_s=5.0).valid is False  # no budget: every failure counts
    verdict = check_service_availability(events, max_outage_s=5.0, error_budget=0.5, nodes=["node-1"])
    assert verdict.valid is True, verdict.reason
    elsewhere = [*events[:-12], traffic(15.5, "timeout", endpoint="10.244.9.9:80"), *events[-12:]]  # an endpoint of no known node
    unexplained = check_service_availability(sorted(elsewhere, key=lambda e: e.get("t", 0.0)), max_outage_s=0.0, error_budget=0.5, nodes=["node-1"])
    assert unexplained.valid is False and "outage over" in unexplained.reason


def test_requests_to_a_rebooted_nodes_pods_are_explained_while_its_kubelet_restarts_them_not_after():
    """A node powered off for 10 s (shorter than the grace period: its endpoints stayed
    ready): its containers are gone until the kubelet, back, starts them again."""
    pod = put(1.0, 1, "pods", "default/web-1", obj("Pod", "web-1", spec={"nodeName": "node-1"}, status={"podIP": "10.244.1.2"}))
    down = [*LEADER, pod, {"type": "process", "t": 10.0, "event": "kill", "process": "node-1"}, {"type": "process", "t": 20.0, "event": "start", "process": "node-1"}]
    settling = [*down, *(traffic(float(t), "timeout") for t in range(21, 34)), *(traffic(float(t), "ok") for t in range(34, 200))]
    assert check_service_availability(settling, max_outage_s=60.0, error_budget=0.01, nodes=["node-1"]).valid is True
    late = [*down, *(traffic(float(t), "timeout") for t in range(21, 40)), *(traffic(float(t), "ok") for t in range(40, 200))]
    verdict = check_service_availability(late, max_outage_s=60.0, error_budget=0.01, nodes=["node-1"])
    assert verdict.valid is False and "error budget" in verdict.reason  # 35..39: past the settling window
    partitioned = [*LEADER, pod, {"type": "partition", "t": 10.0, "grudge": {"node-1": ["kube-apiserver-1"]}}, {"type": "process", "t": 0.0, "event": "start", "process": "kube-apiserver-1"},
                   {"type": "partition", "t": 20.0, "grudge": {}}, *(traffic(float(t), "timeout") for t in range(21, 34)), *(traffic(float(t), "ok") for t in range(34, 200))]
    verdict = check_service_availability(partitioned, max_outage_s=60.0, error_budget=0.01, nodes=["node-1"], api_servers=["kube-apiserver-1"])
    assert verdict.valid is False  # a partition kills no container: nothing to restart


def asked(t: float, outcome: str, *, node: str, endpoint: str = "") -> dict[str, Any]:
    return {"type": "traffic", "t": t, "node": node, "service": "default/web", "port": "80", "outcome": outcome, "latency_s": 0.0, "endpoint": endpoint}


def test_a_kubelet_stop_in_force_keeps_a_restarted_node_unreachable():
    """A node powered off, its kubelet stopped meanwhile, powered on again: it comes back
    with its kubelet off (no kubelet stops then, so only the fault record says so)."""
    events = [{"type": "process", "t": 10.0, "event": "kill", "process": "node-1"},
              {"type": "fault", "event": "apply", "id": 2, "kind": "kubelet-stop", "t": 12.0, "targets": ["node-1"]},
              {"type": "process", "t": 20.0, "event": "restart", "process": "node-1"},
              {"type": "fault", "event": "heal", "id": 2, "kind": "kubelet-stop", "t": 60.0, "targets": ["node-1"]}]
    assert node_unreachable(events, ["node-1"]) == {"node-1": [(10.0, 60.0)]}


def test_no_endpoints_while_every_pod_of_the_service_is_on_an_unreachable_node_is_explained():
    """services-under-node-nemesis seed 6: both pods of a Service on nodes that failed;
    marked NotReady, they stay (not replaced before their tolerationSeconds): no endpoint.
    A single replica down with its node is the application's single point of failure."""
    service = put(0.5, 1, "services", "default/web", obj("Service", "web", spec={"selector": {"app": "web"}}))
    def pod(name, node, revision):
        return put(1.0, revision, "pods", f"default/{name}", obj("Pod", name, metadata={"labels": {"app": "web"}}, spec={"nodeName": node}, status={"podIP": f"10.244.{revision}.2"}))
    down = [{"type": "process", "t": 10.0, "event": "kill", "process": "node-1"}, {"type": "process", "t": 10.0, "event": "kill", "process": "node-3"}]
    requests = [asked(float(t), "no-endpoints" if t >= 100 else "ok", node="node-2") for t in range(20, 130)]
    nodes = ["node-1", "node-2", "node-3"]
    gone = [*LEADER, service, pod("web-1", "node-1", 2), pod("web-2", "node-3", 3), *down, *requests]
    verdict = check_service_availability(gone, max_outage_s=5.0, error_budget=0.01, nodes=nodes)
    assert verdict.valid is True, verdict.reason
    healthy = [*LEADER, service, pod("web-1", "node-1", 2), pod("web-2", "node-2", 3), *down, *requests]  # a pod's node is fine: why no endpoint?
    assert check_service_availability(healthy, max_outage_s=5.0, error_budget=0.01, nodes=nodes).valid is False
    single = [*LEADER, service, pod("web-1", "node-1", 2), *down, *requests]  # one replica: the application's single point of failure
    assert check_service_availability(single, max_outage_s=5.0, error_budget=0.01, nodes=nodes).valid is False


def test_a_cut_off_nodes_stale_route_to_an_endpoint_no_longer_ready_is_explained_a_route_to_a_ready_one_is_not():
    """services-under-node-nemesis seed 77: a node cut off from the API servers keeps its
    kube-proxy's rules; an endpoint marked not ready meanwhile still gets its requests."""
    def endpoint_slice(t, revision, ready):
        return put(t, revision, "endpointslices", "default/web-abc", obj("EndpointSlice", "web-abc", metadata={"labels": {"kubernetes.io/service-name": "web"}},
                   endpoints=[{"addresses": ["10.244.1.2"], "conditions": {"ready": ready}, "nodeName": "node-1"}]))
    cut = [{"type": "process", "t": 0.0, "event": "start", "process": "kube-apiserver-1"}, {"type": "partition", "t": 10.0, "grudge": {"node-2": ["kube-apiserver-1"]}}]
    heal = {"type": "partition", "t": 70.0, "grudge": {}}
    stale = [*LEADER, endpoint_slice(1.0, 1, True), *cut, endpoint_slice(50.0, 2, False), asked(60.0, "refused", node="node-2", endpoint="10.244.1.2:80"), heal,
             *(asked(float(t), "ok", node="node-2") for t in range(100, 300))]
    assert check_service_availability(stale, error_budget=0.0, nodes=["node-1", "node-2"], api_servers=["kube-apiserver-1"]).valid is True
    ready = [*LEADER, endpoint_slice(1.0, 1, True), *cut, asked(40.0, "refused", node="node-2", endpoint="10.244.1.2:80"), heal,
             *(asked(float(t), "ok", node="node-2") for t in range(100, 300))]
    verdict = check_service_availability(ready, error_budget=0.0, nodes=["node-1", "node-2"], api_servers=["kube-apiserver-1"])
    assert verdict.valid is False and "error budget" in verdict.reason


def test_a_stale_slice_after_its_pod_stopped_serving_is_explained_only_within_the_controllers_sync():
    """controller-manager-kill-after-pod-creates with BUGGIFY, seeds 8, 34, ...: a pod
    deleted 11 ms before the acting kube-controller-manager was killed kept its ready
    endpoint until a new leader acted; kube-proxy routes by the slices alone, so requests
    to the gone pod timed out meanwhile."""
    def endpoint_slice(t, revision, ready):
        return put(t, revision, "endpointslices", "default/web-abc", obj("EndpointSlice", "web-abc", metadata={"labels": {"kubernetes.io/service-name": "web"}},
                   endpoints=[{"addresses": ["10.244.1.2"], "conditions": {"ready": ready}, "nodeName": "node-1"}]))
    serving = obj("Pod", "web-1", spec={"nodeName": "node-1"}, status={"podIP": "10.244.1.2", "conditions": [{"type": "Ready", "status": "True"}]})
    deleting = {**serving, "metadata": {**serving["metadata"], "deletionTimestamp": "2026-01-01T00:00:41Z"}}
    start = [*LEADER, endpoint_slice(1.0, 1, True), put(2.0, 2, "pods", "default/web-1", serving), put(41.0, 3, "pods", "default/web-1", deleting),
             delete(42.0, 4, "pods", "default/web-1")]
    killed = {"type": "process", "t": 41.01, "event": "kill", "process": "kcm-1"}
    successor = {"type": "leader", "t": 56.0, "event": "start", "lease": "kube-system/kube-controller-manager", "process": "kcm-2"}
    requests = [asked(float(t), "timeout", node="node-2", endpoint="10.244.1.2:80") for t in (43, 50, 55, 59)]
    synced = [endpoint_slice(60.0, 5, False), *(asked(float(t), "ok", node="node-2") for t in range(61, 300))]
    # no leader from 41.01 to 56: the slice stays; 10 s of sync and 5 s of kube-proxy after that
    verdict = check_service_availability([*start, killed, successor, *requests, *synced], error_budget=0.0)
    assert verdict.valid is True, verdict.reason
    # with a leader acting all along, 19 s of a stale slice is past the controller's sync
    verdict = check_service_availability([*start, *requests, *synced], error_budget=0.0)
    assert verdict.valid is False and "error budget" in verdict.reason
    # a pod the store shows serving excuses nothing: its endpoint should answer
    alive = [*LEADER, endpoint_slice(1.0, 1, True), put(2.0, 2, "pods", "default/web-1", serving), killed, successor, *requests, *synced]
    assert check_service_availability(alive, error_budget=0.0).valid is False
    # kube-proxy applies a slice change within its sync (kubernetes-pinned-kubelets-etcd-failover
    # with BUGGIFY, seed 71: a request 0.4 s after the endpoint went not ready): explained
    # within 5 s of the change, not after
    lagging = [*start, endpoint_slice(41.5, 5, False), asked(42.9, "timeout", node="node-2", endpoint="10.244.1.2:80"), *(asked(float(t), "ok", node="node-2") for t in range(61, 300))]
    assert check_service_availability(lagging, error_budget=0.0).valid is True
    late = [*start, endpoint_slice(41.5, 5, False), asked(47.0, "timeout", node="node-2", endpoint="10.244.1.2:80"), *(asked(float(t), "ok", node="node-2") for t in range(61, 300))]
    assert check_service_availability(late, error_budget=0.0).valid is False


def test_an_endpoint_ready_on_an_unreachable_node_past_the_bound_is_dead():
    down = [*LEADER, {"type": "process", "t": 0.0, "event": "start", "process": "node-1"}, slice_with(True, 1, 1.0), {"type": "process", "t": 10.0, "event": "kill", "process": "node-1"}]
    assert node_unreachable(down, ["node-1"]) == {"node-1": [(10.0, float("inf"))]}
    in_time = [*down, slice_with(False, 2, 60.0), traffic(61.0, "ok")]
    assert check_service_availability(in_time, nodes=["node-1"]).valid is True
    late = [*down, slice_with(False, 2, 80.0), traffic(81.0, "ok")]
    verdict = check_service_availability(late, nodes=["node-1"])
    assert verdict.valid is False and "dead endpoint" in verdict.reason and verdict.evidence[0]["node"] == "node-1"


def test_differential_excuses_a_difference_when_a_workload_step_failed_under_the_faults():
    """A rollout refused under an etcd outage (500 no leader) leaves the run at the old
    revision while the fault-free run rolled out: the faults excuse it (unknown)."""
    ours = [put(1.0, 1, "configmaps", "default/c", obj("ConfigMap", "c", data={"k": "1"}))]
    theirs = end_state([put(1.0, 1, "configmaps", "default/c", obj("ConfigMap", "c", data={"k": "2"}))])
    assert check_differential(ours, theirs).valid is False
    failed = {"type": "workload-step", "t": 17.2, "action": "rollout", "target": "default/web", "outcome": "error: 500 InternalError: etcdserver: no leader"}
    verdict = check_differential([*ours, failed], theirs)
    assert verdict.valid is None and "failed under the faults" in verdict.reason
    assert verdict.details["nothing_to_judge"]  # nothing comparable: a guided mutant's run leaves it out
    patched = {**failed, "outcome": "patched"}
    assert check_differential([*ours, patched], theirs).valid is False


def test_differential_normalizes_away_a_jobs_controller_uid_labels():
    """The Job controller stamps the Job's uid into its selector and its pods' labels
    (``batch.kubernetes.io/controller-uid``, legacy ``controller-uid``): two healthy runs
    differ there by construction (found when the workload generator first ran Jobs)."""

    def job(uid: str) -> dict[str, Any]:
        labels = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid, "job-name": "j"}
        return obj("Job", "j", uid=uid, spec={"selector": {"matchLabels": dict(labels)}, "template": {"metadata": {"labels": dict(labels)}}})

    reference = end_state([put(1.0, 1, "jobs", "default/j", job("x"))])
    assert check_differential([put(1.0, 1, "jobs", "default/j", job("y"))], reference).valid is True
    renamed = job("y")
    renamed["spec"]["template"]["metadata"]["labels"]["job-name"] = "k"
    assert check_differential([put(1.0, 1, "jobs", "default/j", renamed)], reference).valid is False

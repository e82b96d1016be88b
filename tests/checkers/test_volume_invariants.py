"""volume-invariants (chaoskube/checkers/volumes.py) on small hand-made journals: each rule
answers false on the history that breaks it, true on its fixed twin, and says what it could
not judge."""

from __future__ import annotations

import json
from typing import Any

from chaoskube.checkers.volumes import check_volume_invariants

Event = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"


class Journal:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.revision = 0

    def put(self, t: float, resource: str, key: str, value: dict[str, Any]) -> None:
        self.revision += 1
        self.events.append({"type": "raft-apply", "t": t, "revision": self.revision, "member": "etcd-1", "events": [["PUT", f"/registry/{resource}/{key}", json.dumps(value), self.revision]]})

    def delete(self, t: float, resource: str, key: str) -> None:
        self.revision += 1
        self.events.append({"type": "raft-apply", "t": t, "revision": self.revision, "member": "etcd-1", "events": [["DELETE", f"/registry/{resource}/{key}", None, self.revision]]})

    def record(self, t: float, kind: str, **fields: Any) -> None:
        self.events.append({"type": kind, "t": t, **fields})


def node(name: str, zone: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}}}


def storage_class(name: str = "standard", mode: str = "WaitForFirstConsumer", policy: str = "Delete") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}, "provisioner": "chaoskube.io/zonal-disk", "reclaimPolicy": policy, "volumeBindingMode": mode}


def pvc(name: str, uid: str, *, volume: str = "", bound: bool = False, selected: str = "", klass: str = "standard", by_controller: bool = True) -> dict[str, Any]:
    annotations = {}
    if selected:
        annotations["volume.kubernetes.io/selected-node"] = selected
    if volume and by_controller:
        annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
    spec: dict[str, Any] = {"storageClassName": klass, "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default", "uid": uid, "annotations": annotations},
            "spec": spec, "status": {"phase": "Bound" if bound else "Pending"}}


def pv(name: str, *, claim: str = "", uid: str = "", zone: str = "zone-a", phase: str = "Bound", policy: str = "Delete", klass: str = "standard") -> dict[str, Any]:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": policy, "storageClassName": klass,
                            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}}
    if claim:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": claim, "uid": uid}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
            "spec": spec, "status": {"phase": phase}}


def pod(name: str, claim: str, node_name: str = "") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
            "spec": {"nodeName": node_name, "containers": [{"name": "app", "image": "nginx"}], "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
            "status": {"phase": "Running" if node_name else "Pending"}}


def cluster(journal: Journal, klass: dict[str, Any] | None = None) -> None:
    journal.record(0.0, "leader", lease="kube-system/kube-controller-manager", process="kube-controller-manager-1", event="start")
    journal.put(0.1, "nodes", "node-a", node("node-a", "zone-a"))
    journal.put(0.2, "nodes", "node-b", node("node-b", "zone-b"))
    journal.put(0.3, "storageclasses", (klass or storage_class())["metadata"]["name"], klass or storage_class())


def provisioned(journal: Journal, *, zone: str = "zone-a", on: str = "node-a", policy: str = "Delete") -> None:
    """data-0 waits for its pod, is selected for ``on``, provisioned in ``zone``, bound; its pod runs on ``on``."""
    journal.put(1.0, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0"))
    journal.put(1.1, "pods", "default/db-0", pod("db-0", "data-0"))
    journal.put(2.0, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", selected=on))
    journal.put(2.1, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0", zone=zone, phase="Available", policy=policy))
    journal.put(2.2, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0", zone=zone, policy=policy))
    journal.put(2.3, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", selected=on, volume="pv-0"))
    journal.put(2.4, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", selected=on, volume="pv-0", bound=True))
    journal.put(3.0, "pods", "default/db-0", pod("db-0", "data-0", on))


def test_unknown_without_a_claim():
    journal = Journal()
    cluster(journal)
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is None and verdict.details["nothing_to_judge"], verdict.reason


def test_a_wait_for_first_consumer_binding_in_the_pods_zone_holds():
    journal = Journal()
    cluster(journal)
    provisioned(journal)
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is True, verdict.reason
    assert verdict.details["wffc_bindings_checked"] == 1 and verdict.details["placements_checked"] == 1 and verdict.details["bindings_checked"] >= 1


def test_a_disk_provisioned_in_another_zone_than_the_selected_node_is_caught():
    journal = Journal()
    cluster(journal)
    provisioned(journal, zone="zone-a", on="node-b")
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "wffc-wrong-topology", verdict.reason
    assert verdict.evidence[0]["selected_node"] == "node-b"


def test_a_pod_on_a_node_its_volume_does_not_allow_is_caught():
    journal = Journal()
    cluster(journal, storage_class(mode="Immediate"))  # rule 3 does not apply: only the placement
    journal.put(1.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0", zone="zone-a"))
    journal.put(1.1, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True))
    journal.put(2.0, "pods", "default/db-0", pod("db-0", "data-0", "node-b"))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "pod-volume-affinity", verdict.reason
    twin = Journal()
    cluster(twin, storage_class(mode="Immediate"))
    twin.events += journal.events[4:-1]
    twin.revision = journal.revision
    twin.put(2.0, "pods", "default/db-0", pod("db-0", "data-0", "node-a"))
    assert check_volume_invariants(twin.events).valid is True


def test_a_claim_bound_before_its_consumer_is_caught():
    journal = Journal()
    cluster(journal)
    journal.put(1.0, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0"))
    journal.put(1.1, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0"))
    journal.put(1.2, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "wffc-bound-before-consumer", verdict.reason


def test_a_volume_pre_bound_by_a_user_is_left_out_of_the_wait_for_first_consumer_rule():
    journal = Journal()
    cluster(journal)
    journal.put(1.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0"))
    journal.put(1.2, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True, by_controller=False))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is True and verdict.details["unjudged"] == {"wffc: pre-bound by a user": 1}, verdict.reason


def test_two_claims_bound_to_one_volume_are_caught():
    journal = Journal()
    cluster(journal, storage_class(mode="Immediate"))
    journal.put(1.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0"))
    journal.put(1.1, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True))
    journal.put(1.2, "persistentvolumeclaims", "default/data-1", pvc("data-1", "c1", volume="pv-0", bound=True))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "pv-double-bound", verdict.reason
    assert verdict.evidence[0]["claims"] == ["default/data-0", "default/data-1"]


def test_a_bound_claim_whose_volume_names_another_claim_is_caught():
    journal = Journal()
    cluster(journal, storage_class(mode="Immediate"))
    journal.put(1.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-1", uid="c1"))
    journal.put(1.1, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "claim-ref-mismatch", verdict.reason


def test_a_released_volume_bound_to_a_claim_recreated_under_the_same_name_is_caught():
    journal = Journal()
    cluster(journal, storage_class(policy="Retain"))
    provisioned(journal, policy="Retain")
    journal.delete(10.0, "persistentvolumeclaims", "default/data-0")
    journal.put(10.5, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0", phase="Released", policy="Retain"))
    journal.put(20.0, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c9", selected="node-a"))
    journal.put(20.1, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c9", policy="Retain"))
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "released-rebound", verdict.reason
    assert verdict.evidence[0]["released_uid"] == "c0"


def test_an_administrator_clearing_the_claim_ref_frees_a_retained_volume():
    journal = Journal()
    cluster(journal, storage_class(policy="Retain"))
    provisioned(journal, policy="Retain")
    journal.delete(10.0, "persistentvolumeclaims", "default/data-0")
    journal.put(10.5, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0", phase="Released", policy="Retain"))
    journal.put(15.0, "persistentvolumes", "pv-0", pv("pv-0", phase="Available", policy="Retain"))  # kubectl patch pv: claimRef removed
    journal.put(20.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-9", uid="c9", policy="Retain"))
    verdict = check_volume_invariants(journal.events)
    # (db-0 still runs on data-0, removed here with no deletion mark: not judged by rule 5)
    assert verdict.valid is True and verdict.details["unjudged"] == {"in use: claim removed without a recorded deletion mark": 1, "reclaim: claimRef cleared by an administrator": 1}, verdict.reason


def test_a_retained_volume_deleted_by_the_controller_is_caught():
    journal = Journal()
    cluster(journal, storage_class(policy="Retain"))
    provisioned(journal, policy="Retain")
    journal.delete(10.0, "persistentvolumeclaims", "default/data-0")
    journal.record(10.6, "volume", claim="default/data-0", volume="pv-0", event="deleted", detail="", controller="persistentvolume-binder")
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "retain-deleted", verdict.reason


def test_a_delete_policy_volume_must_go_within_the_bound_while_a_controller_manager_leads():
    def run(deleted_at: float | None, leader: bool = True) -> Any:
        journal = Journal()
        cluster(journal)
        if not leader:
            journal.events = [event for event in journal.events if event["type"] != "leader"]
        provisioned(journal)
        journal.delete(10.0, "persistentvolumeclaims", "default/data-0")
        if deleted_at is not None:
            journal.delete(deleted_at, "persistentvolumes", "pv-0")
        journal.record(100.0, "end")
        return check_volume_invariants(journal.events)

    assert run(12.0).valid is True
    late = run(70.0)
    assert late.valid is False and late.details["rule"] == "reclaim-late" and late.evidence[0]["deadline"] == 40.0, late.reason
    never = run(None)
    assert never.valid is False and never.details["rule"] == "reclaim-late", never.reason
    leaderless = run(None, leader=False)
    assert leaderless.valid is True and "reclaim: no healthy stretch of the controller-manager after the claim's deletion" in leaderless.details["unjudged"], leaderless.reason


def test_a_volume_left_bound_to_a_claim_bound_elsewhere_is_caught_past_the_bound():
    def run(unbound_at: float | None) -> Any:
        journal = Journal()
        cluster(journal, storage_class(mode="Immediate"))
        journal.put(1.0, "persistentvolumes", "pv-0", pv("pv-0", claim="data-0", uid="c0"))
        journal.put(1.1, "persistentvolumes", "pv-1", pv("pv-1", claim="data-0", uid="c0"))  # the loser of a race
        journal.put(1.2, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0", volume="pv-0", bound=True))
        if unbound_at is not None:
            journal.put(unbound_at, "persistentvolumes", "pv-1", pv("pv-1", phase="Available"))
        journal.record(100.0, "end")
        return check_volume_invariants(journal.events)

    assert run(5.0).valid is True
    late = run(50.0)
    assert late.valid is False and late.details["rule"] == "claim-bound-to-two-volumes" and late.evidence[0]["other_volume"] == "pv-0", late.reason
    never = run(None)
    assert never.valid is False and never.details["rule"] == "claim-bound-to-two-volumes", never.reason


def marked(claim: dict[str, Any], *, protected: bool = True) -> dict[str, Any]:
    """The claim marked for deletion (``kubectl delete pvc``), with the StorageObjectInUseProtection finalizer or without it."""
    meta = {**claim["metadata"], "deletionTimestamp": "2026-01-01T00:00:10Z"}
    if protected:
        meta["finalizers"] = ["kubernetes.io/pvc-protection"]
    return {**claim, "metadata": meta}


def test_a_claim_removed_while_a_pod_bound_before_its_deletion_uses_it_is_caught():
    """Rule 5 (kubernetes/kubernetes#75980: the pvc-protection controller asked only its
    cache, which had not seen the pod): the claim leaves the store under a running pod."""
    journal = Journal()
    cluster(journal)
    provisioned(journal)
    claim = pvc("data-0", "c0", selected="node-a", volume="pv-0", bound=True)
    journal.put(10.0, "persistentvolumeclaims", "default/data-0", marked(claim))
    journal.delete(10.5, "persistentvolumeclaims", "default/data-0")
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is False and verdict.details["rule"] == "claim-removed-in-use", verdict.reason
    assert "pod default/db-0 (bound to node-a" in verdict.reason
    assert verdict.evidence[0]["pod_bound_revision"] < verdict.evidence[0]["claim_marked_revision"]


def test_a_claim_removed_once_its_pod_is_gone_holds_and_a_finished_pod_still_holds_it():
    """``podUsesPVC`` asks only that the pod is scheduled: a Succeeded or Failed pod left in
    the store keeps its claim in use ("PVC is in active use by a Pod when a Pod object exists
    that is using the PVC")."""
    for finish in ("deleted", "Succeeded", "Failed"):
        journal = Journal()
        cluster(journal)
        provisioned(journal)
        claim = pvc("data-0", "c0", selected="node-a", volume="pv-0", bound=True)
        journal.put(10.0, "persistentvolumeclaims", "default/data-0", marked(claim))
        if finish == "deleted":
            journal.delete(11.0, "pods", "default/db-0")
        else:
            journal.put(11.0, "pods", "default/db-0", {**pod("db-0", "data-0", "node-a"), "status": {"phase": finish}})
        journal.delete(11.5, "persistentvolumeclaims", "default/data-0")
        verdict = check_volume_invariants(journal.events)
        if finish == "deleted":
            assert verdict.valid is True, (finish, verdict.reason)
            assert verdict.details["claim_removals_checked"] == 1
        else:
            assert verdict.valid is False and verdict.details["rule"] == "claim-removed-in-use", (finish, verdict.reason)
            assert f"phase {finish}" in verdict.reason


def test_a_pod_bound_after_the_claims_deletion_mark_or_a_claim_without_the_finalizer_is_not_judged():
    """Bounds: a pod bound after the mark may postdate the controller's live list (upstream
    leaves that to the kubelet); a claim marked without the finalizer is nobody's to hold."""
    journal = Journal()
    cluster(journal)
    journal.put(1.0, "persistentvolumeclaims", "default/data-0", pvc("data-0", "c0"))
    journal.put(1.1, "pods", "default/db-0", pod("db-0", "data-0"))
    journal.put(5.0, "persistentvolumeclaims", "default/data-0", marked(pvc("data-0", "c0")))
    journal.put(5.1, "pods", "default/db-0", pod("db-0", "data-0", "node-a"))
    journal.delete(5.5, "persistentvolumeclaims", "default/data-0")
    assert check_volume_invariants(journal.events).valid is True
    journal = Journal()
    cluster(journal)
    provisioned(journal)
    journal.put(10.0, "persistentvolumeclaims", "default/data-0", marked(pvc("data-0", "c0", selected="node-a", volume="pv-0", bound=True), protected=False))
    journal.delete(10.5, "persistentvolumeclaims", "default/data-0")
    verdict = check_volume_invariants(journal.events)
    assert verdict.valid is True and verdict.details["unjudged"]["in use: claim marked without the pvc-protection finalizer"] == 1

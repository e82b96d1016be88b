"""The scheduling checker's decision judgements (issue 19): preemption victims and node
choice recomputed from a recorded snapshot, and pods left Pending while a node fits."""

from __future__ import annotations

import json

import pytest

from chaoskube.checkers.scheduling import check_scheduling_decisions, preemption_victims, volume_problem


def pod(key, priority, cpu="400m", start="2024-01-01T00:00:00Z", labels=None):
    return {"key": key, "namespace": key.partition("/")[0], "priority": priority, "start": start, "labels": labels or {"app": key.split("/")[1].split("-")[0]}, "requests": [{"cpu": cpu}]}


def node(name, *pods, cpu="1", nominated=()):
    return {"name": name, "allocatable": {"cpu": cpu, "pods": "110"}, "pods": list(pods), "nominated": list(nominated)}


PREEMPTOR = pod("d/web-1", 1000, "500m")
BATCH_PDB = {"namespace": "d", "selector": {"matchLabels": {"app": "batch"}}, "disruptions_allowed": 0, "disrupted_pods": []}


def decision(nodes, chosen, pdbs=(BATCH_PDB,)):
    return {"type": "preemption-decision", "t": 5.0, "preemptor": PREEMPTOR, "nodes": nodes, "pdbs": list(pdbs), "chosen": chosen}


NODES = [node("n1", pod("d/batch-1", 100), pod("d/batch-2", 100)), node("n2", pod("d/filler-1", 100), pod("d/filler-2", 100))]


def test_minimal_victims_and_pdb_violations():
    victims = preemption_victims(NODES[1], PREEMPTOR, [BATCH_PDB])
    assert len(victims.victims) == 1 and victims.violations == 0
    protected = preemption_victims(NODES[0], PREEMPTOR, [BATCH_PDB])
    assert len(protected.victims) == 1 and protected.violations == 1
    assert preemption_victims(node("n3", pod("d/x", 2000)), PREEMPTOR, []) is None  # nothing lower to evict
    assert preemption_victims(node("n4", pod("d/y", 100), cpu="400m"), PREEMPTOR, []) is None  # never fits


def test_upstream_ordering_is_required():
    # equal pods are reprieved in the node's order (as upstream's stable sort): the last one goes
    good = check_scheduling_decisions([decision(NODES, {"node": "n2", "victims": ["d/filler-2"]}), {"type": "end", "t": 6.0}])
    assert good.valid is True, good.reason
    violating = check_scheduling_decisions([decision(NODES, {"node": "n1", "victims": ["d/batch-1"]})])
    assert violating.valid is False and "picks n2" in violating.reason
    extra = check_scheduling_decisions([decision(NODES, {"node": "n2", "victims": ["d/filler-1", "d/filler-2"]})])
    assert extra.valid is False and "not the minimal victims" in extra.reason


def test_lower_priority_victims_win_then_fewer():
    """n1 must give up only its priority-100 pod (its priority-500 pod fits back); n2 a
    priority-200 pod: the lowest highest-victim priority wins (pickOneNodeForPreemption)."""
    nodes = [node("n1", pod("d/a-1", 500), pod("d/a-2", 100)), node("n2", pod("d/b-1", 200), pod("d/b-2", 200))]
    assert check_scheduling_decisions([decision(nodes, {"node": "n1", "victims": ["d/a-2"]}, pdbs=())]).valid is True
    assert check_scheduling_decisions([decision(nodes, {"node": "n2", "victims": ["d/b-2"]}, pdbs=())]).valid is False


_rv = [1]


def apply(t, *writes):
    _rv[0] += 1
    return {"type": "raft-apply", "t": t, "revision": _rv[0], "events": [["DELETE" if o is None else "PUT", k, "" if o is None else json.dumps(o), _rv[0]] for k, o in writes], "member": "etcd-1"}


def ready_node(name, cpu="1"):
    return (f"/registry/nodes/{name}", {"metadata": {"name": name}, "spec": {}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}})


def pending_pod(name, cpu="500m"):
    return (f"/registry/pods/d/{name}", {"metadata": {"name": name, "namespace": "d"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}, "status": {"phase": "Pending"}})


LEADING = {"type": "leader", "t": 0.0, "event": "start", "lease": "kube-system/kube-scheduler", "process": "kube-scheduler-1"}


def test_a_pod_pending_while_a_node_fits_is_a_finding_past_the_bound():
    events = [LEADING, apply(1.0, ready_node("n1")), apply(2.0, pending_pod("p"))]
    tick = [{"type": "tick", "t": float(t)} for t in range(3, 30)]
    verdict = check_scheduling_decisions([*events, *[{**e, "type": "x"} for e in tick], apply(30.0, ready_node("n1"))])
    assert verdict.valid is False and "stayed Pending" in verdict.reason
    bound = [*events, apply(6.0, (pending_pod("p")[0], {**pending_pod("p")[1], "spec": {**pending_pod("p")[1]["spec"], "nodeName": "n1"}})), apply(30.0, ready_node("n1"))]
    assert check_scheduling_decisions(bound).valid is True


def test_a_pod_pending_for_ever_after_a_fault_is_judged_once_the_fault_heals():
    """Its first window overlapped an etcd leader kill (not judged); a pod still Pending
    15 s into the healthy time after the heal is a finding (the scheduler kept a pod whose
    binding failed assumed: kubernetes#28883); one bound soon after the heal is not."""
    kill = {"type": "fault", "event": "apply", "id": 1, "t": 2.5, "kind": "kill", "targets": ["etcd-1"]}
    heal = {"type": "fault", "event": "heal", "id": 1, "t": 12.5, "kind": "kill", "targets": ["etcd-1"]}
    events = [LEADING, apply(1.0, ready_node("n1")), apply(2.0, pending_pod("p")), kill, *[{"type": "x", "t": float(t)} for t in range(3, 60)], heal]
    events.sort(key=lambda event: event["t"])
    verdict = check_scheduling_decisions([*events, apply(60.0, ready_node("n1"))])
    assert verdict.valid is False and "stayed Pending" in verdict.reason, verdict.reason
    assert verdict.details["pending_unjudged"] == 1
    bound = (pending_pod("p")[0], {**pending_pod("p")[1], "spec": {**pending_pod("p")[1]["spec"], "nodeName": "n1"}})
    healed = [*[event for event in events if event["t"] <= 20.0], apply(20.0, bound), *[event for event in events if event["t"] > 20.0], apply(60.0, ready_node("n1"))]
    verdict = check_scheduling_decisions(healed)
    assert verdict.valid is True, verdict.reason


def test_a_pod_that_fits_nowhere_may_wait():
    events = [LEADING, apply(1.0, ready_node("n1", cpu="200m")), apply(2.0, pending_pod("p")), apply(60.0, ready_node("n1", cpu="200m"))]
    assert check_scheduling_decisions(events).valid is True


# =========================================================================== volumes (issue 32)
def zonal_node(name, zone):
    key, node = ready_node(name)
    return key, {**node, "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}}


def claimed_pod(name, claim):
    key, pod = pending_pod(name, cpu="100m")
    return key, {**pod, "spec": {**pod["spec"], "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}


def zonal_volume(name, zone, claim=None, labels=True, affinity=True):
    spec = {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "standard"}
    if affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}
    if claim:
        spec["claimRef"] = {"namespace": "d", "name": claim}
    return f"/registry/persistentvolumes/{name}", {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone} if labels else {}}, "spec": spec, "status": {"phase": "Bound" if claim else "Available"}}


def claim_object(name, volume="", storage_class="standard"):
    return f"/registry/persistentvolumeclaims/d/{name}", {"metadata": {"name": name, "namespace": "d"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}, "storageClassName": storage_class, "volumeName": volume}}


def storage_class(mode="WaitForFirstConsumer", provisioner="chaoskube.io/zonal-disk", topologies=None):
    body = {"metadata": {"name": "standard"}, "provisioner": provisioner, "volumeBindingMode": mode}
    if topologies:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": topologies}]}]
    return "/registry/storageclasses/standard", body


def by_key(*entries, prefix):
    return {key.removeprefix(prefix): body for key, body in entries}


#: (case, claim, volumes, class, node zone, expected reason or None) -- the scheduler's
#: VolumeBinding (chaoskube/scheduler/volumebinding.py) and upstream's VolumeZone.
VOLUME_CASES = [
    ("bound volume in the node's zone", claim_object("c", "pv"), [zonal_volume("pv", "zone-a", "c")], storage_class(), "zone-a", None),
    ("bound volume in another zone", claim_object("c", "pv"), [zonal_volume("pv", "zone-c", "c")], storage_class(), "zone-a", "node(s) had volume node affinity conflict"),
    ("zone label only (VolumeZone)", claim_object("c", "pv"), [zonal_volume("pv", "zone-c", "c", affinity=False)], storage_class(), "zone-a", "node(s) had no available volume zone"),
    ("zone label naming a set", claim_object("c", "pv"), [zonal_volume("pv", "zone-c__zone-a", "c", affinity=False)], storage_class(), "zone-a", None),
    ("bound to a missing volume", claim_object("c", "gone"), [], storage_class(), "zone-a", "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"),
    ("no claim", None, [], storage_class(), "zone-a", 'persistentvolumeclaim "c" not found'),
    ("unbound, Immediate class", claim_object("c"), [], storage_class(mode="Immediate"), "zone-a", "pod has unbound immediate PersistentVolumeClaims"),
    ("unbound, WaitForFirstConsumer, provisioner anywhere", claim_object("c"), [], storage_class(), "zone-a", None),
    ("unbound, provisioner not allowed in the zone", claim_object("c"), [], storage_class(topologies=["zone-b"]), "zone-a", "node(s) didn't find available persistent volumes to bind"),
    ("unbound, static only, volume elsewhere", claim_object("c"), [zonal_volume("pv", "zone-b")], storage_class(provisioner="kubernetes.io/no-provisioner"), "zone-a", "node(s) didn't find available persistent volumes to bind"),
    ("unbound, static only, volume here", claim_object("c"), [zonal_volume("pv", "zone-a")], storage_class(provisioner="kubernetes.io/no-provisioner"), "zone-a", None),
]


@pytest.mark.parametrize(("case", "claim", "volumes", "klass", "zone", "expected"), VOLUME_CASES, ids=[row[0] for row in VOLUME_CASES])
def test_volume_filters_as_the_scheduler_applies_them(case, claim, volumes, klass, zone, expected):
    _, pod = claimed_pod("p", "c")
    _, node = zonal_node("n1", zone)
    claims = by_key(*([claim] if claim else []), prefix="/registry/persistentvolumeclaims/")
    problem = volume_problem(pod, "n1", node, claims, by_key(*volumes, prefix="/registry/persistentvolumes/"), by_key(klass, prefix="/registry/storageclasses/"))
    assert problem == expected


def test_a_pod_whose_volume_lives_only_in_a_cordoned_zone_may_wait():
    """Issue 32 (node-drain-with-pdb --manifests docs/examples/shop): the replica's zonal
    volume is in zone-c, whose only node is cordoned; zone-a's node has room but the scheduler
    rightly refuses it (volume node affinity conflict) -- no finding."""
    cordoned_key, cordoned = zonal_node("n3", "zone-c")
    cordoned = {**cordoned, "spec": {"unschedulable": True}}
    events = [
        LEADING,
        apply(1.0, zonal_node("n1", "zone-a"), (cordoned_key, cordoned), storage_class(), claim_object("c", "pv"), zonal_volume("pv", "zone-c", "c")),
        apply(2.0, claimed_pod("p", "c")),
        *[{"type": "x", "t": float(t)} for t in range(3, 60)],
        apply(60.0, zonal_node("n1", "zone-a")),
    ]
    assert check_scheduling_decisions(events).valid is True
    # The same pod whose volume is in zone-a fits n1 all along: a finding.
    events[1] = apply(1.0, zonal_node("n1", "zone-a"), (cordoned_key, cordoned), storage_class(), claim_object("c", "pv"), zonal_volume("pv", "zone-a", "c"))
    verdict = check_scheduling_decisions(events)
    assert verdict.valid is False and "stayed Pending" in verdict.reason


VOLUME_CASES_MORE = [
    ("beta zone label on the volume, GA on the node", claim_object("c", "pv"),
     [("/registry/persistentvolumes/pv", {**zonal_volume("pv", "zone-c", "c", labels=False, affinity=False)[1], "metadata": {"name": "pv", "labels": {"failure-domain.beta.kubernetes.io/zone": "zone-c"}}})],
     storage_class(), "zone-a", "node(s) had no available volume zone"),
]


@pytest.mark.parametrize(("case", "claim", "volumes", "klass", "zone", "expected"), VOLUME_CASES + VOLUME_CASES_MORE, ids=[row[0] for row in VOLUME_CASES + VOLUME_CASES_MORE])
def test_the_checker_and_the_scheduler_agree_on_every_volume_case(case, claim, volumes, klass, zone, expected):
    """The checker's model (JSON) against the scheduler's own VolumeBinding and VolumeZone
    plugins (typed objects), row by row: the same node refused for the same reason."""
    from chaoskube.api.manifests import from_dict
    from chaoskube.scheduler.framework import CycleState, Snapshot
    from chaoskube.scheduler.volumebinding import VolumeBinding, VolumeZone

    def typed(api_version, kind, body):
        return from_dict({"apiVersion": api_version, "kind": kind, **body})

    claims = [typed("v1", "PersistentVolumeClaim", claim[1])] if claim else []
    pvs = [typed("v1", "PersistentVolume", body) for _, body in volumes]
    classes = [typed("storage.k8s.io/v1", "StorageClass", klass[1])]

    class Handle:
        def claim(self, namespace, name):
            return next((c for c in claims if (c.metadata.namespace, c.metadata.name) == (namespace, name)), None)

        def volume(self, name):
            return next((v for v in pvs if v.metadata.name == name), None)

        def storage_class(self, name):
            return next((c for c in classes if c.metadata.name == name), None)

        def all_volumes(self):
            return list(pvs)

    class Framework:
        handle = Handle()

    _, pod_body = claimed_pod("p", "c")
    pod = typed("v1", "Pod", {**pod_body, "spec": {**pod_body["spec"], "containers": [{"name": "c", "image": "nginx"}]}})
    _, node_body = zonal_node("n1", zone)
    node = typed("v1", "Node", node_body)
    snapshot = Snapshot.of([node])
    state = CycleState(snapshot)
    reason = None
    for plugin in (VolumeBinding(), VolumeZone()):
        plugin.attach(Framework())
        status = plugin.pre_filter(state, pod, snapshot)
        if status.is_success():
            status = plugin.filter(state, pod, snapshot.get("n1"))
        if not status.is_success():
            reason = status.reasons[0]
            break
    checker = volume_problem(pod_body, "n1", node_body, by_key(*([claim] if claim else []), prefix="/registry/persistentvolumeclaims/"),
                             by_key(*volumes, prefix="/registry/persistentvolumes/"), by_key(klass, prefix="/registry/storageclasses/"))
    assert reason == checker == expected

"""The scheduling checker's decision judgements (issue 19): preemption victims and node
choice recomputed from a recorded snapshot, and pods left Pending while a node fits."""

from __future__ import annotations

import json

from chaoskube.checkers.scheduling import check_scheduling_decisions, preemption_victims


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


def test_a_pod_that_fits_nowhere_may_wait():
    events = [LEADING, apply(1.0, ready_node("n1", cpu="200m")), apply(2.0, pending_pod("p")), apply(60.0, ready_node("n1", cpu="200m"))]
    assert check_scheduling_decisions(events).valid is True

"""The timing-contracts and etcd-leases checkers on synthetic journals: one story per bound,
each once within it and once outside."""

from __future__ import annotations

import json

from chaoskube.checkers.etcd_leases import check_etcd_leases
from chaoskube.checkers.timing import TimingConfig, check_timing_contracts, min_toleration_s

_revision = [1]


def apply(t, *writes):
    _revision[0] += 1
    events = [["DELETE" if obj is None else "PUT", key, "" if obj is None else json.dumps(obj), _revision[0]] for key, obj in writes]
    return {"type": "raft-apply", "t": t, "revision": _revision[0], "events": events, "member": "etcd-1"}


def node(name, ready="True", beat="b0", taints=(), zone="zone-a"):
    return {"metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}}, "spec": {"taints": list(taints)},
            "status": {"conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": beat}]}}


def lease(name, renew):
    return (f"/registry/leases/kube-node-lease/{name}", {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"renewTime": renew}})


def led(t=0.0):
    return {"type": "leader", "t": t, "event": "start", "lease": "kube-system/kube-controller-manager", "process": "kube-controller-manager-1"}


UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


def heartbeats(name, until, every=10.0):
    return [apply(t, lease(name, f"r{t}")) for t in range(0, int(until) + 1, int(every))]


# =========================================================================== node monitor grace
def test_a_node_marked_unknown_after_the_grace_period_is_fine_and_early_is_a_finding():
    base = [led(), apply(0.0, (f"/registry/nodes/n1", node("n1"))), *heartbeats("n1", 50)]
    on_time = check_timing_contracts([*base, apply(95.0, ("/registry/nodes/n1", node("n1", "Unknown"))), {"type": "end", "t": 100.0}])
    assert on_time.valid is True, on_time.reason
    early = check_timing_contracts([*base, apply(70.0, ("/registry/nodes/n1", node("n1", "Unknown"))), {"type": "end", "t": 100.0}])
    assert early.valid is False and "node monitor grace" in early.reason and "20.000 s after its last heartbeat" in early.reason


def test_a_silent_node_never_marked_is_a_finding_only_with_a_healthy_control_plane():
    base = [led(), apply(0.0, ("/registry/nodes/n1", node("n1"))), *heartbeats("n1", 50), {"type": "end", "t": 200.0}]
    late = check_timing_contracts(base)
    assert late.valid is False and "was not marked Unknown by t=105.000" in late.reason
    # a renewal noticed at the next monitor pass, marked at the first pass past probe + grace:
    # up to grace + two periods (rolling-update-under-partition with BUGGIFY, seed 26)
    passes = [*base[:-1], apply(102.4, ("/registry/nodes/n1", node("n1", "Unknown"))), {"type": "end", "t": 200.0}]
    assert check_timing_contracts(passes).valid is True
    faulted = [*base[:-1], {"type": "fault", "event": "apply", "id": 1, "t": 60.0, "kind": "kill", "targets": ["kube-apiserver-1"]}, {"type": "end", "t": 200.0}]
    assert check_timing_contracts(faulted).valid is None  # unjudged, nothing else ran


# =========================================================================== NoExecute evictions
def pod(name, node_name, seconds=300):
    tolerations = [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}]
    return (f"/registry/pods/d/{name}", {"metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": node_name, "tolerations": tolerations}, "status": {"phase": "Running"}})


def test_taint_evictions_respect_toleration_seconds_both_ways():
    base = [led(), apply(0.0, ("/registry/nodes/n1", node("n1")), pod("p", "n1", 60)), apply(50.0, ("/registry/nodes/n1", node("n1", "Unknown", taints=[UNREACHABLE])))]
    fine = check_timing_contracts([*base, {"type": "taint-eviction", "t": 111.0, "pod": "d/p", "node": "n1"}, apply(111.0, ("/registry/pods/d/p", None)), {"type": "end", "t": 120.0}])
    assert fine.valid is True, fine.reason
    early = check_timing_contracts([*base, {"type": "taint-eviction", "t": 70.0, "pod": "d/p", "node": "n1"}, apply(70.0, ("/registry/pods/d/p", None)), {"type": "end", "t": 120.0}])
    assert early.valid is False and "earlier than its tolerationSeconds 60" in early.reason
    late = check_timing_contracts([*base, {"type": "end", "t": 250.0}])
    assert late.valid is False and "past its tolerationSeconds 60" in late.reason


def test_the_first_matching_toleration_decides_as_upstream():
    taint = [UNREACHABLE]
    first_forever = {"spec": {"tolerations": [{"operator": "Exists"}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 5}]}}
    assert min_toleration_s(first_forever, taint) is None
    assert min_toleration_s({"spec": {"tolerations": []}}, taint) == 0.0


# =========================================================================== zone rates, grace, leases
def test_zone_taints_at_most_one_per_ten_seconds():
    events = [led(), apply(0.0, ("/registry/nodes/a1", node("a1")), ("/registry/nodes/a2", node("a2"))), apply(10.0, lease("a2", "r10")),
              {"type": "zone-state", "t": 1.0, "zone": "zone-a", "state": "Normal"},
              apply(45.0, ("/registry/nodes/a1", node("a1", "Unknown", taints=[UNREACHABLE])))]
    spaced = check_timing_contracts([*events, apply(56.0, ("/registry/nodes/a2", node("a2", "Unknown", taints=[UNREACHABLE]))), {"type": "end", "t": 60.0}])
    assert spaced.valid is True, spaced.reason
    burst = check_timing_contracts([*events, apply(45.2, ("/registry/nodes/a2", node("a2", "Unknown", taints=[UNREACHABLE]))), {"type": "end", "t": 60.0}])
    assert burst.valid is False and "faster than 0.1/s" in burst.reason
    disrupted = check_timing_contracts([*events[:2], {"type": "node-disruption-mode", "t": 2.0, "event": "enter"}, events[4], {"type": "end", "t": 60.0}])
    assert disrupted.valid is False and "every zone was fully disrupted" in disrupted.reason


def test_sigkill_no_earlier_than_the_grace_period():
    deleting = {"metadata": {"name": "p", "namespace": "d", "deletionTimestamp": "x", "deletionGracePeriodSeconds": 30}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
    base = [led(), apply(0.0, pod("p", "n1")), apply(10.0, ("/registry/pods/d/p", deleting))]
    fine = check_timing_contracts([*base, {"type": "container-exit", "t": 41.0, "pod": "d/p", "container": "c", "exit_code": 137, "cause": "deletion", "exited_ago_s": 0.5}])
    assert fine.valid is True, fine.reason
    early = check_timing_contracts([*base, {"type": "container-exit", "t": 13.0, "pod": "d/p", "container": "c", "exit_code": 137, "cause": "deletion", "exited_ago_s": 0.5}])
    assert early.valid is False and "earlier than its grace period 30" in early.reason


def test_a_lease_changes_hands_no_earlier_than_its_duration():
    def record(holder, t):
        return apply(t, ("/registry/leases/kube-system/kube-scheduler", {"metadata": {"name": "kube-scheduler", "namespace": "kube-system"}, "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}))

    fine = check_timing_contracts([led(), record("a", 0.0), record("a", 2.0), record("b", 18.0), {"type": "end", "t": 20.0}])
    assert fine.valid is True, fine.reason
    early = check_timing_contracts([led(), record("a", 0.0), record("a", 2.0), record("b", 9.0)])
    assert early.valid is False and "before its leaseDurationSeconds 15" in early.reason
    released = check_timing_contracts([led(), record("a", 0.0), record("", 2.0), record("b", 3.0)])
    assert released.valid is not False  # a release hands over at once


def test_config_takes_the_cluster_timings():
    base = [led(), apply(0.0, ("/registry/nodes/n1", node("n1"))), *heartbeats("n1", 50), apply(75.0, ("/registry/nodes/n1", node("n1", "Unknown"))), {"type": "end", "t": 100.0}]
    assert check_timing_contracts(base, TimingConfig(node_monitor_grace_period_s=20.0)).valid is True
    assert check_timing_contracts(base, TimingConfig(node_monitor_grace_period_s=40.0)).valid is False


# =========================================================================== etcd leases
def role(t, member, role_name, term):
    return {"type": "raft-role", "t": t, "member": member, "role": role_name, "term": term}


def op(t, kind, lease_id, phase="ok", invoked=None, **fields):
    return {"type": "lease-op", "t": t, "client": "c1", "op": kind, "lease": lease_id, "phase": phase, "invoked": t if invoked is None else invoked, **fields}


def revoke(t, key):
    return {"type": "raft-apply", "t": t, "revision": int(t * 100), "events": [["DELETE", key, "", int(t * 100)]], "member": "etcd-1", "id": "etcd-1/revoke/7/x"}


def stored(t, key):
    return {"type": "raft-apply", "t": t, "revision": int(t * 100), "events": [["PUT", key, "held", int(t * 100)]], "member": "etcd-1", "id": "c1/1"}


def lease_story(*more, attached=True):
    put = [stored(1.05, "lease/c1/1")] if attached else []  # the key's PUT applies before its attach is answered
    return [role(0.0, "etcd-1", "leader", 2), op(1.0, "grant", 7, ttl=5, member="etcd-1"), *put, op(1.1, "attach", 7, key="lease/c1/1", phase="ok" if attached else "info"),
            op(3.0, "keepalive", 7, invoked=2.9, member="etcd-1", ttl=5), op(3.1, "abandon", 7), *more]


def test_a_lease_expires_after_its_ttl_and_within_the_bound():
    assert check_etcd_leases([*lease_story(revoke(8.5, "lease/c1/1")), {"type": "end", "t": 20.0}]).valid is True
    early = check_etcd_leases([*lease_story(revoke(5.0, "lease/c1/1")), {"type": "end", "t": 20.0}])
    assert early.valid is False and "before its TTL" in early.reason
    stuck = check_etcd_leases([*lease_story(), {"type": "end", "t": 30.0}])
    assert stuck.valid is False and "still existed" in stuck.reason
    # etcd-pinned-clients-leader-isolation with BUGGIFY, seed 13: an attach whose answer was
    # lost and which never applied left no key to outlive the lease
    never_stored = check_etcd_leases([*lease_story(attached=False), {"type": "end", "t": 30.0}])
    assert never_stored.valid is True, never_stored.reason


def test_a_new_leader_extends_the_deadline():
    story = lease_story(role(6.0, "etcd-2", "leader", 3), revoke(13.0, "lease/c1/1"))
    assert check_etcd_leases([*story, {"type": "end", "t": 30.0}]).valid is True


def test_only_the_leader_acknowledges_keepalives():
    story = [role(0.0, "etcd-1", "leader", 2), op(1.0, "grant", 7, ttl=5, member="etcd-1"),
             role(2.0, "etcd-2", "leader", 3),  # etcd-1 has not noticed
             op(3.0, "keepalive", 7, invoked=2.9, member="etcd-1"), {"type": "end", "t": 4.0}]
    verdict = check_etcd_leases(story)
    assert verdict.valid is False and "by etcd-1, which was not the leader then" in verdict.reason
    follower = [role(0.0, "etcd-1", "leader", 2), op(1.0, "grant", 7, ttl=5, member="etcd-1"), op(3.0, "keepalive", 7, member="etcd-3"), {"type": "end", "t": 4.0}]
    assert check_etcd_leases(follower).valid is False


def test_no_lease_is_unknown():
    assert check_etcd_leases([role(0.0, "etcd-1", "leader", 2)]).valid is None

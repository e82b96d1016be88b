"""DaemonSet guarantees, judged from the store's history and the taint manager's records.

The Kubernetes behaviour checked ("DaemonSet",
https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/; "Taints and
Tolerations", Taint based Evictions,
https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions;
kubernetes/kubernetes ``pkg/controller/daemon/daemon_controller.go``
``NodeShouldRunDaemonPod``, ``util/daemonset_util.go`` ``AddOrUpdateDaemonPodTolerations``,
``update.go`` ``rollingUpdate``):

1. **Never evicted for a node's health**: "DaemonSet pods are created with NoExecute
   tolerations for the following taints with no tolerationSeconds:
   node.kubernetes.io/unreachable, node.kubernetes.io/not-ready. This ensures that DaemonSet
   pods are never evicted due to these problems" -- no taint-based eviction
   (``taint-eviction``) of a pod a DaemonSet controls from a node tainted with them
   (kubernetes/kubernetes#41738, PR #41896 made it so).
2. **maxSurge**: when a pod of a DaemonSet is created, at most ``maxSurge`` nodes (scaled
   against the nodes that should run it, rounded up; 0 without surge) hold two live pods of
   it -- "the DaemonSet controller will ... create a new pod on that node before deleting
   the old one" only with surge.
3. **Placement at the end** (the run ended with its steady state held, every node Ready and
   no pod of the set pending or terminating): every node that should run the daemon pod
   (its node selector and required node affinity match, and every NoSchedule / NoExecute
   taint is tolerated by the template's tolerations plus the daemon tolerations) holds
   exactly one live pod of it; a node it must not run on (a selector or affinity mismatch,
   an untolerated NoExecute taint) none; a node with only an untolerated NoSchedule taint
   at most one ("NoSchedule ... will not evict" what already runs: kubernetes#53556).

The daemon tolerations are written here from the docs, not taken from the controller, so
a controller that forgets them is judged against what it should have added.
``check_daemonset_invariants(events)`` answers False with the first finding, unknown when
the store never held a DaemonSet, True otherwise. Not judged: ``maxUnavailable`` (node
faults make pods unavailable beyond it by design); placement while the run did not end
settled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from chaoskube.api.manifests import ManifestError, from_dict
from chaoskube.api.objects import Toleration
from chaoskube.api.workloads import daemon_pod_node, find_untolerated_taint, pod_fits_node_affinity
from chaoskube.checkers.replay import StoreReplay, condition_status, is_deleting, pod_ready, scaled_value
from chaoskube.checkers.verdict import Verdict, nothing_to_judge

__all__ = ["DAEMON_TOLERATIONS", "check_daemonset_invariants"]

Event = dict[str, Any]
Obj = dict[str, Any]

#: "Taints and Tolerations", DaemonSet pods (and the DaemonSet docs' "Taints and
#: tolerations" table): key, effect; operator Exists, no tolerationSeconds.
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HEALTH_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _uid(obj: Obj | None) -> str:
    return (obj or {}).get("metadata", {}).get("uid", "")


def _owner(pod: Obj | None) -> str | None:
    for reference in (pod or {}).get("metadata", {}).get("ownerReferences") or ():
        if reference.get("controller") and reference.get("kind") == "DaemonSet":
            return reference.get("uid")
    return None


def _live(pod: Obj | None) -> bool:
    return pod is not None and not is_deleting(pod) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _placement(ds: Obj, node: Obj) -> tuple[bool, bool] | None:
    """(should run, may continue running) for the DaemonSet's pod on the node, with the
    daemon tolerations of the docs; None when either does not decode."""
    try:
        typed_ds = from_dict({"apiVersion": "apps/v1", "kind": "DaemonSet", **ds})
        typed_node = from_dict({"apiVersion": "v1", "kind": "Node", **node})
    except ManifestError:
        return None
    spec = typed_ds.spec.template.spec
    if spec.node_name and spec.node_name != typed_node.metadata.name:
        return False, False
    wanted = list(DAEMON_TOLERATIONS) + ([("node.kubernetes.io/network-unavailable", "NoSchedule")] if spec.host_network else [])
    tolerations = [t for t in spec.tolerations if (t.key, t.effect) not in set(wanted)]
    tolerations += [Toleration(key=key, operator="Exists", effect=effect) for key, effect in wanted]
    if not pod_fits_node_affinity(spec, typed_node):
        return False, False
    taints = typed_node.spec.taints
    if find_untolerated_taint(taints, tolerations, ("NoExecute",)) is not None:
        return False, False
    if find_untolerated_taint(taints, tolerations, ("NoSchedule",)) is not None:
        return False, True
    return True, True


def check_daemonset_invariants(events: Sequence[Event]) -> Verdict:
    """Judge the DaemonSet rules (module docstring)."""
    store = StoreReplay(["daemonsets", "pods", "nodes"])
    sets: dict[str, str] = {}  # uid -> key
    counts = {"daemonsets": 0, "creations": 0, "health_evictions_checked": 0, "nodes_judged_at_end": 0}
    final_steady: bool | None = None
    for event in events:
        kind = event["type"]
        if kind == "kubernetes" and event.get("event") == "final":
            final_steady = bool(event.get("steady"))
        if kind == "taint-eviction":
            pod = store.get("pods", event.get("pod", ""))
            owner = _owner(pod)
            if owner is not None:
                counts["health_evictions_checked"] += 1
                node = store.get("nodes", event.get("node", "")) or {}
                health = [t.get("key") for t in (node.get("spec") or {}).get("taints") or () if t.get("key") in HEALTH_TAINTS and t.get("effect") == "NoExecute"]
                if health:
                    return _violation("daemonset-evicted", event["t"], f"daemonsets/{sets.get(owner, owner)}",
                                      f"the taint manager evicted daemon pod {event.get('pod')} of DaemonSet {sets.get(owner, owner)} from {event.get('node')} for {health[0]}: DaemonSet pods tolerate it with no tolerationSeconds",
                                      counts, {"pod": event.get("pod"), "node": event.get("node"), "taints": health})
        for change in store.apply(event):
            if change.resource == "daemonsets" and change.after is not None:
                if _uid(change.after) not in sets:
                    counts["daemonsets"] += 1
                sets[_uid(change.after)] = change.key
            elif change.resource == "pods" and change.before is None and _owner(change.after) in sets:
                counts["creations"] += 1
                owner = _owner(change.after)
                ds = store.get("daemonsets", sets[owner or ""])
                if ds is None:
                    continue
                by_node: dict[str, int] = {}
                for key, pod in store.objects("pods").items():
                    if _owner(pod) == owner and _live(pod):
                        node = daemon_pod_node(pod)
                        by_node[node] = by_node.get(node, 0) + 1
                doubled = sorted(node for node, n in by_node.items() if n > 1 and node)
                desired = max(1, int((ds.get("status") or {}).get("desiredNumberScheduled") or len(by_node)))
                strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
                surge_value = ((strategy.get("rollingUpdate") or {}).get("maxSurge")) if strategy.get("type", "RollingUpdate") == "RollingUpdate" else 0
                surge = scaled_value(surge_value if surge_value is not None else 0, desired, round_up=True)
                if len(doubled) > surge:
                    return _violation("daemonset-surge", change.t, f"daemonsets/{sets[owner or '']}",
                                      f"DaemonSet {sets[owner or '']} holds two live pods on {len(doubled)} node(s) ({', '.join(doubled)}) after {change.key} was created, over maxSurge {surge}",
                                      counts, {"nodes": doubled, "maxSurge": surge})
    if not sets:
        return nothing_to_judge("the store never held a DaemonSet: nothing to judge", (), counts)
    judged = bool(final_steady)
    if judged:
        nodes = store.objects("nodes")
        if any(condition_status(node, "Ready") != "True" for node in nodes.values()):
            judged = False
    if judged:
        for uid, key in sorted(sets.items(), key=lambda item: item[1]):
            ds = store.get("daemonsets", key)
            if ds is None or _uid(ds) != uid or is_deleting(ds):
                continue
            pods = [pod for pod in store.objects("pods").values() if _owner(pod) == uid]
            if any(not _live(pod) or not pod_ready(pod) for pod in pods):
                continue  # not settled
            for name, node in sorted(store.objects("nodes").items()):
                placement = _placement(ds, node)
                if placement is None:
                    continue
                counts["nodes_judged_at_end"] += 1
                here = [pod["metadata"]["name"] for pod in pods if daemon_pod_node(pod) == name]
                should, may = placement
                if (should and len(here) != 1) or (not may and here) or (not should and may and len(here) > 1):
                    want = "exactly one" if should else ("none" if not may else "at most one")
                    return _violation("daemonset-placement", math.inf, f"daemonsets/{key}",
                                      f"DaemonSet {key} ended with {len(here)} pod(s) on {name}, where it should have {want}",
                                      counts, {"node": name, "pods": here})
    return Verdict(True, (
        f"{counts['daemonsets']} DaemonSet(s), {counts['creations']} pod creation(s) within maxSurge, "
        f"{counts['health_evictions_checked']} taint eviction(s) of daemon pods, none for a node's health; "
        + (f"{counts['nodes_judged_at_end']} node placement(s) exact at the end" if judged else "the end not judged (not settled)")
    ), (), counts)


def _violation(rule: str, t: float, where: str, problem: str, counts: dict[str, int], evidence: dict[str, Any] | None = None) -> Verdict:
    return Verdict(False, problem, ({"rule": rule, "t": t, "object": where, "problem": problem, **(evidence or {})},), {"rule": rule, **counts})

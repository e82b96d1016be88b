"""The DaemonSet controller's pure parts: which nodes run a daemon pod, the daemon
tolerations, and :func:`plan_daemon_set` (one pod per eligible node, rolling update).

TestNodeShouldRunDaemonPod is transcribed from ``pkg/controller/daemon/daemon_controller_test.go``
(every row, under both update strategies as upstream loops)."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import DaemonSet, Node, Toleration
from chaoskube.controllers.daemonset import daemon_pod, daemon_tolerations, node_should_run

SIMPLE = {"name": "simple-daemon", "type": "production"}  # simpleDaemonSetLabel
SIMPLE2 = {"name": "simple-daemon", "type": "test"}  # simpleDaemonSetLabel2


def _resources(memory: str, cpu: str) -> dict[str, Any]:
    return {"requests": {"memory": memory, "cpu": cpu}}


def _resource_pod_spec(node_name: str, memory: str, cpu: str) -> dict[str, Any]:
    """resourcePodSpec"""
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": _resources(memory, cpu)}]}
    if node_name:
        spec["nodeName"] = node_name
    return spec


def _affinity(value: str) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "i"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "type", "operator": "In", "values": [value]}]}]}}}}


HOST_PORT = {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 666, "hostPort": 666}]}]}

# (predicateName, pod spec of the DaemonSet, node unschedulable, shouldRun, shouldContinueRunning);
# podsOnNode only matter to the scheduler now (upstream: "we don't care about the resource
# constraints any more and let default scheduler handle it"), so they are left out.
NODE_SHOULD_RUN_DAEMON_POD = [
    ("ShouldRunDaemonPod", _resource_pod_spec("", "50M", "0.5"), False, True, True),
    ("InsufficientResourceError", _resource_pod_spec("", "200M", "0.5"), False, True, True),
    ("ErrPodNotMatchHostName", _resource_pod_spec("other-node", "50M", "0.5"), False, False, False),
    ("ErrPodNotFitsHostPorts", HOST_PORT, False, True, True),
    ("InsufficientResourceError", _resource_pod_spec("", "100M", "0.5"), False, True, True),
    ("ShouldRunDaemonPod", _resource_pod_spec("", "50M", "0.5"), False, True, True),
    ("ErrNodeSelectorNotMatch", {"containers": [{"name": "c", "image": "i"}], "nodeSelector": SIMPLE2}, False, False, False),
    ("ShouldRunDaemonPod", {"containers": [{"name": "c", "image": "i"}], "nodeSelector": SIMPLE}, False, True, True),
    ("ErrPodAffinityNotMatch", _affinity("test"), False, False, False),
    ("ShouldRunDaemonPod", _affinity("production"), False, True, True),
    ("ShouldRunDaemonPodOnUnschedulableNode", _resource_pod_spec("", "50M", "0.5"), True, True, True),
]


def _daemon_set(pod_spec: dict[str, Any], strategy: str = "RollingUpdate", name: str = "ds") -> DaemonSet:
    return from_dict({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"namespace": "default", "name": name, "uid": "ds-uid", "generation": 1},
        "spec": {"selector": {"matchLabels": SIMPLE}, "updateStrategy": {"type": strategy},
                 "template": {"metadata": {"labels": SIMPLE}, "spec": pod_spec}},
    })  # type: ignore[return-value]


def _node(name: str = "test-node", labels: dict[str, str] = SIMPLE, *, unschedulable: bool = False, taints: list[dict[str, str]] = ()) -> Node:
    return from_dict({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable, "taints": list(taints)},
        "status": {"allocatable": {"memory": "100M", "cpu": "1"}},
    })  # type: ignore[return-value]


@pytest.mark.parametrize("strategy", ["OnDelete", "RollingUpdate"])
@pytest.mark.parametrize("row", NODE_SHOULD_RUN_DAEMON_POD, ids=[f"{i}-{row[0]}" for i, row in enumerate(NODE_SHOULD_RUN_DAEMON_POD)])
def test_node_should_run_daemon_pod(row: tuple, strategy: str) -> None:
    _, pod_spec, unschedulable, should_run, should_continue = row
    assert node_should_run(_node(unschedulable=unschedulable), _daemon_set(pod_spec, strategy)) == (should_run, should_continue)


@pytest.mark.parametrize(("taint", "tolerations", "expected"), [
    ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, [], (False, True)),  # a running daemon pod stays
    ({"key": "dedicated", "value": "gpu", "effect": "NoExecute"}, [], (False, False)),
    ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, [{"key": "dedicated", "operator": "Exists"}], (True, True)),
    ({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}, [], (True, True)),  # the daemon tolerations
    ({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, [], (True, True)),
    ({"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}, [], (False, True)),  # only for hostNetwork
])
def test_taints_and_tolerations(taint: dict[str, str], tolerations: list[dict[str, str]], expected: tuple[bool, bool]) -> None:
    spec = {"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations}
    assert node_should_run(_node(taints=[taint]), _daemon_set(spec)) == expected


def test_daemon_tolerations_replace_those_of_the_same_key_and_effect() -> None:
    mine = [Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute", toleration_seconds=30), Toleration(key="x", operator="Exists")]
    got = daemon_tolerations(mine, host_network=True)
    keys = [(t.key, t.effect, t.toleration_seconds) for t in got]
    assert ("x", "", None) in keys
    assert ("node.kubernetes.io/unreachable", "NoExecute", None) in keys and ("node.kubernetes.io/unreachable", "NoExecute", 30) not in keys
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule", None) in keys


def test_a_daemon_pod_is_pinned_to_its_node_by_affinity() -> None:
    pod = daemon_pod(_daemon_set({"containers": [{"name": "c", "image": "i"}]}), "node-7", "abc")
    terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in terms[0].match_fields] == [("metadata.name", "In", ["node-7"])]
    assert pod.metadata.generate_name == "ds-" and pod.metadata.labels["controller-revision-hash"] == "abc"
    assert pod.metadata.owner_references[0].kind == "DaemonSet" and pod.metadata.owner_references[0].controller


# --------------------------------------------------------------------------- plan_daemon_set
from chaoskube.controllers.daemonset import plan_daemon_set  # noqa: E402

PLAIN = {"containers": [{"name": "c", "image": "i"}]}


def _daemon_pod(node: str, revision: str, *, ready: bool = True, phase: str = "Running", name: str | None = None) -> Any:
    return from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "default", "name": name or f"ds-{node}-{revision}", "uid": f"uid-{node}-{revision}-{name}", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {**SIMPLE, "controller-revision-hash": revision}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    })


def _rolling(max_unavailable: Any = 1, max_surge: Any = 0) -> DaemonSet:
    ds = _daemon_set(PLAIN)
    return from_dict({**__import__("chaoskube.api.manifests", fromlist=["to_dict"]).to_dict(ds),
                      "spec": {"selector": {"matchLabels": SIMPLE}, "template": {"metadata": {"labels": SIMPLE}, "spec": PLAIN},
                               "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}}}})  # type: ignore[return-value]


NODES = [_node("n1"), _node("n2"), _node("n3")]


def test_one_pod_per_eligible_node() -> None:
    tainted = _node("n4", taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
    plan = plan_daemon_set(_daemon_set(PLAIN), [*NODES, tainted], {}, "new", now=100.0)
    assert plan.create_on == ["n1", "n2", "n3"]
    assert plan.status.desired_number_scheduled == 3 and plan.status.current_number_scheduled == 0 and plan.status.number_unavailable == 3


def test_status_counts_and_misscheduled_pods() -> None:
    elsewhere = _node("n4", SIMPLE2)  # the DaemonSet's nodeSelector leaves it out
    ds = _daemon_set({**PLAIN, "nodeSelector": SIMPLE})
    pods = {"n1": [_daemon_pod("n1", "new")], "n2": [_daemon_pod("n2", "new", ready=False)], "n4": [_daemon_pod("n4", "new")]}
    plan = plan_daemon_set(ds, [*NODES, elsewhere], pods, "new", now=100.0)
    status = plan.status
    assert (status.desired_number_scheduled, status.current_number_scheduled, status.number_ready, status.updated_number_scheduled, status.number_misscheduled) == (3, 2, 1, 2, 1)
    assert plan.create_on == ["n3"]
    assert [(pod.spec.node_name, why) for pod, why in plan.delete] == [("n4", "should not run on this node")]


def test_failed_daemon_pods_are_replaced_after_their_back_off() -> None:
    failed = {"n1": [_daemon_pod("n1", "new", phase="Failed", ready=False)]}
    waiting = plan_daemon_set(_daemon_set(PLAIN), NODES[:1], failed, "new", now=100.0, failed_backoff={"n1": (10.0, 95.0)})
    assert waiting.delete == [] and waiting.backoff == {"n1": 105.0}
    plan = plan_daemon_set(_daemon_set(PLAIN), NODES[:1], failed, "new", now=106.0, failed_backoff={"n1": (10.0, 95.0)})
    assert [why for _, why in plan.delete] == ["failed"]


def test_rolling_update_max_unavailable_replaces_that_many_at_a_time() -> None:
    pods = {name: [_daemon_pod(name, "old")] for name in ("n1", "n2", "n3")}
    plan = plan_daemon_set(_rolling(max_unavailable=1), NODES, pods, "new", now=100.0)
    assert [(pod.spec.node_name, why) for pod, why in plan.delete] == [("n1", "rolling update to new")]
    plan = plan_daemon_set(_rolling(max_unavailable="50%"), NODES, pods, "new", now=100.0)  # 1.5 rounds up
    assert len(plan.delete) == 2
    # one node already mid-update (its new pod not ready yet): no room for another
    pods["n1"] = [_daemon_pod("n1", "new", ready=False)]
    plan = plan_daemon_set(_rolling(max_unavailable=1), NODES, pods, "new", now=100.0)
    assert plan.delete == []


def test_rolling_update_max_surge_starts_the_new_pod_before_the_old_one_goes() -> None:
    pods = {name: [_daemon_pod(name, "old")] for name in ("n1", "n2", "n3")}
    plan = plan_daemon_set(_rolling(max_unavailable=0, max_surge=1), NODES, pods, "new", now=100.0)
    assert plan.create_on == ["n1"] and plan.delete == []
    pods["n1"].append(_daemon_pod("n1", "new", name="ds-n1-new"))  # the surge pod is ready: the old one goes
    plan = plan_daemon_set(_rolling(max_unavailable=0, max_surge=1), NODES, pods, "new", now=100.0)
    assert [(pod.metadata.name, why) for pod, why in plan.delete] == [("ds-n1-old", "rolling update to new")]
    assert plan.create_on == ["n2"]


# =========================================================================== scenario: rollback
def test_a_rollback_renumbers_the_earlier_revision() -> None:
    """``constructHistory`` (pkg/controller/daemon/update.go): a template equal to an earlier
    revision reuses it and raises its number to the highest other one + 1 ("Update revision
    number if necessary")."""
    from chaoskube.api.manifests import to_dict
    from chaoskube.controllers.daemonset import DaemonSetController
    from tests.controllers.test_replicaset import eventually, scenario

    async def story(world, client):
        ds = to_dict(_daemon_set({"containers": [{"name": "d", "image": "v1"}]}))
        ds["metadata"].pop("uid", None)
        ds.pop("status", None)
        await client.create(from_dict(ds))

        async def history(count):
            items = (await client.list("controllerrevisions", "default")).items
            return {revision.data["spec"]["template"]["spec"]["containers"][0]["image"]: revision.revision for revision in items} if len(items) == count else None

        steps = [await eventually(world, lambda: history(1))]
        for image, count in (("v2", 2), ("v1", 2)):
            await client.patch("daemonsets", "default", "ds", {"spec": {"template": {"spec": {"containers": [{"name": "d", "image": image}]}}}})
            await world.sleep(5.0)
            steps.append(await eventually(world, lambda count=count: history(count)))
        return steps

    world, steps = scenario(story, builders=[lambda process, client, factory, config: DaemonSetController(process, client, factory, config)])
    assert steps == [{"v1": 1}, {"v1": 1, "v2": 2}, {"v1": 3, "v2": 2}]


def test_old_revisions_beyond_the_history_limit_are_deleted() -> None:
    """``cleanupHistory``: with ``revisionHistoryLimit`` 1, four templates leave the current
    revision and the newest old one (no pod carries the others)."""
    from chaoskube.api.manifests import to_dict
    from chaoskube.controllers.daemonset import DaemonSetController
    from tests.controllers.test_replicaset import eventually, scenario

    async def story(world, client):
        ds = to_dict(_daemon_set({"containers": [{"name": "d", "image": "v1"}]}))
        ds["metadata"].pop("uid", None)
        ds.pop("status", None)
        ds["spec"]["revisionHistoryLimit"] = 1
        await client.create(from_dict(ds))

        async def history():
            items = (await client.list("controllerrevisions", "default")).items
            return sorted((revision.revision, revision.data["spec"]["template"]["spec"]["containers"][0]["image"]) for revision in items)

        for image in ("v2", "v3", "v4"):
            await world.sleep(2.0)
            await client.patch("daemonsets", "default", "ds", {"spec": {"template": {"spec": {"containers": [{"name": "d", "image": image}]}}}})
        return await eventually(world, lambda: _settled(history))

    async def _settled(history):
        got = await history()
        return got if got and got[-1][1] == "v4" and len(got) == 2 else None

    world, kept = scenario(story, builders=[lambda process, client, factory, config: DaemonSetController(process, client, factory, config)])
    assert kept == [(3, "v3"), (4, "v4")]

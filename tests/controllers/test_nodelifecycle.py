"""The node lifecycle controller and its taint manager (kubernetes
``pkg/controller/nodelifecycle``, ``pkg/controller/tainteviction``).

Pure helpers table by table (zone states, the disruption plan, node health as locally
observed, tolerations, the token bucket and the rate-limited timed queue, taints), then
scenarios against a real API server over etcd (:mod:`tests.apiserver.apiserver_harness`): kubelet
stand-ins register Nodes and renew their Leases in ``kube-node-lease`` as
``system:node:<name>``; the controller runs in its own process as
``system:kube-controller-manager`` with its own informers.

1. a kubelet that stops: the node goes Unknown after the 40 s grace, is tainted
   unreachable (NoSchedule and NoExecute); its pods are marked NotReady; a pod that does not
   tolerate the taint is deleted at once, one that tolerates it for 30 s after 30 s, one
   that tolerates it forever stays; the kubelet comes back before 300 s: the taints go and
   the default-toleration pod is not deleted;
2. every kubelet stops: full disruption, no NoExecute taint stays and no pod is deleted;
3. two of four nodes stop: the zone stays Normal, its token bucket taints them 10 s apart
   (``node_eviction_rate`` 0.1), a pod with the default tolerations goes after 300 s;
4. the same seed gives the same journal.
"""

import pytest

from chaoskube.api.identity import admin_credentials, node_credentials, user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import Lease, LeaseSpec, Node, NodeCondition, NodeStatus, ObjectMeta, PodCondition, Taint, Toleration
from chaoskube.api.protocol import micro_timestamp, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.nodelifecycle import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    ZONE_FULL_DISRUPTION,
    ZONE_INITIAL,
    ZONE_NORMAL,
    ZONE_PARTIAL_DISRUPTION,
    NodeHealth,
    NodeLifecycleController,
    RateLimitedTimedQueue,
    TokenBucket,
    compute_zone_state,
    condition_taints,
    get_matching_tolerations,
    min_toleration_time_s,
    node_health_step,
    plan_disruption,
    swap_taints,
    taint_set_diff,
    tolerates,
    zone_key,
)
from tests.apiserver.apiserver_harness import run_api

CONFIG = ControllerManagerConfig()
SERVERS = ["kube-apiserver-1"]
ZONE = "topology.kubernetes.io/zone"


# =========================================================================== zones
@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([], (0, ZONE_NORMAL)),
        (["True"], (0, ZONE_NORMAL)),
        (["Unknown"], (1, ZONE_FULL_DISRUPTION)),
        ([None, "False"], (2, ZONE_FULL_DISRUPTION)),  # no Ready condition counts as not ready
        (["False", "False", "True", "True"], (2, ZONE_NORMAL)),  # notReady > 2 is needed
        (["False", "False", "False", "True", "True"], (3, ZONE_PARTIAL_DISRUPTION)),  # 60% >= 55%
        (["False", "False", "False", "True", "True", "True"], (3, ZONE_NORMAL)),  # 50% < 55%
        (["Unknown"] * 11 + ["True"] * 9, (11, ZONE_PARTIAL_DISRUPTION)),  # exactly 55%: >=
    ],
)
def test_compute_zone_state(statuses, expected):
    assert compute_zone_state(statuses, 0.55) == expected


def test_zone_key_is_region_nul_zone_and_beta_labels_win():
    def node(labels):
        return Node(metadata=ObjectMeta(name="n", labels=labels))

    assert zone_key(node({})) == ""
    assert zone_key(node({ZONE: "a"})) == ":\x00:a"
    assert zone_key(node({ZONE: "a", "topology.kubernetes.io/region": "r"})) == "r:\x00:a"
    assert zone_key(node({ZONE: "a", "failure-domain.beta.kubernetes.io/zone": "b"})) == ":\x00:b"


def test_plan_disruption_enters_master_disruption_mode_only_when_every_zone_is_down():
    normal = {"a": ZONE_NORMAL, "b": ZONE_NORMAL}
    one_down = plan_disruption(normal, {"a": ["Unknown"], "b": ["True"]}, CONFIG)
    assert one_down.mode == "zones" and one_down.states == {"a": ZONE_FULL_DISRUPTION, "b": ZONE_NORMAL}
    # A fully disrupted zone among healthy ones keeps tainting at the normal rate (HealthyQPSFunc).
    assert one_down.limiters == {"a": CONFIG.node_eviction_rate} and one_down.changes == [("a", ZONE_FULL_DISRUPTION)]
    all_down = plan_disruption(one_down.states, {"a": ["Unknown"], "b": ["Unknown", None]}, CONFIG)
    assert all_down.mode == "enter" and all_down.limiters == {"a": 0.0, "b": 0.0}
    assert all_down.states == {"a": ZONE_FULL_DISRUPTION, "b": ZONE_FULL_DISRUPTION} and all_down.changes == [("b", ZONE_FULL_DISRUPTION)]
    still_down = plan_disruption(all_down.states, {"a": ["Unknown"], "b": ["Unknown"]}, CONFIG)
    assert still_down.mode == "none" and still_down.limiters == {} and still_down.changes == []
    back = plan_disruption(all_down.states, {"a": ["Unknown"], "b": ["True", "Unknown"]}, CONFIG)
    assert back.mode == "exit" and back.limiters == {"a": CONFIG.node_eviction_rate, "b": CONFIG.node_eviction_rate}
    assert back.states == {"a": ZONE_FULL_DISRUPTION, "b": ZONE_NORMAL} and back.changes == [("b", ZONE_NORMAL)]


def test_plan_disruption_partial_zones_stop_in_small_clusters_and_slow_down_in_large_ones():
    small = ["Unknown"] * 3 + ["True"] * 2
    plan = plan_disruption({"a": ZONE_NORMAL, "b": ZONE_NORMAL}, {"a": small, "b": ["True"]}, CONFIG)
    assert plan.states["a"] == ZONE_PARTIAL_DISRUPTION and plan.limiters == {"a": 0.0}
    large = ["Unknown"] * 40 + ["True"] * 20  # 60 nodes > large_cluster_size_threshold (50)
    plan = plan_disruption({"a": ZONE_NORMAL, "b": ZONE_NORMAL}, {"a": large, "b": ["True"]}, CONFIG)
    assert plan.limiters == {"a": CONFIG.secondary_node_eviction_rate}


def test_plan_disruption_new_zones_start_initial_and_zones_without_nodes_are_dropped():
    plan = plan_disruption({"gone": ZONE_NORMAL}, {"new": ["True"]}, CONFIG)
    assert plan.states == {"new": ZONE_NORMAL} and plan.changes == [("new", ZONE_NORMAL)]
    # At start, a cluster whose only zone has no Ready node enters master disruption mode.
    assert plan_disruption({}, {"z": ["Unknown"]}, CONFIG).mode == "enter"
    assert plan_disruption({"z": ZONE_INITIAL}, {}, CONFIG).mode == "none"


# =========================================================================== node health
def ready(status="True", heartbeat=0.0, transition=0.0, reason="KubeletReady"):
    return NodeCondition(type="Ready", status=status, reason=reason, last_heartbeat_time=timestamp(heartbeat), last_transition_time=timestamp(transition))


def node_with(*conditions, created=0.0):
    return Node(metadata=ObjectMeta(name="n1", creation_timestamp=timestamp(created)), status=NodeStatus(conditions=list(conditions)))


def lease_renewed_at(seconds):
    return Lease(metadata=ObjectMeta(name="n1", namespace="kube-node-lease"), spec=LeaseSpec(holder_identity="n1", renew_time=micro_timestamp(seconds)))


def step(saved, node, lease, now):
    return node_health_step(saved, node, lease, now, grace_period_s=40.0, startup_grace_period_s=60.0)


def test_health_is_judged_on_local_observation_not_on_the_kubelets_clock():
    node = node_with(ready(heartbeat=5000.0))  # a heartbeat written by a clock far ahead
    first = step(None, node, None, 100.0)
    assert first.health.probe_timestamp == 100.0 and first.status_update is None
    # The same heartbeat, 41 s later by our clock: silent for longer than the grace.
    late = step(first.health, node, None, 141.0)
    assert late.status_update is not None and late.current_ready.status == "Unknown"
    assert late.current_ready.reason == "NodeStatusUnknown" and late.current_ready.message == "Kubelet stopped posting node status."
    assert late.observed_ready.status == "True" and late.health_after_update.ready_transition_timestamp == 141.0


def test_a_changed_heartbeat_or_a_renewed_lease_moves_the_probe_time():
    node = node_with(ready(heartbeat=10.0))
    base = step(None, node, lease_renewed_at(10.0), 100.0).health
    assert base.has_lease and base.probe_timestamp == 100.0
    renewed = step(base, node, lease_renewed_at(20.0), 130.0).health
    assert renewed.probe_timestamp == 130.0
    not_renewed = step(renewed, node, lease_renewed_at(20.0), 160.0)
    assert not_renewed.health.probe_timestamp == 130.0 and not_renewed.status_update is None
    beat = step(renewed, node_with(ready(heartbeat=11.0)), lease_renewed_at(20.0), 165.0).health
    assert beat.probe_timestamp == 165.0 and beat.ready_transition_timestamp == 100.0  # same transition time
    # A heartbeat change drops the saved lease (upstream builds a fresh record), so the
    # next pass counts the unchanged lease as renewed.
    assert not beat.has_lease and step(beat, node_with(ready(heartbeat=11.0)), lease_renewed_at(20.0), 170.0).health.probe_timestamp == 170.0


def test_a_node_that_never_posted_status_gets_the_startup_grace_and_never_updated_conditions():
    node = node_with(created=0.0)
    first = step(None, node, None, 30.0)
    assert first.grace_period_s == 60.0 and first.current_ready is None and first.status_update is None
    assert first.health.probe_timestamp == 0.0  # its creation time
    late = step(first.health, node, None, 61.0)
    types = {c.type: (c.status, c.reason, c.message) for c in late.status_update}
    assert types == {kind: ("Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.") for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")}


def test_silence_sets_the_pressure_conditions_unknown_but_not_network_unavailable():
    pressure = NodeCondition(type="MemoryPressure", status="False", reason="KubeletHasSufficientMemory")
    network = NodeCondition(type="NetworkUnavailable", status="False", reason="RouteCreated")
    node = node_with(ready(), pressure, network)
    late = step(NodeHealth(0.0, 0.0, ready()), node, None, 41.0)
    statuses = {c.type: c.status for c in late.status_update}
    assert statuses == {"Ready": "Unknown", "MemoryPressure": "Unknown", "NetworkUnavailable": "False", "DiskPressure": "Unknown", "PIDPressure": "Unknown"}
    # Already Unknown: nothing more to post.
    unknown = node_with(*late.status_update)
    assert step(late.health_after_update, unknown, None, 80.0).status_update is None


# =========================================================================== tolerations and taints
@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration(operator="Exists"), UNREACHABLE_TAINT, True),  # empty key and effect: everything
        (Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"), UNREACHABLE_TAINT, True),
        (Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoSchedule"), UNREACHABLE_TAINT, False),
        (Toleration(key="node.kubernetes.io/unreachable", effect="NoExecute"), UNREACHABLE_TAINT, True),  # "" is Equal, values ""
        (Toleration(key="node.kubernetes.io/unreachable", operator="Equal", value="x"), UNREACHABLE_TAINT, False),
        (Toleration(key="node.kubernetes.io/not-ready", operator="Exists"), UNREACHABLE_TAINT, False),
        (Toleration(key="k", operator="Lt", value="1"), Taint(key="k", effect="NoExecute"), False),
    ],
)
def test_tolerates_taint(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_matching_tolerations_and_min_toleration_time():
    short = Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute", toleration_seconds=30)
    forever = Toleration(operator="Exists")
    assert get_matching_tolerations([], []) == (True, [])
    assert get_matching_tolerations([UNREACHABLE_TAINT], []) == (False, [])
    assert get_matching_tolerations([UNREACHABLE_TAINT, NOT_READY_TAINT], [short]) == (False, [])
    assert get_matching_tolerations([UNREACHABLE_TAINT, NOT_READY_TAINT], [short, forever]) == (True, [short, forever])
    assert min_toleration_time_s([short, forever]) == 30.0
    assert min_toleration_time_s([forever]) == -1.0
    assert min_toleration_time_s([Toleration(operator="Exists", toleration_seconds=-5), short]) == 0.0
    assert min_toleration_time_s([]) == 0.0


def test_swap_taints_condition_taints_and_diff():
    old = Taint(key="node.kubernetes.io/unreachable", effect="NoExecute", time_added=timestamp(1))
    assert swap_taints([old], [Taint(key=old.key, effect="NoExecute", time_added=timestamp(9))], []) is None  # kept as it is
    assert swap_taints([old], [NOT_READY_TAINT], [UNREACHABLE_TAINT]) == [NOT_READY_TAINT]
    assert swap_taints([], [], [UNREACHABLE_TAINT]) is None
    node = node_with(ready("Unknown"), NodeCondition(type="DiskPressure", status="True"))
    node.spec.unschedulable = True
    assert [t.key for t in condition_taints(node)] == ["node.kubernetes.io/unreachable", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/unschedulable"]
    assert all(t.effect == "NoSchedule" for t in condition_taints(node))
    add, remove = taint_set_diff([Taint(key="a", effect="NoSchedule")], [Taint(key="b", effect="NoSchedule")])
    assert [t.key for t in add] == ["a"] and [t.key for t in remove] == ["b"]


# =========================================================================== rate limiting
def test_token_bucket_starts_full_and_refills_at_its_rate():
    bucket = TokenBucket(0.1, 1, now=0.0)
    assert bucket.try_accept(0.0) and not bucket.try_accept(0.0) and not bucket.try_accept(9.9)
    assert bucket.try_accept(10.0) and not bucket.try_accept(10.0)
    assert bucket.try_accept(1000.0) and not bucket.try_accept(1000.0)  # burst 1: no saving up
    assert not TokenBucket(0.0, 1, now=0.0).try_accept(5.0)


def test_rate_limited_timed_queue_taints_one_node_per_token_and_once_until_removed():
    queue = RateLimitedTimedQueue(0.1, now=0.0)
    assert queue.add("a", "uid-a", 0.0) and queue.add("b", "uid-b", 0.0) and not queue.add("a", "uid-a", 1.0)
    first = queue.next_due(0.0)
    assert first.value == "a"
    queue.finish(first, True, 0.0, 0.0)
    assert queue.next_due(0.1) is None  # no token for 10 s
    second = queue.next_due(10.0)
    assert second.value == "b"
    queue.finish(second, False, 0.05, 10.0)  # failed: retried after 50 ms
    assert queue.next_due(10.01) is None and len(queue) == 1
    assert queue.next_due(20.0).value == "b"
    assert not queue.add("a", "uid-a", 30.0)  # processed, still a member
    assert queue.remove("a") and queue.add("a", "uid-a", 30.0)


def test_swap_limiter_to_zero_stops_and_back_drains_when_the_old_bucket_was_empty():
    queue = RateLimitedTimedQueue(0.1, now=0.0)
    queue.add("a", "u", 0.0)
    assert queue.next_due(0.0) is not None  # token used
    queue.swap_limiter(0.0, 1.0)
    assert queue.next_due(100.0) is None
    queue.swap_limiter(0.1, 100.0)  # the never-limiter "had no token": the new one is drained
    assert queue.next_due(100.0) is None and queue.next_due(110.0) is not None


# =========================================================================== scenarios
def kubelet(name, zone):
    """A kubelet stand-in: registers its Node Ready (again on restart) and renews its Lease
    every 10 s (nodeLeaseDurationSeconds 40 / 4)."""

    async def main(process):
        client = ApiClient(process, SERVERS, node_credentials(name))
        now = process.now()
        condition = NodeCondition(type="Ready", status="True", reason="KubeletReady", message="kubelet is posting ready status", last_heartbeat_time=timestamp(now), last_transition_time=timestamp(now))
        try:
            await client.create(Node(metadata=ObjectMeta(name=name, labels={ZONE: zone}), status=NodeStatus(conditions=[condition])))
        except ApiError as error:
            assert error.code == 409, error
            node = await client.get("nodes", "", name)
            node.status.conditions = [c for c in node.status.conditions if c.type != "Ready"] + [condition]
            await client.update_status(node)
        while True:
            try:
                lease = await client.get("leases", "kube-node-lease", name)
                lease.spec.renew_time = micro_timestamp(process.now())
                await client.update(lease)
            except ApiError as error:
                if error.code != 404:
                    raise
                spec = LeaseSpec(holder_identity=name, lease_duration_seconds=40, renew_time=micro_timestamp(process.now()))
                await client.create(Lease(metadata=ObjectMeta(name=name, namespace="kube-node-lease"), spec=spec))
            await process.sleep(10.0)

    return main


def controller(config=CONFIG):
    async def main(process):
        client = ApiClient(process, SERVERS, user_credentials("system:kube-controller-manager"))
        factory = SharedInformerFactory(client)
        node_lifecycle = NodeLifecycleController(process, client, factory, config)
        factory.start()
        await node_lifecycle.run()

    return main


async def create_running_pod(world, name, node, tolerations=()):
    admin = world.processes["client"]
    client = ApiClient(admin, SERVERS, admin_credentials())
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app"}], "tolerations": list(tolerations)},
    }
    pod = await client.create(from_dict(manifest))
    pod.status.phase = "Running"
    pod.status.pod_ip = "10.0.0.1"
    pod.status.conditions = [PodCondition(type="Ready", status="True", last_transition_time=timestamp(admin.now()))]
    return await client.update_status(pod)


def events(world, kind, **match):
    return [e for e in world.journal.of_type(kind) if all(e.get(k) == v for k, v in match.items())]


def not_matching_unreachable():
    # A toleration of the unreachable key keeps DefaultTolerationSeconds away, and its value
    # does not match the taint's: the pod does not tolerate it.
    return {"key": "node.kubernetes.io/unreachable", "operator": "Equal", "value": "x", "effect": "NoExecute"}


def test_a_silent_node_is_tainted_its_pods_evicted_by_their_tolerations_and_untainted_on_return():
    outcome = {}

    async def story(world, caller, registry):
        for name in ("a", "b", "c"):
            world.spawn(f"kubelet-{name}", kubelet(name, "z1"), role="kubelet")
        await world.sleep(1.0)
        await create_running_pod(world, "intolerant", "a", [not_matching_unreachable()])
        await create_running_pod(world, "short", "a", [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}])
        await create_running_pod(world, "default", "a")
        await create_running_pod(world, "forever", "a", [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}])
        await create_running_pod(world, "bystander", "b")
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        await world.sleep(20.0)
        stopped = outcome["stopped"] = world.now
        world.process("kubelet-a").kill()
        tainted = await wait_for(world, lambda: events(world, "node-taint", node="a", taint="node.kubernetes.io/unreachable", effect="NoExecute", action="added"), 120.0)
        outcome["tainted"] = tainted[0]["t"]
        await world.sleep(60.0)  # past the 30 s toleration, well before 300 s
        outcome["pods_while_down"] = {p.metadata.name: p for p in (await caller("list", "pods", namespace="default")).items}
        outcome["node_while_down"] = (await caller("get", "nodes", name="a")).object
        world.process("kubelet-a").restart()
        await world.sleep(30.0)
        outcome["node_back"] = (await caller("get", "nodes", name="a")).object
        outcome["pods_back"] = {p.metadata.name: p for p in (await caller("list", "pods", namespace="default")).items}
        assert world.now - stopped < 400.0

    world, _ = run_api(story, seed=3)
    health = events(world, "node-health", node="a")
    assert [e["ready"] for e in health] == ["True", "Unknown", "True"]
    unknown_at = health[1]["t"]
    # Silent for the 40 s grace after the last renewal the controller saw (the kubelet renewed
    # at most 10 s before it stopped), found by a pass that comes every 5 s.
    assert outcome["stopped"] + 40.0 - 10.0 < unknown_at <= outcome["stopped"] + 40.0 + 5.0 + 1.0
    assert health[1]["reason"] == "NodeStatusUnknown"
    assert unknown_at < outcome["tainted"] <= unknown_at + 5.0 + 1.0  # the next monitor pass queues it
    assert events(world, "node-taint", node="a", taint="node.kubernetes.io/unreachable", effect="NoSchedule", action="added")
    evictions = {e["pod"]: e for e in events(world, "taint-eviction")}
    assert sorted(evictions) == ["default/intolerant", "default/short"]
    assert evictions["default/intolerant"]["after_s"] == 0.0 and evictions["default/short"]["after_s"] == 30.0
    assert outcome["tainted"] <= evictions["default/intolerant"]["t"] < outcome["tainted"] + 1.0
    assert outcome["tainted"] + 30.0 <= evictions["default/short"]["t"] < outcome["tainted"] + 31.0
    down = outcome["pods_while_down"]
    for name in ("intolerant", "short"):
        assert down[name].metadata.deletion_timestamp is not None
        assert any(c.type == "DisruptionTarget" and c.reason == "DeletionByTaintManager" for c in down[name].status.conditions)
    for name in ("default", "forever", "bystander"):
        assert down[name].metadata.deletion_timestamp is None
    for name in ("default", "forever", "intolerant", "short"):
        assert [c.status for c in down[name].status.conditions if c.type == "Ready"] == ["False"]  # MarkPodsNotReady
    assert [c.status for c in down["bystander"].status.conditions if c.type == "Ready"] == ["True"]
    assert {(t.key, t.effect) for t in outcome["node_while_down"].spec.taints} == {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}
    assert outcome["node_back"].spec.taints == []
    assert outcome["pods_back"]["default"].metadata.deletion_timestamp is None  # cancelled by the return
    removed = {(e["taint"], e["effect"]) for e in events(world, "node-taint", node="a", action="removed")}
    assert removed == {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}
    assert not events(world, "node-taint", node="b") and not events(world, "node-health", node="b", ready="Unknown")


async def wait_for(world, predicate, within_s, every_s=0.5):
    deadline = world.now + within_s
    while world.now < deadline:
        found = predicate()
        if found:
            return found
        await world.sleep(every_s)
    raise AssertionError(f"not within {within_s} s")


def test_when_every_node_is_silent_nothing_is_tainted_or_evicted():
    outcome = {}

    async def story(world, caller, registry):
        for name in ("a", "b"):
            world.spawn(f"kubelet-{name}", kubelet(name, "z1"), role="kubelet")
        await world.sleep(1.0)
        await create_running_pod(world, "intolerant", "a", [not_matching_unreachable()])
        await create_running_pod(world, "default", "b")
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        await world.sleep(20.0)
        for name in ("a", "b"):
            world.process(f"kubelet-{name}").kill()
        await world.sleep(120.0)
        outcome["nodes"] = {n.metadata.name: n for n in (await caller("list", "nodes")).items}
        outcome["pods"] = {p.metadata.name: p for p in (await caller("list", "pods", namespace="default")).items}

    world, _ = run_api(story, seed=5)
    assert [e["state"] for e in events(world, "zone-state", zone="z1")] == ["Normal", "FullDisruption"]
    assert [e["event"] for e in events(world, "node-disruption-mode")] == ["enter"]
    assert not events(world, "taint-eviction")
    for node in outcome["nodes"].values():
        assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["Unknown"]
        assert not [t for t in node.spec.taints if t.effect == "NoExecute"]
        assert ("node.kubernetes.io/unreachable", "NoSchedule") in {(t.key, t.effect) for t in node.spec.taints}
    for pod in outcome["pods"].values():
        assert pod.metadata.deletion_timestamp is None
        assert [c.status for c in pod.status.conditions if c.type == "Ready"] == ["False"]
    assert ZONE_FULL_DISRUPTION == "FullDisruption"


def test_a_zone_taints_one_node_per_ten_seconds_and_default_tolerations_last_300_s():
    outcome = {}

    async def story(world, caller, registry):
        for name in ("a", "b", "c", "d"):
            world.spawn(f"kubelet-{name}", kubelet(name, "z1"), role="kubelet")
        await world.sleep(1.0)
        await create_running_pod(world, "default", "a")  # DefaultTolerationSeconds: 300 s
        await create_running_pod(world, "forever", "b", [{"operator": "Exists"}])
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        await world.sleep(20.0)
        for name in ("a", "b"):  # 2 of 4 not ready: the zone stays Normal
            world.process(f"kubelet-{name}").kill()
        await world.sleep(420.0)
        outcome["pods"] = {p.metadata.name: p for p in (await caller("list", "pods", namespace="default")).items}

    world, _ = run_api(story, seed=7)
    tainted = {e["node"]: e["t"] for e in events(world, "node-taint", effect="NoExecute", action="added")}
    assert sorted(tainted) == ["a", "b"]
    assert abs(tainted["a"] - tainted["b"]) >= 10.0 - 1e-6  # node_eviction_rate 0.1/s, burst 1
    assert [e["state"] for e in events(world, "zone-state", zone="z1")] == ["Normal"]
    [eviction] = events(world, "taint-eviction")
    assert (eviction["pod"], eviction["after_s"]) == ("default/default", 300.0)
    assert tainted["a"] + 300.0 <= eviction["t"] < tainted["a"] + 301.0
    assert outcome["pods"]["default"].metadata.deletion_timestamp is not None
    assert outcome["pods"]["forever"].metadata.deletion_timestamp is None


def test_the_same_seed_gives_the_same_journal():
    def once():
        async def story(world, caller, registry):
            world.spawn("kubelet-a", kubelet("a", "z1"), role="kubelet")
            world.spawn("kube-controller-manager", controller(), role="controller-manager")
            await world.sleep(10.0)
            world.process("kubelet-a").kill()
            await world.sleep(60.0)

        world, _ = run_api(story, seed=11)
        return world.fingerprint, len(events(world, "node-health"))

    first, second = once(), once()
    assert first == second and first[1] == 2

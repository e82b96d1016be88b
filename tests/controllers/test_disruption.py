"""The disruption controller (kubernetes ``pkg/controller/disruption``).

The PDB arithmetic table by table, with the cases of upstream's ``disruption_test.go``
(``TestReplicaSet``, ``TestIntegerMaxUnavailableWithScaling``,
``TestPercentageMaxUnavailableWithScaling``, ``TestNakedPod``, ``TestIntegerMaxUnavailable``,
``TestReplicationController``'s rounding and rogue pod, ``TestTwoControllers``' 28%), the
disrupted-pods map and its 2 minute timeout, conditions and the fail-safe status; then
scenarios against a real API server: the controller's status drives the eviction
subresource (``client.evict``), and a PDB whose pods' controller is missing fails safe.
"""

import pytest

from chaoskube.api.identity import admin_credentials, user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import (
    Condition,
    Deployment,
    DeploymentSpec,
    LabelSelector,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
    ReplicaSet,
    ReplicaSetSpec,
)
from chaoskube.api.protocol import timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import SharedInformerFactory
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.disruption import (
    ControllerNotFound,
    DisruptionController,
    build_disrupted_pod_map,
    conditions_up_to_date,
    count_healthy_pods,
    expected_pod_count,
    fail_safe_status,
    pdb_selects,
    pdb_status,
    set_status_condition,
)
from tests.apiserver.apiserver_harness import run_api

SERVERS = ["kube-apiserver-1"]
LABELS = {"app": "web"}


# =========================================================================== pure helpers
def pdb(min_available=None, max_unavailable=None, selector=LabelSelector(match_labels=LABELS), generation=1, status=None):
    spec = PodDisruptionBudgetSpec(min_available=min_available, max_unavailable=max_unavailable, selector=selector)
    return PodDisruptionBudget(metadata=ObjectMeta(name="pdb", namespace="default", generation=generation), spec=spec, status=status or PodDisruptionBudgetStatus())


def pod(name, ready=True, owner=None, labels=LABELS, deleting=False):
    conditions = [PodCondition(type="Ready", status="True" if ready else "False")]
    meta = ObjectMeta(name=name, namespace="default", labels=dict(labels), owner_references=[owner] if owner else [])
    if deleting:
        meta.deletion_timestamp = timestamp(1.0)
    result = Pod(metadata=meta)
    result.status.conditions = conditions
    return result


def replica_set(name, replicas, uid=None, owner=None):
    meta = ObjectMeta(name=name, namespace="default", uid=uid or f"uid-{name}", owner_references=[owner] if owner else [])
    return ReplicaSet(metadata=meta, spec=ReplicaSetSpec(replicas=replicas))


def deployment(name, replicas):
    return Deployment(metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"), spec=DeploymentSpec(replicas=replicas))


def owned_by(obj, kind="ReplicaSet", api_version="apps/v1"):
    return OwnerReference(api_version=api_version, kind=kind, name=obj.metadata.name, uid=obj.metadata.uid, controller=True)


def lookup_of(*objects):
    table = {(type(obj).RESOURCE, obj.metadata.namespace, obj.metadata.name): obj for obj in objects}
    return lambda resource, namespace, name: table.get((resource, namespace, name))


def compute(budget, pods, lookup=lookup_of(), now=100.0):
    """trySync without I/O: (disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)."""
    selected = [p for p in pods if pdb_selects(budget, p)]
    expected, desired, _ = expected_pod_count(budget, selected, lookup)
    disrupted, _ = build_disrupted_pod_map(selected, budget.status.disrupted_pods, now)
    healthy = count_healthy_pods(selected, disrupted, now)
    status = pdb_status(budget, healthy, desired, expected, disrupted, now)
    return (status.disruptions_allowed, status.current_healthy, status.desired_healthy, status.expected_pods)


def test_integer_min_available_counts_the_pods_themselves():
    # disruption_test.go: minAvailable 3, pods added one by one, then one unavailable.
    pods = [pod(f"p{i}") for i in range(4)]
    for count in range(4):
        assert compute(pdb(min_available=3), pods[:count]) == (0, count, 3, count)
    assert compute(pdb(min_available=3), pods) == (1, 4, 3, 4)
    pods[0] = pod("p0", ready=False)
    assert compute(pdb(min_available=3), pods) == (0, 3, 3, 4)


def test_percentages_use_the_controllers_scale_and_round_up():
    rs = replica_set("rs", 10)
    assert compute(pdb(min_available="20%"), [pod("p", owner=owned_by(rs))], lookup_of(rs)) == (0, 1, 2, 10)  # TestReplicaSet
    for replicas, expected in ((7, (0, 1, 5, 7)), (5, (0, 1, 3, 5))):  # TestIntegerMaxUnavailableWithScaling
        rs = replica_set("rs", replicas)
        assert compute(pdb(max_unavailable=2), [pod("p", owner=owned_by(rs))], lookup_of(rs)) == expected
    for replicas, expected in ((7, (0, 1, 4, 7)), (3, (0, 1, 2, 3))):  # TestPercentageMaxUnavailableWithScaling: 30% rounds up
        rs = replica_set("rs", replicas)
        assert compute(pdb(max_unavailable="30%"), [pod("p", owner=owned_by(rs))], lookup_of(rs)) == expected


def test_34_percent_of_three_rounds_up_to_two_and_a_rogue_pod_is_counted_healthy_not_expected():
    rs = replica_set("rs", 3)
    pods = [pod(f"p{i}", owner=owned_by(rs)) for i in range(3)]
    assert compute(pdb(min_available="34%"), pods[:2], lookup_of(rs)) == (0, 2, 2, 3)
    assert compute(pdb(min_available="34%"), pods, lookup_of(rs)) == (1, 3, 2, 3)
    assert compute(pdb(min_available="34%"), pods + [pod("rogue")], lookup_of(rs)) == (2, 4, 2, 3)


def test_deployment_scale_is_used_for_its_replica_sets_pods():
    d = deployment("web", 11)
    rs = replica_set("web-1", 11, owner=owned_by(d, "Deployment"))
    pods = [pod(f"p{i}", owner=owned_by(rs)) for i in range(5)]
    assert compute(pdb(min_available="28%"), pods, lookup_of(d, rs)) == (1, 5, 4, 11)  # 28% of 11 -> 4
    rs2 = replica_set("other", 11)
    pods += [pod(f"q{i}", owner=owned_by(rs2)) for i in range(7)]
    assert compute(pdb(min_available="28%"), pods, lookup_of(d, rs, rs2)) == (5, 12, 7, 22)  # 28% of 22 -> 7


def test_unmanaged_pods_do_not_count_towards_a_percentage_or_max_unavailable():
    assert compute(pdb(min_available="28%"), [pod("naked")]) == (0, 1, 0, 0)  # TestNakedPod
    assert compute(pdb(max_unavailable=1), [pod("naked")]) == (0, 1, 0, 0)  # TestIntegerMaxUnavailable
    assert compute(pdb(max_unavailable=1), []) == (0, 0, 0, 0)
    assert expected_pod_count(pdb(max_unavailable=1), [pod("naked")], lookup_of())[2] == ["naked"]


def test_a_missing_or_unknown_controller_cannot_be_computed():
    rs = replica_set("rs", 3)
    with pytest.raises(ControllerNotFound, match='found no controllers for pod "p"'):
        expected_pod_count(pdb(min_available="50%"), [pod("p", owner=owned_by(rs))], lookup_of())
    with pytest.raises(ControllerNotFound):  # a uid that is not the ReplicaSet's
        expected_pod_count(pdb(min_available="50%"), [pod("p", owner=owned_by(replica_set("rs", 3, uid="other")))], lookup_of(rs))
    statefulset = OwnerReference(api_version="apps/v1", kind="StatefulSet", name="db", uid="u", controller=True)
    with pytest.raises(ControllerNotFound):
        expected_pod_count(pdb(max_unavailable=1), [pod("p", owner=statefulset)], lookup_of())
    d = deployment("web", 2)
    orphaned = replica_set("web-1", 2, owner=owned_by(d, "Deployment"))  # its Deployment is gone
    with pytest.raises(ControllerNotFound):
        expected_pod_count(pdb(max_unavailable=1), [pod("p", owner=owned_by(orphaned))], lookup_of(orphaned))
    # An integer minAvailable never looks for controllers.
    assert expected_pod_count(pdb(min_available=1), [pod("p", owner=statefulset)], lookup_of()) == (1, 1, [])


def test_selectors_missing_empty_and_other_namespaces():
    assert not pdb_selects(pdb(min_available=1, selector=None), pod("p"))
    assert pdb_selects(pdb(min_available=1, selector=LabelSelector()), pod("p", labels={}))
    elsewhere = pod("p")
    elsewhere.metadata.namespace = "other"
    assert not pdb_selects(pdb(min_available=1), elsewhere)


def test_disrupted_pods_are_kept_two_minutes_unless_deleted():
    disrupted = {"young": timestamp(50.0), "old": timestamp(10.0), "deleting": timestamp(60.0), "gone": timestamp(60.0)}
    pods = [pod("young"), pod("old"), pod("deleting", deleting=True), pod("other")]
    kept, recheck_at = build_disrupted_pod_map(pods, disrupted, now=140.0)
    assert kept == {"young": timestamp(50.0)} and recheck_at == 170.0
    assert count_healthy_pods(pods, kept, 140.0) == 2  # old and other; young is expected to go
    assert count_healthy_pods(pods, kept, 171.0) == 3
    budget = pdb(min_available=1, status=PodDisruptionBudgetStatus(disrupted_pods=disrupted))
    assert compute(budget, pods, now=140.0) == (1, 2, 1, 4)


def test_status_is_written_only_when_something_changed_and_carries_the_condition():
    budget = pdb(min_available=1)
    first = pdb_status(budget, 2, 1, 2, {}, 10.0)
    assert (first.disruptions_allowed, first.observed_generation) == (1, 1)
    [condition] = first.conditions
    assert (condition.type, condition.status, condition.reason, condition.last_transition_time) == ("DisruptionAllowed", "True", "SufficientPods", timestamp(10.0))
    budget.status = first
    assert conditions_up_to_date(budget) and pdb_status(budget, 2, 1, 2, {}, 20.0) is None
    budget.metadata.generation = 2  # a spec change must be observed
    assert not conditions_up_to_date(budget) and pdb_status(budget, 2, 1, 2, {}, 20.0).observed_generation == 2
    budget.metadata.generation = 1
    lower = pdb_status(budget, 1, 1, 2, {}, 30.0)
    assert lower.disruptions_allowed == 0 and lower.conditions[0].reason == "InsufficientPods" and lower.conditions[0].last_transition_time == timestamp(30.0)


def test_fail_safe_zeroes_disruptions_and_says_why():
    budget = pdb(min_available=1)
    budget.status = pdb_status(budget, 3, 1, 3, {}, 5.0)
    safe = fail_safe_status(budget, 'found no controllers for pod "p"', 9.0)
    assert safe.disruptions_allowed == 0 and safe.current_healthy == 3 and safe.observed_generation == 1
    [condition] = safe.conditions
    assert (condition.status, condition.reason, condition.message, condition.last_transition_time) == ("False", "SyncFailed", 'found no controllers for pod "p"', timestamp(9.0))


def test_set_status_condition_moves_the_transition_time_only_with_the_status():
    start = [Condition(type="A", status="True", reason="r", last_transition_time=timestamp(1.0))]
    same = set_status_condition(start, Condition(type="A", status="True", reason="other"), 5.0)
    assert same[0].last_transition_time == timestamp(1.0) and same[0].reason == "other"
    flipped = set_status_condition(start, Condition(type="A", status="False"), 5.0)
    assert flipped[0].last_transition_time == timestamp(5.0)
    assert start[0].reason == "r"  # a copy


# =========================================================================== scenarios
def controller(config=ControllerManagerConfig()):
    async def main(process):
        client = ApiClient(process, SERVERS, user_credentials("system:kube-controller-manager"))
        factory = SharedInformerFactory(client)
        disruption = DisruptionController(process, client, factory, config)
        factory.start()
        await disruption.run()

    return main


def admin_client(world):
    return ApiClient(world.processes["client"], SERVERS, admin_credentials())


async def running_pod(client, name, owner=None):
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": dict(LABELS)},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "app"}]},
    }
    created = await client.create(from_dict(manifest))
    if owner is not None:
        created.metadata.owner_references = [owner]
        created = await client.update(created)
    created.status.phase = "Running"
    created.status.conditions = [PodCondition(type="Ready", status="True")]
    return await client.update_status(created)


async def create_pdb(client, **spec):
    spec.setdefault("selector", {"matchLabels": dict(LABELS)})
    return await client.create(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"}, "spec": spec}))


async def status_when(world, client, predicate, within_s=10.0):
    deadline = world.now + within_s
    while True:
        current = await client.get("poddisruptionbudgets", "default", "web")
        if predicate(current.status) or world.now > deadline:
            assert predicate(current.status), current.status
            return current.status
        await world.sleep(0.2)


async def evict(client, name):
    try:
        await client.evict("default", name)
    except ApiError as error:
        return error.code
    return 201


def test_the_pdb_status_drives_evictions_through_the_api():
    outcome = {}

    async def story(world, caller, registry):
        client = admin_client(world)
        for name in ("a", "b", "c"):
            await running_pod(client, name)
        await create_pdb(client, minAvailable=2)
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        first = await status_when(world, client, lambda s: s.observed_generation == 1)
        outcome["first"] = (first.disruptions_allowed, first.current_healthy, first.desired_healthy, first.expected_pods, first.conditions[0].reason)
        outcome["evictions"] = [await evict(client, "a"), await evict(client, "b")]
        after = await status_when(world, client, lambda s: s.current_healthy == 2 and not s.disrupted_pods)
        outcome["after"] = (after.disruptions_allowed, after.current_healthy, after.expected_pods, after.conditions[0].reason)
        await running_pod(client, "d")
        more = await status_when(world, client, lambda s: s.disruptions_allowed == 1)
        outcome["more"] = (more.current_healthy, more.expected_pods)
        outcome["third"] = await evict(client, "b")

    world, _ = run_api(story, seed=2)
    assert outcome["first"] == (1, 3, 2, 3, "SufficientPods")
    assert outcome["evictions"] == [201, 429]  # the second would leave one healthy pod
    assert outcome["after"] == (0, 2, 3, "InsufficientPods")  # a is terminating: expected still counts it
    assert outcome["more"] == (3, 4) and outcome["third"] == 201
    written = [e for e in world.journal.of_type("pdb-status") if e["pdb"] == "default/web"]
    assert written and all(a["t"] <= b["t"] for a, b in zip(written, written[1:]))
    refused = [e for e in world.journal.of_type("eviction") if e["outcome"] == "refused"]
    assert [e["pod"] for e in refused] == ["b"]


def test_percentages_follow_the_replica_set_and_a_missing_controller_fails_safe():
    outcome = {}

    async def story(world, caller, registry):
        client = admin_client(world)
        rs = await client.create(from_dict({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"tier": "x"}}, "template": {"metadata": {"labels": {"tier": "x"}}, "spec": {"containers": [{"name": "c", "image": "app"}]}}},
        }))
        owner = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="web", uid=rs.metadata.uid, controller=True)
        for name in ("a", "b", "c", "d"):
            await running_pod(client, name, owner)
        await create_pdb(client, maxUnavailable="50%")
        world.spawn("kube-controller-manager", controller(), role="controller-manager")
        good = await status_when(world, client, lambda s: s.observed_generation == 1 and s.expected_pods == 4)
        outcome["good"] = (good.disruptions_allowed, good.current_healthy, good.desired_healthy, good.expected_pods)
        ghost = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="ghost", uid="no-such-uid", controller=True)
        await running_pod(client, "orphan", ghost)
        failed = await status_when(world, client, lambda s: any(c.reason == "SyncFailed" for c in s.conditions))
        outcome["failed"] = (failed.disruptions_allowed, [(c.status, c.message) for c in failed.conditions])
        outcome["eviction"] = await evict(client, "a")

    world, _ = run_api(story, seed=4)
    assert outcome["good"] == (2, 4, 2, 4)  # 50% of 4 rounded up is 2 unavailable
    assert outcome["failed"] == (0, [("False", 'found no controllers for pod "orphan"')])
    assert outcome["eviction"] == 429

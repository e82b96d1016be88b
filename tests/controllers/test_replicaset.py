"""The ReplicaSet controller (``pkg/controller/replicaset``): its pure helpers table by
table, then scenarios against real API servers over a 3-member etcd.

Pure parts: slow-start batch sizes and the stop-on-failure rule (``TestSlowStartBatch``),
the deletion ranking rule by rule (``ActivePodsWithRanks.Less``), expectations with their
TTL and uid tracking, the status calculation with ``minReadySeconds``, the controller-ref
manager's decision table, the pod built from a template.

Scenarios (the controller in a kube-controller-manager process authenticated as
``system:kube-controller-manager``; a fake kubelet where pods must run): a ReplicaSet gets
its pods in slow-start batches with a controller reference and a status; scaling down
deletes the pending pods and keeps the ready ones; a deleted pod is replaced; an orphan is adopted and a relabelled pod is
released; and with the controller's watches delayed by 5 s (its informers live in a second
process behind a slow link, its writes go straight), expectations stop the over-creation
that a controller without them shows.

The scaffolding here (``cluster``, ``controller_manager``, ``fake_kubelet``, ...) is shared
by the deployment and garbage-collector tests.
"""

from __future__ import annotations

import pytest
import trio

from chaoskube.api.identity import KUBE_CONTROLLER_MANAGER_USER, admin_credentials, user_credentials
from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import (
    ContainerStatus,
    LabelSelector,
    ObjectMeta,
    OwnerReference,
    Pod,
    PodCondition,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
    ReplicaSet,
    ReplicaSetSpec,
)
from chaoskube.api.protocol import DeleteOptions, timestamp
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.informer import SharedInformer, SharedInformerFactory
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.replicaset import (
    EXPECTATIONS_TIMEOUT_S,
    Claim,
    ControllerError,
    ControllerExpectations,
    ReplicaSetController,
    calculate_status,
    claim_decision,
    get_pods_to_delete,
    new_controller_ref,
    pod_from_template,
    pods_ranked_less,
    slow_start_batch,
    slow_start_batch_sizes,
    status_needs_update,
)
from chaoskube.sim.network import LinkProfile
from tests.apiserver.apiserver_harness import run_api

API_SERVERS = ("kube-apiserver-1",)
NODES = ("node-1", "node-2", "node-3")
LABELS = {"app": "web"}


# =========================================================================== scaffolding
def controller_manager(builders, *, config=None, resync_s=0.0, informer_process=None, registry=None):
    """A kube-controller-manager process running the controllers ``builders`` make from
    ``(process, client, factory, config)``. With ``informer_process``, the informers run
    as tasks of that (separate) process, so its links can be slowed on their own."""
    config = config or ControllerManagerConfig()

    async def main(process):
        credentials = user_credentials(KUBE_CONTROLLER_MANAGER_USER)
        client = ApiClient(process, API_SERVERS, credentials)
        watcher = process.world.process(informer_process) if informer_process else process
        factory = SharedInformerFactory(ApiClient(watcher, API_SERVERS, credentials, name=f"{watcher.name}/informers"), resync_s=resync_s)
        controllers = [build(process, client, factory, config) for build in builders]
        if registry is not None:
            registry[process.name] = controllers
        factory.start()
        async with trio.open_nursery() as nursery:
            for controller in controllers:
                nursery.start_soon(controller.run)

    return main


async def idle(process):
    await trio.sleep_forever()


def _ready_status(now):
    moment = timestamp(now)
    return {
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": moment},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": moment},
                {"type": "Ready", "status": "True", "lastTransitionTime": moment},
            ],
        }
    }


def fake_kubelet(*, ready_after_s=1.0, terminate_after_s=0.5, tick_s=0.1, nodes=NODES):
    """Stands in for the scheduler and the kubelets (none exist yet): binds pending pods
    round-robin to ``nodes``, reports a bound pod Running and Ready ``ready_after_s`` after
    it first saw it bound, and removes a pod being deleted (grace 0)
    ``terminate_after_s`` after it saw the deletion timestamp. Acts as the cluster admin."""

    async def main(process):
        client = ApiClient(process, API_SERVERS, admin_credentials())
        informer = SharedInformer(client, "pods")
        process.start_soon(informer.run)
        await informer.wait_for_sync()
        first_seen: dict[str, float] = {}
        bound = 0
        while True:
            await process.sleep(tick_s)
            now = process.now()
            for pod in informer.indexer.list():
                meta = pod.metadata
                key = f"{meta.namespace}/{meta.name}/{meta.uid}"
                try:
                    if meta.deletion_timestamp is not None:
                        if now - first_seen.setdefault(key + "/deleting", now) >= terminate_after_s:
                            await client.delete("pods", meta.namespace, meta.name, options=DeleteOptions(grace_period_seconds=0, preconditions_uid=meta.uid))
                    elif not pod.spec.node_name:
                        await client.bind(meta.namespace, meta.name, nodes[bound % len(nodes)])
                        bound += 1
                    elif pod.status.phase != "Running":
                        if now - first_seen.setdefault(key, now) >= ready_after_s:
                            await client.patch("pods", meta.namespace, meta.name, _ready_status(now), subresource="status")
                except ApiError:
                    pass  # raced with someone else: look again next tick

    return main


def admin(world):
    return ApiClient(world.process("client"), API_SERVERS, admin_credentials(), name="test-admin")


def replica_set_manifest(name, replicas, *, labels=LABELS, min_ready_seconds=0):
    return from_dict({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready_seconds,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}},
        },
    })


def pod_manifest(name, labels):
    return from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": dict(labels)},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
    })


async def list_pods(client, selector="app=web"):
    return (await client.list("pods", "default", label_selector=selector)).items


async def eventually(world, check, *, within_s=30.0, every_s=0.25):
    """Poll ``await check()`` until it returns a truthy value (returned) or fail."""
    deadline = world.now + within_s
    while True:
        value = await check()
        if value:
            return value
        assert world.now < deadline, f"not within {within_s}s"
        await world.sleep(every_s)


def scenario(story, *, seed=1, builders=(), kubelet=None, resync_s=0.0, informer_process=None, registry=None):
    """Run ``story(world, client)`` with a controller manager (and a fake kubelet)."""

    async def wrapped(world, caller, servers):
        if informer_process:
            world.spawn(informer_process, idle, role="kube-controller-manager")
            await world.sleep(0)  # let it start before tasks are started in it
        world.spawn("kube-controller-manager", controller_manager(builders, resync_s=resync_s, informer_process=informer_process, registry=registry), role="kube-controller-manager")
        if kubelet is not None:
            world.spawn("kubelet", kubelet, role="kubelet")
        return await story(world, admin(world))

    return run_api(wrapped, seed=seed)


def replica_set_controller(process, client, factory, config):
    return ReplicaSetController(process, client, factory, config)


def api_ops(world, *, verb, resource, phase="ok", subresource=""):
    return [
        e for e in world.journal.of_type("api-op")
        if e["verb"] == verb and e["resource"] == resource and e["phase"] == phase and e["subresource"] == subresource
        and e["client"] == "kube-controller-manager"
    ]


# =========================================================================== pure: slow start
@pytest.mark.parametrize(
    ("count", "sizes"),
    [(0, []), (1, [1]), (2, [1, 1]), (3, [1, 2]), (5, [1, 2, 2]), (10, [1, 2, 4, 3]), (16, [1, 2, 4, 8, 1])],
)
def test_slow_start_batches_double_from_one(count, sizes):
    assert slow_start_batch_sizes(count) == sizes
    assert sum(sizes) == count


@pytest.mark.parametrize(
    ("count", "fail_after", "successes", "calls"),
    [
        (10, None, 10, 10),  # every call succeeds
        (10, 0, 0, 1),  # the first batch fails: nothing more is tried
        (10, 6, 6, 7),  # batches 1, 2, 4: the 7th call fails, the 4th batch never starts
    ],
)
async def test_slow_start_batch_stops_after_a_failed_batch(count, fail_after, successes, calls):
    made = []

    async def call():
        made.append(1)
        if fail_after is not None and len(made) > fail_after:
            raise ControllerError("quota exceeded")

    done, error = await slow_start_batch(count, 1, call)
    assert (done, len(made)) == (successes, calls)
    assert (error is None) == (fail_after is None)


# =========================================================================== pure: ranking
def make_pod(name, *, node="", phase="Pending", ready=None, created=0.0, ready_at=None, restarts=0, cost=None, uid=None):
    conditions = []
    if ready is not None:
        conditions.append(PodCondition(type="Ready", status="True" if ready else "False", last_transition_time=timestamp(ready_at if ready_at is not None else created)))
    annotations = {"controller.kubernetes.io/pod-deletion-cost": str(cost)} if cost is not None else {}
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=uid or f"uid-{name}", labels=dict(LABELS), annotations=annotations, creation_timestamp=timestamp(created)),
        spec=PodSpec(node_name=node),
        status=PodStatus(phase=phase, conditions=conditions, container_statuses=[ContainerStatus(name="web", restart_count=restarts)]),
    )


NOW = 100_000.0
RUNNING = {"node": "n1", "phase": "Running", "ready": True, "created": 1000.0, "ready_at": 1000.0}

# Each pair (first, second, ranks): ``first`` is deleted before ``second`` by exactly one rule.
RANKING_RULES = [
    ("1. unassigned before assigned", make_pod("a", phase="Running"), make_pod("b", node="n1", phase="Running"), (0, 0)),
    ("2. Pending before Unknown", make_pod("a", node="n1", phase="Pending"), make_pod("b", node="n1", phase="Unknown"), (0, 0)),
    ("2. Unknown before Running", make_pod("a", node="n1", phase="Unknown"), make_pod("b", node="n1", phase="Running"), (0, 0)),
    ("3. not ready before ready", make_pod("a", node="n1", phase="Running", ready=False), make_pod("b", node="n1", phase="Running", ready=True), (0, 0)),
    ("4. lower deletion cost first", make_pod("a", **RUNNING, cost=-5), make_pod("b", **RUNNING, cost=10), (0, 0)),
    ("5. doubled up before alone", make_pod("a", **RUNNING), make_pod("b", **RUNNING), (3, 1)),
    ("6. ready for less time first", make_pod("a", **{**RUNNING, "ready_at": 99_000.0}), make_pod("b", **RUNNING), (0, 0)),
    ("7. more restarts first", make_pod("a", **RUNNING, restarts=4), make_pod("b", **RUNNING, restarts=1), (0, 0)),
    ("8. newer before older", make_pod("a", **{**RUNNING, "created": 90_000.0, "ready_at": 1000.0}), make_pod("b", **RUNNING), (0, 0)),
]


@pytest.mark.parametrize(("rule", "first", "second", "ranks"), RANKING_RULES, ids=[rule for rule, *_ in RANKING_RULES])
def test_the_deletion_ranking_applies_each_rule_of_active_pods_with_ranks(rule, first, second, ranks):
    assert pods_ranked_less(first, second, ranks[0], ranks[1], NOW)
    assert not pods_ranked_less(second, first, ranks[1], ranks[0], NOW)


def test_logarithmic_scale_down_treats_close_ages_alike_and_breaks_ties_by_uid():
    # 900 s and 1000 s old fall in the same power-of-two bucket of nanoseconds: the uid decides
    younger = make_pod("young", **{**RUNNING, "created": NOW - 900, "ready_at": 0.0}, uid="uid-z")
    older = make_pod("old", **{**RUNNING, "created": NOW - 1000, "ready_at": 0.0}, uid="uid-a")
    assert pods_ranked_less(older, younger, 0, 0, NOW) and not pods_ranked_less(younger, older, 0, 0, NOW)
    # without a reference time the plain order holds: newer first
    assert pods_ranked_less(younger, older, 0, 0, None)


def test_get_pods_to_delete_prefers_unscheduled_pending_and_unready_pods_and_doubled_up_nodes():
    pods = [
        make_pod("ready-alone", node="n3", phase="Running", ready=True, created=10),
        make_pod("ready-doubled", node="n1", phase="Running", ready=True, created=10),
        make_pod("unready", node="n2", phase="Running", ready=False),
        make_pod("pending", node="n2", phase="Pending"),
        make_pod("unscheduled"),
        make_pod("ready-doubled-2", node="n1", phase="Running", ready=True, created=10),
    ]
    chosen = get_pods_to_delete(pods, pods, 4, NOW)
    assert [pod.metadata.name for pod in chosen][:3] == ["unscheduled", "pending", "unready"]
    assert chosen[3].metadata.name.startswith("ready-doubled")  # two ready pods share n1
    assert get_pods_to_delete(pods, pods, len(pods), NOW) == pods  # all of them: no sorting


# =========================================================================== pure: expectations
def test_expectations_hold_a_sync_until_creations_are_observed_or_expire():
    expectations = ControllerExpectations()
    assert expectations.satisfied("default/web", 0.0)  # none set: sync
    expectations.expect_creations("default/web", 3, now=10.0)
    for _ in range(2):
        expectations.creation_observed("default/web")
        assert not expectations.satisfied("default/web", 11.0)
    expectations.creation_observed("default/web")
    assert expectations.satisfied("default/web", 11.0)
    expectations.expect_creations("default/web", 1, now=20.0)
    assert not expectations.satisfied("default/web", 20.0 + EXPECTATIONS_TIMEOUT_S)  # not yet past the TTL
    assert expectations.satisfied("default/web", 20.0 + EXPECTATIONS_TIMEOUT_S + 0.001)
    expectations.delete("default/web")
    assert expectations.get("default/web") is None and len(expectations) == 0


def test_deletion_expectations_count_each_expected_pod_once():
    expectations = ControllerExpectations()
    expectations.expect_deletions("default/web", ["default/a", "default/b"], now=0.0)
    expectations.deletion_observed("default/web", "default/a")  # its deletionTimestamp
    expectations.deletion_observed("default/web", "default/a")  # then its DELETED event
    expectations.deletion_observed("default/web", "default/zzz")  # not one we deleted
    assert expectations.get("default/web") == (0, 1) and not expectations.satisfied("default/web", 1.0)
    expectations.deletion_observed("default/web", "default/b")
    assert expectations.satisfied("default/web", 1.0)


# =========================================================================== pure: status, claims
def test_status_counts_fully_labeled_ready_and_available_pods_with_min_ready_seconds():
    rs = replica_set_manifest("web", 4, min_ready_seconds=10)
    rs.spec.template.metadata.labels = {"app": "web", "tier": "front"}
    rs.metadata.generation = 3
    pods = [
        make_pod("old-ready", **{**RUNNING, "ready_at": NOW - 60}),
        make_pod("just-ready", **{**RUNNING, "ready_at": NOW - 5}),
        make_pod("unready", node="n1", phase="Running", ready=False),
    ]
    pods[0].metadata.labels["tier"] = "front"
    status = calculate_status(rs, pods, None, NOW)
    assert (status.replicas, status.fully_labeled_replicas, status.ready_replicas, status.available_replicas) == (3, 1, 2, 1)
    assert status_needs_update(rs, status)  # counts and observedGeneration differ
    failed = calculate_status(rs, pods, "pods is forbidden: exceeded quota", NOW)
    assert [(c.type, c.reason) for c in failed.conditions] == [("ReplicaFailure", "FailedCreate")]
    rs.status = failed
    assert calculate_status(rs, pods, None, NOW).conditions == []  # cleared after a clean sync


def test_claim_decisions_follow_the_controller_ref_manager():
    owner = replica_set_manifest("web", 1)
    owner.metadata.uid = "owner-uid"
    other = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="other", uid="other-uid", controller=True)
    ours = new_controller_ref(owner)
    orphan, mine, theirs = make_pod("orphan"), make_pod("mine"), make_pod("theirs")
    mine.metadata.owner_references = [ours]
    theirs.metadata.owner_references = [other]
    assert claim_decision(owner, orphan, True) is Claim.ADOPT
    assert claim_decision(owner, orphan, False) is Claim.IGNORE
    assert claim_decision(owner, mine, True) is Claim.OWN
    assert claim_decision(owner, mine, False) is Claim.RELEASE
    assert claim_decision(owner, theirs, True) is Claim.IGNORE
    orphan.metadata.deletion_timestamp = timestamp(5)
    assert claim_decision(owner, orphan, True) is Claim.IGNORE  # being deleted: not adopted
    owner.metadata.deletion_timestamp = timestamp(5)
    assert claim_decision(owner, make_pod("x"), True) is Claim.IGNORE  # a dying owner adopts nothing
    assert claim_decision(owner, mine, False) is Claim.IGNORE  # ... and releases nothing
    assert claim_decision(owner, mine, True) is Claim.OWN


def test_a_pod_from_a_template_carries_the_template_and_a_controller_reference():
    owner = ReplicaSet(
        metadata=ObjectMeta(name="web-abc", namespace="prod", uid="u1"),
        spec=ReplicaSetSpec(selector=LabelSelector(match_labels=LABELS), template=PodTemplateSpec(metadata=ObjectMeta(labels=dict(LABELS), annotations={"a": "b"}), spec=PodSpec(node_name=""))),
    )
    pod = pod_from_template(owner.spec.template, owner, new_controller_ref(owner))
    assert pod.metadata.generate_name == "web-abc-" and pod.metadata.namespace == "prod" and not pod.metadata.name
    assert pod.metadata.labels == LABELS and pod.metadata.annotations == {"a": "b"}
    reference = pod.metadata.owner_references[0]
    assert (reference.kind, reference.name, reference.uid, reference.controller, reference.block_owner_deletion) == ("ReplicaSet", "web-abc", "u1", True, True)
    pod.metadata.labels["x"] = "y"
    assert "x" not in owner.spec.template.metadata.labels  # nothing shared with the template


# =========================================================================== scenarios
def test_a_replica_set_creates_its_pods_in_slow_start_batches_and_reports_status():
    async def story(world, client):
        await client.create(replica_set_manifest("web", 5))

        async def converged():
            rs = await client.get("replicasets", "default", "web")
            return rs if rs.status.replicas == 5 and rs.status.ready_replicas == 5 else None

        rs = await eventually(world, converged)
        pods = await list_pods(client)
        return rs, pods

    world, (rs, pods) = scenario(story, builders=[replica_set_controller], kubelet=fake_kubelet())
    assert len(pods) == 5
    for pod in pods:
        assert pod.metadata.name.startswith("web-") and pod.metadata.generate_name == "web-"
        [reference] = pod.metadata.owner_references
        assert (reference.kind, reference.name, reference.uid, reference.controller, reference.block_owner_deletion) == ("ReplicaSet", "web", rs.metadata.uid, True, True)
    assert (rs.status.fully_labeled_replicas, rs.status.available_replicas, rs.status.observed_generation) == (5, 5, rs.metadata.generation)
    decisions = [e for e in world.journal.of_type("replicaset-pods") if e["replicaset"] == "default/web"]
    assert [(e["action"], e["want"], e["done"]) for e in decisions] == [("create", 5, 5)]
    # slow start: 1, then 2, then 2 creates, each batch after the previous one finished
    creates = [e for e in world.journal.of_type("api-op") if e["resource"] == "pods" and e["verb"] == "create" and e["client"] == "kube-controller-manager"]
    invoked = [e["t"] for e in creates if e["phase"] == "invoke"]
    finished = [e["t"] for e in creates if e["phase"] == "ok"]
    assert len(invoked) == 5 and len(finished) == 5
    assert invoked[1] >= finished[0] and invoked[3] >= max(finished[1:3])  # batch boundaries
    assert invoked[1] == invoked[2] and invoked[3] == invoked[4]  # a batch goes out at once


def test_scaling_down_deletes_the_pending_pods_and_keeps_the_ready_ones():
    async def story(world, client):
        await client.create(replica_set_manifest("web", 5))
        pods = await eventually(world, lambda: _count(client, 5))
        names = sorted(pod.metadata.name for pod in pods)
        keep = names[:2]
        for name in names:  # every pod is scheduled; only two of them become ready
            await client.bind("default", name, "node-1")
        for name in keep:
            await client.patch("pods", "default", name, _ready_status(world.now), subresource="status")
        await eventually(world, lambda: _ready_count(client, 2))
        await client.patch("replicasets", "default", "web", {"spec": {"replicas": 2}})
        survivors = await eventually(world, lambda: _count(client, 2))
        terminating = [pod for pod in await list_pods(client) if pod.metadata.deletion_timestamp is not None]
        return keep, sorted(pod.metadata.name for pod in survivors), terminating

    world, (keep, survivors, terminating) = scenario(story, builders=[replica_set_controller])
    assert survivors == keep
    assert len(api_ops(world, verb="delete", resource="pods")) == 3
    assert len(terminating) == 3  # scheduled pods are deleted gracefully (no kubelet here to finish)


async def _count(client, n):
    pods = [pod for pod in await list_pods(client) if pod.metadata.deletion_timestamp is None]
    return pods if len(pods) == n else None


async def _ready_count(client, n):
    rs = await client.get("replicasets", "default", "web")
    return rs if rs.status.ready_replicas == n else None


def test_a_deleted_pod_is_replaced():
    async def story(world, client):
        await client.create(replica_set_manifest("web", 3))
        before = await eventually(world, lambda: _count(client, 3))
        victim = before[0].metadata.name
        await client.delete("pods", "default", victim)
        await world.sleep(5.0)
        after = await eventually(world, lambda: _count(client, 3))
        return victim, {pod.metadata.name for pod in before}, {pod.metadata.name for pod in after}

    world, (victim, before, after) = scenario(story, builders=[replica_set_controller])
    assert victim not in after and len(after - before) == 1
    assert len(api_ops(world, verb="create", resource="pods")) == 4


def test_an_orphan_is_adopted_and_a_relabelled_pod_is_released():
    async def story(world, client):
        orphan = await client.create(pod_manifest("stray", LABELS))
        await client.create(replica_set_manifest("web", 2))
        rs = await eventually(world, lambda: _ready_or_replicas(client, 2))
        adopted = await client.get("pods", "default", "stray")
        created = [pod for pod in await list_pods(client) if pod.metadata.name != "stray"]
        # take a pod out of the set by changing its labels: released, then replaced
        loner = created[0].metadata.name
        await client.patch("pods", "default", loner, {"metadata": {"labels": {"app": "other"}}})

        async def released():
            pod = await client.get("pods", "default", loner)
            return pod if not pod.metadata.owner_references else None

        released_pod = await eventually(world, released)
        await eventually(world, lambda: _count(client, 2))
        return orphan, rs, adopted, released_pod

    world, (orphan, rs, adopted, released_pod) = scenario(story, builders=[replica_set_controller])
    [reference] = adopted.metadata.owner_references
    assert (reference.uid, reference.controller) == (rs.metadata.uid, True) and adopted.metadata.uid == orphan.metadata.uid
    assert len(api_ops(world, verb="create", resource="pods")) == 2  # one adopted + one, then one replacement
    assert released_pod.metadata.labels == {"app": "other"}


async def _ready_or_replicas(client, n):
    rs = await client.get("replicasets", "default", "web")
    return rs if rs.status.replicas == n else None


class WithoutExpectations(ReplicaSetController):
    """A deliberately broken controller: it forgets what it just did (no expectations)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.expectations.timeout_s = -1.0  # every expectation is expired at once


SLOW_WATCH_S = 5.0


def _slow_watch(replicas, builder):
    async def story(world, client):
        # The informers live in "kcm-informers": only their link from the API server is slow.
        world.network.set_link(API_SERVERS[0], "kcm-informers", LinkProfile(delay_s=SLOW_WATCH_S))
        await world.sleep(3 * SLOW_WATCH_S)  # the informers' first list crosses the slow link
        await client.create(replica_set_manifest("web", replicas))
        await world.sleep(6 * SLOW_WATCH_S)
        live = [pod for pod in await list_pods(client) if pod.metadata.deletion_timestamp is None]
        return len(live)

    return scenario(story, builders=[builder], resync_s=1.0, informer_process="kcm-informers")


def test_expectations_stop_over_creation_when_the_watch_is_slow():
    world, live = _slow_watch(5, replica_set_controller)
    assert live == 5
    assert len(api_ops(world, verb="create", resource="pods")) == 5  # not one pod too many
    # while the watch lagged, resyncs found no pods in the cache and yet created nothing
    broken_world, broken_live = _slow_watch(5, lambda *a: WithoutExpectations(*a))
    assert len(api_ops(broken_world, verb="create", resource="pods")) > 5  # the gallery's broken controller over-creates
    assert api_ops(broken_world, verb="delete", resource="pods")  # ... and then deletes its surplus: it thrashes
    assert broken_live >= 5

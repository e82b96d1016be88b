"""The Deployment controller (``pkg/controller/deployment``): its arithmetic from
upstream's own test tables, then scenarios with the ReplicaSet controller and a fake
kubelet against real API servers.

Pure parts, with the tables of ``rolling_test.go`` (``reconcileNewReplicaSet``,
``reconcileOldReplicaSets``, ``cleanupUnhealthyReplicas``,
``scaleDownOldReplicaSetsForRollingUpdate``), ``sync_test.go`` (``TestScale``,
``TestDeploymentController_cleanupDeployment`` and ``...Order``) and
``deployment_util_test.go`` (``TestMaxUnavailable``, ``TestNewRSNewReplicas``); the
pod-template hash; annotations; status and conditions.

Scenarios: a Deployment of 10 replicas converges (one ReplicaSet ``<name>-<hash>`` with
the pod-template-hash label, revision 1, status and conditions); a rolling update never
has fewer than ``replicas - maxUnavailable`` available pods nor more than ``replicas +
maxSurge`` pods, judged from every pod event an observer saw and from the journal; the
Recreate strategy starts no new pod before the old ones are gone; ``revisionHistoryLimit``
deletes old ReplicaSets; a paused Deployment does not roll out until resumed.
"""

from __future__ import annotations

import msgspec
import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import (
    DeploymentCondition,
    DeploymentStatus,
    LabelSelector,
    ObjectMeta,
    PodTemplateSpec,
    ReplicaSet,
    ReplicaSetSpec,
    ReplicaSetStatus,
    matches,
)
from chaoskube.api.protocol import timestamp
from chaoskube.client.informer import SharedInformer
from chaoskube.controllers.deployment import (
    DESIRED_REPLICAS_ANNOTATION,
    MAX_REPLICAS_ANNOTATION,
    POD_TEMPLATE_HASH_LABEL,
    REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION,
    DeploymentController,
    ScaleStep,
    calculate_status,
    cleanup_candidates,
    cleanup_unhealthy_plan,
    compute_hash,
    deployment_timed_out,
    equal_ignore_hash,
    find_new_replica_set,
    max_surge,
    max_unavailable,
    new_rs_new_replicas,
    old_pods_running,
    old_scale_down_plan,
    reconcile_new_size,
    rollout_status,
    scale_down_old_plan,
    scale_plan,
    set_new_replica_set_annotations,
    set_replicas_annotations,
    stuck_requeue_after,
)
from chaoskube.controllers.replicaset import ReplicaSetController, is_pod_ready
from tests.controllers.test_replicaset import API_SERVERS, eventually, fake_kubelet, list_pods, scenario

LABELS = {"app": "web"}


# =========================================================================== fixtures
def deployment(name="foo", replicas=10, *, max_surge_value=0, max_unavailable_value=0, strategy="RollingUpdate", history=None, selector=None, generation=1):
    """Upstream's test ``newDeployment``: RollingUpdate with maxSurge and maxUnavailable 0
    unless given (ResolveFenceposts then makes maxUnavailable 1)."""
    spec = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(selector or LABELS)},
        "template": {"metadata": {"labels": dict(selector or LABELS)}, "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}},
        "strategy": {"type": strategy},
    }
    if strategy == "RollingUpdate":
        spec["strategy"]["rollingUpdate"] = {"maxSurge": max_surge_value, "maxUnavailable": max_unavailable_value}
    if history is not None:
        spec["revisionHistoryLimit"] = history
    d = from_dict({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec})
    d.metadata.generation = generation
    return d


def rs(name, replicas, *, created=0.0, available=None, revision=None, status_replicas=None, generation=0, template_labels=None):
    """Upstream's test ``rs``: available pods equal to the size unless given."""
    annotations = {REVISION_ANNOTATION: revision} if revision is not None else {}
    labels = dict(template_labels or LABELS)
    return ReplicaSet(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", creation_timestamp=timestamp(created), annotations=annotations, generation=generation),
        spec=ReplicaSetSpec(replicas=replicas, selector=LabelSelector(match_labels=dict(LABELS)), template=PodTemplateSpec(metadata=ObjectMeta(labels=labels))),
        status=ReplicaSetStatus(
            replicas=replicas if status_replicas is None else status_replicas,
            available_replicas=replicas if available is None else available,
            observed_generation=generation,
        ),
    )


def sizes(steps):
    return {step.rs.metadata.name: step.size for step in steps}


# =========================================================================== pure: arithmetic
@pytest.mark.parametrize(
    ("replicas", "value", "strategy", "expected"),
    [
        (10, 5, "RollingUpdate", 5),  # less than replicas
        (10, 10, "RollingUpdate", 10),  # equal
        (5, 10, "RollingUpdate", 5),  # greater than replicas: capped
        (0, 10, "RollingUpdate", 0),  # no replicas
        (10, 5, "Recreate", 0),  # Recreate: no rolling bounds
        (10, "50%", "RollingUpdate", 5),
        (10, "100%", "RollingUpdate", 10),
        (5, "100%", "RollingUpdate", 5),
    ],
)
def test_max_unavailable_table(replicas, value, strategy, expected):
    assert max_unavailable(deployment(replicas=replicas, max_unavailable_value=value, max_surge_value=1, strategy=strategy)) == expected


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        ("39%", "39%", 10, (4, 3)),  # surge rounds up, unavailable down
        (0, "39%", 10, (0, 3)),
        ("39%", 0, 10, (4, 0)),
        (0, 0, 10, (0, 1)),  # both zero: unavailable becomes 1 so the rollout can proceed
        ("25%", "25%", 10, (3, 2)),  # the defaults
    ],
)
def test_fenceposts_resolve_surge_up_and_unavailable_down(surge, unavailable, replicas, expected):
    d = deployment(replicas=replicas, max_surge_value=surge, max_unavailable_value=unavailable)
    assert (max_surge(d), max_unavailable(d)) == expected


@pytest.mark.parametrize(
    ("replicas", "surge", "old", "new", "expected"),
    [
        (10, 0, 10, 0, None),  # cannot surge: no scaling
        (10, 2, 10, 0, 2),
        (10, 2, 5, 0, 7),
        (10, 2, 10, 2, None),  # at replicas + maxSurge already
        (10, 2, 2, 11, 10),  # the new one is larger than the deployment: scale it down
    ],
)
def test_reconcile_new_replica_set_table(replicas, surge, old, new, expected):
    d = deployment(replicas=replicas, max_surge_value=surge)
    new_rs, old_rs = rs("foo-v2", new), rs("foo-v1", old)
    assert reconcile_new_size([new_rs, old_rs], new_rs, d) == expected


def test_new_rs_new_replicas_is_the_full_size_for_recreate():
    d = deployment(replicas=7, strategy="Recreate")
    assert new_rs_new_replicas(d, [rs("old", 7), rs("new", 0)], rs("new", 0)) == 7


@pytest.mark.parametrize(
    ("unavailable", "old", "new", "ready_old", "ready_new", "expected_old"),
    [
        (0, 10, 0, 10, 0, 9),
        (2, 10, 0, 10, 0, 8),
        (2, 10, 0, 8, 0, 8),  # the unhealthy replicas are cleaned up first
        (2, 10, 0, 9, 0, 8),  # one unhealthy cleaned up, one ready scaled down
        (2, 8, 2, 8, 0, None),  # unavailable new pods do not let the old ones shrink further
        (2, 8, 2, 6, 0, None),  # ... not even their unhealthy pods (upstream's "case 1": a node failed)
    ],
)
def test_reconcile_old_replica_sets_table(unavailable, old, new, ready_old, ready_new, expected_old):
    d = deployment(replicas=10, max_unavailable_value=unavailable)
    old_rs, new_rs = rs("foo-old", old, available=ready_old), rs("foo-new", new, available=ready_new, created=60.0)
    steps, counts = old_scale_down_plan([old_rs, new_rs], [old_rs], new_rs, d)
    assert counts
    assert (steps[-1].size if steps else None) == expected_old


@pytest.mark.parametrize(
    ("ready", "unhealthy", "max_cleanup", "expected"),
    [(8, 2, 1, 1), (8, 2, 3, 2), (8, 2, 0, 0), (10, 0, 3, 0)],
)
def test_cleanup_unhealthy_replicas_table(ready, unhealthy, max_cleanup, expected):
    steps, problem = cleanup_unhealthy_plan([rs("foo-v2", ready + unhealthy, available=ready)], max_cleanup)
    assert problem is None
    assert sum(10 - step.size for step in steps) == expected


def test_a_stale_status_with_more_available_than_desired_stops_the_cleanup():
    # spec already scaled to 8 while the status still counts 10 available: upstream errors out
    steps, problem = cleanup_unhealthy_plan([rs("foo-v1", 8, available=10)], 2)
    assert steps == [] and "invalid request to scale down" in problem
    steps, counts = old_scale_down_plan([rs("foo-v1", 8, available=10), rs("foo-v2", 3, created=9.0)], [rs("foo-v1", 8, available=10)], rs("foo-v2", 3, created=9.0), deployment(replicas=10, max_surge_value=3, max_unavailable_value=2))
    assert steps == [] and not counts


@pytest.mark.parametrize(
    ("unavailable", "ready", "old", "expected"),
    [(0, 10, 10, 9), (2, 10, 10, 8), (2, 8, 10, None), (2, 10, 0, None), (2, 1, 10, None)],
)
def test_scale_down_old_replica_sets_for_rolling_update_table(unavailable, ready, old, expected):
    d = deployment(replicas=10, max_unavailable_value=unavailable)
    old_rs = rs("foo-v2", old, available=ready)
    steps = scale_down_old_plan([old_rs], [old_rs], d)
    assert (steps[0].size if steps else None) == expected


NEW, OLD, OLDER = 120.0, 60.0, 0.0
SCALE_CASES = [
    # name, (replicas, surge), (old replicas, old surge), new, olds, expected new, expected olds
    ("normal scaling event: 10 -> 12", (12, 0), (10, 0), ("foo-v1", 10, NEW), [], 12, []),
    ("normal scaling event: 10 -> 5", (5, 0), (10, 0), ("foo-v1", 10, NEW), [], 5, []),
    ("proportional scaling: 5 -> 10", (10, 0), (5, 0), ("foo-v2", 2, NEW), [("foo-v1", 3, OLD)], 4, [6]),
    ("proportional scaling: 5 -> 3", (3, 0), (5, 0), ("foo-v2", 2, NEW), [("foo-v1", 3, OLD)], 1, [2]),
    ("proportional scaling: 9 -> 4", (4, 0), (9, 0), ("foo-v2", 8, NEW), [("foo-v1", 1, OLD)], 4, [0]),
    ("proportional scaling: 7 -> 10", (10, 0), (7, 0), ("foo-v3", 2, NEW), [("foo-v2", 3, OLD), ("foo-v1", 2, OLDER)], 3, [4, 3]),
    ("proportional scaling: 13 -> 8", (8, 0), (13, 0), ("foo-v3", 2, NEW), [("foo-v2", 8, OLD), ("foo-v1", 3, OLDER)], 1, [5, 2]),
    ("leftover distribution: 3 -> 4", (4, 0), (3, 0), ("foo-v3", 1, NEW), [("foo-v2", 1, OLD), ("foo-v1", 1, OLDER)], 2, [1, 1]),
    ("leftover distribution: 3 -> 2", (2, 0), (3, 0), ("foo-v3", 1, NEW), [("foo-v2", 1, OLD), ("foo-v1", 1, OLDER)], 1, [1, 0]),
    ("proportional scaling (no new rs): 4 -> 5", (5, 0), (4, 0), None, [("foo-v2", 2, OLD), ("foo-v1", 2, OLDER)], None, [3, 2]),
    ("proportional scaling: 6 -> 0", (0, 0), (6, 0), ("foo-v3", 3, NEW), [("foo-v2", 2, OLD), ("foo-v1", 1, OLDER)], 0, [0, 0]),
    ("proportional scaling: 0 -> 6", (6, 0), (6, 0), ("foo-v3", 0, NEW), [("foo-v2", 0, OLD), ("foo-v1", 0, OLDER)], 6, [0, 0]),
    ("deployment with surge pods", (20, 2), (10, 2), ("foo-v2", 6, NEW), [("foo-v1", 6, OLD)], 11, [11]),
    ("change both surge and size", (50, 6), (10, 3), ("foo-v2", 5, NEW), [("foo-v1", 8, OLD)], 22, [34]),
]


@pytest.mark.parametrize(("name", "now", "before", "new", "olds", "expected_new", "expected_olds"), SCALE_CASES, ids=[case[0] for case in SCALE_CASES])
def test_scale_is_proportional_during_a_rollout_as_upstream_test_scale(name, now, before, new, olds, expected_new, expected_olds):
    d = deployment(replicas=now[0], max_surge_value=now[1])
    previous = deployment(replicas=before[0], max_surge_value=before[1])
    new_rs = rs(new[0], new[1], created=new[2]) if new is not None else None
    old_rss = [rs(name_, size, created=created) for name_, size, created in olds]
    for each in [new_rs, *old_rss]:
        if each is not None:
            set_replicas_annotations(each, before[0], before[0] + max_surge(previous))
    result = {each.metadata.name: each.spec.replicas for each in [new_rs, *old_rss] if each is not None}
    result.update(sizes(scale_plan(d, new_rs, old_rss)))
    if new_rs is not None:
        assert result[new_rs.metadata.name] == expected_new
    assert [result[each.metadata.name] for each in old_rss] == expected_olds


def test_a_saturated_but_broken_new_replica_set_leaves_the_old_pods_alone():
    d = deployment(replicas=2, max_surge_value=1, max_unavailable_value=1)
    new_rs, old_rs = rs("foo-v2", 2, created=NEW, available=0), rs("foo-v1", 1, created=OLD)
    for each in (new_rs, old_rs):
        set_replicas_annotations(each, 2, 3)
    assert all(step.size == step.rs.spec.replicas for step in scale_plan(d, new_rs, [old_rs]))


def test_a_saturated_new_replica_set_scales_the_old_ones_to_zero():
    d = deployment(replicas=3, max_surge_value=1, max_unavailable_value=1)
    new_rs, old_rs = rs("foo-v2", 3, created=NEW), rs("foo-v1", 1, created=OLD)
    set_replicas_annotations(new_rs, 3, 4)
    assert sizes(scale_plan(d, new_rs, [old_rs])) == {"foo-v1": 0}


@pytest.mark.parametrize(
    ("olds", "limit", "deleted"),
    [
        ([("foo-1", 0, 0), ("foo-2", 0, 0), ("foo-3", 0, 0)], 1, 2),
        ([("foo-1", 0, 0), ("foo-2", 0, 1), ("foo-3", 1, 0), ("foo-4", 1, 1)], 0, 1),  # only spec = status = 0
        ([("foo-1", 0, 0), ("foo-2", 0, 0)], 0, 2),
        ([("foo-1", 1, 1), ("foo-2", 1, 1)], 0, 0),
        ([("foo-1", 0, 0), ("foo-2", 0, 0), ("foo-3", 0, 0)], 2**31 - 1, 0),  # unlimited
    ],
)
def test_cleanup_deployment_table(olds, limit, deleted):
    old_rss = [rs(name, spec, status_replicas=status) for name, spec, status in olds]
    assert len(cleanup_candidates(old_rss, deployment(replicas=1, history=limit))) == deleted


@pytest.mark.parametrize(
    ("olds", "limit", "deleted"),
    [
        ([("foo-1", 0, "1"), ("foo-2", 0, "2")], 1, ["foo-1"]),
        ([("foo-1", 0, "2"), ("foo-2", 0, "1")], 1, ["foo-2"]),
        ([("foo-1", 0, "1"), ("foo-2", 0, None)], 1, ["foo-2"]),  # no revision sorts as 0
        ([("foo-1", 0, None), ("foo-2", 0, "2")], 1, ["foo-1"]),
        ([("foo-1", 1, "1"), ("foo-2", 0, "2"), ("foo-3", 0, "3")], 1, ["foo-2"]),  # foo-1 has replicas
        ([("foo-1", 1, "1"), ("foo-2", 1, "2"), ("foo-3", 0, "3")], 1, []),
        ([("foo-1", 0, "3"), ("foo-2", 0, "1"), ("foo-3", 0, "4"), ("foo-4", 0, "2")], 2, ["foo-2", "foo-4"]),
    ],
)
def test_cleanup_deployment_order_table(olds, limit, deleted):
    old_rss = [rs(name, size, created=60.0 * index, revision=revision_) for index, (name, size, revision_) in enumerate(olds)]
    assert sorted(each.metadata.name for each in cleanup_candidates(old_rss, deployment(replicas=1, history=limit))) == deleted


def test_an_unobserved_old_replica_set_is_not_cleaned_up():
    old = rs("foo-1", 0, generation=2)
    old.status.observed_generation = 1
    assert cleanup_candidates([old], deployment(replicas=1, history=0)) == []


# =========================================================================== pure: templates, annotations
def test_the_pod_template_hash_is_stable_and_ignores_map_order_but_not_content():
    d = deployment()
    first = compute_hash(d.spec.template, None)
    reordered = msgspec.structs.replace(d.spec.template, metadata=ObjectMeta(labels=dict(reversed(list({"a": "1", "app": "web"}.items())))))
    again = msgspec.structs.replace(d.spec.template, metadata=ObjectMeta(labels={"a": "1", "app": "web"}))
    assert compute_hash(reordered, None) == compute_hash(again, None) != first
    assert compute_hash(d.spec.template, None) == first and compute_hash(d.spec.template, 1) != first
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(first) <= 10


def test_templates_are_equal_ignoring_the_hash_label_and_the_oldest_equal_one_is_the_new_one():
    d = deployment()
    labelled = msgspec.structs.replace(d.spec.template, metadata=ObjectMeta(labels={**LABELS, POD_TEMPLATE_HASH_LABEL: "abc"}))
    assert equal_ignore_hash(labelled, d.spec.template)
    older, newer = rs("foo-a", 1, created=10.0), rs("foo-b", 1, created=20.0)
    for each in (older, newer):
        each.spec.template = msgspec.structs.replace(d.spec.template)
    other = rs("foo-c", 1, created=1.0, template_labels={"app": "web", "v": "2"})
    assert find_new_replica_set(d, [newer, other, older]) is older


def test_new_replica_set_annotations_raise_the_revision_and_keep_its_history():
    d = deployment(replicas=10, max_surge_value=3)
    d.metadata.annotations = {"team": "blue", REVISION_ANNOTATION: "9"}
    fresh = rs("foo-v1", 0)
    assert set_new_replica_set_annotations(d, fresh, "1", exists=False)
    assert fresh.metadata.annotations == {"team": "blue", REVISION_ANNOTATION: "1", DESIRED_REPLICAS_ANNOTATION: "10", MAX_REPLICAS_ANNOTATION: "13"}
    assert not set_new_replica_set_annotations(d, fresh, "1", exists=True)  # nothing to change
    assert set_new_replica_set_annotations(d, fresh, "4", exists=True)  # rolled back to: revision 4
    assert fresh.metadata.annotations[REVISION_ANNOTATION] == "4" and fresh.metadata.annotations[REVISION_HISTORY_ANNOTATION] == "1"
    assert not set_new_replica_set_annotations(d, fresh, "3", exists=True)  # never lowered


# =========================================================================== pure: status
def test_status_counts_and_the_available_condition_follow_max_unavailable():
    d = deployment(replicas=10, max_surge_value=3, max_unavailable_value=2)
    old_rs, new_rs = rs("foo-v1", 5, available=5), rs("foo-v2", 5, available=2)
    new_rs.status.ready_replicas, old_rs.status.ready_replicas = 3, 5
    status = calculate_status([old_rs, new_rs], new_rs, d, 50.0)
    assert (status.replicas, status.updated_replicas, status.ready_replicas, status.available_replicas, status.unavailable_replicas) == (10, 5, 8, 7, 3)
    [available] = status.conditions
    assert (available.type, available.status, available.reason) == ("Available", "False", "MinimumReplicasUnavailable")
    new_rs.status.available_replicas = 3
    [available] = calculate_status([old_rs, new_rs], new_rs, d, 60.0).conditions
    assert (available.status, available.reason) == ("True", "MinimumReplicasAvailable")


def test_progressing_becomes_complete_then_a_stalled_rollout_times_out():
    d = deployment(replicas=2, max_surge_value=1)
    d.spec.progress_deadline_seconds = 600
    d.status = DeploymentStatus(observed_generation=1, replicas=2, updated_replicas=2, available_replicas=1, conditions=[
        DeploymentCondition(type="Progressing", status="True", reason="NewReplicaSetCreated", last_update_time=timestamp(0), last_transition_time=timestamp(0)),
    ])
    new_rs, old_rs = rs("foo-v2", 2, available=1, status_replicas=2), rs("foo-v1", 0, status_replicas=0)
    stalled = rollout_status([old_rs, new_rs], new_rs, d, 100.0)  # no progress since the last status
    assert _progressing(stalled) == ("True", "NewReplicaSetCreated")
    assert stuck_requeue_after(d, stalled, 100.0) == pytest.approx(501.0)  # 600 s after its last update, + 1 s
    assert deployment_timed_out(d, stalled, 601.0) and not deployment_timed_out(d, stalled, 599.0)
    timed_out = rollout_status([old_rs, new_rs], new_rs, d, 601.0)
    assert _progressing(timed_out) == ("False", "ProgressDeadlineExceeded")
    new_rs.status.available_replicas = 2
    done = rollout_status([old_rs, new_rs], new_rs, d, 700.0)
    assert _progressing(done) == ("True", "NewReplicaSetAvailable")
    assert stuck_requeue_after(d, done, 700.0) is None


def _progressing(status):
    condition = next(c for c in status.conditions if c.type == "Progressing")
    return condition.status, condition.reason


def test_old_pods_running_counts_old_replica_set_pods_not_yet_terminal():
    new_rs, old_rs = rs("foo-v2", 2), rs("foo-v1", 0, status_replicas=0)
    from tests.controllers.test_replicaset import make_pod

    running, failed = make_pod("a", phase="Running"), make_pod("b", phase="Failed")
    assert old_pods_running(new_rs, [old_rs], {old_rs.metadata.uid: [running]})
    assert not old_pods_running(new_rs, [old_rs], {old_rs.metadata.uid: [failed], new_rs.metadata.uid: [running]})
    old_rs.status.replicas = 1
    assert old_pods_running(new_rs, [old_rs], {})


# =========================================================================== scenarios
def deployment_manifest(name="web", replicas=10, *, image="nginx:1.25", strategy=None, history=None, paused=False):
    spec = {
        "replicas": replicas,
        "selector": {"matchLabels": dict(LABELS)},
        "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "web", "image": image}]}},
        "paused": paused,
    }
    if strategy is not None:
        spec["strategy"] = {"type": strategy}
    if history is not None:
        spec["revisionHistoryLimit"] = history
    return from_dict({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def controllers(process, client, factory, config):
    return ReplicaSetController(process, client, factory, config)


def deployment_controller(process, client, factory, config):
    return DeploymentController(process, client, factory, config)


BUILDERS = [controllers, deployment_controller]


async def complete(client, name, image, replicas=10):
    """The Deployment is rolled out: status says so and the pods run ``image``."""
    d = await client.get("deployments", "default", name)
    status = d.status
    if not (status.observed_generation == d.metadata.generation and status.updated_replicas == status.replicas == status.available_replicas == replicas):
        return None
    pods = [p for p in await list_pods(client) if p.metadata.deletion_timestamp is None]
    if len(pods) != replicas or any(p.spec.containers[0].image != image for p in pods):
        return None
    return d


def observer(log):
    """A process that appends (t, available, active) after every pod event it sees: the
    pods informer delivers the cluster's pod states in revision order."""

    async def main(process):
        from chaoskube.api.identity import admin_credentials
        from chaoskube.client.client import ApiClient

        informer = SharedInformer(ApiClient(process, API_SERVERS, admin_credentials()), "pods")
        selector = LabelSelector(match_labels=dict(LABELS))

        def sample(*_):
            pods = [p for p in informer.indexer.list() if matches(selector, p.metadata.labels) and p.metadata.deletion_timestamp is None]
            log.append((process.now(), sum(1 for p in pods if is_pod_ready(p)), len(pods)))

        informer.add_event_handler(sample, sample, sample)
        await informer.run()

    return main


def with_observer(story, log):
    async def wrapped(world, client):
        world.spawn("observer", observer(log), role="test")
        return await story(world, client)

    return wrapped


def test_a_deployment_of_ten_replicas_converges():
    async def story(world, client):
        await client.create(deployment_manifest())
        d = await eventually(world, lambda: complete(client, "web", "nginx:1.25"), within_s=60.0)
        rss = (await client.list("replicasets", "default")).items
        return d, rss, await list_pods(client)

    world, (d, rss, pods) = scenario(story, builders=BUILDERS, kubelet=fake_kubelet())
    [new_rs] = rss
    hash_ = new_rs.metadata.labels[POD_TEMPLATE_HASH_LABEL]
    assert new_rs.metadata.name == f"web-{hash_}"
    assert new_rs.spec.selector.match_labels == {**LABELS, POD_TEMPLATE_HASH_LABEL: hash_}
    assert new_rs.spec.template.metadata.labels[POD_TEMPLATE_HASH_LABEL] == hash_
    assert all(p.metadata.labels[POD_TEMPLATE_HASH_LABEL] == hash_ for p in pods)
    [reference] = new_rs.metadata.owner_references
    assert (reference.kind, reference.uid, reference.controller) == ("Deployment", d.metadata.uid, True)
    assert new_rs.metadata.annotations[REVISION_ANNOTATION] == "1" == d.metadata.annotations[REVISION_ANNOTATION]
    assert new_rs.metadata.annotations[DESIRED_REPLICAS_ANNOTATION] == "10" and new_rs.metadata.annotations[MAX_REPLICAS_ANNOTATION] == "13"
    assert (d.status.ready_replicas, d.status.unavailable_replicas) == (10, 0)
    conditions = {c.type: (c.status, c.reason) for c in d.status.conditions}
    assert conditions == {"Available": ("True", "MinimumReplicasAvailable"), "Progressing": ("True", "NewReplicaSetAvailable")}
    scales = [(e["rs"], e["from"], e["to"], e["reason"]) for e in world.journal.of_type("deployment-scale")]
    assert scales == [(new_rs.metadata.name, 0, 10, "new-replica-set")]


class ScalesOldDownAtOnce(DeploymentController):
    """A deliberately broken controller for the gallery: it ignores maxUnavailable and
    scales the old ReplicaSets to zero as soon as the new one exists."""

    async def _reconcile_old(self, all_rss, old_rss, new_rs, d):
        removed, _ = await self._apply([ScaleStep(rs_, 0, "rolling-old") for rs_ in old_rss if rs_.spec.replicas], d)
        return removed > 0


def _rolling_update(deployment_builder):
    log = []

    async def story(world, client):
        await client.create(deployment_manifest())
        await eventually(world, lambda: complete(client, "web", "nginx:1.25"), within_s=60.0)
        started = world.now
        await client.patch("deployments", "default", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}}})
        d = await eventually(world, lambda: complete(client, "web", "nginx:1.26"), within_s=120.0)
        rss = (await client.list("replicasets", "default")).items
        return started, d, rss

    world, (started, d, rss) = scenario(with_observer(story, log), builders=[controllers, deployment_builder], kubelet=fake_kubelet(ready_after_s=2.0))
    during = [(available, active) for t, available, active in log if t >= started]
    assert during, "the observer saw the rollout"
    return world, started, d, rss, during


def test_a_rolling_update_keeps_replicas_minus_max_unavailable_available():
    world, started, d, rss, during = _rolling_update(deployment_controller)
    # replicas 10, maxSurge 25% -> 3, maxUnavailable 25% -> 2
    assert min(available for available, _ in during) >= 10 - 2
    assert max(active for _, active in during) <= 10 + 3
    assert min(available for available, _ in during) < 10  # it did use its budget: the bound is tight
    # the journal tells the same story: every step kept old + new within bounds
    steps = [e for e in world.journal.of_type("deployment-scale") if e["t"] >= started]
    assert {e["reason"] for e in steps} >= {"new-replica-set", "rolling-new", "rolling-old"}
    sizes_now = {rs_.metadata.name: 0 for rs_ in rss}
    sizes_now.update({e["rs"]: e["to"] for e in world.journal.of_type("deployment-scale") if e["t"] < started})
    for e in steps:
        sizes_now[e["rs"]] = e["to"]
        assert sum(sizes_now.values()) <= 13
    by_revision = {rs_.metadata.annotations[REVISION_ANNOTATION]: rs_ for rs_ in rss}
    assert sorted(by_revision) == ["1", "2"] and d.metadata.annotations[REVISION_ANNOTATION] == "2"
    assert (by_revision["1"].spec.replicas, by_revision["2"].spec.replicas) == (0, 10)


def test_the_availability_check_catches_a_controller_that_ignores_max_unavailable():
    _, _, _, _, during = _rolling_update(lambda *a: ScalesOldDownAtOnce(*a))
    assert min(available for available, _ in during) < 10 - 2


def test_recreate_starts_no_new_pod_before_the_old_ones_are_gone():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=3, strategy="Recreate"))
        await eventually(world, lambda: complete(client, "web", "nginx:1.25", replicas=3), within_s=60.0)
        started = world.now
        await client.patch("deployments", "default", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}}})
        await eventually(world, lambda: complete(client, "web", "nginx:1.26", replicas=3), within_s=60.0)
        return started

    world, started = scenario(story, builders=BUILDERS, kubelet=fake_kubelet())
    pod_ops = [e for e in world.journal.of_type("api-op") if e["resource"] == "pods" and e["phase"] == "ok" and e["t"] >= started]
    last_removal = max(e["t"] for e in pod_ops if e["verb"] == "delete" and e["client"] == "kubelet")
    first_create = min(e["t"] for e in pod_ops if e["verb"] == "create")
    assert first_create > last_removal
    reasons = [e["reason"] for e in world.journal.of_type("deployment-scale") if e["t"] >= started]
    assert reasons == ["recreate-old", "new-replica-set"]


def test_revision_history_limit_deletes_the_oldest_replica_sets():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=1, history=1))
        for version in ("1.25", "1.26", "1.27", "1.28"):
            if version != "1.25":
                await client.patch("deployments", "default", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": f"nginx:{version}"}]}}}})
            await eventually(world, lambda: complete(client, "web", f"nginx:{version}", replicas=1), within_s=60.0)

        async def cleaned():
            items = (await client.list("replicasets", "default")).items
            return items if len(items) == 2 else None

        return await eventually(world, cleaned)

    world, rss = scenario(story, builders=BUILDERS, kubelet=fake_kubelet())
    assert sorted(rs_.metadata.annotations[REVISION_ANNOTATION] for rs_ in rss) == ["3", "4"]


def test_a_paused_deployment_does_not_roll_out_until_resumed():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=2))
        await eventually(world, lambda: complete(client, "web", "nginx:1.25", replicas=2), within_s=60.0)
        await client.patch("deployments", "default", "web", {"spec": {"paused": True}})
        await client.patch("deployments", "default", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.26"}]}}}})
        await world.sleep(10.0)
        paused = await client.get("deployments", "default", "web")
        paused_rss = (await client.list("replicasets", "default")).items
        await client.patch("deployments", "default", "web", {"spec": {"paused": False}})
        await eventually(world, lambda: complete(client, "web", "nginx:1.26", replicas=2), within_s=60.0)
        return paused, paused_rss

    world, (paused, paused_rss) = scenario(story, builders=BUILDERS, kubelet=fake_kubelet())
    assert len(paused_rss) == 1  # no new ReplicaSet while paused
    assert _progressing(paused.status) == ("Unknown", "DeploymentPaused")
    assert paused.status.observed_generation == paused.metadata.generation


def test_the_same_seed_gives_the_same_journal():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=3))
        await eventually(world, lambda: complete(client, "web", "nginx:1.25", replicas=3), within_s=60.0)

    first, _ = scenario(story, builders=BUILDERS, kubelet=fake_kubelet(), seed=7)
    second, _ = scenario(story, builders=BUILDERS, kubelet=fake_kubelet(), seed=7)
    assert first.fingerprint == second.fingerprint
    assert first.journal.of_type("deployment-scale")


def test_the_revision_patch_keeps_a_stale_copys_resource_version_so_its_status_write_conflicts():
    """``getNewReplicaSet`` writes the revision annotation, then maybe a status, on the
    informer's copy. The patch's answer has a newer resourceVersion; taking it when the
    stored status moved on since the copy would let the status write overwrite the newer
    status with the copy's stale one (found by the swarm experiment: observedGeneration
    going back from 1 to 0). Upstream's single UpdateStatus answers Conflict there."""
    import types

    import trio

    from chaoskube.api.objects import deep_copy

    class Answering:
        def __init__(self, answer):
            self.answer = answer

        async def patch(self, *args, **kwargs):
            return self.answer

    copy = deployment_manifest()
    copy.metadata.resource_version, copy.metadata.generation = "5", 1
    moved_on = deep_copy(copy)
    moved_on.metadata.resource_version, moved_on.status.observed_generation = "7", 1
    written = trio.run(DeploymentController._write_revision, types.SimpleNamespace(client=Answering(moved_on)), deep_copy(copy), "1")
    assert written.metadata.annotations[REVISION_ANNOTATION] == "1" and written.metadata.resource_version == "5"  # its status write will conflict
    only_ours = deep_copy(copy)
    only_ours.metadata.resource_version = "6"
    written = trio.run(DeploymentController._write_revision, types.SimpleNamespace(client=Answering(only_ours)), deep_copy(copy), "1")
    assert written.metadata.resource_version == "6"  # nothing else changed: the copy is current

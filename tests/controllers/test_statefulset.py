"""The StatefulSet controller's pure parts (``pkg/controller/statefulset``): stable
identity, claims from volumeClaimTemplates, and :func:`plan_stateful_set` under
OrderedReady and Parallel, scale down from the highest ordinal, rolling update with a
partition, OnDelete."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.api.objects import StatefulSet
from chaoskube.controllers.statefulset import POD_INDEX_LABEL, POD_NAME_LABEL, claim_name, new_claims, new_stateful_pod, parse_ordinal, plan_stateful_set

LABELS = {"app": "db"}


def _sts(replicas: int = 3, *, policy: str = "OrderedReady", strategy: dict[str, Any] | None = None, current_replicas: int = 0) -> StatefulSet:
    sts = from_dict({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"namespace": "default", "name": "db", "uid": "sts-uid", "generation": 1},
        "spec": {"replicas": replicas, "serviceName": "db", "podManagementPolicy": policy, "selector": {"matchLabels": LABELS},
                 "updateStrategy": strategy or {"type": "RollingUpdate"},
                 "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "db", "image": "postgres"}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]},
        "status": {"replicas": 0, "currentReplicas": current_replicas},
    })
    assert isinstance(sts, StatefulSet)
    return sts


def _pod(ordinal: int, revision: str = "r1", *, ready: bool = True, phase: str = "Running", deleting: bool = False) -> Any:
    name = f"db-{ordinal}"
    meta: dict[str, Any] = {"namespace": "default", "name": name, "uid": f"uid-{ordinal}", "creationTimestamp": "2026-01-01T00:00:00Z",
                            "labels": {**LABELS, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal), "controller-revision-hash": revision}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    return from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "db", "image": "postgres"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    })


def _plan(sts: StatefulSet, pods: list[Any], current: str = "r1", update: str = "r1") -> list[tuple[str, int, str]]:
    plan = plan_stateful_set(sts, pods, current, update, sts.spec.template, now=100.0)
    return [(action.kind, action.ordinal, action.revision or action.reason) for action in plan.actions]


@pytest.mark.parametrize(("pod", "ordinal"), [("db-0", 0), ("db-12", 12), ("db", None), ("db-x", None), ("other-1", None), ("db-db-1", None), ("db-1-2", None)])
def test_ordinals_come_from_the_set_name_and_a_number(pod: str, ordinal: int | None) -> None:
    assert parse_ordinal("db", pod) == ordinal


def test_stable_identity_and_storage() -> None:
    sts = _sts()
    pod = new_stateful_pod(sts, sts.spec.template, 2, "r1")
    assert pod.metadata.name == "db-2" and pod.spec.hostname == "db-2" and pod.spec.subdomain == "db"
    assert pod.metadata.labels[POD_NAME_LABEL] == "db-2" and pod.metadata.labels[POD_INDEX_LABEL] == "2"
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-2"}} in pod.spec.volumes
    assert claim_name("data", "db", 2) == "data-db-2"
    [claim] = new_claims(sts, 2)
    assert claim.metadata.name == "data-db-2" and claim.metadata.labels == LABELS and claim.spec.resources.requests["storage"] == "1Gi"
    assert to_dict(claim)["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_ordered_ready_creates_one_pod_at_a_time_in_order() -> None:
    sts = _sts()
    assert _plan(sts, []) == [("create", 0, "r1")]
    assert _plan(sts, [_pod(0, ready=False)]) == []  # waits for db-0 to be Running and Ready
    assert _plan(sts, [_pod(0)]) == [("create", 1, "r1")]


def test_parallel_creates_every_missing_pod_at_once() -> None:
    assert _plan(_sts(policy="Parallel"), [_pod(1, ready=False)]) == [("create", 0, "r1"), ("create", 2, "r1")]


def test_a_failed_pod_is_deleted_to_be_recreated() -> None:
    assert _plan(_sts(), [_pod(0, phase="Failed", ready=False), _pod(1), _pod(2)]) == [("delete", 0, "pod failed: recreate it")]


def test_scale_down_removes_the_highest_ordinal_first_one_at_a_time() -> None:
    pods = [_pod(i) for i in range(5)]
    assert _plan(_sts(replicas=3), pods) == [("delete", 4, "scale down")]
    assert _plan(_sts(replicas=3, policy="Parallel"), pods) == [("delete", 4, "scale down"), ("delete", 3, "scale down")]


def test_rolling_update_goes_from_the_highest_ordinal_down() -> None:
    pods = [_pod(i, "r1") for i in range(3)]
    assert _plan(_sts(), pods, "r1", "r2") == [("delete", 2, "rolling update to r2")]
    pods[2] = _pod(2, "r2", ready=False)  # recreated at r2, not ready yet: wait
    assert _plan(_sts(), pods, "r1", "r2") == []
    pods[2] = _pod(2, "r2")
    assert _plan(_sts(), pods, "r1", "r2") == [("delete", 1, "rolling update to r2")]


def test_a_partition_keeps_the_lower_ordinals_at_the_current_revision() -> None:
    sts = _sts(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})
    pods = [_pod(0, "r1"), _pod(1, "r1"), _pod(2, "r2")]
    assert _plan(sts, pods, "r1", "r2") == []  # db-2 updated; 0 and 1 stay below the partition
    assert _plan(sts, [_pod(0, "r1")], "r1", "r2") == [("create", 1, "r1")]  # recreated below the partition: current revision


def test_on_delete_never_deletes_for_an_update() -> None:
    sts = _sts(strategy={"type": "OnDelete"})
    assert _plan(sts, [_pod(i, "r1") for i in range(3)], "r1", "r2") == []


def test_status_counts() -> None:
    sts = _sts()
    plan = plan_stateful_set(sts, [_pod(0, "r1"), _pod(1, "r2", ready=False), _pod(2, "r2", deleting=True)], "r1", "r2", sts.spec.template, now=100.0)
    status = plan.status
    assert (status.replicas, status.ready_replicas, status.current_replicas, status.updated_replicas) == (3, 2, 1, 1)
    assert (status.current_revision, status.update_revision) == ("r1", "r2")


# =========================================================================== scenario: status on error
def test_a_sync_whose_pod_create_fails_still_writes_its_status():
    """``performUpdate`` (stateful_set_control.go): "make sure to update the latest status
    even if there is an error with non-nil currentStatus" -- a quota that admits no pod
    makes every create fail, yet the status names the revisions the sync computed and the
    generation it observed (swarm-apps seed 19: without this, a template rolled back while
    creates failed left a status naming the abandoned update revision for 21 s)."""
    from chaoskube.controllers.statefulset import StatefulSetController
    from tests.controllers.test_replicaset import eventually, scenario

    async def story(world, client):
        quota = from_dict({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"namespace": "default", "name": "none"}, "spec": {"hard": {"pods": "0"}}})
        made = await client.create(quota)
        made.status.hard, made.status.used = {"pods": "0"}, {"pods": "0"}  # the quota controller's part, by hand
        await client.update_status(made)
        await world.sleep(1.0)
        sts = to_dict(_sts(1))
        sts["metadata"].pop("uid", None)
        sts.pop("status", None)
        sts["spec"].pop("volumeClaimTemplates", None)
        await client.create(from_dict(sts))

        async def status_written():
            got = await client.get("statefulsets", "default", "db")
            return got if got.status.observed_generation == 1 and got.status.update_revision else None

        written = await eventually(world, status_written, within_s=20.0)
        return written, (await client.list("pods", "default")).items

    world, (written, pods) = scenario(story, builders=[lambda process, client, factory, config: StatefulSetController(process, client, factory, config)])
    assert not pods
    failed = [e for e in world.journal.of_type("api-op") if e["verb"] == "create" and e["resource"] == "pods" and e["phase"] == "fail"]
    assert failed and failed[0]["code"] == 403, failed
    assert written.status.current_revision == written.status.update_revision and written.status.replicas == 0


# =========================================================================== scenario: rollback
# TestStatefulSetControlRollback (kubernetes/kubernetes pkg/controller/statefulset/
# stateful_set_control_test.go), every row: scale up, update the image (and the replicas),
# wait for every pod to run it, roll back to the oldest revision's template (ApplyRevision),
# wait for every pod to run the original image. Besides upstream's image checks: the
# rollback reuses the original revision (same name, so its pods' controller-revision-hash)
# and raises its number above the update's (getStatefulSetRevisions' UpdateControllerRevision),
# and the status names it as both current and update revision.
ROLLBACK_ROWS = [
    # (name, podManagementPolicy, initial replicas, replicas with the update)
    ("monotonic image update", "OrderedReady", 3, 3),
    ("monotonic image update and scale up", "OrderedReady", 3, 5),
    ("monotonic image update and scale down", "OrderedReady", 5, 3),
    ("burst image update", "Parallel", 3, 3),
    ("burst image update and scale up", "Parallel", 3, 5),
    ("burst image update and scale down", "Parallel", 5, 3),
]


@pytest.mark.parametrize(("name", "policy", "initial", "replicas"), ROLLBACK_ROWS, ids=[row[0] for row in ROLLBACK_ROWS])
def test_rollback_reuses_and_renumbers_the_earlier_revision(name: str, policy: str, initial: int, replicas: int) -> None:
    from chaoskube.controllers.statefulset import StatefulSetController
    from tests.controllers.test_replicaset import eventually, fake_kubelet, scenario

    async def story(world, client):
        sts = to_dict(_sts(initial, policy=policy))
        sts["metadata"].pop("uid", None)
        sts.pop("status", None)
        sts["spec"].pop("volumeClaimTemplates", None)
        await client.create(from_dict(sts))

        async def rolled_out(image, count):
            got = await client.get("statefulsets", "default", "db")
            pods = (await client.list("pods", "default")).items
            done = (got.status.observed_generation == got.metadata.generation and got.status.current_revision == got.status.update_revision
                    and got.status.ready_replicas == count == len(pods) and all(pod.spec.containers[0].image == image for pod in pods))
            return (got, pods) if done else None

        async def revisions():
            return {revision.metadata.name: revision.revision for revision in (await client.list("controllerrevisions", "default")).items}

        original, _ = await eventually(world, lambda: rolled_out("postgres", initial), within_s=60.0)
        first = await revisions()
        got = await client.get("statefulsets", "default", "db")
        got.spec.replicas = replicas
        got.spec.template.spec.containers[0].image = "foo"
        await client.update(got)
        updated, _ = await eventually(world, lambda: rolled_out("foo", replicas), within_s=90.0)
        second = await revisions()
        oldest = min(second, key=second.get)  # ApplyRevision(set, revisions[0]) after SortControllerRevisions
        got = await client.get("statefulsets", "default", "db")
        got.spec.template.spec.containers[0].image = "postgres"
        await client.update(got)
        rolled_back, pods = await eventually(world, lambda: rolled_out("postgres", replicas), within_s=90.0)
        return original, first, updated, second, oldest, rolled_back, pods, await revisions()

    world, (original, first, updated, second, oldest, rolled_back, pods, third) = scenario(
        story, builders=[lambda process, client, factory, config: StatefulSetController(process, client, factory, config)], kubelet=fake_kubelet())
    assert first == {original.status.update_revision: 1}
    assert second == {original.status.update_revision: 1, updated.status.update_revision: 2} and oldest == original.status.update_revision
    assert rolled_back.status.update_revision == rolled_back.status.current_revision == original.status.update_revision
    assert third == {original.status.update_revision: 3, updated.status.update_revision: 2}, "the rolled-back revision is renumbered to max+1"
    assert {pod.metadata.labels["controller-revision-hash"] for pod in pods} == {original.status.update_revision}

"""The StorageObjectInUseProtection admission plugin with the pvc-protection and
pv-protection controllers (chaoskube.controllers.volumeprotection): a claim a scheduled pod
names stays (Terminating) until the pod is gone; a volume stays while Bound."""

from __future__ import annotations

from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import DeleteOptions
from chaoskube.controllers.volumeprotection import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER, PVCProtectionController, PVProtectionController
from tests.controllers.test_garbagecollector import gone
from tests.controllers.test_replicaset import eventually, scenario


def pvc_protection(process, client, factory, config):
    return PVCProtectionController(process, client, factory, config)


def pv_protection(process, client, factory, config):
    return PVProtectionController(process, client, factory, config)


def _claim(name="data"):
    return from_dict({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
                      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}})


def _pod(name="db", claim="data", node="node-1"):
    spec = {"containers": [{"name": "db", "image": "postgres:16"}], "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}
    if node:
        spec["nodeName"] = node
    return from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def test_a_claim_used_by_a_scheduled_pod_stays_terminating_until_the_pod_is_gone():
    async def story(world, client):
        created = await client.create(_claim())
        await client.create(_pod())
        await client.delete("persistentvolumeclaims", "default", "data")
        await world.sleep(15.0)
        held = await client.get("persistentvolumeclaims", "default", "data")
        await client.delete("pods", "default", "db", options=DeleteOptions(grace_period_seconds=0))
        await eventually(world, lambda: gone(client, "persistentvolumeclaims", "data"))
        return created, held

    world, (created, held) = scenario(story, builders=[pvc_protection])
    assert created.metadata.finalizers == [PVC_PROTECTION_FINALIZER]  # the admission plugin
    assert held.metadata.deletion_timestamp is not None and held.metadata.finalizers == [PVC_PROTECTION_FINALIZER]
    removals = [e for e in world.journal.of_type("volume-protection") if e["action"] == "remove-finalizer"]
    assert [(e["resource"], e["name"]) for e in removals] == [("persistentvolumeclaims", "data")]


def test_a_claim_named_only_by_an_unscheduled_pod_goes_at_once():
    async def story(world, client):
        await client.create(_claim())
        await client.create(_pod(node=""))
        await client.delete("persistentvolumeclaims", "default", "data")
        await eventually(world, lambda: gone(client, "persistentvolumeclaims", "data"), within_s=10.0)
        return await client.get("pods", "default", "db")

    world, pod = scenario(story, builders=[pvc_protection])
    assert pod.metadata.deletion_timestamp is None


def test_a_claim_created_without_the_finalizer_gets_it_from_the_controller():
    """``NeedToAddFinalizer``: claims from before the plugin was on (here: the finalizer
    removed by an update) get it back."""
    async def story(world, client):
        claim = await client.create(_claim())
        claim.metadata.finalizers = []
        await client.update(claim)

        async def back():
            return (await client.get("persistentvolumeclaims", "default", "data")).metadata.finalizers == [PVC_PROTECTION_FINALIZER]

        return await eventually(world, back, within_s=10.0)

    scenario(story, builders=[pvc_protection])


def _volume(name="pv-1"):
    return from_dict({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}})


def test_a_bound_volume_stays_until_it_is_no_longer_bound():
    async def story(world, client):
        volume = await client.create(_volume())
        volume.status.phase = "Bound"
        volume = await client.update_status(volume)
        await client.delete("persistentvolumes", "", "pv-1")
        await world.sleep(15.0)
        held = await client.get("persistentvolumes", "", "pv-1")
        held.status.phase = "Released"
        await client.update_status(held)

        async def volume_gone():
            return not [v for v in (await client.list("persistentvolumes")).items if v.metadata.name == "pv-1"]

        await eventually(world, volume_gone, within_s=10.0)
        return volume, held

    world, (volume, held) = scenario(story, builders=[pv_protection])
    assert volume.metadata.finalizers == [PV_PROTECTION_FINALIZER]
    assert held.metadata.deletion_timestamp is not None and held.metadata.finalizers == [PV_PROTECTION_FINALIZER]


# =========================================================================== StatefulSet claim retention
from chaoskube.controllers.garbagecollector import GarbageCollector  # noqa: E402
from chaoskube.controllers.statefulset import StatefulSetController, claim_owner_refs_for_set_and_pod, claim_owner_up_to_date  # noqa: E402
from tests.controllers.test_replicaset import fake_kubelet  # noqa: E402


def _set(name, replicas, policy=None):
    spec = {"replicas": replicas, "serviceName": name, "podManagementPolicy": "Parallel", "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "resources": {"requests": {"storage": "1Gi"}}}}]}
    if policy:
        spec["persistentVolumeClaimRetentionPolicy"] = policy
    return from_dict({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def _sts_controller(process, client, factory, config):
    return StatefulSetController(process, client, factory, config)


def _gc(process, client, factory, config):
    return GarbageCollector(process, client, factory, config)


async def _claim_names(client):
    return sorted(c.metadata.name for c in (await client.list("persistentvolumeclaims", "default")).items)


def test_claims_go_or_stay_as_the_retention_policy_says_on_scale_down_and_set_deletion():
    async def story(world, client):
        await client.create(_set("db", 3, {"whenScaled": "Delete", "whenDeleted": "Delete"}))
        await client.create(_set("keep", 3))

        async def ready():
            pods = (await client.list("pods", "default")).items
            return len([p for p in pods if p.status.phase == "Running"]) == 6

        await eventually(world, ready, within_s=60.0)
        before = await _claim_names(client)
        owners = {c.metadata.name: [(r.kind, r.name) for r in c.metadata.owner_references] for c in (await client.list("persistentvolumeclaims", "default")).items}
        for name in ("db", "keep"):
            await client.patch("statefulsets", "default", name, {"spec": {"replicas": 1}})

        async def scaled():
            return await _claim_names(client) == ["data-db-0", "data-keep-0", "data-keep-1", "data-keep-2"]

        await eventually(world, scaled, within_s=60.0)
        await client.delete("statefulsets", "default", "db")

        async def set_deleted():
            return await _claim_names(client) == ["data-keep-0", "data-keep-1", "data-keep-2"]

        await eventually(world, set_deleted, within_s=60.0)
        await world.sleep(10.0)
        return before, owners, await _claim_names(client)

    world, (before, owners, after) = scenario(story, builders=[_sts_controller, _gc, pvc_protection], kubelet=fake_kubelet())
    assert before == ["data-db-0", "data-db-1", "data-db-2", "data-keep-0", "data-keep-1", "data-keep-2"]
    assert owners["data-db-0"] == [("StatefulSet", "db")] and owners["data-keep-0"] == []  # Delete/Delete in range: the set; Retain: none
    assert after == ["data-keep-0", "data-keep-1", "data-keep-2"]
    condemned = [e for e in world.journal.of_type("statefulset-claim") if e["claim"] in ("data-db-1", "data-db-2") and e["owners"] and e["owners"][0].startswith("Pod/")]
    assert sorted(e["claim"] for e in condemned) == ["data-db-1", "data-db-2"]


def _claim_with(refs):
    claim = _claim("data-db-2")
    claim.metadata.owner_references = refs
    return claim


def _owned(name, replicas, policy):
    sts = _set(name, replicas, policy)
    sts.metadata.uid = "set-uid"
    pod = _pod(name=f"{name}-2")
    pod.metadata.uid = "pod-uid"
    return sts, pod


# (whenDeleted, whenScaled, replicas) -> the owners the claim of ordinal 2 gets (isClaimOwnerUpToDate's table).
RETENTION_CASES = [
    ("Retain", "Retain", 3, []), ("Retain", "Retain", 2, []),
    ("Delete", "Retain", 3, ["StatefulSet"]), ("Delete", "Retain", 2, ["StatefulSet"]),
    ("Retain", "Delete", 3, []), ("Retain", "Delete", 2, ["Pod"]),
    ("Delete", "Delete", 3, ["StatefulSet"]), ("Delete", "Delete", 2, ["Pod"]),
]


import pytest  # noqa: E402


@pytest.mark.parametrize(("when_deleted", "when_scaled", "replicas", "kinds"), RETENTION_CASES)
def test_claim_owner_references_follow_the_retention_policy(when_deleted, when_scaled, replicas, kinds):
    sts, pod = _owned("db", replicas, {"whenDeleted": when_deleted, "whenScaled": when_scaled})
    claim = _claim_with([])
    refs = claim_owner_refs_for_set_and_pod(claim, sts, pod)
    assert [ref.kind for ref in refs] == kinds and all(ref.controller for ref in refs)
    assert claim_owner_up_to_date(claim, sts, pod) == (kinds == [])
    assert claim_owner_up_to_date(_claim_with(refs), sts, pod)


def test_a_claim_another_controller_owns_is_left_alone():
    from chaoskube.api.objects import OwnerReference
    sts, pod = _owned("db", 2, {"whenDeleted": "Delete", "whenScaled": "Delete"})
    other = OwnerReference(api_version="example.com/v1", kind="Backup", name="b", uid="other", controller=True)
    claim = _claim_with([other])
    assert claim_owner_up_to_date(claim, sts, pod)
    assert claim_owner_refs_for_set_and_pod(claim, sts, pod) == [other]

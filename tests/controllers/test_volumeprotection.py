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

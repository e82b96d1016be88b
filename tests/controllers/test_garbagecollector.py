"""The garbage collector (``pkg/controller/garbagecollector``), background propagation.

Pure parts: the absent-owner LRU, the classification of references, which owner kinds
are watched.

Scenarios against real API servers: deleting a Deployment garbage-collects its
ReplicaSet and pods (the fake kubelet finishes the graceful pod deletions); a dependent
with one live and one deleted owner only loses the dangling reference; an owner replaced
by another object of the same name (a new uid) counts as absent; a dependent whose owner
never existed is collected, one whose owner exists is left alone; an EndpointSlice goes
with its Service; and a collector that never starts (none in the cluster) leaves orphans
behind, so the scenarios can tell.
"""

from __future__ import annotations

import msgspec

from chaoskube.api.manifests import from_dict
from chaoskube.api.objects import OwnerReference
from chaoskube.client.client import ApiError
from chaoskube.controllers.deployment import DeploymentController
from chaoskube.controllers.garbagecollector import (
    ABSENT_OWNER_CACHE_SIZE,
    AbsentOwnerCache,
    GarbageCollector,
    classify,
    owner_resource,
)
from chaoskube.controllers.replicaset import ReplicaSetController
from tests.controllers.test_deployment import complete, deployment_manifest
from tests.controllers.test_replicaset import LABELS, eventually, fake_kubelet, list_pods, pod_manifest, replica_set_manifest, scenario


# =========================================================================== pure parts
def test_the_absent_owner_cache_is_a_bounded_lru():
    cache = AbsentOwnerCache(capacity=2)
    cache.add("a")
    cache.add("b")
    assert cache.has("a")  # touches "a": "b" is now the least recently used
    cache.add("c")
    assert cache.has("a") and cache.has("c") and not cache.has("b") and len(cache) == 2
    assert AbsentOwnerCache().capacity == ABSENT_OWNER_CACHE_SIZE == 500


def _reference(kind, uid, api_version="apps/v1"):
    return OwnerReference(api_version=api_version, kind=kind, name=f"n-{uid}", uid=uid)


def test_references_split_into_solid_and_dangling():
    refs = [_reference("ReplicaSet", "1"), _reference("Deployment", "2"), _reference("Service", "3", "v1")]
    assert classify(refs, [False, True, False]) == ([refs[0], refs[2]], [refs[1]])
    assert classify([], []) == ([], [])


def test_only_owner_kinds_this_model_watches_can_be_absent():
    assert owner_resource(_reference("Deployment", "1")) == "deployments"
    assert owner_resource(_reference("ReplicaSet", "1")) == "replicasets"
    assert owner_resource(_reference("Service", "1", "v1")) == "services"
    assert owner_resource(_reference("StatefulSet", "1")) == "statefulsets"
    assert owner_resource(_reference("Node", "1", "v1")) is None  # not watched: never absent
    assert owner_resource(_reference("Deployment", "1", "extensions/v1beta1")) is None  # another apiVersion


# =========================================================================== scenarios
def rs_controller(process, client, factory, config):
    return ReplicaSetController(process, client, factory, config)


def deployment_controller(process, client, factory, config):
    return DeploymentController(process, client, factory, config)


def garbage_collector(process, client, factory, config):
    return GarbageCollector(process, client, factory, config)


def owned_by(obj, owner):
    reference = OwnerReference(api_version=owner.API_VERSION, kind=owner.KIND, name=owner.metadata.name, uid=owner.metadata.uid)
    obj.metadata.owner_references = [*obj.metadata.owner_references, reference]
    return obj


async def gone(client, resource, name):
    try:
        await client.get(resource, "default", name)
    except ApiError as error:
        if error.code == 404:
            return True
        raise
    return False


def test_deleting_a_deployment_garbage_collects_its_replica_set_and_pods():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=4))
        await eventually(world, lambda: complete(client, "web", "nginx:1.25", replicas=4), within_s=60.0)
        [rs] = (await client.list("replicasets", "default")).items
        pods = await list_pods(client)
        deleted_at = world.now
        await client.delete("deployments", "default", "web")

        async def all_gone():
            left = (await client.list("replicasets", "default")).items + await list_pods(client)
            return not left

        await eventually(world, all_gone, within_s=60.0)
        return deleted_at, rs, pods

    world, (deleted_at, rs, pods) = scenario(story, builders=[rs_controller, deployment_controller, garbage_collector], kubelet=fake_kubelet())
    deletions = [e for e in world.journal.of_type("gc-delete") if e["t"] >= deleted_at]
    assert [(e["resource"], e["name"]) for e in deletions if e["resource"] == "replicasets"] == [("replicasets", rs.metadata.name)]
    assert sorted(e["name"] for e in deletions if e["resource"] == "pods") == sorted(p.metadata.name for p in pods)
    rs_deleted = next(e["t"] for e in deletions if e["resource"] == "replicasets")
    assert all(e["t"] > rs_deleted for e in deletions if e["resource"] == "pods")  # owner first, then dependents
    assert all(e["owners"] == [rs.metadata.uid] for e in deletions if e["resource"] == "pods")


def test_without_a_collector_the_dependents_of_a_deleted_deployment_stay():
    async def story(world, client):
        await client.create(deployment_manifest(replicas=2))
        await eventually(world, lambda: complete(client, "web", "nginx:1.25", replicas=2), within_s=60.0)
        await client.delete("deployments", "default", "web")
        await world.sleep(20.0)
        return (await client.list("replicasets", "default")).items, await list_pods(client)

    world, (rss, pods) = scenario(story, builders=[rs_controller, deployment_controller], kubelet=fake_kubelet())
    assert len(rss) == 1 and len(pods) == 2 and not world.journal.of_type("gc-delete")


def test_a_dependent_with_a_live_owner_only_loses_the_dangling_reference():
    async def story(world, client):
        keeper = await client.create(replica_set_manifest("keeper", 0, labels={"app": "keeper"}))
        doomed = await client.create(replica_set_manifest("doomed", 0, labels={"app": "doomed"}))
        pod = await client.create(owned_by(owned_by(pod_manifest("shared", {"app": "none"}), keeper), doomed))
        await client.delete("replicasets", "default", "doomed")

        async def pruned():
            current = await client.get("pods", "default", "shared")
            return current if len(current.metadata.owner_references) == 1 else None

        current = await eventually(world, pruned)
        await world.sleep(5.0)
        return keeper, pod, current, await client.get("pods", "default", "shared")

    world, (keeper, pod, pruned, later) = scenario(story, builders=[garbage_collector])
    assert [r.uid for r in pruned.metadata.owner_references] == [keeper.metadata.uid]
    assert later.metadata.uid == pod.metadata.uid and later.metadata.deletion_timestamp is None  # still there
    [event] = world.journal.of_type("gc-orphan-refs")
    assert event["name"] == "shared" and event["kept"] == [keeper.metadata.uid]
    assert not world.journal.of_type("gc-delete")


def test_an_owner_recreated_under_the_same_name_is_absent_for_the_old_dependents():
    async def story(world, client):
        first = await client.create(replica_set_manifest("web", 0))
        await client.delete("replicasets", "default", "web")
        second = await client.create(replica_set_manifest("web", 0))  # same name, new uid
        # a dependent that still names the first one: its owner's name resolves, to another uid
        orphaned = await client.create(owned_by(pod_manifest("child", {"app": "none"}), first))
        await eventually(world, lambda: gone(client, "pods", "child"))
        return first, second, orphaned

    world, (first, second, orphaned) = scenario(story, builders=[garbage_collector])
    assert first.metadata.uid != second.metadata.uid
    [event] = [e for e in world.journal.of_type("gc-delete") if e["name"] == "child"]
    assert event["uid"] == orphaned.metadata.uid and event["owners"] == [first.metadata.uid]
    assert [e["name"] for e in world.journal.of_type("gc-delete")] == ["child"]  # the new "web" stays


def test_a_dependent_is_collected_only_when_its_owner_is_really_absent():
    async def story(world, client):
        service = await client.create(from_dict({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": dict(LABELS), "ports": [{"port": 80}]},
        }))
        ghost = msgspec.structs.replace(service, metadata=msgspec.structs.replace(service.metadata, name="ghost", uid="0000-never-existed"))
        kept = await client.create(owned_by(pod_manifest("kept", {"app": "none"}), service))
        await client.create(owned_by(pod_manifest("haunted", {"app": "none"}), ghost))
        slice_ = await client.create(owned_by(from_dict({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web-abcde", "namespace": "default"},
            "addressType": "IPv4", "endpoints": [],
        }), service))
        await eventually(world, lambda: gone(client, "pods", "haunted"))
        await world.sleep(5.0)
        still = await client.get("pods", "default", "kept")
        await client.delete("services", "default", "web")
        await eventually(world, lambda: gone(client, "endpointslices", "web-abcde"))
        await eventually(world, lambda: gone(client, "pods", "kept"))
        return kept, still, slice_

    world, (kept, still, slice_) = scenario(story, builders=[garbage_collector])
    assert still.metadata.uid == kept.metadata.uid  # its owner exists: left alone
    names = [e["name"] for e in world.journal.of_type("gc-delete")]
    assert names == ["haunted", "web-abcde", "kept"] or names == ["haunted", "kept", "web-abcde"]

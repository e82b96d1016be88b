"""Server-side apply and managedFields through the simulated API server (the paths the HTTP
front carries kubectl's ``apply --server-side`` to): each test a short story."""

from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.apiserver.storage import copy_object
from tests.apiserver.apiserver_harness import run_api


def deployment(replicas=None, image="nginx:1.27", extra_env=None, labels=None):
    spec = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": image, **({"env": extra_env} if extra_env else {})}]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", **({"labels": labels} if labels else {})}, "spec": spec}


def apply(api, body, manager="kubectl", force=False, **fields):
    return api("patch", "deployments", namespace="default", name=body["metadata"]["name"], body=body, patch_type="apply", field_manager=manager, force=force, **fields)


def entries(obj):
    return {(e["manager"], e["operation"], e.get("subresource", "")): e for e in obj.metadata.managed_fields or ()}


def test_apply_creates_then_a_second_manager_conflicts_then_force_takes_ownership():
    async def story(world, api, registry):
        created = await apply(api, deployment(replicas=2))
        changed = copy_object(created.object)
        changed.spec.replicas = 5
        updated = await api("update", "deployments", namespace="default", name="web", body=changed, field_manager="kubectl-scale")
        refused = await apply(api, deployment(replicas=3))
        same_value = await apply(api, deployment(replicas=5))
        forced = await apply(api, deployment(replicas=3), force=True)
        return created, updated, refused, same_value, forced

    _, (created, updated, refused, same_value, forced) = run_api(story)
    assert created.code == 201 and created.object.spec.replicas == 2
    applied = entries(created.object)[("kubectl", "Apply", "")]
    assert applied["apiVersion"] == "apps/v1" and applied["fieldsType"] == "FieldsV1"
    assert applied["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert applied["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}'] == {".": {}, "f:image": {}, "f:name": {}}
    scaled = entries(updated.object)[("kubectl-scale", "Update", "")]
    assert scaled["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries(updated.object)[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]
    assert (refused.code, refused.status.reason) == (409, "Conflict")
    assert refused.status.message == 'Apply failed with 1 conflict: conflict with "kubectl-scale" using apps/v1: .spec.replicas'
    assert refused.status.causes == ('.spec.replicas: conflict with "kubectl-scale" using apps/v1',)
    # the same value is no conflict: the field becomes shared
    assert same_value.code == 200
    shared = entries(same_value.object)
    assert "f:replicas" in shared[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"] and "f:replicas" in shared[("kubectl-scale", "Update", "")]["fieldsV1"]["f:spec"]
    assert forced.code == 200 and forced.object.spec.replicas == 3
    assert ("kubectl-scale", "Update", "") not in entries(forced.object)  # its only field was taken


def test_a_field_no_longer_applied_is_removed_unless_another_manager_owns_it():
    async def story(world, api, registry):
        env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
        await apply(api, deployment(extra_env=env, labels={"team": "web", "tier": "front"}))
        other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "front"}}}
        await apply(api, other, manager="other")
        dropped = await apply(api, deployment(extra_env=[{"name": "A", "value": "1"}], labels={"team": "web"}))
        return dropped

    _, dropped = run_api(story)
    container = dropped.object.spec.template.spec.containers[0]
    assert [(e["name"], e["value"]) for e in container.env] == [("A", "1")]  # B: only kubectl owned it
    assert dropped.object.metadata.labels == {"team": "web", "tier": "front"}  # tier: "other" still applies it


def test_dry_run_apply_writes_nothing_and_first_apply_keeps_existing_fields_as_before_first_apply():
    async def story(world, api, registry):
        tracked = await api("create", "deployments", namespace="default", body=from_dict(deployment(replicas=1)))
        plain = copy_object(tracked.object)
        plain.metadata.managed_fields = []  # reset: an existing object without them stays untracked
        created = await api("update", "deployments", namespace="default", name="web", body=plain)
        conflicting = await apply(api, deployment(replicas=4))
        dry = await apply(api, deployment(replicas=4), force=True, dry_run=True)
        after_dry = await api("get", "deployments", namespace="default", name="web")
        applied = await apply(api, deployment(replicas=1))
        return created, conflicting, dry, after_dry, applied

    _, (created, conflicting, dry, after_dry, applied) = run_api(story)
    assert not created.object.metadata.managed_fields
    assert conflicting.status.message == 'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas'

    assert dry.code == 200 and dry.object.spec.replicas == 4
    assert after_dry.object.spec.replicas == 1 and after_dry.object.metadata.resource_version == created.object.metadata.resource_version
    managers = entries(applied.object)
    assert set(managers) == {("before-first-apply", "Update", ""), ("kubectl", "Apply", "")}
    # what kubectl applies with the same value is shared with before-first-apply
    assert "f:replicas" in managers[("before-first-apply", "Update", "")]["fieldsV1"]["f:spec"]
    assert "f:replicas" in managers[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]


def test_updates_record_update_managers_and_an_empty_list_resets_them():
    async def story(world, api, registry):
        created = await api("create", "deployments", namespace="default", body=from_dict(deployment(replicas=1)), field_manager="creator")
        patched = await api("patch", "deployments", namespace="default", name="web", body={"metadata": {"labels": {"x": "1"}}}, field_manager="labeller")
        again = await api("patch", "deployments", namespace="default", name="web", body={"metadata": {"labels": {"y": "1"}}}, field_manager="labeller")
        status = await api("patch", "deployments", namespace="default", name="web", subresource="status", body={"status": {"observedGeneration": 1}}, field_manager="controller")
        reset = copy_object(status.object)
        reset.metadata.managed_fields = []
        cleared = await api("update", "deployments", namespace="default", name="web", body=reset, field_manager="editor")
        return created, patched, again, status, cleared

    _, (created, patched, again, status, cleared) = run_api(story)
    assert set(entries(created.object)) == {("creator", "Update", "")}
    assert "f:status" not in entries(created.object)[("creator", "Update", "")]["fieldsV1"]  # reset fields
    assert entries(patched.object)[("labeller", "Update", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}}
    # a second write of the same manager merges into its entry
    assert entries(again.object)[("labeller", "Update", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}, "f:y": {}}}}
    assert entries(status.object)[("controller", "Update", "status")]["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}
    assert not cleared.object.metadata.managed_fields


def test_bad_applies_are_refused_with_upstreams_messages():
    async def story(world, api, registry):
        wrong_kind = {**deployment(), "kind": "StatefulSet"}
        with_managed = deployment()
        with_managed["metadata"]["managedFields"] = [{"manager": "x", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]
        return await apply(api, wrong_kind), await apply(api, with_managed)

    _, (wrong_kind, with_managed) = run_api(story)
    assert (wrong_kind.code, wrong_kind.status.message) == (400, "invalid object type: apps/v1, Kind=StatefulSet")
    assert (with_managed.code, with_managed.status.message) == (400, "metadata.managedFields must be nil")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                 "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                 "tags": {"type": "array", "items": {"type": "string"}},
             }}}}}}]},
}


def test_custom_resources_merge_by_their_schemas_list_types():
    async def story(world, api, registry):
        await api("create", "customresourcedefinitions", body=from_dict(CRD))
        await api.eventually("get", "customresourcedefinitions", lambda r: any(c.type == "Established" and c.status == "True" for c in r.object.status.conditions), name="widgets.example.com")
        await api.eventually("list", "widgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")

        def widget(ports, tags):
            return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"ports": ports, "tags": tags}}

        first = await api("patch", "widgets.example.com", namespace="default", name="w", body=widget([{"name": "http", "port": 80}], ["a"]), patch_type="apply", field_manager="one")
        second = await api("patch", "widgets.example.com", namespace="default", name="w", body=widget([{"name": "https", "port": 443}], ["b"]), patch_type="apply", field_manager="two")
        return first, second

    _, (first, second) = run_api(story)
    assert first.code == 201, first
    assert second.code == 409, second  # tags is an atomic list owned by "one"
    assert second.status.message == 'Apply failed with 1 conflict: conflict with "one": .spec.tags'


def test_a_scale_write_is_recorded_as_the_scale_subresource_and_the_scale_shows_its_managers():
    async def story(world, api, registry):
        await apply(api, deployment(replicas=2))
        scale = (await api("get", "deployments", namespace="default", name="web", subresource="scale")).object
        scale.spec.replicas = 5
        scale.metadata.resource_version = ""
        await api("update", "deployments", namespace="default", name="web", subresource="scale", body=scale, field_manager="hpa")
        parent = await api("get", "deployments", namespace="default", name="web")
        after = await api("get", "deployments", namespace="default", name="web", subresource="scale")
        return scale, parent, after

    _, (scale, parent, after) = run_api(story)
    # ScaleHandler.ToSubresource: the applier owned replicas, seen as an autoscaling/v1 entry
    before = [(e["manager"], e["operation"], e["apiVersion"], e["fieldsV1"]) for e in scale.metadata.managed_fields]
    assert before == [("kubectl", "Apply", "autoscaling/v1", {"f:spec": {"f:replicas": {}}})]
    managers = entries(parent.object)
    assert managers[("hpa", "Update", "scale")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert managers[("hpa", "Update", "scale")]["apiVersion"] == "apps/v1"
    assert "f:replicas" not in managers[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]  # taken by the scale write
    assert [(e["manager"], e.get("subresource", "")) for e in after.object.metadata.managed_fields] == [("hpa", "scale")]


def test_apply_to_the_status_subresource_is_its_own_manager():
    async def story(world, api, registry):
        await apply(api, deployment(replicas=1))
        status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "status": {"observedGeneration": 1}, "spec": {"replicas": 9}}
        applied = await api("patch", "deployments", namespace="default", name="web", subresource="status", body=status, patch_type="apply", field_manager="status-writer")
        return applied

    _, applied = run_api(story)
    assert applied.code == 200, applied
    assert applied.object.spec.replicas == 1  # the status subresource ignores the spec
    assert applied.object.status.observed_generation == 1
    managers = entries(applied.object)
    assert managers[("status-writer", "Apply", "status")]["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}

"""managedFields of a custom resource written at several served versions, through the
simulated API server: each manager's entry is recorded at the version of the request that
wrote it (its set in that version's schema), an applier that applies at another version
keeps one entry, at the new version, an updater gets one entry per version, and conflicts
are found in each entry's own version (apimachinery ``pkg/util/managedfields/internal``:
``structuredmerge.go``, ``versionconverter.go``, ``buildmanagerinfo.go``; apiextensions
``customresource_handler.go``; "Server-Side Apply", kubernetes.io, on ``apiVersion``).

In-process requests name no version (the storage one); the HTTPS front names its URL's."""

from __future__ import annotations

import copy

from chaoskube.api import custom_type, from_dict
from chaoskube.api.fieldpath import set_from_fields_v1
from tests.apiserver.apiserver_harness import run_api

PORTS_MAP = {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
             "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}
PORTS_ATOMIC = {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}


def _version(name, storage, ports, served=True):
    return {"name": name, "served": served, "storage": storage, "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}, "ports": ports}}}}}}


#: v1beta1 (served, not stored) keys its ports by name; v1 (the storage version) has them atomic.
GADGETS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "gadgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
             "versions": [_version("v1alpha1", False, PORTS_MAP), _version("v1beta1", False, PORTS_MAP), _version("v1", True, PORTS_ATOMIC)]},
}
TYPES = {(f"example.com/{v}", "Gadget"): custom_type(f"example.com/{v}", "Gadget", "gadgets.example.com", True) for v in ("v1alpha1", "v1beta1", "v1")}


def gadget(version, spec, **meta):
    return from_dict({"apiVersion": f"example.com/{version}", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default", **meta}, "spec": spec}, custom=TYPES)


def config(version, spec):
    return {"apiVersion": f"example.com/{version}", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}, "spec": spec}


def entries(obj):
    return sorted((e["manager"], e["operation"], e["apiVersion"]) for e in obj.metadata.managed_fields or ())


def owned(obj, manager, operation):
    (entry,) = [e for e in obj.metadata.managed_fields if (e["manager"], e["operation"]) == (manager, operation)]
    return entry["apiVersion"], set_from_fields_v1(entry["fieldsV1"])


async def _setup(api):
    assert (await api("create", "customresourcedefinitions", body=from_dict(GADGETS))).code == 201
    await api.eventually("list", "gadgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")


def test_each_entry_is_recorded_at_the_version_of_the_request_that_wrote_it():
    async def story(world, api, registry):
        await _setup(api)
        made = await api("create", "gadgets.example.com", namespace="default", version="v1beta1", field_manager="maker",
                         body=gadget("v1beta1", {"size": 1, "ports": [{"name": "a", "port": 80}]}))
        # the same updater at the storage version: a second Update entry (its identifier has the version)
        changed = gadget("v1", {"size": 2, "ports": [{"name": "a", "port": 80}]}, resourceVersion=made.object.metadata.resource_version)
        updated = await api("update", "gadgets.example.com", namespace="default", name="g", field_manager="maker", body=changed)
        # an applier at v1beta1, then the same applier at v1: one Apply entry, now at v1
        first = await api("patch", "gadgets.example.com", namespace="default", name="g", version="v1beta1", patch_type="apply", field_manager="applier",
                          body=config("v1beta1", {"color": "red"}))
        second = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="apply", field_manager="applier",
                           body=config("v1", {"color": "blue"}))
        return made, updated, first, second

    _, (made, updated, first, second) = run_api(story)
    assert made.code == 201 and made.object.API_VERSION == "example.com/v1"  # stored at the storage version
    assert entries(made.object) == [("maker", "Update", "example.com/v1beta1")]
    version, fields = owned(made.object, "maker", "Update")
    # the set is in v1beta1's schema: its ports are a map keyed by name
    assert (("f", "spec"), ("f", "ports"), ("k", (("name", '"a"'),)), ("f", "port")) in fields
    assert updated.code == 200
    assert entries(updated.object) == [("maker", "Update", "example.com/v1"), ("maker", "Update", "example.com/v1beta1")]
    at_v1 = [set_from_fields_v1(e["fieldsV1"]) for e in updated.object.metadata.managed_fields if e["apiVersion"] == "example.com/v1"][0]
    assert at_v1 == {(("f", "spec"), ("f", "size"))}
    assert first.code == 200 and second.code == 200, (first.status, second.status)
    assert ("applier", "Apply", "example.com/v1beta1") in entries(first.object)
    assert [e for e in entries(second.object) if e[0] == "applier"] == [("applier", "Apply", "example.com/v1")]
    assert second.object.content["spec"]["color"] == "blue"


def test_a_conflict_across_versions_is_found_in_the_owners_version():
    """x applies a port at v1beta1 (ports keyed by name there); y applies the port list at
    v1 (atomic there): the change is compared in x's version, so the conflict names x's
    field ``.spec.ports[name="a"].port``, not v1's whole list."""

    async def story(world, api, registry):
        await _setup(api)
        x = await api("patch", "gadgets.example.com", namespace="default", name="g", version="v1beta1", patch_type="apply", field_manager="x",
                      body=config("v1beta1", {"ports": [{"name": "a", "port": 80}]}))
        y = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="apply", field_manager="y",
                      body=config("v1", {"ports": [{"name": "a", "port": 81}]}))
        forced = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="apply", field_manager="y", force=True,
                           body=config("v1", {"ports": [{"name": "a", "port": 81}]}))
        return x, y, forced

    _, (x, y, forced) = run_api(story)
    assert x.code == 201, x.status
    assert y.code == 409, y.status
    assert y.status.message == 'Apply failed with 1 conflict: conflict with "x": .spec.ports[name="a"].port'
    assert forced.code == 200
    assert entries(forced.object) == [("x", "Apply", "example.com/v1beta1"), ("y", "Apply", "example.com/v1")]
    # x lost the port it no longer owns; it keeps the list item's key
    _, x_fields = owned(forced.object, "x", "Apply")
    assert (("f", "spec"), ("f", "ports"), ("k", (("name", '"a"'),)), ("f", "port")) not in x_fields
    assert (("f", "spec"), ("f", "ports"), ("k", (("name", '"a"'),)), ("f", "name")) in x_fields


def test_an_entry_at_a_version_the_crd_no_longer_lists_blocks_apply_and_freezes_managed_fields():
    """Upstream's open kubernetes#111937: the CRD converter answers a plain error for a
    version not in ``spec.versions`` (``crConverter.ConvertToVersion``), which the field
    manager does not take for a missing version, so an apply fails (500) and an update
    keeps the object's managedFields as they were (``UpdateNoErrors``)."""

    async def story(world, api, registry):
        await _setup(api)
        old = await api("patch", "gadgets.example.com", namespace="default", name="g", version="v1alpha1", patch_type="apply", field_manager="old",
                        body=config("v1alpha1", {"size": 1}))
        crd = (await api("get", "customresourcedefinitions", name="gadgets.example.com")).object
        without = from_dict(copy.deepcopy({**GADGETS, "metadata": {"name": "gadgets.example.com", "resourceVersion": crd.metadata.resource_version},
                                           "spec": {**GADGETS["spec"], "versions": GADGETS["spec"]["versions"][1:]}}))
        retired = await api("update", "customresourcedefinitions", name="gadgets.example.com", body=without)
        await api.eventually("patch", "gadgets.example.com", lambda r: r.code == 500, namespace="default", name="g", patch_type="apply", field_manager="new",
                             body=config("v1", {"color": "red"}))
        applied = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="apply", field_manager="new", body=config("v1", {"color": "red"}))
        patched = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="merge", field_manager="patcher", body={"spec": {"size": 3}})
        # the way out upstream's own conversion_test.go takes ("Clear managed fields to avoid
        # known problem"): reset them with [{}], then apply
        cleared = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="merge", field_manager="patcher", body={"metadata": {"managedFields": [{}]}})
        after = await api("patch", "gadgets.example.com", namespace="default", name="g", patch_type="apply", field_manager="new", body=config("v1", {"color": "red"}))
        return old, retired, applied, patched, cleared, after

    _, (old, retired, applied, patched, cleared, after) = run_api(story)
    assert old.code == 201 and retired.code == 200, (old.status, retired.status)
    assert applied.code == 500
    assert applied.status.message == "request to convert CR to an invalid group/version: example.com/v1alpha1"
    assert patched.code == 200 and patched.object.content["spec"]["size"] == 3
    assert patched.object.metadata.managed_fields == old.object.metadata.managed_fields
    assert cleared.code == 200 and not cleared.object.metadata.managed_fields
    # (the first apply to an object without managedFields: what exists is before-first-apply's)
    assert after.code == 200 and entries(after.object) == [("before-first-apply", "Update", "example.com/v1"), ("new", "Apply", "example.com/v1")]

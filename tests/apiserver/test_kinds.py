"""The common kinds through the API server's front door: defaulting, validation with
upstream's messages, the Job's generated selector, Secrets' stringData, CustomResourceDefinitions
served with their schema and subresources, and etcd's request size limit."""

import base64
import copy

from chaoskube.api import Scale, ScaleSpec, custom_type, from_dict
from tests.apiserver.apiserver_harness import run_api


def obj(manifest):
    return from_dict(manifest)


def _template(labels, restart="Always"):
    return {"metadata": {"labels": labels}, "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx:1.27"}]}}


def stateful_set(name="db", replicas=3, labels=None, selector=None):
    labels = labels or {"app": name}
    return obj({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": selector or labels}, "template": _template(labels),
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]},
    })


def test_workloads_are_defaulted_and_validated_as_upstream():
    async def story(world, api, registry):
        created = await api("create", "statefulsets", namespace="default", body=stateful_set())
        negative = await api("create", "statefulsets", namespace="default", body=stateful_set("neg", replicas=-3))
        mismatch = await api("create", "statefulsets", namespace="default", body=stateful_set("mis", selector={"app": "other"}))
        daemon = await api("create", "daemonsets", namespace="default", body=obj({
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": _template({"app": "agent"})},
        }))
        deployment = await api("create", "deployments", namespace="default", body=obj({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": -3, "selector": {"matchLabels": {"app": "web"}}, "template": _template({"app": "web"})},
        }))
        return created, negative, mismatch, daemon, deployment

    _, (created, negative, mismatch, daemon, deployment) = run_api(story)
    assert created.code == 201
    spec = created.object.spec
    assert spec.pod_management_policy == "OrderedReady" and spec.update_strategy.type == "RollingUpdate"
    assert spec.update_strategy.rolling_update.partition == 0 and spec.revision_history_limit == 10
    assert spec.persistent_volume_claim_retention_policy.when_deleted == "Retain"
    assert spec.volume_claim_templates[0].spec.volume_mode == "Filesystem"
    assert created.object.metadata.generation == 1
    assert negative.code == 422
    assert negative.status.message == 'StatefulSet.apps "neg" is invalid: spec.replicas: Invalid value: -3: must be greater than or equal to 0'
    assert mismatch.code == 422
    assert mismatch.status.message == 'StatefulSet.apps "mis" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"mis"}: `selector` does not match template `labels`'
    assert daemon.code == 201
    rolling = daemon.object.spec.update_strategy.rolling_update
    assert (rolling.max_unavailable, rolling.max_surge) == (1, 0)
    assert deployment.status.message == 'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -3: must be greater than or equal to 0'


def test_a_job_gets_its_generated_selector_and_a_cron_job_its_defaults():
    async def story(world, api, registry):
        job = await api("create", "jobs", namespace="default", body=obj({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": "default"},
            "spec": {"template": _template({"app": "pi"}, restart="Never")},
        }))
        bad_restart = await api("create", "jobs", namespace="default", body=obj({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"template": _template({"app": "pi"}, restart="Always")},
        }))
        cron = await api("create", "cronjobs", namespace="default", body=obj({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": _template({}, restart="OnFailure")}}},
        }))
        bad_cron = await api("create", "cronjobs", namespace="default", body=obj({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "bad", "namespace": "default"},
            "spec": {"schedule": "* * * *", "jobTemplate": {"spec": {"template": _template({}, restart="OnFailure")}}},
        }))
        return job, bad_restart, cron, bad_cron

    _, (job, bad_restart, cron, bad_cron) = run_api(story)
    assert job.code == 201
    uid = job.object.metadata.uid
    assert job.object.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert job.object.spec.template.metadata.labels["batch.kubernetes.io/job-name"] == "pi"
    assert (job.object.spec.completions, job.object.spec.parallelism, job.object.spec.backoff_limit) == (1, 1, 6)
    assert bad_restart.status.message == 'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'  # upstream's wording for Always
    assert cron.code == 201
    assert (cron.object.spec.concurrency_policy, cron.object.spec.successful_jobs_history_limit, cron.object.spec.failed_jobs_history_limit) == ("Allow", 3, 1)
    assert bad_cron.status.message == 'CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]'


def test_secret_string_data_is_merged_into_data_and_config_maps_are_bounded():
    async def story(world, api, registry):
        secret = await api("create", "secrets", namespace="default", body=obj({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "default"},
            "data": {"user": base64.b64encode(b"old").decode()}, "stringData": {"user": "admin", "password": "s3cret"},
        }))
        big = await api("create", "configmaps", namespace="default", body=obj({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"}, "data": {"blob": "x" * (1024 * 1024 + 1)},
        }))
        bad_key = await api("create", "configmaps", namespace="default", body=obj({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keys", "namespace": "default"}, "data": {"bad key": "v"},
        }))
        return secret, big, bad_key

    _, (secret, big, bad_key) = run_api(story)
    assert secret.code == 201 and secret.object.type == "Opaque" and not secret.object.string_data
    assert base64.b64decode(secret.object.data["user"]) == b"admin"
    assert base64.b64decode(secret.object.data["password"]) == b"s3cret"
    assert big.code == 422 and big.status.message.endswith("[]: Too long: must have at most 1048576 bytes")
    assert bad_key.code == 422 and 'data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters' in bad_key.status.message


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "replicas": {"type": "integer", "default": 1},
                    "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            }}},
        }],
    },
}


def widget(name, spec, **top):
    cls = custom_type("example.com/v1", "Widget", "widgets.example.com", True)
    return from_dict({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"}, "spec": spec, **top}, custom={("example.com/v1", "Widget"): cls})


def test_a_custom_resource_definition_is_served_with_its_schema_and_subresources():
    async def story(world, api, registry):
        before = await api("create", "widgets.example.com", namespace="default", body=widget("early", {"size": 1}))
        created_crd = await api("create", "customresourcedefinitions", body=obj(CRD))
        crd = await api.eventually("get", "customresourcedefinitions", lambda r: any(c.type == "Established" and c.status == "True" for c in r.object.status.conditions), name="widgets.example.com")
        await api.eventually("list", "widgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")
        made = await api("create", "widgets.example.com", namespace="default", body=widget("w", {"size": 3, "unknown": "pruned", "extra": {"kept": True}}, status={"replicas": 9}))
        invalid = await api("create", "widgets.example.com", namespace="default", body=widget("bad", {"size": 30, "color": "green"}))
        missing = await api("create", "widgets.example.com", namespace="default", body=widget("none", {}))
        status = made.object.content.get("status")
        updated = dict(made.object.content)
        updated["status"] = {"replicas": 2}
        updated_status = await api("update", "widgets.example.com", namespace="default", name="w", subresource="status", body=type(made.object)(metadata=made.object.metadata, content=updated))
        scale = await api("get", "widgets.example.com", namespace="default", name="w", subresource="scale")
        scaled = await api("update", "widgets.example.com", namespace="default", name="w", subresource="scale", body=Scale(metadata=scale.object.metadata, spec=ScaleSpec(replicas=4)))
        after = await api("get", "widgets.example.com", namespace="default", name="w")
        return before, created_crd, crd, made, invalid, missing, status, updated_status, scale, scaled, after

    world, (before, created_crd, crd, made, invalid, missing, status, updated_status, scale, scaled, after) = run_api(story)
    assert before.code == 404  # no CRD yet: not served
    assert created_crd.code == 201
    assert crd.object.status.accepted_names.list_kind == "WidgetList" and crd.object.status.stored_versions == ["v1"]
    assert made.code == 201, made.status
    assert made.object.content["spec"] == {"size": 3, "replicas": 1, "color": "red", "extra": {"kept": True}}  # pruned, defaulted, preserved
    assert status is None  # a status subresource: status is dropped on create
    assert made.object.metadata.generation == 1
    assert invalid.code == 422
    assert invalid.status.message == 'Widget.example.com "bad" is invalid: [spec.color: Unsupported value: "green": supported values: "red", "blue", spec.size: Invalid value: 30: spec.size in body should be less than or equal to 10]'
    assert missing.status.message == 'Widget.example.com "none" is invalid: spec.size: Required value'
    assert updated_status.code == 200 and updated_status.object.content["status"] == {"replicas": 2}
    assert updated_status.object.metadata.generation == 1  # status changes do not move generation
    assert scale.code == 200 and (scale.object.spec.replicas, scale.object.status.replicas) == (1, 2)
    assert scaled.code == 200 and scaled.object.spec.replicas == 4
    assert after.object.content["spec"]["replicas"] == 4 and after.object.metadata.generation == 2
    warnings = [event for event in world.journal.events if event["type"] == "apiserver-warning"]
    assert warnings and "spec.unknown" in warnings[0]["warning"]


def test_a_request_over_etcds_limit_is_refused():
    async def story(world, api, registry):
        await api("create", "customresourcedefinitions", body=obj(CRD))
        await api.eventually("list", "widgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")
        return await api("create", "widgets.example.com", namespace="default", body=widget("huge", {"size": 1, "extra": {"blob": "x" * (1600 * 1024)}}))

    _, response = run_api(story)
    assert response.code == 500
    assert response.status.message == "Internal error occurred: etcdserver: request is too large"


def test_unenforced_crd_features_are_said_once():
    rules = copy.deepcopy(CRD)
    rules["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.size <= 10"}]

    async def story(world, api, registry):
        return await api("create", "customresourcedefinitions", body=obj(rules))

    world, created = run_api(story)
    assert created.code == 201
    warnings = [event["warning"] for event in world.journal.events if event["type"] == "apiserver-warning"]
    assert warnings == ["not enforced by chaoskube: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations (CEL rules are not evaluated)"]


def test_a_custom_resource_is_served_only_at_the_versions_its_crd_serves():
    """``crdHandler.ServeHTTP`` (apiextensions-apiserver ``pkg/apiserver/customresource_handler.go``):
    a request at a version the CRD does not list, or lists with ``served: false``, goes to
    the delegate: 404 NotFound; a CRD update that unserves (or serves) a version takes
    effect once the server's CRD cache has it; the journal says which version each write
    addressed."""
    versioned = copy.deepcopy(CRD)
    retired = {**copy.deepcopy(CRD["spec"]["versions"][0]), "name": "v1beta1", "served": False, "storage": False}
    versioned["spec"]["versions"].insert(0, retired)

    async def story(world, api, registry):
        await api("create", "customresourcedefinitions", body=obj(versioned))
        await api.eventually("list", "widgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")
        at_v1 = await api("create", "widgets.example.com", namespace="default", body=widget("w", {"size": 3}), version="v1")
        at_retired = await api("create", "widgets.example.com", namespace="default", body=widget("x", {"size": 3}), version="v1beta1")
        get_retired = await api("get", "widgets.example.com", namespace="default", name="w", version="v1beta1")
        get_absent = await api("get", "widgets.example.com", namespace="default", name="w", version="v2")
        unnamed = await api("get", "widgets.example.com", namespace="default", name="w")
        crd = (await api("get", "customresourcedefinitions", name="widgets.example.com")).object
        crd.spec.versions[0].served, crd.spec.versions[1].served = True, False  # serve v1beta1, retire v1 (still the storage version)
        updated = await api("update", "customresourcedefinitions", name="widgets.example.com", body=crd)
        now_served = await api.eventually("get", "widgets.example.com", lambda r: r.code == 200, namespace="default", name="w", version="v1beta1")
        now_retired = await api("get", "widgets.example.com", namespace="default", name="w", version="v1")
        unnamed_after = await api("get", "widgets.example.com", namespace="default", name="w")
        return at_v1, at_retired, get_retired, get_absent, unnamed, updated, now_served, now_retired, unnamed_after

    world, (at_v1, at_retired, get_retired, get_absent, unnamed, updated, now_served, now_retired, unnamed_after) = run_api(story)
    assert at_v1.code == 201 and unnamed.code == 200
    for refused in (at_retired, get_retired, get_absent, now_retired):
        assert (refused.code, refused.status.reason, refused.status.message) == (404, "NotFound", "the server could not find the requested resource")
    assert updated.code == 200
    assert now_served.code == 200 and now_served.object.content["spec"]["size"] == 3
    assert unnamed_after.code == 200  # an in-process client: the first served version
    writes = {(event["verb"], event["name"]): event for event in world.journal.events if event["type"] == "api-request" and event["resource"] == "widgets.example.com"}
    assert writes[("create", "w")]["version"] == "v1" and writes[("create", "w")]["code"] == 201
    assert writes[("create", "")]["version"] == "v1beta1" and writes[("create", "")]["code"] == 404  # refused before its body was read


def test_a_json_patch_replaces_a_field_go_always_encodes_even_at_its_zero_value():
    """handlers/patch.go applies a JSON patch to the object as Go encodes it: a CRD
    version's ``served`` has no omitempty, so ``served: false`` is there to replace (the
    way to serve a retired version again: ``kubectl patch crd --type=json``)."""
    versioned = copy.deepcopy(CRD)
    versioned["spec"]["versions"].insert(0, {**copy.deepcopy(CRD["spec"]["versions"][0]), "name": "v1beta1", "served": False, "storage": False})

    async def story(world, api, registry):
        await api("create", "customresourcedefinitions", body=obj(versioned))
        return await api("patch", "customresourcedefinitions", name="widgets.example.com", patch_type="json",
                         body=[{"op": "test", "path": "/spec/versions/0/served", "value": False}, {"op": "replace", "path": "/spec/versions/0/served", "value": True}])

    _, patched = run_api(story)
    assert patched.code == 200, patched.status
    assert [(version.name, version.served) for version in patched.object.spec.versions] == [("v1beta1", True), ("v1", True)]


def test_a_custom_resource_is_written_at_any_served_version_and_stored_at_the_storage_version():
    """Conversion strategy None ("Versions in CustomResourceDefinitions"): a create, an
    update and a server-side apply at a served version that is not the storage version are
    stored at the storage version, only ``apiVersion`` changed."""
    versioned = copy.deepcopy(CRD)
    versioned["spec"]["versions"].insert(0, {**copy.deepcopy(CRD["spec"]["versions"][0]), "name": "v1beta1", "served": True, "storage": False})
    beta = custom_type("example.com/v1beta1", "Widget", "widgets.example.com", True)

    async def story(world, api, registry):
        await api("create", "customresourcedefinitions", body=obj(versioned))
        await api.eventually("list", "widgets.example.com", lambda r: r.ok, namespace="default", resource_version="0")
        made = await api("create", "widgets.example.com", namespace="default", version="v1beta1",
                         body=from_dict({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 2}}, custom={("example.com/v1beta1", "Widget"): beta}))
        updated = await api("update", "widgets.example.com", namespace="default", name="w", version="v1beta1",
                            body=from_dict({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default", "resourceVersion": made.object.metadata.resource_version},
                                            "spec": {"size": 3}}, custom={("example.com/v1beta1", "Widget"): beta}))
        applied = await api("patch", "widgets.example.com", namespace="default", name="w", version="v1beta1", patch_type="apply", field_manager="kubectl",
                            body={"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 4}}, force=True)
        # an apply must name the version it is sent to: the field manager is the request
        # version's, and its outermost layer checks the configuration's kind and version
        # (versionCheckManager, before structuredMergeManager's own check: fieldmanager.go
        # NewDefaultFieldManager)
        mismatched = await api("patch", "widgets.example.com", namespace="default", name="w", version="v1beta1", patch_type="apply", field_manager="kubectl",
                               body={"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 5}}, force=True)
        assert mismatched.code == 400, mismatched.status
        assert mismatched.status.message == "invalid object type: example.com/v1, Kind=Widget"
        return made, updated, applied

    _, (made, updated, applied) = run_api(story)
    assert made.code == 201 and made.object.API_VERSION == "example.com/v1" and made.object.content["spec"]["size"] == 2
    assert updated.code == 200, updated.status
    assert updated.object.API_VERSION == "example.com/v1" and updated.object.content["spec"]["size"] == 3
    assert applied.code == 200, applied.status
    assert applied.object.API_VERSION == "example.com/v1" and applied.object.content["spec"]["size"] == 4

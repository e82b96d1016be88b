"""The API server's admission webhooks, watch cache, reads by resourceVersion and etcd
compaction, through its front door (see tests/apiserver/test_apiserver.py for the rest)."""

import pytest

from chaoskube.api.manifests import from_dict
from chaoskube.api.protocol import WATCH_PORT, WatchMessage
from chaoskube.apiserver.server import ApiServerConfig
from chaoskube.apiserver.webhooks import allow, deny, deny_when, label_injector, slow, webhook_server
from chaoskube.etcd.server import EtcdConfig
from tests.apiserver.apiserver_harness import run_api
from tests.apiserver.test_apiserver import pod

ETCD = tuple(EtcdConfig().names)


def webhook_configuration(kind, name, service, *, failure_policy=None, timeout_seconds=None, operations=("CREATE",)):
    hook = {
        "name": f"{name}.example.com",
        "clientConfig": {"service": {"namespace": "webhooks", "name": service, "path": "/admit"}},
        "rules": [{"operations": list(operations), "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    if failure_policy:
        hook["failurePolicy"] = failure_policy
    if timeout_seconds:
        hook["timeoutSeconds"] = timeout_seconds
    return from_dict({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]})


def webhook(service, handler):
    return (f"{service}.webhooks.svc", webhook_server(handler))


async def install(api, *configurations):
    for configuration in configurations:
        response = await api("create", configuration.RESOURCE, body=configuration)
        assert response.code == 201, response
    await api.process.sleep(1.0)  # the watch cache (and so the admission chain) sees them


# ----------------------------------------------------------------------------- webhooks
def test_admission_order_built_ins_then_mutating_webhooks_then_validating_webhooks():
    def defaulted(request):  # a mutating webhook that insists on the built-ins' defaults
        return request["object"]["spec"].get("terminationGracePeriodSeconds") != 30

    def unlabelled(request):  # a validating webhook that insists on the mutating one's label
        return request["object"]["metadata"].get("labels", {}).get("injected") != "yes"

    async def story(world, api, registry):
        await install(
            api,
            webhook_configuration("MutatingWebhookConfiguration", "a-check-defaults", "checker"),
            webhook_configuration("MutatingWebhookConfiguration", "b-inject", "injector"),
            webhook_configuration("ValidatingWebhookConfiguration", "require-label", "validator"),
        )
        return await api("create", "pods", namespace="default", body=pod("web"))

    world, created = run_api(story, processes=[
        webhook("checker", deny_when(defaulted, "built-in defaults missing")),
        webhook("injector", label_injector("injected", "yes")),
        webhook("validator", deny_when(unlabelled, "the label is missing")),
    ])
    assert created.code == 201, created
    assert created.object.metadata.labels == {"injected": "yes"}
    calls = [(e["webhook"], e["outcome"]) for e in world.journal.events if e["type"] == "webhook-call"]
    assert calls == [("a-check-defaults.example.com", "allowed"), ("b-inject.example.com", "patched"), ("require-label.example.com", "allowed")]


def test_a_validating_webhook_denial_is_the_answer():
    async def story(world, api, registry):
        await install(api, webhook_configuration("ValidatingWebhookConfiguration", "no", "denier"))
        return await api("create", "pods", namespace="default", body=pod("web")), await api("get", "pods", namespace="default", name="web")

    _, (denied, after) = run_api(story, processes=[webhook("denier", deny("pods are closed today"))])
    assert denied.code == 403
    assert denied.status.message == 'admission webhook "no.example.com" denied the request: pods are closed today'
    assert after.code == 404


@pytest.mark.parametrize("kind", ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"])
def test_a_webhook_that_times_out_rejects_under_fail_and_is_skipped_under_ignore(kind):
    async def story(world, api, registry):
        await install(
            api,
            webhook_configuration(kind, "strict", "slow-strict", failure_policy="Fail", timeout_seconds=2, operations=("CREATE",)),
        )
        started = api.process.now()
        refused = await api("create", "pods", namespace="default", body=pod("web"))
        took = api.process.now() - started
        await api("delete", "mutatingwebhookconfigurations" if kind.startswith("Mutating") else "validatingwebhookconfigurations", name="strict")
        await install(api, webhook_configuration(kind, "lenient", "slow-lenient", failure_policy="Ignore", timeout_seconds=2))
        admitted = await api("create", "pods", namespace="default", body=pod("web"))
        return refused, took, admitted

    handler = label_injector("injected", "yes") if kind.startswith("Mutating") else allow()
    _, (refused, took, admitted) = run_api(story, processes=[webhook("slow-strict", slow(handler, 15.0)), webhook("slow-lenient", slow(handler, 15.0))])
    assert (refused.code, refused.status.reason) == (500, "InternalError")
    assert refused.status.message == 'Internal error occurred: failed calling webhook "strict.example.com": failed to call webhook: Post "https://slow-strict.webhooks.svc:443/admit?timeout=2s": context deadline exceeded'
    assert 2.0 <= took < 2.5
    assert admitted.code == 201 and admitted.object.metadata.labels == {}  # admitted unmodified


def test_a_webhook_that_is_down_under_fail_rejects_and_invalid_configurations_are_refused():
    async def story(world, api, registry):
        await install(api, webhook_configuration("ValidatingWebhookConfiguration", "gone", "nobody"))
        refused = await api("create", "pods", namespace="default", body=pod("web"))
        too_long = await api("create", "validatingwebhookconfigurations", body=webhook_configuration("ValidatingWebhookConfiguration", "slowpoke", "x", timeout_seconds=31))
        return refused, too_long

    _, (refused, too_long) = run_api(story)
    assert refused.code == 500 and "connection refused" in refused.status.message
    assert too_long.code == 422 and "the timeout value must be between 1 and 30 seconds" in too_long.status.message


# ----------------------------------------------------------------------------- watches
async def next_events(process, within_s=5.0):
    inbox = process.inbox(WATCH_PORT)
    with process.move_on_after(within_s):
        message = await inbox.receive()
        assert isinstance(message.body, WatchMessage)
        return message.body
    return None


def test_a_watch_from_now_sees_every_change_in_order_with_resource_versions():
    async def story(world, api, registry):
        await api("create", "pods", namespace="default", body=pod("before"))
        started = await api("watch", "pods", namespace="default", watch_id="w1")
        created = (await api("create", "pods", namespace="default", body=pod("web"))).object
        patched = (await api("patch", "pods", namespace="default", name="web", body={"metadata": {"labels": {"a": "b"}}})).object
        deleted = await api("delete", "pods", namespace="default", name="web")
        seen = []
        while len(seen) < 4:
            message = await next_events(api.process)
            assert message is not None, seen
            seen.extend(message.events)
        return started, created, patched, deleted, seen

    _, (started, created, patched, deleted, seen) = run_api(story)
    assert started.code == 200
    assert [(e.type, e.object.metadata.name) for e in seen] == [("ADDED", "before"), ("ADDED", "web"), ("MODIFIED", "web"), ("DELETED", "web")]
    assert seen[1].resource_version == created.metadata.resource_version
    assert seen[2].resource_version == patched.metadata.resource_version
    versions = [int(e.resource_version) for e in seen]
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_a_watch_from_a_version_older_than_the_cache_gets_410_and_a_relist_recovers():
    config = ApiServerConfig(etcd_endpoints=ETCD, watch_cache_lower_capacity=10, watch_cache_upper_capacity=10)

    async def story(world, api, registry):
        first = (await api("create", "pods", namespace="default", body=pod("web"))).object
        for index in range(15):
            await api("patch", "pods", namespace="default", name="web", body={"metadata": {"labels": {"i": str(index)}}})
        await api.process.sleep(80)  # older than the 75 s the cache keeps events at least
        for index in range(15):
            await api("patch", "pods", namespace="default", name="web", body={"metadata": {"labels": {"j": str(index)}}})
        expired = await api("watch", "pods", namespace="default", watch_id="old", resource_version=first.metadata.resource_version)
        relisted = await api("list", "pods", namespace="default")
        resumed = await api("watch", "pods", namespace="default", watch_id="new", resource_version=relisted.resource_version)
        return first, expired, relisted, resumed

    _, (first, expired, relisted, resumed) = run_api(story, config=config)
    assert (expired.code, expired.status.reason) == (410, "Expired")
    assert expired.status.message.startswith(f"too old resource version: {first.metadata.resource_version} (")
    assert relisted.code == 200 and [p.metadata.labels["j"] for p in relisted.items] == ["14"]
    assert resumed.code == 200


def test_bookmarks_carry_the_cache_version():
    async def story(world, api, registry):
        await api("watch", "pods", namespace="default", watch_id="b", allow_watch_bookmarks=True, resource_version="0")
        created = (await api("create", "pods", namespace="default", body=pod("web"))).object
        events = []
        while not any(e.type == "BOOKMARK" for e in events):
            message = await next_events(api.process, within_s=90)
            assert message is not None
            events.extend(message.events)
        return created, events

    _, (created, events) = run_api(story)
    bookmark = next(e for e in events if e.type == "BOOKMARK")
    assert bookmark.object is None and int(bookmark.resource_version) >= int(created.metadata.resource_version)


# ----------------------------------------------------------------------------- reads by version
def test_reads_by_resource_version_come_from_the_cache():
    async def story(world, api, registry):
        created = (await api("create", "pods", namespace="default", body=pod("web"))).object
        version = created.metadata.resource_version
        not_older = await api("get", "pods", namespace="default", name="web", resource_version=version)
        listed = await api("list", "pods", namespace="default", resource_version=version)
        started = api.process.now()
        future = await api("list", "pods", namespace="default", resource_version=str(int(version) + 1000))
        waited = api.process.now() - started
        quorum = await api("list", "pods", namespace="default")
        return created, not_older, listed, future, waited, quorum

    _, (created, not_older, listed, future, waited, quorum) = run_api(story)
    assert not_older.object == created
    assert [p.metadata.name for p in listed.items] == ["web"] and int(listed.resource_version) >= int(created.metadata.resource_version)
    assert future.code == 504 and future.status.message == f"Timeout: Too large resource version: {int(created.metadata.resource_version) + 1000}, current: {created.metadata.resource_version}"
    assert 3.0 <= waited < 3.5  # waitUntilFreshAndBlock's 3 s
    assert quorum.code == 200 and int(quorum.resource_version) >= int(created.metadata.resource_version)


def test_the_api_servers_compact_etcd_every_five_minutes_and_old_exact_lists_get_410():
    async def story(world, api, registry):
        first = (await api("create", "pods", namespace="default", body=pod("web"))).object
        exact_before = await api("list", "pods", namespace="default", resource_version=first.metadata.resource_version, resource_version_match="Exact")
        for index in range(3):
            await api("patch", "pods", namespace="default", name="web", body={"metadata": {"labels": {"i": str(index)}}})
        await api.process.sleep(610)
        exact_after = await api("list", "pods", namespace="default", resource_version=first.metadata.resource_version, resource_version_match="Exact")
        return exact_before, exact_after

    world, (exact_before, exact_after) = run_api(story, servers=2)
    assert exact_before.code == 200 and [p.metadata.resource_version for p in exact_before.items]
    assert (exact_after.code, exact_after.status.reason) == (410, "Expired")
    compactions = [e for e in world.journal.events if e["type"] == "etcd-compaction"]
    assert compactions and len({e["revision"] for e in compactions}) == len(compactions)  # replicas take turns

"""Events (core/v1) through the API server: validation, field selectors on the involved
object, the TTL through an etcd lease (``--event-ttl``), and client-go's EventRecorder
(``chaoskube.client.record``): repeats PATCH ``count``, the spam filter and the aggregator."""

from __future__ import annotations

from chaoskube.api import from_dict
from chaoskube.apiserver.server import ApiServerConfig
from chaoskube.client import ApiClient, EventRecorder
from chaoskube.api.identity import admin_credentials
from chaoskube.etcd.server import EtcdConfig
from tests.apiserver.apiserver_harness import run_api


def event(name: str, *, namespace: str = "default", involved: dict | None = None, reason: str = "Started", type_: str = "Normal", component: str = "kubelet"):
    return from_dict({
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved or {"kind": "Pod", "namespace": namespace, "name": "web-1", "uid": "u-1", "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
        "reason": reason, "message": f"{reason} it", "type": type_, "source": {"component": component, "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:01Z", "lastTimestamp": "2026-01-01T00:00:01Z", "count": 1,
    })


def test_events_are_validated_and_selected_by_their_involved_object():
    async def story(world, api, registry):
        created = [await api("create", "events", namespace="default", body=item) for item in (
            event("a.1"), event("b.1", reason="BackOff", type_="Warning"),
            event("c.1", involved={"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"}, reason="ScalingReplicaSet", component="deployment-controller"),
            event("n.1", involved={"kind": "Node", "name": "node-1", "uid": "node-1"}, reason="NodeNotReady", component="node-controller"),
        )]
        mismatch = await api("create", "events", namespace="default", body=event("x.1", involved={"kind": "Pod", "namespace": "other", "name": "p"}))

        async def names(selector: str) -> list[str] | int:
            response = await api("list", "events", namespace="default", field_selector=selector)
            return sorted(item.metadata.name for item in response.items) if response.ok else response.code

        selected = {
            selector: await names(selector) for selector in (
                "involvedObject.kind=Pod", "involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.uid=u-1",
                "involvedObject.fieldPath=spec.containers{c}", "involvedObject.apiVersion=apps/v1", "reason=BackOff", "type=Warning",
                "source=node-controller", "reportingComponent=deployment-controller", "involvedObject.kind!=Pod", "spec.nodeName=x",
            )
        }
        return created, mismatch, selected

    _, (created, mismatch, selected) = run_api(story)
    assert [response.code for response in created] == [201, 201, 201, 201]
    assert mismatch.code == 422 and 'involvedObject.namespace: Invalid value: "other": does not match event.namespace' in mismatch.status.message
    assert selected == {
        "involvedObject.kind=Pod": ["a.1", "b.1"],
        "involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.uid=u-1": ["a.1", "b.1"],
        "involvedObject.fieldPath=spec.containers{c}": ["a.1", "b.1"],
        "involvedObject.apiVersion=apps/v1": ["c.1"],
        "reason=BackOff": ["b.1"],
        "type=Warning": ["b.1"],
        "source=node-controller": ["n.1"],
        # legacy Events carry reportingComponent only when the recorder sets it
        "reportingComponent=deployment-controller": [],
        "involvedObject.kind!=Pod": ["c.1", "n.1"],
        "spec.nodeName=x": 400,
    }


def test_an_event_expires_with_its_etcd_lease_after_the_event_ttl():
    config = ApiServerConfig(etcd_endpoints=tuple(EtcdConfig().names), event_ttl_s=20)

    async def story(world, api, registry):
        assert (await api("create", "events", namespace="default", body=event("a.1"))).code == 201
        start = api.process.now()
        await api.process.sleep(10)
        # a write renews the TTL (TTLFunc answers the TTL on update too): a PATCH of count
        patched = await api("patch", "events", namespace="default", name="a.1", body={"count": 2}, patch_type="strategic")
        assert patched.ok and patched.object.count == 2
        await api.process.sleep(15)  # 25 s after the create, 15 s after the patch
        kept = await api("get", "events", namespace="default", name="a.1")
        response = await api.eventually("get", "events", lambda r: r.code == 404, namespace="default", name="a.1", within_s=30.0)
        return kept, response, api.process.now() - start

    _, (kept, gone, lived_s) = run_api(story, config=config)
    assert kept.ok, "the patch renewed the Event's lease"
    assert gone.code == 404
    assert 30 <= lived_s <= 45  # the lease: ttl + 5 % reuse (1 s), granted at the patch; then etcd's revoke


def test_the_recorder_patches_count_on_repeats_and_filters_spam_as_client_go():
    async def story(world, api, registry):
        process = world.spawn("recorder-host", _idle)
        await api.process.sleep(0.01)  # started
        client = ApiClient(process, list(registry), admin_credentials(), name="recorder")
        recorder = EventRecorder(client, "kubelet", "node-1")
        pod = from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default", "uid": "u-1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        for _ in range(3):
            recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container c in pod web-1_default(u-1)")
            await api.process.sleep(1)
        # ten distinct messages of one reason: the tenth is combined (the aggregator)
        for index in range(10):
            recorder.event(pod, "Normal", "Pulling", f"Pulling image \"nginx:{index}\"")
        # 25 tokens per object (refilled at 1 per 300 s): 3 + 10 used; 12 more pass
        for index in range(20):
            recorder.event(pod, "Normal", "Other", f"message {index}")
        await api.process.sleep(5)
        listed = await api("list", "events", namespace="default")
        return listed.items, recorder.statistics()

    _, (items, statistics) = run_api(story)
    by_reason: dict[str, list] = {}
    for item in items:
        by_reason.setdefault(item.reason, []).append(item)
    backoff = by_reason["BackOff"]
    assert len(backoff) == 1 and backoff[0].count == 3 and backoff[0].type == "Warning"
    assert backoff[0].first_timestamp < backoff[0].last_timestamp
    assert backoff[0].source.component == "kubelet" and backoff[0].source.host == "node-1"
    assert backoff[0].involved_object.uid == "u-1" and backoff[0].metadata.name.startswith("web-1.")
    pulling = sorted(item.message for item in by_reason["Pulling"])
    assert len(pulling) == 10 and pulling[0] == '(combined from similar events): Pulling image "nginx:9"'
    assert len(by_reason["Other"]) == 25 - 3 - 10  # one bucket per (source, object)
    assert statistics["patched"] == 2 and statistics["dropped"] == 20 - 12


async def _idle(process):
    import trio

    await trio.sleep_forever()

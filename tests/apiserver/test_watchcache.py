"""The API server's watch cache: the pure core against a simple oracle, table by table,
then scenarios in a World with a 3-member etcd and one process hosting a Cacher."""

import random

import pytest
import trio

from chaoskube.api.manifests import to_json
from chaoskube.api.objects import ObjectMeta, Pod, PodSpec
from chaoskube.api.protocol import (
    API_PORT,
    WATCH_PORT,
    Credentials,
    Request,
    WatchEvent,
    WatchProbe,
    WatchStop,
)
from chaoskube.api.selectors import parse_field_selector, parse_label_selector
from chaoskube.apiserver import watchcache
from chaoskube.apiserver.watchcache import (
    CachedEvent,
    Cacher,
    ResourceCache,
    TooOldResourceVersion,
    WatchFilter,
    not_ready_status,
    resource_of_key,
    too_large_resource_version,
    with_resource_version,
)
from chaoskube.etcd.client import EtcdClient
from chaoskube.etcd.requests import CompactionRequest, DeleteRangeRequest, PutRequest, RangeRequest, TxnRequest, prefix_range_end
from chaoskube.etcd.server import EtcdConfig, spawn_cluster
from chaoskube.sim import World
from chaoskube.sim.network import Message

ADMIN = Credentials(token="admin")


def pod(name, namespace="default", labels=None, node="", rv=""):
    return Pod(metadata=ObjectMeta(name=name, namespace=namespace, labels=labels or {}, resource_version=rv), spec=PodSpec(node_name=node))


def key(name, namespace="default"):
    return f"/registry/pods/{namespace}/{name}"


# =========================================================================== the pure core
def test_replace_sets_the_oldest_watchable_version_to_the_list_revision():
    cache = ResourceCache("pods")
    cache.replace([(key("a"), pod("a", rv="7"))], 10, now=0.0)
    assert cache.resource_version == 10 and cache.oldest_resource_version == 10
    assert cache.events_after(10) == []
    with pytest.raises(TooOldResourceVersion) as caught:
        cache.events_after(9)
    assert caught.value.status.code == 410 and caught.value.status.reason == "Expired"
    assert caught.value.status.message == "too old resource version: 9 (10)"
    cache.apply("MODIFIED", key("a"), pod("a", labels={"v": "2"}), None, 12, now=1.0)
    cache.apply("ADDED", key("b"), pod("b"), None, 15, now=2.0)
    assert [event.resource_version for event in cache.events_after(10)] == [12, 15]
    assert [event.resource_version for event in cache.events_after(12)] == [15]
    assert cache.events_after(15) == [] and cache.events_after(99) == []
    assert cache.get(key("a")).metadata.resource_version == "12"  # the object carries the event's rv
    assert cache.history()[0].prev_object.metadata.resource_version == "7"


def test_a_replace_empties_the_history_and_resets_the_boundary():
    cache = ResourceCache("pods", lower_capacity=2, upper_capacity=2)
    cache.replace([], 1, now=0.0)
    for revision in range(2, 8):
        cache.apply("ADDED", key(f"p{revision}"), pod(f"p{revision}"), None, revision, now=100.0 * revision)
    assert cache.oldest_resource_version == 5  # events 6 and 7 kept
    cache.replace([(key("x"), pod("x", rv="3"))], 20, now=900.0)
    assert cache.history() == [] and len(cache) == 1 and cache.oldest_resource_version == 20
    assert cache.capacity == 2  # Replace keeps the capacity


def test_each_dropped_event_raises_the_oldest_version_and_410_is_exact_at_the_boundary():
    cache = ResourceCache("pods", lower_capacity=3, upper_capacity=3, fresh_s=75.0)
    cache.replace([], 1, now=0.0)
    oldest = []
    for index, revision in enumerate([4, 6, 9, 13, 14]):
        cache.apply("ADDED", key(f"p{revision}"), pod(f"p{revision}"), None, revision, now=float(index))
        oldest.append(cache.oldest_resource_version)
    assert oldest == [1, 1, 1, 5, 8]  # a drop: the oldest kept event's revision minus one
    assert [event.resource_version for event in cache.events_after(8)] == [9, 13, 14]
    with pytest.raises(TooOldResourceVersion, match=r"^too old resource version: 7 \(8\)$"):
        cache.events_after(7)


class OracleWatchCache:
    """watch_cache.go's cyclic buffer, index for index: a deliberately literal port."""

    def __init__(self, lower, upper, fresh):
        self.lower, self.upper, self.fresh = lower, upper, fresh
        self.capacity = lower
        self.cache = [None] * lower
        self.start = self.end = 0
        self.removed = False
        self.list_rv = 0

    def full(self):
        return self.end == self.start + self.capacity

    def resize(self, capacity):  # doCacheResizeLocked
        new = [None] * capacity
        if capacity < self.capacity:
            self.start = self.end - capacity
        for index in range(self.start, self.end):
            new[index % capacity] = self.cache[index % self.capacity]
        self.cache, self.capacity = new, capacity

    def add(self, rv, t):
        if self.full() and t - self.cache[self.start % self.capacity][1] < self.fresh:
            if min(self.capacity * 2, self.upper) > self.capacity:
                self.resize(min(self.capacity * 2, self.upper))
        elif self.full() and t - self.cache[(self.end - self.capacity // 4) % self.capacity][1] > self.fresh:
            if max(self.capacity // 2, self.lower) < self.capacity:
                self.resize(max(self.capacity // 2, self.lower))
        if self.full():
            self.start += 1
            self.removed = True
        self.cache[self.end % self.capacity] = (rv, t)
        self.end += 1

    def oldest(self):
        if self.list_rv > 0 and not self.removed:
            return self.list_rv
        return self.cache[self.start % self.capacity][0] - 1

    def kept(self):
        return [self.cache[index % self.capacity][0] for index in range(self.start, self.end)]


@pytest.mark.parametrize("seed", range(6))
def test_capacity_grows_shrinks_and_drops_as_the_oracle(seed):
    rng = random.Random(seed)
    lower, upper, fresh = 4, 32, 75.0
    cache = ResourceCache("pods", lower_capacity=lower, upper_capacity=upper, fresh_s=fresh)
    oracle = OracleWatchCache(lower, upper, fresh)
    cache.replace([], 1, now=0.0)
    oracle.list_rv = 1
    now, revision = 0.0, 1
    capacities = set()
    for step in range(600):
        # bursts (many events per second) and lulls (minutes apart) in turn
        now += rng.choice([0.01, 0.5, 2.0]) if (step // 60) % 2 == 0 else rng.choice([30.0, 90.0, 200.0])
        revision += rng.randrange(1, 3)
        cache.apply("ADDED", key(f"p{step}"), pod(f"p{step}"), None, revision, now)
        oracle.add(revision, now)
        assert cache.capacity == oracle.capacity, step
        assert [event.resource_version for event in cache.history()] == oracle.kept(), step
        assert cache.oldest_resource_version == oracle.oldest(), step
        capacities.add(cache.capacity)
    assert {lower, upper} <= capacities  # it grew to the bound and shrank back


def test_capacity_doubles_only_while_the_oldest_event_is_fresh():
    cache = ResourceCache("pods", lower_capacity=4, upper_capacity=8, fresh_s=75.0)
    cache.replace([], 1, now=0.0)
    for revision in range(2, 7):  # 5 events within a second: full at 4, so it doubles
        cache.apply("ADDED", key(f"p{revision}"), pod(f"p{revision}"), None, revision, now=revision / 10)
    assert cache.capacity == 8 and len(cache.history()) == 5 and cache.oldest_resource_version == 1
    for revision in range(7, 12):  # the upper bound holds: the oldest are dropped instead
        cache.apply("ADDED", key(f"p{revision}"), pod(f"p{revision}"), None, revision, now=1.0)
    assert cache.capacity == 8 and len(cache.history()) == 8 and cache.oldest_resource_version == 3


@pytest.mark.parametrize(("last_at", "grows"), [(74.99, True), (75.0, False)])
def test_growth_needs_the_oldest_event_strictly_younger_than_the_fresh_duration(last_at, grows):
    cache = ResourceCache("pods", lower_capacity=4, upper_capacity=8, fresh_s=75.0)
    cache.replace([], 1, now=0.0)
    for revision, at in zip(range(2, 6), [0.0, 1.0, 2.0, 3.0]):
        cache.apply("ADDED", key(f"p{revision}"), pod(f"p{revision}"), None, revision, now=at)
    cache.apply("ADDED", key("late"), pod("late"), None, 6, now=last_at)
    assert cache.capacity == (8 if grows else 4)
    assert cache.oldest_resource_version == (1 if grows else 2)


def test_deleting_an_object_keeps_its_last_state_with_the_deletion_revision():
    cache = ResourceCache("pods")
    cache.replace([(key("a"), pod("a", labels={"app": "web"}, rv="3"))], 3, now=0.0)
    event = cache.apply("DELETED", key("a"), None, None, 8, now=1.0)
    assert event.object.metadata.resource_version == "8" and event.object.metadata.labels == {"app": "web"}
    assert event.prev_object.metadata.resource_version == "3"
    assert cache.get(key("a")) is None
    assert cache.apply("DELETED", key("zz"), None, None, 9, now=1.0) is None  # unknown key: nothing
    assert cache.resource_version == 9


def _event(event_type, old_labels, new_labels, rv=10):
    old = pod("a", labels=old_labels, rv="5") if old_labels is not None else None
    new = pod("a", labels=new_labels, rv=str(rv)) if new_labels is not None else with_resource_version(old, rv)
    return CachedEvent(event_type, key("a"), new, old, rv, 0.0)


@pytest.mark.parametrize(
    ("event", "expected_type"),
    [
        (_event("ADDED", None, {"app": "web"}), "ADDED"),
        (_event("ADDED", None, {"app": "db"}), None),
        (_event("MODIFIED", {"app": "web"}, {"app": "web", "v": "2"}), "MODIFIED"),
        (_event("MODIFIED", {"app": "db"}, {"app": "web"}), "ADDED"),  # starts matching
        (_event("MODIFIED", {"app": "web"}, {"app": "db"}), "DELETED"),  # stops matching
        (_event("MODIFIED", {"app": "db"}, {"app": "cache"}), None),
        (_event("DELETED", {"app": "web"}, None), "DELETED"),
        (_event("DELETED", {"app": "db"}, None), None),
    ],
)
def test_a_filtered_watcher_sees_selector_transitions_as_cache_watcher_converts_them(event, expected_type):
    scope = WatchFilter("default", parse_label_selector("app=web"), None)
    converted = scope.convert(event)
    assert (converted.type if converted else None) == expected_type
    if converted is not None:
        assert converted.resource_version == "10" and converted.object.metadata.resource_version == "10"
        if expected_type == "DELETED":  # the old object's content, with the event's version
            assert converted.object.metadata.labels == {"app": "web"}


def test_an_unfiltered_watcher_sees_every_event_as_it_is_and_a_namespace_scopes_it():
    everything = WatchFilter()
    assert [everything.convert(_event(t, o, n)).type for t, o, n in [("ADDED", None, {}), ("MODIFIED", {}, {"x": "1"}), ("DELETED", {}, None)]] == ["ADDED", "MODIFIED", "DELETED"]
    assert WatchFilter("other").convert(_event("ADDED", None, {})) is None


def test_list_filters_by_namespace_and_selectors_in_key_order_as_an_oracle():
    rng = random.Random(3)
    cache = ResourceCache("pods")
    objects = []
    for index in range(60):
        namespace = rng.choice(["a", "b"])
        subject = pod(f"p{index:02d}", namespace, {"app": rng.choice(["web", "db"])}, node=rng.choice(["", "n1", "n2"]), rv=str(index + 1))
        objects.append((key(subject.metadata.name, namespace), subject))
    rng.shuffle(objects)
    cache.replace(objects, 100, now=0.0)
    labels, fields = parse_label_selector("app=web"), parse_field_selector("spec.nodeName!=", "pods")
    got = cache.list("a", labels, fields)
    expected = [obj for k, obj in sorted(objects) if obj.metadata.namespace == "a" and obj.metadata.labels["app"] == "web" and obj.spec.node_name]
    assert got == expected and got
    assert len(cache.list()) == 60


def test_helpers_word_statuses_as_kubernetes():
    status = too_large_resource_version(12, 9)
    assert (status.code, status.reason, status.message, status.retry_after_seconds) == (504, "Timeout", "Timeout: Too large resource version: 12, current: 9", 1)
    assert status.causes == ("Too large resource version",)
    ready = not_ready_status()
    assert (ready.code, ready.message, ready.retry_after_seconds) == (429, "storage is (re)initializing", 1)
    assert resource_of_key("/registry/pods/default/a") == "pods"
    assert resource_of_key("/registry/nodes/n1") == "nodes"
    assert resource_of_key("/registry/pods") is None and resource_of_key("/other/pods/a") is None


# =========================================================================== scenarios
class Harness:
    """A 3-member etcd, an ``apiserver`` process hosting a Cacher behind a tiny handler,
    and a ``client`` process that records every watch message it receives."""

    def __init__(self, world, cacher_options):
        self.world = world
        self.config = EtcdConfig()
        self.registry = spawn_cluster(world, self.config)
        self.cacher = None
        self.received = []  # (time, WatchMessage)
        world.spawn("apiserver", self._server(cacher_options), role="apiserver")
        self.client = world.spawn("client", self._client)
        self.writer = EtcdClient(self.client, self.config.names, name="writer")

    def _server(self, options):
        async def main(process):
            self.cacher = cacher = Cacher(process, EtcdClient(process, self.config.names, name="cacher"), **options)

            def handle(message):
                body = message.body
                if isinstance(body, Request):
                    cacher.start_watch(message, body, body.resource)
                elif isinstance(body, WatchProbe):
                    cacher.probe(message)
                elif isinstance(body, WatchStop):
                    cacher.stop(message)

            process.on_message(API_PORT, handle)
            await cacher.run()

        return main

    async def _client(self, process):
        process.on_message(WATCH_PORT, lambda message: self.received.append((self.world.now, message.body)))
        await trio.sleep_forever()

    async def ready(self):
        while self.cacher is None:
            await self.world.sleep(0.1)
        with trio.fail_after(30):
            await self.cacher.wait_ready()

    async def put(self, obj, name_key=None):
        result = await self.writer.request(PutRequest(name_key or key(obj.metadata.name, obj.metadata.namespace), to_json(obj).decode()), idempotent=False)
        assert result.ok, result
        return result.reply.response.header_revision

    async def delete(self, name_key):
        result = await self.writer.request(DeleteRangeRequest(name_key), idempotent=False)
        assert result.ok, result
        return result.reply.response.header_revision

    async def watch(self, watch_id, resource_version="0", **options):
        request = Request(verb="watch", resource="pods", credentials=ADMIN, watch_id=watch_id, resource_version=resource_version, **options)
        outcome = await self.client.call("apiserver", request, port=API_PORT, timeout_s=5.0)
        assert outcome.ok, outcome
        return outcome.value

    def messages(self, watch_id):
        return [message for _, message in self.received if message.watch_id == watch_id]

    def events(self, watch_id):
        return [event for message in self.messages(watch_id) for event in message.events]


def run(story, seed=1, **cacher_options):
    world = World(seed)

    async def main(world):
        harness = Harness(world, cacher_options)
        await harness.ready()
        return await story(harness)

    result = world.run(main)
    return world, result


def summary(events):
    return [(event.type, event.object.metadata.name if event.object else None, event.resource_version) for event in events]


def _run_and_collect(story, **options):
    holder = {}

    async def wrapped(h):
        holder["harness"] = h
        return await story(h)

    world, result = run(wrapped, **options)
    return world, holder["harness"], result


def test_events_arrive_in_order_with_the_revisions_etcd_gave_them():
    async def story(h):
        first = await h.put(pod("a", labels={"app": "web"}))
        response = await h.watch("w1", "0", namespace="default")
        assert response.code == 200 and int(response.resource_version) >= first
        modified = await h.put(pod("a", labels={"app": "web", "v": "2"}))
        await h.put(pod("elsewhere", namespace="other"))
        added = await h.put(pod("b"))
        deleted = await h.delete(key("a"))
        await h.world.sleep(1)
        return first, modified, added, deleted

    _, h, (first, modified, added, deleted) = _run_and_collect(story)
    assert summary(h.events("w1")) == [
        ("ADDED", "a", str(first)),
        ("MODIFIED", "a", str(modified)),
        ("ADDED", "b", str(added)),
        ("DELETED", "a", str(deleted)),
    ]
    last = h.events("w1")[-1]
    assert last.object.metadata.resource_version == str(deleted) and last.object.metadata.labels == {"app": "web", "v": "2"}
    assert [message.sequence for message in h.messages("w1")] == list(range(1, len(h.messages("w1")) + 1))
    assert not any(message.closed for message in h.messages("w1"))


def test_a_label_selected_watch_sees_objects_enter_and_leave_its_selection():
    async def story(h):
        await h.watch("web", "0", label_selector="app=web")
        await h.watch("on-n1", "0", field_selector="spec.nodeName=n1")
        revisions = [await h.put(pod("a", labels={"app": "db"}))]
        revisions.append(await h.put(pod("a", labels={"app": "web"})))
        revisions.append(await h.put(pod("a", labels={"app": "web"}, node="n1")))
        revisions.append(await h.put(pod("a", labels={"app": "db"}, node="n1")))
        await h.world.sleep(1)
        return revisions

    _, h, revisions = _run_and_collect(story)
    assert summary(h.events("web")) == [("ADDED", "a", str(revisions[1])), ("MODIFIED", "a", str(revisions[2])), ("DELETED", "a", str(revisions[3]))]
    assert h.events("web")[-1].object.metadata.labels == {"app": "web"}  # the old content
    assert summary(h.events("on-n1")) == [("ADDED", "a", str(revisions[2])), ("MODIFIED", "a", str(revisions[3]))]


def test_a_watch_from_a_revision_replays_the_history_and_a_too_old_one_gets_410():
    async def story(h):
        revisions = [await h.put(pod(f"p{index}")) for index in range(8)]
        replay = await h.watch("replay", str(revisions[4]))
        cache = h.cacher.cache("pods")
        oldest = cache.oldest_resource_version
        too_old = await h.watch("old", str(oldest - 1))
        boundary = await h.watch("boundary", str(oldest))
        bad = await h.watch("bad", "soon")
        await h.world.sleep(1)
        return revisions, replay, oldest, too_old, boundary, bad

    _, h, (revisions, replay, oldest, too_old, boundary, bad) = _run_and_collect(story, lower_capacity=4, upper_capacity=4)
    assert replay.code == 200
    assert [event.resource_version for event in h.events("replay")] == [str(r) for r in revisions[5:]]
    assert oldest == revisions[4] - 1  # capacity 4: events of p4..p7 kept
    assert too_old.code == 410 and too_old.status.reason == "Expired"
    assert too_old.status.message == f"too old resource version: {oldest - 1} ({oldest})"
    assert h.messages("old") == []  # a refused watch streams nothing
    assert boundary.code == 200 and [event.resource_version for event in h.events("boundary")] == [str(r) for r in revisions[4:]]
    assert bad.code == 400


def test_a_watch_from_a_revision_ahead_of_the_cache_skips_events_up_to_it():
    async def story(h):
        ahead = h.cacher.resource_version + 2
        response = await h.watch("ahead", str(ahead))
        revisions = [await h.put(pod(f"p{index}")) for index in range(3)]
        await h.world.sleep(1)
        return response, ahead, revisions

    _, h, (response, ahead, revisions) = _run_and_collect(story)
    assert response.code == 200 and revisions[1] == ahead
    assert [event.resource_version for event in h.events("ahead")] == [str(revisions[2])]


def test_bookmarks_come_every_period_and_just_before_the_timeout_that_closes_the_stream():
    async def story(h):
        revision = await h.put(pod("a"))
        opened = h.world.now
        await h.watch("bm", "0", allow_watch_bookmarks=True, timeout_seconds=12)
        await h.watch("plain", "0", timeout_seconds=12)
        later = await h.put(pod("b"))
        await h.world.sleep(15)
        return opened, revision, later

    _, h, (opened, revision, later) = _run_and_collect(story, bookmark_every_s=5.0)
    bookmarks = [(at, event) for at, message in h.received if message.watch_id == "bm" for event in message.events if event.type == "BOOKMARK"]
    times = [round(at - opened) for at, _ in bookmarks]
    assert times == [5, 10]  # every 5 s, the last one 2 s before the 12 s timeout
    assert all(event.object is None and int(event.resource_version) >= later for _, event in bookmarks)
    closing = [(at, message) for at, message in h.received if message.closed]
    assert sorted(message.watch_id for _, message in closing) == ["bm", "plain"]
    assert all(11.9 < at - opened < 12.2 for at, _ in closing)
    assert not any(event.type == "BOOKMARK" for event in h.events("plain"))


def test_probe_and_stop_of_a_stream():
    async def story(h):
        await h.watch("w", "0")
        alive = await h.client.call("apiserver", WatchProbe("w"), port=API_PORT, timeout_s=5)
        stopped = await h.client.call("apiserver", WatchStop("w"), port=API_PORT, timeout_s=5)
        after = await h.client.call("apiserver", WatchProbe("w"), port=API_PORT, timeout_s=5)
        await h.put(pod("late"))
        await h.world.sleep(1)
        return alive.value, stopped.value, after.value

    _, h, (alive, stopped, after) = _run_and_collect(story)
    assert alive == {"alive": True, "sent": 0} and stopped == {"stopped": True} and after == {"alive": False, "sent": 0}
    assert h.events("w") == []


def test_initial_events_of_a_quorum_read_then_the_events_after_its_revision():
    async def story(h):
        await h.put(pod("a"))
        await h.put(pod("b", labels={"app": "web"}))
        read = await h.writer.request(RangeRequest("/registry/pods/", prefix_range_end("/registry/pods/")), idempotent=True)
        revision = read.reply.response.header_revision
        assert await h.cacher.wait_fresh(revision)
        initial = [WatchEvent("ADDED", watchcache._copy(h.cacher.cache("pods").get(kv.key)), str(kv.mod_revision)) for kv in read.reply.response.kvs]
        request = Request(verb="watch", resource="pods", credentials=ADMIN, watch_id="quorum", label_selector="app=web")
        message = Message(0, "client", "apiserver", API_PORT, request, h.world.now)  # no call id: no answer expected
        assert h.cacher.start_watch(message, request, "pods", initial, revision=revision)
        after = await h.put(pod("c", labels={"app": "web"}))
        await h.world.sleep(1)
        return after

    _, h, after = _run_and_collect(story)
    assert summary(h.events("quorum")) == [("ADDED", "b", h.events("quorum")[0].resource_version), ("ADDED", "c", str(after))]


def test_before_the_first_list_watches_get_429_and_wait_fresh_times_out_as_504_would():
    world = World(2)
    config = EtcdConfig()

    async def main(world):
        spawn_cluster(world, config)
        holder = {}

        async def server(process):
            holder["cacher"] = cacher = Cacher(process, EtcdClient(process, config.names, name="cacher"))
            process.on_message(API_PORT, lambda message: cacher.start_watch(message, message.body, "pods"))
            await cacher.run()

        world.spawn("apiserver", server)
        client = world.spawn("client", lambda process: trio.sleep_forever())
        request = Request(verb="watch", resource="pods", credentials=ADMIN, watch_id="early")
        early = await client.call("apiserver", request, port=API_PORT, timeout_s=5)  # etcd has no leader yet
        cacher = holder["cacher"]
        was_ready = cacher.ready
        await cacher.wait_ready()
        started = world.now
        fresh = await cacher.wait_fresh(cacher.resource_version + 1)
        waited = world.now - started
        return early.value, was_ready, fresh, waited

    early, was_ready, fresh, waited = world.run(main)
    assert not was_ready and early.code == 429 and early.status.message == "storage is (re)initializing"
    assert fresh is False and waited == pytest.approx(3.0, abs=0.01)
    assert [event["event"] for event in world.journal.of_type("watch-cache")] == ["ready"]


def test_wait_fresh_returns_as_soon_as_the_revision_arrives():
    async def story(h):
        target = h.cacher.resource_version + 1
        async with trio.open_nursery() as nursery:
            results = []

            async def waiter():
                results.append(await h.cacher.wait_fresh(target))
                results.append(h.world.now)

            nursery.start_soon(waiter)
            await h.world.sleep(0.5)
            written_at = h.world.now
            await h.put(pod("x"))
        return results, written_at

    _, _, ((fresh, at), written_at) = _run_and_collect(story)
    assert fresh is True and at - written_at < 0.1


def test_compaction_past_the_cache_makes_it_relist_and_close_every_watcher():
    async def story(h):
        before = await h.put(pod("a"))
        await h.watch("w", "0")
        names = h.config.names
        h.world.network.partition(_cut("apiserver", names))  # the cacher loses etcd, not its client
        await h.world.sleep(0.5)
        revisions = [await h.put(pod("a", labels={"v": str(index)})) for index in range(3)]
        result = await h.writer.request(CompactionRequest(revisions[-1]), idempotent=False)
        assert result.ok, result
        h.world.network.heal()
        await h.world.sleep(6)
        stale = await h.watch("stale", str(before))
        return before, revisions, stale

    world, h, (before, revisions, stale) = _run_and_collect(story)
    events = [event["event"] for event in world.journal.of_type("watch-cache")]
    assert events[0] == "ready" and "relist" in events
    relist = next(event for event in world.journal.of_type("watch-cache") if event["event"] == "relist")
    assert relist["revision"] >= revisions[-1]
    closing = [message for message in h.messages("w") if message.closed]
    assert len(closing) == 1 and h.messages("w")[-1].closed  # terminated by the re-initialisation
    assert h.cacher.ready and h.cacher.cache("pods").get(key("a")).metadata.labels == {"v": "2"}
    assert stale.code == 410  # its client must relist too


def _cut(node, others):
    """Both directions between ``node`` and ``others`` dropped; everyone else connected."""
    grudge = {node: frozenset(others)}
    for other in others:
        grudge[other] = frozenset({node})
    return grudge


def test_killing_the_watched_member_makes_the_cacher_rewatch_without_losing_events():
    async def story(h):
        await h.watch("w", "0")
        revisions = [await h.put(pod("a", labels={"v": "0"}))]
        member = h.cacher.etcd_member
        h.world.process(member).kill()
        for index in range(1, 6):
            revisions.append(await h.put(pod("a", labels={"v": str(index)})))
            await h.world.sleep(0.5)
        await h.world.sleep(3)
        h.world.process(member).restart()
        revisions.append(await h.put(pod("a", labels={"v": "6"})))
        await h.world.sleep(1)
        return member, revisions

    world, h, (member, revisions) = _run_and_collect(story)
    rewatches = [event for event in world.journal.of_type("watch-cache") if event["event"] == "rewatch"]
    assert rewatches and rewatches[0]["member"] != member
    assert [event.resource_version for event in h.events("w")] == [str(r) for r in revisions]  # none lost, none twice
    assert not any(message.closed for message in h.messages("w"))
    assert h.cacher.statistics()["relists"] == 0


def test_a_watcher_with_too_many_events_in_one_instant_is_closed(monkeypatch):
    monkeypatch.setattr(watchcache, "WATCHER_PENDING_LIMIT", 3)

    async def story(h):
        await h.watch("w", "0")
        await h.watch("narrow", "0", label_selector="app=web")
        puts = tuple(PutRequest(key(f"p{index}"), to_json(pod(f"p{index}", labels={"app": "web" if index == 0 else "db"})).decode()) for index in range(5))
        result = await h.writer.request(TxnRequest(success=puts), idempotent=False)  # one revision, five events
        assert result.ok
        await h.world.sleep(1)

    world, h, _ = _run_and_collect(story)
    assert [(message.events, message.closed) for message in h.messages("w")] == [((), True)]
    assert len(h.events("narrow")) == 1 and not h.messages("narrow")[-1].closed
    closed = [event for event in world.journal.of_type("watch-cache") if event["event"] == "watcher-closed"]
    assert [(event["reason"], event["watch_id"]) for event in closed] == [("overflow", "w")]


def test_objects_sent_to_a_client_are_copies():
    async def story(h):
        await h.put(pod("a", labels={"app": "web"}))
        await h.watch("w", "0")
        await h.world.sleep(0.1)
        sent = h.events("w")[0].object
        sent.metadata.labels["app"] = "changed by the client"
        return h.cacher.cache("pods").get(key("a")).metadata.labels

    _, _, labels = _run_and_collect(story)
    assert labels == {"app": "web"}


def test_a_stream_that_silently_lost_its_tail_is_rewatched_and_nothing_is_missed():
    async def story(h):
        await h.watch("w", "0")
        revisions = [await h.put(pod("a", labels={"v": "0"}))]
        h.world.network.partition(_cut("apiserver", h.config.names))
        revisions += [await h.put(pod("a", labels={"v": str(index)})) for index in range(1, 4)]
        h.world.network.heal()  # the stream lives on; no later message shows the gap
        await h.world.sleep(5)
        return revisions

    world, h, revisions = _run_and_collect(story)
    assert [event.resource_version for event in h.events("w")] == [str(r) for r in revisions]
    assert h.cacher.resource_version == revisions[-1]
    assert [event["event"] for event in world.journal.of_type("watch-cache")] == ["ready", "rewatch"]


def test_the_same_seed_gives_the_same_journal():
    async def story(h):
        await h.watch("w", "0", allow_watch_bookmarks=True, timeout_seconds=30)
        for index in range(5):
            await h.put(pod(f"p{index}"))
        h.world.process(h.cacher.etcd_member).kill()
        await h.put(pod("after"))
        await h.world.sleep(8)

    fingerprints = {run(story, seed=5)[0].fingerprint for _ in range(2)}
    assert len(fingerprints) == 1


def test_a_stalled_cache_stays_behind_serves_its_old_state_and_catches_up_on_resume():
    """``Cacher.stall`` (test-operator's stale state, kubernetes#59848): writes go on in
    etcd, the cache keeps its revision and the objects it had, a watch from "0" is served
    that old state, a fresh read waits and gives up; ``resume`` brings every event missed,
    in order, to the cache and to its watchers."""
    async def story(h):
        before = await h.put(pod("a"))
        await h.world.sleep(0.5)
        h.cacher.stall()
        written = [await h.put(pod("b")), await h.put(pod("c"))]
        await h.world.sleep(5.0)  # probes and all: it does not move
        stale = (h.cacher.resource_version, sorted(obj.metadata.name for obj in h.cacher.objects("pods")))
        await h.watch("w-stale", "0")
        await h.world.sleep(0.5)
        fresh = await h.cacher.wait_fresh(written[-1], timeout_s=1.0)
        h.cacher.resume()
        await h.world.sleep(2.0)
        caught = (h.cacher.resource_version, sorted(obj.metadata.name for obj in h.cacher.objects("pods")))
        return before, written, stale, fresh, caught

    world, h, (before, written, stale, fresh, caught) = _run_and_collect(story)
    assert stale == (before, ["a"])
    assert fresh is False
    assert caught == (written[-1], ["a", "b", "c"])
    assert summary(h.events("w-stale")) == [("ADDED", "a", str(before)), ("ADDED", "b", str(written[0])), ("ADDED", "c", str(written[1]))]
    marks = [event["event"] for event in world.journal.events if event.get("type") == "watch-cache" and event.get("event") in ("stalled", "resumed", "rewatch")]
    assert marks[:3] == ["stalled", "resumed", "rewatch"]

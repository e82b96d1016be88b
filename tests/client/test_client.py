"""The API client against the fake API server: client-go's retry rules (refused -> next
server; a timed-out write is not retried and is ambiguous; a timed-out read is retried;
Retry-After honoured in virtual time; 409 final), the journal of mutating requests, the
typed helpers, and leader election with ApiLeaseLock."""

import pytest
import trio

from chaoskube.api import protocol
from chaoskube.api.objects import Lease, ObjectMeta
from chaoskube.api.protocol import DeleteOptions, Request
from chaoskube.checkers.leader_election import check_leader_election
from chaoskube.client.client import (
    AMBIGUOUS,
    MAX_RETRY_AFTER_RETRIES,
    ApiClient,
    ApiError,
    ApiLeaseLock,
    is_ambiguous,
    is_refused,
    leader_election_client,
    lease_record_of,
    lease_spec_of,
    own_rate_limit,
)
from chaoskube.client.leaderelection import LeaderElectionConfig, LeaderElector, LeaseRecord, LockError
from chaoskube.sim import World
from tests.client.fake_apiserver import ADMIN, FakeStore, pod, run_with_client


def api_ops(world, phase=None):
    return [e for e in world.journal.of_type("api-op") if phase is None or e["phase"] == phase]


# -- retry rules ---------------------------------------------------------------------------------
def test_refused_goes_to_the_next_server_at_once_for_a_write():
    async def body(world, store, client):
        world.process("api-0").kill()
        started = world.now
        created = await client.create(pod("a"))
        return created, world.now - started, client.statistics()

    world, store, (created, elapsed_s, stats) = run_with_client(body, first_server="api-0")
    assert created.metadata.name == "a" and created.metadata.resource_version == "1"
    assert [server for server, _ in store.requests] == ["api-1"]
    assert stats["refused"] == 1 and stats["attempts"] == 2
    assert elapsed_s < 0.01  # the untried server is asked at once, no Retry-After wait
    assert [e["phase"] for e in api_ops(world)] == ["invoke", "ok"]


def test_every_server_down_ends_refused_after_the_attempts():
    async def body(world, store, client):
        for name in ("api-0", "api-1"):
            world.process(name).kill()
        started = world.now
        response = await client.request(Request(verb="create", resource="pods", namespace="default", credentials=ADMIN, body=pod("a")))
        return response, world.now - started, client.statistics()

    world, _, (response, elapsed_s, stats) = run_with_client(body, attempts=5)
    assert is_refused(response) and not is_ambiguous(response) and response.code == 503
    assert stats["attempts"] == 5
    # api-1 right after api-0, then the artificial Retry-After of 1 s before each retry
    assert 3.0 <= elapsed_s < 3.05
    assert [e["phase"] for e in api_ops(world)] == ["invoke", "fail"]


def test_timeout_on_a_create_is_not_retried_and_is_reported_ambiguous():
    async def body(world, store, client):
        store.swallow_replies(1)  # the server applies it but the answer never comes
        started = world.now
        with pytest.raises(ApiError) as caught:
            await client.create(pod("a"))
        return caught.value, world.now - started

    world, store, (error, elapsed_s) = run_with_client(body, timeout_s=2.0)
    assert error.ambiguous and error.code == 504 and error.reason == "Timeout"
    assert AMBIGUOUS in error.status.causes
    assert len(store.requests) == 1  # not retried
    assert store.get("pods", "default", "a") is not None  # it did happen
    assert elapsed_s == pytest.approx(2.0, abs=0.01)
    end = api_ops(world)[-1]
    assert (end["phase"], end["code"], end["reason"]) == ("info", 504, "Timeout")


def test_timeout_on_a_get_is_retried_on_the_next_server():
    async def body(world, store, client):
        store.put(pod("a"))
        store.swallow_replies(1)
        got = await client.get("pods", "default", "a")
        return got, world.now

    world, store, (got, now) = run_with_client(body, timeout_s=2.0, first_server="api-0")
    assert got.metadata.name == "a"
    assert [server for server, _ in store.requests] == ["api-0", "api-1"]
    assert 2.0 < now < 2.05
    assert api_ops(world) == []  # reads are not journaled


def test_429_with_retry_after_is_honoured_in_virtual_time():
    async def body(world, store, client):
        store.fail_next("create", protocol.too_many_requests("the server has received too many requests", 3), count=2)
        started = world.now
        created = await client.create(pod("a"))
        return created, world.now - started

    world, store, (created, elapsed_s) = run_with_client(body, first_server="api-0")
    assert created.metadata.name == "a"
    assert 6.0 <= elapsed_s < 6.05
    assert [server for server, _ in store.requests] == ["api-0"] * 3  # same server, as client-go
    assert [e["phase"] for e in api_ops(world)] == ["invoke", "ok"]


def test_a_rate_limited_client_spends_its_burst_then_waits_for_tokens_at_its_qps():
    """client-go's token bucket (``flowcontrol.NewTokenBucketRateLimiter``, x/time/rate):
    full at start with ``burst`` tokens; then one request per 1/qps s, waiters in turn; a
    task with ``own_rate_limit`` takes from its own bucket, whatever client it uses."""

    async def body(world, store, client):
        store.put(pod("a"))
        sent: dict[str, list[float]] = {"shared": [], "own": []}

        async def get(kind: str) -> None:
            await client.get("pods", "default", "a")
            sent[kind].append(round(world.now, 3))

        async def own_task() -> None:
            own_rate_limit(1.0, 1)
            await get("own")
            await get("own")

        started = world.now
        async with trio.open_nursery() as nursery:
            for _ in range(7):
                nursery.start_soon(get, "shared")
            nursery.start_soon(own_task)
        return {kind: [t - round(started, 3) for t in times] for kind, times in sent.items()}, client.statistics()["throttled"]

    _, store, (sent, throttled) = run_with_client(body, rate=(2.0, 3))
    # 3 at once, then 0.5 s apart: the bucket refills at 2 tokens per second.
    assert [round(t, 1) for t in sent["shared"]] == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0]
    assert [round(t, 1) for t in sent["own"]] == [0.0, 1.0]  # its own bucket: 1 token, 1 per second
    assert throttled == 5


def test_a_client_without_a_rate_is_not_throttled():
    async def body(world, store, client):
        store.put(pod("a"))
        started = world.now
        for _ in range(200):
            await client.get("pods", "default", "a")
        return world.now - started, client.statistics()["throttled"]

    _, _, (elapsed, throttled) = run_with_client(body)
    assert throttled == 0 and elapsed < 1.0


def test_retry_after_retries_are_bounded_by_client_gos_max_retries():
    async def body(world, store, client):
        store.fail_next("list", protocol.Status(503, "ServiceUnavailable", "busy", retry_after_seconds=1), count=100)
        return await client.request(Request(verb="list", resource="pods", credentials=ADMIN))

    _, store, response = run_with_client(body, attempts=50)
    assert response.code == 503
    assert len(store.requests) == MAX_RETRY_AFTER_RETRIES + 1


def test_429_without_retry_after_is_final():
    async def body(world, store, client):
        store.put(pod("a"))
        store.fail_next("create", protocol.too_many_requests("Cannot evict pod as it would violate the pod's disruption budget."))
        with pytest.raises(ApiError) as caught:
            await client.evict("default", "a")
        return caught.value

    world, store, error = run_with_client(body)
    assert (error.code, error.ambiguous) == (429, False)
    assert len(store.requests) == 1
    assert store.get("pods", "default", "a") is not None
    end = api_ops(world)[-1]
    assert (end["phase"], end["subresource"], end["code"]) == ("fail", "eviction", 429)


def test_409_is_raised_and_never_retried():
    async def body(world, store, client):
        first = await client.create(pod("a"))
        with pytest.raises(ApiError) as exists:
            await client.create(pod("a"))
        await client.update(first)  # rv 1 -> 2
        with pytest.raises(ApiError) as conflict:
            await client.update(first)  # still rv 1: stale
        return exists.value, conflict.value

    world, store, (exists, conflict) = run_with_client(body)
    assert (exists.code, exists.reason) == (409, "AlreadyExists")
    assert (conflict.code, conflict.reason) == (409, "Conflict")
    assert "the object has been modified" in conflict.message
    assert len(store.requests) == 4
    assert [e["phase"] for e in api_ops(world) if e["phase"] != "invoke"] == ["ok", "fail", "ok", "fail"]


def test_a_definite_failure_after_an_ambiguous_attempt_stays_ambiguous():
    """A 500 (outcome unknown) with Retry-After, then 409 AlreadyExists on the retry: the
    first attempt may have created it, so the request is info, not fail."""

    async def body(world, store, client):
        store.put(pod("a"))
        store.fail_next("create", protocol.Status(500, "InternalError", "Internal error occurred: etcdserver: request timed out", retry_after_seconds=1))
        with pytest.raises(ApiError) as caught:
            await client.create(pod("a"))
        return caught.value

    world, store, error = run_with_client(body)
    assert (error.code, error.ambiguous) == (409, True)
    assert api_ops(world)[-1]["phase"] == "info"


def test_the_overall_deadline_bounds_retried_reads():
    async def body(world, store, client):
        for name in ("api-0", "api-1"):
            world.process(name).pause()  # nothing answers; requests wait in the network
        started = world.now
        response = await client.request(Request(verb="get", resource="pods", namespace="default", name="a", credentials=ADMIN))
        return response, world.now - started

    _, _, (response, elapsed_s) = run_with_client(body, timeout_s=2.0, attempts=10, deadline_s=5.0)
    assert response.code == 504 and is_ambiguous(response)
    assert elapsed_s == pytest.approx(5.0, abs=0.01)


# -- typed helpers and the journal -------------------------------------------------------------------
def test_typed_helpers_and_the_journal_of_mutations():
    async def body(world, store, client):
        await client.create(pod("a", labels={"app": "web"}))
        await client.create(pod("b", labels={"app": "db"}))
        await client.create(pod("c", namespace="other", labels={"app": "web"}))
        listed = await client.list("pods", "default")
        web = await client.list("pods", label_selector="app=web")
        got = await client.get("pods", "default", "a")
        got.metadata.labels["tier"] = "front"
        updated = await client.update(got)
        patched = await client.patch("pods", "default", "a", {"metadata": {"annotations": {"note": "x"}}})
        await client.bind("default", "b", "node-1")
        await client.evict("default", "a", delete_options=DeleteOptions(grace_period_seconds=0))
        deleted = await client.delete("pods", "other", "c")
        with pytest.raises(ApiError) as missing:
            await client.get("pods", "default", "a")
        return listed, web, got, updated, patched, deleted, missing.value

    world, store, (listed, web, got, updated, patched, deleted, missing) = run_with_client(body)
    items, resource_version = listed
    assert [p.metadata.name for p in items] == ["a", "b"] and resource_version == "3"
    assert [(p.metadata.namespace, p.metadata.name) for p in web.items] == [("default", "a"), ("other", "c")]
    assert updated.metadata.labels == {"app": "web", "tier": "front"}
    assert patched.metadata.annotations == {"note": "x"}
    assert store.get("pods", "default", "b").spec.node_name == "node-1"
    assert store.get("pods", "default", "a") is None and deleted.metadata.name == "c"
    assert (missing.code, missing.reason, missing.message) == (404, "NotFound", 'pods "a" not found')
    ops = api_ops(world)
    assert [(e["phase"], e["verb"], e["subresource"], e["name"]) for e in ops if e["phase"] != "invoke"] == [
        ("ok", "create", "", "a"),
        ("ok", "create", "", "b"),
        ("ok", "create", "", "c"),
        ("ok", "update", "", "a"),
        ("ok", "patch", "", "a"),
        ("ok", "create", "binding", "b"),
        ("ok", "create", "eviction", "a"),
        ("ok", "delete", "", "c"),
    ]
    assert all(e["client"] == "client" for e in ops)
    assert [e["op_id"] for e in ops] == [f"1.{n}" for n in range(1, 9) for _ in (0, 1)]
    assert ops[1]["request"].startswith("client/1/") and ops[1]["resource_version"] == "1"
    assert [request.id for _, request in store.requests][:3] == ["client/1/1", "client/1/2", "client/1/3"]


def test_returned_objects_are_the_callers_own():
    async def body(world, store, client):
        created = await client.create(pod("a", labels={"app": "web"}))
        created.metadata.labels["app"] = "mutated"
        got = await client.get("pods", "default", "a")
        return got

    _, store, got = run_with_client(body)
    assert got.metadata.labels == {"app": "web"}
    assert store.get("pods", "default", "a").metadata.labels == {"app": "web"}


def test_dry_run_writes_are_not_journaled():
    async def body(world, store, client):
        return await client.create(pod("a"), dry_run=True)

    world, store, created = run_with_client(body)
    assert created.metadata.name == "a" and store.get("pods", "default", "a") is None
    assert api_ops(world) == []


def test_request_ids_are_per_incarnation_and_the_start_server_is_seeded():
    starts = set()
    for seed in range(1, 9):
        world, _, first = run_with_client(lambda world, store, client: _first_server(client), seed=seed)
        starts.add(first)
        again = run_with_client(lambda world, store, client: _first_server(client), seed=seed)[2]
        assert again == first
    assert starts == {"api-0", "api-1"}


async def _first_server(client):
    return client.server


# -- the Lease lock ----------------------------------------------------------------------------------
def test_lease_record_round_trip_uses_micro_timestamps():
    record = LeaseRecord("a", 15, 1.25, 3.000001, 4)
    spec = lease_spec_of(record)
    assert (spec.acquire_time, spec.renew_time) == ("2026-01-01T00:00:01.250000Z", "2026-01-01T00:00:03.000001Z")
    assert lease_record_of(Lease(metadata=ObjectMeta(name="x", namespace="y"), spec=spec)) == record
    assert lease_record_of(Lease(metadata=ObjectMeta(name="x", namespace="y"))) == LeaseRecord()


def test_api_lease_lock_get_create_update_and_conflicts():
    async def body(world, store, client):
        lock = ApiLeaseLock(client, "kube-system", "kube-scheduler")
        absent = await lock.get()
        made = await lock.create(LeaseRecord("a", 15, 1.0, 1.0, 0))
        again = await lock.create(LeaseRecord("b", 15, 1.0, 1.0, 0))
        record, version = await lock.get()
        renewed = await lock.update(LeaseRecord("a", 15, 1.0, 3.5, 0), version)
        stale = await lock.update(LeaseRecord("b", 15, 4.0, 4.0, 1), version)
        for name in ("api-0", "api-1"):
            world.process(name).kill()
        with pytest.raises(LockError):
            await lock.get()
        return absent, made, again, record, version, renewed, stale

    _, store, (absent, made, again, record, version, renewed, stale) = run_with_client(body, timeout_s=1.0, attempts=2)
    assert absent == (None, "")
    assert (made, again, renewed, stale) == (True, False, True, False)
    assert record == LeaseRecord("a", 15, 1.0, 1.0, 0) and version == "1"
    stored = store.get("leases", "kube-system", "kube-scheduler")
    assert stored.spec.holder_identity == "a" and stored.spec.renew_time == "2026-01-01T00:00:03.500000Z"


def test_a_timed_out_lease_write_raises_lock_error_not_false():
    async def body(world, store, client):
        lock = ApiLeaseLock(client, "kube-system", "kcm")
        store.swallow_replies(1)
        with pytest.raises(LockError, match="504"):
            await lock.create(LeaseRecord("a", 15, 1.0, 1.0, 0))
        return True

    run_with_client(body, timeout_s=1.0)


def test_leader_election_client_timeouts_are_half_the_renew_deadline():
    async def body(world, store, client):
        le = leader_election_client(client.process, ("api-0",), ADMIN, renew_deadline_s=10.0)
        short = leader_election_client(client.process, ("api-0",), ADMIN, renew_deadline_s=1.5)
        return (le.timeout_s, le.deadline_s, le.user_agent, le.name), (short.timeout_s, short.deadline_s)

    _, _, (long_client, short_client) = run_with_client(body)
    assert long_client == (5.0, 5.0, "leader-election", "client/leader-election")
    assert short_client == (1.0, 1.0)


CONFIG = LeaderElectionConfig()
FAILOVER_BOUND = 15.0 + 2 * 2.0 * 2.2 + 5.0  # lease + two jittered polls + one request timeout


def election(seed, fault=None, warmup_s=30.0, after_s=40.0):
    store = FakeStore()
    facts = {}

    def elector(process_name):
        async def main(process):
            client = leader_election_client(process, ("api-0", "api-1"), ADMIN)
            lock = ApiLeaseLock(client, "kube-system", "kube-controller-manager")
            while True:
                await LeaderElector(process, lock, CONFIG).run()

        return main

    async def main(world):
        store.spawn(world, "api-0", "api-1")
        for name in ("kcm-a", "kcm-b", "kcm-c"):
            world.spawn(name, elector(name))
        await world.sleep(warmup_s)
        starts = [e for e in world.journal.of_type("leader") if e["event"] == "start"]
        facts["leader"] = starts[-1]["process"]
        facts["t"] = world.now
        if fault is not None:
            fault(world, facts["leader"])
        await world.sleep(after_s)

    world = World(seed)
    world.run(main)
    return world, store, facts


def leader_starts(world, after=-1.0):
    return [e for e in world.journal.of_type("leader") if e["event"] == "start" and e["t"] > after]


def test_leader_election_over_the_api_one_leader_in_the_steady_state():
    world, store, facts = election(1)
    starts = leader_starts(world)
    assert len(starts) == 1 and starts[0]["t"] < 0.1
    assert starts[0]["lease"] == "kube-system/kube-controller-manager"
    lease = store.get("leases", "kube-system", "kube-controller-manager")
    assert lease.spec.holder_identity == facts["leader"] and lease.spec.lease_duration_seconds == 15
    verdict = check_leader_election(world.journal.events)
    assert verdict.valid is True, verdict.reason


@pytest.mark.parametrize("seed", range(1, 6))
def test_leader_election_over_the_api_fails_over_after_the_leader_is_killed(seed):
    world, store, facts = election(seed, lambda world, leader: world.process(leader).kill())
    new = leader_starts(world, after=facts["t"])
    assert new and new[0]["process"] != facts["leader"]
    assert 15.0 - 2.0 - 0.1 < new[0]["t"] - facts["t"] <= FAILOVER_BOUND
    lease = store.get("leases", "kube-system", "kube-controller-manager")
    assert lease.spec.holder_identity == new[0]["process"] and lease.spec.lease_transitions == 1
    verdict = check_leader_election(world.journal.events, max_gap_s=FAILOVER_BOUND)
    assert verdict.valid is True, verdict.reason


def test_leader_election_over_the_api_survives_an_api_server_kill():
    def kill_an_api_server(world, leader):
        world.process("api-0").kill()

    world, _, facts = election(2, kill_an_api_server)
    assert leader_starts(world, after=facts["t"]) == []  # the other server keeps serving
    assert check_leader_election(world.journal.events).valid is True


def test_api_client_rejects_programmer_errors():
    async def body(world, store, client):
        with pytest.raises(AssertionError):
            ApiClient(client.process, (), ADMIN)
        with pytest.raises(AssertionError):
            await client.request(Request(verb="watch", resource="pods", credentials=ADMIN, watch_id="w"))
        return True

    run_with_client(body)

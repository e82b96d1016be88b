"""Tests for the lessor (chaoskube.etcd.lease) and leases applied through the Store."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.etcd.lease import MAX_LEASE_TTL_S, MIN_LEASE_TTL_S, Lessor, min_lease_ttl_s
from chaoskube.etcd.mvcc import Store, WatchHub
from chaoskube.etcd.requests import (
    DeleteRangeRequest,
    Event,
    KeyValue,
    LeaseExistsError,
    LeaseGrantRequest,
    LeaseGrantResponse,
    LeaseNotFoundError,
    LeaseRevokeRequest,
    LeaseRevokeResponse,
    LeaseTTLTooLargeError,
    NotPrimaryError,
    PutRequest,
    TxnRequest,
)


@pytest.mark.parametrize(
    ("heartbeat_ms", "election_ms", "expected_s"),
    [
        (100, 1000, 2),  # etcd's defaults: 15 ticks * 100 ms = 1.5 s, rounded up
        (50, 500, 1),  # 15 * 50 ms = 0.75 s
        (100, 3000, 5),  # 45 * 100 ms = 4.5 s
        (100, 1100, 2),  # (3*11)//2 = 16 ticks: integer division, as etcd's
        (500, 5000, 8),  # 7.5 s
    ],
)
def test_min_lease_ttl(heartbeat_ms, election_ms, expected_s):
    assert min_lease_ttl_s(heartbeat_ms, election_ms) == expected_s


def test_default_limits():
    assert MIN_LEASE_TTL_S == 2
    assert MAX_LEASE_TTL_S == 9_000_000_000


@pytest.mark.parametrize(
    ("ttl", "granted"),
    [(-5, 2), (0, 2), (1, 2), (2, 2), (60, 60), (MAX_LEASE_TTL_S, MAX_LEASE_TTL_S)],
)
def test_grant_raises_ttl_to_the_minimum(ttl, granted):
    assert Lessor().grant(1, ttl) == granted


@pytest.mark.parametrize(
    ("lease_id", "ttl", "error", "message"),
    [
        (0, 10, LeaseNotFoundError, "etcdserver: requested lease not found"),
        (1, MAX_LEASE_TTL_S + 1, LeaseTTLTooLargeError, "etcdserver: too large lease TTL"),
        (7, 10, LeaseExistsError, "etcdserver: lease already exists"),
    ],
)
def test_grant_errors(lease_id, ttl, error, message):
    lessor = Lessor()
    lessor.grant(7, 10)
    with pytest.raises(error, match=message):
        lessor.grant(lease_id, ttl)


def test_follower_leases_never_expire_and_cannot_be_renewed():
    lessor = Lessor()
    lessor.grant(1, 5)
    assert lessor.is_primary is False
    assert lessor.expired(1e12) == ()
    assert lessor.remaining(1, 1e12) == math.inf
    assert lessor.lookup(1).expiry is None
    with pytest.raises(NotPrimaryError, match="not a primary lessor"):
        lessor.renew(1, 0.0)


def test_primary_expiry_renew_and_remaining():
    lessor = Lessor()
    lessor.promote(now=0.0)
    lessor.grant(2, 10, now=0.0)
    lessor.grant(1, 5, now=1.0)
    table = [
        (5.9, ()),
        (6.0, (1,)),  # expiry reached
        (10.0, (1, 2)),  # sorted ids
    ]
    for now, expected in table:
        assert lessor.expired(now) == expected
    assert lessor.remaining(1, 3.0) == 3.0
    assert lessor.renew(2, 4.0) == 10
    assert lessor.remaining(2, 4.0) == 10.0
    assert lessor.expired(10.0) == (1,)
    with pytest.raises(LeaseNotFoundError):
        lessor.renew(1, 6.5)  # already expired: it can only be revoked now
    with pytest.raises(LeaseNotFoundError):
        lessor.renew(99, 6.5)
    with pytest.raises(LeaseNotFoundError):
        lessor.remaining(99, 6.5)


def test_promote_pushes_every_expiry_and_demote_makes_them_eternal():
    lessor = Lessor()
    lessor.grant(1, 10)
    lessor.grant(2, 60)
    lessor.promote(now=100.0, extend_s=1.0)  # extend: the election timeout
    assert [(lease.id, lease.expiry) for lease in lessor.leases()] == [(1, 111.0), (2, 161.0)]
    assert lessor.expired(110.9) == ()
    assert lessor.expired(111.0) == (1,)
    lessor.demote()
    assert lessor.is_primary is False
    assert lessor.expired(1e9) == ()
    assert [lease.expiry for lease in lessor.leases()] == [None, None]
    lessor.promote(now=500.0)  # a new term: expiries start again from now
    assert lessor.remaining(1, 500.0) == 10.0


def test_attach_detach_and_revoke_returns_sorted_keys():
    lessor = Lessor()
    lessor.grant(1, 10)
    lessor.grant(2, 10)
    for key in ("c", "a", "b"):
        lessor.attach(1, key)
    lessor.attach(2, "b")  # a key has one lease: this moves it
    assert lessor.lease_of("b") == 2
    assert lessor.lookup(1).keys == ("a", "c")
    lessor.detach(1, "c")
    lessor.detach(1, "not-attached")
    assert lessor.lease_of("c") == 0
    with pytest.raises(LeaseNotFoundError):
        lessor.attach(3, "x")
    with pytest.raises(LeaseNotFoundError):
        lessor.detach(3, "x")
    lessor.attach(1, "z")
    assert lessor.revoke(1) == ("a", "z")
    assert lessor.lease_of("a") == 0
    assert lessor.lookup(1) is None
    with pytest.raises(LeaseNotFoundError):
        lessor.revoke(1)


# ---------------------------------------------------------------------- through the Store


def test_lease_grant_through_the_store_does_not_bump_the_revision():
    store = Store()
    assert store.apply(LeaseGrantRequest(5, 1)) == LeaseGrantResponse(1, 5, 2)
    with pytest.raises(LeaseTTLTooLargeError):
        store.apply(LeaseGrantRequest(6, MAX_LEASE_TTL_S + 1))
    with pytest.raises(LeaseExistsError):
        store.apply(LeaseGrantRequest(5, 10))
    assert store.revision == 1


def test_primary_store_needs_now_to_grant():
    store = Store()
    store.lessor.promote(now=0.0)
    with pytest.raises(AssertionError):
        store.apply(LeaseGrantRequest(5, 10))
    store.apply(LeaseGrantRequest(5, 10), now=3.0)
    assert store.lessor.remaining(5, 3.0) == 10.0


def test_lease_expiry_deletes_the_keys_in_one_revision():
    store = Store()
    hub = WatchHub(store)
    hub.watch("pods", "pod/", "pod0")
    store.lessor.promote(now=0.0)
    store.lease_grant(1, 5, now=0.0)
    store.lease_grant(2, 10, now=0.0)
    for request in (
        PutRequest("pod/b", "x", lease=1),  # 2
        PutRequest("pod/a", "y", lease=1),  # 3
        PutRequest("node", "z", lease=2),  # 4
        PutRequest("plain", "p"),  # 5
    ):
        store.apply(request)
        hub.notify(store.take_events())
    assert store.lessor.expired(4.9) == ()
    assert store.lessor.expired(5.0) == (1,)
    response = store.apply(LeaseRevokeRequest(1))
    assert response == LeaseRevokeResponse(6)
    events = store.take_events()
    assert events == (
        Event("DELETE", KeyValue("pod/a", 0, 6, 0, "", 0), KeyValue("pod/a", 3, 3, 1, "y", 1)),
        Event("DELETE", KeyValue("pod/b", 0, 6, 0, "", 0), KeyValue("pod/b", 2, 2, 1, "x", 1)),
    )
    assert [kv.key for kv in store.range("\0", "\0").kvs] == ["node", "plain"]
    assert store.lessor.expired(5.0) == ()
    assert store.lessor.lookup(1) is None
    # the watch fan-out sees both deletions at revision 6
    delivered = hub.notify(events)
    assert [(event.type, event.kv.key, event.revision) for event in delivered["pods"]] == [
        ("DELETE", "pod/a", 6),
        ("DELETE", "pod/b", 6),
    ]


def test_revoke_without_keys_and_unknown_lease():
    store = Store()
    store.lease_grant(1, 10)
    assert store.lease_revoke(1) == LeaseRevokeResponse(1)
    assert store.take_events() == ()
    with pytest.raises(LeaseNotFoundError, match="etcdserver: requested lease not found"):
        store.lease_revoke(1)


def test_put_and_delete_move_and_drop_attachments():
    store = Store()
    store.lease_grant(1, 10)
    store.lease_grant(2, 10)
    store.put("k", "v", lease=1)
    store.put("k", "v", lease=2)
    assert store.lessor.lookup(1).keys == ()
    assert store.lessor.lookup(2).keys == ("k",)
    store.put("k", "v")  # a put without a lease detaches
    assert store.lessor.lease_of("k") == 0
    store.put("k", "v", lease=2)
    store.txn((), (DeleteRangeRequest("k"),))
    assert store.lessor.lookup(2).keys == ()
    store.lease_revoke(2)
    with pytest.raises(LeaseNotFoundError):
        store.put("k", "v", lease=2)
    with pytest.raises(LeaseNotFoundError):
        store.apply(TxnRequest((), (PutRequest("k", "v", lease=2),)))


def test_leader_and_follower_agree_on_state_but_only_the_leader_expires():
    log = [
        LeaseGrantRequest(1, 5),
        PutRequest("a", "1", lease=1),
        LeaseGrantRequest(2, 30),
        PutRequest("b", "1", lease=2),
    ]
    leader, follower = Store(), Store()
    leader.lessor.promote(now=0.0, extend_s=1.0)
    for request in log:
        leader.apply(request, now=0.0)
        follower.apply(request)
    assert leader.snapshot() == follower.snapshot()
    assert leader.lessor.expired(5.0) == (1,)
    assert follower.lessor.expired(5.0) == ()
    for store in (leader, follower):
        store.apply(LeaseRevokeRequest(1))
    assert leader.snapshot() == follower.snapshot()
    # failover: the follower becomes leader at t=100; lease 2 gets a full TTL plus extend
    follower.lessor.promote(now=100.0, extend_s=1.0)
    leader.lessor.demote()
    assert follower.lessor.expired(130.9) == ()
    assert follower.lessor.expired(131.0) == (2,)
    assert leader.lessor.expired(1e9) == ()


def test_snapshot_restores_leases_as_a_follower():
    store = Store()
    store.lessor.promote(now=0.0)
    store.lease_grant(1, 5, now=0.0)
    store.put("a", "1", lease=1)
    restored = Store.restore(store.snapshot())
    assert restored.lessor.lookup(1).keys == ("a",)
    assert restored.lessor.expired(1e9) == ()
    restored.lessor.promote(now=50.0)
    assert restored.lessor.expired(55.0) == (1,)


# ---------------------------------------------------------------------- against a model

lessor_actions = st.lists(
    st.one_of(
        st.tuples(st.just("grant"), st.integers(1, 4), st.integers(-1, 20)),
        st.tuples(st.just("renew"), st.integers(1, 4)),
        st.tuples(st.just("revoke"), st.integers(1, 4)),
        st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 3.0, 10.0])),
        st.tuples(st.just("promote"), st.sampled_from([0.0, 1.0])),
        st.tuples(st.just("demote")),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(lessor_actions)
def test_lessor_matches_a_model(actions):
    """The model: a dict id -> (ttl, expiry or None) and a primary flag."""
    lessor, now = Lessor(), 0.0
    ttls: dict[int, int] = {}
    expiries: dict[int, float | None] = {}
    primary = False
    for action in actions:
        kind = action[0]
        if kind == "grant":
            _, lease_id, ttl = action
            if lease_id in ttls:
                with pytest.raises(LeaseExistsError):
                    lessor.grant(lease_id, ttl, now)
                continue
            assert lessor.grant(lease_id, ttl, now) == max(ttl, MIN_LEASE_TTL_S)
            ttls[lease_id] = max(ttl, MIN_LEASE_TTL_S)
            expiries[lease_id] = now + ttls[lease_id] if primary else None
        elif kind == "renew":
            lease_id = action[1]
            if not primary:
                with pytest.raises(NotPrimaryError):
                    lessor.renew(lease_id, now)
            elif lease_id not in ttls or expiries[lease_id] <= now:
                with pytest.raises(LeaseNotFoundError):
                    lessor.renew(lease_id, now)
            else:
                assert lessor.renew(lease_id, now) == ttls[lease_id]
                expiries[lease_id] = now + ttls[lease_id]
        elif kind == "revoke":
            lease_id = action[1]
            if lease_id in ttls:
                lessor.revoke(lease_id)
                del ttls[lease_id], expiries[lease_id]
            else:
                with pytest.raises(LeaseNotFoundError):
                    lessor.revoke(lease_id)
        elif kind == "wait":
            now += action[1]
        elif kind == "promote":
            lessor.promote(now, action[1])
            primary = True
            expiries = {lease_id: now + ttl + action[1] for lease_id, ttl in ttls.items()}
        else:
            lessor.demote()
            primary = False
            expiries = dict.fromkeys(ttls)
        expected = tuple(
            sorted(i for i, expiry in expiries.items() if expiry is not None and expiry <= now)
        )
        assert lessor.expired(now) == expected
        for lease_id, expiry in expiries.items():
            remaining = math.inf if expiry is None else expiry - now
            assert lessor.remaining(lease_id, now) == remaining

"""Tests for the MVCC store and its watches (chaoskube.etcd.mvcc).

Table tests per operation, then Hypothesis checks against a deliberately simple oracle: a
list of (revision, key, value-or-None) records that is replayed from the start for every
question it is asked.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoskube.etcd.mvcc import Store, StoreSnapshot, WatchHub
from chaoskube.etcd.requests import (
    CompactedError,
    CompactionRequest,
    CompactionResponse,
    Compare,
    DeleteRangeRequest,
    DeleteRangeResponse,
    DuplicateKeyError,
    EmptyKeyError,
    Event,
    FutureRevisionError,
    KeyNotFoundError,
    KeyValue,
    LeaseGrantRequest,
    LeaseNotFoundError,
    LeaseProvidedError,
    PutRequest,
    PutResponse,
    RangeRequest,
    RangeResponse,
    TooManyOpsError,
    TxnRequest,
    TxnResponse,
    ValueProvidedError,
    in_range,
    prefix_range_end,
)


def kv(key, create, mod, version, value, lease=0):
    return KeyValue(key, create, mod, version, value, lease)


def tomb(key, revision):
    return KeyValue(key, 0, revision, 0, "", 0)


# ---------------------------------------------------------------------- requests


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        ("a", "b"),
        ("/registry/pods/", "/registry/pods0"),
        ("a\U0010ffff", "b"),
        ("\U0010ffff", "\0"),
        ("", "\0"),
        ("é", "ê"),
    ],
)
def test_prefix_range_end(prefix, end):
    assert prefix_range_end(prefix) == end


@given(st.lists(st.text(max_size=4), max_size=8))
def test_str_order_is_utf8_byte_order(keys):
    assert sorted(keys) == sorted(keys, key=lambda key: key.encode("utf-8", "surrogatepass"))


@given(st.text(min_size=1, max_size=3), st.text(max_size=4))
def test_prefix_range_selects_exactly_the_prefixed_keys(prefix, candidate):
    assert in_range(candidate, prefix, prefix_range_end(prefix)) == candidate.startswith(prefix)


@pytest.mark.parametrize(
    ("candidate", "key", "range_end", "inside"),
    [
        ("a", "a", None, True),
        ("ab", "a", None, False),
        ("a", "a", "", True),
        ("z", "a", "\0", True),
        ("0", "a", "\0", False),
        ("b", "a", "c", True),
        ("c", "a", "c", False),
        ("a", "c", "a", False),  # range_end <= key: empty
    ],
)
def test_in_range(candidate, key, range_end, inside):
    assert in_range(candidate, key, range_end) is inside


def test_requests_are_frozen_and_hold_tuples():
    request = TxnRequest([Compare("a", "VERSION", "=", 0)], [PutRequest("a", "1")], [])
    assert isinstance(request.compare, tuple) and isinstance(request.success, tuple)
    with pytest.raises(AttributeError):
        request.success = ()  # type: ignore[misc]
    hash(request)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("a", "SIZE", "=", 0), ValueError),
        (("a", "VERSION", "<=", 0), ValueError),
        (("a", "VALUE", "=", 0), TypeError),
        (("a", "MOD", "=", "1"), TypeError),
    ],
)
def test_compare_validates(args, error):
    with pytest.raises(error):
        Compare(*args)


# ---------------------------------------------------------------------- revisions


def test_revisions_and_versions_through_put_delete_recreate():
    store = Store()
    assert store.revision == 1
    steps = [
        (lambda: store.put("k", "v1"), 2, kv("k", 2, 2, 1, "v1")),
        (lambda: store.put("k", "v2"), 3, kv("k", 2, 3, 2, "v2")),
        (lambda: store.put("other", "x"), 4, kv("k", 2, 3, 2, "v2")),
        (lambda: store.delete_range("k"), 5, None),
        (lambda: store.delete_range("k"), 5, None),  # delete of nothing: no new revision
        (lambda: store.put("k", "v3"), 6, kv("k", 6, 6, 1, "v3")),
        (lambda: store.put("k", "v4"), 7, kv("k", 6, 7, 2, "v4")),
    ]
    for step, revision, expected in steps:
        response = step()
        assert response.header_revision == revision
        assert store.revision == revision
        got = store.range("k").kvs
        assert got == ((expected,) if expected else ())


@pytest.mark.parametrize(
    ("request_", "bumps"),
    [
        (PutRequest("a", "1"), True),
        (DeleteRangeRequest("a"), True),
        (DeleteRangeRequest("zzz"), False),
        (RangeRequest("a"), False),
        (TxnRequest((), (RangeRequest("a"),), ()), False),
        (TxnRequest((), (DeleteRangeRequest("zzz"),), ()), False),
        (TxnRequest((), (PutRequest("b", "1"), PutRequest("c", "1")), ()), True),
        (TxnRequest((Compare("a", "VERSION", "=", 9),), (PutRequest("b", "1"),), ()), False),
        (CompactionRequest(2), False),
        (LeaseGrantRequest(7, 10), False),
    ],
)
def test_which_requests_bump_the_revision(request_, bumps):
    store = Store()
    store.put("a", "0")
    before = store.revision
    response = store.apply(request_)
    assert store.revision == before + (1 if bumps else 0)
    assert response.header_revision == store.revision


def test_first_write_gets_revision_two_and_put_returns_prev_kv():
    store = Store()
    assert store.put("a", "1").header_revision == 2
    assert store.put("a", "2", prev_kv=True) == PutResponse(3, kv("a", 2, 2, 1, "1"))
    assert store.put("b", "1", prev_kv=True).prev_kv is None


# ---------------------------------------------------------------------- range


def _abc_store():
    store = Store()
    for key in ("a", "ab", "abc", "b", "c"):
        store.put(key, key.upper())
    return store  # revisions 2..6


@pytest.mark.parametrize(
    ("key", "range_end", "keys"),
    [
        ("a", None, ["a"]),
        ("zz", None, []),
        ("a", prefix_range_end("a"), ["a", "ab", "abc"]),
        ("ab", "b", ["ab", "abc"]),
        ("ab", "\0", ["ab", "abc", "b", "c"]),
        ("\0", "\0", ["a", "ab", "abc", "b", "c"]),
        ("b", "a", []),
        ("b", "b", []),
    ],
)
def test_range_selects_keys(key, range_end, keys):
    response = _abc_store().range(key, range_end)
    assert [item.key for item in response.kvs] == keys
    assert response.count == len(keys)
    assert response.more is False
    assert response.header_revision == 6


@pytest.mark.parametrize(
    ("limit", "keys", "more"),
    [
        (0, ["a", "ab", "abc", "b", "c"], False),
        (2, ["a", "ab"], True),
        (5, None, False),
        (9, None, False),
    ],
)
def test_range_limit_count_and_more(limit, keys, more):
    response = _abc_store().range("\0", "\0", limit=limit)
    assert [item.key for item in response.kvs] == (keys or ["a", "ab", "abc", "b", "c"])
    assert response.count == 5
    assert response.more is more


def test_range_count_only_and_keys_only():
    store = _abc_store()
    assert store.range("a", "b", count_only=True) == RangeResponse(6, (), 3, False)
    keys_only = store.range("a", "b", keys_only=True, limit=1)
    assert keys_only.kvs == (kv("a", 2, 2, 1, ""),)
    assert keys_only.more is True


def test_range_at_old_revisions_sees_old_values():
    store = Store()
    store.put("k", "v1")  # 2
    store.put("k", "v2")  # 3
    store.delete_range("k")  # 4
    store.put("k", "v3")  # 5
    table = [
        (1, ()),
        (2, (kv("k", 2, 2, 1, "v1"),)),
        (3, (kv("k", 2, 3, 2, "v2"),)),
        (4, ()),
        (5, (kv("k", 5, 5, 1, "v3"),)),
        (0, (kv("k", 5, 5, 1, "v3"),)),
    ]
    for revision, kvs in table:
        response = store.range("k", revision=revision)
        assert response.kvs == kvs, revision
        assert response.header_revision == 5  # the header carries the current revision


def test_range_future_and_compacted_revisions():
    store = _abc_store()
    with pytest.raises(FutureRevisionError, match="required revision is a future revision"):
        store.range("a", revision=7)
    store.compact(4)
    with pytest.raises(CompactedError, match="required revision has been compacted"):
        store.range("a", revision=3)
    assert store.range("\0", "\0", revision=4).count == 3  # the compact revision itself reads
    assert store.range("\0", "\0", revision=-1).count == 5  # <= 0 means current, as etcd


@pytest.mark.parametrize(
    "request_",
    [
        PutRequest(""),
        RangeRequest(""),
        DeleteRangeRequest(""),
        TxnRequest((Compare("", "MOD", "=", 0),)),
    ],
)
def test_empty_keys_are_refused(request_):
    with pytest.raises(EmptyKeyError, match="etcdserver: key is not provided"):
        Store().apply(request_)


# ---------------------------------------------------------------------- put options


def test_put_ignore_value_and_ignore_lease():
    store = Store()
    store.lease_grant(5, 60)
    store.put("k", "v", lease=5)
    response = store.put("k", ignore_value=True, prev_kv=True)
    assert store.range("k").kvs == (kv("k", 2, 3, 2, "v"),)  # value kept, lease dropped
    assert response.prev_kv == kv("k", 2, 2, 1, "v", 5)
    store.put("k", "w", lease=5)
    store.put("k", "x", ignore_lease=True)
    assert store.range("k").kvs == (kv("k", 2, 5, 4, "x", 5),)
    with pytest.raises(KeyNotFoundError, match="etcdserver: key not found"):
        store.put("missing", ignore_value=True)
    with pytest.raises(ValueProvidedError):
        store.put("k", "v", ignore_value=True)
    with pytest.raises(LeaseProvidedError):
        store.put("k", "v", lease=5, ignore_lease=True)
    assert store.revision == 5


def test_put_with_unknown_lease_is_refused_and_changes_nothing():
    store = Store()
    with pytest.raises(LeaseNotFoundError, match="etcdserver: requested lease not found"):
        store.put("k", "v", lease=42)
    assert store.revision == 1
    assert store.take_events() == ()


# ---------------------------------------------------------------------- delete


def test_delete_range_prev_kvs_events_and_header():
    store = _abc_store()
    response = store.delete_range("a", "b", prev_kv=True)
    assert response == DeleteRangeResponse(
        7, 3, (kv("a", 2, 2, 1, "A"), kv("ab", 3, 3, 1, "AB"), kv("abc", 4, 4, 1, "ABC"))
    )
    assert store.take_events() == (
        Event("DELETE", tomb("a", 7), kv("a", 2, 2, 1, "A")),
        Event("DELETE", tomb("ab", 7), kv("ab", 3, 3, 1, "AB")),
        Event("DELETE", tomb("abc", 7), kv("abc", 4, 4, 1, "ABC")),
    )
    assert store.take_events() == ()
    assert store.delete_range("a", "b") == DeleteRangeResponse(7, 0, ())
    assert store.take_events() == ()


# ---------------------------------------------------------------------- txn

# The state compared against: "k" created at 2, modified at 3 (version 2, value "v");
# "l" leased (lease 9, value "w", created and modified at 4); "m" never existed.
_COMPARE_TABLE = [
    # existing key
    (Compare("k", "VERSION", "=", 2), True),
    (Compare("k", "VERSION", "!=", 2), False),
    (Compare("k", "VERSION", ">", 1), True),
    (Compare("k", "VERSION", "<", 2), False),
    (Compare("k", "CREATE", "=", 2), True),
    (Compare("k", "CREATE", "<", 3), True),
    (Compare("k", "MOD", "=", 3), True),
    (Compare("k", "MOD", ">", 3), False),
    (Compare("k", "VALUE", "=", "v"), True),
    (Compare("k", "VALUE", ">", "u"), True),
    (Compare("k", "VALUE", "<", "v"), False),
    (Compare("k", "VALUE", "!=", "x"), True),
    (Compare("k", "LEASE", "=", 0), True),
    (Compare("l", "LEASE", "=", 9), True),
    (Compare("l", "LEASE", ">", 0), True),
    # missing key: VERSION/CREATE/MOD/LEASE compare against 0, VALUE always fails
    (Compare("m", "VERSION", "=", 0), True),
    (Compare("m", "CREATE", "=", 0), True),
    (Compare("m", "MOD", "<", 1), True),
    (Compare("m", "MOD", ">", 0), False),
    (Compare("m", "LEASE", "=", 0), True),
    (Compare("m", "VALUE", "=", ""), False),
    (Compare("m", "VALUE", "!=", "x"), False),
    # ranges: every key must satisfy; an empty range compares the zero KeyValue
    (Compare("k", "MOD", ">", 2, range_end="m"), True),
    (Compare("k", "MOD", ">", 3, range_end="m"), False),
    (Compare("k", "VALUE", ">", "a", range_end="\0"), True),
    (Compare("x", "VERSION", "=", 0, range_end="z"), True),
    (Compare("x", "VALUE", "=", "", range_end="z"), False),
]


@pytest.mark.parametrize(("compare", "holds"), _COMPARE_TABLE)
def test_txn_compare_matrix(compare, holds):
    store = Store()
    store.put("k", "u")  # 2
    store.put("k", "v")  # 3
    store.lease_grant(9, 30)
    store.put("l", "w", lease=9)  # 4
    response = store.txn((compare,), (RangeRequest("ok"),), (RangeRequest("no"),))
    assert response.succeeded is holds
    assert response.header_revision == 4


def test_txn_writes_share_one_revision_in_sub_revision_order():
    store = Store()
    store.put("b", "old")  # 2
    response = store.txn(
        (Compare("b", "VALUE", "=", "old"),),
        (
            PutRequest("c", "1"),
            DeleteRangeRequest("b", prev_kv=True),
            RangeRequest("\0", "\0"),
            PutRequest("a", "1", prev_kv=True),
        ),
    )
    assert response == TxnResponse(
        3,
        True,
        (
            PutResponse(3),
            DeleteRangeResponse(3, 1, (kv("b", 2, 2, 1, "old"),)),
            RangeResponse(3, (kv("c", 3, 3, 1, "1"),), 1, False),  # reads its own writes
            PutResponse(3, None),
        ),
    )
    assert store.revision == 3
    assert store.take_events() == (
        Event("PUT", kv("c", 3, 3, 1, "1")),
        Event("DELETE", tomb("b", 3), kv("b", 2, 2, 1, "old")),
        Event("PUT", kv("a", 3, 3, 1, "1")),
    )
    assert [key for key, _ in store.snapshot().history] == ["a", "b", "c"]
    assert store.snapshot().history[0][1][0][:2] == (3, 2)  # ("a": main 3, sub 2)


def test_txn_failure_branch_and_read_only_header():
    store = Store()
    store.put("a", "1")
    response = store.txn(
        (Compare("a", "VALUE", "=", "2"),), (PutRequest("a", "3"),), (RangeRequest("a"),)
    )
    assert response == TxnResponse(
        2, False, (RangeResponse(2, (kv("a", 2, 2, 1, "1"),), 1, False),)
    )
    assert store.revision == 2


def test_nested_txn_compares_see_the_state_before_the_txn():
    store = Store()
    store.put("a", "1")  # 2
    inner = TxnRequest(
        (Compare("a", "VALUE", "=", "1"),),  # true before the txn, false after its put
        (PutRequest("inner", "then"),),
        (PutRequest("inner", "else"),),
    )
    response = store.txn((), (PutRequest("a", "2"), inner))
    assert response.header_revision == 3
    assert response.responses[1] == TxnResponse(0, True, (PutResponse(3),))  # nested header: 0
    assert store.range("inner").kvs[0].value == "then"


@pytest.mark.parametrize(
    ("success", "duplicate"),
    [
        ((PutRequest("a"), PutRequest("a")), True),
        ((PutRequest("a"), DeleteRangeRequest("a")), True),
        ((DeleteRangeRequest("a", "c"), PutRequest("b")), True),
        ((DeleteRangeRequest("a", "\0"), PutRequest("z")), True),
        ((DeleteRangeRequest("a"), DeleteRangeRequest("a")), False),
        ((PutRequest("a"), PutRequest("b")), False),
        ((TxnRequest((), (PutRequest("a"),), (PutRequest("a"),)),), False),
        ((TxnRequest((), (PutRequest("a"),)), PutRequest("a")), True),
        ((TxnRequest((), (PutRequest("a"),)), TxnRequest((), (PutRequest("a"),))), True),
        ((DeleteRangeRequest("a"), TxnRequest((), (PutRequest("a"),))), True),
        ((TxnRequest((), (DeleteRangeRequest("a"),)), PutRequest("a")), True),
        ((RangeRequest("a"), PutRequest("a")), False),
    ],
)
def test_txn_duplicate_keys(success, duplicate):
    store = Store()
    store.put("a", "0")
    if duplicate:
        with pytest.raises(DuplicateKeyError, match="duplicate key given in txn request"):
            store.txn((), success)
        assert store.revision == 2
    else:
        store.txn((), success)


def test_txn_same_key_in_success_and_failure_is_fine():
    store = Store()
    store.txn((), (PutRequest("a", "1"),), (PutRequest("a", "2"),))
    assert store.range("a").kvs[0].value == "1"


def test_txn_too_many_ops():
    store = Store(max_txn_ops=3)
    store.txn((), tuple(PutRequest(f"k{i}") for i in range(3)))
    with pytest.raises(TooManyOpsError):
        store.txn((), tuple(PutRequest(f"k{i}") for i in range(4)))


@pytest.mark.parametrize(
    ("bad_op", "error"),
    [
        (PutRequest("b", "1", lease=77), LeaseNotFoundError),
        (PutRequest("zz", ignore_value=True), KeyNotFoundError),
        (RangeRequest("a", revision=99), FutureRevisionError),
        (TxnRequest((), (PutRequest("b", "1", lease=77),)), LeaseNotFoundError),
    ],
)
def test_txn_checks_everything_before_writing(bad_op, error):
    store = Store()
    store.put("a", "0")
    with pytest.raises(error):
        store.txn((), (PutRequest("first", "x"), bad_op))
    assert store.revision == 2
    assert store.range("first").kvs == ()
    assert store.take_events() == ()


def test_txn_unchosen_branch_is_not_checked():
    store = Store()
    response = store.txn((), (PutRequest("a", "1"),), (PutRequest("b", "1", lease=77),))
    assert response.succeeded


def test_txn_range_at_compacted_revision_is_refused():
    store = _abc_store()
    store.compact(5)
    with pytest.raises(CompactedError):
        store.txn((), (RangeRequest("a", revision=4),))


# ---------------------------------------------------------------------- compaction


def test_compaction_keeps_what_later_revisions_need():
    store = Store()
    store.put("gone", "1")  # 2
    store.put("kept", "1")  # 3
    store.delete_range("gone")  # 4
    store.put("kept", "2")  # 5
    store.put("later", "1")  # 6
    store.delete_range("later")  # 7
    store.put("deleted-at-compact", "x")  # 8
    store.delete_range("deleted-at-compact")  # 9
    views = {revision: store.range("\0", "\0", revision=revision).kvs for revision in range(9, 10)}
    assert store.compact(9) == CompactionResponse(9)
    assert store.compact_revision == 9
    history = dict(store.snapshot().history)
    assert set(history) == {"kept"}  # tombstoned keys vanish entirely
    assert history["kept"] == ((5, 0, kv("kept", 3, 5, 2, "2")),)
    assert store.range("\0", "\0", revision=9).kvs == views[9]


def test_compaction_keeps_a_put_before_a_later_delete():
    store = Store()
    store.put("k", "1")  # 2
    store.put("x", "1")  # 3
    store.delete_range("k")  # 4
    store.compact(3)
    assert store.range("k", revision=3).kvs == (kv("k", 2, 2, 1, "1"),)
    assert store.range("k").kvs == ()
    assert store.events_since("k", None, 4) == (
        Event("DELETE", tomb("k", 4), kv("k", 2, 2, 1, "1")),
    )


@pytest.mark.parametrize(
    ("first", "second", "error"),
    [
        (None, 0, CompactedError),  # compact_revision starts at 0
        (None, 7, FutureRevisionError),
        (3, 3, CompactedError),
        (4, 3, CompactedError),
        (None, 6, None),  # the current revision may be compacted
        (2, 3, None),
    ],
)
def test_compaction_errors(first, second, error):
    store = _abc_store()
    if first is not None:
        store.compact(first)
    if error is None:
        store.compact(second)
        assert store.compact_revision == second
    else:
        with pytest.raises(error):
            store.compact(second)


# ---------------------------------------------------------------------- events_since


def test_events_since_orders_by_revision_then_sub_revision():
    store = Store()
    store.put("b", "1")  # 2
    store.txn((), (PutRequest("c", "1"), PutRequest("a", "1")))  # 3
    store.put("b", "2")  # 4
    events = store.events_since("\0", "\0", 2)
    assert [(event.revision, event.kv.key) for event in events] == [
        (2, "b"), (3, "c"), (3, "a"), (4, "b"),
    ]
    assert events[-1].prev_kv == kv("b", 2, 2, 1, "1")
    assert store.events_since("\0", "\0", 0) == ()
    assert store.events_since("\0", "\0", 5) == ()
    assert store.events_since("b", None, 3) == (events[-1],)


def test_events_since_refuses_compacted_start():
    store = _abc_store()
    store.compact(4)
    for start in (1, 3, 4):
        with pytest.raises(CompactedError):
            store.events_since("\0", "\0", start)
    assert [event.revision for event in store.events_since("\0", "\0", 5)] == [5, 6]


# ---------------------------------------------------------------------- snapshot


def test_snapshot_round_trips_and_restored_store_behaves_the_same():
    store = Store()
    store.lease_grant(3, 1)  # raised to the 2 s minimum
    store.put("a", "1", lease=3)
    store.put("b", "1")
    store.delete_range("b")
    store.put("c", "1")
    store.compact(3)
    snapshot = store.snapshot()
    assert isinstance(snapshot, StoreSnapshot)
    hash(snapshot)  # immutable all the way down
    restored = Store.restore(snapshot)
    assert restored.snapshot() == snapshot
    assert restored.lessor.lookup(3).keys == ("a",)
    assert restored.lessor.lookup(3).ttl == 2
    assert restored.lessor.is_primary is False
    for replica in (store, restored):
        replica.put("d", "1")
        replica.lease_revoke(3)
    assert restored.snapshot() == store.snapshot()
    assert restored.range("a").kvs == ()


# ---------------------------------------------------------------------- watches


def _apply(store, hub, request):
    store.apply(request)
    return hub.notify(store.take_events())


def test_watch_catch_up_then_notify_without_duplicates():
    store = Store()
    hub = WatchHub(store)
    store.put("a", "1")  # 2
    hub.notify(store.take_events())
    store.put("a", "2")  # 3, applied but not yet fanned out
    catch_up = hub.watch("w", "a", None, start_revision=2)
    assert [event.revision for event in catch_up] == [2, 3]
    assert hub.notify(store.take_events()) == {}  # revision 3 is not sent twice
    delivered = _apply(store, hub, PutRequest("a", "3"))
    assert [event.revision for event in delivered["w"]] == [4]


def test_watch_from_now_and_from_the_future():
    store = _abc_store()
    hub = WatchHub(store)
    assert hub.watch("now", "\0", "\0") == ()
    assert hub.watch("future", "\0", "\0", start_revision=8) == ()
    first = _apply(store, hub, PutRequest("x", "1"))  # 7
    assert list(first) == ["now"]
    second = _apply(store, hub, PutRequest("x", "2"))  # 8
    assert list(second) == ["now", "future"]  # creation order


def test_watch_filters_by_range_and_strips_prev_kv_unless_asked():
    store = Store()
    hub = WatchHub(store)
    hub.watch(1, "a", prefix_range_end("a"))
    hub.watch(2, "a", prefix_range_end("a"), prev_kv=True)
    hub.watch(3, "b")
    _apply(store, hub, PutRequest("ab", "1"))
    delivered = _apply(store, hub, PutRequest("ab", "2"))
    assert set(delivered) == {1, 2}
    assert delivered[1][0].prev_kv is None
    assert delivered[2][0].prev_kv == kv("ab", 2, 2, 1, "1")


def test_watch_cancel_and_resume_from_last_seen():
    store = Store()
    hub = WatchHub(store)
    hub.watch("w", "k")
    seen = list(_apply(store, hub, PutRequest("k", "1"))["w"])
    assert hub.cancel("w") is True
    assert hub.cancel("w") is False
    _apply(store, hub, PutRequest("k", "2"))
    _apply(store, hub, DeleteRangeRequest("k"))
    seen += hub.watch("w", "k", None, start_revision=seen[-1].revision + 1)
    seen += _apply(store, hub, PutRequest("k", "3"))["w"]
    assert [(event.type, event.revision) for event in seen] == [
        ("PUT", 2), ("PUT", 3), ("DELETE", 4), ("PUT", 5),
    ]


def test_watch_from_compacted_revision_is_refused():
    store = _abc_store()
    hub = WatchHub(store)
    store.compact(4)
    with pytest.raises(CompactedError):
        hub.watch("w", "a", "\0", start_revision=4)
    assert hub.watch_ids() == ()
    assert len(hub.watch("w", "a", "\0", start_revision=5)) == 2


def test_watch_ids_must_be_unique():
    hub = WatchHub(Store())
    hub.watch(1, "a")
    with pytest.raises(ValueError):
        hub.watch(1, "b")


def test_notify_refuses_a_gap():
    store = Store()
    hub = WatchHub(store)
    store.put("a", "1")
    store.take_events()  # lost: never handed to the hub
    store.put("a", "2")
    with pytest.raises(AssertionError, match="must continue from revision 2"):
        hub.notify(store.take_events())


# ---------------------------------------------------------------------- the oracle


class Oracle:
    """The store as a list of (revision, key, value or None) records, replayed for every
    question. Leases are left out."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str, str | None]] = []
        self.revision = 1
        self.compact_revision = 0

    def events(self) -> list[Event]:
        live: dict[str, KeyValue] = {}
        events = []
        for revision, key, value in self.records:
            previous = live.get(key)
            if value is None:
                assert previous is not None
                events.append(Event("DELETE", tomb(key, revision), previous))
                del live[key]
            else:
                create = previous.create_revision if previous else revision
                version = previous.version + 1 if previous else 1
                live[key] = kv(key, create, revision, version, value)
                events.append(Event("PUT", live[key], previous))
        return events

    def state_at(self, revision: int) -> dict[str, KeyValue]:
        live: dict[str, KeyValue] = {}
        for event in self.events():
            if event.revision > revision:
                break
            if event.type == "DELETE":
                del live[event.kv.key]
            else:
                live[event.kv.key] = event.kv
        return live

    def range(self, key, range_end, revision, limit):
        if revision > self.revision:
            return FutureRevisionError
        if 0 < revision < self.compact_revision:
            return CompactedError
        state = self.state_at(revision if revision > 0 else self.revision)
        kvs = [state[k] for k in sorted(state) if in_range(k, key, range_end)]
        more = 0 < limit < len(kvs)
        shown = kvs[:limit] if limit > 0 else kvs
        return (self.revision, tuple(shown), len(kvs), more)

    def put(self, key, value):
        self.revision += 1
        self.records.append((self.revision, key, value))

    def delete(self, key, range_end):
        state = self.state_at(self.revision)
        keys = [k for k in sorted(state) if in_range(k, key, range_end)]
        if keys:
            self.revision += 1
            self.records.extend((self.revision, k, None) for k in keys)
        return len(keys)

    def compare(self, key, target, result, operand):
        current = self.state_at(self.revision).get(key)
        if current is None:
            if target == "VALUE":
                return False
            current = kv(key, 0, 0, 0, "")
        actual = {
            "VERSION": current.version,
            "CREATE": current.create_revision,
            "MOD": current.mod_revision,
            "VALUE": current.value,
            "LEASE": current.lease,
        }[target]
        return {"=": actual == operand, "!=": actual != operand,
                "<": actual < operand, ">": actual > operand}[result]

    def txn(self, compare, success, failure):
        for branch in (success, failure):
            puts = [op[1] for op in branch if op[0] == "put"]
            deletes = {op[1] for op in branch if op[0] == "delete"}
            if len(puts) != len(set(puts)) or set(puts) & deletes:
                return DuplicateKeyError
        succeeded = self.compare(*compare)
        revision = self.revision + 1
        changed = False
        reads = []
        for op in success if succeeded else failure:
            state = self.state_at(revision)
            if op[0] == "put":
                self.records.append((revision, op[1], op[2]))
                changed = True
            elif op[0] == "delete":
                if op[1] in state:
                    self.records.append((revision, op[1], None))
                    changed = True
            else:
                reads.append(state.get(op[1]))
        if changed:
            self.revision += 1
        return succeeded, reads

    def compact(self, revision):
        if revision <= self.compact_revision:
            return CompactedError
        if revision > self.revision:
            return FutureRevisionError
        self.compact_revision = revision
        return None


KEYS = ["a", "ab", "b", "ba", "c", "é", "\U0001f600"]
keys = st.sampled_from(KEYS)
values = st.sampled_from(["", "x", "y", "z"])
range_ends = st.one_of(
    st.none(), st.just("\0"), st.sampled_from(KEYS), keys.map(prefix_range_end)
)
compares = st.one_of(
    st.tuples(keys, st.just("VALUE"), st.sampled_from(["=", "!=", "<", ">"]), values),
    st.tuples(
        keys,
        st.sampled_from(["VERSION", "CREATE", "MOD", "LEASE"]),
        st.sampled_from(["=", "!=", "<", ">"]),
        st.integers(0, 8),
    ),
)
txn_ops = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("delete"), keys),
    st.tuples(st.just("get"), keys),
)
operations = st.one_of(
    st.tuples(st.just("put"), keys, values),
    st.tuples(st.just("delete"), keys, range_ends),
    st.tuples(
        st.just("txn"), compares, st.lists(txn_ops, max_size=3), st.lists(txn_ops, max_size=3)
    ),
    st.tuples(st.just("range"), keys, range_ends, st.integers(-1, 10), st.integers(0, 3)),
    st.tuples(st.just("compact"), st.integers(-1, 8)),
)


def _txn_request(compare, success, failure):
    def op(item):
        if item[0] == "put":
            return PutRequest(item[1], item[2])
        if item[0] == "delete":
            return DeleteRangeRequest(item[1])
        return RangeRequest(item[1])

    return TxnRequest(
        (Compare(*compare),),
        tuple(op(item) for item in success),
        tuple(op(item) for item in failure),
    )


def _step(store: Store, oracle: Oracle, operation) -> None:
    """Apply one drawn operation to both and check the answers agree."""
    kind = operation[0]
    if kind == "put":
        response = store.put(operation[1], operation[2])
        oracle.put(operation[1], operation[2])
        assert response.header_revision == oracle.revision
    elif kind == "delete":
        response = store.delete_range(operation[1], operation[2])
        assert response.deleted == oracle.delete(operation[1], operation[2])
        assert response.header_revision == oracle.revision
    elif kind == "txn":
        expected = oracle.txn(*operation[1:])
        request = _txn_request(*operation[1:])
        if expected is DuplicateKeyError:
            with pytest.raises(DuplicateKeyError):
                store.apply(request)
        else:
            response = store.apply(request)
            succeeded, reads = expected
            assert response.succeeded is succeeded
            got = [
                read.kvs[0] if read.kvs else None
                for read in response.responses
                if isinstance(read, RangeResponse)
            ]
            assert got == reads
            assert response.header_revision == oracle.revision
    elif kind == "range":
        _, key, range_end, back, limit = operation
        revision = 0 if back < 0 else oracle.revision + 1 - back
        expected = oracle.range(key, range_end, revision, limit)
        if isinstance(expected, type):
            with pytest.raises(expected):
                store.range(key, range_end, revision=revision, limit=limit)
        else:
            response = store.range(key, range_end, revision=revision, limit=limit)
            got = (response.header_revision, response.kvs, response.count, response.more)
            assert got == expected
    else:
        revision = oracle.revision - operation[1]
        expected = oracle.compact(revision)
        if expected is None:
            store.compact(revision)
        else:
            with pytest.raises(expected):
                store.compact(revision)
    assert store.revision == oracle.revision
    assert store.compact_revision == oracle.compact_revision


@settings(max_examples=150, deadline=None)
@given(st.lists(operations, min_size=8, max_size=40))
def test_store_matches_the_oracle(ops):
    store, oracle = Store(), Oracle()
    for operation in ops:
        _step(store, oracle, operation)
    # Every readable revision reads as the oracle's, and history from every start matches.
    for revision in range(1, oracle.compact_revision):
        with pytest.raises(CompactedError):
            store.range("\0", "\0", revision=revision)
    for revision in range(max(oracle.compact_revision, 1), oracle.revision + 1):
        state = oracle.state_at(revision)
        expected = tuple(state[key] for key in sorted(state))
        assert store.range("\0", "\0", revision=revision).kvs == expected
    events = oracle.events()
    for start in range(1, oracle.revision + 2):
        if start <= oracle.compact_revision:
            with pytest.raises(CompactedError):
                store.events_since("\0", "\0", start)
        else:
            expected = tuple(event for event in events if event.revision >= start)
            assert store.events_since("\0", "\0", start) == expected
    assert Store.restore(store.snapshot()).snapshot() == store.snapshot()


watch_actions = st.one_of(
    operations.filter(lambda operation: operation[0] != "range"),
    st.tuples(st.just("watch"), keys, range_ends, st.integers(-1, 6)),
    st.tuples(st.just("resume"), st.integers(0, 5)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(watch_actions, min_size=8, max_size=40))
def test_watchers_receive_exactly_the_oracle_events(actions):
    """A watcher from revision r gets exactly the oracle's events with revision >= r on its
    range, in order, across cancel-and-resume; a start at or below the compact revision is
    refused. Events are fanned out late (just before the next write), so watches are also
    created and resumed between an apply and its notify."""
    store, oracle = Store(), Oracle()
    hub = WatchHub(store)
    watchers: list[dict] = []  # key, range_end, start, received, alive, watch_id
    pending: tuple[Event, ...] = ()

    def flush() -> None:
        nonlocal pending
        for watch_id, events in hub.notify(pending).items():
            watchers[watch_id]["received"] += events
        pending = ()

    for action in actions:
        kind = action[0]
        if kind == "watch":
            _, key, range_end, back = action
            start = 0 if back < 0 else max(oracle.revision + 1 - back, 1)
            watch_id = len(watchers)
            entry = {"key": key, "range_end": range_end, "received": [], "id": watch_id}
            if 0 < start <= oracle.compact_revision:
                with pytest.raises(CompactedError):
                    hub.watch(watch_id, key, range_end, start)
                continue
            entry["start"] = start if start else oracle.revision + 1
            entry["received"] += hub.watch(watch_id, key, range_end, start)
            entry["alive"] = True
            watchers.append(entry)
        elif kind == "resume":
            alive = [entry for entry in watchers if entry["alive"]]
            if not alive:
                continue
            entry = alive[action[1] % len(alive)]
            hub.cancel(entry["id"])
            resume = entry["received"][-1].revision + 1 if entry["received"] else entry["start"]
            if resume <= oracle.compact_revision:
                with pytest.raises(CompactedError):
                    hub.watch(entry["id"], entry["key"], entry["range_end"], resume)
                entry["alive"] = False
                continue
            entry["received"] += hub.watch(entry["id"], entry["key"], entry["range_end"], resume)
        else:
            flush()
            _step(store, oracle, action)
            pending = store.take_events()
    flush()
    events = oracle.events()
    for entry in watchers:
        expected = [
            replace_prev(e)
            for e in events
            if e.revision >= entry["start"] and in_range(e.kv.key, entry["key"], entry["range_end"])
        ]
        if entry["alive"]:
            assert entry["received"] == expected
        else:
            assert entry["received"] == expected[: len(entry["received"])]


def replace_prev(event: Event) -> Event:
    return Event(event.type, event.kv, None)

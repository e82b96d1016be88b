"""etcd's MVCC key-value store and its watches, as a pure state machine.

No I/O, no clocks, no randomness: every member that applies the same requests in the same
order reaches the same state and returns the same responses. The semantics follow etcd v3
(``server/storage/mvcc/kvstore.go``, ``kvstore_txn.go``, ``index.go``/``key_index.go``,
``watchable_store.go``, and the apply path in ``server/etcdserver/txn/txn.go``):

- The store has one global ``revision``, 1 when empty; the first write makes it 2. Every
  request that changes something bumps it by exactly one: a transaction's writes share one
  revision and are ordered by sub-revision. A request that changes nothing (a range, a
  read-only or write-less txn, a delete of nothing, a lease grant, a compaction) does not.
- Each live key has ``create_revision`` (revision of the put that created it),
  ``mod_revision`` (of its last put) and ``version`` (puts since creation, from 1). A delete
  removes the key; a later put creates it again with version 1 and a new create_revision.
- History is kept until compaction: a range at an old revision sees that revision's state.
  ``compact(r)`` keeps, for each key, the newest record at or before ``r`` unless it is a
  deletion, and every record after ``r``; so every revision ``>= r`` still reads exactly as
  before. Ranges below the compact revision raise CompactedError, above the current one
  FutureRevisionError.
- Transactions evaluate every compare (nested ones too) against the state before the
  transaction, check their requests, then run the chosen branch; reads inside a write
  transaction see its earlier writes (``storeTxnWrite.Range``).
- Checks etcd's gRPC layer does before proposing (``api/v3rpc/key.go``: empty keys,
  ``ignore_value`` with a value, too many txn operations, a key written twice in a txn) are
  done here too, before anything changes, so a request either applies whole or raises.

Errors are the typed exceptions of :mod:`chaoskube.etcd.requests`; a request that raises
changes nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass, replace
from typing import Any

from chaoskube.etcd.lease import MIN_LEASE_TTL_S, Lessor
from chaoskube.etcd.requests import (
    ALL_KEYS_FROM,
    MAX_TXN_OPS,
    NO_LEASE,
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
    LeaseGrantResponse,
    LeaseNotFoundError,
    LeaseProvidedError,
    LeaseRevokeRequest,
    LeaseRevokeResponse,
    PutRequest,
    PutResponse,
    RangeRequest,
    RangeResponse,
    Request,
    Response,
    TooManyOpsError,
    TxnOp,
    TxnRequest,
    TxnResponse,
    ValueProvidedError,
    in_range,
)

__all__ = ["Store", "StoreSnapshot", "WatchHub"]

# One entry of a key's history: (main revision, sub revision, kv). A deletion is recorded as
# a KeyValue with version 0 (only key and mod_revision set), as etcd's delete events carry.
_Record = tuple[int, int, KeyValue]

# A transaction's decided path: whether its compares held, and the paths of the nested
# transactions in the chosen branch, in order (etcd's ``compareToPath`` flattens this).
_Path = tuple[bool, tuple[Any, ...]]


def _main(record: _Record) -> int:
    return record[0]


def _is_tombstone(kv: KeyValue) -> bool:
    return kv.version == 0


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """Everything a :class:`Store` replicates, as an immutable value.

    ``history``: for each key (sorted) its records ``(main, sub, kv)`` in revision order.
    ``leases``: ``(id, ttl)`` by id; the keys attached to each are found again from the
    newest kvs on restore, as etcd does. Lease expiries are not part of it: they are the
    primary lessor's local state (etcd persists only ID and TTL)."""

    revision: int
    compact_revision: int
    history: tuple[tuple[str, tuple[_Record, ...]], ...]
    leases: tuple[tuple[int, int], ...]


class _Write:
    """One write transaction: every change it makes gets main revision ``begin + 1``."""

    __slots__ = ("begin", "changes")

    def __init__(self, begin: int) -> None:
        self.begin = begin
        self.changes = 0

    @property
    def read_revision(self) -> int:
        # storeTxnWrite.Range: reads see this transaction's own earlier writes.
        return self.begin + 1 if self.changes else self.begin

    @property
    def write_revision(self) -> int:
        return self.begin + 1


class Store:
    """etcd's MVCC store plus the replicated part of its lessor (``self.lessor``).

    Apply every committed request with :meth:`apply`, in log order, on every member; then
    hand :meth:`take_events` to the member's :class:`WatchHub`. The convenience methods
    (:meth:`put`, :meth:`range`, ...) build the request and call :meth:`apply`.

    ``self.lessor`` also tracks expiries when its member leads (see :mod:`.lease`); that
    part is local, and no response or key-value state depends on it.
    """

    def __init__(
        self, *, min_lease_ttl_s: int = MIN_LEASE_TTL_S, max_txn_ops: int = MAX_TXN_OPS
    ) -> None:
        assert max_txn_ops >= 1, max_txn_ops
        self.revision = 1
        # etcd starts compactMainRev at -1; 0 is equivalent since revisions start at 1.
        self.compact_revision = 0
        self.lessor = Lessor(min_lease_ttl_s)
        self.max_txn_ops = max_txn_ops
        self._keys: list[str] = []  # sorted: every key with at least one history record
        self._history: dict[str, list[_Record]] = {}
        self._events: list[Event] = []  # produced by the last apply, until taken

    # ------------------------------------------------------------------ dispatch

    def apply(self, request: Request, *, now: float | None = None) -> Response:
        """Apply one request and return its response, or raise and change nothing.

        ``now`` matters only for a LeaseGrantRequest on the leader (whose lessor starts the
        new lease's expiry clock); everything else ignores it."""
        self._events = []
        if isinstance(request, PutRequest):
            return self._apply_put(request)
        if isinstance(request, RangeRequest):
            _check_request_op(request, self.max_txn_ops)
            return self._execute_range(request, self.revision)
        if isinstance(request, DeleteRangeRequest):
            _check_request_op(request, self.max_txn_ops)
            write = _Write(self.revision)
            response = self._execute_delete_range(write, request)
            self._commit(write)
            return response
        if isinstance(request, TxnRequest):
            return self._apply_txn(request)
        if isinstance(request, CompactionRequest):
            return self._apply_compaction(request)
        if isinstance(request, LeaseGrantRequest):
            ttl = self.lessor.grant(request.id, request.ttl, now)
            return LeaseGrantResponse(self.revision, request.id, ttl)
        if isinstance(request, LeaseRevokeRequest):
            return self._apply_lease_revoke(request)
        raise TypeError(f"not a request the store applies: {request!r}")

    def take_events(self) -> tuple[Event, ...]:
        """The events the last :meth:`apply` produced, in revision then sub-revision order;
        a second call returns ``()``. Each event carries ``prev_kv``."""
        events = tuple(self._events)
        self._events = []
        return events

    # ------------------------------------------------------------------ convenience

    def put(
        self,
        key: str,
        value: str = "",
        *,
        lease: int = NO_LEASE,
        prev_kv: bool = False,
        ignore_value: bool = False,
        ignore_lease: bool = False,
    ) -> PutResponse:
        response = self.apply(PutRequest(key, value, lease, prev_kv, ignore_value, ignore_lease))
        assert isinstance(response, PutResponse)
        return response

    def range(
        self,
        key: str,
        range_end: str | None = None,
        *,
        revision: int = 0,
        limit: int = 0,
        count_only: bool = False,
        keys_only: bool = False,
    ) -> RangeResponse:
        response = self.apply(
            RangeRequest(key, range_end, revision, limit, count_only, keys_only)
        )
        assert isinstance(response, RangeResponse)
        return response

    def delete_range(
        self, key: str, range_end: str | None = None, *, prev_kv: bool = False
    ) -> DeleteRangeResponse:
        response = self.apply(DeleteRangeRequest(key, range_end, prev_kv))
        assert isinstance(response, DeleteRangeResponse)
        return response

    def txn(
        self,
        compare: tuple[Compare, ...] = (),
        success: tuple[TxnOp, ...] = (),
        failure: tuple[TxnOp, ...] = (),
    ) -> TxnResponse:
        response = self.apply(TxnRequest(compare, success, failure))
        assert isinstance(response, TxnResponse)
        return response

    def compact(self, revision: int) -> CompactionResponse:
        response = self.apply(CompactionRequest(revision))
        assert isinstance(response, CompactionResponse)
        return response

    def lease_grant(
        self, lease_id: int, ttl: int, *, now: float | None = None
    ) -> LeaseGrantResponse:
        response = self.apply(LeaseGrantRequest(lease_id, ttl), now=now)
        assert isinstance(response, LeaseGrantResponse)
        return response

    def lease_revoke(self, lease_id: int) -> LeaseRevokeResponse:
        response = self.apply(LeaseRevokeRequest(lease_id))
        assert isinstance(response, LeaseRevokeResponse)
        return response

    # ------------------------------------------------------------------ reads

    def events_since(
        self, key: str, range_end: str | None, start_revision: int
    ) -> tuple[Event, ...]:
        """Every event on the range with revision >= ``start_revision``, in revision then
        sub-revision order, each with its ``prev_kv``.

        ``start_revision`` 0 means "from now": no events. Raises CompactedError when
        ``start_revision <= compact_revision``. etcd refuses only ``start < compact``
        (``watcherGroup.chooseAll``), but compaction drops a deletion recorded at the compact
        revision itself, so a watch from exactly there could miss it; we refuse it too."""
        assert start_revision >= 0, start_revision
        if start_revision == 0:
            return ()
        if start_revision <= self.compact_revision:
            raise CompactedError()
        found: list[tuple[int, int, Event]] = []
        for candidate in self._keys_in(key, range_end):
            history = self._history[candidate]
            index = bisect.bisect_left(history, start_revision, key=_main)
            previous: KeyValue | None = None
            if index > 0 and not _is_tombstone(history[index - 1][2]):
                previous = history[index - 1][2]
            for main, sub, kv in history[index:]:
                if _is_tombstone(kv):
                    found.append((main, sub, Event("DELETE", kv, previous)))
                    previous = None
                else:
                    found.append((main, sub, Event("PUT", kv, previous)))
                    previous = kv
        found.sort(key=lambda item: (item[0], item[1]))
        return tuple(event for _, _, event in found)

    def statistics(self) -> dict[str, int]:
        """Counters: revisions, live keys, history records kept, leases."""
        live = sum(1 for key in self._keys if not _is_tombstone(self._history[key][-1][2]))
        return {
            "revision": self.revision,
            "compact_revision": self.compact_revision,
            "keys": live,
            "history_records": sum(len(history) for history in self._history.values()),
            "leases": len(self.lessor.leases()),
        }

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> StoreSnapshot:
        return StoreSnapshot(
            revision=self.revision,
            compact_revision=self.compact_revision,
            history=tuple((key, tuple(self._history[key])) for key in self._keys),
            leases=tuple((lease.id, lease.ttl) for lease in self.lessor.leases()),
        )

    @classmethod
    def restore(
        cls,
        snapshot: StoreSnapshot,
        *,
        min_lease_ttl_s: int = MIN_LEASE_TTL_S,
        max_txn_ops: int = MAX_TXN_OPS,
    ) -> Store:
        """A store equal to the one the snapshot was taken of; its lessor is a follower's
        (call ``promote`` on the leader). ``restore(s).snapshot() == s``."""
        store = cls(min_lease_ttl_s=min_lease_ttl_s, max_txn_ops=max_txn_ops)
        assert snapshot.revision >= 1, snapshot.revision
        assert 0 <= snapshot.compact_revision <= snapshot.revision, snapshot
        store.revision = snapshot.revision
        store.compact_revision = snapshot.compact_revision
        for lease_id, ttl in snapshot.leases:
            store.lessor.restore_lease(lease_id, ttl)
        previous_key: str | None = None
        for key, records in snapshot.history:
            assert previous_key is None or previous_key < key, "history keys must be sorted"
            assert records, f"key {key!r} has no history"
            assert all(a[:2] < b[:2] for a, b in zip(records, records[1:])), key
            assert records[-1][0] <= snapshot.revision, key
            previous_key = key
            store._keys.append(key)
            store._history[key] = list(records)
            newest = records[-1][2]
            if not _is_tombstone(newest) and newest.lease != NO_LEASE:
                store.lessor.attach(newest.lease, key)  # raises if the lease is missing
        return store

    # ------------------------------------------------------------------ internals: reads

    def _keys_in(self, key: str, range_end: str | None) -> list[str]:
        """Keys with history in the range, sorted."""
        if not range_end:
            return [key] if key in self._history else []
        start = bisect.bisect_left(self._keys, key)
        if range_end == ALL_KEYS_FROM:
            return self._keys[start:]
        if range_end <= key:
            return []
        return self._keys[start : bisect.bisect_left(self._keys, range_end)]

    def _kv_at(self, key: str, revision: int) -> KeyValue | None:
        history = self._history.get(key)
        if not history:
            return None
        index = bisect.bisect_right(history, revision, key=_main)
        if index == 0:
            return None
        kv = history[index - 1][2]
        return None if _is_tombstone(kv) else kv

    def _range_kvs(self, key: str, range_end: str | None, revision: int) -> list[KeyValue]:
        kvs = []
        for candidate in self._keys_in(key, range_end):
            kv = self._kv_at(candidate, revision)
            if kv is not None:
                kvs.append(kv)
        return kvs

    def _check_read_revision(self, revision: int, current: int) -> None:
        # kvstore_txn.go rangeKeys / txn.go checkRange.
        if revision > current:
            raise FutureRevisionError()
        if 0 < revision < self.compact_revision:
            raise CompactedError()

    def _execute_range(self, request: RangeRequest, current: int) -> RangeResponse:
        self._check_read_revision(request.revision, current)
        revision = request.revision if request.revision > 0 else current
        kvs = self._range_kvs(request.key, request.range_end, revision)
        count = len(kvs)
        if request.count_only:
            return RangeResponse(current, (), count, False)
        more = False
        if request.limit > 0 and count > request.limit:
            kvs = kvs[: request.limit]
            more = True
        if request.keys_only:
            kvs = [replace(kv, value="") for kv in kvs]
        return RangeResponse(current, tuple(kvs), count, more)

    # ------------------------------------------------------------------ internals: writes

    def _record(self, key: str, write: _Write, kv: KeyValue) -> None:
        history = self._history.get(key)
        if history is None:
            history = self._history[key] = []
            bisect.insort(self._keys, key)
        record = (write.write_revision, write.changes, kv)
        assert not history or history[-1][:2] < record[:2], (key, history[-1], record)
        history.append(record)
        write.changes += 1

    def _commit(self, write: _Write) -> None:
        assert self.revision == write.begin, (self.revision, write.begin)
        if write.changes:
            self.revision += 1

    def _apply_put(self, request: PutRequest) -> PutResponse:
        _check_request_op(request, self.max_txn_ops)
        # txn.Put: the lease must exist; put: ignore_* needs the key.
        if request.lease != NO_LEASE and not self.lessor.exists(request.lease):
            raise LeaseNotFoundError()
        if (request.ignore_value or request.ignore_lease) and (
            self._kv_at(request.key, self.revision) is None
        ):
            raise KeyNotFoundError()
        write = _Write(self.revision)
        response = self._execute_put(write, request)
        self._commit(write)
        return response

    def _execute_put(self, write: _Write, request: PutRequest) -> PutResponse:
        """kvstore_txn.go ``put``; every check has been done already."""
        previous = self._kv_at(request.key, write.read_revision)
        assert previous is not None or not (request.ignore_value or request.ignore_lease)
        value = previous.value if request.ignore_value and previous else request.value
        lease = previous.lease if request.ignore_lease and previous else request.lease
        revision = write.write_revision
        kv = KeyValue(
            key=request.key,
            create_revision=previous.create_revision if previous else revision,
            mod_revision=revision,
            version=previous.version + 1 if previous else 1,
            value=value,
            lease=lease,
        )
        self._record(request.key, write, kv)
        self._events.append(Event("PUT", kv, previous))
        old_lease = self.lessor.lease_of(request.key)
        if old_lease != lease:
            if old_lease != NO_LEASE:
                self.lessor.detach(old_lease, request.key)
            if lease != NO_LEASE:
                self.lessor.attach(lease, request.key)
        return PutResponse(revision, previous if request.prev_kv else None)

    def _execute_delete_range(
        self, write: _Write, request: DeleteRangeRequest
    ) -> DeleteRangeResponse:
        kvs = self._range_kvs(request.key, request.range_end, write.read_revision)
        for kv in kvs:
            self._delete(write, kv)
        # storeTxnWrite.DeleteRange: the next revision once this txn changed anything.
        header = write.write_revision if write.changes else write.begin
        return DeleteRangeResponse(header, len(kvs), tuple(kvs) if request.prev_kv else ())

    def _delete(self, write: _Write, kv: KeyValue) -> None:
        tombstone = KeyValue(kv.key, 0, write.write_revision, 0, "", NO_LEASE)
        self._record(kv.key, write, tombstone)
        self._events.append(Event("DELETE", tombstone, kv))
        lease = self.lessor.lease_of(kv.key)
        if lease != NO_LEASE:
            self.lessor.detach(lease, kv.key)

    def _apply_txn(self, request: TxnRequest) -> TxnResponse:
        _check_request_op(request, self.max_txn_ops)
        _check_intervals(request.success)
        _check_intervals(request.failure)
        path = self._compare_path(request)
        self._check_txn(request, path)
        write = _Write(self.revision)
        response = self._execute_txn(write, request, path, nested=False)
        self._commit(write)
        return response

    def _compare_path(self, request: TxnRequest) -> _Path:
        """txn.go ``compareToPath``: all compares, nested ones too, on the pre-txn state."""
        succeeded = all(self._compare(compare) for compare in request.compare)
        ops = request.success if succeeded else request.failure
        children = tuple(self._compare_path(op) for op in ops if isinstance(op, TxnRequest))
        return (succeeded, children)

    def _compare(self, compare: Compare) -> bool:
        """txn.go ``applyCompare``: every key in the range must satisfy the compare; an
        empty range compares a zero KeyValue, except that VALUE then always fails."""
        kvs = self._range_kvs(compare.key, compare.range_end, self.revision)
        if not kvs:
            if compare.target == "VALUE":
                return False
            return _compare_kv(compare, KeyValue(compare.key, 0, 0, 0, "", NO_LEASE))
        return all(_compare_kv(compare, kv) for kv in kvs)

    def _check_txn(self, request: TxnRequest, path: _Path) -> None:
        """txn.go ``checkTxn``, against the pre-txn state."""
        succeeded, children = path
        child_paths = iter(children)
        for op in request.success if succeeded else request.failure:
            if isinstance(op, RangeRequest):
                self._check_read_revision(op.revision, self.revision)
            elif isinstance(op, PutRequest):
                if (op.ignore_value or op.ignore_lease) and (
                    self._kv_at(op.key, self.revision) is None
                ):
                    raise KeyNotFoundError()
                if op.lease != NO_LEASE and not self.lessor.exists(op.lease):
                    raise LeaseNotFoundError()
            elif isinstance(op, TxnRequest):
                self._check_txn(op, next(child_paths))

    def _execute_txn(
        self, write: _Write, request: TxnRequest, path: _Path, *, nested: bool
    ) -> TxnResponse:
        succeeded, children = path
        child_paths = iter(children)
        responses: list[RangeResponse | PutResponse | DeleteRangeResponse | TxnResponse] = []
        for op in request.success if succeeded else request.failure:
            if isinstance(op, RangeRequest):
                responses.append(self._execute_range(op, write.read_revision))
            elif isinstance(op, PutRequest):
                responses.append(self._execute_put(write, op))
            elif isinstance(op, DeleteRangeRequest):
                responses.append(self._execute_delete_range(write, op))
            else:
                assert isinstance(op, TxnRequest), op
                responses.append(self._execute_txn(write, op, next(child_paths), nested=True))
        assert next(child_paths, None) is None
        header = 0 if nested else write.read_revision
        return TxnResponse(header, succeeded, tuple(responses))

    def _apply_compaction(self, request: CompactionRequest) -> CompactionResponse:
        """kvstore.go ``updateCompactRev`` and key_index.go ``compact``."""
        revision = request.revision
        if revision <= self.compact_revision:
            raise CompactedError()
        if revision > self.revision:
            raise FutureRevisionError()
        kept: list[str] = []
        for key in self._keys:
            history = self._history[key]
            index = bisect.bisect_right(history, revision, key=_main)
            if index > 0:
                newest = history[index - 1]
                history = history[index:] if _is_tombstone(newest[2]) else history[index - 1 :]
            if history:
                self._history[key] = history
                kept.append(key)
            else:
                del self._history[key]
        self._keys = kept
        self.compact_revision = revision
        return CompactionResponse(self.revision)

    def _apply_lease_revoke(self, request: LeaseRevokeRequest) -> LeaseRevokeResponse:
        """lessor.go ``Revoke``: the lease's keys are deleted in one revision, sorted."""
        keys = self.lessor.revoke(request.id)
        write = _Write(self.revision)
        for key in keys:
            kv = self._kv_at(key, write.read_revision)
            assert kv is not None and kv.lease == request.id, (key, kv)
            self._delete(write, kv)
        self._commit(write)
        return LeaseRevokeResponse(self.revision)


# ---------------------------------------------------------------------- request checks


def _compare_kv(compare: Compare, kv: KeyValue) -> bool:
    """txn.go ``compareKV``."""
    actual: int | str
    if compare.target == "VERSION":
        actual = kv.version
    elif compare.target == "CREATE":
        actual = kv.create_revision
    elif compare.target == "MOD":
        actual = kv.mod_revision
    elif compare.target == "LEASE":
        actual = kv.lease
    else:
        actual = kv.value
    operand = compare.operand
    if compare.result == "=":
        return actual == operand
    if compare.result == "!=":
        return actual != operand
    if compare.result == "<":
        return actual < operand  # type: ignore[operator]
    return actual > operand  # type: ignore[operator]


def _check_request_op(op: Any, max_txn_ops: int) -> None:
    """key.go ``checkRequestOp``/``checkTxnRequest``/``checkPutRequest``: malformed
    requests, refused before proposing in etcd."""
    if isinstance(op, PutRequest):
        if not op.key:
            raise EmptyKeyError()
        if op.ignore_value and op.value:
            raise ValueProvidedError()
        if op.ignore_lease and op.lease != NO_LEASE:
            raise LeaseProvidedError()
    elif isinstance(op, (RangeRequest, DeleteRangeRequest)):
        if not op.key:
            raise EmptyKeyError()
    elif isinstance(op, TxnRequest):
        operations = max(len(op.compare), len(op.success), len(op.failure))
        if operations > max_txn_ops:
            raise TooManyOpsError()
        for compare in op.compare:
            if not compare.key:
                raise EmptyKeyError()
        for inner in op.success + op.failure:
            _check_request_op(inner, max_txn_ops - operations)
    else:
        raise TypeError(f"not a transaction operation: {op!r}")


def _check_intervals(ops: tuple[TxnOp, ...]) -> tuple[frozenset[str], tuple[Any, ...]]:
    """key.go ``checkIntervals``: in one branch path, no key may be put twice, nor put and
    deleted. The puts of a nested txn's success and failure branches may repeat each other
    (only one runs). A delete ``[key, "\\0")`` covers every key >= key here; etcd's interval
    tree reads that range as empty and would let such an overlap through."""
    deletes: list[tuple[str, str | None]] = [
        (op.key, op.range_end) for op in ops if isinstance(op, DeleteRangeRequest)
    ]

    def deleted(key: str) -> bool:
        return any(in_range(key, start, end) for start, end in deletes)

    puts: set[str] = set()
    for op in ops:
        if not isinstance(op, TxnRequest):
            continue
        puts_then, deletes_then = _check_intervals(op.success)
        puts_else, deletes_else = _check_intervals(op.failure)
        for key in sorted(puts_then):
            if key in puts or deleted(key):
                raise DuplicateKeyError()
            puts.add(key)
        for key in sorted(puts_else):
            if (key in puts and key not in puts_then) or deleted(key):
                raise DuplicateKeyError()
            puts.add(key)
        deletes.extend(deletes_then)
        deletes.extend(deletes_else)
    for op in ops:
        if isinstance(op, PutRequest):
            if op.key in puts or deleted(op.key):
                raise DuplicateKeyError()
            puts.add(op.key)
    return frozenset(puts), tuple(deletes)


# ---------------------------------------------------------------------- watches


@dataclass(slots=True)
class _Watcher:
    key: str
    range_end: str | None
    prev_kv: bool
    next_revision: int  # the smallest revision this watcher has not been sent yet


class WatchHub:
    """A member's watchers over one :class:`Store` (etcd's ``watchableStore``).

    Contract, for each watcher: events arrive in revision then sub-revision order, with no
    revision twice and none skipped (every event on its range with revision >= its start
    revision is sent exactly once: first the catch-up that :meth:`watch` returns, then what
    :meth:`notify` hands out). A watcher cut off can resume without loss or duplicates by
    watching again from its last seen revision + 1.

    The caller's obligations: after every ``store.apply``, pass ``store.take_events()`` to
    :meth:`notify` (an empty tuple may be skipped), in apply order; :meth:`notify` asserts
    the revisions continue without a gap. Watchers are iterated in creation order.

    Not modelled: etcd's unsynced/victim watchers (a slow receiver is the server's
    business: cancel and re-watch), progress notifications, watch filters, fragmenting.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._watchers: dict[Hashable, _Watcher] = {}
        self._notified_revision = store.revision

    def watch(
        self,
        watch_id: Hashable,
        key: str,
        range_end: str | None = None,
        start_revision: int = 0,
        prev_kv: bool = False,
    ) -> tuple[Event, ...]:
        """Register a watcher and return its catch-up events (revision >= start_revision,
        up to the store's current revision). ``start_revision`` 0 means "after the current
        revision". Raises CompactedError (and registers nothing) when the start revision
        has been compacted; a future start revision is allowed, as in etcd."""
        if watch_id in self._watchers:
            raise ValueError(f"watch id {watch_id!r} is already in use")
        if not key:
            raise EmptyKeyError()
        catch_up = self._store.events_since(key, range_end, start_revision)
        watcher = _Watcher(key, range_end, prev_kv, max(start_revision, self._store.revision + 1))
        self._watchers[watch_id] = watcher
        return tuple(_shape(watcher, event) for event in catch_up)

    def cancel(self, watch_id: Hashable) -> bool:
        """Remove a watcher; says whether it existed."""
        return self._watchers.pop(watch_id, None) is not None

    def watch_ids(self) -> tuple[Hashable, ...]:
        return tuple(self._watchers)

    def next_revision(self, watch_id: Hashable) -> int:
        """The smallest revision the watcher has not been sent (a resume point)."""
        return self._watchers[watch_id].next_revision

    def notify(self, events: tuple[Event, ...]) -> dict[Hashable, tuple[Event, ...]]:
        """Fan out new events: for each watcher that matches some, those events, in order.
        Watchers without events are left out of the answer."""
        if not events:
            return {}
        revisions = [event.revision for event in events]
        assert revisions[0] == self._notified_revision + 1, (
            f"events must continue from revision {self._notified_revision + 1}, "
            f"got {revisions[0]}: pass every store.take_events() to notify, in order"
        )
        for before, after in zip(revisions, revisions[1:]):
            assert after in (before, before + 1), ("revisions must be contiguous", revisions)
        assert revisions[-1] <= self._store.revision, (revisions[-1], self._store.revision)
        self._notified_revision = revisions[-1]
        deliveries: dict[Hashable, tuple[Event, ...]] = {}
        for watch_id, watcher in self._watchers.items():
            matched = tuple(
                _shape(watcher, event)
                for event in events
                if event.revision >= watcher.next_revision
                and in_range(event.kv.key, watcher.key, watcher.range_end)
            )
            watcher.next_revision = max(watcher.next_revision, revisions[-1] + 1)
            if matched:
                deliveries[watch_id] = matched
        return deliveries


def _shape(watcher: _Watcher, event: Event) -> Event:
    """etcd sends ``prev_kv`` only to watchers that asked for it."""
    if watcher.prev_kv or event.prev_kv is None:
        return event
    return replace(event, prev_kv=None)

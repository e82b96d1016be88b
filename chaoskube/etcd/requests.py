"""The commands that go through Raft to the MVCC store, their responses, and etcd's errors.

Every value here is a frozen dataclass with slots and immutable fields (tuples, never lists),
so a request can sit in a Raft log entry and be applied by every member with the same result.
The shapes follow etcd's ``api/etcdserverpb/rpc.proto`` and ``api/mvccpb/kv.proto``; only the
fields chaoskube uses are modelled (no sort options, no min/max revision filters, no
watch filters).

Keys and values are ``str``. Python orders ``str`` by code point, and UTF-8 is designed so
that byte order equals code point order; ranges over ``str`` therefore select exactly the
keys etcd's byte-wise ranges would select (etcd compares ``[]byte`` with ``bytes.Compare``).

``range_end`` follows etcd (``rpc.proto``, ``RangeRequest.range_end``):

- ``None`` (or ``""``, which gRPC cannot tell from an absent field): the single key ``key``;
- ``"\\0"``: every key greater than or equal to ``key`` (``mkGteRange`` in
  ``server/etcdserver/txn/txn.go``);
- anything else: the half-open interval ``[key, range_end)``; empty when ``range_end <= key``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "ALL_KEYS_FROM",
    "CompactedError",
    "CompactionRequest",
    "CompactionResponse",
    "Compare",
    "DeleteRangeRequest",
    "DeleteRangeResponse",
    "DuplicateKeyError",
    "ERROR_REQUEST_TOO_LARGE",
    "EmptyKeyError",
    "EtcdError",
    "Event",
    "FutureRevisionError",
    "KeyNotFoundError",
    "KeyValue",
    "LeaseExistsError",
    "LeaseGrantRequest",
    "LeaseGrantResponse",
    "LeaseNotFoundError",
    "LeaseProvidedError",
    "LeaseRevokeRequest",
    "LeaseRevokeResponse",
    "LeaseTTLTooLargeError",
    "MAX_REQUEST_BYTES",
    "MAX_TXN_OPS",
    "NO_LEASE",
    "NotPrimaryError",
    "PutRequest",
    "PutResponse",
    "RangeRequest",
    "RangeResponse",
    "Request",
    "Response",
    "TooManyOpsError",
    "TxnOp",
    "TxnRequest",
    "TxnResponse",
    "ValueProvidedError",
    "in_range",
    "prefix_range_end",
    "request_bytes",
]

#: The lease id that means "no lease" (etcd's ``lease.NoLease``).
NO_LEASE = 0

#: ``range_end`` meaning "every key >= key" (etcd encodes it as the single byte 0).
ALL_KEYS_FROM = "\0"

#: etcd's default ``--max-txn-ops`` (``server/embed/config.go``, ``DefaultMaxTxnOps = 128``).
MAX_TXN_OPS = 128


# --------------------------------------------------------------------------- errors


class EtcdError(Exception):
    """An operating error etcd reports to its client; ``str(error)`` is etcd's message."""

    message = "etcdserver: unknown error"

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)


class CompactedError(EtcdError):
    """``mvcc.ErrCompacted`` (``server/storage/mvcc/kvstore.go``).

    Over gRPC etcd prefixes ``etcdserver: ``; we keep the store's own message."""

    message = "mvcc: required revision has been compacted"


class FutureRevisionError(EtcdError):
    """``mvcc.ErrFutureRev`` (``server/storage/mvcc/kvstore.go``)."""

    message = "mvcc: required revision is a future revision"


class LeaseNotFoundError(EtcdError):
    """``rpctypes.ErrGRPCLeaseNotFound`` (``api/v3rpc/rpctypes/error.go``)."""

    message = "etcdserver: requested lease not found"


class LeaseExistsError(EtcdError):
    """``rpctypes.ErrGRPCLeaseExist``."""

    message = "etcdserver: lease already exists"


class LeaseTTLTooLargeError(EtcdError):
    """``rpctypes.ErrGRPCLeaseTTLTooLarge`` (TTL above ``lease.MaxLeaseTTL``)."""

    message = "etcdserver: too large lease TTL"


class NotPrimaryError(EtcdError):
    """``lease.ErrNotPrimary``: keep-alive reached a lessor that is not the leader's.

    etcd's server forwards the keep-alive to the leader on this error; it has no gRPC form."""

    message = "not a primary lessor"


class KeyNotFoundError(EtcdError):
    """``rpctypes.ErrGRPCKeyNotFound``: ``ignore_value``/``ignore_lease`` on a missing key."""

    message = "etcdserver: key not found"


class EmptyKeyError(EtcdError):
    """``rpctypes.ErrGRPCEmptyKey``."""

    message = "etcdserver: key is not provided"


class ValueProvidedError(EtcdError):
    """``rpctypes.ErrGRPCValueProvided``: ``ignore_value`` together with a value."""

    message = "etcdserver: value is provided"


class LeaseProvidedError(EtcdError):
    """``rpctypes.ErrGRPCLeaseProvided``: ``ignore_lease`` together with a lease."""

    message = "etcdserver: lease is provided"


class TooManyOpsError(EtcdError):
    """``rpctypes.ErrGRPCTooManyOps``: more than ``MAX_TXN_OPS`` operations in a txn."""

    message = "etcdserver: too many operations in txn request"


class DuplicateKeyError(EtcdError):
    """``rpctypes.ErrGRPCDuplicateKey``: a txn writes one key twice (``checkIntervals``)."""

    message = "etcdserver: duplicate key given in txn request"


# --------------------------------------------------------------------------- ranges


def prefix_range_end(prefix: str) -> str:
    """The ``range_end`` that selects every key starting with ``prefix``.

    etcd's ``clientv3.GetPrefixRangeEnd`` increments the last byte that is below 0xff and
    drops what follows; here the unit is the code point (whose order equals UTF-8 byte
    order). With no such code point (or an empty prefix) every key >= prefix matches, and
    the answer is ``"\\0"``, as etcd's.
    """
    for index in range(len(prefix) - 1, -1, -1):
        code_point = ord(prefix[index])
        if code_point < 0x10FFFF:
            return prefix[:index] + chr(code_point + 1)
    return ALL_KEYS_FROM


def in_range(candidate: str, key: str, range_end: str | None) -> bool:
    """Whether ``candidate`` lies in the range ``(key, range_end)`` (module docstring)."""
    if not range_end:
        return candidate == key
    if range_end == ALL_KEYS_FROM:
        return candidate >= key
    return key <= candidate < range_end


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class KeyValue:
    """``mvccpb.KeyValue``. A deletion's event carries a KeyValue with only ``key`` and
    ``mod_revision`` set (etcd: ``watchable_store_txn.go``); ``version == 0`` marks it."""

    key: str
    create_revision: int
    mod_revision: int
    version: int
    value: str
    lease: int = NO_LEASE


@dataclass(frozen=True, slots=True)
class Event:
    """``mvccpb.Event``: ``prev_kv`` is the key's value just before this change, or None."""

    type: Literal["PUT", "DELETE"]
    kv: KeyValue
    prev_kv: KeyValue | None = None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class PutRequest:
    """``value_size``: what the value weighs in bytes when that is more than its text
    (0: its text). A large value -- a ConfigMap or Secret near ``--max-request-bytes`` --
    travels as a short text that names it and its size, so a simulation holding hundreds
    of them neither stores nor journals their bytes; only what sizes requests and Raft
    messages (:func:`request_bytes`) reads it. The store keeps the text."""

    key: str
    value: str = ""
    lease: int = NO_LEASE
    prev_kv: bool = False
    ignore_value: bool = False
    ignore_lease: bool = False
    value_size: int = 0


@dataclass(frozen=True, slots=True)
class RangeRequest:
    """``revision`` 0 reads the newest state; ``serializable`` only matters to the server
    (it decides between a ReadIndex and a local read); the store ignores it."""

    key: str
    range_end: str | None = None
    revision: int = 0
    limit: int = 0
    count_only: bool = False
    keys_only: bool = False
    serializable: bool = False


@dataclass(frozen=True, slots=True)
class DeleteRangeRequest:
    key: str
    range_end: str | None = None
    prev_kv: bool = False


_COMPARE_TARGETS = ("VERSION", "CREATE", "MOD", "VALUE", "LEASE")
_COMPARE_RESULTS = ("=", "!=", "<", ">")


@dataclass(frozen=True, slots=True)
class Compare:
    """``etcdserverpb.Compare``. ``operand`` is a ``str`` for VALUE, an ``int`` otherwise."""

    key: str
    target: Literal["VERSION", "CREATE", "MOD", "VALUE", "LEASE"]
    result: Literal["=", "!=", "<", ">"]
    operand: int | str
    range_end: str | None = None

    def __post_init__(self) -> None:
        if self.target not in _COMPARE_TARGETS:
            raise ValueError(f"compare target {self.target!r} is not one of {_COMPARE_TARGETS}")
        if self.result not in _COMPARE_RESULTS:
            raise ValueError(f"compare result {self.result!r} is not one of {_COMPARE_RESULTS}")
        if self.target == "VALUE" and not isinstance(self.operand, str):
            raise TypeError(f"a VALUE compare needs a str operand, got {self.operand!r}")
        if self.target != "VALUE" and (
            not isinstance(self.operand, int) or isinstance(self.operand, bool)
        ):
            raise TypeError(f"a {self.target} compare needs an int operand, got {self.operand!r}")


@dataclass(frozen=True, slots=True)
class TxnRequest:
    """``etcdserverpb.TxnRequest``: if every compare holds, run ``success``, else ``failure``.

    Operations may be nested transactions, as etcd allows. Lists passed in are turned into
    tuples so the request stays immutable."""

    compare: tuple[Compare, ...] = ()
    success: tuple[TxnOp, ...] = ()
    failure: tuple[TxnOp, ...] = ()

    def __post_init__(self) -> None:
        for name in ("compare", "success", "failure"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    revision: int


@dataclass(frozen=True, slots=True)
class LeaseGrantRequest:
    """The lease ``id`` is chosen before proposing (etcd's server draws one when the client
    gives 0); the store requires a positive id."""

    id: int
    ttl: int


@dataclass(frozen=True, slots=True)
class LeaseRevokeRequest:
    id: int


TxnOp: TypeAlias = "RangeRequest | PutRequest | DeleteRangeRequest | TxnRequest"
Request: TypeAlias = (
    "PutRequest | RangeRequest | DeleteRangeRequest | TxnRequest | CompactionRequest"
    " | LeaseGrantRequest | LeaseRevokeRequest"
)


# --------------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class PutResponse:
    header_revision: int
    prev_kv: KeyValue | None = None


@dataclass(frozen=True, slots=True)
class RangeResponse:
    """``count`` is the number of keys in the range at that revision, regardless of
    ``limit``; ``more`` says whether ``limit`` cut the answer short."""

    header_revision: int
    kvs: tuple[KeyValue, ...] = ()
    count: int = 0
    more: bool = False


@dataclass(frozen=True, slots=True)
class DeleteRangeResponse:
    header_revision: int
    deleted: int = 0
    prev_kvs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True, slots=True)
class TxnResponse:
    """A nested transaction's response has ``header_revision`` 0: etcd fills in only the
    outermost header (``newTxnResp`` in ``server/etcdserver/txn/txn.go``)."""

    header_revision: int
    succeeded: bool
    responses: tuple[RangeResponse | PutResponse | DeleteRangeResponse | TxnResponse, ...] = (
        field(default=())
    )


@dataclass(frozen=True, slots=True)
class CompactionResponse:
    header_revision: int


@dataclass(frozen=True, slots=True)
class LeaseGrantResponse:
    header_revision: int
    id: int
    ttl: int


@dataclass(frozen=True, slots=True)
class LeaseRevokeResponse:
    header_revision: int


Response: TypeAlias = (
    "PutResponse | RangeResponse | DeleteRangeResponse | TxnResponse | CompactionResponse"
    " | LeaseGrantResponse | LeaseRevokeResponse"
)


#: etcd's ``--max-request-bytes`` default (``embed.DefaultMaxRequestBytes``, 1.5 MiB): a
#: larger proposal is refused with ``ErrGRPCRequestTooLarge`` before it reaches Raft.
MAX_REQUEST_BYTES = 1536 * 1024
ERROR_REQUEST_TOO_LARGE = "etcdserver: request is too large"


def request_bytes(request: object) -> int:
    """Roughly what ``request`` weighs on the wire: its keys and values in UTF-8 (the
    protobuf framing, a few bytes per field, is not counted)."""
    if isinstance(request, PutRequest):
        return len(request.key.encode()) + max(len(request.value.encode()), request.value_size)
    if isinstance(request, TxnRequest):
        total = sum(len(compare.key.encode()) + (len(compare.operand.encode()) if isinstance(compare.operand, str) else 8) for compare in request.compare)
        return total + sum(request_bytes(op) for op in (*request.success, *request.failure))
    if isinstance(request, (RangeRequest, DeleteRangeRequest)):
        return len(request.key.encode()) + len((request.range_end or "").encode())
    return 0


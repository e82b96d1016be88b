"""Objects in etcd, as kube-apiserver's etcd3 store keeps them
(``staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go``).

- Keys: ``/registry/<resource>/<namespace>/<name>``, or ``/registry/<resource>/<name>`` for
  cluster-scoped kinds (:func:`storage_key`).
- Values: the object's JSON without ``metadata.resourceVersion``: the version *is* the
  key's etcd ``mod_revision`` and is filled in on every read (``store.go`` ``decode`` ->
  ``versioner.UpdateObject``), so it can never disagree with etcd.
- Objects of a kind with a TTL (Events: ``--event-ttl``) are put with an etcd lease from
  :class:`LeaseManager` (``storage/etcd3/lease_manager.go``), so etcd deletes them when the
  lease expires, as upstream's ``TTLFunc`` does.
- Writes are transactions guarded by the key's revision: create compares
  ``CREATE == 0`` (else 409 AlreadyExists), update and delete compare ``MOD == <revision
  read>`` (else the caller re-reads: ``GuaranteedUpdate``'s loop, or 409 Conflict when the
  client itself gave the resourceVersion).

:class:`EtcdStore` turns etcd outcomes into API statuses: a request that definitely did not
happen is 500 InternalError with etcd's message (``etcdserver: no leader``), one whose
outcome is unknown is 504 Timeout — the caller cannot know whether it was applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from chaoskube.api.manifests import ManifestError, from_dict, from_json, to_dict
from chaoskube.api.objects import KINDS, CustomObject, Object, custom_type
from chaoskube.api.protocol import StatusError, gone, internal_error, timeout
from chaoskube.etcd.requests import (
    CompactedError,
    Compare,
    DeleteRangeRequest,
    NO_LEASE,
    KeyValue,
    LeaseGrantRequest,
    PutRequest,
    RangeRequest,
    TxnRequest,
    prefix_range_end,
)

if TYPE_CHECKING:
    from chaoskube.etcd.client import EtcdClient

__all__ = [
    "REGISTRY_PREFIX",
    "EtcdStore",
    "LeaseManager",
    "StorageError",
    "Stored",
    "decode",
    "encode",
    "resource_prefix",
    "storage_key",
]

REGISTRY_PREFIX = "/registry/"


def storage_key(resource: str, namespace: str, name: str) -> str:
    assert name, "an object is stored under its name"
    if namespace:
        return f"{REGISTRY_PREFIX}{resource}/{namespace}/{name}"
    return f"{REGISTRY_PREFIX}{resource}/{name}"


def resource_prefix(resource: str, namespace: str = "") -> str:
    """The key prefix of a list: one namespace, or every object of the resource."""
    return f"{REGISTRY_PREFIX}{resource}/{namespace}/" if namespace else f"{REGISTRY_PREFIX}{resource}/"


_DECODER = msgspec.json.Decoder()


def encode(obj: Object) -> str:
    """The stored form: JSON with ``apiVersion`` and ``kind`` first and without
    ``resourceVersion`` (``obj`` is not changed). msgspec encodes the struct directly (its
    fields in declaration order, defaults omitted): about 10x faster than building the
    manifest dict, and :func:`decode_value` reads it back to an equal object. A custom
    object is stored as its Kubernetes JSON (``content`` at the top level)."""
    if isinstance(obj, CustomObject):
        document = to_dict(obj)
        document["metadata"].pop("resourceVersion", None)
        return msgspec.json.encode(document).decode()
    version = obj.metadata.resource_version
    obj.metadata.resource_version = ""
    try:
        body = msgspec.json.encode(obj)
    finally:
        obj.metadata.resource_version = version
    assert body.startswith(b"{") and body != b"{}", body[:20]
    return f'{{"apiVersion":"{obj.API_VERSION}","kind":"{obj.KIND}",'.encode().__add__(body[1:]).decode()


def decode_value(value: str | bytes, key: str) -> Object:
    """The object stored under ``key`` (raises ManifestError if it is not one). The fast
    path converts straight to the kind's struct; anything unexpected goes through
    :func:`chaoskube.api.manifests.from_json`, which names what is wrong."""
    resource = key[len(REGISTRY_PREFIX):].partition("/")[0] if key.startswith(REGISTRY_PREFIX) else ""
    info = kind_info(resource)
    if info is None and "." in resource:
        return _decode_custom(value, key, resource)
    if info is not None:
        try:
            data = _DECODER.decode(value)
            if isinstance(data, dict) and data.pop("kind", None) == info.kind and data.pop("apiVersion", None) == info.api_version:
                return msgspec.convert(data, type=info.type)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, TypeError):
            pass
    return from_json(value, key)


def _decode_custom(value: str | bytes, key: str, resource: str) -> Object:
    """A custom object: its own apiVersion and kind say its type; the key says its scope
    (``/registry/<resource>/<namespace>/<name>`` is namespaced)."""
    try:
        data = _DECODER.decode(value)
    except msgspec.DecodeError as error:
        raise ManifestError(key, f"not valid JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("apiVersion"), str) or not isinstance(data.get("kind"), str):
        raise ManifestError(key, "a stored custom object without apiVersion and kind")
    namespaced = key[len(REGISTRY_PREFIX):].count("/") == 2
    cls = custom_type(data["apiVersion"], data["kind"], resource, namespaced)
    return from_dict(data, key, custom={(data["apiVersion"], data["kind"]): cls})


def decode(kv: KeyValue) -> Object:
    """The object stored in ``kv``, with its resourceVersion: a new object, owned by the caller."""
    try:
        obj = decode_value(kv.value, kv.key)
    except ManifestError as error:  # nothing but the API server writes /registry: a bug
        raise AssertionError(f"undecodable object under {kv.key}: {error}") from None
    obj.metadata.resource_version = str(kv.mod_revision)  # a new object: ours to change
    return obj


def copy_object(obj: Object) -> Object:
    """A copy that shares nothing with ``obj`` (objects cross process boundaries by value)."""
    return msgspec.json.decode(msgspec.json.encode(obj), type=type(obj))


_KINDS_BY_RESOURCE = {info.resource: info for info in KINDS.values()}


@dataclass(frozen=True, slots=True)
class Stored:
    """An object read from etcd, with the revision its write compares against."""

    object: Object
    mod_revision: int


#: A storage operation that ended with an API status (see the module docstring).
StorageError = StatusError


class EtcdStore:
    """The etcd3 store of one API server. Every method is one etcd request (the client
    retries only where it is safe: see :mod:`chaoskube.etcd.client`)."""

    def __init__(self, client: EtcdClient) -> None:
        self.client = client

    async def _request(self, request: object, *, idempotent: bool) -> object:
        result = await self.client.request(request, idempotent=idempotent)
        if result.ok:
            return result.reply.response
        if result.reply is not None and result.reply.error == CompactedError.message:
            raise StorageError(gone("The resourceVersion for the provided list is too old."))
        if result.status == "info":
            raise StorageError(timeout(f"etcd request timed out: {result.reason}", retry_after_seconds=1))
        raise StorageError(internal_error(result.reason))

    async def raw(self, request: object, *, idempotent: bool) -> object:
        """One etcd request that is not an object's (a lease grant, the service IP range,
        the master leases): its response, or StorageError as for the object requests."""
        return await self._request(request, idempotent=idempotent)

    async def get(self, key: str) -> Stored | None:
        """A linearizable read of one key."""
        response = await self._request(RangeRequest(key), idempotent=True)
        if not response.kvs:
            return None
        kv = response.kvs[0]
        return Stored(decode(kv), kv.mod_revision)

    async def list(self, prefix: str, *, revision: int = 0) -> tuple[list[Object], int]:
        """Every object under ``prefix`` (sorted by key) and the store revision of the read.
        ``revision`` > 0 reads at that revision: 410 if it was compacted."""
        response = await self._request(RangeRequest(prefix, prefix_range_end(prefix), revision=revision), idempotent=True)
        return [decode(kv) for kv in response.kvs], response.header_revision

    async def create(self, key: str, obj: Object, *, lease: int = NO_LEASE) -> int | None:
        """Put ``obj`` if ``key`` does not exist: its revision, or None if it exists.
        ``lease``: the etcd lease the key is attached to (deleted when it expires)."""
        txn = TxnRequest(compare=(Compare(key, "CREATE", "=", 0),), success=(PutRequest(key, encode(obj), lease=lease),))
        response = await self._request(txn, idempotent=False)
        return response.header_revision if response.succeeded else None

    async def update(self, key: str, obj: Object, mod_revision: int, *, lease: int = NO_LEASE) -> int | None:
        """Put ``obj`` if ``key`` is still at ``mod_revision``: the new revision, or None."""
        txn = TxnRequest(compare=(Compare(key, "MOD", "=", mod_revision),), success=(PutRequest(key, encode(obj), lease=lease),))
        response = await self._request(txn, idempotent=False)
        return response.header_revision if response.succeeded else None

    async def delete(self, key: str, mod_revision: int) -> int | None:
        """Delete ``key`` if it is still at ``mod_revision``: the revision, or None."""
        txn = TxnRequest(compare=(Compare(key, "MOD", "=", mod_revision),), success=(DeleteRangeRequest(key),))
        response = await self._request(txn, idempotent=False)
        return response.header_revision if response.succeeded else None


class LeaseManager:
    """``leaseManager`` (``staging/src/k8s.io/apiserver/pkg/storage/etcd3/lease_manager.go``):
    objects with a TTL share leases. A lease granted with ``ttl + reuse`` seconds (reuse =
    min(5 % of the TTL, 60 s)) serves every request of the same TTL while it still outlives
    ``now + ttl`` and was granted less than ``reuse`` ago, for at most 1,000 objects; so
    an object lives between ``ttl`` and ``ttl + reuse`` seconds after its last write."""

    REUSE_DURATION_S = 60  # defaultLeaseReuseDurationSeconds
    REUSE_DURATION_PERCENT = 0.05  # defaultLeaseReuseDurationPercent
    MAX_OBJECTS = 1000  # defaultLeaseMaxObjectCount

    def __init__(self, store: EtcdStore) -> None:
        self.store = store
        self._lease_id = NO_LEASE
        self._expires_at = 0.0
        self._attached = 0

    async def lease(self, now: float, ttl_s: int) -> int:
        """A lease id for an object written at ``now`` that must live ``ttl_s`` seconds."""
        reuse = min(int(self.REUSE_DURATION_PERCENT * ttl_s), self.REUSE_DURATION_S)
        valid = now + ttl_s < self._expires_at
        sufficient = now + ttl_s + reuse > self._expires_at
        self._attached += 1
        if self._lease_id != NO_LEASE and valid and sufficient and self._attached <= self.MAX_OBJECTS:
            return self._lease_id
        response = await self.store.raw(LeaseGrantRequest(id=0, ttl=ttl_s + reuse), idempotent=False)
        self._lease_id = response.id
        self._expires_at = now + ttl_s + reuse
        self._attached = 1
        return self._lease_id


def kind_info(resource: str):
    """The KindInfo of the built-in kind served at ``resource`` (plural), or None (custom
    resources are served by the API server from its CustomResourceDefinitions)."""
    return _KINDS_BY_RESOURCE.get(resource)


__all__ += ["copy_object", "decode_value", "kind_info"]

"""Service ClusterIP allocation, as kube-apiserver's bitmap allocator
(``pkg/registry/core/service/ipallocator``, ``allocator/bitmap.go``, the etcd-backed
``allocator/storage``) with its repair loop (``ipallocator/controller/repair.go``).

- The range is ``--service-cluster-ip-range`` (default ``10.96.0.0/12``, kubeadm's); its
  network and broadcast addresses are never handed out; the first usable address
  (``10.96.0.1``) is the ``kubernetes`` Service's (``controlplane.ServiceIPRange``).
- The bitmap is one etcd key, written by compare-and-swap on its revision, as upstream's
  RangeAllocation ``/registry/ranges/serviceips`` (here ``/ranges/serviceips``: outside
  ``/registry/``, which the watch caches and the store-history checkers read as objects).
  Two replicas that allocate at once conflict and one retries, so an address is never
  handed out twice.
- A random address is drawn first from the upper (dynamic) band; the lower (static) band,
  min(max(16, size/16), 256) addresses, is for addresses users ask for by hand
  (``ServiceIPStaticSubrange``, KEP-3070); a requested address is taken if free.
- Repair: every 3 minutes a replica rebuilds the bitmap from the Services in etcd; an
  address marked but used by no Service is released after it was seen leaked in 3 repairs
  in a row (``numRepairsBeforeLeakCleanup``), so an allocation whose Service write failed
  (a crash between the two writes) is not lost forever.

Pure parts (:func:`static_size`, :func:`pick`, :class:`Bitmap`) take their randomness and
state as arguments.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass
from typing import Any

import msgspec

from chaoskube.api.protocol import StatusError, invalid
from chaoskube.etcd.requests import Compare, PutRequest, RangeRequest, TxnRequest

__all__ = ["RANGE_KEY", "REPAIR_EVERY_S", "SERVICE_CIDR", "Bitmap", "ClusterIPAllocator", "pick", "static_size"]

SERVICE_CIDR = "10.96.0.0/12"
RANGE_KEY = "/ranges/serviceips"
REPAIR_EVERY_S = 180.0
REPAIRS_BEFORE_LEAK_CLEANUP = 3
MAX_ATTEMPTS = 16


def static_size(size: int) -> int:
    """``calculateRangeOffset``: the static band's size for a range of ``size`` addresses
    (none below 16 addresses)."""
    if size < 16:
        return 0
    return min(max(16, size // 16), 256)


@dataclass
class Bitmap:
    """The allocated offsets of a range (offset 0 is the first usable address)."""

    cidr: str
    bits: int = 0

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.cidr)

    @property
    def size(self) -> int:
        return self.network.num_addresses - 2  # no network, no broadcast address

    def offset(self, ip: str) -> int | None:
        try:
            address = ipaddress.IPv4Address(ip)
        except ValueError:
            return None
        offset = int(address) - int(self.network.network_address) - 1
        return offset if 0 <= offset < self.size else None

    def ip(self, offset: int) -> str:
        return str(self.network.network_address + offset + 1)

    def used(self, offset: int) -> bool:
        return bool(self.bits >> offset & 1)

    def set(self, offset: int, value: bool) -> None:
        self.bits = self.bits | (1 << offset) if value else self.bits & ~(1 << offset)

    def offsets(self) -> list[int]:
        found, bits = [], self.bits
        while bits:
            low = bits & -bits
            found.append(low.bit_length() - 1)
            bits ^= low
        return found

    def encode(self) -> str:
        """The set offsets, listed (upstream writes the whole bitmap, 128 KiB for a /12;
        the same set, smaller in the journal)."""
        return msgspec.json.encode({"range": self.cidr, "allocated": self.offsets()}).decode()

    @classmethod
    def decode(cls, text: str | bytes) -> Bitmap:
        document = msgspec.json.decode(text)
        bitmap = cls(document["range"])
        for offset in document["allocated"]:
            bitmap.set(int(offset), True)
        return bitmap


def pick(bitmap: Bitmap, rng: random.Random) -> int | None:
    """``AllocateNext``: a free offset, drawn at random in the dynamic band first, then in
    the static band; None when the range is full."""
    static = static_size(bitmap.size)
    for low, high in ((static, bitmap.size), (0, static)):
        if high <= low:
            continue
        free = high - low - bin(bitmap.bits >> low & ((1 << (high - low)) - 1)).count("1")
        if free <= 0:
            continue
        start = rng.randrange(low, high)
        for step in range(high - low):  # the first free one from a random start, wrapping
            offset = low + (start - low + step) % (high - low)
            if not bitmap.used(offset):
                return offset
    return None


class ClusterIPAllocator:
    """One API server's view of the range: every change is a CAS of the range key."""

    def __init__(self, store: Any, rng: random.Random, cidr: str = SERVICE_CIDR) -> None:
        self.store = store
        self.rng = rng
        self.cidr = cidr
        self._leaks: dict[int, int] = {}

    async def _read(self) -> tuple[Bitmap, int]:
        response = await self.store.raw(RangeRequest(RANGE_KEY), idempotent=True)
        if not response.kvs:
            return Bitmap(self.cidr), 0
        kv = response.kvs[0]
        return Bitmap.decode(kv.value), kv.mod_revision

    async def _write(self, bitmap: Bitmap, revision: int) -> bool:
        compare = Compare(RANGE_KEY, "MOD", "=", revision) if revision else Compare(RANGE_KEY, "CREATE", "=", 0)
        response = await self.store.raw(TxnRequest(compare=(compare,), success=(PutRequest(RANGE_KEY, bitmap.encode()),)), idempotent=False)
        return bool(response.succeeded)

    async def allocate(self, requested: str, service: str) -> str:
        """Allocate ``requested`` (or a free address when empty); StatusError 422 with
        upstream's messages when it is outside the range, taken, or the range is full."""
        field = "spec.clusterIPs"
        for _ in range(MAX_ATTEMPTS):
            bitmap, revision = await self._read()
            if requested:
                offset = bitmap.offset(requested)
                if offset is None:
                    raise StatusError(invalid("services", service, [f'{field}: Invalid value: []string{{"{requested}"}}: failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {self.cidr}']))
                if bitmap.used(offset):
                    raise StatusError(invalid("services", service, [f'{field}: Invalid value: []string{{"{requested}"}}: failed to allocate IP {requested}: provided IP is already allocated']))
            else:
                offset = pick(bitmap, self.rng)
                if offset is None:
                    raise StatusError(invalid("services", service, [f"{field}: Invalid value: []string(nil): failed to allocate a serviceIP: range is full"]))
            bitmap.set(offset, True)
            if await self._write(bitmap, revision):
                return bitmap.ip(offset)
        raise StatusError(invalid("services", service, [f"{field}: Internal error: the service IP range kept changing"]))

    async def release(self, ip: str) -> None:
        """Free ``ip`` (a deleted Service's, or an allocation whose Service was not written)."""
        for _ in range(MAX_ATTEMPTS):
            bitmap, revision = await self._read()
            offset = bitmap.offset(ip)
            if offset is None or not bitmap.used(offset) or not revision:
                return
            bitmap.set(offset, False)
            if await self._write(bitmap, revision):
                return

    async def repair(self, services: list[Any]) -> dict[str, list[str]]:
        """``Repair.runOnce``: mark every Service's address, release the ones leaked for
        :data:`REPAIRS_BEFORE_LEAK_CLEANUP` repairs in a row; (what it found)."""
        bitmap, revision = await self._read()
        wanted = Bitmap(self.cidr)
        found: dict[str, list[str]] = {"duplicate": [], "outside": [], "leaked": [], "released": []}
        for service in services:
            for ip in service.spec.cluster_ips or ([service.spec.cluster_ip] if service.spec.cluster_ip else []):
                if ip == "None":
                    continue
                offset = wanted.offset(ip)
                if offset is None:
                    found["outside"].append(ip)
                    continue
                if wanted.used(offset):
                    found["duplicate"].append(ip)
                wanted.set(offset, True)
        leaks = {}
        for offset in Bitmap(self.cidr, bitmap.bits & ~wanted.bits).offsets():
            if True:
                count = self._leaks.get(offset, 0) + 1
                if count < REPAIRS_BEFORE_LEAK_CLEANUP:
                    leaks[offset] = count
                    wanted.set(offset, True)  # kept for now: its Service may be on its way
                    found["leaked"].append(bitmap.ip(offset))
                else:
                    found["released"].append(bitmap.ip(offset))
        self._leaks = leaks
        if wanted.bits != bitmap.bits:
            await self._write(wanted, revision)
        return found

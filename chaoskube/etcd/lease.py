"""etcd's lessor, as a pure state machine: ``now`` (float seconds) is always passed in.

Follows ``server/lease/lessor.go`` (etcd v3.5/v3.6):

- Which leases exist, their TTLs and the keys attached to them are replicated state: every
  member changes them only by applying ``LeaseGrantRequest``/``LeaseRevokeRequest`` and puts
  through :class:`chaoskube.etcd.mvcc.Store`, which owns a ``Lessor``.
- Expiry is local to the *primary* lessor, the Raft leader's. Only the primary renews
  (keep-alive) and reports expired leases; a follower's leases never expire
  (``forever()``). When a member becomes leader, :meth:`Lessor.promote` pushes every expiry
  to ``now + ttl + extend`` so the leases do not all expire at failover; :meth:`Lessor.demote`
  makes them eternal again.
- The primary does not revoke by itself: the server proposes a ``LeaseRevokeRequest`` for
  each id :meth:`Lessor.expired` reports, and the revocation (and the deletion of the
  attached keys, in one revision) happens when that entry is applied.

Not modelled: lease checkpoints (``remainingTTL`` persisted through Raft, which
``promote`` would use instead of the full TTL), and the spreading of expiries ``promote``
does when more than ``leaseRevokeRate`` (1000) leases would expire in the same second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chaoskube.etcd.requests import (
    NO_LEASE,
    LeaseExistsError,
    LeaseNotFoundError,
    LeaseTTLTooLargeError,
    NotPrimaryError,
)

__all__ = [
    "EXPIRED_LEASE_RETRY_INTERVAL_S",
    "MAX_LEASE_TTL_S",
    "MIN_LEASE_TTL_S",
    "Lease",
    "Lessor",
    "min_lease_ttl_s",
]

#: ``lease.MaxLeaseTTL`` (``server/lease/lessor.go``).
MAX_LEASE_TTL_S = 9_000_000_000

#: etcd re-reports a lease that expired but is not revoked yet after this long
#: (``defaultExpiredleaseRetryInterval``); :meth:`Lessor.expired` leaves that to the caller.
EXPIRED_LEASE_RETRY_INTERVAL_S = 3.0


def min_lease_ttl_s(heartbeat_ms: int = 100, election_ms: int = 1000) -> int:
    """etcd's minimum lease TTL in whole seconds.

    ``server/etcdserver/server.go`` (``NewServer``)::

        minTTL := time.Duration((3*cfg.ElectionTicks)/2) * heartbeat
        ... MinLeaseTTL: int64(math.Ceil(minTTL.Seconds()))

    With the defaults (heartbeat 100 ms, election 1000 ms, so 10 election ticks) that is
    15 ticks = 1.5 s, rounded up to 2 s. Grants below it are raised to it.
    """
    assert heartbeat_ms > 0, heartbeat_ms
    assert election_ms >= heartbeat_ms, (election_ms, heartbeat_ms)
    election_ticks = election_ms // heartbeat_ms
    min_ttl_ms = ((3 * election_ticks) // 2) * heartbeat_ms  # integer division, as etcd's
    return -(-min_ttl_ms // 1000)


#: The minimum TTL with chaoskube's (and etcd's) default timing: 2 s.
MIN_LEASE_TTL_S = min_lease_ttl_s()


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease as seen from outside: ``expiry`` is None when it never expires here (on a
    follower, or on a leader before promote)."""

    id: int
    ttl: int
    keys: tuple[str, ...]
    expiry: float | None


class _LeaseState:
    __slots__ = ("ttl", "keys", "expiry")

    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.keys: set[str] = set()  # only ever read sorted
        self.expiry: float | None = None  # None: forever


class Lessor:
    """Leases, the keys attached to them, and (on the primary) their expiries.

    All methods are deterministic functions of the arguments and the prior calls. The
    lessor starts as a follower (not primary)."""

    def __init__(self, min_ttl_s: int = MIN_LEASE_TTL_S) -> None:
        assert min_ttl_s >= 1, min_ttl_s
        self.min_ttl_s = min_ttl_s
        self._leases: dict[int, _LeaseState] = {}
        self._lease_of_key: dict[str, int] = {}
        self._primary = False

    # ------------------------------------------------------------------ replicated state

    @property
    def is_primary(self) -> bool:
        return self._primary

    def grant(self, lease_id: int, ttl: int, now: float | None = None) -> int:
        """Create a lease and return its TTL (raised to the minimum, as ``lessor.Grant``).

        ``now`` is needed only on the primary, whose new lease expires at ``now + ttl``;
        on a follower the lease never expires. Raises LeaseNotFoundError for id 0 (etcd's
        ``Grant`` does), LeaseTTLTooLargeError above ``MAX_LEASE_TTL_S``, LeaseExistsError
        for a taken id."""
        if lease_id == NO_LEASE:
            raise LeaseNotFoundError()
        if ttl > MAX_LEASE_TTL_S:
            raise LeaseTTLTooLargeError()
        if lease_id in self._leases:
            raise LeaseExistsError()
        state = _LeaseState(max(ttl, self.min_ttl_s))
        if self._primary:
            assert now is not None, "the primary lessor needs now to grant a lease"
            state.expiry = now + state.ttl
        self._leases[lease_id] = state
        return state.ttl

    def restore_lease(self, lease_id: int, ttl: int) -> None:
        """Re-create a lease from a snapshot with its TTL exactly as granted (etcd's
        ``initAndRecover``); it never expires until :meth:`promote`."""
        assert lease_id != NO_LEASE and lease_id not in self._leases, lease_id
        assert 1 <= ttl <= MAX_LEASE_TTL_S, ttl
        self._leases[lease_id] = _LeaseState(ttl)

    def revoke(self, lease_id: int) -> tuple[str, ...]:
        """Remove the lease and return its keys, sorted (``lessor.Revoke`` sorts them "so
        deletes are in same order among all members"). The caller deletes them, in the same
        revision. Raises LeaseNotFoundError."""
        state = self._leases.pop(lease_id, None)
        if state is None:
            raise LeaseNotFoundError()
        keys = tuple(sorted(state.keys))
        for key in keys:
            del self._lease_of_key[key]
        return keys

    def attach(self, lease_id: int, key: str) -> None:
        """Attach ``key`` to the lease (a key has at most one lease). Raises
        LeaseNotFoundError."""
        state = self._leases.get(lease_id)
        if state is None:
            raise LeaseNotFoundError()
        previous = self._lease_of_key.get(key)
        if previous is not None and previous != lease_id:
            self._leases[previous].keys.discard(key)
        state.keys.add(key)
        self._lease_of_key[key] = lease_id

    def detach(self, lease_id: int, key: str) -> None:
        """Detach ``key`` from the lease. Raises LeaseNotFoundError for an unknown lease;
        detaching a key that is not attached does nothing (as etcd's ``Detach``)."""
        state = self._leases.get(lease_id)
        if state is None:
            raise LeaseNotFoundError()
        state.keys.discard(key)
        if self._lease_of_key.get(key) == lease_id:
            del self._lease_of_key[key]

    def lease_of(self, key: str) -> int:
        """The lease ``key`` is attached to, or ``NO_LEASE`` (etcd's ``GetLease``)."""
        return self._lease_of_key.get(key, NO_LEASE)

    def exists(self, lease_id: int) -> bool:
        """Whether lease ``lease_id`` is granted (``Lessor.Lookup(id) != nil``): what a put
        with a lease checks, without :meth:`lookup`'s sorted copy of the lease's keys (a
        lease holding every Event of an API server holds thousands)."""
        return lease_id in self._leases

    def lookup(self, lease_id: int) -> Lease | None:
        state = self._leases.get(lease_id)
        if state is None:
            return None
        return Lease(lease_id, state.ttl, tuple(sorted(state.keys)), state.expiry)

    def leases(self) -> tuple[Lease, ...]:
        """Every lease, by id."""
        leases = (self.lookup(lease_id) for lease_id in sorted(self._leases))
        return tuple(lease for lease in leases if lease is not None)

    # ------------------------------------------------------------------ primary only

    def promote(self, now: float, extend_s: float = 0.0) -> None:
        """Become the primary: every lease now expires at ``now + ttl + extend_s``.

        etcd's server calls ``s.lessor.Promote(s.Cfg.ElectionTimeout())`` when the leader
        applies the empty entry of its new term (``applyEntryNormal`` in
        ``server/etcdserver/server.go``), so clients have time to find the new leader and
        keep their leases alive: pass the election timeout as ``extend_s``."""
        assert extend_s >= 0, extend_s
        self._primary = True
        for state in self._leases.values():
            state.expiry = now + state.ttl + extend_s

    def demote(self) -> None:
        """Stop being the primary: no lease expires here any more (``forever()``)."""
        self._primary = False
        for state in self._leases.values():
            state.expiry = None

    def renew(self, lease_id: int, now: float) -> int:
        """Keep-alive: the lease now expires at ``now + ttl``; returns the TTL.

        Raises NotPrimaryError on a follower (etcd's server then forwards the keep-alive to
        the leader) and LeaseNotFoundError for an unknown lease. A lease whose expiry has
        passed cannot be renewed: etcd waits for its revocation and then answers
        LeaseNotFound (or NotPrimary if leadership is lost first); here the answer is
        LeaseNotFoundError at once."""
        if not self._primary:
            raise NotPrimaryError()
        state = self._leases.get(lease_id)
        if state is None:
            raise LeaseNotFoundError()
        assert state.expiry is not None
        if state.expiry <= now:
            raise LeaseNotFoundError()
        state.expiry = now + state.ttl
        return state.ttl

    def expired(self, now: float) -> tuple[int, ...]:
        """Ids of the leases whose expiry is at or before ``now``, sorted; always empty on
        a follower. A pure query: an id stays in the answer until its revocation is
        applied, so the caller proposes each revocation once (etcd re-proposes after
        ``EXPIRED_LEASE_RETRY_INTERVAL_S``)."""
        if not self._primary:
            return ()
        return tuple(
            sorted(
                lease_id
                for lease_id, state in self._leases.items()
                if state.expiry is not None and state.expiry <= now
            )
        )

    def remaining(self, lease_id: int, now: float) -> float:
        """Seconds until the lease expires (negative once expired); ``math.inf`` on a
        follower. Raises LeaseNotFoundError."""
        state = self._leases.get(lease_id)
        if state is None:
            raise LeaseNotFoundError()
        if state.expiry is None:
            return math.inf
        return state.expiry - now

"""The Raft log of one member: a snapshot, the entries after it, and the
commit / apply / stable cursors.

Follows etcd-io/raft ``log.go`` (``raftLog``), folded into one list: etcd keeps
``storage`` (stable) and ``unstable`` apart; here one list holds both and
``stabled`` says where the stable prefix ends.

Invariants (asserted by :meth:`RaftLog.check`):
  offset <= applied <= committed <= last_index, where offset is the snapshot's
  index (0 without a snapshot); entries are contiguous from offset + 1; terms
  never decrease along the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Entry:
    """One log entry. ``data is None`` marks the empty entry a new leader appends."""

    term: int
    index: int
    data: Any


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The applied state machine (``data``, opaque) as of ``index`` / ``term``."""

    index: int
    term: int
    data: Any


class RaftLog:
    """Entries after ``snapshot``; cursors ``committed``, ``applied``, ``stabled``."""

    def __init__(
        self,
        snapshot: Snapshot | None,
        entries: tuple[Entry, ...],
        committed: int,
    ) -> None:
        self.snapshot: Snapshot | None = snapshot
        # The snapshot's index (0 without one), kept as a plain attribute: read on every
        # index computation. Set wherever ``snapshot`` is.
        self.offset = snapshot.index if snapshot is not None else 0
        self.entries: list[Entry] = list(entries)
        offset = self.offset
        for position, entry in enumerate(self.entries):
            assert entry.index == offset + 1 + position, "stored entries are not contiguous"
        # Everything loaded from storage is stable by definition.
        self.stabled = self.last_index()
        # A snapshot received from the leader and not yet handed out in a Ready.
        self.pending_snapshot: Snapshot | None = None
        # etcd: applied starts at max(Config.Applied, firstIndex - 1); the caller
        # restores its state machine from the stored snapshot on restart.
        self.applied = offset
        assert committed <= self.last_index(), "stored commit index is beyond the stored log"
        self.committed = max(committed, offset)
        self.check()

    # -- indexes and terms ----------------------------------------------------

    def first_index(self) -> int:
        return self.offset + 1

    def last_index(self) -> int:
        return self.offset + len(self.entries)

    def term(self, index: int) -> int | None:
        """Term at ``index``; ``None`` if compacted away, 0 if beyond the log.

        etcd's ``raftLog.term`` returns ErrCompacted / 0 in the same cases.
        """
        offset = self.offset
        if index > offset:
            position = index - offset - 1
            entries = self.entries
            return entries[position].term if position < len(entries) else 0
        if index == offset:
            return self.snapshot.term if self.snapshot is not None else 0
        return None

    def last_term(self) -> int:
        term = self.term(self.last_index())
        assert term is not None
        return term

    def match_term(self, index: int, term: int) -> bool:
        our_term = self.term(index)
        return our_term is not None and our_term == term

    def is_up_to_date(self, last_term: int, last_index: int) -> bool:
        """Raft §5.4.1: the candidate's log is at least as up to date as ours."""
        our_term = self.last_term()
        return last_term > our_term or (last_term == our_term and last_index >= self.last_index())

    def slice(self, low: int, high: int) -> tuple[Entry, ...]:
        """Entries [low, high); ``low`` must not be compacted."""
        assert low > self.offset, f"slice from compacted index {low}"
        assert high <= self.last_index() + 1
        offset = self.offset
        return tuple(self.entries[low - offset - 1 : high - offset - 1])

    # -- appending ------------------------------------------------------------

    def find_conflict(self, entries: tuple[Entry, ...]) -> int:
        """Index of the first entry whose term differs from ours, or 0.

        etcd ``findConflict``: entries we already hold with the same term are
        skipped; the first new or conflicting index is returned.
        """
        for entry in entries:
            if not self.match_term(entry.index, entry.term):
                return entry.index
        return 0

    def find_conflict_by_term(self, index: int, term: int) -> tuple[int, int]:
        """Largest (index', term') with index' <= index and term' <= term.

        etcd ``findConflictByTerm``: used on both sides of a rejected MsgApp to
        skip a whole divergent term per round trip.
        """
        while index > 0:
            our_term = self.term(index)
            if our_term is None:
                return index, 0
            if our_term <= term:
                return index, our_term
            index -= 1
        return 0, 0

    def append(self, entries: tuple[Entry, ...]) -> None:
        """Append, truncating any suffix from ``entries[0].index`` (etcd ``truncateAndAppend``)."""
        if not entries:
            return
        first = entries[0].index
        assert first > self.committed, f"truncating committed entries at {first} (commit {self.committed})"
        assert first <= self.last_index() + 1, "gap in the log"
        del self.entries[first - self.offset - 1 :]
        self.entries.extend(entries)
        self.stabled = min(self.stabled, first - 1)

    def maybe_append(self, index: int, log_term: int, committed: int, entries: tuple[Entry, ...]) -> int | None:
        """Follower side of MsgApp (etcd ``maybeAppend``); last new index, or None on mismatch."""
        if not self.match_term(index, log_term):
            return None
        last_new = index + len(entries)
        conflict = self.find_conflict(entries)
        if conflict:
            assert conflict > self.committed, f"entry {conflict} conflicts with committed entry"
            self.append(entries[conflict - index - 1 :])
        self.commit_to(min(committed, last_new))
        return last_new

    # -- cursors --------------------------------------------------------------

    def commit_to(self, index: int) -> None:
        if index > self.committed:
            assert index <= self.last_index(), f"commit {index} is out of range [last {self.last_index()}]"
            self.committed = index

    def maybe_commit(self, index: int, term: int) -> bool:
        """Commit ``index`` only if it carries ``term`` (Raft §5.4.2)."""
        if index > self.committed and self.term(index) == term:
            self.commit_to(index)
            return True
        return False

    def applied_to(self, index: int) -> None:
        assert self.applied <= index <= self.committed, (self.applied, index, self.committed)
        self.applied = index

    def stable_to(self, index: int, term: int) -> None:
        # Only if the entry was not overwritten meanwhile (etcd ``stableTo``).
        if self.match_term(index, term) and index > self.stabled:
            self.stabled = index

    def unstable_entries(self) -> tuple[Entry, ...]:
        last = self.offset + len(self.entries)
        return self.slice(self.stabled + 1, last + 1) if self.stabled < last else ()

    def has_next_committed_entries(self) -> bool:
        """Whether :meth:`next_committed_entries` is not empty (without slicing)."""
        return self.committed > self.applied and self.committed > self.offset

    def next_committed_entries(self) -> tuple[Entry, ...]:
        low = max(self.applied + 1, self.offset + 1)
        if self.committed + 1 <= low:
            return ()
        return self.slice(low, self.committed + 1)

    # -- snapshots --------------------------------------------------------------

    def restore(self, snapshot: Snapshot) -> None:
        """Replace the whole log by a snapshot from the leader (etcd ``restore``)."""
        assert snapshot.index > self.committed
        self.snapshot = snapshot
        self.offset = snapshot.index
        self.pending_snapshot = snapshot
        self.entries = []
        self.committed = snapshot.index
        self.stabled = snapshot.index

    def snapshot_applied(self, snapshot: Snapshot) -> None:
        if self.pending_snapshot == snapshot:
            self.pending_snapshot = None
        if snapshot.index > self.applied:
            self.applied = snapshot.index

    def compact(self, index: int, data: Any) -> Snapshot:
        """Keep Snapshot(index, term(index), data) and drop the entries up to it."""
        assert index > self.offset, f"index {index} already compacted (snapshot at {self.offset})"
        assert index <= self.applied, f"compacting unapplied index {index} (applied {self.applied})"
        assert index <= self.stabled, "compacting entries that are not yet stable"
        term = self.term(index)
        assert term is not None
        snapshot = Snapshot(index=index, term=term, data=data)
        del self.entries[: index - self.offset]
        self.snapshot = snapshot
        self.offset = snapshot.index
        return snapshot

    def check(self, *, full: bool = False) -> None:
        """Assert the log's invariants. The index bounds are checked every time; the walk
        over every entry (terms never decrease) only with ``full=True`` — it is O(log
        length), and ``advance`` calls ``check`` after every Ready (tests call it full)."""
        # While a received snapshot waits to be applied, applied lags its index.
        applied = self.applied if self.pending_snapshot is None else self.offset
        assert self.offset <= applied <= self.committed <= self.last_index(), (
            self.offset,
            self.applied,
            self.committed,
            self.last_index(),
        )
        if len(self.entries) >= 2:
            assert self.entries[-2].term <= self.entries[-1].term, "terms decrease along the log"
        if not full:
            return
        previous = self.term(self.offset) or 0
        for entry in self.entries:
            assert entry.term >= previous, "terms decrease along the log"
            previous = entry.term

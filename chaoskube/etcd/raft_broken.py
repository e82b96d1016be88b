"""A gallery of deliberately broken Raft members, for testing the checkers.

Each variant changes one hook of :class:`chaoskube.etcd.raft.Raft` and breaks
one safety property of the Raft paper (Ongaro & Ousterhout, 2014, Figure 3).
``tests/etcd/test_raft.py`` holds, for each, a short script that shows the
violation and shows that the correct Raft survives the same script. Never run
these outside tests and experiments that expect a failure.
"""

from __future__ import annotations

from chaoskube.etcd.raft import HardState, Message, Raft

__all__ = ["BROKEN_VARIANTS", "CommitPreviousTermByCount", "ForgetsVote", "VoteWithoutLogCheck"]


class VoteWithoutLogCheck(Raft):
    """Grants votes and pre-votes without the up-to-date check of Raft §5.4.1.

    Breaks Leader Completeness: a candidate that lacks a committed entry can
    win, and then overwrites that entry on its followers, which breaks State
    Machine Safety too.
    """

    def _candidate_log_ok(self, message: Message) -> bool:
        return True


class CommitPreviousTermByCount(Raft):
    """The leader commits an entry of a previous term once a quorum holds it.

    Raft §5.4.2 and Figure 8: such an entry can still be overwritten by a
    leader of a later term whose last entry has a higher term. Breaks State
    Machine Safety (and Leader Completeness): a committed, applied entry is
    replaced at the same index.
    """

    def _maybe_commit(self) -> bool:
        matches = sorted((pr.match for pr in self._progress.values()), reverse=True)
        index = matches[self.quorum() - 1]
        if index > self._log.committed:
            self._log.commit_to(index)
            return True
        return False


class ForgetsVote(Raft):
    """Never puts its vote in the HardState it asks to persist (vote 0 on disk).

    After a restart it may vote again in a term it already voted in. Breaks
    Election Safety (§5.2): two leaders in one term.
    """

    def _hard_state(self) -> HardState:
        return HardState(term=self.term, vote=0, commit=self.commit)


BROKEN_VARIANTS: dict[str, type[Raft]] = {
    "vote-without-log-check": VoteWithoutLogCheck,
    "commit-previous-term-by-count": CommitPreviousTermByCount,
    "forgets-vote": ForgetsVote,
}

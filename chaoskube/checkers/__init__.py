"""Checkers: pure functions of a history or journal, each answering a Verdict (true /
false / unknown, a one-line reason, the shortest evidence)."""

from chaoskube.checkers.admission import check_admission
from chaoskube.checkers.availability import check_service_availability
from chaoskube.checkers.convergence import check_convergence
from chaoskube.checkers.eviction import check_pdb_eviction
from chaoskube.checkers.history import UNKNOWN, HistoryFormatError, Op, from_client_records, load_history
from chaoskube.checkers.leader_election import check_leader_election
from chaoskube.checkers.linearizability import KVModel, RegisterModel, check_linearizability
from chaoskube.checkers.raft_safety import check_raft_safety
from chaoskube.checkers.scheduling import check_scheduling
from chaoskube.checkers.verdict import Verdict, judged_nothing, nothing_to_judge, run_checker, worst
from chaoskube.checkers.watch import check_watches

__all__ = [
    "HistoryFormatError",
    "KVModel",
    "Op",
    "RegisterModel",
    "UNKNOWN",
    "Verdict",
    "check_admission",
    "check_convergence",
    "check_leader_election",
    "check_linearizability",
    "check_pdb_eviction",
    "check_raft_safety",
    "check_scheduling",
    "check_service_availability",
    "check_watches",
    "from_client_records",
    "judged_nothing",
    "load_history",
    "nothing_to_judge",
    "run_checker",
    "worst",
]

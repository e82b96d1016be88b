"""Examples of user code on chaoskube: pdb-guard, a controller with a real, subtle bug
(:mod:`chaoskube.examples.pdb_guard`), and the state machine that catches it
(:mod:`chaoskube.examples.machine`). docs/tutorial.md walks through both."""

from chaoskube.examples.machine import GUARD_PROCESS, FixedPdbGuardMachine, PdbGuardMachine, PdbGuardStories
from chaoskube.examples.pdb_guard import DEPLOYMENT_UID_ANNOTATION, GUARD_FOR_LABEL, GUARD_SUFFIX, Action, PdbGuard, decide, guard_for, pdb_guard_main

__all__ = [
    "Action",
    "DEPLOYMENT_UID_ANNOTATION",
    "FixedPdbGuardMachine",
    "GUARD_FOR_LABEL",
    "GUARD_PROCESS",
    "GUARD_SUFFIX",
    "PdbGuard",
    "PdbGuardMachine",
    "PdbGuardStories",
    "decide",
    "guard_for",
    "pdb_guard_main",
]

"""Faults: planned as data by pure functions, applied and healed by thin code.

See faults/kinds.py for the kinds, faults/grudge.py for partition planning and
faults/targets.py for how targets are named."""

from chaoskube.faults.grudge import Grudge, bridge, bridge_node, complete, isolate, minority_majority, one_way
from chaoskube.faults.kinds import KINDS, PARTITIONS, Context, FaultError, Plan, apply, check_planned, heal, plan, validate
from chaoskube.faults.schedule import ActiveFault, FaultInjector, ScheduledFault
from chaoskube.faults.targets import SELECTORS, ProcessInfo, TargetError, parse_target, resolve

__all__ = [
    "ActiveFault",
    "Context",
    "FaultError",
    "FaultInjector",
    "Grudge",
    "KINDS",
    "PARTITIONS",
    "Plan",
    "ProcessInfo",
    "SELECTORS",
    "ScheduledFault",
    "TargetError",
    "apply",
    "bridge",
    "bridge_node",
    "check_planned",
    "complete",
    "heal",
    "isolate",
    "minority_majority",
    "one_way",
    "parse_target",
    "plan",
    "resolve",
    "validate",
]

"""What users and operators do to a cluster: the actions, defined once
(:mod:`chaoskube.workload.actions`), and the seeded workload generator that mixes them
(:mod:`chaoskube.workload.generator`)."""

from chaoskube.workload.actions import ACTIONS, ARG_CHOICES, Action, Actor, draw_args, strategy_values
from chaoskube.workload.generator import DEFAULT_WEIGHTS, GeneratorSpec, PlannedAction, WorkloadGenerator, plan

__all__ = [
    "ACTIONS",
    "ARG_CHOICES",
    "Action",
    "Actor",
    "DEFAULT_WEIGHTS",
    "GeneratorSpec",
    "PlannedAction",
    "WorkloadGenerator",
    "draw_args",
    "plan",
    "strategy_values",
]

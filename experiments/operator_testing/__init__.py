"""Operator testing (``chaoskube test-operator``): the user's operator, learned in fault-free
runs, perturbed at the points it showed to matter, and judged by difference -- Sieve (OSDI
2022) and Acto (SOSP 2023) without instrumentation, because the API server is ours."""

from chaoskube.experiments.operator_testing.mask import Mask, apply_mask, learn_mask
from chaoskube.experiments.operator_testing.observe import Observation, observe
from chaoskube.experiments.operator_testing.oracle import judge
from chaoskube.experiments.operator_testing.plans import KINDS, Plan, Point, generate_plans, parse_plan_id, select_plans
from chaoskube.experiments.operator_testing.workload import Step, WorkloadError, generate_workload, load_workload

__all__ = [
    "KINDS",
    "Mask",
    "Observation",
    "Plan",
    "Point",
    "Step",
    "WorkloadError",
    "apply_mask",
    "generate_plans",
    "generate_workload",
    "judge",
    "learn_mask",
    "load_workload",
    "observe",
    "parse_plan_id",
    "select_plans",
]

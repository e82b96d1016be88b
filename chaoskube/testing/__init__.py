"""Testing a live simulated cluster with Hypothesis: :class:`ClusterMachine` (a stateful
machine whose state is a running cluster, with a rule per fault kind of ``faults/``) and
:class:`LiveCluster` (a World stepped from the test's thread). The pytest plugin is
:mod:`chaoskube.testing.plugin`."""

from chaoskube.testing.machine import (
    ACTION_RULES,
    CONTROL_PLANE_ROLES,
    EXCLUDED_KINDS,
    FAULT_KINDS,
    FAULT_RULES,
    ClusterMachine,
    InvariantViolation,
    LiveCluster,
    ManifestsRefused,
    RunSummary,
    SimulationCrashed,
    eventually,
    fault_rule_name,
    focus,
    default_settings,
    shrinking_bounded,
    small_cluster_spec,
    step,
    workload_weight,
)

__all__ = [
    "ACTION_RULES",
    "CONTROL_PLANE_ROLES",
    "ClusterMachine",
    "EXCLUDED_KINDS",
    "FAULT_KINDS",
    "FAULT_RULES",
    "InvariantViolation",
    "LiveCluster",
    "ManifestsRefused",
    "RunSummary",
    "SimulationCrashed",
    "default_settings",
    "eventually",
    "fault_rule_name",
    "focus",
    "shrinking_bounded",
    "small_cluster_spec",
    "step",
    "workload_weight",
]

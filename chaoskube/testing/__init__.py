"""Testing a live simulated cluster with Hypothesis: :class:`ClusterMachine` (a stateful
machine whose state is a running cluster) and :class:`LiveCluster` (a World stepped from
the test's thread). The pytest plugin is :mod:`chaoskube.testing.plugin`."""

from chaoskube.testing.machine import (
    CONTROL_PLANE_ROLES,
    TARGETS,
    ClusterMachine,
    InvariantViolation,
    LiveCluster,
    RunSummary,
    SimulationCrashed,
    small_cluster_spec,
    step,
)

__all__ = [
    "CONTROL_PLANE_ROLES",
    "ClusterMachine",
    "InvariantViolation",
    "LiveCluster",
    "RunSummary",
    "SimulationCrashed",
    "TARGETS",
    "small_cluster_spec",
    "step",
]

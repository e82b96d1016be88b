"""Settings of the simulated control plane, with Kubernetes' defaults and where they come from.

Every component takes its settings from here (or from a :class:`ClusterTimings` passed in
by the cluster assembly), so an experiment can change one timing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ControllerManagerConfig", "KubeletConfig", "SchedulerConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ControllerManagerConfig:
    """kube-controller-manager flags (``cmd/kube-controller-manager/app/options``)."""

    #: --node-monitor-period: how often the node lifecycle controller checks nodes.
    node_monitor_period_s: float = 5.0
    #: --node-monitor-grace-period: a node whose lease/status has not changed for this long
    #: is marked Unknown (NodeReady condition) and tainted unreachable.
    node_monitor_grace_period_s: float = 40.0
    #: --node-startup-grace-period.
    node_startup_grace_period_s: float = 60.0
    #: --node-eviction-rate: nodes per second whose pods are evicted in a healthy zone.
    node_eviction_rate: float = 0.1
    #: --secondary-node-eviction-rate: in a partially disrupted zone of a large cluster.
    secondary_node_eviction_rate: float = 0.01
    #: --large-cluster-size-threshold: below this, a partially disrupted zone stops evicting.
    large_cluster_size_threshold: int = 50
    #: --unhealthy-zone-threshold: the share of NotReady nodes (>= 3 of them) that makes a
    #: zone PartialDisruption.
    unhealthy_zone_threshold: float = 0.55
    #: --concurrent-*-syncs: workers per controller.
    concurrent_deployment_syncs: int = 5
    concurrent_replicaset_syncs: int = 5
    concurrent_endpointslice_syncs: int = 5
    concurrent_gc_syncs: int = 20
    concurrent_disruption_syncs: int = 1  # ours: upstream has no flag and runs one worker
    concurrent_statefulset_syncs: int = 5
    concurrent_daemonset_syncs: int = 2
    concurrent_job_syncs: int = 5
    concurrent_cron_job_syncs: int = 5
    concurrent_rc_syncs: int = 5
    concurrent_namespace_syncs: int = 10
    concurrent_resource_quota_syncs: int = 5
    #: --resource-quota-sync-period: every quota's usage is recomputed this often.
    resource_quota_sync_period_s: float = 300.0
    #: --pvclaimbinder-sync-period: the volume binder's resync of every claim and volume.
    pvclaimbinder_sync_period_s: float = 15.0
    #: Informer resync (``--min-resync-period`` 12 h, randomized): 0 disables resync, as a
    #: run is much shorter.
    resync_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """kube-scheduler defaults (``pkg/scheduler/apis/config/v1/defaults.go``)."""

    #: podInitialBackoffSeconds / podMaxBackoffSeconds.
    pod_initial_backoff_s: float = 1.0
    pod_max_backoff_s: float = 10.0
    #: How long an unschedulable pod waits before it is retried without an event that may
    #: make it schedulable (``DefaultPodMaxInUnschedulablePodsDuration``, 5 min).
    pod_max_in_unschedulable_s: float = 300.0
    #: percentageOfNodesToScore: 0 means adaptive (50% at 100 nodes down to 5%).
    percentage_of_nodes_to_score: int = 0
    scheduler_name: str = "default-scheduler"


@dataclass(frozen=True, slots=True, kw_only=True)
class KubeletConfig:
    """kubelet defaults (``pkg/kubelet/apis/config/v1beta1/defaults.go``)."""

    #: nodeLeaseDurationSeconds; the lease is renewed every 25% of it (10 s).
    node_lease_duration_s: float = 40.0
    #: nodeStatusUpdateFrequency / nodeStatusReportFrequency.
    node_status_update_frequency_s: float = 10.0
    node_status_report_frequency_s: float = 300.0
    #: Container restart back-off: 10 s doubling to 300 s (``MaxContainerBackOff``).
    restart_backoff_initial_s: float = 10.0
    restart_backoff_max_s: float = 300.0
    #: Simulated runtime latencies (not Kubernetes settings: how long the fake CRI takes).
    sandbox_start_s: float = 0.5
    image_pull_s: float = 2.0
    container_start_s: float = 0.5

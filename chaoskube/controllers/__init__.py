"""kube-controller-manager and its controllers for the simulated control plane."""

from chaoskube.config import ControllerManagerConfig, KubeletConfig, SchedulerConfig
from chaoskube.controllers.cronjob import CronJobController
from chaoskube.controllers.daemonset import DaemonSetController
from chaoskube.controllers.deployment import DeploymentController
from chaoskube.controllers.disruption import DisruptionController
from chaoskube.controllers.endpointslice import EndpointSliceController
from chaoskube.controllers.garbagecollector import GarbageCollector
from chaoskube.controllers.job import JobController
from chaoskube.controllers.manager import CONTROLLERS, ServiceAccountsController, controller_manager_main, run_leader_elected
from chaoskube.controllers.namespace import NamespaceController
from chaoskube.controllers.nodelifecycle import NodeLifecycleController, TaintEvictionController
from chaoskube.controllers.persistentvolume import PersistentVolumeController
from chaoskube.controllers.replicaset import ReplicaSetController, ReplicationControllerManager
from chaoskube.controllers.resourcequota import ResourceQuotaController
from chaoskube.controllers.statefulset import StatefulSetController

__all__ = [
    "CONTROLLERS",
    "ControllerManagerConfig",
    "CronJobController",
    "DaemonSetController",
    "DeploymentController",
    "DisruptionController",
    "EndpointSliceController",
    "GarbageCollector",
    "JobController",
    "KubeletConfig",
    "NamespaceController",
    "NodeLifecycleController",
    "PersistentVolumeController",
    "ReplicaSetController",
    "ReplicationControllerManager",
    "ResourceQuotaController",
    "SchedulerConfig",
    "ServiceAccountsController",
    "StatefulSetController",
    "TaintEvictionController",
    "controller_manager_main",
    "run_leader_elected",
]

"""kube-controller-manager and its controllers for the simulated control plane."""

from chaoskube.config import ControllerManagerConfig, KubeletConfig, SchedulerConfig
from chaoskube.controllers.deployment import DeploymentController
from chaoskube.controllers.disruption import DisruptionController
from chaoskube.controllers.endpointslice import EndpointSliceController
from chaoskube.controllers.garbagecollector import GarbageCollector
from chaoskube.controllers.manager import CONTROLLERS, ServiceAccountsController, controller_manager_main, run_leader_elected
from chaoskube.controllers.nodelifecycle import NodeLifecycleController, TaintEvictionController
from chaoskube.controllers.replicaset import ReplicaSetController

__all__ = [
    "CONTROLLERS",
    "ControllerManagerConfig",
    "DeploymentController",
    "DisruptionController",
    "EndpointSliceController",
    "GarbageCollector",
    "KubeletConfig",
    "NodeLifecycleController",
    "ReplicaSetController",
    "SchedulerConfig",
    "ServiceAccountsController",
    "TaintEvictionController",
    "controller_manager_main",
    "run_leader_elected",
]

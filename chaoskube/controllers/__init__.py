"""kube-controller-manager's controllers for the simulated control plane."""

from chaoskube.controllers.config import ControllerManagerConfig, KubeletConfig, SchedulerConfig

__all__ = ["ControllerManagerConfig", "KubeletConfig", "SchedulerConfig"]

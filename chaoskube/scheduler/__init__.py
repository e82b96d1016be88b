"""kube-scheduler for the simulated control plane: a scheduling queue, a framework of
plugins at the real extension points, preemption, and binding through the API."""

from chaoskube.scheduler.framework import Code, FitError, Framework, SchedulerCache, Snapshot, Status
from chaoskube.scheduler.plugins import default_plugins
from chaoskube.scheduler.preemption import DefaultPreemption
from chaoskube.scheduler.queue import SchedulingQueue
from chaoskube.scheduler.scheduler import POD_FIELD_SELECTOR, Scheduler

__all__ = [
    "Code",
    "DefaultPreemption",
    "FitError",
    "Framework",
    "POD_FIELD_SELECTOR",
    "Scheduler",
    "SchedulerCache",
    "SchedulingQueue",
    "Snapshot",
    "Status",
    "default_plugins",
]

"""The resourcequota controller's triggers, as upstream's
``pkg/controller/resourcequota/resource_quota_controller.go``: the quota informer's
``UpdateFunc`` enqueues a quota only when its ``spec.hard`` changed ("We ignore all updates to
quota.Status because they are all driven by this controller"), so the admission plugin's
charges never start a recalculation from informers that may not hold the charged object yet
(before this, every charge did, and unbroken runs of quota-under-concurrent-creates took
charges back and admitted a sixth pod under a hard of five)."""

from __future__ import annotations

from typing import Any

from chaoskube.api.manifests import from_dict
from chaoskube.config import ControllerManagerConfig
from chaoskube.controllers.resourcequota import QUOTA_RESOURCES, ResourceQuotaController


class _Informer:
    def __init__(self) -> None:
        self.handlers: list[dict[str, Any]] = []

    def add_event_handler(self, on_add: Any = None, on_update: Any = None, on_delete: Any = None) -> object:
        self.handlers.append({"add": on_add, "update": on_update, "delete": on_delete})
        return self.handlers[-1]


class _Factory:
    def __init__(self) -> None:
        self.informers: dict[str, _Informer] = {}

    def informer(self, resource: str) -> _Informer:
        return self.informers.setdefault(resource, _Informer())


def _quota(hard: str, used: str, resource_version: str) -> Any:
    return from_dict({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team", "resourceVersion": resource_version},
                      "spec": {"hard": {"count/pods": hard}}, "status": {"hard": {"count/pods": hard}, "used": {"count/pods": used}}})


def test_a_status_only_update_of_a_quota_starts_no_recalculation() -> None:
    factory = _Factory()
    controller = ResourceQuotaController(object(), object(), factory, ControllerManagerConfig())  # type: ignore[arg-type]
    assert set(factory.informers) == set(QUOTA_RESOURCES)
    (handlers,) = factory.informers["resourcequotas"].handlers
    handlers["update"](_quota("5", "1", "10"), _quota("5", "2", "11"))  # the admission plugin's charge
    assert len(controller.queue.core) == 0
    handlers["update"](_quota("5", "2", "11"), _quota("6", "2", "12"))  # spec.hard raised
    assert len(controller.queue.core) == 1
    handlers["delete"](_quota("6", "2", "12"))
    assert len(controller.queue.core) == 1  # already queued

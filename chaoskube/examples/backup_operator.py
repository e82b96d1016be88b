"""backup-operator: an in-cluster operator that owns the ``Backup`` custom resources of
``experiments/workloads/backups-crd.yaml`` (``backups.stable.example.com``, defaults,
validation and a status subresource), as operators built with controller-runtime or kopf
do: it reads its objects through the API and writes them back.

Every ``RESYNC_S`` of its own time, in its namespace, it

1. **creates** the Backups it manages (``managed-0`` .. ``managed-<MANAGED-1>``) that are
   missing, leaving ``retentionDays``, ``paused``, ``storage`` and each target's ``weight`` to
   the CRD's defaults and sending ``spec.legacyMode``, a field an older version of the
   operator wrote and the schema no longer has (pruned by the API server);
2. **reports** each Backup's status through the ``/status`` subresource (phase,
   observedGeneration, runs), as controller-runtime's ``Status().Update`` does;
3. **patches** one Backup per round, in turn, with a JSON merge patch (RFC 7386) that
   either sets ``retentionDays`` and ``storage.class`` or resets them with ``null`` -- "back
   to the default", which the API server's defaulting fills in again
   (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting:
   "defaulting happens on the object ... in the request to the API server using the
   request version defaults").

An API error or a timeout ends the round (the next round tries again), as a requeue would.
A restarted process starts from nothing. The journal gets a ``backup-operator`` record per
write (``event``: created / status / patched, or ``error`` with the code).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from chaoskube.api.identity import admin_credentials
from chaoskube.api.objects import ObjectMeta, custom_type
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.sim import Process

__all__ = ["BACKUPS", "MANAGED", "RESYNC_S", "backup_operator_main"]

#: The resource the operator owns (the CRD's ``<plural>.<group>``) and its kind.
BACKUPS = "backups.stable.example.com"
API_VERSION = "stable.example.com/v1"
KIND = "Backup"
#: How many Backups it creates itself, and how often it reconciles (seconds of its time).
MANAGED = 3
RESYNC_S = 3.0
#: The bound of one API call (an operator's client timeout).
CALL_TIMEOUT_S = 15.0


def _backup_type() -> type:
    return custom_type(API_VERSION, KIND, BACKUPS, True)


def managed_backup(namespace: str, index: int) -> Any:
    """The Backup ``managed-<index>`` as the operator creates it: defaults left to the server."""
    content = {"spec": {"schedule": f"{15 * index} 3 * * *", "legacyMode": True, "targets": [{"name": f"db-{index}"}]}}
    return _backup_type()(metadata=ObjectMeta(name=f"managed-{index}", namespace=namespace, labels={"app.kubernetes.io/managed-by": "backup-operator"}), content=content)


def wanted_status(backup: Any) -> dict[str, Any]:
    """The status a Backup should carry: Paused or Scheduled, and the generation seen."""
    spec = backup.content.get("spec") or {}
    status = dict(backup.content.get("status") or {})
    generation = backup.metadata.generation
    if status.get("observedGeneration") == generation:
        return status
    return {"phase": "Paused" if spec.get("paused") else "Scheduled", "observedGeneration": generation, "runs": int(status.get("runs", 0)) + 1}


class BackupOperator:
    def __init__(self, process: Process, client: ApiClient, namespace: str) -> None:
        self.process = process
        self.client = client
        self.namespace = namespace
        self.round = 0

    async def run(self) -> None:
        while True:
            with self.process.move_on_after(CALL_TIMEOUT_S * 4):
                try:
                    await self.reconcile()
                except ApiError as error:
                    self._record("error", "", code=error.code, reason=error.reason[:120])
            self.round += 1
            await self.process.sleep(RESYNC_S)

    async def reconcile(self) -> None:
        listed = await self.client.list(BACKUPS, self.namespace)
        backups = sorted((obj for obj in listed.items if obj.metadata.deletion_timestamp is None), key=lambda obj: obj.metadata.name)
        names = {obj.metadata.name for obj in backups}
        for index in range(MANAGED):
            wanted = managed_backup(self.namespace, index)
            if wanted.metadata.name not in names:
                try:
                    await self.client.create(wanted)
                except ApiError as error:
                    if error.code != 409:
                        raise
                else:
                    self._record("created", wanted.metadata.name)
        for backup in backups:
            status = wanted_status(backup)
            if status != backup.content.get("status"):
                backup.content["status"] = status
                await self.client.update_status(backup)
                self._record("status", backup.metadata.name, generation=backup.metadata.generation)
        if backups:
            target = backups[self.round % len(backups)]
            reset = (self.round // len(backups)) % 2 == 1
            patch = {"spec": {"retentionDays": None, "storage": {"class": None}}} if reset else {"spec": {"retentionDays": 14, "storage": {"class": "cold"}}}
            await self.client.patch(BACKUPS, self.namespace, target.metadata.name, patch)
            self._record("patched", target.metadata.name, reset=reset)

    def _record(self, event: str, name: str, **fields: Any) -> None:
        self.process.world.record("backup-operator", event=event, backup=name, **fields)


def backup_operator_main(servers: Sequence[str], *, namespace: str = "default") -> Callable[[Process], Awaitable[None]]:
    """The main of a backup-operator process, a client of ``servers``::

        world.spawn("backup-operator", backup_operator_main(api_server_names), role="operator")
    """

    async def main(process: Process) -> None:
        client = ApiClient(process, list(servers), admin_credentials(), name=f"{process.name}/backup-operator", timeout_s=CALL_TIMEOUT_S)
        await BackupOperator(process, client, namespace).run()

    return main

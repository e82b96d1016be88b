"""A live cluster served over HTTPS in a background thread, for tests that drive real
clients. Everything it starts (the World's thread, its listeners, any --run program) is
stopped when the context exits; clients talk to loopback only."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from chaoskube.experiments.live import FOREVER_S, LiveHandle, LiveOptions, default_experiment, run_live
from chaoskube.experiments.model import Phases
from chaoskube.experiments.systems.kubernetes import KubernetesSystem

SMALL_CLUSTER = {"etcdMembers": 3, "apiServers": 2, "controllerManagers": 1, "schedulers": 1, "nodeGroups": [{"count": 2, "zones": ["zone-a", "zone-b"]}]}


@contextlib.contextmanager
def live_cluster(out: Path, *, run: str = "", schedule: list[dict[str, Any]] | None = None, faults_s: float = FOREVER_S, checkers: list[str] | None = None, seed: int = 1,
                 manifests: Path | None = None, cluster: dict[str, Any] | None = None) -> Iterator[tuple[LiveHandle, dict[str, Any]]]:
    """Yields (handle, outcome); ``outcome["result"]`` is set once the run is over.
    ``manifests``: a directory served with the cluster (``chaoskube serve --manifests``)."""
    from chaoskube.experiments.model import FaultEntry
    from chaoskube.experiments.registry import with_manifests

    experiment = msgspec.structs.replace(
        default_experiment(), name="live-test", cluster=cluster or SMALL_CLUSTER,
        phases=Phases(setup_s=60.0, warmup_s=0.0, faults_s=faults_s, recovery_s=30.0, settle_s=0.0),
        schedule=[msgspec.convert(entry, FaultEntry) for entry in schedule or []],
        checkers=checkers or ["steady-state", "leader-election"],
    )
    if manifests is not None:
        experiment = with_manifests(experiment, manifests, live=True)  # as `chaoskube serve --manifests` does
    ready = threading.Event()
    outcome: dict[str, Any] = {}

    def on_ready(handle: LiveHandle) -> None:
        outcome["handle"] = handle
        ready.set()

    def main() -> None:
        try:
            outcome["result"] = run_live(experiment, KubernetesSystem, seed, out, LiveOptions(port=0, run=run, on_ready=on_ready))
        except BaseException as error:  # noqa: BLE001 - reported to the test
            outcome["error"] = error
        finally:
            ready.set()

    thread = threading.Thread(target=main, name="chaoskube-live", daemon=True)
    thread.start()
    try:
        assert ready.wait(120), "the live cluster did not come up"
        if "error" in outcome:
            raise outcome["error"]
        yield outcome["handle"], outcome
    finally:
        handle = outcome.get("handle")
        if handle is not None and thread.is_alive():
            handle.stop()
        thread.join(180)
        assert not thread.is_alive(), "the live run did not stop"

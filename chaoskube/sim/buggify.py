"""BUGGIFY: seeded, per-run delays at the places where races live.

After FoundationDB's ``BUGGIFY`` macro (flow/flow.cpp, ``getSBVar``; "Testing",
https://apple.github.io/foundationdb/testing.html): a *point* is a named place in a
component where the real system may take longer than usual -- a slow watch handler, a
goroutine scheduled late, a slow disk. Each run, every point is *live* with probability
``live_probability`` (decided once, when BUGGIFY starts; FoundationDB's
``P_BUGGIFIED_SECTION_ACTIVATED`` = 0.25), and a live point *fires* with probability
``fire_probability`` each time it is reached (``P_BUGGIFIED_SECTION_FIRES`` = 0.25). A firing
point adds a delay on the process's clock, drawn log-uniformly between the point's bounds
(most delays are short, a few are long), so windows that a plain run crosses in
microseconds stay open long enough for a fault or another component to land in them.
Delays between two components' steps are also reorderings: an informer that handles its
watch events late sees them after another informer of the same process saw later ones
(client-go gives no order across informers either).

Every point injects only what the real system allows (the table :data:`POINTS` says why
each is allowed) and is bounded so that the timing contracts real Kubernetes keeps still
hold (chaoskube/checkers/timing.py: its tightest slack is 5 s; no point delays more than
1 s at a time). A buggified run of a correct component must never fail a checker.

Contract:

- ``world.buggify`` is a :class:`Buggify`; it is off until :meth:`Buggify.start`. Off, a
  point costs one attribute test (``buggify.enabled``) and changes nothing: no random
  draw, no journal line, no timer -- a run without BUGGIFY is byte-identical to one built
  before BUGGIFY existed.
- :meth:`Buggify.start` draws which points are live, each from its own generator
  ``world.random("buggify/<point>")`` (adding a point shifts no other point's draws), and
  journals the choice once: ``{"type": "buggify", "event": "start", "live": [...],
  "points": [...], "live_probability", "fire_probability"}``. The experiment runner starts
  it at the switch to the run seed (the boot a campaign shares is never buggified).
- :meth:`Buggify.delay_s` answers 0.0 (not live, or did not fire) or a delay, and journals
  each firing: ``{"type": "buggify", "event": "fire", "point", "process", "delay_s"}``.
  The caller then sleeps on its own process's clock (``await process.sleep(delay)``), or
  defers a callback (``process.call_later``), so a pause or a kill of the process holds or
  cancels the delay as it would any of its timers.

Same seed, same live points, same firings, same delays.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["MAX_DELAY_S", "MAX_LIFETIME_S", "Buggify", "BuggifySpec", "POINTS", "Point", "maybe_sleep", "spec_error"]

#: FoundationDB's defaults (flow/flow.cpp: ``P_BUGGIFIED_SECTION_ACTIVATED``,
#: ``P_BUGGIFIED_SECTION_FIRES``).
LIVE_PROBABILITY = 0.25
FIRE_PROBABILITY = 0.25
#: No point delays longer than this (timing.py's tightest slack is 5 s).
MAX_DELAY_S = 1.0
#: An *ending* point (``Point.ends``) answers a stream's lifetime, not a delay: no stream it
#: ends lives shorter than its point's ``min_s`` or is cut later than this after it opened.
MAX_LIFETIME_S = 60.0


@dataclass(frozen=True, slots=True)
class Point:
    """One buggify point: where it is, what it delays, why the real system allows it,
    and the bounds of its delay (seconds of the process's clock). An *ending* point
    (``ends``) ends a stream instead: its draw is how long the stream lives before it
    ends, as it would at its timeout, so the client's resume path runs mid-run."""

    name: str
    where: str
    delays: str
    allowed_because: str
    min_s: float
    max_s: float
    ends: bool = False

    def __post_init__(self) -> None:
        assert 0 < self.min_s <= self.max_s <= (MAX_LIFETIME_S if self.ends else MAX_DELAY_S), self


#: Every point, by name. The docs (docs/design.md, "BUGGIFY") list them.
POINTS: dict[str, Point] = {
    point.name: point
    for point in (
        Point(
            "informer.watch-event", "chaoskube.client.informer:Reflector._follow",
            "the handling of a batch of watch events, after it was received",
            "client-go's reflector hands events to a DeltaFIFO that a separate goroutine pops; a slow handler delays every later event (tools/cache/shared_informer.go)",
            0.001, 0.5,
        ),
        Point(
            "informer.list-watch-gap", "chaoskube.client.informer:Reflector.list_and_watch",
            "the watch that follows a list",
            "ListAndWatch lists, then opens the watch from the list's resourceVersion in a later request; anything may happen in between (tools/cache/reflector.go)",
            0.01, 1.0,
        ),
        Point(
            "etcd.persist-send", "chaoskube.etcd.server:EtcdMember._synced",
            "sending, applying and advancing a Ready after its entries were fsynced",
            "etcd's raftNode persists, then sends from the same goroutine loop; a slow WAL sync or a late goroutine delays the send (server/etcdserver/raft.go; etcd warns above 100 ms)",
            0.001, 0.1,
        ),
        Point(
            "etcd.raft-reorder", "chaoskube.etcd.server:EtcdMember._send",
            "one Raft message, sent after the messages that follow it",
            "etcd's rafthttp sends a peer's messages over two channels (a stream and a pipeline of separate HTTP posts), so they may arrive out of order; Raft tolerates reordering, loss and duplication (etcd-io/raft README, rafthttp/peer.go)",
            0.001, 0.05,
        ),
        Point(
            "etcd.commit-apply", "chaoskube.etcd.server:EtcdMember._apply",
            "applying committed entries (raft advances meanwhile; later entries queue behind them)",
            "etcd hands committed entries to an apply goroutine through a FIFO and raft goes on without waiting; applies lag commits ('apply request took too long', server/etcdserver/server.go applyAll)",
            0.001, 0.2,
        ),
        Point(
            "controller.status-write", "chaoskube.client.client:ApiClient.update_status",
            "a controller's status write, after its sync computed it from the cache",
            "a controller's sync computes from its informer's cache and writes later, in another HTTP request; the cache may have moved on meanwhile (the optimistic-concurrency 409 is the guard)",
            0.001, 0.5,
        ),
        Point(
            "scheduler.bind", "chaoskube.scheduler.scheduler:Scheduler._binding_cycle",
            "the binding cycle of an assumed pod",
            "kube-scheduler binds asynchronously (a goroutine per binding cycle) while it schedules the next pod against its assumed cache (pkg/scheduler/schedule_one.go)",
            0.001, 0.5,
        ),
        Point(
            "kubelet.status-update", "chaoskube.node.kubelet:PodWorker._report",
            "a pod's status patch, after the kubelet computed it",
            "the kubelet's status manager writes statuses from its own goroutine, after the pod worker computed them (pkg/kubelet/status/status_manager.go)",
            0.001, 1.0,
        ),
        Point(
            "webhook.dispatch", "chaoskube.apiserver.webhooks:WebhookDispatcher.mutate/validate",
            "the call of an admission webhook (before its timeout starts)",
            "the dispatcher builds the AdmissionReview and dials the webhook before its client's timeout runs; a busy API server is late to do so (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook)",
            0.001, 0.2,
        ),
        Point(
            "apiserver.watch-end", "chaoskube.apiserver.watchcache:Cacher._send",
            "an API watch that just delivered events: it ends (cleanly, as at its timeout) 1 to 60 s later, and the client watches again from the last resourceVersion it received",
            "a watch lasts the client's timeoutSeconds or kube-apiserver's --min-request-timeout, both any positive value, and the server also ends watches it finds too slow, at graceful shutdown and with the HTTP/2 connection; a client resumes from its last resourceVersion (handlers/get.go, cacher.go, client-go tools/cache/reflector.go)",
            1.0, 60.0, ends=True,
        ),
        Point(
            "apiserver.etcd-watch-end", "chaoskube.apiserver.watchcache:Cacher._on_etcd_message",
            "the watch cache's etcd watch stream, as a message arrives: the connection resets with it in flight, so it is lost and the stream ends, noticed 1 ms to 1 s later; the cache watches again from the revision after the last it saw",
            "etcd ends watch streams when a member restarts, loses its leader under WithRequireLeader, or its gRPC connection resets; kube-apiserver's etcd3 watcher then watches again from the last revision + 1 (storage/etcd3/watcher.go, etcd server/etcdserver/api/v3rpc/watch.go)",
            0.001, 1.0, ends=True,
        ),
    )
}


def spec_error(live_probability: float, fire_probability: float, points: Iterable[str] | None) -> str | None:
    """Why these settings are not a BUGGIFY configuration (one line), or None."""
    for name, value in (("live_probability", live_probability), ("fire_probability", fire_probability)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0.0 <= value <= 1.0):
            return f"`{name}` is a probability between 0 and 1, not {value!r}"
    if points is not None:
        listed = list(points)
        if not listed:
            return f"`points` lists no point (leave it out for all of them); known: {', '.join(sorted(POINTS))}"
        unknown = [name for name in listed if name not in POINTS]
        if unknown:
            return f"unknown buggify point {unknown[0]!r}; known: {', '.join(sorted(POINTS))}"
    return None


class BuggifySpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """BUGGIFY as data (an experiment's ``buggify:``): ``enabled`` (``--buggify`` /
    ``--no-buggify`` override it), the probability a point is live in a run and that a live
    point fires when reached (FoundationDB's 0.25 and 0.25), and ``points``, the points
    allowed to be live (all when left out). Raises ValueError (one line) when invalid."""

    enabled: bool = True
    live_probability: float = LIVE_PROBABILITY
    fire_probability: float = FIRE_PROBABILITY
    points: list[str] | None = None

    def __post_init__(self) -> None:
        problem = spec_error(self.live_probability, self.fire_probability, self.points)
        if problem is not None:
            raise ValueError(problem)


class Buggify:
    """A world's BUGGIFY state (module docstring). Off until :meth:`start`."""

    __slots__ = ("enabled", "live", "live_probability", "fire_probability", "fired", "_record", "_generators")

    def __init__(self) -> None:
        self.enabled = False
        self.live: frozenset[str] = frozenset()
        self.live_probability = 0.0
        self.fire_probability = 0.0
        self.fired: dict[str, int] = {}  # point -> firings so far
        self._record: Callable[..., None] | None = None
        self._generators: dict[str, random.Random] = {}

    def start(self, world: Any, spec: BuggifySpec) -> frozenset[str]:
        """Draw the live points for this run and journal them; from now on live points
        fire. ``world`` gives ``random(name)`` and ``record(type, **fields)``. Once per run."""
        assert not self.enabled, "BUGGIFY starts once per run"
        assert spec.enabled, "a disabled spec starts nothing"
        allowed = sorted(POINTS) if spec.points is None else sorted(set(spec.points))
        live = []
        for name in sorted(POINTS):
            generator = world.random(f"buggify/{name}")
            chosen = generator.random() < spec.live_probability  # drawn for every point: the allow list shifts nothing
            if chosen and name in allowed:
                live.append(name)
                self._generators[name] = generator
        self.live = frozenset(live)
        self.live_probability = spec.live_probability
        self.fire_probability = spec.fire_probability
        self.fired = {name: 0 for name in live}
        self._record = world.record
        self.enabled = bool(live)  # nothing live: every point stays as cheap as when off
        world.record("buggify", event="start", live=live, points=allowed, live_probability=spec.live_probability, fire_probability=spec.fire_probability)
        return self.live

    def delay_s(self, point: str, process: Any) -> float:
        """How long ``process`` waits at ``point`` this time (at an ending point: how long
        the stream lives): 0.0 unless the point is live and fires; a firing is journaled.
        Call only when ``enabled``."""
        assert point in POINTS, f"unknown buggify point {point!r}"
        generator = self._generators.get(point)
        if generator is None or generator.random() >= self.fire_probability:
            return 0.0
        bounds = POINTS[point]
        # log-uniform in [min_s, max_s]: mostly short, now and then long
        delay = round(bounds.min_s * (bounds.max_s / bounds.min_s) ** generator.random(), 6)
        self.fired[point] += 1
        assert self._record is not None
        self._record("buggify", event="fire", point=point, process=process.name, delay_s=delay)
        return delay

    def statistics(self) -> dict[str, Any]:
        """The live points and how often each fired."""
        return {"enabled": self.enabled, "live": sorted(self.live), "fired": dict(sorted(self.fired.items()))}


async def maybe_sleep(process: Any, point: str) -> None:
    """At ``point``: when it is live and fires, sleep its delay on ``process``'s clock.
    Off, it returns without a checkpoint (no Trio scheduling point: task order unchanged)."""
    buggify = process.world.buggify
    if buggify.enabled:
        delay = buggify.delay_s(point, process)
        if delay:
            await process.sleep(delay)

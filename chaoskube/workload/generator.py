"""The workload generator: seeded mixes of what users and operators do, at a rate, with
weights, every action journaled and replayable from the seed (Jepsen's generators; the
"swarm" of FoundationDB's workloads).

Contract. :func:`plan` is the pure core: from a ``random.Random`` (the caller takes it from
the World, ``world.random(spec.random_name)``, after the boot, so each run seed has its own
plan) and a :class:`GeneratorSpec`, it returns the run's actions — when (``at_s``, seconds
from the generator's start), which action of :data:`chaoskube.workload.actions.ACTIONS`,
and its arguments —, arrivals a Poisson process of ``rate_per_s`` (exponential gaps, as
Jepsen's ``gen/stagger`` draws them), each action chosen by weight, its arguments drawn
uniformly (``actions.draw_args``). The plan depends on nothing else: the same seed gives
the same action list whatever the cluster does, and a run without faults (the
differential checker's reference) draws the same one.

:class:`WorkloadGenerator` carries a plan out in a World: from its own process
(``workload-generator``, role ``generator``) and API client, as a user's program would;
each action runs as a task of its own when its time comes (a drain lasts, the next
action does not wait for it), at most ``max_in_flight`` at once (an action due while that
many run is journaled as skipped). Every action ends in exactly one journal record,
``generator-action`` {index, action, args, at_s, started, outcome, ops}: ``outcome`` ok,
skipped (why), ``error CODE: ...`` (the API refused or did not answer: the client retried
as client-go does, then the user moves on), or ``stopped`` (still running when the
generator was stopped). :meth:`WorkloadGenerator.stop` (the heal) cancels what runs, then
the generator undoes what an operator would not leave behind in a maintenance window:
it uncordons every node and removes its taints (``generator`` {event: cleanup}), so the
liveness phase judges controllers, not a cluster the generator left cordoned. The
generator's other changes stay: they are the workload's new desired state.

Non-guarantees: which pod an index names, whether a create meets an existing object,
whether a namespace is still terminating — all depend on the run; the plan does not.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from chaoskube.workload.actions import ACTIONS, NAMESPACES, Actor, cordon, draw_args, taint_node

__all__ = ["DEFAULT_WEIGHTS", "GeneratorSpec", "PlannedAction", "WorkloadGenerator", "plan"]

#: The default mix: mostly workload churn, some disruption, a little of the rare paths
#: (namespace deletion, node taints). A spec's ``weights`` override these by name.
DEFAULT_WEIGHTS: dict[str, float] = {
    "create_workload": 6.0,
    "scale_workload": 4.0,
    "update_workload": 4.0,
    "undo_rollout": 1.5,
    "delete_workload": 4.0,
    "create_pdb": 1.5,
    "change_pdb": 1.0,
    "delete_pdb": 1.0,
    "delete_pod": 2.0,
    "evict_pod": 2.0,
    "cordon": 1.0,
    "uncordon": 1.5,
    "drain": 0.5,
    "create_namespace": 0.5,
    "delete_namespace": 0.5,
    "label_node": 0.5,
    "taint_node": 0.5,
    "untaint_node": 0.7,
    # issue 35: off by default (the default mix, and so every existing plan, is unchanged);
    # swarm and the application experiments weigh them in
    "create_app_workload": 0.0,
    "set_partition": 0.0,
    "restart_member": 0.0,
    "set_quota": 0.0,
    "delete_quota": 0.0,
    "set_default_storage_class": 0.0,
    "delete_claim": 0.0,
    "create_custom_resource": 0.0,
}
assert set(DEFAULT_WEIGHTS) == set(ACTIONS), "every action has a default weight"
#: Bounds (every action is planned and journaled).
MAX_ACTIONS = 5000
MAX_RATE_PER_S = 50.0
GENERATOR_PROCESS = "workload-generator"
#: The generator's client: client-go's retries with a deadline a user's program would set.
CLIENT_TIMEOUT_S = 5.0
CLIENT_ATTEMPTS = 3
#: Cleanup at stop: uncordon / untaint every node, retried while the API does not answer.
CLEANUP_ATTEMPTS = 30
CLEANUP_RETRY_S = 1.0


class GeneratorSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """An experiment's ``generator:`` (module docstring). ``rate_per_s``: actions per second
    of virtual time; ``weights``: action name -> weight, over :data:`DEFAULT_WEIGHTS` (0
    leaves an action out); ``after_s``: when it starts, counted from the start of the
    warm-up; ``window_s``: how long it runs (default: until the heal); ``max_actions``,
    ``max_in_flight``: bounds; ``op_timeout_s``: a bound on each API call,
    ``drain_timeout_s`` on a drain; ``seed_offset`` picks another generator for the same
    seed. Raises ValueError (one line naming the field) when invalid."""

    rate_per_s: float = 0.5
    weights: dict[str, float] = {}
    after_s: float = 0.0
    window_s: float | None = None
    max_actions: int = 500
    max_in_flight: int = 8
    op_timeout_s: float = 30.0
    drain_timeout_s: float = 30.0
    seed_offset: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rate_per_s) and 0 < self.rate_per_s <= MAX_RATE_PER_S):
            raise ValueError(f"`rate_per_s` must be a number in (0, {MAX_RATE_PER_S:g}] (actions per second of virtual time), got {self.rate_per_s}")
        for name, weight in self.weights.items():
            if name not in ACTIONS:
                raise ValueError(f"`weights`: unknown action {name!r}; known: {', '.join(ACTIONS)}")
            if not (math.isfinite(weight) and 0 <= weight <= 1e6):
                raise ValueError(f"`weights.{name}` must be a finite number >= 0, got {weight}")
        if not any(weight > 0 for weight in self.effective_weights().values()):
            raise ValueError("`weights` leave every action at 0: give at least one a positive weight")
        if not (math.isfinite(self.after_s) and 0 <= self.after_s <= 3600):
            raise ValueError(f"`after_s` must be a finite number between 0 and 3600, got {self.after_s}")
        if self.window_s is not None and not (math.isfinite(self.window_s) and 0 < self.window_s <= 3600):
            raise ValueError(f"`window_s` must be a finite number in (0, 3600], got {self.window_s}")
        if not 1 <= self.max_actions <= MAX_ACTIONS:
            raise ValueError(f"`max_actions` must be between 1 and {MAX_ACTIONS}, got {self.max_actions}")
        if not 1 <= self.max_in_flight <= 100:
            raise ValueError(f"`max_in_flight` must be between 1 and 100, got {self.max_in_flight}")
        for name in ("op_timeout_s", "drain_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 < value <= 3600):
                raise ValueError(f"`{name}` must be a finite number in (0, 3600], got {value}")

    def effective_weights(self) -> dict[str, float]:
        """Every action's weight: the defaults, overridden by ``weights``."""
        return {name: float(self.weights.get(name, DEFAULT_WEIGHTS[name])) for name in ACTIONS}

    @property
    def random_name(self) -> str:
        """The name of the world generator the plan is drawn from."""
        return f"generator/{self.seed_offset}"

    def ends_at_s(self, until_s: float) -> float:
        """When the generator stops, counted from its start, if the heal comes at ``until_s``."""
        return until_s if self.window_s is None else min(until_s, self.after_s + self.window_s)


@dataclass(frozen=True, slots=True)
class PlannedAction:
    """One action of a plan: when (seconds from the generator's start), what, with what."""

    at_s: float
    action: str
    args: dict[str, Any]

    def to_json(self) -> list[Any]:
        return [self.at_s, self.action, dict(self.args)]


def plan(rng: random.Random, spec: GeneratorSpec, until_s: float) -> list[PlannedAction]:
    """The actions of a run (module docstring): first a ``create_namespace`` of each
    namespace the generator works in besides ``default`` (at ``after_s``), then Poisson
    arrivals of ``rate_per_s`` from ``after_s`` to :meth:`GeneratorSpec.ends_at_s`, each
    action chosen by weight and its arguments drawn; at most ``max_actions`` in all. A pure
    function of ``rng``'s state and the arguments."""
    assert until_s >= 0, until_s
    end_s = spec.ends_at_s(until_s)
    planned = [PlannedAction(round(spec.after_s, 6), "create_namespace", {"extra_namespace": namespace}) for namespace in NAMESPACES[1:]]
    if spec.after_s >= end_s:
        return []
    weights = spec.effective_weights()
    names = [name for name in ACTIONS if weights[name] > 0]
    cumulative = [weights[name] for name in names]
    at_s = spec.after_s
    while len(planned) < spec.max_actions:
        at_s += rng.expovariate(spec.rate_per_s)
        if at_s >= end_s:
            break
        action = rng.choices(names, weights=cumulative)[0]
        planned.append(PlannedAction(round(at_s, 6), action, draw_args(rng, action)))
    return planned[: spec.max_actions]


class WorkloadGenerator:
    """Carries out a plan in a World (module docstring). ``start(origin_s)`` spawns its
    process; ``stop()`` cancels what runs and starts the cleanup; ``wait_stopped()``
    returns once the cleanup ended."""

    def __init__(self, world: Any, spec: GeneratorSpec, planned: list[PlannedAction], make_client: Any, nodes: list[str]) -> None:
        self.world = world
        self.spec = spec
        self.planned = planned
        self.make_client = make_client  # process -> ApiClient
        self.nodes = list(nodes)
        self.in_flight = 0
        self.stopped = False
        self._scope: trio.CancelScope | None = None
        self._done = trio.Event()
        self.actor: Actor | None = None
        self._origin_s = 0.0

    def start(self, origin_s: float) -> None:
        self.world.record("generator", event="start", actions=len(self.planned), rate_per_s=self.spec.rate_per_s,
                          weights={name: weight for name, weight in self.spec.effective_weights().items() if weight > 0},
                          plan=[item.to_json() for item in self.planned])
        self._origin_s = origin_s
        self.world.spawn(GENERATOR_PROCESS, self._main, role="generator")

    def stop(self) -> None:
        """Stop now: actions in flight end ``stopped``; actions not yet due never run."""
        if self.stopped:
            return
        self.stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def wait_stopped(self) -> None:
        await self._done.wait()

    async def _main(self, process: Any) -> None:
        client = self.make_client(process)
        self.actor = Actor(self.world, client, self.nodes, op_timeout_s=self.spec.op_timeout_s, drain_timeout_s=self.spec.drain_timeout_s)
        try:
            with trio.CancelScope() as scope:
                self._scope = scope
                if self.stopped:
                    scope.cancel()
                async with trio.open_nursery() as nursery:
                    for index, item in enumerate(self.planned):
                        delay = self._origin_s + item.at_s - self.world.now
                        if delay > 0:
                            await process.sleep_world(delay)
                        if self.in_flight >= self.spec.max_in_flight:
                            self._record(index, item, self.world.now, f"skipped: {self.in_flight} actions in flight (max_in_flight)", [])
                            continue
                        self.in_flight += 1
                        nursery.start_soon(self._act, index, item)
            await self._cleanup(process)
        finally:
            self._done.set()

    async def _act(self, index: int, item: PlannedAction) -> None:
        assert self.actor is not None
        actor = self.actor.fresh()
        started = self.world.now
        try:
            outcome = await ACTIONS[item.action].run(actor, **item.args)
        except trio.Cancelled:
            self._record(index, item, started, "stopped", actor.ops)
            raise
        finally:
            self.in_flight -= 1
        self._record(index, item, started, outcome, actor.ops)

    def _record(self, index: int, item: PlannedAction, started: float, outcome: str, ops: list[tuple[str, int | None, str]]) -> None:
        self.world.record("generator-action", index=index, action=item.action, args=dict(item.args), at_s=item.at_s, started=round(started, 9),
                          outcome=outcome, ops=[[what, code, reason[:120]] for what, code, reason in ops[:8]], more_ops=max(0, len(ops) - 8))

    async def _cleanup(self, process: Any) -> None:
        """Uncordon every node and remove the generator's taint from it (module docstring)."""
        assert self.actor is not None
        left: list[str] = []
        for index, node in enumerate(self.nodes):
            for attempt in range(1, CLEANUP_ATTEMPTS + 1):
                actor = self.actor.fresh()
                outcome = await cordon(actor, index, unschedulable=False)
                if outcome == "ok":
                    outcome = await taint_node(actor, index, "")
                if outcome.startswith("ok") or " 404" in outcome[:12]:
                    break
                if attempt == CLEANUP_ATTEMPTS:
                    left.append(f"{node}: {outcome}")
                    break
                await process.sleep_world(CLEANUP_RETRY_S)
        self.world.record("generator", event="cleanup", nodes=len(self.nodes), left=left)


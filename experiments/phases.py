"""The phases of a run, driven once for simulated and real runs alike.

The sequence (TigerBeetle's safety-then-liveness shape, Chaos Toolkit's steady state):

    setup -> steady state (before) -> prepare the workload -> booted -> start the workload,
    warm-up -> bounded fault phase -> heal everything -> wait for the steady state to
    return (recovery deadline) -> settle [-> wait for convergence] -> stop the workload
    -> check

The settle phase is followed by a wait only when the run would otherwise end before the
``convergence`` checker could answer: it judges the store at the recovery deadline (heal +
``recovery_s``) and answers unknown when the journal ends before that unconverged. The
steady state watches the experiment's own workloads; convergence judges every Deployment
and pod in the store, the workload generator's too, and one of those can take longer (swarm
seed 101: two kubelets' pod reflectors backed off for 44 and 49 s, client-go's capped
step, after a 410 from a restarted API server, and a pod deleted at 115 s kept its
foreground-deleted Deployment alive until the relist). So while the host says the checker
would find the store unconverged (:meth:`PhaseHost.awaiting_convergence`, journal reads
only), the driver marks ``convergence-wait`` and polls every
:data:`CONVERGENCE_POLL_S` until it converges or the deadline passes; a run converged at
the end of its settle phase, or past the deadline then, is not changed at all. (A live
session's host never waits: it ends as its user planned it, experiments/live.py.)

``booted`` ends the boot: everything before it -- the cluster up, the workload created and
converged -- is the same for every run seed (a simulated run draws it from the boot seed,
and a campaign may fork the booted process there, once per seed: docs/campaigns.md);
everything after draws from the run seed.

Each boundary is journaled as a ``phase`` event (``name``) at the time it is reached, and
kept in :attr:`PhaseRecord.phases`. :func:`drive_phases` owns the order and the waits; a
:class:`PhaseHost` owns the clock, the journal and what each step does: the simulated
runner's host sleeps on the World's virtual clock and injects faults with its
FaultInjector (``experiments/simulated.py``); real mode's sleeps on the real clock and
applies faults to real processes (``experiments/real/runner.py``).

Contract for a host: ``now`` and ``record`` are its journal's time and writer; ``sleep``
waits on its clock; ``prepare_workload`` creates the workload and waits until it settles;
``booted`` switches to the run seed (a real run has none: it returns
at once) and returns the phases the rest of the run follows when they are not the ones
it began with (a fault-free reference run forked from this boot: ``simulated.py``), else
None; ``start_faults`` starts the fault phase's schedule and returns at once
(the driver then sleeps ``phases.faults_s``); ``heal_all`` heals every fault, idempotently,
and stops faults not yet applied; ``stop_workload`` returns once the workload's operations
have ended; ``awaiting_convergence`` (any number of times, after the settle phase) says,
without acting or journaling, whether the ``convergence`` checker listed for this run would
find the cluster unconverged now. The driver calls each of the others exactly once, in the
order above, unless one raises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.model import Phases


class PhaseHost(Protocol):
    @property
    def now(self) -> float: ...

    def record(self, type: str, **fields: object) -> None: ...  # noqa: A002 - the journal's field name

    async def sleep(self, seconds: float) -> None: ...

    async def start(self) -> None: ...

    async def steady_state(self) -> Verdict: ...

    async def prepare_workload(self) -> None: ...

    async def booted(self) -> Phases | None: ...

    async def start_workload(self) -> None: ...

    async def start_faults(self) -> None: ...

    async def heal_all(self) -> None: ...

    async def stop_workload(self) -> None: ...

    def awaiting_convergence(self) -> bool: ...


@dataclass
class PhaseRecord:
    """What the phases observed: when each began, the steady state before the faults and
    after heal, and how long it took to return."""

    phases: dict[str, float] = field(default_factory=dict)
    before: Verdict | None = None
    after: Verdict | None = None
    recovery_s: float | None = None

    def steady_state_verdict(self, recovery_deadline_s: float) -> Verdict:
        """The ``steady-state`` checker: it held before the faults and returned within
        ``recovery_deadline_s`` of heal; unknown when the run ended before both probes."""
        before, after = self.before, self.after
        if before is None or after is None:
            return Verdict(None, "the run ended before the steady state was probed twice")
        if before.valid is not True:
            return Verdict(False, f"steady state did not hold before the faults: {before.reason}", before.evidence)
        if after.valid is not True:
            return Verdict(False, f"steady state not back within {recovery_deadline_s:g} s of heal: {after.reason}", after.evidence)
        assert self.recovery_s is not None
        return Verdict(True, f"held before the faults and returned {self.recovery_s:.3f} s after heal", details={"recovery_s": round(self.recovery_s, 6)})

    def metrics(self) -> dict[str, float]:
        return {"recovery_s": round(self.recovery_s, 6)} if self.recovery_s is not None else {}


#: How often the driver asks, past the settle phase, whether the run has converged.
CONVERGENCE_POLL_S = 1.0

#: What a run spends after ``settle`` until ``check``: stopping the workload (its operations
#: end within their timeouts), as the progress line plans it.
STOP_ALLOWANCE_S = 2.0


def planned_end_s(phases: Phases, boundary: str, now: float) -> float:
    """When the run is planned to reach ``check``, as known at ``boundary`` reached at
    ``now``: the phases still ahead, the recovery wait at its deadline (``recovery_s``) until
    the steady state is back, and :data:`STOP_ALLOWANCE_S`. The boot (``setup`` to
    ``workload``) takes what it takes, so the plan is made again at every boundary (issue
    32: a fixed plan of warm-up + faults + settle + 2 s read "100% (45.0 of 39.0 s
    planned)"); at ``check`` it is ``now``."""
    ahead = {
        "setup": phases.warmup_s + phases.faults_s + phases.recovery_s + phases.settle_s + STOP_ALLOWANCE_S,
        "workload": phases.warmup_s + phases.faults_s + phases.recovery_s + phases.settle_s + STOP_ALLOWANCE_S,
        "faults": phases.faults_s + phases.recovery_s + phases.settle_s + STOP_ALLOWANCE_S,
        "heal": phases.recovery_s + phases.settle_s + STOP_ALLOWANCE_S,
        "recovered": phases.settle_s + STOP_ALLOWANCE_S,
        "recovery-deadline": phases.settle_s + STOP_ALLOWANCE_S,
        # at most until the recovery deadline: the steady state came back at the heal at
        # the earliest, and the settle phase has passed since
        "convergence-wait": max(0.0, phases.recovery_s - phases.settle_s) + STOP_ALLOWANCE_S,
        "stop-workload": STOP_ALLOWANCE_S,
        "check": 0.0,
    }
    return now + ahead[boundary]


async def drive_phases(host: PhaseHost, phases: Phases, record: PhaseRecord, *, poll_s: tuple[float, float], plan: Callable[[float], None] | None = None) -> None:
    """Run the phases on ``host``, filling ``record`` as they pass. ``poll_s``: the
    (shortest, longest) wait between two steady-state probes. ``plan``: told the planned
    end (:func:`planned_end_s`) at every boundary, for a progress line."""

    def mark(name: str) -> None:
        record.phases[name] = round(host.now, 6)
        host.record("phase", name=name)
        if plan is not None:
            plan(planned_end_s(phases, name, host.now))

    mark("setup")
    await host.start()
    record.before = await wait_steady_state(host, phases.setup_s, poll_s)
    mark("workload")
    await host.prepare_workload()
    phases = await host.booted() or phases
    await host.start_workload()
    await host.sleep(phases.warmup_s)
    mark("faults")
    await host.start_faults()
    await host.sleep(phases.faults_s)
    mark("heal")
    await host.heal_all()
    healed_at = host.now
    record.after = await wait_steady_state(host, phases.recovery_s, poll_s)
    record.recovery_s = host.now - healed_at
    mark("recovered" if record.after.valid else "recovery-deadline")
    await host.sleep(phases.settle_s)
    deadline = healed_at + phases.recovery_s
    if host.now < deadline and host.awaiting_convergence():
        mark("convergence-wait")
        while host.now < deadline and host.awaiting_convergence():
            await host.sleep(min(CONVERGENCE_POLL_S, deadline - host.now))
    mark("stop-workload")
    await host.stop_workload()
    mark("check")


async def wait_steady_state(host: PhaseHost, within_s: float, poll_s: tuple[float, float]) -> Verdict:
    """Probe the steady state until it holds or ``within_s`` has passed."""
    shortest, longest = poll_s
    deadline = host.now + within_s
    while True:
        verdict = await host.steady_state()
        if verdict.valid or host.now >= deadline:
            return verdict
        await host.sleep(max(shortest, min(longest, deadline - host.now)))

"""The phase driver (experiments/phases.py) on a host made by hand: the wait for a
conclusive convergence verdict after the settle phase (swarm seed 101's false alarm: the
run ended 30 s after the heal, unconverged, 90 s before the convergence deadline)."""

from __future__ import annotations

import pytest
import trio

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.model import Phases
from chaoskube.experiments.phases import CONVERGENCE_POLL_S, PhaseRecord, drive_phases, planned_end_s


class Host:
    """A phase host on trio's clock, which starts at 0: the steady state holds but for
    ``steady_after`` s after the heal (inf: never again), the store converges ``converges_after``
    s after it (None: never); it counts the convergence asks."""

    def __init__(self, *, steady_after: float, converges_after: float | None) -> None:
        self.steady_at = 0.0
        self.steady_after = steady_after
        self.converges_at = None if converges_after is None else HEAL + converges_after
        self.journal: list[tuple[float, str, dict]] = []
        self.asks = 0

    @property
    def now(self) -> float:
        return trio.current_time()

    def record(self, type, **fields):  # noqa: A002 - the journal's field name
        self.journal.append((self.now, type, fields))

    async def sleep(self, seconds):
        await trio.sleep(seconds)

    async def steady_state(self):
        return Verdict(True, "steady") if self.now >= self.steady_at else Verdict(False, "not yet")

    def awaiting_convergence(self):
        self.asks += 1
        return self.converges_at is None or self.now < self.converges_at

    async def start(self): ...
    async def prepare_workload(self): ...
    async def booted(self): return None
    async def start_workload(self): ...
    async def start_faults(self): ...
    async def heal_all(self):
        assert self.now == HEAL
        self.steady_at = HEAL + self.steady_after
    async def stop_workload(self): ...


PHASES = Phases(setup_s=30, warmup_s=5, faults_s=110, recovery_s=120, settle_s=30)
HEAL = 115.0  # warm-up + faults (the steady state holds at once at setup)


def drive(host: Host) -> PhaseRecord:
    record = PhaseRecord()

    async def main():
        await drive_phases(host, PHASES, record, poll_s=(0.5, 2.0))

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return record


def test_a_run_converged_when_it_settles_ends_then_and_asks_once():
    host = Host(steady_after=0, converges_after=10)
    record = drive(host)
    assert list(record.phases) == ["setup", "workload", "faults", "heal", "recovered", "stop-workload", "check"]
    assert record.phases["stop-workload"] == pytest.approx(HEAL + PHASES.settle_s)
    assert host.asks == 1


def test_a_run_unconverged_when_it_settles_waits_until_it_converges():
    """Swarm seed 101: steady at the heal, converged 44 s after it (two kubelets' pod
    reflectors backed off 44 and 49 s after a 410): the run goes on past its settle phase
    until then, so convergence judges a converged store, not an unknown one."""
    host = Host(steady_after=0, converges_after=43.99)
    record = drive(host)
    assert record.phases["convergence-wait"] == pytest.approx(HEAL + PHASES.settle_s)
    assert HEAL + 43.99 <= record.phases["stop-workload"] < HEAL + 43.99 + CONVERGENCE_POLL_S
    assert [fields["name"] for _, kind, fields in host.journal if kind == "phase"][-3:] == ["convergence-wait", "stop-workload", "check"]


def test_a_run_that_never_converges_ends_at_the_convergence_deadline():
    host = Host(steady_after=0, converges_after=None)
    record = drive(host)
    assert record.phases["stop-workload"] == pytest.approx(HEAL + PHASES.recovery_s)


def test_a_run_past_the_deadline_when_it_settles_does_not_wait():
    """The steady state never came back: the recovery phase ran to its deadline, the
    settle phase after it, so the journal already reaches past convergence's deadline."""
    host = Host(steady_after=float("inf"), converges_after=None)
    record = drive(host)
    assert "recovery-deadline" in record.phases and "convergence-wait" not in record.phases
    assert record.phases["stop-workload"] == pytest.approx(HEAL + PHASES.recovery_s + PHASES.settle_s)
    assert host.asks == 0


def test_the_plan_at_the_wait_reaches_no_further_than_the_deadline():
    planned = planned_end_s(PHASES, "convergence-wait", HEAL + PHASES.settle_s)
    assert planned == pytest.approx(HEAL + PHASES.recovery_s + 2.0)

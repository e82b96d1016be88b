"""What the runner needs from a system under test.

A system builds its processes in a world, runs a workload, answers a steady-state probe,
tells the fault injector who is who (roles, zones, leaders) and, if it has an API, who
performs API-level faults (:meth:`System.admin`), and judges the run with named
checkers that are pure functions of the journal and the recorded history.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from chaoskube.checkers.verdict import Verdict
from chaoskube.experiments.model import convert_options
from chaoskube.experiments.probes import Probe, ProbeRunner, SteadyStateHypothesis
from chaoskube.faults import Context, ProcessInfo
from chaoskube.faults.kinds import Admin
from chaoskube.sim import World


class System:
    name: ClassVar[str]
    Cluster: ClassVar[type[msgspec.Struct]]
    Workload: ClassVar[type[msgspec.Struct]]
    CHECKERS: ClassVar[dict[str, str]]  # checker name -> what it verifies (one line)
    #: Roles whose group elects a leader the system can name (``leader:ROLE`` targets).
    LEADER_ROLES: ClassVar[frozenset[str]] = frozenset()
    #: The chaoskube packages whose code the run exercises: a gallery variant
    #: (chaoskube/gallery.py) that patches anything else would change nothing in the run,
    #: so ``--broken`` refuses it. None: any (a system that runs the user's own code).
    RUNS: ClassVar[tuple[str, ...] | None] = ()
    #: The fault kinds a schedule of this system may use (None: every kind of
    #: faults/kinds.py); checked when the file loads.
    FAULT_KINDS: ClassVar[frozenset[str] | None] = None
    #: Whether experiment files of this system may have ``probes`` and a ``steady_state``
    #: hypothesis (experiments/probes.py): they need an API and Services to probe.
    PROBES: ClassVar[bool] = False

    def __init__(self, world: World, cluster: Any, workload: Any) -> None:
        self.world = world
        self.cluster = cluster
        self.workload = workload

    @classmethod
    def options(cls, cluster: dict[str, Any], workload: dict[str, Any], *, base_dir: Path | None = None) -> tuple[Any, Any]:
        """Typed options. ``base_dir``: the experiment file's directory, against which a
        system resolves the files its options name (workload manifests)."""
        return convert_options(cluster, cls.Cluster, "cluster"), convert_options(workload, cls.Workload, "workload")

    @classmethod
    def validate(cls, cluster: dict[str, Any], workload: dict[str, Any]) -> None:
        cls.options(cluster, workload)

    @classmethod
    def process_infos(cls, cluster: Any, workload: Any) -> list[ProcessInfo] | None:
        """Every process the system will run, with its role and zone (what fault targets
        can match, checked before the run), or None when they are not known before it."""
        return None

    @classmethod
    def leader_gap_s(cls, cluster: Any) -> dict[str, float]:
        """For each role of :attr:`LEADER_ROLES`: how long its group may be without a
        leader after the leader is disrupted (killed, paused, cut off), by its election
        timers -- a ``leader:ROLE`` fault sooner than that after another may find none
        (explore --guided keeps its mutants out of that window, mutation.py)."""
        return {}

    @classmethod
    def process_names(cls, cluster: Any, workload: Any) -> list[str] | None:
        """The names of :meth:`process_infos`, or None."""
        infos = cls.process_infos(cluster, workload)
        return None if infos is None else [info.name for info in infos]

    @classmethod
    def checkers(cls) -> dict[str, str]:
        return cls.CHECKERS

    # -- the run ----------------------------------------------------------------------------
    async def start(self) -> None:
        raise NotImplementedError

    async def prepare_workload(self) -> None:
        """Create what the workload needs and wait until it settles: part of the boot,
        the same for every run seed (docs/campaigns.md). Nothing by default."""

    async def start_workload(self) -> None:
        raise NotImplementedError

    async def stop_workload(self) -> None:
        raise NotImplementedError

    async def steady_state(self) -> Verdict:
        raise NotImplementedError

    def leader_of(self, role: str) -> str | None:
        return None

    def admin(self) -> Admin | None:
        """The administrator that performs API-level faults (``drain``), if the system has
        an API; None by default (such faults are then skipped, with a reason)."""
        return None

    def context(self) -> Context:
        infos = [ProcessInfo(p.name, p.role, p.zone) for p in self.world.processes.values()]
        return Context(infos, self.leader_of, self.admin(), getattr(self, "workload_nodes", None))

    def check(self, name: str) -> Verdict:
        raise NotImplementedError

    def converged_now(self) -> bool | None:
        """Whether the ``convergence`` checker, judging the journal so far, would find the
        cluster converged now (None: it could not tell, or the system has no such checker).
        Reads the journal only: asking must not change the run."""
        return None

    def open_probes(self, probes: Sequence[Probe], hypothesis: SteadyStateHypothesis | None) -> ProbeRunner:
        """The runner of an experiment's probes (experiments/probes.py), once the system
        runs; only a system with ``PROBES = True`` has one (the loader refuses probes for
        the others)."""
        raise NotImplementedError(f"system {self.name!r} has no probes")

    def metrics(self) -> dict[str, Any]:
        return {}

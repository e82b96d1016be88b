"""The pdb-guard example under Hypothesis: a :class:`~chaoskube.testing.ClusterMachine`
that runs a user's controller next to the cluster and checks its promise after every step.

How a user adds their own controller process: override
:meth:`ClusterMachine.start_processes`, which the machine calls once per example inside the
simulation, after the cluster booted, and spawn the controller there with
``world.spawn(name, main, role=...)``. The process is part of the World: fault rules can
target it, the machine's ``heal_all`` (and the teardown) restarts it if a fault killed it,
and its role names it for the user's own fault rules.

:class:`PdbGuardMachine` adds:

- ``restart_guard``: a fault rule for the user's process (a rollout, an OOM kill, a node
  reboot of the controller's pod all look like this to the controller);
- ``guards_stay_while_deployments_live``: the controller's promise as an ``@invariant``
  (see :mod:`chaoskube.examples.pdb_guard`). It watches through the API, by uid: each
  time it sees a guard PodDisruptionBudget together with the Deployment whose uid it
  carries, it remembers the pair; if a later look finds that Deployment still there and
  that guard gone, the promise is broken. Nothing else in the cluster deletes PDBs (the
  machine's own rules never do, and guards carry no ownerReferences), so the only
  deleter is pdb-guard. A look that the API server refuses (under faults) checks nothing.

``PdbGuardMachine`` runs the controller as first written (``fixed=False``: its worker does
not wait for the Deployment cache); :class:`FixedPdbGuardMachine` runs the fixed one.
:class:`PdbGuardStories` keeps only the rules that reach the controller, for fast
shrinking (as ``EvictionStories`` does in tests/testing/test_machine.py).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from chaoskube.checkers.verdict import Verdict
from chaoskube.client.client import ApiError
from chaoskube.cluster import Cluster, ClusterSpec, NodeGroup
from chaoskube.examples.pdb_guard import DEPLOYMENT_UID_ANNOTATION, GUARD_FOR_LABEL, pdb_guard_main
from chaoskube.sim import World
from chaoskube.testing import ClusterMachine, focus, step

__all__ = ["FixedPdbGuardMachine", "GUARD_PROCESS", "PdbGuardMachine", "PdbGuardStories"]

GUARD_PROCESS = "pdb-guard"


class PdbGuardMachine(ClusterMachine):
    """The cluster, pdb-guard as a process of its own, a fault rule for it and its promise."""

    guard_fixed: bool | None = False  # the controller as first written (None: the class default)

    def __init__(self) -> None:
        super().__init__()
        self.guarded: dict[str, tuple[str, str]] = {}  # guard uid -> (guard name, Deployment uid)

    def start_processes(self, world: World, cluster: Cluster) -> None:
        main = pdb_guard_main(cluster.api_server_names, fixed=self.guard_fixed)
        world.spawn(GUARD_PROCESS, main, role="pdb-guard")

    @rule()
    @step
    def restart_guard(self) -> None:
        self.run_sync(self.world.processes[GUARD_PROCESS].restart)

    @precondition(lambda self: self.live is not None)
    @invariant()
    def guards_stay_while_deployments_live(self) -> None:
        seen = self.run(self._look)
        if seen is None:
            return  # the API server did not answer: nothing to judge now
        deployments, guards = seen
        for guard_uid, (guard_name, deployment_uid) in sorted(self.guarded.items()):
            if deployment_uid in deployments and guard_uid not in guards:
                reason = f"guard {guard_name} was deleted while deployment {deployments[deployment_uid]} (uid {deployment_uid}) exists"
                evidence = {"guard": guard_name, "guard_uid": guard_uid, "deployment_uid": deployment_uid}
                self.require("pdb-guard promise", Verdict(False, reason, (evidence,)))
        self.guarded = {uid: (name, owner) for uid, (name, owner) in guards.items() if owner in deployments}

    async def _look(self) -> tuple[dict[str, str], dict[str, tuple[str, str]]] | None:
        """Deployments by uid, and guards by uid -> (name, the Deployment uid they carry)."""
        try:
            deployments = await self.client.list("deployments", "default")
            pdbs = await self.client.list("poddisruptionbudgets", "default")
        except ApiError:
            return None
        live = {item.metadata.uid: item.metadata.name for item in deployments.items if item.metadata.deletion_timestamp is None}
        guards = {
            item.metadata.uid: (item.metadata.name, item.metadata.annotations.get(DEPLOYMENT_UID_ANNOTATION, ""))
            for item in pdbs.items
            if GUARD_FOR_LABEL in item.metadata.labels
        }
        return live, guards


class FixedPdbGuardMachine(PdbGuardMachine):
    guard_fixed = True


class PdbGuardStories(focus(PdbGuardMachine, "_PdbGuardFocus", rules=("create_deployment", "delete_deployment", "restart_guard"), invariants=("guards_stay_while_deployments_live",))):
    """Only the rules that reach pdb-guard — create and delete Deployments, restart the
    controller, wait — and only its invariant (:func:`~chaoskube.testing.focus`), on a
    cheaper cluster (one etcd member, two nodes), with the World seed drawn from 0..63:
    each seed is still a different task order, and the shrinker spends far fewer live
    clusters minimising a small integer. Finds and shrinks the bug in about a minute."""

    spec = ClusterSpec(etcd_members=1, api_servers=1, controller_managers=1, schedulers=1, node_groups=[NodeGroup(count=2, zones=["zone-a"])])

    @initialize(seed=st.integers(min_value=0, max_value=63))
    def boot(self, seed: int) -> None:
        super().boot(seed)

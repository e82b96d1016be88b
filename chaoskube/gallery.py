"""The gallery of deliberately broken components: each a named variant that the checkers
must catch.

Contract. :data:`VARIANTS` maps a name to a :class:`Variant`: the component it breaks, how
(one line), the checker expected to catch it, and the catalogue experiment that exercises
it. :func:`applied` is a context manager that patches the named variants into this
process (and undoes them on exit); an experiment names them in its ``broken`` field (or
``chaoskube run|explore --broken NAME``), and the runner applies them around the run, so
``chaoskube explore`` runs a broken build in every worker and ``chaoskube replay`` runs it
again. Each variant's patch is one function or method replaced by a copy with the bug.

Guarantees: :func:`applied` restores every patched attribute on exit, in reverse order,
even when the body raises; unknown names raise :class:`KeyError` listing the known ones.
Non-guarantees: patches are process-global (every World in the process sees them while
applied), so two runs with different variants must not share a process concurrently.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Variant:
    name: str
    component: str
    description: str
    caught_by: str  # the checker expected to answer False
    experiment: str  # a catalogue experiment that exercises the broken path
    target: str  # "module:Attribute.path" replaced while applied
    replacement: Callable[[], Any]  # builds the broken attribute (called when applied)


async def _skip_the_budget(self: Any, request: Any, pod: Any, pdb: Any) -> None:
    """ApiServer._spend_disruption that never spends (nor checks) the PDB's budget."""
    return None


def _never_valid(self: Any, now: float, config: Any) -> bool:
    """Observation.lease_valid that never sees a lease as unexpired."""
    return False


def _tolerate_everything() -> Any:
    from chaoskube.scheduler.framework import Status

    return lambda self, state, pod, node_info: Status()


def _no_full_disruption_stop() -> Any:
    """plan_disruption (``handleDisruption``) without the all-zones-fully-disrupted branch:
    every zone keeps its own state and limiter (FullDisruption: HealthyQPSFunc, the normal
    eviction rate), so a control plane cut off from every node taints them all NoExecute
    and the taint manager evicts every pod when its tolerationSeconds run out. Upstream
    stops all evictions there: pkg/controller/nodelifecycle/node_lifecycle_controller.go,
    ``handleDisruption`` ("Controller detected that all Nodes are not-Ready. Entering
    master disruption mode")."""
    from chaoskube.controllers import nodelifecycle as nlc

    def plan(previous: dict[str, str], zone_ready: dict[str, list[str | None]], config: Any) -> Any:
        states = {zone: previous.get(zone, nlc.ZONE_INITIAL) for zone in sorted(zone_ready)}
        new_states = {zone: nlc.compute_zone_state(zone_ready[zone], config.unhealthy_zone_threshold)[1] for zone in sorted(zone_ready)}
        limiters: dict[str, float] = {}
        changes = []
        for zone in states:
            if states[zone] == new_states[zone]:
                continue
            qps = nlc.limiter_qps(new_states[zone], len(zone_ready[zone]), config)
            if qps is not None:
                limiters[zone] = qps
            changes.append((zone, new_states[zone]))
        return nlc.DisruptionPlan("zones", new_states, limiters, changes)

    return plan


def _admit_on_error() -> Any:
    from chaoskube.apiserver.webhooks import WebhookResult

    return lambda self, phase, relevant, replies: WebhookResult(True, phase.request.object)


VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in (
        Variant(
            "eviction-skips-pdb", "kube-apiserver", "the Eviction API never checks (nor spends) the pod's PodDisruptionBudget",
            "pdb-eviction", "node-drain-with-pdb", "chaoskube.apiserver.server:ApiServer._spend_disruption", lambda: _skip_the_budget,
        ),
        Variant(
            "leader-election-no-expiry", "client-go leader election", "a candidate treats every lease held by another as expired, so it takes it over at once",
            "leader-election", "controller-manager-leader-kill", "chaoskube.client.leaderelection:Observation.lease_valid", lambda: _never_valid,
        ),
        Variant(
            "scheduler-ignores-taints", "kube-scheduler", "the TaintToleration filter admits every node",
            "scheduling", "scheduler-leader-failover", "chaoskube.scheduler.plugins:TaintToleration.filter", _tolerate_everything,
        ),
        Variant(
            "webhook-ignores-failure-policy", "kube-apiserver admission", "a validating webhook call that errs admits the object whatever its failurePolicy",
            "admission", "webhook-latency-fail-closed", "chaoskube.apiserver.webhooks:WebhookDispatcher._verdict", _admit_on_error,
        ),
        Variant(
            "node-controller-no-full-disruption-stop", "kube-controller-manager node lifecycle", "when every zone is fully disrupted the node controller keeps tainting and evicting instead of entering master disruption mode",
            "no-mass-eviction", "control-plane-partition", "chaoskube.controllers.nodelifecycle:plan_disruption", _no_full_disruption_stop,
        ),
        Variant(
            "broken-raft", "etcd Raft", "members grant votes and pre-votes without the up-to-date log check of Raft section 5.4.1, so a lagging member can win and overwrite committed entries",
            "raft-safety", "etcd-leader-kill", "chaoskube.etcd.raft:Raft._candidate_log_ok", lambda: _grant_any_vote(),
        ),
        Variant(
            "example-controller-unsynced-cache", "pdb-guard (chaoskube/examples)", "the example controller's worker starts before its Deployment cache has synced and trusts it, so after a restart it deletes the guard PDBs of live Deployments",
            "pdb-guard promise", "", "chaoskube.examples.pdb_guard:PdbGuard.fixed", lambda: False,
        ),
    )
}


# Issue 19: security boundaries and the control plane's timing and decision contracts,
# kept in their own module (chaoskube/gallery_contracts.py) and registered here.
def _register_contract_variants() -> None:
    from chaoskube.gallery_contracts import CONTRACT_VARIANTS

    for fields in CONTRACT_VARIANTS:
        assert fields["name"] not in VARIANTS, fields["name"]
        VARIANTS[fields["name"]] = Variant(**fields)


_register_contract_variants()


def _resolve(target: str) -> tuple[Any, str]:
    module_name, _, path = target.partition(":")
    owner: Any = importlib.import_module(module_name)
    *parents, attribute = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, attribute


def check(names: Sequence[str]) -> None:
    """Raise KeyError (one line, with the known names) for a name not in the gallery."""
    for name in names:
        if name not in VARIANTS:
            raise KeyError(f"unknown broken variant {name!r}; known: {', '.join(sorted(VARIANTS))}")


@contextlib.contextmanager
def applied(names: Sequence[str]) -> Iterator[None]:
    """Patch the named variants in for the duration of the block."""
    check(names)
    undo: list[tuple[Any, str, Any]] = []
    try:
        for name in names:
            variant = VARIANTS[name]
            owner, attribute = _resolve(variant.target)
            undo.append((owner, attribute, owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)))
            setattr(owner, attribute, variant.replacement())
        yield
    finally:
        for owner, attribute, original in reversed(undo):
            setattr(owner, attribute, original)


def _grant_any_vote() -> Any:
    """Raft._candidate_log_ok of etcd/raft_broken.py's VoteWithoutLogCheck."""
    from chaoskube.etcd.raft_broken import VoteWithoutLogCheck

    return VoteWithoutLogCheck._candidate_log_ok

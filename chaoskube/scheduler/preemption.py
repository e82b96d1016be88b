"""DefaultPreemption: the PostFilter that makes room for a pod by evicting lower-priority
pods, as kube-scheduler's ``framework/plugins/defaultpreemption/default_preemption.go``
and ``framework/preemption/preemption.go`` (``Evaluator.Preempt``).

The pure part (:meth:`DefaultPreemption.post_filter`), step by step as upstream:

1. The preemptor must be eligible (``PodEligibleToPreemptOthers``): not
   ``preemptionPolicy: Never`` ("not eligible due to preemptionPolicy=Never."), and no
   lower-priority pod it already preempted still terminating on its nominated node
   ("not eligible due to a terminating pod on the nominated node.").
2. Candidates are the nodes whose filter status was Unschedulable (an
   UnschedulableAndUnresolvable node cannot be helped). On each, from a random offset,
   ``SelectVictimsOnNode``: remove every pod of lower priority; if the pod still does not
   fit, the node is no candidate; else put pods back, most important first — those whose
   eviction would violate a PodDisruptionBudget first — and keep as victims the ones
   that do not fit back. The search stops once it has a candidate without PDB violations
   and ``max(10 % of the nodes, 100)`` candidates in all (``DefaultPreemptionArgs``
   ``minCandidateNodesPercentage`` 10, ``minCandidateNodesAbsolute`` 100).
3. No candidate: the answer is Unschedulable with a FitError message over the candidates'
   statuses, the other nodes counting as "Preemption is not helpful for scheduling", and
   the pod's nomination is cleared.
4. ``pickOneNodeForPreemption``: fewest PDB violations; lowest highest-priority victim;
   smallest sum of priorities; fewest victims; latest start of the highest-priority
   victims; then the first candidate found.

Messages get the "preemption: " prefix (``DefaultPreemption.PostFilter``).

The effects (:func:`prepare_candidate`, upstream's ``prepareCandidate`` with the
``PreemptPod`` of ``NewEvaluator``): each victim not already terminating gets the
``DisruptionTarget`` condition (reason ``PreemptionByScheduler``, message "<scheduler>:
preempting to accommodate a higher priority pod") and is then deleted directly (not
evicted: PDBs were weighed above, not enforced), and lower-priority pods nominated to
the node lose their nomination. Victims are deleted with their default grace period; the
preemptor waits for them to be gone.

PDB arithmetic is upstream's ``filterPodsWithPDBViolation``: a PDB in the pod's namespace
whose (non-empty) selector matches it, unless the pod is already in its
``status.disruptedPods``, uses up one of its ``disruptionsAllowed``; going below zero is a
violation.

Non-guarantees: preemption runs synchronously in the scheduling cycle (no
``SchedulerAsyncPreemption``); no extenders; pods waiting on Permit are not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from chaoskube.api.objects import Pod, PodCondition, PodDisruptionBudget, matches
from chaoskube.api.protocol import parse_timestamp, timestamp
from chaoskube.client.client import ApiError
from chaoskube.scheduler.framework import (
    SUCCESS,
    Code,
    CycleState,
    Diagnosis,
    FitError,
    Framework,
    NodeInfo,
    NodeToStatus,
    NominatingInfo,
    PodInfo,
    PostFilterResult,
    Status,
    pod_key,
    pod_priority,
)

__all__ = [
    "Candidate",
    "DISRUPTION_TARGET",
    "DefaultPreemption",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "calculate_num_candidates",
    "conditions_with",
    "filter_pods_with_pdb_violation",
    "more_important_pod",
    "pick_one_node_for_preemption",
    "pod_start_time",
    "pod_terminating_by_preemption",
    "prepare_candidate",
]

#: ``DefaultPreemptionArgs`` defaults (``apis/config/v1/defaults.go``).
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
#: ``v1.DisruptionTarget`` / ``v1.PodReasonPreemptionByScheduler``.
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
_INT32_OFFSET = 2**31  # math.MaxInt32 + 1: keeps every priority non-negative in the sum


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node and the victims to evict there (upstream ``candidate`` with
    ``extenderv1.Victims``); victims are ordered most important first."""

    node_name: str
    victims: tuple[Pod, ...]
    num_pdb_violations: int


def pod_start_time(pod: Pod, now: float) -> float:
    """``util.GetPodStartTime``: ``status.startTime``, or now for a pod not started."""
    return parse_timestamp(pod.status.start_time) if pod.status.start_time else now


def more_important_pod(pod: Pod, now: float) -> tuple[int, float]:
    """A sort key for ``util.MoreImportantPod``: higher priority first, then the pod that
    started earlier (it has run longer)."""
    return (-pod_priority(pod), pod_start_time(pod, now))


def calculate_num_candidates(num_nodes: int) -> int:
    """``calculateNumCandidates``: 10 % of the nodes, at least 100, at most all."""
    number = num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(number, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


def _pdb_selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    if pdb.metadata.namespace != pod.metadata.namespace or not pod.metadata.labels:
        return False
    selector = pdb.spec.selector
    if selector is None or (not selector.match_labels and not selector.match_expressions):
        return False  # a PDB with a nil or empty selector matches nothing
    return matches(selector, pod.metadata.labels)


def filter_pods_with_pdb_violation(pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), each in input order."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pods:
        violated = False
        for index, pdb in enumerate(pdbs):
            if not _pdb_selects(pdb, info.pod) or info.pod.metadata.name in pdb.status.disrupted_pods:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating


def _earliest_start_of_highest_priority(victims: Sequence[Pod], now: float) -> float:
    """``util.GetEarliestPodStartTime``."""
    highest = pod_priority(victims[0])
    earliest = pod_start_time(victims[0], now)
    for pod in victims:
        priority = pod_priority(pod)
        if priority == highest:
            earliest = min(earliest, pod_start_time(pod, now))
        elif priority > highest:
            highest, earliest = priority, pod_start_time(pod, now)
    return earliest


def pick_one_node_for_preemption(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """``pickOneNodeForPreemption``: each criterion keeps the best-scoring candidates;
    a single survivor wins; otherwise the first of the last survivors."""
    if not candidates:
        return None
    criteria = (
        lambda c: -c.num_pdb_violations,
        lambda c: -pod_priority(c.victims[0]),
        lambda c: -sum(pod_priority(p) + _INT32_OFFSET for p in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_highest_priority(c.victims, now),
    )
    survivors = list(candidates)
    for criterion in criteria:
        best = -math.inf
        selected: list[Candidate] = []
        for candidate in survivors:
            score = criterion(candidate)
            if score > best:
                best, selected = score, [candidate]
            elif score == best:
                selected.append(candidate)
        if len(selected) == 1:
            return selected[0]
        survivors = selected
    return survivors[0]


def pod_terminating_by_preemption(pod: Pod) -> bool:
    """``podTerminatingByPreemption``: being deleted, with DisruptionTarget True for
    PreemptionByScheduler."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == REASON_PREEMPTION_BY_SCHEDULER
    return False


class DefaultPreemption:
    """The PostFilter plugin; see the module docstring. Needs the framework (to run
    filters on what-if node states) and its handle (snapshot, PDBs, the informer's view
    of the pod, nominations, time and the seeded generator)."""

    name = "DefaultPreemption"

    def __init__(self) -> None:
        self.framework: Framework | None = None

    def attach(self, framework: Framework) -> None:
        self.framework = framework

    # -- the extension point ------------------------------------------------------------
    def post_filter(self, state: CycleState, pod: Pod, statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, statuses)
        if status.message:
            return result, Status(status.code, (f"preemption: {status.message}",))
        return result, status

    def preempt(self, state: CycleState, pod: Pod, statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """``Evaluator.Preempt``."""
        framework = self.framework
        assert framework is not None and framework.handle is not None, "DefaultPreemption needs a framework with a handle"
        handle = framework.handle
        latest = handle.get_pod(pod_key(pod))
        if latest is None:
            return None, Status.error(f'pods "{pod.metadata.name}" not found')
        pod = latest
        eligible, why = self.pod_eligible_to_preempt_others(pod, statuses.get(pod.status.nominated_node_name))
        if not eligible:
            return None, Status.of(Code.UNSCHEDULABLE, why)
        snapshot = handle.snapshot()
        all_nodes = snapshot.list()
        if not all_nodes:
            return None, Status.error("no nodes available")
        candidates, node_statuses, errors = self.find_candidates(state, pod, statuses)
        if errors and not candidates:
            return None, Status.error(errors[0])
        if not candidates:
            diagnosis = Diagnosis(NodeToStatus(node_statuses, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)))
            fit_error = FitError(pod, len(all_nodes), diagnosis)
            return PostFilterResult(NominatingInfo("", override=True)), Status.of(Code.UNSCHEDULABLE, fit_error.message())
        best = pick_one_node_for_preemption(candidates, handle.now())
        if best is None:
            return None, Status.of(Code.UNSCHEDULABLE, "no candidate node for preemption")
        return PostFilterResult(NominatingInfo(best.node_name, override=True), best.victims), SUCCESS

    # -- steps ----------------------------------------------------------------------------
    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_status: Status) -> tuple[bool, str]:
        """``PodEligibleToPreemptOthers``."""
        if pod.spec.preemption_policy == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.status.nominated_node_name
        if not nominated:
            return True, ""
        if nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        assert self.framework is not None and self.framework.handle is not None
        info = self.framework.handle.snapshot().get(nominated)
        if info is not None:
            for other in info.pods:
                if pod_priority(other.pod) < pod_priority(pod) and pod_terminating_by_preemption(other.pod):
                    return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def find_candidates(self, state: CycleState, pod: Pod, statuses: NodeToStatus) -> tuple[list[Candidate], dict[str, Status], list[str]]:
        """``findCandidates`` + ``DryRunPreemption``: candidates without PDB violations
        first; the statuses of the nodes that are no candidate; errors."""
        assert self.framework is not None and self.framework.handle is not None
        handle = self.framework.handle
        potential = statuses.nodes_for_code(handle.snapshot(), Code.UNSCHEDULABLE)
        if not potential:
            return [], {}, []
        pdbs = handle.pod_disruption_budgets()
        offset = handle.random().randrange(len(potential))
        wanted = calculate_num_candidates(len(potential))
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        errors: list[str] = []
        for index in range(len(potential)):
            info = potential[(offset + index) % len(potential)].clone()
            victims, violations, status = self.select_victims_on_node(state.clone(), pod, info, pdbs)
            if status.is_success() and victims:
                target = non_violating if violations == 0 else violating
                if len(target) < wanted:
                    target.append(Candidate(info.name, tuple(victims), violations))
                if non_violating and len(non_violating) + len(violating) >= wanted:
                    break
                continue
            if status.is_success():
                status = Status.error(f'expected at least one victim pod on node "{info.name}"')
            if status.code is Code.ERROR:
                errors.append(status.message)
            node_statuses[info.name] = status
        return non_violating + violating, node_statuses, errors

    def select_victims_on_node(self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[Pod], int, Status]:
        """``SelectVictimsOnNode`` on a copy of the node and of the cycle state."""
        framework = self.framework
        assert framework is not None and framework.handle is not None
        now = framework.handle.now()
        potential = [info for info in node_info.pods if pod_priority(info.pod) < pod_priority(pod)]
        for info in potential:
            node_info.remove_pod(info.key)
            status = framework.run_pre_filter_extension_remove_pod(state, pod, info, node_info)
            if not status.is_success():
                return [], 0, Status.error(status.message)
        if not potential:
            return [], 0, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        status = framework.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not status.is_success():
            return [], 0, status
        potential.sort(key=lambda info: more_important_pod(info.pod, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(info: PodInfo) -> bool:
            node_info.add_pod(info)
            framework.run_pre_filter_extension_add_pod(state, pod, info, node_info)
            fits = framework.run_filter_plugins_with_nominated_pods(state, pod, node_info).is_success()
            if not fits:
                node_info.remove_pod(info.key)
                framework.run_pre_filter_extension_remove_pod(state, pod, info, node_info)
                victims.append(info)
            return fits

        num_violating = sum(1 for info in violating if not reprieve(info))
        for info in non_violating:
            reprieve(info)
        if violating and non_violating:
            victims.sort(key=lambda info: more_important_pod(info.pod, now))
        return [info.pod for info in victims], num_violating, SUCCESS


# =========================================================================== effects
def conditions_with(pod: Pod, condition: PodCondition) -> list[dict[str, Any]]:
    """The pod's conditions as JSON, with ``condition`` replacing the one of its type (a
    JSON merge patch replaces the whole list)."""
    kept = [c for c in pod.status.conditions if c.type != condition.type]
    return [msgspec.to_builtins(c) for c in [*kept, condition]]


async def prepare_candidate(
    client: Any,
    preemptor: Pod,
    candidate_node: str,
    victims: Sequence[Pod],
    lower_priority_nominated: Sequence[Pod],
    *,
    scheduler_name: str,
    now: float,
    record: Any,
) -> Status:
    """``prepareCandidate``: mark and delete each victim (a 404 means it is already gone),
    then clear the nomination of lower-priority pods nominated to the node. ``record``
    journals each preemption. The first API error (other than 404) fails it."""
    message = f"{scheduler_name}: preempting to accommodate a higher priority pod"
    for victim in victims:
        if victim.metadata.deletion_timestamp is not None:
            continue  # graceful deletion already started
        condition = PodCondition(
            type=DISRUPTION_TARGET, status="True", reason=REASON_PREEMPTION_BY_SCHEDULER, message=message,
            last_transition_time=timestamp(now),
        )
        namespace, name = victim.metadata.namespace, victim.metadata.name
        try:
            await client.patch("pods", namespace, name, {"status": {"conditions": conditions_with(victim, condition)}}, subresource="status")
            await client.delete("pods", namespace, name)
        except ApiError as error:
            if error.code == 404:
                continue
            return Status.error(str(error))
        record(victim, candidate_node)
    for other in lower_priority_nominated:
        if pod_priority(other) >= pod_priority(preemptor) or not other.status.nominated_node_name:
            continue
        try:
            await client.patch("pods", other.metadata.namespace, other.metadata.name, {"status": {"nominatedNodeName": None}}, subresource="status")
        except ApiError:
            pass  # "We do not return as this error is not critical."
    return SUCCESS

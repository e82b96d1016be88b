"""Kubernetes under faults: a whole simulated cluster, a workload, probes and the checkers.

Cluster options: the fields of :class:`chaoskube.cluster.ClusterSpec`, spelt as in its YAML
(camelCase: ``etcdMembers``, ``apiServers``, ``controllerManagers``, ``schedulers``,
``nodeGroups``, ``webhooks``, ``timings``), read with :func:`~chaoskube.cluster.load_cluster_spec`
so a bad one fails in one line naming the field (``field `cluster.nodeGroups[0].count`: ...``).

Workload options (:class:`KubernetesWorkload`):

- ``manifests``: Kubernetes YAML/JSON files (or directories of them) applied in order, as
  ``kubectl create -f`` would; a relative path is looked up next to the experiment file,
  then in ``experiments/workloads/``. Every file is loaded when the experiment is, so a
  missing or malformed one is a one-line error (exit code 2) before anything runs.
- ``deployments``: built-in Deployments ``{name, replicas, cpu, pdb_min_available?,
  service?}``: the Deployment (label ``app=<name>``, one ``nginx`` container requesting
  ``cpu``), a PodDisruptionBudget with ``minAvailable`` when given, a Service on port 80
  when ``service`` is true.
- ``traffic``: one :class:`~chaoskube.node.proxy.TrafficProbe` per Service of the workload,
  every ``traffic_every_s``, through the kube-proxy rule table of the first running node
  (as a client on that node sees the Service), sent from the process ``traffic`` (role
  ``traffic``, no zone: the observer stays out of every fault domain; a partition of
  ``role:node`` from the control plane does not cut it off from the pods);
  ``max_outage_s`` bounds the ``service-availability`` checker, ``error_budget`` (default
  1 %) is the share of a Service's requests that may fail with nothing to explain them,
  and ``expected_failures`` (``[{from_s, to_s}]``, seconds from the start of the fault
  phase) are windows whose failures are not charged to it.
- ``converge_s``: how long :meth:`KubernetesSystem.prepare_workload` waits for the workload
  to reach its steady state before the warm-up (the faults begin from a converged cluster).
- ``steps``: administrator actions :class:`WorkloadStep` ``{after_s, action, deployment?,
  replicas?, node?}``, run by ``kubectl`` ``after_s`` after the workload converged (so
  ``after_s = phases.warmup_s + x`` lands ``x`` into the fault phase): ``rollout``
  (``kubectl rollout restart``: the pod template's ``kubectl.kubernetes.io/restartedAt``
  annotation, ``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/objectrestarter.go``),
  ``scale`` (``spec.replicas``), ``drain`` (``kubectl drain --ignore-daemonsets`` by
  :func:`chaoskube.node.kubelet.drain`, of ``node`` or else of the node holding most pods
  of ``deployment``, first by name on ties), ``uncordon``, ``copy-to-namespace`` (the ``deployment``'s ReplicaSets copied into
  ``to_namespace`` with their owner references, a user's mistake: :meth:`KubernetesSystem._copy_to_namespace`),
  ``delete-pod`` (``kubectl delete pod``
  of ``pod``, NAMESPACE/NAME: a graceful deletion), ``delete-claim`` (``kubectl delete pvc``
  of ``claim``, NAMESPACE/NAME: its volume reclaimed as its policy says) and ``delete`` (``kubectl delete
  --cascade=background|foreground|orphan``: the Deployment with ``propagation``
  Background, Foreground or Orphan; it leaves the steady state at once). Each is journaled
  as a ``workload-step`` event {action, target, outcome}; an API error ends that step only.
  A step is one shot, as a kubectl command; with ``retries`` (every ``retry_s``) it is run
  again while the API does not answer it (5xx, 429), as an operator would, and its record
  carries its ``attempts``.
  When the workload stops, every running informer's cache is journaled
  (:func:`chaoskube.client.informer.record_informer_caches`) for ``api-watch``.

Random nemesis: not a workload option. An experiment's top-level ``nemesis``
(:class:`chaoskube.faults.nemesis.NemesisSpec`) is injected by the runner with the run's own
FaultInjector, so its faults are in the run's fault table.

Fault context (:meth:`KubernetesSystem.context`): the processes, the leaders (below), and
an administrator (:class:`KubectlAdmin`, a :class:`chaoskube.faults.kinds.Admin`) that performs the
``drain`` fault as ``kubectl``: :func:`chaoskube.node.kubelet.drain` (journaled as ``drain``
events, each eviction attempt with its code) and ``kubectl uncordon`` on heal, retried
every :data:`UNCORDON_RETRY_S` up to :data:`UNCORDON_ATTEMPTS` times; each ends with a
``fault-action`` event {action, node, outcome}.

The run: :meth:`~KubernetesSystem.start` opens the cluster (every process of the spec) and
waits until every node is registered and Ready; :meth:`~KubernetesSystem.prepare_workload`
creates the workload's objects through the API (as the ``kubectl`` process, an
administrator) and waits for convergence -- all of that is the boot, the same for every
run seed (docs/campaigns.md) --; :meth:`~KubernetesSystem.start_workload` then starts the
traffic probes and the steps.

Steady state (:meth:`~KubernetesSystem.steady_state`), read through the API as ``kubectl``
would: every node of the spec is Ready; once the workload is created (the runner probes
once before, when only the nodes count, and ``steady-state`` also fails when the workload
did not converge within ``converge_s``), every Deployment of the workload has observed its
generation and has ``spec.replicas`` ready and available replicas (``kubectl rollout
status``: ``staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go``); every
Service of the workload with a selector has an EndpointSlice with a ready endpoint (the
``ready`` condition; unset means ready, ``discovery/v1`` ``EndpointConditions``).

Leaders (for ``leader:`` targets): ``etcd`` -> the member that leads the highest term;
``kube-controller-manager`` / ``kube-scheduler`` -> the process acting as leader of that
Lease by the journal (:meth:`chaoskube.cluster.Cluster.leader`); any other role -> None.

Checkers: ``steady-state``; ``leader-election`` (:mod:`chaoskube.checkers.leader_election`:
never two acting leaders of one Lease, no leaderless stretch over :data:`LEADER_GAP_S`
while a candidate ran); ``no-mass-eviction`` (the node lifecycle controller's taint-based
evictions took pods from fewer than :data:`MASS_EVICTION_FRACTION` of the nodes); and,
imported when they run, the cluster checkers of :data:`CLUSTER_CHECKERS`
(``pdb-eviction``, ``scheduling``, ``service-availability``, ``admission``,
``convergence``, and the detection-power checkers ``api-linearizability``, ``api-watch``,
``workload-invariants``, ``admission-timing``, ``garbage-collection``,
``graceful-termination``, ``differential``: docs/checkers.md) where their modules exist.
``differential`` compares with the runner's fault-free reference run (``self.reference``,
set by ``experiments/simulated.py``); without one it answers unknown.

Non-guarantees: the steady state is what the API reports (a Deployment's status and the
EndpointSlices trail the pods by the controllers' reaction time; a powered-off node's pods
read Ready until the node monitor grace period passes); the traffic probes run in one
observer process whatever the faults do to the node whose rules they read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
import trio

from chaoskube.api.manifests import ManifestError, from_dict, load_manifests
from chaoskube.api.objects import Object, custom_kinds
from chaoskube.checkers.availability import DEFAULT_ERROR_BUDGET
from chaoskube.checkers.leader_election import check_leader_election
from chaoskube.checkers.verdict import Verdict, run_checker, worst
from chaoskube.client.client import ApiClient, ApiError
from chaoskube.client.leaderelection import LeaderElectionConfig
from chaoskube.cluster import Cluster, ClusterSpec, ClusterSpecError, load_cluster_spec, open_cluster, planned_processes
from chaoskube.experiments.model import ExperimentError, convert_options, field_message
from chaoskube.experiments.probes import Probe, ProbeAccess, ProbeRunner, SteadyStateHypothesis
from chaoskube.experiments.systems.base import System
from chaoskube.faults import ProcessInfo
from chaoskube.node.proxy import SERVICE_NAME_LABEL, TrafficProbe
from chaoskube.sim import Process, World

#: Where a relative manifest path is looked up after the experiment file's directory.
WORKLOADS_DIR = Path(__file__).resolve().parents[1] / "workloads"
#: How long start() waits for every node to register and turn Ready (virtual seconds).
NODES_READY_WITHIN_S = 120.0
#: The ``kubectl`` client: a short deadline, so a probe answers within a few seconds.
PROBE_TIMEOUT_S = 2.0
PROBE_ATTEMPTS = 3
#: Creating the workload: attempts per object while the API answers 5xx / times out.
CREATE_ATTEMPTS = 10
CREATE_RETRY_S = 1.0
#: client-go leader election defaults (``tools/leaderelection/leaderelection.go``;
#: kube-controller-manager and kube-scheduler ``--leader-elect-lease-duration`` 15 s,
#: ``--leader-elect-retry-period`` 2 s, ``JitterFactor`` 1.2, so a candidate polls every 2 to
#: 4.4 s). After the holder dies, a candidate may first see its last renewal up to one poll
#: (4.4 s) later, takes the lease one lease duration (15 s) after that observation, at its
#: next poll (4.4 s more), plus the requests' latency (3 s allowed): a leaderless stretch
#: longer than this while a candidate runs is a liveness violation.
LEADER_GAP_S = 4.4 + 15.0 + 4.4 + 3.0
#: kube-controller-manager's ``--unhealthy-zone-threshold`` default (0.55): taint-based
#: evictions from at least this fraction of the cluster's nodes are a mass eviction.
MASS_EVICTION_FRACTION = 0.55
NGINX_IMAGE = "nginx:1.27"

#: The cluster checkers: name -> (module, function, what it verifies). Each is imported
#: when it runs (the module may not exist in this build: then the checker is not offered).
CLUSTER_CHECKERS: dict[str, tuple[str, str, str]] = {
    "pdb-eviction": ("chaoskube.checkers.eviction", "check_pdb_eviction", "no voluntary disruption (eviction, drain, preemption) took a PodDisruptionBudget below desiredHealthy"),
    "scheduling": ("chaoskube.checkers.scheduling", "check_scheduling", "every binding respects resources, taints, node affinity; one node per pod"),
    "service-availability": ("chaoskube.checkers.availability", "check_service_availability", "the traffic probes saw no Service outage longer than the workload's max_outage_s"),
    "admission": ("chaoskube.checkers.admission", "check_admission", "every object stored passed the admission webhooks that applied to it, per their failurePolicy"),
    "convergence": ("chaoskube.checkers.convergence", "check_convergence", "after heal, the store shows every Deployment at its spec and every pod on a Ready node by the end of the run"),
    # Detection power (docs/checkers.md): what the API's clients saw, the workloads, the
    # webhooks' timing, garbage collection, termination, and a fault-free reference run.
    "api-linearizability": ("chaoskube.checkers.api_linearizability", "check_api_linearizability", "every API client's requests, per object, linearizable against a model of the object store; lists and cached reads consistent with the store"),
    "api-watch": ("chaoskube.checkers.api_watch", "check_api_watch", "every informer's and outside client's watch events in resourceVersion order, without gaps (except after a 410) or duplicates, bookmarks never ahead; caches equal to the store"),
    "api-pagination": ("chaoskube.checkers.api_pagination", "check_api_pagination", "every page of a paginated list the HTTPS front served at its first page's revision (or 410 with a fresh continue token), its items the store's then"),
    "api-patch": ("chaoskube.checkers.api_patch", "check_api_patch", "every merge, JSON and strategic merge patch the HTTPS front served left what an independent model of RFC 7386, RFC 6902 and strategic merge patch makes of the object before"),
    "workload-invariants": ("chaoskube.checkers.workloads", "check_workload_invariants", "at every store change: rollouts within maxSurge/maxUnavailable (or explained by faults), no ReplicaSet over-creation, observedGeneration sound; exact counts at the end"),
    "admission-timing": ("chaoskube.checkers.admission_timing", "check_admission_timing", "every webhook call abandoned within timeoutSeconds + 1 s; a Fail call past its timeout never admits, an Ignore call never refuses"),
    "garbage-collection": ("chaoskube.checkers.garbage_collection", "check_garbage_collection", "no dependent collected while its owner exists; background dependents go within 60 s, orphans stay, foreground owners wait for their blocking dependents"),
    "graceful-termination": ("chaoskube.checkers.termination", "check_graceful_termination", "a deleted pod's containers get SIGTERM and no SIGKILL before the grace period; its endpoints stop being ready within 10 s"),
    "differential": ("chaoskube.checkers.differential", "check_differential", "the end state equals a fault-free run's of the same experiment and seed, after normalization, but for differences the faults excuse"),
    # issue 19: security under faults (needs the workload's `tenants`)
    "timing-contracts": ("chaoskube.checkers.timing", "check_timing_contracts", "node monitor grace, NoExecute tolerationSeconds, zone eviction rates, termination grace periods and leader-election lease durations, each within its documented bound"),
    # issue 35: the application kinds' own guarantees
    "statefulset-invariants": ("chaoskube.checkers.statefulsets", "check_statefulset_invariants", "at most one running pod per StatefulSet identity (force deletions by users listed), OrderedReady creation and termination order, rolling updates one pod at a time from the highest ordinal within the partition, each pod's claims first"),
    "job-invariants": ("chaoskube.checkers.jobs", "check_job_invariants", "active pods within parallelism, succeeded within completions, each index once, every finished pod counted exactly once (finalizer tracking, across failovers), backoffLimit and activeDeadlineSeconds enforced within their bounds"),
    "cronjob-invariants": ("chaoskube.checkers.cronjobs", "check_cronjob_invariants", "each scheduled time started at most once and on its schedule (time zone, startingDeadlineSeconds), Forbid never running two, Replace never leaving two, no activation lost while a controller-manager leads, history limits kept"),
    "daemonset-invariants": ("chaoskube.checkers.daemonsets", "check_daemonset_invariants", "daemon pods never evicted for a node's not-ready / unreachable taints, never more than maxSurge nodes with two pods, exactly one pod per node that should run it at the end"),
    "namespace-invariants": ("chaoskube.checkers.namespaces", "check_namespace_invariants", "a namespace leaves the store only once empty, nothing is written into it after, nothing created in it once Terminating"),
    "crd-invariants": ("chaoskube.checkers.customresources", "check_crd_invariants", "every custom object stored at its CRD's storage version, pruned, defaulted and valid by an independent model of its structural schema, status only through /status, none written after its CRD was gone, no request handled at a version its CRD does not serve"),
    "quota-invariants": ("chaoskube.checkers.quotas", "check_quota_invariants", "usage of the objects admitted under an unscoped ResourceQuota, recomputed from the store, never above its spec.hard at any revision"),
    "volume-invariants": ("chaoskube.checkers.volumes", "check_volume_invariants", "no PersistentVolume bound to two claims nor a Bound claim's volume bound elsewhere, pods only where their volumes' node affinity allows, WaitForFirstConsumer claims bound at their selected node, released volumes never bound again and reclaimed as their policy says, no claim removed under a pod bound before its deletion"),
    "authorization": ("chaoskube.checkers.authorization", "check_authorization", "no adversarial tenant's forbidden attempt succeeded and no permitted one was refused, by an oracle of the RBAC, Node, NodeRestriction, NamespaceLifecycle and token rules over the policy in the store (cache lag bounded and reported)"),
}


def _available(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# =========================================================================== options
class DeploymentWorkload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A built-in Deployment of ``nginx`` pods (label ``app=<name>``)."""

    name: str
    replicas: int = 3
    cpu: str = "100m"
    pdb_min_available: int | None = None
    pdb_max_unavailable: int | None = None
    service: bool = False
    namespace: str = "default"  # another one is created first (a Namespace object)
    #: Part of the experiment's own setup (a webhook's backing pods), not of the workload
    #: under test: kept when ``--manifests`` replaces the workload.
    infrastructure: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.replicas <= 1000:
            raise ValueError(f"`replicas` must be between 0 and 1000, got {self.replicas}")
        if self.pdb_min_available is not None and not 0 <= self.pdb_min_available <= self.replicas:
            raise ValueError(f"`pdb_min_available` must be between 0 and `replicas` ({self.replicas}), got {self.pdb_min_available}")
        if self.pdb_max_unavailable is not None and not 0 <= self.pdb_max_unavailable <= self.replicas:
            raise ValueError(f"`pdb_max_unavailable` must be between 0 and `replicas` ({self.replicas}), got {self.pdb_max_unavailable}")
        if self.pdb_min_available is not None and self.pdb_max_unavailable is not None:
            raise ValueError("a PodDisruptionBudget has `minAvailable` or `maxUnavailable`, not both: give one of `pdb_min_available`, `pdb_max_unavailable`")

    def objects(self) -> list[Object]:
        """The Deployment, its PodDisruptionBudget and Service, as manifests would give them."""
        labels = {"app": self.name}
        container = {"name": "app", "image": NGINX_IMAGE, "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": self.cpu}}}
        meta = {"name": self.name, "namespace": self.namespace, "labels": labels}
        found = [] if self.namespace == "default" else [from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})]
        found += [from_dict({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
            "replicas": self.replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        }})]
        if self.pdb_min_available is not None or self.pdb_max_unavailable is not None:
            budget = {"minAvailable": self.pdb_min_available} if self.pdb_min_available is not None else {"maxUnavailable": self.pdb_max_unavailable}
            found.append(from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta, "spec": {
                **budget, "selector": {"matchLabels": labels},
            }}))
        if self.service:
            found.append(from_dict({"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {
                "selector": labels, "ports": [{"port": 80, "targetPort": 80}],
            }}))
        return found


class WorkloadStep(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """An administrator action during the run (module docstring, ``steps``). The target is
    a built-in ``deployment`` by name, or ``workload``: a selector of the workload's objects
    by role (:func:`select_workloads`), which is what the step means when ``--manifests``
    replaces the built-in Deployments."""

    after_s: float
    action: Literal["rollout", "scale", "drain", "uncordon", "delete", "delete-pod", "delete-claim", "copy-to-namespace"]
    deployment: str = ""
    workload: str = ""
    replicas: int | None = None
    by: int | None = None  # scale: add this many replicas to each selected workload
    node: str = ""
    propagation: Literal["Background", "Foreground", "Orphan"] = "Background"  # delete: kubectl delete --cascade
    pod: str = ""  # delete-pod: kubectl delete pod NAME (NAMESPACE/NAME, or NAME in default)
    claim: str = ""  # delete-claim: kubectl delete pvc NAME (NAMESPACE/NAME, or NAME in default)
    to_namespace: str = ""  # copy-to-namespace: where the Deployment's ReplicaSets are copied
    # an operator retrying the command while the API does not answer it (5xx, 429: every
    # API server down, say) every `retry_s`, at most `retries` more times; 0: one shot, as kubectl
    retries: int = 0
    retry_s: float = 5.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.after_s) and 0 <= self.after_s <= 3600):
            raise ValueError(f"`after_s` must be a finite number between 0 and 3600, got {self.after_s}")
        if not 0 <= self.retries <= 100:
            raise ValueError(f"`retries` must be between 0 and 100, got {self.retries}")
        if not (math.isfinite(self.retry_s) and 0.1 <= self.retry_s <= 600):
            raise ValueError(f"`retry_s` must be a finite number between 0.1 and 600, got {self.retry_s}")
        if self.action in ("rollout", "scale", "delete") and not (self.deployment or self.workload):
            raise ValueError(f"`{self.action}` needs `deployment` or `workload`")
        if self.action == "scale" and self.deployment and (self.replicas is None or not 0 <= self.replicas <= 1000):
            raise ValueError(f"`scale` needs `replicas` between 0 and 1000, got {self.replicas}")
        if self.action == "scale" and not self.deployment and self.replicas is None and self.by is None:
            raise ValueError("`scale` of a `workload` needs `replicas` or `by`")
        if self.by is not None and not -1000 <= self.by <= 1000:
            raise ValueError(f"`by` must be between -1000 and 1000, got {self.by}")
        if self.action == "drain" and not (self.node or self.deployment or self.workload):
            raise ValueError("`drain` needs `node`, `deployment` or `workload` (the node holding most of its pods)")
        if self.action == "uncordon" and not self.node:
            raise ValueError("`uncordon` needs `node`")
        if self.action == "delete-pod" and not self.pod:
            raise ValueError("`delete-pod` needs `pod` (NAMESPACE/NAME, or NAME in default)")
        if self.action == "delete-claim" and not self.claim:
            raise ValueError("`delete-claim` needs `claim` (NAMESPACE/NAME, or NAME in default)")
        if self.action == "copy-to-namespace" and not (self.deployment and self.to_namespace):
            raise ValueError("`copy-to-namespace` needs `deployment` (whose ReplicaSets are copied) and `to_namespace`")
        if self.workload:
            parse_workload_selector(self.workload)


#: ``kubectl drain`` in a step: bounded (kubectl's default is no timeout).
DRAIN_TIMEOUT_S = 300.0
#: ``kubectl uncordon`` on the heal of a ``drain`` fault: retried while the API does not
#: answer (an operator retries), for at most a minute.
UNCORDON_ATTEMPTS = 60
UNCORDON_RETRY_S = 1.0
#: ``kubectl rollout restart``'s annotation (``objectrestarter.go``).
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
#: The longest wait, after convergence, for kube-proxy to program the probed Services.
PROXY_SYNC_WAIT_S = 5.0


class TenantOptions(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """The adversarial tenants (:mod:`chaoskube.tenants`); ``tenants: true`` takes these
    defaults."""

    every_s: float = 4.0
    revoke_after_s: float = 20.0
    restore_after_s: float = 60.0
    only: list[str] = []  # a subset of chaoskube.tenants.ALL_TENANTS; empty: all

    def spec(self) -> Any:
        from chaoskube.tenants import ALL_TENANTS, TenantSpec

        return TenantSpec(every_s=self.every_s, revoke_after_s=self.revoke_after_s, restore_after_s=self.restore_after_s, tenants=tuple(self.only) or ALL_TENANTS)

    def __post_init__(self) -> None:
        self.spec()  # raises ValueError with the field's problem


class ExpectedFailures(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A window of the run in which the experiment expects its Services to fail requests
    (``service-availability`` does not charge them to the error budget): seconds from the
    start of the fault phase, as a fault's ``at_s``."""

    from_s: float
    to_s: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.from_s) and math.isfinite(self.to_s) and 0 <= self.from_s <= self.to_s <= 7200):
            raise ValueError(f"an expected-failures window needs 0 <= `from_s` <= `to_s` <= 7200, got {self.from_s}..{self.to_s}")


class EndState(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """A user-defined assertion on the objects at the end of the run (``workload.end_state``),
    read through the API when the workload stops: the objects of ``resource`` (plural, as in
    ``kubectl get``) in ``namespace`` (all when empty) matching the selectors number exactly
    ``count``, or at least ``min_count`` / at most ``max_count``. The ``end-state`` checker
    fails when one does not hold."""

    resource: str
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""
    count: int | None = None
    min_count: int | None = None
    max_count: int | None = None
    description: str = ""

    def __post_init__(self) -> None:
        from chaoskube.api.objects import KINDS

        # A custom resource is named as kubectl names it fully, <plural>.<group>
        # (promotions.shop.example.com); its CRD may come with the manifests, so it is
        # looked up when the assertion is judged (not served then: the verdict is unknown).
        custom = "." in self.resource and all(part and part.replace("-", "").isalnum() and part.islower() for part in self.resource.split("."))
        if self.resource not in {info.resource for info in KINDS.values()} and not custom:
            raise ValueError(f"`resource` {self.resource!r} is not a served resource (one of {', '.join(sorted(info.resource for info in KINDS.values()))}, or a custom resource as <plural>.<group>)")
        if self.count is None and self.min_count is None and self.max_count is None:
            raise ValueError("give `count`, `min_count` or `max_count`")

    def holds(self, found: int) -> bool:
        return (self.count is None or found == self.count) and (self.min_count is None or found >= self.min_count) and (self.max_count is None or found <= self.max_count)

    def text(self) -> str:
        where = f"{self.resource}{' in ' + self.namespace if self.namespace else ''}{' -l ' + self.label_selector if self.label_selector else ''}{' --field-selector ' + self.field_selector if self.field_selector else ''}"
        bound = f"= {self.count}" if self.count is not None else " and ".join(part for part in (f">= {self.min_count}" if self.min_count is not None else "", f"<= {self.max_count}" if self.max_count is not None else "") if part)
        return self.description or f"{where}: count {bound}"


class KubernetesWorkload(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    manifests: list[str] = []
    #: Documents of kinds chaoskube cannot serve are left out (listed in the journal,
    #: result.json and the report) instead of refusing the run (``--skip-unsupported``).
    skip_unsupported: bool = False
    #: The manifests may create no pods (only CRDs and custom resources: the pods, if any,
    #: are the served operator's to make). ``chaoskube serve --manifests`` sets it.
    pods_optional: bool = False
    end_state: list[EndState] = []
    deployments: list[DeploymentWorkload] = []
    steps: list[WorkloadStep] = []
    traffic: bool = False
    traffic_every_s: float = 0.5
    max_outage_s: float = 5.0
    error_budget: float = DEFAULT_ERROR_BUDGET
    expected_failures: list[ExpectedFailures] = []
    converge_s: float = 120.0
    #: Adversarial tenants (issue 19): ``true`` for the defaults, or their options.
    tenants: bool | TenantOptions = False
    #: An outside program through the HTTPS front's request handler, in process
    #: (:mod:`chaoskube.apiserver.http.outside`): paginated lists, merge / JSON /
    #: strategic merge patches, resumed watches, for api-pagination, api-patch, api-watch.
    outside_client: bool = False
    #: An in-cluster operator run next to the workload once it converged (issue 35):
    #: ``backup-operator`` (:mod:`chaoskube.examples.backup_operator`) writes the Backup
    #: custom resources of ``experiments/workloads/backups-crd.yaml``, their status and
    #: merge patches that reset fields to their defaults.
    operator: Literal["", "backup-operator"] = ""

    @property
    def tenant_options(self) -> TenantOptions | None:
        if self.tenants is True:
            return TenantOptions()
        return self.tenants or None

    def __post_init__(self) -> None:
        names = [deployment.name for deployment in self.deployments]
        if len(set(names)) != len(names):
            raise ValueError("`deployments` names must be distinct")
        for step in self.steps:
            # A Deployment of the manifests may be named too (checked once they are loaded);
            # a delete step may name any Deployment.
            if step.deployment and step.action != "delete" and step.deployment not in names and not self.manifests:
                raise ValueError(f"step `{step.action}` names deployment {step.deployment!r}, not one of `deployments` ({', '.join(names) or 'none'})")
        if not (math.isfinite(self.error_budget) and 0.0 <= self.error_budget <= 1.0):
            raise ValueError(f"`error_budget` must be a fraction between 0 and 1, got {self.error_budget}")
        for name, value, low in (("traffic_every_s", self.traffic_every_s, 0.01), ("max_outage_s", self.max_outage_s, 0.0), ("converge_s", self.converge_s, 0.0)):
            if not (math.isfinite(value) and low <= value <= 3600):
                raise ValueError(f"`{name}` must be a finite number between {low:g} and 3600, got {value}")


# =========================================================================== workloads by role
#: Workload kinds a step may act on, and what ``kubectl rollout restart`` / ``scale`` accept.
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job")
ROLLABLE_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")
#: The most pods a run simulates (the API server refuses more: ``ApiServerConfig.max_pods``).
MAX_PODS_PER_RUN = 5000


class WorkloadSelector(msgspec.Struct, frozen=True, kw_only=True):
    """A step's ``workload``: comma-separated terms that all hold. ``kind:K`` (or
    ``kind:K1|K2``), ``name:NAMESPACE/NAME`` (or ``name:NAME`` in default), ``label:KEY=VALUE``
    (on the pod template), ``with-pdb`` (a PodDisruptionBudget selects its pods),
    ``with-service`` (a Service selects its pods), ``scalable`` (Deployment, StatefulSet,
    ReplicaSet, ReplicationController), ``rollable`` (Deployment, StatefulSet, DaemonSet);
    ``largest`` keeps the one that wants the most pods (first by kind, namespace, name on ties)."""

    kinds: tuple[str, ...] = ()
    name: str = ""
    labels: tuple[tuple[str, str], ...] = ()
    with_pdb: bool = False
    with_service: bool = False
    scalable: bool = False
    rollable: bool = False
    largest: bool = False

    def describe(self) -> str:
        """What it selects, for the one-line refusal ("no workload with a PodDisruptionBudget")."""
        kinds = "/".join(self.kinds) if self.kinds else ("scalable workload" if self.scalable else "Deployment, StatefulSet or DaemonSet" if self.rollable else "workload")
        parts = [kinds]
        if self.name:
            parts.append(f"named {self.name}")
        if self.labels:
            parts.append("labelled " + ",".join(f"{k}={v}" for k, v in self.labels))
        if self.with_pdb:
            parts.append("with a PodDisruptionBudget")
        if self.with_service:
            parts.append("behind a Service")
        return " ".join(parts)


def parse_workload_selector(text: str) -> WorkloadSelector:
    """Parse a step's ``workload``; ValueError names the bad term."""
    fields: dict[str, Any] = {"labels": []}
    for term in (part.strip() for part in text.split(",")):
        if not term:
            continue
        key, colon, value = term.partition(":")
        if colon and key == "kind":
            kinds = tuple(value.split("|"))
            unknown = [kind for kind in kinds if kind not in WORKLOAD_KINDS]
            if unknown:
                raise ValueError(f"`workload`: kind {unknown[0]!r} is not a workload kind ({', '.join(WORKLOAD_KINDS)})")
            fields["kinds"] = kinds
        elif colon and key == "name":
            fields["name"] = value if "/" in value else f"default/{value}"
        elif colon and key == "label":
            label, equals, label_value = value.partition("=")
            if not equals or not label:
                raise ValueError(f"`workload`: {term!r} must be label:KEY=VALUE")
            fields["labels"].append((label, label_value))
        elif term in ("with-pdb", "with-service", "scalable", "rollable", "largest") and not colon:
            fields[term.replace("-", "_")] = True
        else:
            raise ValueError(f"`workload`: unknown term {term!r} (kind:K, name:NS/NAME, label:K=V, with-pdb, with-service, scalable, rollable, largest)")
    fields["labels"] = tuple(fields["labels"])
    return WorkloadSelector(**fields)


def _template_labels(obj: Object) -> dict[str, str]:
    template = getattr(obj.spec, "template", None)
    return dict(template.metadata.labels) if template is not None else {}


def desired_pods_of(obj: Object, nodes: int) -> int:
    """The pods a workload object wants (a DaemonSet: one per node)."""
    from chaoskube.api.manifests import to_dict
    from chaoskube.api.workloads import desired_pods

    if obj.KIND == "Pod":
        return 1
    if obj.KIND == "CronJob":
        parallelism = obj.spec.job_template.spec.parallelism
        return 1 if parallelism is None else parallelism
    return desired_pods(to_dict(obj), eligible_nodes=nodes if obj.KIND == "DaemonSet" else None)


def select_workloads(selector: WorkloadSelector, objects: list[Object], exclude: frozenset[str] = frozenset()) -> list[Object]:
    """The workload objects of ``objects`` that ``selector`` selects (module docstring);
    ``exclude`` holds ``Kind ns/name`` keys left out (the experiment's infrastructure)."""
    from chaoskube.api.objects import matches

    pdbs = [obj for obj in objects if obj.KIND == "PodDisruptionBudget"]
    services = [obj for obj in objects if obj.KIND == "Service" and obj.spec.selector]
    found = []
    for obj in objects:
        if obj.KIND not in WORKLOAD_KINDS or f"{obj.KIND} {_key(obj)}" in exclude:
            continue
        if selector.kinds and obj.KIND not in selector.kinds:
            continue
        if selector.scalable and obj.KIND not in SCALABLE_KINDS:
            continue
        if selector.rollable and obj.KIND not in ROLLABLE_KINDS:
            continue
        if selector.name and _key(obj) != selector.name:
            continue
        labels = _template_labels(obj)
        if any(labels.get(key) != value for key, value in selector.labels):
            continue
        namespace = obj.metadata.namespace or "default"
        if selector.with_pdb and not any((pdb.metadata.namespace or "default") == namespace and matches(pdb.spec.selector, labels) for pdb in pdbs):
            continue
        if selector.with_service and not any((svc.metadata.namespace or "default") == namespace and all(labels.get(k) == v for k, v in svc.spec.selector.items()) for svc in services):
            continue
        found.append(obj)
    found.sort(key=lambda obj: (obj.KIND, _key(obj)))
    if selector.largest and found:
        found = [max(found, key=lambda obj: (desired_pods_of(obj, 1), [-ord(c) for c in f"{obj.KIND} {_key(obj)}"]))]
    return found


def estimate_pods(objects: list[Object], nodes: int) -> tuple[int, str]:
    """(pods the workload's objects want, the largest contributor) for the per-run cap."""
    total, largest, largest_count = 0, "", -1
    for obj in objects:
        if obj.KIND not in (*WORKLOAD_KINDS, "Pod", "CronJob"):
            continue
        if obj.KIND == "ReplicaSet" and any(ref.controller for ref in obj.metadata.owner_references):
            continue
        count = desired_pods_of(obj, nodes)
        total += count
        if count > largest_count:
            largest, largest_count = f"{obj.KIND} {_key(obj)}: {count} pod(s)", count
    return total, largest


class MeaningError(ExperimentError):
    """The workload cannot give the experiment its meaning: ``missing`` says what it lacks
    ("no workload with a PodDisruptionBudget"), ``why`` who needs it."""

    def __init__(self, missing: str, why: str) -> None:
        super().__init__(f"{missing} ({why})")
        self.missing = missing
        self.why = why


def resolve_manifest(entry: str, base_dir: Path | None) -> Path:
    """An absolute path as it is; a relative one next to the experiment file, then in
    :data:`WORKLOADS_DIR`. Raises FileNotFoundError naming where it looked."""
    path = Path(entry)
    if path.is_absolute():
        candidates = [path]
    else:
        candidates = [directory / path for directory in (base_dir, WORKLOADS_DIR) if directory is not None]
    for candidate in candidates:
        if candidate.exists():
            return candidate.resolve()
    raise FileNotFoundError(f"no such file {entry!r} (looked in {', '.join(str(c.parent) for c in candidates)})")


# =========================================================================== the system
#: Warning Events remembered (latest per object and reason) and cited by a failed steady state.
MAX_WARNINGS_KEPT = 500
MAX_WARNINGS_CITED = 5


class KubernetesSystem(System):
    name = "kubernetes"
    Cluster = ClusterSpec
    Workload = KubernetesWorkload
    CHECKERS = {
        "steady-state": "before the faults and after heal: every node Ready, every Deployment at its ready replicas, every Service with a ready endpoint",
        "leader-election": "never two acting leaders of one Lease; no leaderless stretch over the bound while a candidate runs",
        "no-mass-eviction": "taint-based evictions took pods from fewer than 55 % of the nodes (kube-controller-manager's --unhealthy-zone-threshold)",
        "end-state": "every assertion of workload.end_state (objects counted through the API when the workload stops) held",
        **{name: what for name, (module, _, what) in CLUSTER_CHECKERS.items() if _available(module)},
    }
    #: Checkers that judge only what the workload's steps do (pods deleted by a drain, a
    #: rollout or a scale-down, owners deleted): ``--manifests`` drops them with the steps
    #: that name the built-in Deployments (``registry.with_manifests``).
    step_checkers = ("graceful-termination", "garbage-collection")

    @classmethod
    def options(cls, cluster: dict[str, Any], workload: dict[str, Any], *, base_dir: Path | None = None) -> tuple[ClusterSpec, KubernetesWorkload]:
        spec = _cluster_options(cluster)
        typed = convert_options(workload, KubernetesWorkload, "workload")
        base = base_dir
        resolved = []
        objects: list[Object] = []
        paths: list[Path] = []
        for index, entry in enumerate(typed.manifests):
            try:
                paths.append(resolve_manifest(entry, base))
            except FileNotFoundError as error:
                raise ExperimentError(f"field `workload.manifests[{index}]`: {error}") from None
        custom = set_custom_kinds(list(paths)) if len(paths) > 1 else None
        for index, path in enumerate(paths):
            where = f"field `workload.manifests[{index}]`"
            try:
                loaded, left_out = _load(path, typed.skip_unsupported, custom)
            except (FileNotFoundError, ManifestError) as error:
                raise ExperimentError(f"{where}: {error}") from None
            if not loaded:  # a run of nothing would be a silent no-op
                why = f"--skip-unsupported left out all {len(left_out)} of its documents" if left_out else "it holds no Kubernetes object"
                raise ExperimentError(f"{where}: nothing to run in {path}: {why}")
            objects.extend(loaded)
            resolved.append(str(path))
        if typed.manifests:
            known = {d.name for d in typed.deployments} | {obj.metadata.name for obj in objects if obj.KIND == "Deployment"}  # as loaded (--skip-unsupported too)
            for index, step in enumerate(typed.steps):
                if step.deployment and step.deployment not in known:
                    raise ExperimentError(f"field `workload.steps[{index}]`: step `{step.action}` names deployment {step.deployment!r}, not one of the workload's ({', '.join(sorted(known)) or 'none'})")
        for index, deployment in enumerate(typed.deployments):
            try:
                objects.extend(deployment.objects())
            except ManifestError as error:
                raise ExperimentError(f"field `workload.deployments[{index}]`: {error}") from None
        if typed.manifests and not typed.pods_optional and not any(obj.KIND in (*WORKLOAD_KINDS, "Pod", "CronJob") for obj in objects):
            kinds = sorted({obj.KIND for obj in objects})
            raise MeaningError(
                f"no workload ({', '.join(WORKLOAD_KINDS)}, CronJob or Pod)",
                f"its {len(objects)} object(s) ({', '.join(kinds)}) create no pods, and the experiment judges what happens to pods",
            )
        nodes = len(spec.nodes())
        pods, largest = estimate_pods(objects, nodes)
        if pods > MAX_PODS_PER_RUN:
            raise ExperimentError(f"field `workload`: the workload wants {pods} pods (largest: {largest}); a run simulates at most {MAX_PODS_PER_RUN} (docs/api-server.md, the simulation's limits)")
        for index, step in enumerate(typed.steps):
            if step.workload and not step.deployment:
                selector = parse_workload_selector(step.workload)
                if not select_workloads(selector, objects):
                    raise MeaningError(f"no {selector.describe()}", f"step `{step.action}`, workload.steps[{index}], needs one")
        return spec, msgspec.structs.replace(typed, manifests=resolved)

    LEADER_ROLES = frozenset({"etcd", "kube-controller-manager", "kube-scheduler"})
    RUNS = ("chaoskube.etcd", "chaoskube.apiserver", "chaoskube.client", "chaoskube.controllers", "chaoskube.scheduler", "chaoskube.node", "chaoskube.api.strategic")
    PROBES = True

    @classmethod
    def workload_target_problem(cls, target: str, cluster: ClusterSpec, workload: KubernetesWorkload) -> str | None:
        """For a ``workload:TERMS`` fault target: what is missing when TERMS select no
        workload of ``workload`` (None when they select one, or the target is not of that form)."""
        selector_name, _, terms = target.partition(":")
        if selector_name != "workload":
            return None
        try:
            selector = parse_workload_selector(terms)
        except ValueError as error:
            return str(error)
        objects: list[Object] = []
        for found, _ in _load_set(workload.manifests, workload.skip_unsupported):
            objects.extend(found)
        for deployment in workload.deployments:
            objects.extend(deployment.objects())
        return None if select_workloads(selector, objects) else f"no {selector.describe()}"

    @classmethod
    def idle_checkers(cls, checkers: list[str], cluster: ClusterSpec, workload: KubernetesWorkload) -> dict[str, str]:
        """Checkers that would have nothing to judge on this workload (for ``--manifests``),
        and why: ``service-availability`` without a Service to send traffic to."""
        objects: list[Object] = []
        for found, _ in _load_set(workload.manifests, workload.skip_unsupported):
            objects.extend(found)
        for deployment in workload.deployments:
            objects.extend(deployment.objects())
        idle = {}
        if "service-availability" in checkers and not (workload.traffic and [obj for obj in objects if _probeable(obj)]):
            idle["service-availability"] = "no Service with a selector to send traffic to"
        if "pdb-eviction" in checkers and not [obj for obj in objects if obj.KIND == "PodDisruptionBudget"]:
            idle["pdb-eviction"] = "no PodDisruptionBudget to hold evictions to"
        return idle

    @classmethod
    def leader_gap_s(cls, cluster: ClusterSpec) -> dict[str, float]:
        """etcd: a follower campaigns after its randomized election timeout (one to two
        election timeouts, etcd-io/raft ``randomizedElectionTimeout``), and wins within a
        round trip or two; the Lease holders (client-go leaderelection defaults: lease 15 s,
        retry 2 s jittered by 1.2): the last renewal seen (one jittered retry) plus the lease,
        plus one more retry to acquire it, plus a second for the requests."""
        election_s = cluster.timings.etcd_election_ms / 1000.0
        config = LeaderElectionConfig()
        lease_s = config.retry_period_s * config.jitter_factor * 2 + config.lease_duration_s + 1.0
        return {"etcd": 2 * election_s + 1.0, "kube-controller-manager": lease_s, "kube-scheduler": lease_s}

    @classmethod
    def process_infos(cls, cluster: ClusterSpec, workload: KubernetesWorkload) -> list[ProcessInfo]:
        """The cluster's processes (:func:`chaoskube.cluster.planned_processes`), then
        ``kubectl``, ``traffic`` when the workload sends traffic, and the adversarial
        tenants' processes (role ``tenant``) when it has tenants."""
        infos = [ProcessInfo(name, role, zone) for name, role, zone in planned_processes(cluster)]
        infos += [ProcessInfo("kubectl", "kubectl", None)] + ([ProcessInfo("traffic", "traffic", None)] if workload.traffic else [])
        if workload.outside_client:
            infos.append(ProcessInfo("outside", "outside", None))
        if workload.operator:
            infos.append(ProcessInfo(workload.operator, "operator", None))
        options = workload.tenant_options
        if options is not None:
            infos += [ProcessInfo(f"tenant-{name}", "tenant", None) for name in options.spec().tenants] + [ProcessInfo("tenant-admin", "tenant", None)]
        return infos

    def __init__(self, world: World, cluster: ClusterSpec, workload: KubernetesWorkload) -> None:
        super().__init__(world, cluster, workload)
        self.spec = cluster
        self.handle: Cluster | None = None
        self.nodes = [name for name, _, _ in cluster.nodes()]
        self.objects = self._workload_objects()
        self.deployments = sorted(_key(obj) for obj in self.objects if obj.KIND == "Deployment")
        #: every workload of the workload (Kind, "ns/name"), in a stable order
        self.workloads = sorted((obj.KIND, _key(obj)) for obj in self.objects if obj.KIND in (*WORKLOAD_KINDS, "Pod") and not (obj.KIND == "ReplicaSet" and any(r.controller for r in obj.metadata.owner_references)))
        self.services = sorted(_key(obj) for obj in self.objects if obj.KIND == "Service" and getattr(obj.spec, "selector", None))
        self.custom_definitions = sorted(obj.metadata.name for obj in self.objects if obj.KIND == "CustomResourceDefinition")
        self.infrastructure = frozenset(f"Deployment {d.namespace}/{d.name}" for d in self.workload.deployments if d.infrastructure)
        self.steady_state_verdict: Verdict | None = None
        self.workload_verdict: Verdict | None = None
        self.probes: list[TrafficProbe] = []
        self._client: ApiClient | None = None
        self._traffic_on = False
        self._workload_created = False
        self._admin = KubectlAdmin(self)
        self.tenants: Any = None
        self._convergence_watch: Any = None  # converged_now's, made at its first call

    def _workload_objects(self) -> list[Object]:
        objects: list[Object] = []
        self.skipped: list[str] = []
        for found, issues in _load_set(self.workload.manifests, self.workload.skip_unsupported):
            objects.extend(found)
            self.skipped.extend(str(issue) for issue in issues)
        for deployment in self.workload.deployments:
            objects.extend(deployment.objects())
        return objects

    # -- the run ----------------------------------------------------------------------------
    async def start(self) -> None:
        # The Warning Events the components recorded (their ``k8s-event`` records), latest
        # per object and reason: a failed steady state cites them as reasons.
        self._warnings: dict[tuple[str, str, str, str], tuple[float, str, str]] = {}
        self.world.on_record("k8s-event", self._note_warning)
        self.handle = open_cluster(self.world, self.spec)
        kubectl = self.world.spawn("kubectl", _idle, role="kubectl")
        self._client = self.handle.client(kubectl, timeout_s=PROBE_TIMEOUT_S, attempts=PROBE_ATTEMPTS)
        ready = await self.handle.wait_for(self._nodes_ready, within_s=NODES_READY_WITHIN_S)
        self.world.record("kubernetes", event="nodes-ready" if ready else "nodes-not-ready", nodes=len(self.nodes))

    async def _nodes_ready(self) -> bool:
        return not await self._node_problems()

    async def prepare_workload(self) -> None:
        """Create the workload's objects and wait until it converges (part of the boot)."""
        assert self.handle is not None and self._client is not None
        if self.skipped:
            self.world.record("kubernetes", event="skipped-unsupported", documents=list(self.skipped))
        created, failures = await self._create_all()
        self._workload_created = True
        self.world.record("kubernetes", event="workload-created", objects=created, failures=len(failures))
        if failures:
            self.workload_verdict = Verdict(False, f"{len(failures)} workload object(s) could not be created: {failures[0]}", tuple(failures))
            return
        started = self.world.now
        verdict = await self.steady_state()
        while not verdict.valid and self.world.now - started < self.workload.converge_s:
            await self.world.sleep(1.0)
            verdict = await self.steady_state()
        took = self.world.now - started
        self.world.record("kubernetes", event="workload-converged" if verdict.valid else "workload-not-converged", after_s=round(took, 6))
        if not verdict.valid:
            self.workload_verdict = Verdict(False, f"the workload did not reach its steady state within {self.workload.converge_s:g} s of its creation: {verdict.reason}", verdict.evidence)
            return
        self.workload_verdict = Verdict(True, f"the workload converged {took:.3f} s after its creation")
        if self.workload.traffic:
            await self._wait_for_proxy_rules()

    async def _wait_for_proxy_rules(self) -> None:
        """Before the traffic starts: wait until the probing node's kube-proxy has programmed
        every probed Service's ready endpoints (it syncs at most once a second,
        ``--iptables-min-sync-period``), at most PROXY_SYNC_WAIT_S, so a Service that
        converged a moment ago is not reported down by a probe that outran kube-proxy."""
        assert self.handle is not None
        if not self.nodes:
            return
        proxy = _CurrentProxy(self.handle, self.nodes)
        ports = [(_key(obj), obj.spec.ports[0].port) for obj in self.objects if _probeable(obj)]
        deadline = self.world.now + PROXY_SYNC_WAIT_S
        while self.world.now < deadline and not all(getattr(proxy.rule(service, port), "endpoints", None) for service, port in ports):
            await self.world.sleep(0.1)

    async def start_workload(self) -> None:
        """Start what the converged workload does: the traffic probes and the steps."""
        if self.workload_verdict is None or not self.workload_verdict.valid:
            return
        if self.workload.traffic and any(_probeable(obj) for obj in self.objects):
            self._start_traffic()
        await self._start_tenants()
        if self.workload.outside_client:
            from chaoskube.apiserver.http.front import ApiFront
            from chaoskube.apiserver.http.outside import OutsideClient

            assert self.handle is not None
            OutsideClient(self.world, ApiFront(self.world, self.handle.api_server_names, None), self.handle.api_server_names).start()
        if self.workload.operator == "backup-operator":
            from chaoskube.examples.backup_operator import backup_operator_main

            assert self.handle is not None
            self.world.spawn("backup-operator", backup_operator_main(self.handle.api_server_names), role="operator")
        for step in sorted(self.workload.steps, key=lambda step: step.after_s):
            self.world.call_later(step.after_s, self._start_step, step)

    def start_generator(self, spec: Any, until_s: float) -> None:
        """Start the experiment's workload generator (``generator:``,
        :mod:`chaoskube.workload.generator`) now, at the start of the warm-up, until
        ``until_s`` from now (the heal): its plan drawn from the run seed's
        ``world.random(spec.random_name)``, its actions from its own process and client,
        on the spec's nodes. Not when the workload did not converge (nothing starts then)."""
        from chaoskube.workload.generator import CLIENT_ATTEMPTS, CLIENT_TIMEOUT_S, GENERATOR_PROCESS, WorkloadGenerator, plan

        if self.workload_verdict is None or not self.workload_verdict.valid:
            return
        assert self.handle is not None
        handle = self.handle
        planned = plan(self.world.random(spec.random_name), spec, until_s)
        self.generator = WorkloadGenerator(
            self.world, spec, planned, lambda process: handle.client(process, timeout_s=CLIENT_TIMEOUT_S, attempts=CLIENT_ATTEMPTS, name=GENERATOR_PROCESS), self.nodes,
        )
        self.generator.start(self.world.now)

    def stop_generator(self) -> None:
        """Stop the generator (the heal): what runs is cancelled; it then uncordons and
        untaints every node from its own process."""
        generator = getattr(self, "generator", None)
        if generator is not None:
            generator.stop()

    def _start_step(self, step: WorkloadStep) -> None:
        self.world.start_soon(self._run_step, step)

    async def _run_step(self, step: WorkloadStep) -> None:
        """One administrator action (module docstring, ``steps``), as ``kubectl``."""
        from chaoskube.api.protocol import timestamp
        from chaoskube.node.kubelet import cordon, drain

        assert self._client is not None
        from chaoskube.api.objects import KINDS

        namespace = next((d.namespace for d in self.workload.deployments if d.name == step.deployment), "default")
        client, target = self._client, step.node or f"{namespace}/{step.deployment}"
        if step.deployment:
            selected = [obj for obj in self.objects if obj.KIND == "Deployment" and _key(obj) == f"{namespace}/{step.deployment}"]
        elif step.workload:
            selected = select_workloads(parse_workload_selector(step.workload), self.objects, self.infrastructure)
            target = step.node or ", ".join(f"{obj.KIND} {_key(obj)}" for obj in selected)
        else:
            selected = []
        attempt = 0
        while True:  # one attempt, or more with `retries` (an operator retrying)
            attempt += 1
            try:
                if step.action == "rollout":
                    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: timestamp(self.world.now)}}}}}
                    for obj in selected:
                        if obj.KIND in ROLLABLE_KINDS:
                            await client.patch(KINDS[obj.KIND].resource, obj.metadata.namespace or "default", obj.metadata.name, patch)
                    outcome = "patched"
                elif step.action == "scale":
                    for obj in selected:
                        if obj.KIND not in SCALABLE_KINDS:
                            continue
                        replicas = step.replicas
                        if step.by is not None and not step.deployment:
                            current = await client.get(KINDS[obj.KIND].resource, obj.metadata.namespace or "default", obj.metadata.name)
                            replicas = max(0, (1 if current.spec.replicas is None else current.spec.replicas) + step.by)
                        await client.patch(KINDS[obj.KIND].resource, obj.metadata.namespace or "default", obj.metadata.name, {"spec": {"replicas": replicas}})
                    outcome = "patched"
                elif step.action == "uncordon":
                    await cordon(client, step.node, unschedulable=False)
                    outcome = "uncordoned"
                elif step.action == "delete-pod":  # kubectl delete pod NAME: a graceful deletion (its own grace period)
                    pod_namespace, _, pod_name = step.pod.rpartition("/")
                    target = f"{pod_namespace or 'default'}/{pod_name}"
                    await client.delete("pods", pod_namespace or "default", pod_name)
                    outcome = "deleted"
                elif step.action == "delete-claim":  # kubectl delete pvc NAME: its volume is reclaimed as its policy says
                    claim_namespace, _, claim_name = step.claim.rpartition("/")
                    target = f"{claim_namespace or 'default'}/{claim_name}"
                    await client.delete("persistentvolumeclaims", claim_namespace or "default", claim_name)
                    outcome = "deleted"
                elif step.action == "copy-to-namespace":
                    target = f"{namespace}/{step.deployment} -> {step.to_namespace}"
                    outcome = await self._copy_to_namespace(namespace, step.deployment, step.to_namespace)
                elif step.action == "delete":  # kubectl delete KIND NAME --cascade=..., for each workload selected
                    from chaoskube.api.protocol import DeleteOptions

                    options = DeleteOptions(propagation_policy=step.propagation)
                    # No longer part of the steady state, whatever the delete answers: one that
                    # times out may have been done all the same (seed 25 of
                    # workload-churn-under-nemesis: kubectl's delete timed out under a fault, the
                    # API server had deleted the Deployment).
                    for obj in selected:
                        key = _key(obj)
                        self.workloads = [(kind, found) for kind, found in self.workloads if (kind, found) != (obj.KIND, key)]
                        if obj.KIND == "Deployment":
                            self.deployments = [found for found in self.deployments if found != key]
                    if step.deployment:
                        key = f"{namespace}/{step.deployment}"
                        self.deployments = [name for name in self.deployments if name != key]
                        self.services = [name for name in self.services if name != key]
                    if step.deployment and not selected:  # a Deployment the workload did not create (an operator's, say)
                        await client.delete("deployments", namespace, step.deployment, options=options)
                    for obj in selected:
                        await client.delete(KINDS[obj.KIND].resource, obj.metadata.namespace or "default", obj.metadata.name, options=options)
                    outcome = f"deleted ({step.propagation})"
                else:
                    target = step.node or await self._busiest_node(selected)
                    result = await drain(client, target, timeout_s=DRAIN_TIMEOUT_S)
                    outcome = "drained" if not (result.remaining or result.errors or result.timed_out) else f"incomplete: {len(result.remaining)} remaining, {len(result.errors)} error(s)"
            except ApiError as error:
                outcome = f"error: {error}"
                if attempt <= step.retries and (error.code >= 500 or error.code == 429):
                    await self.world.sleep(step.retry_s)
                    continue
            break
        self.world.record("workload-step", action=step.action, target=target, outcome=outcome, **({"attempts": attempt} if step.retries else {}))

    async def _copy_to_namespace(self, namespace: str, deployment: str, to_namespace: str) -> str:
        """``kubectl get rs -o yaml | (edit the namespace) | kubectl create -f -`` of each
        ReplicaSet of ``deployment``, into ``to_namespace`` (created if missing): the
        server-set fields and the status dropped, the owner references KEPT -- the mistake
        of kubernetes/kubernetes#65200. A namespaced owner must be in its dependent's
        namespace; the reference is invalid, the owner "absent" there, and the garbage
        collector deletes the copies ("Owners and dependents",
        https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/)."""
        from chaoskube.api.manifests import from_dict, to_dict

        client = self._client
        assert client is not None
        owner = await client.get("deployments", namespace, deployment)
        listed = await client.list("replicasets", namespace)
        copies = [rs for rs in listed.items if any(reference.uid == owner.metadata.uid for reference in rs.metadata.owner_references)]
        try:
            await client.create(from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": to_namespace}}))
        except ApiError as error:
            if error.code != 409:
                raise
        for rs in sorted(copies, key=lambda rs: rs.metadata.name):
            data = to_dict(rs)
            meta = data["metadata"]
            data["metadata"] = {field: meta[field] for field in ("name", "labels", "annotations", "ownerReferences") if field in meta} | {"namespace": to_namespace}
            data.pop("status", None)
            await client.create(from_dict(data))
        return f"copied {len(copies)} ReplicaSet(s) with their owner references"

    def workload_nodes(self, terms: str) -> list[str]:
        """A ``workload:TERMS`` fault target: the nodes whose kubelets run pods of the
        workloads TERMS select (their pod templates' labels, in their namespaces), sorted;
        a powered-off node's kubelet knows nothing, so it is not among them."""
        try:
            selected = select_workloads(parse_workload_selector(terms), self.objects, self.infrastructure)
        except ValueError:
            return []
        selectors = [(obj.metadata.namespace or "default", _template_labels(obj)) for obj in selected]
        found = []
        for name, kubelet in sorted((self.handle.kubelets if self.handle is not None else {}).items()):
            informer = getattr(kubelet, "pods", None)
            pods = informer.indexer.list() if informer is not None else []
            if any(
                pod.metadata.deletion_timestamp is None and pod.metadata.namespace == namespace and labels and all(pod.metadata.labels.get(k) == v for k, v in labels.items())
                for pod in pods for namespace, labels in selectors
            ):
                found.append(name)
        return found

    async def _busiest_node(self, workloads: list[Object]) -> str:
        """The node holding most running pods of ``workloads`` (their pod templates' labels
        in their namespaces); first by name on ties."""
        assert self._client is not None
        counts = {name: 0 for name in self.nodes}
        selectors = [(obj.metadata.namespace or "default", _template_labels(obj)) for obj in workloads]
        for pod in (await self._client.list("pods")).items:
            node = pod.spec.node_name
            if node not in counts or pod.metadata.deletion_timestamp is not None:
                continue
            if any(pod.metadata.namespace == namespace and labels and all(pod.metadata.labels.get(k) == v for k, v in labels.items()) for namespace, labels in selectors):
                counts[node] += 1
        return min(self.nodes, key=lambda name: (-counts[name], name))

    async def _create_all(self) -> tuple[int, list[str]]:
        """Create each object in order (``kubectl create``): an existing one is left as it
        is; 5xx answers and timeouts are retried up to :data:`CREATE_ATTEMPTS` times."""
        assert self.handle is not None and self._client is not None
        created, failures = 0, []
        for obj in self.objects:
            for attempt in range(1, CREATE_ATTEMPTS + 1):
                try:
                    await self.handle.apply(self._client, [obj])
                    created += 1
                    break
                except ApiError as error:
                    # a namespace just created may not be in the API server's informer cache yet
                    # (the NamespaceLifecycle admission plugin answers 404): retried like a 5xx
                    namespace_lag = error.code == 404 and "namespaces" in str(error)
                    # a custom object right after its CRD: served once the CRD is Established
                    namespace_lag = namespace_lag or (error.code == 404 and obj.RESOURCE.count(".") >= 1 and "could not find the requested resource" in str(error))
                    if error.code < 500 and error.code != 429 and not namespace_lag:
                        failures.append(f"{obj.KIND} {_key(obj)}: {error}")
                        break
                    if attempt == CREATE_ATTEMPTS:
                        failures.append(f"{obj.KIND} {_key(obj)}: {error} (after {CREATE_ATTEMPTS} attempts)")
                    else:
                        await self.world.sleep(CREATE_RETRY_S)
        return created, failures

    def _start_traffic(self) -> None:
        assert self.handle is not None
        handle = self.handle
        ports = {_key(obj): obj.spec.ports[0].port for obj in self.objects if _probeable(obj)}

        async def main(process: Process) -> None:
            self.probes = [TrafficProbe(process, _CurrentProxy(handle, self.nodes), service, port, every_s=self.workload.traffic_every_s) for service, port in sorted(ports.items())]
            async with trio.open_nursery() as nursery:
                for probe in self.probes:
                    nursery.start_soon(self._run_probe, probe)

        self._traffic_on = True
        self.world.spawn("traffic", main, role="traffic")

    async def _run_probe(self, probe: TrafficProbe) -> None:
        while True:
            started = probe.process.now()
            if self._traffic_on:
                await probe.probe_once()
            await probe.process.sleep(max(0.0, started + probe.every_s - probe.process.now()))

    async def _start_tenants(self) -> None:
        """The adversarial tenants (workload ``tenants``): their objects, created by the
        administrator, then their attempt loops and lifecycle (``chaoskube.tenants``)."""
        options = self.workload.tenant_options
        if options is None:
            return
        from chaoskube.tenants import Tenants

        assert self.handle is not None
        self.tenants = Tenants(self.world, self.handle.api_server_names, self.nodes, options.spec())
        failures = await self.tenants.setup()
        self.world.record("kubernetes", event="tenants-started", failures=len(failures))
        self.tenants.start()

    async def stop_workload(self) -> None:
        self._traffic_on = False
        if self.tenants is not None:
            self.tenants.stop()
        from chaoskube.client.informer import record_informer_caches

        record_informer_caches(self.world)  # for api-watch: each informer's cache, now
        await self._check_end_state()
        verdict = await self.steady_state()
        ready, desired = await self._pods_ready()
        self.world.record("kubernetes", event="final", steady=verdict.valid, reason=verdict.reason, pods_ready=ready, pods_desired=desired)

    async def _check_end_state(self) -> None:
        """Evaluate ``workload.end_state`` through the API; one ``end-state`` event each."""
        assert self._client is not None
        for index, assertion in enumerate(self.workload.end_state):
            try:
                items = (await self._client.list(assertion.resource, assertion.namespace, label_selector=assertion.label_selector, field_selector=assertion.field_selector)).items
            except ApiError as error:
                self.world.record("end-state", index=index, assertion=assertion.text(), valid=None, reason=f"the API did not answer: {error}")
                continue
            names = sorted(_end_state_name(obj) for obj in items)
            self.world.record("end-state", index=index, assertion=assertion.text(), valid=assertion.holds(len(items)), found=len(items),
                              objects=names[:END_STATE_NAMES], more=max(0, len(names) - END_STATE_NAMES))

    async def _pods_ready(self) -> tuple[int, int]:
        """(ready pods, desired pods) over the workload's workloads, by the API: each
        workload's ready count as its status reports it, and what it wants."""
        assert self._client is not None
        from chaoskube.api.objects import KINDS

        ready = desired = 0
        try:
            for kind in sorted({kind for kind, _ in self.workloads}):
                listed = {_key(obj): obj for obj in (await self._client.list(KINDS[kind].resource)).items}
                for key in (key for k, key in self.workloads if k == kind):
                    obj = listed.get(key)
                    if obj is None:
                        continue
                    desired += desired_pods_of(obj, len(self.nodes))
                    ready += _ready_of(obj)
        except ApiError:
            return -1, -1
        return ready, desired

    # -- steady state -----------------------------------------------------------------------
    async def steady_state(self) -> Verdict:
        """Every node Ready, every workload Deployment ready, every workload Service with a
        ready endpoint (module docstring); journaled as ``steady-state`` {valid, reason}."""
        try:
            problems = await self._node_problems()
            if self._workload_created:
                problems += await self._workload_problems() + await self._service_problems() + await self.definition_problems()
        except ApiError as error:
            verdict = Verdict(False, f"the API did not answer: {error}")
        else:
            if problems:
                warnings = self._warning_events()
                reason = f"{len(problems)} problem(s): {'; '.join(problems[:3])}"
                if warnings:
                    reason += f"; Warning events: {'; '.join(warnings[:3])}"
                verdict = Verdict(False, reason, tuple(problems) + tuple(f"Warning event: {warning}" for warning in warnings))
            elif not self._workload_created:
                verdict = Verdict(True, f"{len(self.nodes)} node(s) Ready; the workload is not created yet")
            else:
                verdict = Verdict(True, f"{len(self.nodes)} node(s) Ready; {len(self.workloads)} workload(s) ready; {len(self.services)} Service(s) with a ready endpoint")
        self.world.record("steady-state", valid=verdict.valid, reason=verdict.reason)
        return verdict

    def _note_warning(self, event: dict[str, Any]) -> None:
        if event.get("event_type") != "Warning" or event.get("outcome"):
            return
        key = (str(event.get("kind")), str(event.get("namespace")), str(event.get("name")), str(event.get("reason")))
        self._warnings.pop(key, None)
        self._warnings[key] = (float(event["t"]), str(event.get("component", "")), str(event.get("message", "")))
        if len(self._warnings) > MAX_WARNINGS_KEPT:
            del self._warnings[next(iter(self._warnings))]

    def _warning_events(self) -> list[str]:
        """The latest Warning Events of the workload's namespaces and of the nodes, newest
        first (at most :data:`MAX_WARNINGS_CITED`): "<kind>/<name> <Reason> (<component>,
        t=<s>): <message>", as ``kubectl get events`` would list them."""
        namespaces = {key.partition("/")[0] for _, key in self.workloads} | {key.partition("/")[0] for key in self.services}
        cited = []
        for (kind, namespace, name, reason), (t, component, message) in reversed(self._warnings.items()):
            if kind == "Node" or namespace in namespaces:
                cited.append(f"{kind.lower()}/{name} {reason} ({component}, t={t:.1f} s): {message[:160]}")
            if len(cited) >= MAX_WARNINGS_CITED:
                break
        return cited

    async def _node_problems(self) -> list[str]:
        assert self._client is not None
        try:
            listed = (await self._client.list("nodes")).items
        except ApiError as error:
            return [f"nodes: the API did not answer: {error}"]
        ready = {node.metadata.name for node in listed if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)}
        return [f"node {name} not Ready" for name in self.nodes if name not in ready]

    async def _workload_problems(self) -> list[str]:
        """``kubectl rollout status`` of every workload (:func:`workload_settled`); a Job
        is a problem only when it failed (a running one is fine); a bare Pod must be Ready
        or have Succeeded."""
        if not self.workloads:
            return []
        assert self._client is not None
        from chaoskube.api.manifests import to_dict
        from chaoskube.api.objects import KINDS
        from chaoskube.api.workloads import workload_settled

        problems = []
        for kind in sorted({kind for kind, _ in self.workloads}):
            listed = {_key(obj): obj for obj in (await self._client.list(KINDS[kind].resource)).items}
            for key in (key for k, key in self.workloads if k == kind):
                obj = listed.get(key)
                if obj is None:
                    if kind != "Job":  # a finished Job may be gone (ttlSecondsAfterFinished)
                        problems.append(f"{kind} {key} is missing")
                    continue
                if kind == "Pod":
                    if obj.status.phase != "Succeeded" and not any(c.type == "Ready" and c.status == "True" for c in obj.status.conditions):
                        problems.append(f"Pod {key} is not Ready ({obj.status.phase or 'Pending'})")
                    continue
                settled, why = workload_settled(to_dict(obj))
                if kind == "Job":
                    if "failed" in why:
                        problems.append(why)
                    continue
                if not settled:
                    problems.append(why)
        return problems

    async def definition_problems(self) -> list[str]:
        """The manifests' CustomResourceDefinitions not (yet) Established, one line each (a
        steady-state problem; a live run starts the user's program once there is none)."""
        if not self.custom_definitions:
            return []
        assert self._client is not None
        listed = {obj.metadata.name: obj for obj in (await self._client.list("customresourcedefinitions")).items}
        problems = []
        for name in self.custom_definitions:
            crd = listed.get(name)
            if crd is None or not any(c.type == "Established" and c.status == "True" for c in crd.status.conditions):
                problems.append(f"CustomResourceDefinition {name} is not Established")
        return problems

    async def _deployment_problems(self) -> list[str]:
        if not self.deployments:
            return []
        assert self._client is not None
        listed = {_key(d): d for d in (await self._client.list("deployments")).items}
        problems = []
        for key in self.deployments:
            deployment = listed.get(key)
            if deployment is None:
                problems.append(f"Deployment {key} is missing")
                continue
            want, status = _replicas(deployment), deployment.status
            if status.observed_generation < deployment.metadata.generation:
                problems.append(f"Deployment {key}: generation {deployment.metadata.generation} not observed yet")
            elif status.ready_replicas < want or status.available_replicas < want:
                problems.append(f"Deployment {key}: {status.ready_replicas}/{want} ready, {status.available_replicas} available")
        return problems

    async def _service_problems(self) -> list[str]:
        if not self.services:
            return []
        assert self._client is not None
        ready: set[str] = set()
        for endpoint_slice in (await self._client.list("endpointslices")).items:
            service = f"{endpoint_slice.metadata.namespace}/{endpoint_slice.metadata.labels.get(SERVICE_NAME_LABEL, '')}"
            if any(endpoint.conditions.ready is not False for endpoint in endpoint_slice.endpoints):
                ready.add(service)
        return [f"Service {key} has no ready endpoint" for key in self.services if key not in ready]

    def open_probes(self, probes: Sequence[Probe], hypothesis: SteadyStateHypothesis | None) -> ProbeRunner:
        """The experiment's probes, run from the process ``probes`` (role ``probes``, no
        zone: like ``traffic``, out of every fault domain) as ``kubectl`` would read, and
        through the kube-proxy rule table of the first running node for ``http`` probes."""
        assert self.handle is not None, "probes start once the cluster runs"
        process = self.world.spawn("probes", _idle, role="probes")
        client = self.handle.client(process, timeout_s=PROBE_TIMEOUT_S, attempts=PROBE_ATTEMPTS)
        return ProbeRunner(ProbeAccess(self.world, process, client, _CurrentProxy(self.handle, self.nodes)), probes, hypothesis)

    def admin(self) -> KubectlAdmin | None:
        """The administrator of the ``drain`` fault, once the cluster (and ``kubectl``) runs."""
        return self._admin if self._client is not None else None

    def leader_of(self, role: str) -> str | None:
        if self.handle is None:
            return None
        if role == "etcd":
            return self.handle.etcd_leader()
        if role in ("kube-controller-manager", "kube-scheduler"):
            return self.handle.leader(role)
        return None

    # -- checkers ---------------------------------------------------------------------------
    def check(self, name: str) -> Verdict:
        events = self.world.journal.events
        if name == "steady-state":
            probed = self.steady_state_verdict or Verdict(None, "the steady state was never probed")
            if self.workload_verdict is not None and self.workload_verdict.valid is not True:
                return worst([self.workload_verdict, probed])
            return probed
        if name == "leader-election":
            return check_leader_election(events, max_gap_s=LEADER_GAP_S, lease_servers=self.handle.api_server_names if self.handle is not None else (),
                                         store_members=self.handle.processes("etcd") if self.handle is not None else ())
        if name == "no-mass-eviction":
            return check_no_mass_eviction(events, self.nodes)
        if name == "end-state":
            return check_end_state(events, len(self.workload.end_state))
        if name in CLUSTER_CHECKERS:
            return self._cluster_check(name, events)
        raise KeyError(name)

    def _cluster_check(self, name: str, events: list[dict[str, Any]]) -> Verdict:
        import importlib

        module, function, _ = CLUSTER_CHECKERS[name]
        checker = getattr(importlib.import_module(module), function)
        if name == "service-availability":
            faults = next((event["t"] for event in events if event["type"] == "phase" and event["name"] == "faults"), None)
            expected = [(faults + window.from_s, faults + window.to_s) for window in self.workload.expected_failures] if faults is not None else []
            api_servers = [f"kube-apiserver-{index}" for index in range(1, self.spec.api_servers + 1)]
            return run_checker(
                checker, events, max_outage_s=self.workload.max_outage_s, error_budget=self.workload.error_budget,
                expected=expected, nodes=self.nodes, api_servers=api_servers,
            )
        if name == "differential":
            reference = getattr(self, "reference", None)  # the runner's fault-free run of the same seed
            if reference is None:
                return Verdict(None, "no reference run: the differential checker needs the runner's fault-free run of this experiment and seed")
            verdict = run_checker(checker, events, reference.state)
            return Verdict(verdict.valid, verdict.reason, verdict.evidence, {**verdict.details, "reference_journal_sha256": reference.journal_sha256, "reference_cached": reference.cached, "reference_forked": reference.forked})
        if name == "timing-contracts":
            from chaoskube.checkers.timing import TimingConfig

            timings = self.spec.timings
            config = TimingConfig(node_monitor_grace_period_s=timings.node_monitor_grace_period_s, node_monitor_period_s=timings.node_monitor_period_s)
            return run_checker(checker, events, config)
        if name == "convergence":
            healed = [event["t"] for event in events if event["type"] == "phase" and event["name"] == "heal"]
            if not healed:
                return Verdict(None, "the run never reached the heal phase")
            deadline_s = getattr(self, "recovery_s", None)  # the experiment's recovery deadline (the runner sets it)
            if deadline_s is None:
                deadline_s = max(0.0, events[-1]["t"] - healed[-1])
            return run_checker(checker, events, healed_at=healed[-1], deadline_s=deadline_s)
        return run_checker(checker, events)

    def converged_now(self) -> bool | None:
        """The ``convergence`` checker's judgement of the store as the journal holds it now
        (:class:`~chaoskube.checkers.convergence.ConvergenceWatch`, fed incrementally: the
        runner asks this every second while it waits for a conclusive verdict)."""
        from chaoskube.checkers.convergence import ConvergenceWatch

        if self._convergence_watch is None:
            self._convergence_watch = ConvergenceWatch()
        watch = self._convergence_watch
        watch.feed(self.world.journal.events)
        return watch.converged

    def metrics(self) -> dict[str, Any]:
        events = self.world.journal.events
        out: dict[str, Any] = {}
        healed = next((event["t"] for event in events if event["type"] == "phase" and event["name"] == "heal"), None)
        if healed is not None:
            back = next((event["t"] for event in events if event["type"] == "steady-state" and event["t"] >= healed and event["valid"]), None)
            if back is not None:
                out["converge_after_heal_s"] = round(back - healed, 6)
        final = next((event for event in reversed(events) if event["type"] == "kubernetes" and event["event"] == "final"), None)
        if final is not None:
            out["pods_ready"], out["pods_desired"] = final["pods_ready"], final["pods_desired"]
        out["evictions_api"] = sum(1 for event in events if event["type"] == "eviction" and event.get("outcome") == "evicted")
        out["evictions_refused"] = sum(1 for event in events if event["type"] == "eviction" and event.get("outcome") == "refused")
        out["evictions_taint"] = sum(1 for event in events if event["type"] == "taint-eviction")
        starts: dict[str, int] = {}
        for event in events:
            if event["type"] == "leader" and event["event"] == "start":
                lease = event["lease"].rpartition("/")[2]
                starts[lease] = starts.get(lease, 0) + 1
        for lease in ("kube-controller-manager", "kube-scheduler"):
            out[f"leader_changes_{lease.removeprefix('kube-').replace('-', '_')}"] = max(0, starts.get(lease, 0) - 1)
        out["etcd_elections"] = sum(1 for event in events if event["type"] == "raft-role" and event["role"] == "leader")
        if self.probes:
            totals = {"ok": 0, "no-endpoints": 0, "refused": 0, "timeout": 0}
            for probe in self.probes:
                for outcome, count in probe.statistics().items():
                    totals[outcome] += count
            out["traffic_ok"] = totals["ok"]
            out["traffic_failed"] = totals["no-endpoints"] + totals["refused"] + totals["timeout"]
        return out


# =========================================================================== helpers
def check_no_mass_eviction(events: list[dict[str, Any]], nodes: list[str], fraction: float = MASS_EVICTION_FRACTION) -> Verdict:
    """False when the taint manager's evictions (``taint-eviction`` events) took pods from
    at least ``fraction`` of ``nodes``. The bound is kube-controller-manager's
    ``--unhealthy-zone-threshold`` (0.55): past it a zone is treated as disrupted and a
    small cluster stops evicting, and when every zone is fully disrupted nothing is evicted
    ("Rate limits on eviction",
    https://kubernetes.io/docs/concepts/architecture/nodes/#rate-limits-on-eviction;
    ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` ``handleDisruption``).
    It is this experiment-level bound, not a proof of the controller's rules: two zones of
    a three-zone cluster failing may rightly evict more."""
    assert nodes, "a cluster has nodes"
    by_node: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["type"] == "taint-eviction":
            by_node.setdefault(event["node"], []).append(event)
    evicted = len(by_node)
    pods = sum(len(rows) for rows in by_node.values())
    details = {"nodes": len(nodes), "nodes_evicted_from": sorted(by_node), "pods_evicted": pods}
    if evicted >= max(1, math.ceil(fraction * len(nodes))):
        evidence = tuple(rows[0] for _, rows in sorted(by_node.items()))
        return Verdict(False, f"taint-based evictions took {pods} pod(s) from {evicted} of {len(nodes)} nodes (mass eviction: at least {fraction:.0%} of the nodes)", evidence, details)
    return Verdict(True, f"taint-based evictions took {pods} pod(s) from {evicted} of {len(nodes)} nodes (below {fraction:.0%})", details=details)


#: How many of the objects an end-state assertion found its event names (the rest counted).
END_STATE_NAMES = 20


def _end_state_name(obj: Any) -> str:
    """``namespace/name`` (or ``name``), and its owners: ``default/web-pdb (owner Deployment/web)``."""
    meta = obj.metadata
    name = f"{meta.namespace}/{meta.name}" if getattr(meta, "namespace", "") else str(meta.name)
    owners = [f"{ref.get('kind')}/{ref.get('name')}" if isinstance(ref, dict) else f"{getattr(ref, 'kind', '')}/{getattr(ref, 'name', '')}" for ref in (getattr(meta, "owner_references", None) or [])]
    return f"{name} (owner {', '.join(owners)})" if owners else name


def _found(event: dict[str, Any]) -> str:
    """``found 2: default/a, default/b`` (older journals: ``found 2``)."""
    names = event.get("objects")
    if not names:
        return f"found {event['found']}"
    more = f" and {event['more']} more" if event.get("more") else ""
    return f"found {event['found']}: {', '.join(names)}{more}"


def check_end_state(events: list[dict[str, Any]], expected: int) -> Verdict:
    """The ``end-state`` checker: every ``workload.end_state`` assertion held at the end."""
    results = [event for event in events if event["type"] == "end-state"]
    if not expected:
        return Verdict(None, "the workload names no end_state assertion")
    if len(results) < expected:
        return Verdict(None, f"only {len(results)} of {expected} end-state assertion(s) were evaluated (the run ended before the workload stopped)")
    failed = [event for event in results if event["valid"] is False]
    if failed:
        return Verdict(False, f"{len(failed)} end-state assertion(s) failed: " + "; ".join(f"{event['assertion']} ({_found(event)})" for event in failed), tuple(failed))
    if any(event["valid"] is None for event in results):
        return Verdict(None, next(event["reason"] for event in results if event["valid"] is None))
    return Verdict(True, f"all {len(results)} end-state assertion(s) held: " + "; ".join(event["assertion"] for event in results))


class KubectlAdmin:
    """:class:`chaoskube.faults.kinds.Admin` for the cluster: ``kubectl`` (cluster-admin, from the
    system's ``kubectl`` process) drains and uncordons nodes for the ``drain`` fault
    (module docstring, "Fault context"). Never raises for an API error: it journals it."""

    def __init__(self, system: KubernetesSystem) -> None:
        self.system = system

    async def drain(self, node: str) -> None:
        from chaoskube.node.kubelet import drain

        client, world = self.system._client, self.system.world
        assert client is not None, "the cluster runs"
        try:
            result = await drain(client, node, timeout_s=DRAIN_TIMEOUT_S)
        except ApiError as error:
            outcome = f"error: {error}"
        except trio.Cancelled:
            world.record("fault-action", action="drain", node=node, outcome="stopped by heal")
            raise
        else:
            outcome = "drained" if result.completed else f"incomplete: {len(result.remaining)} remaining, {len(result.errors)} error(s)"
        world.record("fault-action", action="drain", node=node, outcome=outcome)

    async def uncordon(self, node: str) -> None:
        from chaoskube.node.kubelet import cordon

        client, world = self.system._client, self.system.world
        assert client is not None, "the cluster runs"
        for attempt in range(1, UNCORDON_ATTEMPTS + 1):
            try:
                await cordon(client, node, unschedulable=False)
            except ApiError as error:
                if attempt == UNCORDON_ATTEMPTS or error.code == 404:
                    world.record("fault-action", action="uncordon", node=node, outcome=f"error: {error} (attempt {attempt})")
                    return
                await world.sleep(UNCORDON_RETRY_S)
                continue
            world.record("fault-action", action="uncordon", node=node, outcome="uncordoned")
            return


class _CurrentProxy:
    """The kube-proxy rule table a client on the first running node sees: that node's
    kube-proxy as it is now (a restarted node has a new one). Has the two members
    :class:`~chaoskube.node.proxy.TrafficProbe` uses, ``node`` and ``rule``."""

    def __init__(self, handle: Cluster, nodes: list[str]) -> None:
        assert nodes, "traffic needs a node"
        self.handle = handle
        self.nodes = list(nodes)

    @property
    def node(self) -> str:
        world = self.handle.world
        return next((name for name in self.nodes if world.process(name).running and name in self.handle.proxies), self.nodes[0])

    def rule(self, service: str, port: int | str) -> Any:
        proxy = self.handle.proxies.get(self.node)
        if proxy is None:
            return None
        found = proxy.rule(service, port)
        if found is not None:
            return found
        return self._dns_rule(proxy, service, port)

    @staticmethod
    def _dns_rule(proxy: Any, service: str, port: int | str) -> Any:
        """A headless Service has no virtual IP and kube-proxy no rules for it: a client
        resolves its DNS name and connects to one of the addresses. CoreDNS answers the
        ready endpoints of the Service's EndpointSlices (all of them with
        ``publishNotReadyAddresses``), the same slices kube-proxy watches; so the probe
        picks among those, as the rules of a virtual IP would."""
        import msgspec as _msgspec

        from chaoskube.node.proxy import compute_rules

        namespace = service.partition("/")[0]
        found = proxy.services.indexer.get_by_key(service)
        if found is None or found.spec.cluster_ip != "None":
            return None
        as_if = _msgspec.structs.replace(found, spec=_msgspec.structs.replace(found.spec, cluster_ip="dns"))
        slices = [endpoint_slice for endpoint_slice in proxy.slices.indexer.list() if endpoint_slice.metadata.namespace == namespace]
        table = compute_rules([as_if], slices, proxy.node)
        for (key, port_name), rule in table.items():
            if key == service and (port_name == port if isinstance(port, str) else rule.port == port):
                return rule
        return None


def _cluster_options(cluster: dict[str, Any]) -> ClusterSpec:
    """``load_cluster_spec`` with its one-line error re-worded to name the field under
    ``cluster``; node names must not collide."""
    try:
        spec = load_cluster_spec(cluster, "cluster")
        spec.nodes()
    except ClusterSpecError as error:
        message = field_message(str(error).removeprefix("cluster: "))
        if message.startswith("field `(top level)`"):
            raise ExperimentError(message.replace("field `(top level)`", "field `cluster`", 1)) from None
        raise ExperimentError(message.replace("field `", "field `cluster.", 1)) from None
    except ValueError as error:
        raise ExperimentError(f"field `cluster.nodeGroups`: {error}") from None
    return spec


def _load(path: str | Path, skip_unsupported: bool, custom: Any = None) -> tuple[list[Object], list[Any]]:
    """The manifests of ``path``; with ``skip_unsupported``, the documents left out too.
    ``custom``: the custom kinds the rest of the set's CRDs serve (:func:`set_custom_kinds`)."""
    if skip_unsupported:
        return load_manifests(path, skip_unsupported=True, custom=custom)
    return load_manifests(path, custom=custom), []


def set_custom_kinds(paths: list[str | Path]) -> dict[tuple[str, str], type]:
    """The custom kinds the CustomResourceDefinitions of every file of ``workload.manifests``
    serve, so a CRD in one file serves the custom resources of another, as it does inside
    one file or directory (``kubectl apply -f a.yaml -f b.yaml`` applies them as one set;
    issue 32). Custom resources of kinds not served yet are skipped in this first pass;
    any other problem is raised by the loads that follow."""
    crds: list[Object] = []
    for path in paths:
        try:
            found, _ = load_manifests(path, skip_unsupported=True)
        except (FileNotFoundError, ManifestError, OSError):
            continue
        crds += [obj for obj in found if obj.KIND == "CustomResourceDefinition"]
    return custom_kinds(crds)


def _load_set(paths: list[str], skip_unsupported: bool) -> list[tuple[list[Object], list[Any]]]:
    """:func:`_load` of each of ``paths`` as one set (:func:`set_custom_kinds`)."""
    custom = set_custom_kinds(list(paths)) if len(paths) > 1 else None
    return [_load(path, skip_unsupported, custom) for path in paths]


def _probeable(obj: Object) -> bool:
    """A Service the traffic probe can reach: a selector and a port (through kube-proxy's
    rules for a virtual IP, through DNS for a headless one); not ExternalName."""
    return obj.KIND == "Service" and bool(obj.spec.selector) and obj.spec.type != "ExternalName" and bool(obj.spec.ports)


def _key(obj: Any) -> str:
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _ready_of(obj: Any) -> int:
    """The ready pods a workload's status reports."""
    if obj.KIND == "DaemonSet":
        return obj.status.number_ready
    if obj.KIND == "Job":
        return obj.status.ready or 0
    if obj.KIND == "Pod":
        return 1 if any(c.type == "Ready" and c.status == "True" for c in obj.status.conditions) else 0
    return obj.status.ready_replicas


def _replicas(deployment: Any) -> int:
    return 1 if deployment.spec.replicas is None else deployment.spec.replicas  # the API server's default


async def _idle(process: Process) -> None:
    await trio.sleep_forever()

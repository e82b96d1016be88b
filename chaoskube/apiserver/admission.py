"""The API server's built-in admission plugins, as pure functions of a request.

Modelled on kube-apiserver's admission chain
(``staging/src/k8s.io/apiserver/pkg/admission/interfaces.go``): a plugin says which
operations it ``handles``; a mutating plugin ``admit``s (``MutationInterface.Admit``) and may
return a changed object; a validating plugin ``validate``s (``ValidationInterface.Validate``)
and may not change anything. A plugin may implement both (Priority does, as in Kubernetes).

Contract, for the API server that calls :func:`run_chain`:

1. Build an :class:`AdmissionRequest` after authentication and authorization, with the
   decoded object (CREATE, UPDATE), the stored object (``old_object``: UPDATE, DELETE) and
   the URL's namespace, name and subresource. ``kind`` is the kind of the resource in the URL
   (``Pod`` for ``pods/binding`` too; the subresource says which).
2. Build the plugins from the current informer caches (:func:`default_plugins`): they hold
   snapshots (namespaces, service accounts, priority classes), not clients. Nothing here reads
   a clock, draws randomness or does I/O.
3. :func:`run_chain` runs every mutating plugin in order, then every validating plugin on the
   mutated object, and stops at the first refusal. Admission webhooks go after the
   built-ins of their phase (DESIGN.md); they are not in this module.
4. On ``allowed``, persist ``result.object``. Schema validation belongs between the two
   phases: an API server that does it calls :func:`run_mutating`, validates, then
   :func:`run_validating` on the mutated object (``run_chain`` is exactly those two). ``result.patches`` is the RFC 6902 patch from the request's object to
   it, as a mutating webhook would return it, for the journal and for audit.

``dry_run`` is carried for plugins with side effects (Kubernetes' contract); the built-ins
here have none, so they ignore it.

Guarantees: no plugin mutates its request (mutating plugins work on a :func:`deep_copy`);
each mutating plugin is idempotent, so running the mutating chain on its own output changes
nothing (a test holds us to it); refusals carry Kubernetes' own messages and HTTP codes.

Non-guarantees: the plugins are those the simulated control plane depends on, each
simplified where its docstring says; no PodSecurity or TaintNodesByCondition (ResourceQuota
is charged by the server, ``ApiServer._charge_quota``, before the write). ``Defaulting`` is not an admission plugin in Kubernetes: defaults are
applied when the request body is decoded, before admission. It runs first here to the same
effect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from chaoskube.api.identity import NODE_LEASE_NAMESPACE, UserInfo, node_name_of
from chaoskube.api.manifests import to_dict
from chaoskube.api.objects import (
    KINDS,
    Container,
    Deployment,
    Namespace,
    Node,
    Object,
    Pod,
    PodSpec,
    PriorityClass,
    ReplicaSet,
    RollingUpdateDeployment,
    Service,
    Toleration,
    deep_copy,
)
from chaoskube.api.patch import create_patch

__all__ = [
    "AdmissionRequest",
    "AdmissionResult",
    "DefaultStorageClassPlugin",
    "DefaultTolerationSecondsPlugin",
    "DefaultingPlugin",
    "LimitRangerPlugin",
    "MutatingPlugin",
    "NamespaceLifecyclePlugin",
    "NodeRestrictionPlugin",
    "Operation",
    "PriorityPlugin",
    "ServiceAccountPlugin",
    "StorageObjectInUseProtectionPlugin",
    "UserInfo",
    "ValidatingPlugin",
    "default_plugins",
    "forbidden_by_admission",
    "node_identity",
    "run_chain",
    "run_mutating",
    "run_validating",
]

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
OPERATIONS: tuple[str, ...] = ("CREATE", "UPDATE", "DELETE", "CONNECT")

#: HTTP codes of a refusal: 403 Forbidden (admission.NewForbidden), 404 NotFound (a missing
#: namespace), 400 BadRequest (an object of the wrong type). 200 when allowed.
CODES: tuple[int, ...] = (200, 400, 403, 404)

#: Annotation of a kubelet's mirror pod (``kubernetes.io/config.mirror``, pkg/kubelet/types).
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionRequest:
    """``admission.Attributes``. ``object`` is None for DELETE and CONNECT; ``old_object`` is
    set for UPDATE and DELETE. An empty ``namespace`` means a cluster-scoped request. A
    subresource request (``pods/eviction``) may carry no object: its body's kind (Eviction,
    Binding) is not modelled; ``old_object`` is then the parent object."""

    operation: Operation
    kind: str
    namespace: str = ""
    name: str = ""
    object: Object | None = None
    old_object: Object | None = None
    user: UserInfo = field(default_factory=lambda: UserInfo(name="system:anonymous", groups=("system:unauthenticated",)))
    subresource: str = ""
    dry_run: bool = False
    request_id: str = ""  # the API request's id, for the journal (webhook calls name it)

    def __post_init__(self) -> None:
        assert self.operation in OPERATIONS, self.operation
        if self.operation in ("CREATE", "UPDATE") and not self.subresource:
            # Subresources may carry kinds not modelled here (an Eviction, a Binding).
            assert self.object is not None, f"{self.operation} carries an object"
        if self.object is not None and self.subresource == "":
            assert self.object.KIND == self.kind, (self.object.KIND, self.kind)


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionResult:
    """What a plugin (or the chain) decided.

    ``allowed`` with ``code`` 200, or refused with ``code`` in 400/403/404 and ``reason``: the
    message the API server answers with (``pods "web" is forbidden: ...``). ``object`` is the
    object to continue with (the request's own when nothing changed; None when the request
    had none). ``patches`` is the RFC 6902 patch from the request's object (``source``) to
    ``object``, computed when asked for: the API server never needs it, and diffing every
    plugin's output was most of the chain's cost. ``plugin`` names the plugin that refused.
    """

    allowed: bool
    reason: str = ""
    object: Object | None = None
    source: Object | None = field(default=None, compare=False, repr=False)
    code: int = 200
    plugin: str = ""

    def __post_init__(self) -> None:
        assert self.code in CODES, self.code
        assert self.allowed == (self.code == 200), (self.allowed, self.code)
        assert self.allowed or self.reason, "a refusal says why"

    @property
    def patches(self) -> tuple[dict[str, Any], ...]:
        if self.source is None or self.object is None or self.object is self.source:
            return ()
        return tuple(create_patch(to_dict(self.source), to_dict(self.object)))


@runtime_checkable
class MutatingPlugin(Protocol):
    """``admission.MutationInterface``: may change the object; never the request."""

    name: str

    def handles(self, operation: str) -> bool: ...

    def admit(self, request: AdmissionRequest) -> AdmissionResult: ...


@runtime_checkable
class ValidatingPlugin(Protocol):
    """``admission.ValidationInterface``: allows or refuses; never changes anything."""

    name: str

    def handles(self, operation: str) -> bool: ...

    def validate(self, request: AdmissionRequest) -> AdmissionResult: ...


# =========================================================================== errors


def _qualified_resource(kind: str) -> str:
    """``schema.GroupResource.String()``: "pods", "deployments.apps"."""
    info = KINDS.get(kind)
    if info is None:
        return kind.lower() + "s"
    group = info.api_version.rpartition("/")[0]
    return f"{info.resource}.{group}" if group else info.resource


def forbidden_by_admission(request: AdmissionRequest, reason: str) -> str:
    """``apierrors.NewForbidden`` through ``admission.NewForbidden``: the name is the
    request's, else the object's (a CREATE names it in the body), else its generateName
    (``extractResourceName``: name generation has not happened yet), else none."""
    resource = _qualified_resource(request.kind)
    name = request.name or (request.object.metadata.name or request.object.metadata.generate_name if request.object is not None else "")
    if name:
        return f'{resource} "{name}" is forbidden: {reason}'
    return f"{resource} is forbidden: {reason}"


def _forbidden(plugin: str, request: AdmissionRequest, reason: str) -> AdmissionResult:
    return AdmissionResult(allowed=False, reason=forbidden_by_admission(request, reason), code=403, plugin=plugin)


def _allowed(request: AdmissionRequest, obj: Object | None = None) -> AdmissionResult:
    """Allowed; with ``obj`` (a changed copy), the patch from the request's object to it."""
    if obj is None or request.object is None or obj == request.object:
        return AdmissionResult(allowed=True, object=request.object)
    return AdmissionResult(allowed=True, object=obj, source=request.object)


def _pod_request(request: AdmissionRequest) -> bool:
    """A request on pods proper (not a subresource) that carries a Pod."""
    return request.kind == "Pod" and request.subresource == "" and isinstance(request.object, Pod)


# =========================================================================== defaulting


def _image_pull_policy(image: str) -> str:
    """``SetDefaults_Container``: Always for ":latest" or no tag, else IfNotPresent.

    The tag is what follows the last ":" after the last "/" (a registry port is not a tag);
    an image pinned by digest ("@sha256:...") is IfNotPresent.
    """
    if "@" in image:
        return "IfNotPresent"
    last = image.rpartition("/")[2]
    _, colon, tag = last.rpartition(":")
    if not colon or tag == "latest":
        return "Always"
    return "IfNotPresent"


def _default_container(container: Container) -> None:
    if not container.image_pull_policy:
        container.image_pull_policy = _image_pull_policy(container.image)
    if not container.termination_message_path:
        container.termination_message_path = "/dev/termination-log"
    if not container.termination_message_policy:
        container.termination_message_policy = "File"
    for port in container.ports:
        if not port.protocol:
            port.protocol = "TCP"


def _default_pod_spec(spec: PodSpec) -> None:
    """``SetDefaults_PodSpec`` (pkg/apis/core/v1/defaults.go), for pods and pod templates."""
    if not spec.dns_policy:
        spec.dns_policy = "ClusterFirst"
    if not spec.restart_policy:
        spec.restart_policy = "Always"
    if spec.termination_grace_period_seconds is None:
        spec.termination_grace_period_seconds = 30  # v1.DefaultTerminationGracePeriodSeconds
    if not spec.scheduler_name:
        spec.scheduler_name = "default-scheduler"  # v1.DefaultSchedulerName
    if spec.security_context is None:
        spec.security_context = {}
    for container in (*spec.init_containers, *spec.containers):
        _default_container(container)


def _default_pod(pod: Pod) -> None:
    """``SetDefaults_Pod``: requests default to limits per container (the scheduler reads
    requests), and enableServiceLinks to true; then the pod spec's defaults."""
    for container in (*pod.spec.init_containers, *pod.spec.containers):
        for resource, limit in container.resources.limits.items():
            container.resources.requests.setdefault(resource, limit)
    if pod.spec.enable_service_links is None:
        pod.spec.enable_service_links = True
    _default_pod_spec(pod.spec)


def _default_deployment(deployment: Deployment) -> None:
    """``SetDefaults_Deployment`` (pkg/apis/apps/v1/defaults.go)."""
    spec = deployment.spec
    if spec.replicas is None:
        spec.replicas = 1
    if not spec.strategy.type:
        spec.strategy.type = "RollingUpdate"
    if spec.strategy.type == "RollingUpdate":
        if spec.strategy.rolling_update is None:
            spec.strategy.rolling_update = RollingUpdateDeployment()
        if spec.strategy.rolling_update.max_unavailable is None:
            spec.strategy.rolling_update.max_unavailable = "25%"
        if spec.strategy.rolling_update.max_surge is None:
            spec.strategy.rolling_update.max_surge = "25%"
    if spec.revision_history_limit is None:
        spec.revision_history_limit = 10
    if spec.progress_deadline_seconds is None:
        spec.progress_deadline_seconds = 600
    _default_pod_spec(spec.template.spec)


def _default_replica_set(replica_set: ReplicaSet) -> None:
    """``SetDefaults_ReplicaSet`` (pkg/apis/apps/v1/defaults.go)."""
    if replica_set.spec.replicas is None:
        replica_set.spec.replicas = 1
    _default_pod_spec(replica_set.spec.template.spec)


def _default_service(service: Service) -> None:
    """``SetDefaults_Service`` (pkg/apis/core/v1/defaults.go)."""
    spec = service.spec
    if not spec.session_affinity:
        spec.session_affinity = "None"
    if not spec.type:
        spec.type = "ClusterIP"
    for port in spec.ports:
        if not port.protocol:
            port.protocol = "TCP"
        if port.target_port is None or port.target_port in (0, ""):
            port.target_port = port.port
    if spec.type in ("NodePort", "LoadBalancer") and not spec.external_traffic_policy:
        spec.external_traffic_policy = "Cluster"
    if spec.type != "ExternalName" and spec.internal_traffic_policy is None:
        spec.internal_traffic_policy = "Cluster"


def _default_claim_spec(spec: Any) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec``: volumeMode Filesystem."""
    if spec.volume_mode is None:
        spec.volume_mode = "Filesystem"


#: Feature gates of SetDefaults_StatefulSet, at their 1.30 defaults: ``MaxUnavailableStatefulSet``
#: (alpha, off) and ``StatefulSetAutoDeletePVC`` (beta, on).
MAX_UNAVAILABLE_STATEFUL_SET = False
STATEFUL_SET_AUTO_DELETE_PVC = True


def _default_stateful_set(sts: Any, *, max_unavailable_stateful_set: bool = MAX_UNAVAILABLE_STATEFUL_SET, stateful_set_auto_delete_pvc: bool = STATEFUL_SET_AUTO_DELETE_PVC) -> None:
    """``SetDefaults_StatefulSet`` (pkg/apis/apps/v1/defaults.go): a rollingUpdate block is
    made only when the strategy type was defaulted (an explicit RollingUpdate without one
    keeps none); its partition 0, its maxUnavailable 1 with the gate; the PVC retention
    policy Retain/Retain with its gate; replicas 1, revisionHistoryLimit 10."""
    from chaoskube.api.objects import RollingUpdateStatefulSetStrategy, StatefulSetPersistentVolumeClaimRetentionPolicy

    spec = sts.spec
    if not spec.pod_management_policy:
        spec.pod_management_policy = "OrderedReady"
    if not spec.update_strategy.type:
        spec.update_strategy.type = "RollingUpdate"
        if spec.update_strategy.rolling_update is None:
            spec.update_strategy.rolling_update = RollingUpdateStatefulSetStrategy()
    rolling = spec.update_strategy.rolling_update
    if spec.update_strategy.type == "RollingUpdate" and rolling is not None:
        if rolling.partition is None:
            rolling.partition = 0
        if max_unavailable_stateful_set and rolling.max_unavailable is None:
            rolling.max_unavailable = 1
    if stateful_set_auto_delete_pvc:
        if spec.persistent_volume_claim_retention_policy is None:
            spec.persistent_volume_claim_retention_policy = StatefulSetPersistentVolumeClaimRetentionPolicy()
        policy = spec.persistent_volume_claim_retention_policy
        policy.when_deleted = policy.when_deleted or "Retain"
        policy.when_scaled = policy.when_scaled or "Retain"
    if spec.replicas is None:
        spec.replicas = 1
    if spec.revision_history_limit is None:
        spec.revision_history_limit = 10
    for claim in spec.volume_claim_templates:
        _default_claim_spec(claim.spec)
    _default_pod_spec(spec.template.spec)


def _default_daemon_set(ds: Any) -> None:
    """``SetDefaults_DaemonSet``: RollingUpdate with maxUnavailable 1 and maxSurge 0."""
    from chaoskube.api.objects import RollingUpdateDaemonSet

    strategy = ds.spec.update_strategy
    if not strategy.type:
        strategy.type = "RollingUpdate"
    if strategy.type == "RollingUpdate":
        if strategy.rolling_update is None:
            strategy.rolling_update = RollingUpdateDaemonSet()
        if strategy.rolling_update.max_unavailable is None:
            strategy.rolling_update.max_unavailable = 1
        if strategy.rolling_update.max_surge is None:
            strategy.rolling_update.max_surge = 0
    if ds.spec.revision_history_limit is None:
        ds.spec.revision_history_limit = 10
    _default_pod_spec(ds.spec.template.spec)


#: ``math.MaxInt32``: the backoffLimit of a Job with backoffLimitPerIndex.
_MAX_INT32 = 2**31 - 1


def _default_job(job: Any, *, pod_replacement_policy_gate: bool = True) -> None:
    """``SetDefaults_Job`` (pkg/apis/batch/v1/defaults.go); ``pod_replacement_policy_gate``
    is the ``JobPodReplacementPolicy`` feature gate (beta, on by default since 1.29)."""
    spec = job.spec
    if spec.completions is None and spec.parallelism is None:
        spec.completions = 1
        spec.parallelism = 1
    if spec.parallelism is None:
        spec.parallelism = 1
    if spec.backoff_limit is None:
        spec.backoff_limit = _MAX_INT32 if spec.backoff_limit_per_index is not None else 6
    if not job.metadata.labels:
        job.metadata.labels = dict(spec.template.metadata.labels)
    if spec.completion_mode is None:
        spec.completion_mode = "NonIndexed"
    if spec.suspend is None:
        spec.suspend = False
    if spec.pod_failure_policy is not None:
        for rule in spec.pod_failure_policy.rules:
            for pattern in rule.on_pod_conditions:
                if not pattern.status:
                    pattern.status = "True"
    if spec.pod_replacement_policy is None and pod_replacement_policy_gate:
        spec.pod_replacement_policy = "Failed" if spec.pod_failure_policy is not None else "TerminatingOrFailed"
    if spec.manual_selector is None:
        spec.manual_selector = False
    _default_pod_spec(spec.template.spec)


def _default_cron_job(cron: Any) -> None:
    """``SetDefaults_CronJob``: concurrencyPolicy Allow, not suspended, history 3 and 1."""
    spec = cron.spec
    if not spec.concurrency_policy:
        spec.concurrency_policy = "Allow"
    if spec.suspend is None:
        spec.suspend = False
    if spec.successful_jobs_history_limit is None:
        spec.successful_jobs_history_limit = 3
    if spec.failed_jobs_history_limit is None:
        spec.failed_jobs_history_limit = 1
    _default_pod_spec(spec.job_template.spec.template.spec)


def _default_replication_controller(rc: Any) -> None:
    """``SetDefaults_ReplicationController``: selector and labels from the template's
    labels when empty; replicas 1."""
    template = rc.spec.template
    if template is not None:
        if not rc.spec.selector:
            rc.spec.selector = dict(template.metadata.labels)
        if not rc.metadata.labels:
            rc.metadata.labels = dict(template.metadata.labels)
        _default_pod_spec(template.spec)
    if rc.spec.replicas is None:
        rc.spec.replicas = 1


def _default_claim(claim: Any) -> None:
    _default_claim_spec(claim.spec)


def _default_volume(pv: Any) -> None:
    """``SetDefaults_PersistentVolume``: reclaim policy Retain, volumeMode Filesystem."""
    if not pv.spec.persistent_volume_reclaim_policy:
        pv.spec.persistent_volume_reclaim_policy = "Retain"
    if pv.spec.volume_mode is None:
        pv.spec.volume_mode = "Filesystem"


def _default_storage_class(sc: Any) -> None:
    """``SetDefaults_StorageClass``: reclaimPolicy Delete, volumeBindingMode Immediate."""
    if sc.reclaim_policy is None:
        sc.reclaim_policy = "Delete"
    if sc.volume_binding_mode is None:
        sc.volume_binding_mode = "Immediate"


def _default_secret(secret: Any) -> None:
    """``SetDefaults_Secret`` (type Opaque) and the v1 conversion of ``stringData``: merged
    into ``data`` (base64), winning on a clash, and never stored."""
    import base64

    if not secret.type:
        secret.type = "Opaque"
    if secret.string_data:
        data = dict(secret.data)
        for key, value in secret.string_data.items():
            data[key] = base64.b64encode(value.encode()).decode("ascii")
        secret.data = data
        secret.string_data = {}


def _default_hpa(hpa: Any) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (autoscaling/v2): minReplicas 1, and a CPU
    utilization target of 80% when no metric is given."""
    if hpa.spec.min_replicas is None:
        hpa.spec.min_replicas = 1
    if not hpa.spec.metrics:
        hpa.spec.metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


def _default_network_policy(np: Any) -> None:
    """``SetDefaults_NetworkPolicy``: policyTypes Ingress, plus Egress when egress rules exist."""
    if not np.spec.policy_types:
        np.spec.policy_types = ["Ingress", "Egress"] if np.spec.egress else ["Ingress"]


def _default_limit_range(lr: Any) -> None:
    """``SetDefaults_LimitRangeItem``: for Container items, default from max, defaultRequest
    from default, then from min."""
    for item in lr.spec.limits:
        if item.type != "Container":
            continue
        default = dict(item.default)
        for key, value in item.max.items():
            default.setdefault(key, value)
        request = dict(item.default_request)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in item.min.items():
            request.setdefault(key, value)
        item.default, item.default_request = default, request


def _default_crd(crd: Any) -> None:
    """``SetDefaults_CustomResourceDefinitionSpec``: singular and listKind from kind,
    conversion strategy None."""
    names = crd.spec.names
    if not names.singular:
        names.singular = names.kind.lower()
    if not names.list_kind and names.kind:
        names.list_kind = f"{names.kind}List"
    if crd.spec.conversion is None:
        crd.spec.conversion = {"strategy": "None"}


_DEFAULTERS = {
    "Pod": _default_pod,
    "Deployment": _default_deployment,
    "ReplicaSet": _default_replica_set,
    "Service": _default_service,
    "StatefulSet": _default_stateful_set,
    "DaemonSet": _default_daemon_set,
    "Job": _default_job,
    "CronJob": _default_cron_job,
    "ReplicationController": _default_replication_controller,
    "PersistentVolumeClaim": _default_claim,
    "PersistentVolume": _default_volume,
    "StorageClass": _default_storage_class,
    "Secret": _default_secret,
    "HorizontalPodAutoscaler": _default_hpa,
    "NetworkPolicy": _default_network_policy,
    "LimitRange": _default_limit_range,
    "CustomResourceDefinition": _default_crd,
}


@dataclass(frozen=True, slots=True)
class DefaultingPlugin:
    """The API server's defaults for the fields the control plane reads.

    Sources: ``pkg/apis/core/v1/defaults.go`` (``SetDefaults_Pod``, ``SetDefaults_PodSpec``,
    ``SetDefaults_Container``, ``SetDefaults_Service``) and ``pkg/apis/apps/v1/defaults.go``
    (``SetDefaults_Deployment``, ``SetDefaults_ReplicaSet``). Pod: restartPolicy Always,
    terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, schedulerName
    default-scheduler, securityContext {}, enableServiceLinks true, requests from limits;
    containers: imagePullPolicy (Always for ":latest" or no tag, else IfNotPresent),
    terminationMessagePath/Policy, port protocol TCP; the same pod-spec defaults inside
    Deployment and ReplicaSet templates. Deployment: replicas 1, strategy RollingUpdate with
    maxSurge 25% and maxUnavailable 25%, revisionHistoryLimit 10, progressDeadlineSeconds
    600. ReplicaSet: replicas 1. Service: type ClusterIP, sessionAffinity None, port
    protocol TCP, targetPort = port, traffic policies Cluster. PodDisruptionBudget, Lease:
    nothing (policy/v1 and coordination/v1 default nothing we model).

    In Kubernetes this is not an admission plugin: it happens when the body is decoded, on
    every CREATE and UPDATE (status updates too), before the mutating plugins.
    """

    name: str = "Defaulting"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE")

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        defaulter = _DEFAULTERS.get(request.kind)
        if defaulter is None or request.object is None or request.object.KIND != request.kind:
            return _allowed(request)
        obj = deep_copy(request.object)
        defaulter(obj)
        return _allowed(request, obj)


# =========================================================================== ServiceAccount


@dataclass(frozen=True, slots=True)
class ServiceAccountPlugin:
    """ServiceAccount (``plugin/pkg/admission/serviceaccount/admission.go``), on pod CREATE.

    Sets ``serviceAccountName`` to "default" when unset (taking the deprecated
    ``serviceAccount`` alias first, as the v1 conversion does, and writing the alias back) and
    refuses a pod whose service account does not exist:
    ``error looking up service account NS/NAME: serviceaccount "NAME" not found``. A mirror
    pod (annotation ``kubernetes.io/config.mirror``) is left alone, and refused if it names a
    service account. ``service_accounts`` holds the (namespace, name) pairs that exist.

    Simplified: the token volume (``kube-api-access-<random>``) and the service account's
    imagePullSecrets are not added; Kubernetes retries the lookup of "default" for a while
    (the controller may not have created it yet), we answer from the snapshot at once.
    """

    service_accounts: frozenset[tuple[str, str]] = frozenset()
    name: str = "ServiceAccount"

    def handles(self, operation: str) -> bool:
        return operation == "CREATE"

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        if not _pod_request(request):
            return _allowed(request)
        pod = deep_copy(request.object)
        assert isinstance(pod, Pod)
        if MIRROR_POD_ANNOTATION in pod.metadata.annotations:
            if pod.spec.service_account_name:
                return _forbidden(self.name, request, "a mirror pod may not reference service accounts")
            return _allowed(request)
        if not pod.spec.service_account_name:
            pod.spec.service_account_name = pod.spec.service_account or "default"
        pod.spec.service_account = pod.spec.service_account_name
        account = pod.spec.service_account_name
        if (request.namespace, account) not in self.service_accounts:
            return _forbidden(self.name, request, f'error looking up service account {request.namespace}/{account}: serviceaccount "{account}" not found')
        return _allowed(request, pod)


# =========================================================================== Priority

#: ``scheduling.SystemPriorityClasses()`` (pkg/apis/scheduling/types.go): created by the API
#: server at start-up; here they exist always.
SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class PriorityPlugin:
    """Priority (``plugin/pkg/admission/priority/admission.go``).

    Admit, pod CREATE: resolves ``priorityClassName`` into ``priority`` and
    ``preemptionPolicy`` (system-node-critical 2000001000, system-cluster-critical
    2000000000, else the given PriorityClasses); unset, it takes the globalDefault class (the
    lowest value if several, as ``getDefaultPriorityClass``) and writes its name, or priority
    0 and PreemptLowerPriority when there is none. Refuses an unknown class ("no
    PriorityClass with name X was found") and a pod that already carries a different
    priority or preemptionPolicy (Kubernetes' messages). Pod UPDATE keeps the stored priority
    and preemptionPolicy when the update drops them.

    Validate, PriorityClass CREATE/UPDATE: at most one globalDefault ("PriorityClass X is
    already marked as default. Only one default can exist").
    """

    priority_classes: tuple[PriorityClass, ...] = ()
    name: str = "Priority"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE", "DELETE")

    def _default_class(self) -> PriorityClass | None:
        defaults = [pc for pc in self.priority_classes if pc.global_default]
        return min(defaults, key=lambda pc: (pc.value, pc.metadata.name)) if defaults else None

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        if not _pod_request(request) or request.operation not in ("CREATE", "UPDATE"):
            return _allowed(request)
        pod = deep_copy(request.object)
        assert isinstance(pod, Pod)
        if request.operation == "UPDATE":
            old = request.old_object
            if isinstance(old, Pod):
                if pod.spec.priority is None:
                    pod.spec.priority = old.spec.priority
                if pod.spec.preemption_policy is None:
                    pod.spec.preemption_policy = old.spec.preemption_policy
            return _allowed(request, pod)
        class_name = pod.spec.priority_class_name
        if not class_name:
            default = self._default_class()
            if default is None:
                priority, policy = 0, DEFAULT_PREEMPTION_POLICY
            else:
                class_name = default.metadata.name
                priority, policy = default.value, default.preemption_policy or DEFAULT_PREEMPTION_POLICY
        elif class_name in SYSTEM_PRIORITY_CLASSES:
            priority, policy = SYSTEM_PRIORITY_CLASSES[class_name], DEFAULT_PREEMPTION_POLICY
        else:
            found = [pc for pc in self.priority_classes if pc.metadata.name == class_name]
            if not found:
                return _forbidden(self.name, request, f"no PriorityClass with name {class_name} was found")
            priority, policy = found[0].value, found[0].preemption_policy or DEFAULT_PREEMPTION_POLICY
        if pod.spec.priority is not None and pod.spec.priority != priority:
            return _forbidden(self.name, request, f"the integer value of priority ({pod.spec.priority}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name")
        if pod.spec.preemption_policy is not None and pod.spec.preemption_policy != policy:
            return _forbidden(self.name, request, f"the string value of PreemptionPolicy ({pod.spec.preemption_policy}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name")
        pod.spec.priority_class_name = class_name
        pod.spec.priority = priority
        pod.spec.preemption_policy = policy
        return _allowed(request, pod)

    def validate(self, request: AdmissionRequest) -> AdmissionResult:
        if request.kind != "PriorityClass" or request.subresource or request.operation not in ("CREATE", "UPDATE"):
            return _allowed(request)
        pc = request.object
        if not isinstance(pc, PriorityClass) or not pc.global_default:
            return _allowed(request)
        default = self._default_class()
        if default is not None and (request.operation == "CREATE" or default.metadata.name != pc.metadata.name):
            return _forbidden(self.name, request, f"PriorityClass {default.metadata.name} is already marked as default. Only one default can exist")
        return _allowed(request)


# =========================================================================== DefaultTolerationSeconds

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def _tolerates(tolerations: Iterable[Toleration], key: str) -> bool:
    """The plugin's own test: a toleration of ``key`` (or of every key) for NoExecute (or
    for every effect). Operator and value are not looked at, as in Kubernetes."""
    return any((t.key == key or not t.key) and (t.effect == "NoExecute" or not t.effect) for t in tolerations)


@dataclass(frozen=True, slots=True)
class DefaultTolerationSecondsPlugin:
    """DefaultTolerationSeconds (``plugin/pkg/admission/defaulttolerationseconds/admission.go``).

    On pod CREATE and UPDATE (not subresources), adds ``{key: node.kubernetes.io/not-ready,
    operator: Exists, effect: NoExecute, tolerationSeconds: 300}`` and the same for
    ``node.kubernetes.io/unreachable`` unless the pod already tolerates that taint (a
    toleration with that key or no key, and effect NoExecute or no effect). 300 is the
    default of ``--default-not-ready-toleration-seconds`` and
    ``--default-unreachable-toleration-seconds``: the node lifecycle controller evicts a pod
    that long after its node goes not-ready or unreachable.
    """

    not_ready_toleration_seconds: int = 300
    unreachable_toleration_seconds: int = 300
    name: str = "DefaultTolerationSeconds"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE")

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        if not _pod_request(request):
            return _allowed(request)
        assert isinstance(request.object, Pod)
        tolerations = request.object.spec.tolerations
        missing = [
            (key, seconds)
            for key, seconds in ((NOT_READY_TAINT, self.not_ready_toleration_seconds), (UNREACHABLE_TAINT, self.unreachable_toleration_seconds))
            if not _tolerates(tolerations, key)
        ]
        if not missing:
            return _allowed(request)
        pod = deep_copy(request.object)
        for key, seconds in missing:
            pod.spec.tolerations.append(Toleration(key=key, operator="Exists", effect="NoExecute", toleration_seconds=seconds))
        return _allowed(request, pod)


# =========================================================================== NamespaceLifecycle

#: Namespaces that always exist and may not be deleted (the plugin's ``immortalNamespaces``).
IMMORTAL_NAMESPACES: frozenset[str] = frozenset({"default", "kube-system", "kube-public"})


@dataclass(frozen=True, slots=True)
class NamespaceLifecyclePlugin:
    """NamespaceLifecycle (``staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``).

    Refuses deleting default, kube-system or kube-public ("this namespace may not be
    deleted"); refuses CREATE and UPDATE of namespaced objects in a namespace that does not
    exist (404, ``namespaces "X" not found``), and CREATE in a terminating one ("unable to
    create new content in namespace X because it is being terminated"). Deletes of other
    objects, operations on Namespaces and on cluster-scoped objects pass. ``namespaces``
    holds the existing Namespace objects (phase Terminating means terminating); the immortal
    namespaces exist even if absent from it.

    Kubernetes implements this plugin as ``Admit`` (a mutating plugin that changes nothing)
    and runs it first of all, so a pod created in a missing namespace is refused 404 before
    the ServiceAccount plugin looks for the namespace's default account; so does this one.
    """

    namespaces: tuple[Namespace, ...] = ()
    name: str = "NamespaceLifecycle"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE", "DELETE")

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        if request.operation == "DELETE" and request.kind == "Namespace" and request.name in IMMORTAL_NAMESPACES:
            return AdmissionResult(allowed=False, reason=f'namespaces "{request.name}" is forbidden: this namespace may not be deleted', code=403, plugin=self.name)
        if request.kind == "Namespace" or not request.namespace or request.operation == "DELETE":
            return _allowed(request)
        phase = {ns.metadata.name: ns.status.phase for ns in self.namespaces}
        if request.namespace not in phase:
            if request.namespace in IMMORTAL_NAMESPACES:
                return _allowed(request)
            return AdmissionResult(allowed=False, reason=f'namespaces "{request.namespace}" not found', code=404, plugin=self.name)
        if request.operation == "CREATE" and phase[request.namespace] == "Terminating":
            return _forbidden(self.name, request, f"unable to create new content in namespace {request.namespace} because it is being terminated")
        return _allowed(request)


# =========================================================================== LimitRanger


@dataclass(frozen=True, slots=True)
class LimitRangerPlugin:
    """LimitRanger (``plugin/pkg/admission/limitranger/admission.go``).

    Admit, pod CREATE: the container defaults of the namespace's LimitRanges
    (``default`` → limits, ``defaultRequest`` → requests) for containers that state none,
    recorded in the ``kubernetes.io/limit-ranger`` annotation. Validate, CREATE and UPDATE of
    pods and PersistentVolumeClaims: min, max and maxLimitRequestRatio per Container, Pod and
    PersistentVolumeClaim; a violation is 403 with every violated constraint
    (``pods "web" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, ...]``);
    a pod UPDATE is not checked (its containers are immutable).
    ``limit_ranges`` are the LimitRange objects of every namespace."""

    limit_ranges: tuple[Any, ...] = ()
    name: str = "LimitRanger"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE")

    def _ranges(self, namespace: str) -> list[Any]:
        return [lr for lr in self.limit_ranges if lr.metadata.namespace == namespace]

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        from chaoskube.api.quota import LIMIT_RANGER_ANNOTATION, limit_range_defaults

        if request.operation != "CREATE" or not _pod_request(request):
            return _allowed(request)
        ranges = self._ranges(request.namespace)
        if not ranges:
            return _allowed(request)
        pod = deep_copy(request.object)
        phrases = limit_range_defaults(ranges, pod)
        if not phrases:
            return _allowed(request)
        pod.metadata.annotations = {**pod.metadata.annotations, LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: " + "; ".join(phrases)}
        return _allowed(request, pod)

    def validate(self, request: AdmissionRequest) -> AdmissionResult:
        from chaoskube.api.quota import limit_range_problems

        if request.subresource or request.kind not in ("Pod", "PersistentVolumeClaim") or request.object is None:
            return _allowed(request)
        if request.kind == "Pod" and request.operation == "UPDATE":  # SupportsAttributes: containers are immutable
            return _allowed(request)
        ranges = self._ranges(request.namespace)
        if not ranges:
            return _allowed(request)
        found = limit_range_problems(ranges, request.object)
        if not found:
            return _allowed(request)
        # one Forbidden per LimitRange, each over the aggregate of its constraints
        messages = [forbidden_by_admission(request, problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]") for problems in found]
        return AdmissionResult(allowed=False, reason=messages[0] if len(messages) == 1 else f"[{', '.join(messages)}]", code=403, plugin=self.name)


# =========================================================================== DefaultStorageClass

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


@dataclass(frozen=True, slots=True)
class DefaultStorageClassPlugin:
    """DefaultStorageClass (``plugin/pkg/admission/storage/storageclass/setdefault``): a
    PersistentVolumeClaim created without ``storageClassName`` gets the default class (the
    ``storageclass.kubernetes.io/is-default-class: "true"`` one; the newest if several).
    An explicit ``""`` stays: it asks for no class."""

    storage_classes: tuple[Any, ...] = ()
    name: str = "DefaultStorageClass"

    def handles(self, operation: str) -> bool:
        return operation == "CREATE"

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        if request.kind != "PersistentVolumeClaim" or request.subresource or request.object is None or request.object.spec.storage_class_name is not None:
            return _allowed(request)
        defaults = [sc for sc in self.storage_classes if sc.metadata.annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"]
        if not defaults:
            return _allowed(request)
        chosen = max(defaults, key=lambda sc: (sc.metadata.creation_timestamp or "", sc.metadata.name))
        claim = deep_copy(request.object)
        claim.spec.storage_class_name = chosen.metadata.name
        return _allowed(request, claim)


@dataclass(frozen=True, slots=True)
class StorageObjectInUseProtectionPlugin:
    """StorageObjectInUseProtection
    (``plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go``, on by
    default): every PersistentVolumeClaim created gets the finalizer
    ``kubernetes.io/pvc-protection`` and every PersistentVolume ``kubernetes.io/pv-protection``
    (once; not on subresources). The pvc-protection and pv-protection controllers
    (:mod:`chaoskube.controllers.volumeprotection`) remove them when nothing uses the object,
    so "users [cannot delete] a PVC that's used by a running pod" and an admin cannot
    delete a PV that is bound."""

    name: str = "StorageObjectInUseProtection"

    def handles(self, operation: str) -> bool:
        return operation == "CREATE"

    def admit(self, request: AdmissionRequest) -> AdmissionResult:
        finalizer = {"PersistentVolumeClaim": "kubernetes.io/pvc-protection", "PersistentVolume": "kubernetes.io/pv-protection"}.get(request.kind)
        if finalizer is None or request.subresource or request.object is None or finalizer in request.object.metadata.finalizers:
            return _allowed(request)
        obj = deep_copy(request.object)
        obj.metadata.finalizers = [*obj.metadata.finalizers, finalizer]
        return _allowed(request, obj)


# =========================================================================== NodeRestriction

#: ``kubeletapis.IsKubeletLabel`` (k8s.io/kubelet/pkg/apis/well_known_labels.go).
_KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch",
})
_KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _relabels_through_status(new: Object | None, old: Pod) -> bool:
    """A kubelet's pods/status update that changes the pod's labels (refused since
    Kubernetes 1.17: KEP-1314, kubernetes/kubernetes#84260)."""
    return isinstance(new, Pod) and new.metadata.labels != old.metadata.labels


def _same_owner_references(new: Node, old: Node | None) -> bool:
    """A kubelet's Node keeps the owner references it had (none on create)."""
    return list(new.metadata.owner_references) == (list(old.metadata.owner_references) if old is not None else [])


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """``nodeidentifier.NodeIdentity``: (node name, is a node); see ``auth.node_name_of``."""
    name = node_name_of(user)
    return (name or "", name is not None)


def _forbidden_labels(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """``getForbiddenLabels(getModifiedLabels(...))``, sorted."""
    modified = {key for key in (*old, *new) if old.get(key) != new.get(key)}
    forbidden = []
    for key in modified:
        namespace = key.partition("/")[0] if "/" in key else ""
        restricted = namespace == "node-restriction.kubernetes.io" or namespace.endswith(".node-restriction.kubernetes.io")
        kubernetes = namespace in ("kubernetes.io", "k8s.io") or namespace.endswith((".kubernetes.io", ".k8s.io"))
        kubelet = key in _KUBELET_LABELS or namespace in _KUBELET_LABEL_NAMESPACES or namespace.endswith(tuple("." + n for n in _KUBELET_LABEL_NAMESPACES))
        if restricted or (kubernetes and not kubelet):
            forbidden.append(key)
    return sorted(forbidden)


@dataclass(frozen=True, slots=True)
class NodeRestrictionPlugin:
    """NodeRestriction (``plugin/pkg/admission/noderestriction/admission.go``).

    Limits what a kubelet (user ``system:node:<name>`` in group ``system:nodes``) may do:
    Node — only its own (``node "a" is not allowed to modify node "b"``), without changing
    taints or owner references (CVE-2025-5187), and without setting ``node-restriction.kubernetes.io/`` labels or kubernetes.io
    labels outside the kubelet's own set; pods — create only mirror pods bound to itself,
    delete and update status (``status``) and evict (``eviction``) only pods bound to itself,
    status updates may not change labels; Leases — only its own, in kube-node-lease. Other
    users pass.

    Simplified: a mirror pod's owner reference, secrets, config maps and volumes are not
    checked; PVCs, CSINodes, service account tokens and ResourceClaims are not modelled. The
    pod that a DELETE or an eviction names is the request's ``old_object`` (Kubernetes reads
    it from its informer). Kubernetes implements this plugin as ``Admit``; it changes
    nothing, so it validates here.
    """

    name: str = "NodeRestriction"

    def handles(self, operation: str) -> bool:
        return operation in ("CREATE", "UPDATE", "DELETE")

    def validate(self, request: AdmissionRequest) -> AdmissionResult:
        node, is_node = node_identity(request.user)
        if not is_node:
            return _allowed(request)
        if not node:
            return _forbidden(self.name, request, f'could not determine node from user "{request.user.name}"')
        if request.kind == "Pod":
            return self._pod(node, request)
        if request.kind == "Node":
            return self._node(node, request)
        if request.kind == "Lease":
            return self._lease(node, request)
        return _allowed(request)

    def _pod(self, node: str, request: AdmissionRequest) -> AdmissionResult:
        old = request.old_object if isinstance(request.old_object, Pod) else None
        if request.subresource == "":
            if request.operation == "CREATE":
                pod = request.object
                assert isinstance(pod, Pod)
                if MIRROR_POD_ANNOTATION not in pod.metadata.annotations:
                    return _forbidden(self.name, request, f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" can only create mirror pods')
                if pod.spec.node_name != node:
                    return _forbidden(self.name, request, f'node "{node}" can only create pods with spec.nodeName set to itself')
                return _allowed(request)
            if request.operation == "DELETE":
                if old is None or old.spec.node_name != node:
                    return _forbidden(self.name, request, f'node "{node}" can only delete pods with spec.nodeName set to itself')
                return _allowed(request)
            return _forbidden(self.name, request, f'unexpected operation "{request.operation}", node "{node}" can only create and delete mirror pods')
        if request.subresource == "status":
            if request.operation != "UPDATE":
                return _forbidden(self.name, request, f'unexpected operation "{request.operation}"')
            if old is None or old.spec.node_name != node:
                return _forbidden(self.name, request, f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
            if _relabels_through_status(request.object, old):
                return _forbidden(self.name, request, f'node "{node}" cannot update labels through pod status')
            return _allowed(request)
        if request.subresource == "eviction":
            if request.operation != "CREATE":
                return _forbidden(self.name, request, f"unexpected operation {request.operation}")
            if old is None or old.spec.node_name != node:
                return _forbidden(self.name, request, f"node {node} can only evict pods with spec.nodeName set to itself")
            return _allowed(request)
        return _forbidden(self.name, request, f"unexpected pod subresource \"{request.subresource}\", only 'status' and 'eviction' are allowed")

    def _node(self, node: str, request: AdmissionRequest) -> AdmissionResult:
        requested = request.name or (request.object.metadata.name if request.object is not None else "")
        if requested != node:
            return _forbidden(self.name, request, f'node "{node}" is not allowed to modify node "{requested}"')
        new = request.object if isinstance(request.object, Node) else None
        old_node = request.old_object if isinstance(request.old_object, Node) else None
        if new is not None and not _same_owner_references(new, old_node):
            # CVE-2025-5187 (kubernetes/kubernetes#133471): an owner reference to a missing
            # object gets the Node garbage-collected, so a kubelet could delete and recreate
            # its Node with other taints and labels; fixed kube-apiservers refuse it.
            return _forbidden(self.name, request, f'node "{node}" is not allowed to modify ownerReferences')
        if request.operation == "CREATE" and new is not None:
            if new.spec.config_source is not None:
                return _forbidden(self.name, request, f'node "{node}" is not allowed to create pods with a non-nil configSource')
            forbidden = _forbidden_labels({}, new.metadata.labels)
            if forbidden:
                return _forbidden(self.name, request, f'node "{node}" is not allowed to set the following labels: {", ".join(forbidden)}')
        if request.operation == "UPDATE" and new is not None and isinstance(request.old_object, Node):
            old = request.old_object
            if new.spec.taints != old.spec.taints:
                return _forbidden(self.name, request, f'node "{node}" is not allowed to modify taints')
            forbidden = _forbidden_labels(old.metadata.labels, new.metadata.labels)
            if forbidden:
                return _forbidden(self.name, request, f'is not allowed to modify labels: {", ".join(forbidden)}')
        return _allowed(request)

    def _lease(self, node: str, request: AdmissionRequest) -> AdmissionResult:
        if request.namespace != NODE_LEASE_NAMESPACE:
            return _forbidden(self.name, request, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        name = request.object.metadata.name if request.operation == "CREATE" and request.object is not None else request.name
        if name != node:
            return _forbidden(self.name, request, "can only access node lease with the same name as the requesting node")
        return _allowed(request)


# =========================================================================== the chain


def default_plugins(
    *,
    namespaces: Iterable[Namespace] = (),
    service_accounts: Iterable[tuple[str, str]] = (),
    priority_classes: Iterable[PriorityClass] = (),
    limit_ranges: Iterable[Any] = (),
    storage_classes: Iterable[Any] = (),
) -> list[MutatingPlugin | ValidatingPlugin]:
    """The built-in plugins in kube-apiserver's order (``AllOrderedPlugins``,
    ``pkg/kubeapiserver/options/plugins.go``: NamespaceLifecycle, LimitRanger,
    ServiceAccount, NodeRestriction, Priority, DefaultTolerationSeconds, DefaultStorageClass,
    StorageObjectInUseProtection), after defaulting.
    ResourceQuota, the last of the order, writes quota status: the server runs it
    (:mod:`chaoskube.api.quota`)."""
    return [
        DefaultingPlugin(),
        NamespaceLifecyclePlugin(namespaces=tuple(namespaces)),
        LimitRangerPlugin(limit_ranges=tuple(limit_ranges)),
        ServiceAccountPlugin(service_accounts=frozenset(service_accounts)),
        NodeRestrictionPlugin(),
        PriorityPlugin(priority_classes=tuple(priority_classes)),
        DefaultTolerationSecondsPlugin(),
        DefaultStorageClassPlugin(storage_classes=tuple(storage_classes)),
        StorageObjectInUseProtectionPlugin(),
    ]


def with_object(request: AdmissionRequest, obj: Object | None) -> AdmissionRequest:
    if obj is request.object:
        return request
    return AdmissionRequest(
        operation=request.operation, kind=request.kind, namespace=request.namespace, name=request.name,
        object=obj, old_object=request.old_object, user=request.user, subresource=request.subresource, dry_run=request.dry_run,
        request_id=request.request_id,
    )


def _mutates(plugin: object) -> bool:
    """``isinstance(plugin, MutatingPlugin)`` without a runtime Protocol check per call."""
    return callable(getattr(plugin, "admit", None)) and callable(getattr(plugin, "handles", None))


def _validates(plugin: object) -> bool:
    return callable(getattr(plugin, "validate", None)) and callable(getattr(plugin, "handles", None))


def run_mutating(request: AdmissionRequest, plugins: Sequence[object]) -> AdmissionResult:
    """Every plugin with ``admit`` that handles the operation, in order, each on the previous
    one's object; the first refusal stops the chain."""
    current = request
    for plugin in plugins:
        if not _mutates(plugin) or not plugin.handles(request.operation):
            continue
        result = plugin.admit(current)
        if not result.allowed:
            return result if result.plugin else _named(result, plugin.name)
        assert (result.object is None) == (current.object is None), f"mutating plugin {plugin.name} dropped or invented the object"
        current = with_object(current, result.object)
    return _allowed(request, current.object) if current is not request else _allowed(request)


def run_validating(request: AdmissionRequest, plugins: Sequence[object]) -> AdmissionResult:
    """Every plugin with ``validate`` that handles the operation, in order; the first refusal
    stops the chain. The object is passed on unchanged."""
    for plugin in plugins:
        if not _validates(plugin) or not plugin.handles(request.operation):
            continue
        result = plugin.validate(request)
        if not result.allowed:
            return result if result.plugin else _named(result, plugin.name)
        assert result.object is request.object, f"validating plugin {plugin.name} changed the object"
    return _allowed(request)


def _named(result: AdmissionResult, name: str) -> AdmissionResult:
    return AdmissionResult(allowed=False, reason=result.reason, code=result.code, plugin=name)


def run_chain(request: AdmissionRequest, plugins: Sequence[object]) -> AdmissionResult:
    """The admission chain: mutating plugins in order, then validating plugins in order on
    the mutated object. Allowed: ``object`` is the mutated object, ``patches`` the JSON patch
    from the request's object to it. Refused: the first refusal, with the plugin's name."""
    mutated = run_mutating(request, plugins)
    if not mutated.allowed:
        return mutated
    validated = run_validating(with_object(request, mutated.object), plugins)
    if not validated.allowed:
        return validated
    return mutated

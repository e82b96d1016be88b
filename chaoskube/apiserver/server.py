"""kube-apiserver as a simulated process: stateless, several replicas, one etcd cluster.

Every request (:class:`chaoskube.api.protocol.Request`, on :data:`protocol.API_PORT`) runs
in its own task through the pipeline of ``staging/src/k8s.io/apiserver/pkg/endpoints``:

1. **Authentication** (``pkg/authentication``): a static token, a service account token
   (the account must exist), or an x509 client certificate (CN = user, O = groups);
   anything else is 401 Unauthorized. Authenticated users get ``system:authenticated``.
2. **Authorization**: ``system:masters``, then the Node authorizer, then RBAC
   (``--authorization-mode=Node,RBAC``) over the Roles and bindings in this server's watch
   cache (:func:`chaoskube.apiserver.auth.authorize`); 403 Forbidden in Kubernetes' words.
3. **Mutating admission**: the built-in plugins (:mod:`chaoskube.apiserver.admission`), then
   mutating webhooks (:mod:`chaoskube.apiserver.webhooks`).
4. For creates, ``BeforeCreate``: namespace, ``generateName``, uid, creationTimestamp,
   generation, the status a new object starts with (``PrepareForCreate``). For updates,
   ``BeforeUpdate``: system fields kept, spec and status split by subresource, generation
   bumped on spec changes.
5. **Validation** (:mod:`chaoskube.apiserver.validation`): 422 Invalid.
6. **Validating admission**: the built-ins, then validating webhooks.
7. **Storage** (:mod:`chaoskube.apiserver.storage`): an etcd transaction guarded by the key's
   revision. A client-given ``resourceVersion`` that is stale is 409 Conflict; without one,
   update and patch re-read and try again (``GuaranteedUpdate``), at most
   :data:`MAX_ATTEMPTS` times.

Reads: ``get`` and ``list`` without ``resourceVersion`` are quorum reads from etcd; with
one, the watch cache answers ("0": any state; "N": not older than N, waiting up to 3 s,
else 504; ``Exact`` lists go to etcd at that revision, 410 when compacted). Watches are
served by the watch cache (:mod:`chaoskube.apiserver.watchcache`).

Deletion (``registry/generic/registry/store.go`` ``Delete``): a scheduled pod that is not
terminal is deleted gracefully — ``deletionTimestamp`` = now + grace (its
``terminationGracePeriodSeconds``, 30 by default), answered 200 with the object — and removed when its
kubelet deletes it again with grace 0. ``propagationPolicy`` Orphan or Foreground adds the
garbage collector's ``orphan`` or ``foregroundDeletion`` finalizer (Background removes
them; :func:`deletion_finalizers`); objects with finalizers get a ``deletionTimestamp``
and stay until an update removes the last finalizer. Everything else is removed at once.

Subresources: ``status`` (update, patch), ``binding`` (the scheduler's write: 409 when the
pod is already bound), ``eviction`` (``pkg/registry/core/pod/storage/eviction.go``: checks
the pod's PodDisruptionBudget, decrements ``disruptionsAllowed`` with an optimistic update
of the PDB's status through the server's own loopback client, 429 when no disruption is
allowed), ``finalize`` (namespaces).

Also as kube-apiserver: every replica creates the system namespaces and bootstrap RBAC
policy when missing (:mod:`chaoskube.apiserver.bootstrap`), and compacts etcd every 5 minutes
(``--etcd-compaction-interval``) to the revision it saw at the previous interval,
coordinated through the ``compact_rev_key`` key (``storage/etcd3/compact.go``).

Requests that do not finish within ``--request-timeout`` (60 s) are answered 504. A write
whose etcd outcome is unknown is answered 504 too: it may have happened.

Patches: JSON merge patch, JSON patch, strategic merge patch with the built-in kinds'
patch metadata (:mod:`chaoskube.api.strategic`), and server-side apply; every create, update
and patch keeps ``metadata.managedFields`` (:mod:`chaoskube.api.managedfields`). Pagination (``limit``/``continue``) is
served by the HTTP front (:mod:`chaoskube.apiserver.http`) over consistent reads at a
revision.

Not modelled: ``deletecollection``, the deprecated ``orphanDependents``
option, priority and fairness, audit logging, aggregated APIs, CRDs.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import msgspec
import trio

from chaoskube.api.identity import ADMIN_TOKEN, UserInfo, authenticated_user, parse_service_account, parse_service_account_token, service_account_user, superuser
from chaoskube.api.manifests import ManifestError, from_dict, to_dict
from chaoskube.api.objects import (
    KINDS,
    Condition,
    CustomObject,
    CustomResourceDefinition,
    CustomResourceDefinitionCondition,
    CustomResourceDefinitionNames,
    Endpoint,
    EndpointConditions,
    EndpointPort,
    EndpointSlice,
    Endpoints,
    EndpointSubset,
    Event,
    KindInfo,
    LabelSelector,
    Namespace,
    Object,
    ObjectMeta,
    Pod,
    PodCondition,
    PodDisruptionBudget,
    REVIEWS,
    Scale,
    ScaleSpec,
    ScaleStatus,
    Service,
    ServicePort,
    ServiceSpec,
    custom_resource,
    custom_type,
    format_milli,
    matches,
    parse_quantity,
)
from chaoskube.api.fields import emit_required, go_value, prune_unknown, unknown_field_message
from chaoskube.api.managedfields import ApplyConflict, ApplyError, FieldManager, NoneConversion, builtin_schema, custom_schema, json_form, scale_to_subresource
from chaoskube.api.patch import PatchError, apply_patch, merge_patch
from chaoskube.api.strategic import strategic_merge_patch
from chaoskube.api.protocol import (
    API_PORT,
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    PROPAGATION_POLICIES,
    Binding,
    Credentials,
    DeleteOptions,
    Eviction,
    NonResourceRequest,
    Request,
    Response,
    Status,
    StatusError,
    WatchEvent,
    WatchProbe,
    WatchStop,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
    parse_timestamp,
    timeout,
    timestamp,
    too_many_requests,
    unauthorized,
)
from chaoskube.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from chaoskube.api.selectors import matches as selected
from chaoskube.apiserver import crd as crds
from chaoskube.apiserver import validation
from chaoskube.apiserver.admission import IMMORTAL_NAMESPACES, AdmissionRequest, default_plugins, run_mutating, run_validating, with_object
from chaoskube.apiserver.auth import Attributes, authorize, rules_for
from chaoskube.apiserver.bootstrap import bootstrap_objects
from chaoskube.apiserver.ipallocator import REPAIR_EVERY_S, SERVICE_CIDR, Bitmap, ClusterIPAllocator
from chaoskube.apiserver.storage import EtcdStore, LeaseManager, Stored, copy_object, kind_info, resource_prefix, storage_key
from chaoskube.apiserver.watchcache import Cacher, too_large_resource_version
from chaoskube.apiserver.webhooks import WebhookDispatcher
from chaoskube.etcd.client import EtcdClient
from chaoskube.etcd.requests import NO_LEASE, CompactionRequest, Compare, PutRequest, RangeRequest, TxnRequest, prefix_range_end
from chaoskube.sim import Process, World

__all__ = [
    "ApiServer",
    "ApiServerConfig",
    "deletion_finalizers",
    "api_server_main",
    "pod_cap",
    "spawn_api_servers",
]

ADMIN_USER = "kubernetes-admin"
#: The loopback client's user: the API server's own requests (``system:apiserver``, in
#: ``system:masters``).
LOOPBACK_USER = "system:apiserver"
#: Bound on GuaranteedUpdate's and Delete's re-read loops; at the bound: 409 Conflict.
MAX_ATTEMPTS = 16
#: The most pods one simulated cluster holds (``ApiServerConfig.max_pods``) unless its
#: nodes can run more (:func:`pod_cap`).
MAX_PODS = 5000
#: Kubernetes' documented limit: "No more than 150,000 total pods" (Considerations for
#: large clusters, kubernetes.io/docs/setup/best-practices/cluster-large/).
MAX_PODS_LARGE_CLUSTER = 150_000


def pod_cap(node_capacity: int) -> int:
    """The pod cap of a cluster whose nodes can run ``node_capacity`` pods (their
    ``maxPods`` summed): as many as the nodes hold, at least :data:`MAX_PODS` (pending
    pods of a small cluster), at most Kubernetes' 150,000."""
    return min(MAX_PODS_LARGE_CLUSTER, max(MAX_PODS, node_capacity))
#: Kinds with a ``status`` subresource: their main resource ignores status changes.
STATUS_KINDS = frozenset({
    "Pod", "Node", "Deployment", "ReplicaSet", "Service", "PodDisruptionBudget", "Namespace", "StatefulSet", "DaemonSet", "Job",
    "CronJob", "ReplicationController", "PersistentVolume", "PersistentVolumeClaim", "ResourceQuota", "HorizontalPodAutoscaler",
    "Ingress", "CustomResourceDefinition",
})
#: The labels a Job's pods carry (``batchv1.ControllerUidLabel``, ``JobNameLabel``).
JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
#: Kinds with a ``scale`` subresource: (the spec field holding replicas, how status reports them).
SCALE_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})
#: How often each replica looks for CustomResourceDefinitions to name and establish (the
#: NamingConditionController and EstablishingController of apiextensions-apiserver).
CRD_ESTABLISH_EVERY_S = 1.0
#: ``policy.MaxDisruptedPodSize`` (eviction.go).
MAX_DISRUPTED_POD_SIZE = 2000
COMPACT_REV_KEY = "compact_rev_key"
#: The lease endpoint reconciler (``pkg/controlplane/reconcilers/lease.go``): each replica's
#: key (upstream ``/registry/masterleases/<ip>``; outside ``/registry/`` here, which the
#: watch caches read as objects), its TTL (``--master-endpoint-reconcile-ttl`` 15 s) and
#: the reconcile interval (``EndpointInterval``, 10 s).
MASTER_LEASES_PREFIX = "/masterleases/"
MASTER_LEASE_TTL_S = 15
KUBERNETES_SERVICE_INTERVAL_S = 10.0
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # names.SimpleNameGenerator's alphabet
_GENERATED_SUFFIX = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiServerConfig:
    etcd_endpoints: tuple[str, ...]
    #: The static token file (``--token-auth-file``): token -> user.
    tokens: tuple[tuple[str, UserInfo], ...] = ((ADMIN_TOKEN, superuser(ADMIN_USER)),)
    request_timeout_s: float = 60.0  # --request-timeout
    etcd_timeout_s: float = 5.0  # one etcd request, per attempt
    compaction_interval_s: float = 300.0  # --etcd-compaction-interval
    bookmark_every_s: float = 60.0
    #: The watch cache's history per resource (``watch_cache.go``): it holds 100 to 102,400
    #: events and drops the oldest only when it is older than 75 s.
    watch_cache_lower_capacity: int = 100
    watch_cache_upper_capacity: int = 100 * 1024
    watch_cache_fresh_s: float = 75.0
    fresh_wait_s: float = 3.0  # watch cache waitUntilFreshAndBlock
    eviction_attempts: int = 20  # eviction.go EvictionsRetry.Steps
    eviction_retry_s: float = 0.5  # EvictionsRetry.Duration (Factor 1, Jitter 0.1: not modelled)
    bootstrap: bool = True
    #: The simulation's own bound: pod creations past this many pods in the cluster are
    #: refused (403), so a runaway workload (100,000,000 replicas) ends in one line instead
    #: of filling memory and disk. Not a Kubernetes setting (see docs/api-server.md).
    max_pods: int = MAX_PODS
    #: ``--event-ttl`` (default 1h0m0s): how long an Event is kept after its last write; its
    #: etcd lease deletes it then (``pkg/registry/core/event/storage``: ``TTLFunc``).
    event_ttl_s: int = 3600
    #: ``--service-cluster-ip-range`` (kubeadm's default ``10.96.0.0/12``).
    service_cidr: str = SERVICE_CIDR

    def __post_init__(self) -> None:
        assert self.etcd_endpoints, "an API server needs etcd"
        object.__setattr__(self, "etcd_endpoints", tuple(self.etcd_endpoints))


def _refuse(status: Status) -> StatusError:
    return StatusError(status)


_ADMISSION_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound"}
#: the resources the built-in admission plugins read (ApiServer._plugins)
#: NamespaceLifecycle's wait for its cache before refusing a create in a namespace it does not
#: hold (``missingNamespaceWait``, staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go)
MISSING_NAMESPACE_WAIT_S = 0.05
_PLUGIN_RESOURCES = ("namespaces", "serviceaccounts", "priorityclasses", "limitranges", "storageclasses")


def _generation_changed(old: Object, new: Object) -> bool:
    """Anything but metadata and status differs (the strategies compare spec)."""
    for name in new.__struct_fields__:
        if name in ("metadata", "status"):
            continue
        if getattr(old, name) != getattr(new, name):
            return True
    return False


def _pod_ready(pod: Pod) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def _pdb_selects(pdb: PodDisruptionBudget, labels: dict[str, str]) -> bool:
    """policy/v1: a null selector selects no pods, an empty one every pod of the namespace
    (``PodDisruptionBudgetSpec.selector``)."""
    if pdb.spec.selector is None:
        return False
    return matches(pdb.spec.selector, labels)


def _set_disruption_allowed_condition(pdb: PodDisruptionBudget, now: float) -> None:
    """``pdbhelper.UpdateDisruptionAllowedCondition`` when the budget reaches zero."""
    condition = Condition(type="DisruptionAllowed", status="False", reason="InsufficientPods", observed_generation=pdb.status.observed_generation, last_transition_time=timestamp(now))
    kept = [c for c in pdb.status.conditions if c.type != "DisruptionAllowed"]
    pdb.status.conditions = [*kept, condition]


def _user_info(user: UserInfo) -> dict[str, Any]:
    """``authentication/v1`` UserInfo of ``user``."""
    info: dict[str, Any] = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    return info


def deletion_finalizers(finalizers: list[str], policy: str) -> list[str]:
    """The finalizers a delete with propagation ``policy`` leaves on the object
    (``registry/generic/registry/store.go`` ``deletionFinalizersForGarbageCollection``):
    Orphan adds ``orphan`` (and drops ``foregroundDeletion``), Foreground adds
    ``foregroundDeletion`` (and drops ``orphan``), Background drops both; "" keeps them
    (every kind served here defaults to background: ``DefaultGarbageCollectionPolicy``)."""
    kept = [name for name in finalizers if name not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if policy == "Orphan":
        return [*kept, ORPHAN_FINALIZER]
    if policy == "Foreground":
        return [*kept, FOREGROUND_FINALIZER]
    if policy == "Background":
        return kept
    return list(finalizers)


class ApiServer:
    """One kube-apiserver replica inside ``process``. See the module docstring."""

    def __init__(self, process: Process, config: ApiServerConfig) -> None:
        self.process = process
        self.world: World = process.world
        self.config = config
        self.name = process.name
        endpoints = list(config.etcd_endpoints)
        self.store = EtcdStore(EtcdClient(process, endpoints, timeout_s=config.etcd_timeout_s, name=f"{process.name}/store"))
        self.cacher = Cacher(
            process,
            EtcdClient(process, endpoints, timeout_s=config.etcd_timeout_s, name=f"{process.name}/cacher"),
            bookmark_every_s=config.bookmark_every_s,
            lower_capacity=config.watch_cache_lower_capacity,
            upper_capacity=config.watch_cache_upper_capacity,
            fresh_s=config.watch_cache_fresh_s,
        )
        self.leases = LeaseManager(self.store)  # the Events' (one per storage, as upstream)
        self.master_leases = LeaseManager(self.store)
        self.service_ips = ClusterIPAllocator(self.store, process.random("service-ips"), config.service_cidr)
        self.webhooks = WebhookDispatcher(process)
        #: The kinds' field managers (pure, built once per kind, subresource and schema).
        self._field_managers: dict[tuple, tuple[Any, FieldManager]] = {}
        self._plugins_memo: tuple[tuple[Any, ...], tuple[int, ...], list[Any]] | None = None
        self._tokens = dict(config.tokens)
        self._loopback_token = f"loopback/{process.name}/{process.incarnation}"
        self._tokens[self._loopback_token] = superuser(LOOPBACK_USER)
        self.loopback = Credentials(token=self._loopback_token)
        self._uids = process.random("uid")
        self._names = process.random("generate-name")
        self._served = 0

    # ------------------------------------------------------------------ lifecycle
    async def serve(self) -> None:
        self.process.on_message(API_PORT, self._on_message)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.cacher.run)
            nursery.start_soon(self._compactor)
            nursery.start_soon(self._establish_crds)
            nursery.start_soon(self._repair_service_ips)
            if self.config.bootstrap:
                nursery.start_soon(self._reconcile_kubernetes_service)
            if self.config.bootstrap:
                nursery.start_soon(self._bootstrap)

    def _on_message(self, message: Any) -> None:
        body = message.body
        if isinstance(body, WatchProbe):
            self.cacher.probe(message)
        elif isinstance(body, WatchStop):
            self.cacher.stop(message)
        elif isinstance(body, Request) and message.call_id:
            self.process.start_soon(self._handle, message)
        elif isinstance(body, NonResourceRequest) and message.call_id:
            # Discovery, OpenAPI, /version: authentication only (the front serves the body).
            # Anonymous requests are refused: --anonymous-auth=false.
            # The answer carries this replica's established CRDs: the front publishes their
            # kinds in discovery and OpenAPI, as each kube-apiserver's discovery of custom
            # resources follows its own CRD informer (apiextensions DiscoveryController).
            user = self.authenticate(body.credentials)
            if user is None:
                self.process.reply(message, Response(401, status=unauthorized(), server=self.name))
            else:
                served = tuple(crd for crd in sorted(self.cacher.objects("customresourcedefinitions"), key=lambda crd: crd.metadata.name) if crds.crd_established(crd) and crd.metadata.deletion_timestamp is None) if self.cacher.ready else ()
                self.process.reply(message, Response(200, items=served, server=self.name))
        elif message.call_id:
            self.process.reply(message, Response(400, status=bad_request(f"not an API request: {type(body).__name__}")))

    async def _handle(self, message: Any) -> None:
        request: Request = message.body
        response: Response | None = None
        with self.process.move_on_after(self.config.request_timeout_s) as scope:
            response = await self.handle(request, message)
        if scope.cancelled_caught:
            response = Response(504, status=timeout("request did not complete within requested timeout - context deadline exceeded"), server=self.name)
            if request.verb not in ("get", "list", "watch"):
                self._journal(request, response)
        if response is not None:
            self.process.reply(message, response)

    async def handle(self, request: Request, message: Any = None) -> Response | None:
        """Serve one request: its response, or None for a watch (the cache answered it)."""
        self._served += 1
        try:
            response = await self._serve(request, message)
        except StatusError as error:
            response = Response(error.status.code, status=error.status, server=self.name)
        if response is not None and request.verb not in ("get", "list", "watch"):
            self._journal(request, response)
        return response

    def _journal(self, request: Request, response: Response) -> None:
        fields: dict[str, Any] = {
            "server": self.name, "id": request.id, "verb": request.verb, "resource": request.resource,
            "subresource": request.subresource, "namespace": request.namespace,
            "name": request.name or (response.object.metadata.name if response.object is not None else ""),
            "code": response.code,
        }
        if response.status is not None:
            fields["reason"] = response.status.reason
            if response.code in (403, 422, 500) and response.status.message:
                # 403/422: what a user reads, why the write was refused; 500: an admission
                # webhook's failure names the webhook here
                fields["message"] = response.status.message[:300]
        if response.object is not None:
            fields["resource_version"] = response.object.metadata.resource_version
        if request.version:
            fields["version"] = request.version  # the version the request addressed (its URL's), when it named one
        if request.verb == "delete" and request.delete_options is not None and request.delete_options.propagation_policy:
            fields["propagation"] = request.delete_options.propagation_policy  # (a later policy can withdraw an earlier one's finalizer)
        self.world.record("api-request", **fields)

    # ------------------------------------------------------------------ authentication
    def authenticate(self, credentials: Credentials) -> UserInfo | None:
        if credentials.token:
            user = self._tokens.get(credentials.token)
            if user is not None:
                return user
            parsed = parse_service_account_token(credentials.token)
            if parsed is not None:
                namespace, name, uid = parsed
                account = self.cacher.cache("serviceaccounts").get(storage_key("serviceaccounts", namespace, name))
                if account is None:
                    return None  # a token dies with its service account
                if uid and account.metadata.uid != uid:
                    return None  # a bound token names the account's uid: not a namesake's
                return service_account_user(namespace, name, account.metadata.uid)
            return None
        if credentials.common_name:
            return authenticated_user(credentials.common_name, credentials.organizations)
        return None

    def _impersonate(self, user: UserInfo, credentials: Credentials) -> UserInfo:
        """``WithImpersonation`` (``k8s.io/apiserver/pkg/endpoints/filters/impersonation.go``):
        the requester must be allowed to ``impersonate`` the user (``users``, or
        ``serviceaccounts`` for a service account's name) and each group (``groups``);
        the request then runs as that user, with the groups asked for and
        ``system:authenticated`` (a service account's groups for a service account).
        Refused: 403 in upstream's words."""
        name = credentials.impersonate_user
        if not name:
            if credentials.impersonate_groups:
                raise _refuse(Status(500, "InternalError", "requested [groups] without impersonating a user"))
            return user
        checks: list[tuple[str, str, str]] = []
        account = parse_service_account(name)
        if account is not None:
            checks.append(("serviceaccounts", account[0], account[1]))
        else:
            checks.append(("users", "", name))
        checks += [("groups", "", group) for group in credentials.impersonate_groups]
        for resource, namespace, target in checks:
            attributes = Attributes(user=user, verb="impersonate", resource=resource, namespace=namespace, name=target, api_group="")
            if not self._decide(attributes).allowed:
                where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
                raise _refuse(Status(403, "Forbidden", f'{resource} "{target}" is forbidden: User "{user.name}" cannot impersonate resource "{resource}" in API group "" {where}'))
        if account is not None:
            return service_account_user(account[0], account[1], "")
        return authenticated_user(name, credentials.impersonate_groups)

    # ------------------------------------------------------------------ the pipeline
    async def _serve(self, request: Request, message: Any) -> Response | None:
        review = REVIEWS.get(request.resource)
        if review is not None:
            return self._review(request, review)
        info = kind_info(request.resource) or self._custom_info(request.resource, request.version)
        if info is None:
            raise _refuse(Status(404, "NotFound", "the server could not find the requested resource"))
        user = self.authenticate(request.credentials)
        if user is None:
            raise _refuse(unauthorized())
        user = self._impersonate(user, request.credentials)
        if not self.cacher.ready:
            raise _refuse(too_many_requests("storage is (re)initializing", retry_after_seconds=1))
        if info.namespaced is False and request.namespace:
            raise _refuse(not_found(request.resource, request.name or request.resource))
        self._authorize(request, user, info)
        if request.verb == "patch" and request.version and isinstance(request.body, dict) and issubclass(info.type, CustomObject) and request.patch_type != "apply":
            # a patch written at another served version than the storage one: converted as
            # strategy None does, by its apiVersion alone. An apply's configuration stays at
            # its version: the field manager is the request version's (customresource_handler.go
            # scopeWithFieldManager, reqScope.Kind), which checks it (versionCheckManager, 400)
            # and records the applier's fields at that version (_field_manager)
            asked = f"{info.api_version.rpartition('/')[0]}/{request.version}"
            if asked != info.api_version and request.body.get("apiVersion") == asked:
                request = replace(request, body={**request.body, "apiVersion": info.api_version})
        verb, sub = request.verb, request.subresource
        if verb == "get" and not sub:
            return await self._get(request, info)
        if verb == "list" and not sub:
            return await self._list(request, info)
        if verb == "watch" and not sub:
            await self._watch(request, info, message)
            return None
        if verb == "create" and not sub:
            return await self._create(request, user, info)
        if verb == "create" and sub == "binding" and info.kind == "Pod":
            return await self._bind(request, user, info)
        if verb == "create" and sub == "eviction" and info.kind == "Pod":
            return await self._evict(request, user, info)
        if sub == "scale" and verb in ("get", "update") and self._scalable(info):
            return await (self._get_scale(request, info) if verb == "get" else self._update_scale(request, user, info))
        if verb in ("update", "patch") and (not sub or (sub == "status" and self._has_status(info)) or (sub == "finalize" and info.kind == "Namespace")):
            return await self._update(request, user, info)
        if verb == "delete" and not sub:
            return await self._delete(request, user, info)
        if verb == "deletecollection" and not sub:
            return await self._delete_collection(request, user, info)
        raise _refuse(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({verb} {request.resource}{'/' + sub if sub else ''})"))

    def _authorize(self, request: Request, user: UserInfo, info: KindInfo) -> None:
        name = request.name if (request.verb != "create" or request.subresource) else ""
        group = info.api_version.rpartition("/")[0]
        resource = request.resource.partition(".")[0] if issubclass(info.type, CustomObject) else request.resource
        attributes = Attributes(user=user, verb=request.verb, resource=resource, subresource=request.subresource, namespace=request.namespace, name=name, api_group=group)
        pod = None
        if info.kind == "Pod" and request.name and request.namespace:
            pod = self.cacher.cache("pods").get(storage_key("pods", request.namespace, request.name))
        decision = authorize(
            attributes,
            roles=self.cacher.objects("roles"),
            cluster_roles=self.cacher.objects("clusterroles"),
            role_bindings=self.cacher.objects("rolebindings"),
            cluster_role_bindings=self.cacher.objects("clusterrolebindings"),
            pod=pod,
            references=self._node_references(user, request.resource),
        )
        if not decision.allowed:
            raise _refuse(forbidden(decision.reason))

    # ------------------------------------------------------------------ reviews
    def _review(self, request: Request, info: KindInfo) -> Response:
        """Create a review: answered from this replica's authenticator and authorizer, never
        stored (``pkg/registry/authorization/*/rest.go``, ``pkg/registry/authentication/*``):
        SelfSubjectAccessReview and SubjectAccessReview / LocalSubjectAccessReview ask
        whether a request would be allowed; SelfSubjectRulesReview lists the requester's
        rules in a namespace; TokenReview authenticates a token; SelfSubjectReview says
        who the requester is."""
        user = self.authenticate(request.credentials)
        if user is None:
            raise _refuse(unauthorized())
        user = self._impersonate(user, request.credentials)
        if not self.cacher.ready:
            raise _refuse(too_many_requests("storage is (re)initializing", retry_after_seconds=1))
        if request.verb != "create" or request.subresource or request.name:
            raise _refuse(Status(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({request.verb} {request.resource})"))
        if info.namespaced and not request.namespace:
            raise _refuse(not_found(request.resource, request.resource))
        if not info.namespaced and request.namespace:
            raise _refuse(not_found(request.resource, request.resource))
        self._authorize(request, user, info)
        body = request.body
        if not isinstance(body, info.type):
            raise _refuse(bad_request(f"the body of the request must be a {info.kind}, not {type(body).__name__}"))
        review = copy_object(body)
        spec = review.spec if isinstance(review.spec, dict) else {}
        kind = info.kind
        if kind in ("SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview"):
            subject = user
            if kind != "SelfSubjectAccessReview":
                if not spec.get("user") and not spec.get("groups"):
                    raise _refuse(invalid(info.resource, review.metadata.name, ["spec.user: Invalid value: \"\": at least one of user or group must be specified"], kind=kind))
                subject = UserInfo(str(spec.get("user") or ""), tuple(spec.get("groups") or ()), str(spec.get("uid") or ""))
            attributes = spec.get("resourceAttributes")
            non_resource = spec.get("nonResourceAttributes")
            if (attributes is None) == (non_resource is None):
                raise _refuse(invalid(info.resource, review.metadata.name, ["spec.resourceAttributes: Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified"], kind=kind))
            if kind == "LocalSubjectAccessReview":
                # pkg/registry/authorization/localsubjectaccessreview/rest.go
                if attributes is not None and attributes.get("namespace") != request.namespace:
                    raise _refuse(bad_request(f"spec.resourceAttributes.namespace must match namespace: {request.namespace}"))
                if non_resource is not None:
                    raise _refuse(invalid(info.resource, review.metadata.name, ["spec.nonResourceAttributes: Invalid value: \"null\": disallowed on this kind of request"], kind=kind))
                review.metadata.namespace = request.namespace
            asked_for = attributes if attributes is not None else non_resource
            verb = str(asked_for.get("verb") or "")
            resource = str(asked_for.get("resource") or "") if attributes is not None else ""
            if not verb or (attributes is not None and (not resource or "/" in resource)):
                review.status = {"allowed": False}  # nothing a rule can match
            else:
                if attributes is not None:
                    asked = Attributes(user=subject, verb=verb, resource=resource, subresource=str(attributes.get("subresource") or ""),
                                       namespace=str(attributes.get("namespace") or ""), name=str(attributes.get("name") or ""), api_group=str(attributes.get("group") or ""))
                else:
                    asked = Attributes(user=subject, verb=verb, resource_request=False, path=str(non_resource.get("path") or "/"))
                decision = self._decide(asked)
                review.status = {"allowed": decision.allowed}
                if decision.allowed and decision.reason and not decision.reason.startswith("allowed: user is in group"):
                    review.status["reason"] = decision.reason
        elif kind == "SelfSubjectRulesReview":
            namespace = str(spec.get("namespace") or "")
            resource_rules, non_resource_rules, incomplete, error = rules_for(
                user, namespace, self.cacher.objects("roles"), self.cacher.objects("clusterroles"), self.cacher.objects("rolebindings"), self.cacher.objects("clusterrolebindings"),
            )
            review.status = {
                "resourceRules": [{key: value for key, value in (("verbs", rule.verbs), ("apiGroups", rule.api_groups), ("resources", rule.resources), ("resourceNames", rule.resource_names)) if value or key == "verbs"} for rule in resource_rules],
                "nonResourceRules": [{"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls} for rule in non_resource_rules],
                "incomplete": incomplete,
            }
            if error:
                review.status["evaluationError"] = error
        elif kind == "TokenReview":
            token = str(spec.get("token") or "")
            if not token:
                raise _refuse(invalid(info.resource, review.metadata.name, ["spec.token: Required value"], kind=kind))
            found = self.authenticate(Credentials(token=token))
            review.status = {"authenticated": found is not None, "audiences": list(spec.get("audiences") or [])}
            if found is not None:
                review.status["user"] = _user_info(found)
            else:
                review.status["error"] = "[invalid bearer token, token lookup failed]"
        else:  # SelfSubjectReview
            review.status = {"userInfo": _user_info(user)}
        review.metadata.creation_timestamp = None
        return Response(201, object=review, server=self.name)

    def _decide(self, attributes: Attributes) -> Any:
        pod = None
        if attributes.resource_request and attributes.resource == "pods" and attributes.name and attributes.namespace:
            pod = self.cacher.cache("pods").get(storage_key("pods", attributes.namespace, attributes.name))
        return authorize(
            attributes, roles=self.cacher.objects("roles"), cluster_roles=self.cacher.objects("clusterroles"),
            role_bindings=self.cacher.objects("rolebindings"), cluster_role_bindings=self.cacher.objects("clusterrolebindings"),
            pod=pod, references=self._node_references(attributes.user, attributes.resource) if attributes.resource_request else frozenset(),
        )

    def _node_references(self, user: UserInfo, resource: str) -> frozenset[tuple[str, str, str]]:
        """What the pods bound to the requesting node reference (the Node authorizer's graph),
        computed only for a node's request for a referenced kind."""
        from chaoskube.api.identity import node_name_of

        node = node_name_of(user)
        if not node or resource not in ("configmaps", "secrets", "persistentvolumeclaims", "persistentvolumes"):
            return frozenset()
        from chaoskube.api.workloads import pod_references

        found: set[tuple[str, str, str]] = set()
        claims: list[tuple[str, str]] = []
        for pod in self.cacher.objects("pods"):
            if pod.spec.node_name != node:
                continue
            for referenced, name in pod_references(pod.spec):
                found.add((referenced, pod.metadata.namespace, name))
                if referenced == "persistentvolumeclaims":
                    claims.append((pod.metadata.namespace, name))
        for namespace, name in claims:
            claim = self.cacher.cache("persistentvolumeclaims").get(storage_key("persistentvolumeclaims", namespace, name))
            if claim is not None and claim.spec.volume_name:
                found.add(("persistentvolumes", "", claim.spec.volume_name))
        return frozenset(found)

    def _plugins(self) -> list[Any]:
        """The built-in admission plugins over the cache's objects: built again only when
        one of the resources they read changed (twice per write otherwise, ~2 % of a
        cluster run)."""
        caches = tuple(self.cacher.cache(resource) for resource in _PLUGIN_RESOURCES)
        changes = tuple(cache.changes for cache in caches)
        memo = self._plugins_memo
        if memo is not None and memo[1] == changes and all(a is b for a, b in zip(memo[0], caches)):
            return memo[2]
        plugins = self._build_plugins()
        self._plugins_memo = (caches, changes, plugins)
        return plugins

    def _build_plugins(self, live_namespace: Any = None) -> list[Any]:
        namespaces = self.cacher.objects("namespaces")
        return default_plugins(
            namespaces=namespaces if live_namespace is None else (*namespaces, live_namespace),
            service_accounts=[(sa.metadata.namespace, sa.metadata.name) for sa in self.cacher.objects("serviceaccounts")],
            priority_classes=self.cacher.objects("priorityclasses"),
            limit_ranges=self.cacher.objects("limitranges"),
            storage_classes=self.cacher.objects("storageclasses"),
        )

    def _namespace_labels(self, namespace: str) -> dict[str, str] | None:
        if not namespace:
            return None
        stored = self.cacher.cache("namespaces").get(storage_key("namespaces", "", namespace))
        return dict(stored.metadata.labels) if stored is not None else None

    @staticmethod
    def _admission_status(result: Any) -> Status:
        return Status(result.code, _ADMISSION_REASONS.get(result.code, "Forbidden"), result.reason)

    async def _namespace_seen(self, admission: AdmissionRequest) -> Any:
        """NamespaceLifecycle's last resorts for a namespace its cache does not hold yet
        (``lifecycle/admission.go``): on a CREATE it waits ``missingNamespaceWait`` (50 ms)
        for the cache to observe the namespace ("this helps when creating a namespace and
        immediately creating objects within it"), then, for a CREATE or UPDATE, "as a last
        resort, make a call directly to storage". The Namespace read live, or None."""
        if admission.kind == "Namespace" or not admission.namespace or admission.operation not in ("CREATE", "UPDATE"):
            return None
        cache = self.cacher.cache("namespaces")
        key = storage_key("namespaces", "", admission.namespace)
        if cache.get(key) is not None or admission.namespace in IMMORTAL_NAMESPACES:
            return None
        if admission.operation == "CREATE":
            await self.process.sleep(MISSING_NAMESPACE_WAIT_S)
            if cache.get(key) is not None:
                return None
        stored = await self.store.get(key)
        return stored.object if stored is not None else None

    async def _mutate(self, admission: AdmissionRequest) -> Object | None:
        """Built-in mutating plugins, then mutating webhooks: the object to continue with."""
        live = await self._namespace_seen(admission)
        result = run_mutating(admission, self._plugins() if live is None else self._build_plugins(live_namespace=live))
        if not result.allowed:
            raise _refuse(self._admission_status(result))
        obj = result.object if result.object is not None else admission.object
        admission = with_object(admission, obj)
        hooks = self.cacher.objects("mutatingwebhookconfigurations")
        if hooks:
            outcome = await self.webhooks.mutate(admission, hooks, namespace_labels=self._namespace_labels(admission.namespace))
            if not outcome.allowed:
                raise _refuse(outcome.status)
            if outcome.object is not None:
                obj = outcome.object
        return obj

    async def _validate(self, admission: AdmissionRequest) -> None:
        """Built-in validating plugins, then validating webhooks."""
        result = run_validating(admission, self._plugins())
        if not result.allowed:
            raise _refuse(self._admission_status(result))
        hooks = self.cacher.objects("validatingwebhookconfigurations")
        if hooks:
            outcome = await self.webhooks.validate(admission, hooks, namespace_labels=self._namespace_labels(admission.namespace))
            if not outcome.allowed:
                raise _refuse(outcome.status)

    # ------------------------------------------------------------------ custom resources
    def _crd(self, resource: str) -> CustomResourceDefinition | None:
        """The established CRD serving ``resource`` (``<plural>.<group>``) in this replica's
        cache, or None: a CRD is served once it is Established, as upstream's
        ``crdHandler`` answers 404 before that."""
        if "." not in resource:
            return None
        found = self.cacher.cache("customresourcedefinitions").get(storage_key("customresourcedefinitions", "", resource))
        if found is None or not crds.crd_established(found) or found.metadata.deletion_timestamp is not None:
            return None
        return found

    def _custom_info(self, resource: str, requested: str = "") -> KindInfo | None:
        """The kind a request for ``resource`` at version ``requested`` reaches, or None
        (404): only a version the CRD in this replica's cache serves
        (:func:`crds.served_version`), so a CRD update that sets ``served: false`` takes
        effect here once the cache has it. The kind is the storage version's: objects are
        read and written at it (conversion strategy None; the HTTPS front answers at the
        requested version)."""
        crd = self._crd(resource)
        if crd is None or crds.served_version(crd, requested) is None:
            return None
        version = crds.serving_version(crd)
        if version is None:
            return None
        api_version = f"{crd.spec.group}/{version.name}"
        namespaced = crd.spec.scope != "Cluster"
        cls = custom_type(api_version, crd.spec.names.kind, resource, namespaced)
        return KindInfo(kind=crd.spec.names.kind, api_version=api_version, resource=resource, namespaced=namespaced, name_rule="subdomain", type=cls)

    def _has_status(self, info: KindInfo) -> bool:
        if issubclass(info.type, CustomObject):
            crd = self._crd(info.resource)
            return crd is not None and crds.status_subresource(crd)
        return info.kind in STATUS_KINDS

    def _scale_paths(self, info: KindInfo) -> tuple[str, str, str | None] | None:
        """(spec replicas path, status replicas path, label selector path) of a CRD's
        ``subresources.scale``, or None."""
        crd = self._crd(info.resource) if issubclass(info.type, CustomObject) else None
        version = crds.serving_version(crd) if crd is not None else None
        scale = version.subresources.scale if version is not None and version.subresources is not None else None
        if scale is None:
            return None
        return scale.spec_replicas_path, scale.status_replicas_path, scale.label_selector_path

    def _scalable(self, info: KindInfo) -> bool:
        return info.kind in SCALE_KINDS and not issubclass(info.type, CustomObject) or self._scale_paths(info) is not None

    def _custom_schema(self, info: KindInfo, obj: Object, request: Request | None = None) -> tuple[Object, list[str], tuple[str, ...]]:
        """A custom object after its CRD's pruning and defaulting, its schema's field errors
        (``customResourceStrategy``; module docstring of :mod:`crd`), and the warnings of
        what was pruned. With ``fieldValidation`` Strict (``request.field_validation``) a
        pruned field is refused instead (400 ``strict decoding error: unknown field
        "spec.x"``), with Warn it is a warning (KEP-2885: custom resources too)."""
        if not isinstance(obj, CustomObject):
            return obj, [], ()
        crd = self._crd(info.resource)
        schema = crds.schema_of(crd) if crd is not None else None
        document = to_dict(obj)
        pruned = crds.prune(document, schema, root=True)
        crds.prune_nulls(document, schema)
        crds.default(document, schema)
        causes = crds.validate_object(document, schema)
        field_validation = request.field_validation if request is not None else ""
        if pruned and field_validation == "Strict":
            raise _refuse(bad_request(unknown_field_message(pruned)))
        if pruned:
            self.world.record("apiserver-warning", server=self.name, resource=info.resource, name=obj.metadata.name, warning=f"unknown field(s) pruned: {', '.join(pruned[:10])}")
        warnings = tuple(f'unknown field "{path}"' for path in pruned) if field_validation == "Warn" else ()
        if document.get("apiVersion") != info.api_version or document.get("kind") != info.kind:
            causes.append(f"apiVersion: Invalid value: {document.get('apiVersion')!r}: must be {info.api_version}")
        content = {key: value for key, value in document.items() if key not in ("apiVersion", "kind", "metadata")}
        return info.type(metadata=obj.metadata, content=content), causes, warnings

    def _prepare_custom_update(self, info: KindInfo, current: CustomObject, new: CustomObject) -> CustomObject:
        """``customResourceStrategy.PrepareForUpdate``: with a status subresource the stored
        status stays and ``generation`` moves on changes outside metadata and status; without
        it, on changes outside metadata."""
        with_status = self._has_status(info)
        if with_status:
            new.content.pop("status", None)
            if "status" in current.content:
                new.content["status"] = copy_object(current).content["status"]
        ignored = ("status",) if with_status else ()
        old_body = {key: value for key, value in current.content.items() if key not in ignored}
        new_body = {key: value for key, value in new.content.items() if key not in ignored}
        if old_body != new_body:
            new.metadata.generation = current.metadata.generation + 1
        return new

    @staticmethod
    def _path_get(document: dict[str, Any], path: str) -> Any:
        value: Any = document
        for part in path.strip(".").split("."):
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value

    @staticmethod
    def _path_set(document: dict[str, Any], path: str, value: Any) -> None:
        parts = path.strip(".").split(".")
        node = document
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def _scale_of(self, info: KindInfo, obj: Object) -> Scale:
        """The Scale view of ``obj`` (``pkg/registry/apps/*/storage/storage.go`` ``scaleFromX``;
        ``apiextensions-apiserver/pkg/registry/customresource/etcd.go`` ``scaleFromCustomResource``)."""
        meta = ObjectMeta(name=obj.metadata.name, namespace=obj.metadata.namespace, uid=obj.metadata.uid, resource_version=obj.metadata.resource_version, creation_timestamp=obj.metadata.creation_timestamp)
        meta.managed_fields = self._scale_managed_fields(info, obj)
        if isinstance(obj, CustomObject):
            paths = self._scale_paths(info)
            assert paths is not None
            document = to_dict(obj)
            spec_replicas = self._path_get(document, paths[0])
            status_replicas = self._path_get(document, paths[1])
            selector = self._path_get(document, paths[2]) if paths[2] else ""
            return Scale(metadata=meta, spec=ScaleSpec(replicas=spec_replicas if isinstance(spec_replicas, int) else 0), status=ScaleStatus(replicas=status_replicas if isinstance(status_replicas, int) else 0, selector=selector if isinstance(selector, str) else ""))
        from chaoskube.api.objects import LabelSelector
        from chaoskube.api.selectors import selector_from_label_selector

        replicas = obj.spec.replicas if obj.spec.replicas is not None else 1
        selector = obj.spec.selector
        if isinstance(selector, dict):  # a ReplicationController's map
            selector = LabelSelector(match_labels=dict(selector))
        text = str(selector_from_label_selector(selector)) if selector is not None else ""
        return Scale(metadata=meta, spec=ScaleSpec(replicas=replicas), status=ScaleStatus(replicas=obj.status.replicas, selector=text))

    def _scale_managed_fields(self, info: KindInfo, obj: Object) -> list[dict[str, Any]] | None:
        """``ScaleHandler.ToSubresource``: the parent's managers of its replicas, as the
        Scale's (``autoscaling/v1``, ``spec.replicas``)."""
        if not obj.metadata.managed_fields:
            return None
        if isinstance(obj, CustomObject):
            # every version's specReplicasPath (None: no scale at that version), as the CRD
            # handler's replicasPathInCustomResource (customresource_handler.go)
            crd = self._crd(info.resource)
            if crd is None or self._scale_paths(info) is None:
                return None
            mappings: dict[str, tuple | None] = {}
            for each in crd.spec.versions:
                scale = each.subresources.scale if each.subresources is not None else None
                mappings[f"{crd.spec.group}/{each.name}"] = tuple(("f", part) for part in scale.spec_replicas_path.strip(".").split(".")) if scale is not None else None
        else:
            mappings = {info.api_version: (("f", "spec"), ("f", "replicas"))}
        try:
            return scale_to_subresource(obj.metadata.managed_fields, mappings)
        except ApplyError:
            return None

    async def _get_scale(self, request: Request, info: KindInfo) -> Response:
        stored = await self._stored(info.resource, request.namespace, request.name)
        return Response(200, object=self._scale_of(info, stored.object), server=self.name)

    async def _update_scale(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        """PUT .../scale: write ``spec.replicas`` (or the CRD's specReplicasPath) of the
        parent through the ordinary update path (admission, validation, storage).

        As upstream's ``scaleUpdatedObjectInfo`` (``pkg/registry/apps/deployment/storage``):
        the Scale's resourceVersion, when it has one, is the precondition; without one the
        write is a read-modify-write of the freshest parent, retried on a lost race
        (GuaranteedUpdate), so a controller's status write in between is no conflict."""
        body = request.body
        if not isinstance(body, Scale):
            raise _refuse(bad_request(f"the body of {request.resource}/scale must be a Scale, not {type(body).__name__}"))
        if body.spec.replicas < 0:
            raise _refuse(invalid(request.resource, request.name, [f"spec.replicas: Invalid value: {body.spec.replicas}: must be greater than or equal to 0"]))
        demanded = body.metadata.resource_version
        for _ in range(MAX_ATTEMPTS):
            stored = await self._stored(info.resource, request.namespace, request.name)
            if demanded and demanded != stored.object.metadata.resource_version:
                raise _refuse(conflict(info.resource, request.name))
            parent = copy_object(stored.object)
            if isinstance(parent, CustomObject):
                paths = self._scale_paths(info)
                assert paths is not None
                document = to_dict(parent)
                self._path_set(document, paths[0], body.spec.replicas)
                parent = info.type(metadata=parent.metadata, content={key: value for key, value in document.items() if key not in ("apiVersion", "kind", "metadata")})
            else:
                parent.spec.replicas = body.spec.replicas
            update = Request(verb="update", resource=request.resource, namespace=request.namespace, name=request.name, credentials=request.credentials, body=parent, dry_run=request.dry_run, field_manager=request.field_manager, managed_as="scale", id=request.id, version=request.version)
            try:
                response = await self._update(update, user, info)
            except StatusError as error:
                if error.status.code == 409 and not demanded:
                    continue  # the parent changed since this read: read it again
                raise
            return Response(200, object=self._scale_of(info, response.object), server=self.name)
        raise _refuse(conflict(info.resource, request.name, f"the object kept changing: gave up after {MAX_ATTEMPTS} attempts"))

    async def _establish_crds(self) -> None:
        """NamingConditionController + EstablishingController: every CRD in this replica's
        cache whose names do not clash with another CRD of its group gets NamesAccepted and
        Established (and its acceptedNames and storedVersions); a clash is NamesAccepted
        False, reason NameConflict, and the CRD is not served."""
        await self.cacher.wait_ready()
        while True:
            await self.process.sleep(CRD_ESTABLISH_EVERY_S)
            all_crds = sorted(self.cacher.objects("customresourcedefinitions"), key=lambda crd: crd.metadata.name)
            for crd in all_crds:
                if crd.metadata.deletion_timestamp is not None:
                    continue
                conflict_reason = crds.names_conflict(crd, [other for other in all_crds if other.metadata.creation_timestamp and (other.metadata.creation_timestamp, other.metadata.name) < (crd.metadata.creation_timestamp or "", crd.metadata.name)])
                wanted = self._crd_status(crd, conflict_reason)
                if msgspec.json.encode(wanted) == msgspec.json.encode(crd.status):
                    continue
                updated = copy_object(crd)
                updated.status = wanted
                request = Request(verb="update", resource="customresourcedefinitions", subresource="status", name=crd.metadata.name, body=updated, credentials=self.loopback, field_manager="kube-apiserver", id=f"{self.name}/establish/{crd.metadata.name}")
                await self.handle(request)

    def _crd_status(self, crd: CustomResourceDefinition, conflict_reason: str | None) -> Any:
        status = copy_object(crd).status
        now = timestamp(self.process.now())

        def condition(kind: str, value: str, reason: str, message: str) -> CustomResourceDefinitionCondition:
            previous = next((c for c in status.conditions if c.type == kind), None)
            if previous is not None and previous.status == value and previous.reason == reason:
                return previous
            return CustomResourceDefinitionCondition(type=kind, status=value, reason=reason, message=message, last_transition_time=now)

        if conflict_reason is not None:
            names = condition("NamesAccepted", "False", "NameConflict", conflict_reason)
            established = condition("Established", "False", "NotAccepted", "not all names are accepted")
            status.conditions = [names, established]
            return status
        status.accepted_names = CustomResourceDefinitionNames(**msgspec.structs.asdict(crd.spec.names))
        if not status.accepted_names.list_kind:
            status.accepted_names.list_kind = f"{crd.spec.names.kind}List"
        if not status.accepted_names.singular:
            status.accepted_names.singular = crd.spec.names.kind.lower()
        storage = crds.serving_version(crd)
        if storage is not None and storage.name not in status.stored_versions:
            status.stored_versions = [*status.stored_versions, storage.name]
        status.conditions = [
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted"),
        ]
        return status

    # ------------------------------------------------------------------ reads
    def _selectors(self, request: Request) -> tuple[Any, Any]:
        try:
            return parse_label_selector(request.label_selector), parse_field_selector(request.field_selector, request.resource)
        except SelectorError as error:
            raise _refuse(bad_request(str(error))) from None

    async def _fresh(self, resource_version: str) -> None:
        try:
            wanted = int(resource_version)
        except ValueError:
            raise _refuse(bad_request(f"invalid resource version: {resource_version!r}")) from None
        if not await self.cacher.wait_fresh(wanted, self.config.fresh_wait_s):
            raise _refuse(too_large_resource_version(wanted, self.cacher.resource_version))

    async def _get(self, request: Request, info: KindInfo) -> Response:
        key = storage_key(info.resource, request.namespace, request.name)
        if request.resource_version == "":
            stored = await self.store.get(key)
            obj = stored.object if stored is not None else None
        else:
            if request.resource_version != "0":
                await self._fresh(request.resource_version)
            cached = self.cacher.cache(info.resource).get(key)
            obj = copy_object(cached) if cached is not None else None
        if obj is None:
            raise _refuse(not_found(info.resource, request.name))
        return Response(200, object=obj, server=self.name)

    async def _list(self, request: Request, info: KindInfo) -> Response:
        labels, fields = self._selectors(request)
        prefix = resource_prefix(info.resource, request.namespace)
        version = request.resource_version
        if version == "" or request.resource_version_match == "Exact":
            revision = 0 if version == "" else self._revision(version)
            objects, read_at = await self.store.list(prefix, revision=revision)
            items = tuple(obj for obj in objects if selected(obj, labels, fields))
            return Response(200, items=items, resource_version=str(revision or read_at), server=self.name)
        if version != "0":
            await self._fresh(version)
        cache = self.cacher.cache(info.resource)
        items = tuple(copy_object(obj) for obj in cache.list(request.namespace, labels, fields))
        return Response(200, items=items, resource_version=str(cache.resource_version or self.cacher.resource_version), server=self.name)

    @staticmethod
    def _revision(version: str) -> int:
        try:
            return int(version)
        except ValueError:
            raise _refuse(bad_request(f"invalid resource version: {version!r}")) from None

    async def _watch(self, request: Request, info: KindInfo, message: Any) -> None:
        labels, fields = self._selectors(request)
        initial: list[WatchEvent] | None = None
        revision: int | None = None
        if request.resource_version == "":
            # "Get State and Start at Most Recent": a quorum read, then events after it.
            objects, revision = await self.store.list(resource_prefix(info.resource, request.namespace))
            initial = [WatchEvent("ADDED", obj, obj.metadata.resource_version) for obj in objects if selected(obj, labels, fields)]
            await self._fresh(str(revision))
        elif request.resource_version != "0":
            await self._fresh(request.resource_version)  # a version ahead of the cache: wait
        self.cacher.start_watch(message, request, info.resource, initial_events=initial, revision=revision)

    # ------------------------------------------------------------------ create
    def _admission_request(self, operation: str, request: Request, user: UserInfo, info: KindInfo, obj: Object | None, old: Object | None, name: str = "") -> AdmissionRequest:
        return AdmissionRequest(
            operation=operation, kind=info.kind, namespace=request.namespace, name=name or request.name,
            object=obj, old_object=old, user=user, subresource=request.subresource, dry_run=request.dry_run,
            request_id=request.id,
        )

    async def _stored(self, resource: str, namespace: str, name: str) -> Stored:
        """A quorum read of one object, or 404."""
        stored = await self.store.get(storage_key(resource, namespace, name))
        if stored is None:
            raise _refuse(not_found(resource, name))
        return stored

    def _body(self, request: Request, info: KindInfo) -> Object:
        body = request.body
        if issubclass(info.type, CustomObject) and isinstance(body, CustomObject) and body.RESOURCE == info.resource and type(body) is not info.type:
            crd = self._crd(info.resource)
            version = body.API_VERSION.rpartition("/")[2]
            if crd is None or crds.served_version(crd, version) is None:
                raise _refuse(bad_request(f"the server could not find the requested resource ({body.API_VERSION}, {info.resource})"))
            # conversion strategy None: only apiVersion changes (apiextensions' nopConverter)
            return info.type(metadata=copy_object(body).metadata, content=msgspec.json.decode(msgspec.json.encode(body.content)))
        if not isinstance(body, info.type):
            raise _refuse(bad_request(f"the body of the request must be a {info.kind}, not {type(body).__name__}"))
        return copy_object(body)

    def _new_uid(self) -> str:
        """A random (version 4) UUID, drawn from the seeded generator."""
        return str(uuid.UUID(int=self._uids.getrandbits(128), version=4))

    def _prepare_for_create(self, obj: Object, info: KindInfo) -> None:
        """``rest.BeforeCreate`` and the kinds' ``PrepareForCreate``."""
        meta = obj.metadata
        if not meta.name and meta.generate_name:
            suffix = "".join(self._names.choice(_NAME_CHARS) for _ in range(_GENERATED_SUFFIX))
            meta.name = meta.generate_name[: 63 - _GENERATED_SUFFIX] + suffix
        meta.uid = self._new_uid()
        meta.creation_timestamp = timestamp(self.process.now())
        meta.resource_version = ""
        meta.deletion_timestamp = None
        meta.deletion_grace_period_seconds = None
        meta.generation = 1 if (info.kind in validation.GENERATION_KINDS or isinstance(obj, CustomObject)) else 0
        if isinstance(obj, CustomObject):
            if self._has_status(info):
                obj.content.pop("status", None)  # customResourceStrategy.PrepareForCreate
            return
        if info.kind == "Pod":
            obj.status = type(obj.status)(phase="Pending", qos_class=obj.status.qos_class)
        elif info.kind == "Namespace":
            obj.status = type(obj.status)(phase="Active")
            if "kubernetes" not in obj.spec.finalizers:
                obj.spec.finalizers = [*obj.spec.finalizers, "kubernetes"]
        elif info.kind in ("PersistentVolumeClaim", "PersistentVolume"):
            obj.status = type(obj.status)(phase="Pending")
        elif info.kind in STATUS_KINDS and info.kind != "Node":  # a kubelet creates its Node with status
            obj.status = type(obj.status)()
        if info.kind == "Job":
            self._generate_job_selector(obj)

    @staticmethod
    def _generate_job_selector(job: Any) -> None:
        """``generateSelectorIfNeeded`` (``pkg/registry/batch/job/strategy.go``): unless
        ``manualSelector``, the pods carry the Job's uid and name as labels and the selector
        is the uid label; a selector the user gave is refused."""
        if job.spec.manual_selector:
            return
        uid, name = job.metadata.uid, job.metadata.name
        generated = {JOB_UID_LABEL: uid}
        if job.spec.selector is not None and (job.spec.selector.match_expressions or job.spec.selector.match_labels != generated):
            raise _refuse(invalid("jobs", name, [f"spec.selector: Invalid value: {go_value(job.spec.selector.match_labels)}: `selector` not auto-generated"]))
        labels = dict(job.spec.template.metadata.labels)
        labels.update({JOB_UID_LABEL: uid, JOB_NAME_LABEL: name, "controller-uid": uid, "job-name": name})
        job.spec.template.metadata.labels = labels
        job.spec.selector = LabelSelector(match_labels=generated)

    async def _create(self, request: Request, user: UserInfo, info: KindInfo, *, applied: bool = False) -> Response:
        obj = self._body(request, info)
        if info.namespaced:
            if not request.namespace:
                raise _refuse(bad_request("the request must name a namespace"))
            if obj.metadata.namespace and obj.metadata.namespace != request.namespace:
                raise _refuse(bad_request("the namespace of the provided object does not match the namespace sent on the request"))
            obj.metadata.namespace = request.namespace
        else:
            obj.metadata.namespace = ""
        if info.kind == "Pod" and len(self.cacher.cache("pods")) >= self.config.max_pods:
            self.world.record("simulation-limit", server=self.name, resource="pods", limit=self.config.max_pods)
            raise _refuse(forbidden(f'pods "{obj.metadata.name or obj.metadata.generate_name}" is forbidden: the simulation holds at most {self.config.max_pods} pods (chaoskube\'s cap per run; see docs/api-server.md)'))
        if not applied:  # create.go: the field manager runs before admission
            self._track(info, request, None, obj)
        admission = self._admission_request("CREATE", request, user, info, obj, None, name=obj.metadata.name)
        obj = await self._mutate(admission)
        self._prepare_for_create(obj, info)
        obj, schema_causes, warnings = self._custom_schema(info, obj, request)
        causes = schema_causes + validation.validate_create(obj)
        if causes:
            raise _refuse(invalid(info.resource, obj.metadata.name or obj.metadata.generate_name, causes, kind=info.kind if isinstance(obj, CustomObject) else ""))
        await self._validate(self._admission_request("CREATE", request, user, info, obj, None, name=obj.metadata.name))
        if request.dry_run:
            return Response(201, object=obj, server=self.name, warnings=warnings)
        if isinstance(obj, CustomResourceDefinition):
            unenforced = crds.unenforced_features(obj)
            if unenforced:  # accepted as upstream accepts them, but said once: nothing enforces them here
                self.world.record("apiserver-warning", server=self.name, resource=info.resource, name=obj.metadata.name, warning=f"not enforced by chaoskube: {'; '.join(unenforced[:10])}")
        await self._charge_quota(request, info, obj)
        allocated = await self._allocate_cluster_ip(obj) if isinstance(obj, Service) else ""
        try:
            revision = await self.store.create(storage_key(info.resource, obj.metadata.namespace, obj.metadata.name), obj, lease=await self._lease(info))
        except StatusError:
            if allocated:
                await self.service_ips.release(allocated)  # failed: the repair loop frees it otherwise
            raise
        if revision is None:
            if allocated:
                await self.service_ips.release(allocated)
            raise _refuse(already_exists(info.resource, obj.metadata.name))
        obj.metadata.resource_version = str(revision)
        return Response(201, object=obj, server=self.name, warnings=warnings)

    async def _allocate_cluster_ip(self, service: Service) -> str:
        """The Service REST's ``allocClusterIPs`` (``pkg/registry/core/service/storage``):
        ``None`` is headless, ExternalName gets none, anything else the address it asks
        for or a free one; returns the address allocated here (to release if the write
        fails), or ""."""
        spec = service.spec
        requested = spec.cluster_ip or (spec.cluster_ips[0] if spec.cluster_ips else "")
        if spec.type == "ExternalName":
            return ""
        if not spec.ip_families:
            spec.ip_families = ["IPv4"]
        if spec.ip_family_policy is None:
            spec.ip_family_policy = "SingleStack"
        if requested == "None":
            spec.cluster_ip, spec.cluster_ips = "None", ["None"]
            return ""
        address = await self.service_ips.allocate(requested, service.metadata.name)
        spec.cluster_ip, spec.cluster_ips = address, [address]
        return address

    @property
    def advertise_address(self) -> str:
        """``--advertise-address``: 172.18.0.(10 + n) for the replica named ``...-n`` (a
        kind cluster's network), 172.18.0.10 otherwise."""
        digits = ""
        for char in reversed(self.name):
            if not char.isdigit():
                break
            digits = char + digits
        return f"172.18.0.{10 + (int(digits) % 240 if digits else 0)}"

    async def _reconcile_kubernetes_service(self) -> None:
        """The control plane's bootstrap controller and lease endpoint reconciler
        (``pkg/controlplane/controller/kubernetesservice``, ``reconcilers/lease.go``): the
        ``default/kubernetes`` Service (ClusterIP the range's first address, port 443 to
        6443) exists; every 10 s this replica renews its master lease (an etcd lease of
        15 s on ``/masterleases/<ip>``) and makes the ``kubernetes`` Endpoints and
        EndpointSlice list exactly the replicas whose leases live."""
        await self.cacher.wait_ready()
        first = Bitmap(self.config.service_cidr).ip(0)
        while True:
            try:
                await self._reconcile_kubernetes_once(first)
            except StatusError:
                pass  # etcd unavailable or a conflict: the next round
            await self.process.sleep(KUBERNETES_SERVICE_INTERVAL_S)

    async def _reconcile_kubernetes_once(self, first: str) -> None:
        lease = await self.master_leases.lease(self.process.now(), MASTER_LEASE_TTL_S)
        await self.store.raw(PutRequest(f"{MASTER_LEASES_PREFIX}{self.advertise_address}", self.advertise_address, lease=lease), idempotent=True)
        response = await self.store.raw(RangeRequest(MASTER_LEASES_PREFIX, prefix_range_end(MASTER_LEASES_PREFIX)), idempotent=True)
        addresses = sorted({kv.value.decode() if isinstance(kv.value, bytes) else str(kv.value) for kv in response.kvs}, key=lambda ip: tuple(int(part) for part in ip.split(".")))
        if self.cacher.cache("services").get(storage_key("services", "default", "kubernetes")) is None:
            service = Service(
                metadata=ObjectMeta(name="kubernetes", namespace="default", labels={"component": "apiserver", "provider": "kubernetes"}),
                spec=ServiceSpec(ports=[ServicePort(name="https", protocol="TCP", port=443, target_port=6443)], cluster_ip=first, type="ClusterIP", session_affinity="None", internal_traffic_policy="Cluster"),
            )
            await self.handle(Request(verb="create", resource="services", namespace="default", credentials=self.loopback, body=service, field_manager="kube-apiserver", id=f"{self.name}/kubernetes-service"))
        ports = [EndpointPort(name="https", protocol="TCP", port=6443)]
        wanted_slice = EndpointSlice(
            metadata=ObjectMeta(name="kubernetes", namespace="default", labels={"kubernetes.io/service-name": "kubernetes"}),
            address_type="IPv4", endpoints=[Endpoint(addresses=[ip], conditions=EndpointConditions(ready=True)) for ip in addresses], ports=ports,
        )
        wanted_endpoints = Endpoints(
            metadata=ObjectMeta(name="kubernetes", namespace="default", labels={"endpointslice.kubernetes.io/skip-mirror": "true"}),
            subsets=[EndpointSubset(addresses=[{"ip": ip} for ip in addresses], ports=[{"name": "https", "port": 6443, "protocol": "TCP"}])] if addresses else [],
        )
        for wanted in (wanted_endpoints, wanted_slice):
            current = self.cacher.cache(wanted.RESOURCE).get(storage_key(wanted.RESOURCE, "default", "kubernetes"))
            request_id = f"{self.name}/kubernetes-{wanted.RESOURCE}"
            if current is None:
                await self.handle(Request(verb="create", resource=wanted.RESOURCE, namespace="default", credentials=self.loopback, body=wanted, field_manager="kube-apiserver", id=request_id))
                continue
            same = (current.endpoints, current.ports, current.address_type) == (wanted.endpoints, wanted.ports, wanted.address_type) if isinstance(wanted, EndpointSlice) else current.subsets == wanted.subsets
            if same:
                continue
            updated = copy_object(current)
            if isinstance(updated, EndpointSlice):
                updated.endpoints, updated.ports, updated.address_type = wanted.endpoints, wanted.ports, wanted.address_type
            else:
                updated.subsets = wanted.subsets
            await self.handle(Request(verb="update", resource=wanted.RESOURCE, namespace="default", name="kubernetes", credentials=self.loopback, body=updated, field_manager="kube-apiserver", id=request_id))

    async def _repair_service_ips(self) -> None:
        """``ipallocator/controller/repair.go``: every 3 minutes, the range from the Services."""
        await self.cacher.wait_ready()
        while True:
            await self.process.sleep(REPAIR_EVERY_S)
            try:
                services, _ = await self.store.list(resource_prefix("services"))
                found = await self.service_ips.repair([obj for obj in services if isinstance(obj, Service)])
            except StatusError:
                continue  # etcd unavailable: the next round
            if any(found.values()):
                self.world.record("service-ip-repair", server=self.name, **{key: value[:20] for key, value in found.items()})

    async def _lease(self, info: KindInfo) -> int:
        """The etcd lease an object of ``info``'s kind is written with: every write of an
        Event renews its TTL (``TTLFunc`` answers the TTL on update too); other kinds none."""
        if info.type is not Event:
            return NO_LEASE
        return await self.leases.lease(self.process.now(), self.config.event_ttl_s)

    async def _charge_quota(self, request: Request, info: KindInfo, obj: Object) -> None:
        """The ResourceQuota admission plugin (``plugin/pkg/admission/resourcequota``): the
        namespace's quotas must admit ``obj`` (:func:`quota.check_quota`), and each matching
        quota's ``status.used`` is raised by what ``obj`` uses before ``obj`` is stored,
        with an update guarded by the quota's resourceVersion (a concurrent admission that
        changed it first makes this one re-read and check again)."""
        from chaoskube.apiserver.admission import forbidden_by_admission
        from chaoskube.api.quota import check_quota, show_quantity

        namespace = obj.metadata.namespace
        if not namespace:
            return
        quotas = [quota for quota in self.cacher.objects("resourcequotas") if quota.metadata.namespace == namespace]
        for _ in range(MAX_ATTEMPTS):
            if not quotas:
                return
            refusal, charges = check_quota(quotas, obj, info.resource)
            if refusal is not None:
                admission = self._admission_request("CREATE", request, UserInfo(name=""), info, obj, None, name=obj.metadata.name)
                self.world.record("quota-refused", server=self.name, namespace=namespace, resource=info.resource, name=obj.metadata.name, reason=refusal)
                raise _refuse(forbidden(forbidden_by_admission(admission, refusal)))
            conflicted = False
            for quota, increment in charges:
                updated = copy_object(quota)
                used = dict(updated.status.used)
                for key, value in increment.items():
                    used[key] = show_quantity(parse_quantity(used.get(key, "0")) + value, key)
                updated.status.used = used
                update = Request(verb="update", resource="resourcequotas", subresource="status", namespace=namespace, name=quota.metadata.name, body=updated, credentials=self.loopback, field_manager="kube-apiserver", id=f"{request.id}/quota")
                response = await self.handle(update)
                if response.code == 409:
                    conflicted = True
                    break
                if not response.ok:
                    raise _refuse(response.status)
            if not conflicted:
                return
            listed, _ = await self.store.list(resource_prefix("resourcequotas", namespace))
            quotas = list(listed)
        raise _refuse(conflict("resourcequotas", namespace, f"the quotas kept changing: gave up after {MAX_ATTEMPTS} attempts"))

    # ------------------------------------------------------------------ managed fields
    def _field_manager(self, info: KindInfo, subresource: str, version: str = "") -> FieldManager:
        """The kind's field manager (:mod:`chaoskube.api.managedfields`) for the main
        resource or a subresource, at the version the request named (``version``; "" the
        storage version). Reset fields (``ResetFieldsStrategy``): a kind with a status
        subresource keeps ``status`` out of its main resource's managers and the spec out
        of its status managers.

        A custom resource's field manager is its request version's
        (``customresource_handler.go``: one ``scopeWithFieldManager`` per version, its
        ``HubGroupVersion`` the request's): objects, stored at the storage version, are
        converted to it and back (strategy None, :class:`NoneConversion`), entries are
        recorded at it, and the other entries' sets are compared in their versions'
        schemas (the type converter holds every version of ``spec.versions``:
        ``buildOpenAPIModelsForApply``). Main-resource reset fields are the request
        version's (``customResourceStrategy.GetResetFields``); the status subresource's
        are every version's (``getStatusResetFields``, since kubernetes#134216)."""
        if issubclass(info.type, CustomObject):
            crd = self._crd(info.resource)
            group = info.api_version.rpartition("/")[0]
            asked = f"{group}/{version}" if version else info.api_version
            if crd is not None:
                structurals = {f"{group}/{each.name}": (each.schema.open_apiv3_schema if each.schema is not None else None) for each in crd.spec.versions}
            else:
                structurals = {asked: None}
            typed = {name: custom_schema(structural) for name, structural in structurals.items()}
            schema, root = typed.get(asked) or custom_schema(None)
            with_status = self._has_status(info)
            schemas: tuple = tuple((name, id(pair[0])) for name, pair in typed.items())
        else:
            asked = info.api_version
            schema, root = builtin_schema(info.type)
            with_status = info.kind in STATUS_KINDS
            typed = {}
            schemas = (id(schema),)
        key = (info.resource, asked, subresource, with_status)
        cached = self._field_managers.get(key)
        if cached is not None and cached[0] == schemas:
            return cached[1]
        ignored: frozenset | dict = frozenset()
        if subresource == "status":
            ignored = {name: frozenset({(("f", "spec"),)}) for name in (typed or (asked,))}
        elif subresource == "scale":
            ignored = frozenset()  # only the replicas path changes (ScaleHandler)
        elif with_status:
            ignored = frozenset({(("f", "status"),)})
        if typed:
            roots = {name: pair[1] for name, pair in typed.items()}
            manager = FieldManager(schema, root, asked, info.kind, subresource, ignored, hub_version=info.api_version,
                                   type_for=lambda name: roots.get(name, root), convert=NoneConversion(frozenset(typed)))
        else:
            manager = FieldManager(schema, root, info.api_version, info.kind, subresource, ignored, struct=info.type)
        if len(self._field_managers) > 1024:
            self._field_managers.clear()
        self._field_managers[key] = (schemas, manager)
        return manager

    def _track(self, info: KindInfo, request: Request, current: Object | None, new: Object) -> None:
        """``FieldManager.UpdateNoErrors`` for a create, update or non-apply patch: sets
        ``new``'s managedFields (the request's manager owns what it added or changed)."""
        if request.subresource not in ("", "status"):
            return  # binding, eviction, finalize: not tracked here (scale: as its parent's update)
        manager = self._field_manager(info, request.managed_as or request.subresource, request.version)
        form = to_dict if isinstance(new, CustomObject) else json_form  # json_form: the same typed form, faster
        document = manager.update_no_errors(form(current) if current is not None else None, form(new), request.field_manager, timestamp(self.process.now()))
        new.metadata.managed_fields = (document.get("metadata") or {}).get("managedFields")

    def _applied(self, info: KindInfo, request: Request, live: dict[str, Any] | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The object after the apply of ``request.body`` to ``live`` (None: not there) and
        the warnings of the configuration's unknown fields: they are dropped before the
        merge (the configuration is decoded into the kind's type first, as upstream's
        apply patcher does), refused under ``fieldValidation=Strict``."""
        config = request.body
        if not isinstance(config, dict):
            raise _refuse(bad_request("an apply patch is a YAML or JSON object"))
        if issubclass(info.type, CustomObject):
            crd = self._crd(info.resource)
            config = copy.deepcopy(config)
            unknown = crds.prune(config, crds.schema_of(crd, request.version or None) if crd is not None else None, root=True)
        else:
            config, unknown = prune_unknown(config, info.type)
        if unknown and request.field_validation == "Strict":
            raise _refuse(bad_request(unknown_field_message(unknown)))
        warnings = tuple(f'unknown field "{path}"' for path in unknown) if request.field_validation in ("Warn", "") else ()
        manager = self._field_manager(info, request.subresource, request.version)
        try:
            return manager.apply(live, config, request.field_manager, request.force, timestamp(self.process.now())), warnings
        except ApplyConflict as error:
            raise _refuse(Status(409, "Conflict", str(error), causes=tuple(f"{field}: {message}" for field, message in error.causes))) from None
        except ApplyError as error:
            raise _refuse(Status(error.code, "BadRequest" if error.code == 400 else "InternalError", str(error))) from None

    async def _apply_create(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        """An apply to an object that does not exist: the configuration applied to an empty
        object of the kind, then created (201) through the create path."""
        document, warnings = self._applied(info, request, None)
        name = (document.get("metadata") or {}).get("name", "")
        if name != request.name:
            raise _refuse(bad_request(f"the name of the object ({name}) does not match the name on the URL ({request.name})"))
        try:
            custom = {(info.api_version, info.kind): info.type} if issubclass(info.type, CustomObject) else None
            obj = from_dict(document, f"{request.resource}/{request.name}", custom=custom)
        except ManifestError as error:
            raise _refuse(Status(422, "Invalid", f'{info.kind} "{request.name}" is invalid: {error.field or "object"}: {error.reason}')) from None
        response = await self._create(replace(request, verb="create", body=obj, patch_type="merge"), user, info, applied=True)
        return replace(response, warnings=tuple(warnings) + tuple(response.warnings))

    # ------------------------------------------------------------------ update and patch
    def _patched(self, current: Object, request: Request, info: KindInfo | None = None) -> tuple[Object, str, tuple[str, ...]]:
        """The patched object, the resourceVersion the patch itself demands ("" if none) and
        the warnings for unknown fields it dropped (``fieldValidation=Warn``). An apply
        (``patch_type`` "apply") is merged by the kind's field manager."""
        document = to_dict(current)
        if request.patch_type == "apply":
            assert info is not None
            patched, warnings = self._applied(info, request, document)
            demanded = (request.body.get("metadata") or {}).get("resourceVersion") or ""
            obj, demanded, more = self._decode_patched(current, request, patched, str(demanded))
            return obj, demanded, warnings + more
        try:
            if request.patch_type == "strategic" and isinstance(current, CustomObject):
                # handlers/patch.go: custom resources have no Go struct to take patch
                # metadata from, so upstream refuses a strategic merge patch of one.
                raise _refuse(Status(415, "UnsupportedMediaType", "strategic merge patch is not supported for custom resources: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"))
            if request.patch_type in ("merge", "strategic"):
                if not isinstance(request.body, dict):
                    raise PatchError(f"a {request.patch_type} merge patch is a JSON object")
                if request.patch_type == "merge":
                    patched = merge_patch(document, request.body)
                else:
                    patched = strategic_merge_patch(document, request.body, type(current))
                demanded = (request.body.get("metadata") or {}).get("resourceVersion") or ""
            else:
                # handlers/patch.go (jsonPatcher) applies a JSON patch to the object as Go
                # encodes it: fields without omitempty are there even at their zero value
                # (a CRD version's ``served: false``), so "replace" finds them.
                patched = apply_patch(emit_required(document, type(current)), request.body)
                demanded = next((op.get("value") for op in request.body if isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" and op.get("op") in ("add", "replace", "test")), "") or ""
        except PatchError as error:
            raise _refuse(Status(422, "Invalid", str(error))) from None
        return self._decode_patched(current, request, patched, str(demanded))

    def _decode_patched(self, current: Object, request: Request, patched: Any, demanded: str) -> tuple[Object, str, tuple[str, ...]]:
        if not isinstance(patched, dict) or patched.get("kind") != current.KIND or patched.get("apiVersion") != current.API_VERSION:
            raise _refuse(bad_request("a patch may not change apiVersion or kind"))
        warnings: tuple[str, ...] = ()
        if request.field_validation in ("Warn", "Ignore", "Strict") and not isinstance(current, CustomObject):  # a custom object is pruned by its schema
            patched, unknown = prune_unknown(patched, type(current))
            if unknown and request.field_validation == "Strict":
                raise _refuse(bad_request(unknown_field_message(unknown)))
            if request.field_validation == "Warn":
                warnings = tuple(f'unknown field "{path}"' for path in unknown)
        try:
            custom = {(current.API_VERSION, current.KIND): type(current)} if isinstance(current, CustomObject) else None
            obj = from_dict(patched, f"{request.resource}/{request.name}", custom=custom)
        except ManifestError as error:
            raise _refuse(Status(422, "Invalid", f'{current.KIND} "{request.name}" is invalid: {error.field or "object"}: {error.reason}')) from None
        obj.metadata.resource_version = str(demanded) if demanded else current.metadata.resource_version
        return obj, str(demanded), warnings

    def _prepare_for_update(self, info: KindInfo, current: Object, new: Object, subresource: str) -> Object:
        """``rest.BeforeUpdate`` and the kinds' ``PrepareForUpdate``: what the client may not
        change is taken from the stored object; status and spec go by subresource."""
        if new.metadata.uid and new.metadata.uid != current.metadata.uid:
            raise _refuse(conflict(info.resource, current.metadata.name, f"Precondition failed: UID in precondition: {new.metadata.uid}, UID in object meta: {current.metadata.uid}"))
        if subresource == "status":
            result = copy_object(current)
            if isinstance(result, CustomObject):
                result.content.pop("status", None)
                if "status" in new.content:
                    result.content["status"] = new.content["status"]
                return result
            result.status = new.status
            if info.kind == "Pod":
                # podStatusStrategy.PrepareForUpdate (pkg/registry/core/pod/strategy.go)
                # keeps the spec, owner references and deletion fields but takes the new
                # metadata: labels and annotations change through pods/status (which is why
                # NodeRestriction forbids a kubelet's label changes there: KEP-1314).
                result.metadata.labels = dict(new.metadata.labels)
                result.metadata.annotations = dict(new.metadata.annotations)
            return result
        if subresource == "finalize":
            result = copy_object(current)
            result.spec.finalizers = list(new.spec.finalizers)
            return result
        meta, old = new.metadata, current.metadata
        meta.uid = old.uid
        meta.creation_timestamp = old.creation_timestamp
        meta.deletion_timestamp = old.deletion_timestamp
        meta.deletion_grace_period_seconds = old.deletion_grace_period_seconds
        meta.generation = old.generation
        meta.generate_name = old.generate_name
        if isinstance(new, CustomObject):
            return self._prepare_custom_update(info, current, new)
        if info.kind in STATUS_KINDS:
            new.status = copy_object(current).status
        if info.kind == "Namespace":
            new.spec.finalizers = list(current.spec.finalizers)
        if isinstance(new, Service) and isinstance(current, Service):
            # patchAllocatedValues: an update that leaves clusterIP out keeps it; a change
            # of an allocated address is refused (ValidateServiceUpdate)
            if not new.spec.cluster_ip and not new.spec.cluster_ips and new.spec.type == current.spec.type:
                new.spec.cluster_ip, new.spec.cluster_ips = current.spec.cluster_ip, list(current.spec.cluster_ips)
            if not new.spec.ip_families:
                new.spec.ip_families = list(current.spec.ip_families)
            if new.spec.ip_family_policy is None:
                new.spec.ip_family_policy = current.spec.ip_family_policy
            if current.spec.cluster_ip and new.spec.cluster_ip != current.spec.cluster_ip:
                raise _refuse(invalid(info.resource, current.metadata.name, [f'spec.clusterIPs[0]: Invalid value: []string{{"{new.spec.cluster_ip}"}}: may not change once set']))
        if info.kind in validation.GENERATION_KINDS and _generation_changed(current, new):
            meta.generation = old.generation + 1
        return new

    @staticmethod
    def _removes_last_finalizer(current: Object, new: Object) -> bool:
        """``ShouldDeleteDuringUpdate`` (``registry/generic/registry/store.go``): no
        finalizer left, a delete was requested and its grace period is over (0 or unset);
        a namespace also needs its ``spec.finalizers`` empty (namespace ``finalize``)."""
        if new.metadata.finalizers or current.metadata.deletion_timestamp is None:
            return False
        if isinstance(new, Namespace) and new.spec.finalizers:
            return False
        return not current.metadata.deletion_grace_period_seconds

    async def _update(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        key = storage_key(info.resource, request.namespace, request.name)
        for _ in range(MAX_ATTEMPTS):
            if request.patch_type == "apply" and request.verb == "patch" and not request.subresource:
                found = await self.store.get(key)
                if found is None:  # patch.go applyPatcher: an apply creates what does not exist
                    return await self._apply_create(request, user, info)
            stored = await self._stored(info.resource, request.namespace, request.name)
            current = stored.object
            warnings: tuple[str, ...] = ()
            if request.verb == "patch":
                new, demanded, warnings = self._patched(current, request, info)
            else:
                new = self._body(request, info)
                demanded = new.metadata.resource_version
            if demanded and demanded != current.metadata.resource_version:
                raise _refuse(conflict(info.resource, request.name))
            if new.metadata.name != request.name:
                raise _refuse(bad_request(f"the name of the object ({new.metadata.name}) does not match the name on the URL ({request.name})"))
            if info.namespaced and new.metadata.namespace not in ("", request.namespace):
                raise _refuse(bad_request("the namespace of the provided object does not match the namespace sent on the request"))
            new.metadata.namespace = request.namespace
            applied_fields = new.metadata.managed_fields
            new = self._prepare_for_update(info, current, new, request.subresource)
            if request.verb == "patch" and request.patch_type == "apply":
                new.metadata.managed_fields = applied_fields  # a subresource's prepare keeps the stored metadata
            else:
                self._track(info, request, current, new)
            new = await self._mutate(self._admission_request("UPDATE", request, user, info, new, current))
            new, schema_causes, pruned_warnings = self._custom_schema(info, new, request)
            warnings = tuple(warnings) + pruned_warnings
            causes = schema_causes + validation.validate_update(current, new)
            if causes:
                raise _refuse(invalid(info.resource, request.name, causes, kind=info.kind if isinstance(new, CustomObject) else ""))
            await self._validate(self._admission_request("UPDATE", request, user, info, new, current))
            new.metadata.resource_version = current.metadata.resource_version
            if msgspec.json.encode(new) == msgspec.json.encode(current):
                return Response(200, object=current, server=self.name, warnings=warnings)  # no change: no write
            if request.dry_run:
                return Response(200, object=new, server=self.name, warnings=warnings)
            if self._removes_last_finalizer(current, new):
                revision = await self.store.delete(key, stored.mod_revision)
            else:
                revision = await self.store.update(key, new, stored.mod_revision, lease=await self._lease(info))
            if revision is None:
                if demanded:
                    raise _refuse(conflict(info.resource, request.name))
                continue  # GuaranteedUpdate: someone wrote in between; read again
            new.metadata.resource_version = str(revision)
            return Response(200, object=new, server=self.name, warnings=warnings)
        raise _refuse(conflict(info.resource, request.name, f"the object kept changing: gave up after {MAX_ATTEMPTS} attempts"))

    # ------------------------------------------------------------------ delete
    @staticmethod
    def _grace_period_s(current: Object, options: DeleteOptions) -> int:
        """``CheckGracefulDelete``: only pods are deleted gracefully; an unscheduled or
        terminal pod goes at once (``pkg/registry/core/pod/strategy.go``)."""
        if not isinstance(current, Pod):
            return 0
        if not current.spec.node_name or current.status.phase in ("Succeeded", "Failed"):
            return 0
        grace = options.grace_period_seconds
        if grace is None:
            grace = current.spec.termination_grace_period_seconds
        if grace is None:
            grace = 30
        return 1 if grace < 0 else grace

    async def _delete(self, request: Request, user: UserInfo, info: KindInfo, options: DeleteOptions | None = None) -> Response:
        options = options or request.delete_options or DeleteOptions()
        if options.propagation_policy and options.propagation_policy not in PROPAGATION_POLICIES:
            raise _refuse(invalid(info.resource, request.name, [f'propagationPolicy: Unsupported value: "{options.propagation_policy}": supported values: "Foreground", "Background", "Orphan"']))
        key = storage_key(info.resource, request.namespace, request.name)
        for _ in range(MAX_ATTEMPTS):
            stored = await self._stored(info.resource, request.namespace, request.name)
            current = stored.object
            meta = current.metadata
            if options.preconditions_uid and options.preconditions_uid != meta.uid:
                raise _refuse(conflict(info.resource, request.name, f"Precondition failed: UID in precondition: {options.preconditions_uid}, UID in object meta: {meta.uid}"))
            if options.preconditions_resource_version and options.preconditions_resource_version != meta.resource_version:
                raise _refuse(conflict(info.resource, request.name, f"Precondition failed: ResourceVersion in precondition: {options.preconditions_resource_version}, ResourceVersion in object meta: {meta.resource_version}"))
            admission = self._admission_request("DELETE", request, user, info, None, current)
            await self._mutate(admission)  # upstream runs both phases on DELETE (handlers/delete.go)
            await self._validate(admission)
            if request.dry_run:
                return Response(200, object=current, server=self.name)
            revision, pending = await self._delete_stored(key, stored, options)
            if revision is None:
                continue
            if pending is None and isinstance(current, Service):
                for address in current.spec.cluster_ips or [current.spec.cluster_ip]:
                    if address and address != "None":
                        await self.service_ips.release(address)
            if pending is not None:
                # Still stored (graceful, finalizers): 200 with the object, as
                # handlers/delete.go answers unless orphanDependents is false.
                return Response(200, object=pending, server=self.name)
            return Response(200, object=current, server=self.name)
        raise _refuse(conflict(info.resource, request.name, f"the object kept changing: gave up after {MAX_ATTEMPTS} attempts"))

    async def _delete_collection(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        """``Store.DeleteCollection`` (``registry/generic/registry/store.go``): list what the
        selectors select (a quorum read), then delete each with the request's options,
        through the same admission and storage as a single delete; an object gone meanwhile
        is skipped. Answers the list of what was deleted (or marked for deletion)."""
        labels, fields = self._selectors(request)
        objects, revision = await self.store.list(resource_prefix(info.resource, request.namespace))
        deleted: list[Object] = []
        for obj in objects:
            if not selected(obj, labels, fields):
                continue
            item = Request(
                verb="delete", resource=request.resource, namespace=obj.metadata.namespace, name=obj.metadata.name, credentials=request.credentials,
                delete_options=request.delete_options, dry_run=request.dry_run, id=f"{request.id}/{obj.metadata.namespace}/{obj.metadata.name}",
            )
            try:
                response = await self._delete(item, user, info)
            except StatusError as error:
                if error.status.code == 404:
                    continue
                raise
            if response.object is not None:
                deleted.append(response.object)
        return Response(200, items=tuple(deleted), resource_version=str(revision), server=self.name)

    async def _delete_stored(self, key: str, stored: Stored, options: DeleteOptions) -> tuple[int | None, Object | None]:
        """One attempt: (revision or None on a lost race, the object still stored or None)."""
        current = stored.object
        now = self.process.now()
        grace = self._grace_period_s(current, options)
        finalizers = deletion_finalizers(current.metadata.finalizers, options.propagation_policy)
        namespace_pending = isinstance(current, Namespace) and bool(current.spec.finalizers)
        if grace == 0 and not finalizers and not namespace_pending:
            return await self.store.delete(key, stored.mod_revision), None
        pending = copy_object(current)
        meta = pending.metadata
        finalizers_changed = finalizers != list(meta.finalizers)
        meta.finalizers = finalizers
        if meta.deletion_timestamp is not None:
            # Already being deleted: a shorter grace period may bring the deadline forward,
            # and a propagation policy may change the garbage collector's finalizers.
            if grace >= (meta.deletion_grace_period_seconds or 0) or parse_timestamp(meta.deletion_timestamp) <= now + grace:
                if not finalizers_changed:
                    return stored.mod_revision, current
                grace = meta.deletion_grace_period_seconds or 0
                now = parse_timestamp(meta.deletion_timestamp) - grace
        meta.deletion_timestamp = timestamp(now + grace)
        meta.deletion_grace_period_seconds = grace
        if isinstance(pending, Namespace):
            pending.status.phase = "Terminating"
        revision = await self.store.update(key, pending, stored.mod_revision)
        if revision is not None:
            meta.resource_version = str(revision)
        return revision, pending

    # ------------------------------------------------------------------ binding
    async def _bind(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        binding = request.body
        if not isinstance(binding, Binding):
            raise _refuse(bad_request(f"the body of pods/binding must be a Binding, not {type(binding).__name__}"))
        if binding.name != request.name:
            raise _refuse(bad_request("name in URL does not match name in Binding object"))
        admission = self._admission_request("CREATE", request, user, info, None, None)
        await self._mutate(admission)
        await self._validate(admission)
        key = storage_key("pods", request.namespace, request.name)
        for _ in range(MAX_ATTEMPTS):
            stored = await self._stored("pods", request.namespace, request.name)
            pod: Pod = stored.object
            if pod.metadata.deletion_timestamp is not None:
                raise _refuse(conflict("pods/binding", request.name, f"pod {request.name} is being deleted, cannot be assigned to a host"))
            if pod.spec.node_name:
                raise _refuse(conflict("pods/binding", request.name, f'pod {request.name} is already assigned to node "{pod.spec.node_name}"'))
            pod.spec.node_name = binding.target_node
            scheduled = PodCondition(type="PodScheduled", status="True", last_transition_time=timestamp(self.process.now()))
            pod.status.conditions = [*(c for c in pod.status.conditions if c.type != "PodScheduled"), scheduled]
            revision = await self.store.update(key, pod, stored.mod_revision)
            if revision is None:
                continue
            pod.metadata.resource_version = str(revision)
            return Response(201, object=pod, server=self.name)
        raise _refuse(conflict("pods/binding", request.name, f"the pod kept changing: gave up after {MAX_ATTEMPTS} attempts"))

    # ------------------------------------------------------------------ eviction
    async def _evict(self, request: Request, user: UserInfo, info: KindInfo) -> Response:
        """``EvictionREST.Create`` (``pkg/registry/core/pod/storage/eviction.go``)."""
        eviction = request.body
        if not isinstance(eviction, Eviction):
            raise _refuse(bad_request(f"the body of pods/eviction must be an Eviction, not {type(eviction).__name__}"))
        if eviction.name != request.name:
            raise _refuse(bad_request("name in URL does not match name in Eviction object"))
        options = eviction.delete_options or DeleteOptions()
        delete = Request(verb="delete", resource="pods", namespace=request.namespace, name=request.name, credentials=request.credentials, dry_run=request.dry_run, id=request.id)
        stored = await self._stored("pods", request.namespace, request.name)
        pod: Pod = stored.object
        # Admission of pods/eviction sees the pod as the old object (NodeRestriction lets a
        # kubelet evict only the pods bound to its node).
        admission = self._admission_request("CREATE", request, user, info, None, pod)
        await self._mutate(admission)
        await self._validate(admission)
        # canIgnorePDB: a terminal, pending or already deleted pod is deleted directly.
        if pod.status.phase in ("Succeeded", "Failed", "Pending") or pod.metadata.deletion_timestamp is not None:
            await self._delete(delete, user, info, options)
            return self._evicted(request, pod, "")
        objects, _ = await self.store.list(resource_prefix("poddisruptionbudgets", request.namespace))
        pdbs = [pdb for pdb in objects if _pdb_selects(pdb, pod.metadata.labels)]
        if len(pdbs) > 1:
            raise _refuse(Status(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
        pdb_name = ""
        guard_version = False
        if pdbs:
            pdb: PodDisruptionBudget = pdbs[0]
            pdb_name = pdb.metadata.name
            healthy_enough = pdb.status.current_healthy >= pdb.status.desired_healthy and pdb.status.desired_healthy > 0
            if not _pod_ready(pod) and (pdb.spec.unhealthy_pod_eviction_policy == "AlwaysAllow" or healthy_enough):
                guard_version = True  # an unhealthy pod: delete without spending the budget
            else:
                await self._spend_disruption(request, pod, pdb)
        if guard_version:
            options = DeleteOptions(grace_period_seconds=options.grace_period_seconds, preconditions_uid=options.preconditions_uid, preconditions_resource_version=options.preconditions_resource_version or pod.metadata.resource_version)
        try:
            await self._delete(delete, user, info, options)
        except StatusError as error:
            if error.status.code == 409 and guard_version and not (eviction.delete_options and eviction.delete_options.preconditions_resource_version):
                raise _refuse(self._budget_busy(pdb_name)) from None
            raise
        return self._evicted(request, pod, pdb_name)

    def _evicted(self, request: Request, pod: Pod, pdb: str) -> Response:
        self.world.record("eviction", server=self.name, id=request.id, namespace=request.namespace, pod=request.name, pdb=pdb, outcome="evicted")
        return Response(201, object=None, server=self.name)

    @staticmethod
    def _budget_busy(pdb_name: str) -> Status:
        """``createTooManyRequestsError``."""
        return too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 10, (f"The disruption budget {pdb_name} is still being processed by the server.",))

    async def _spend_disruption(self, request: Request, pod: Pod, pdb: PodDisruptionBudget) -> None:
        """``checkAndDecrement`` under ``retry.RetryOnConflict(EvictionsRetry)``: decrement
        ``disruptionsAllowed`` and record the pod in ``disruptedPods`` with an update of the
        PDB's status that carries the version read, so two evictions cannot both spend the
        last disruption."""
        name = pdb.metadata.name
        for attempt in range(self.config.eviction_attempts):
            if attempt:
                await self.process.sleep(self.config.eviction_retry_s)
                stored = await self._stored("poddisruptionbudgets", request.namespace, name)
                pdb = stored.object
            status = pdb.status
            if status.observed_generation < pdb.metadata.generation:
                self._refused_eviction(request, name, "status not observed")
                raise _refuse(self._budget_busy(name))
            if status.disruptions_allowed < 0:
                raise _refuse(forbidden(f'poddisruptionbudget.policy "{name}" is forbidden: pdb disruptions allowed is negative'))
            if len(status.disrupted_pods) > MAX_DISRUPTED_POD_SIZE:
                raise _refuse(forbidden(f'poddisruptionbudget.policy "{name}" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller'))
            if status.disruptions_allowed == 0:
                self._refused_eviction(request, name, "no disruption allowed")
                raise _refuse(too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 0, (f"The disruption budget {name} needs {status.desired_healthy} healthy pods and has {status.current_healthy} currently",)))
            status.disruptions_allowed -= 1
            if status.disruptions_allowed == 0:
                _set_disruption_allowed_condition(pdb, self.process.now())
            if request.dry_run:
                return
            status.disrupted_pods = {**status.disrupted_pods, pod.metadata.name: timestamp(self.process.now())}
            update = Request(verb="update", resource="poddisruptionbudgets", subresource="status", namespace=request.namespace, name=name, body=pdb, credentials=self.loopback, field_manager="kube-apiserver", id=f"{request.id}/pdb")
            response = await self.handle(update)
            if response.ok:
                return
            if response.code != 409:
                raise _refuse(response.status)
        raise _refuse(timeout(f'couldn\'t update PodDisruptionBudget "{name}" due to conflicts', 10))

    def _refused_eviction(self, request: Request, pdb: str, why: str) -> None:
        self.world.record("eviction", server=self.name, id=request.id, namespace=request.namespace, pod=request.name, pdb=pdb, outcome="refused", reason=why)

    # ------------------------------------------------------------------ housekeeping
    async def _bootstrap(self) -> None:
        """Create the system namespaces and bootstrap RBAC policy that are missing."""
        await self.cacher.wait_ready()
        for obj in bootstrap_objects():
            info = KINDS[obj.KIND]
            request = Request(verb="create", resource=info.resource, credentials=self.loopback, body=obj, field_manager="kube-apiserver", id=f"{self.name}/bootstrap/{obj.metadata.name}")
            while True:
                response = await self.handle(request)
                if response.ok or response.code == 409:
                    break
                await self.process.sleep(1.0)

    async def _compactor(self) -> None:
        """``etcd3/compact.go``: every interval, compact to the revision seen at the last one;
        the ``compact_rev_key`` version makes replicas take turns."""
        compact_time, revision = 0, 0
        while True:
            await self.process.sleep(self.config.compaction_interval_s)
            txn = TxnRequest(
                compare=(Compare(COMPACT_REV_KEY, "VERSION", "=", compact_time),),
                success=(PutRequest(COMPACT_REV_KEY, str(revision)),),
                failure=(RangeRequest(COMPACT_REV_KEY),),
            )
            result = await self.store.client.request(txn, idempotent=False)
            if not result.ok:
                continue
            response = result.reply.response
            current = response.header_revision
            if not response.succeeded:
                kvs = response.responses[0].kvs
                compact_time, revision = (kvs[0].version if kvs else 0), current
                continue
            compact_time += 1
            if revision:
                await self.store.client.request(CompactionRequest(revision), idempotent=False)
                self.world.record("etcd-compaction", server=self.name, revision=revision)
            revision = current


def api_server_main(config: ApiServerConfig, registry: dict[str, ApiServer] | None = None) -> Callable[[Process], Any]:
    async def main(process: Process) -> None:
        server = ApiServer(process, config)
        if registry is not None:
            registry[process.name] = server
        await server.serve()

    return main


def spawn_api_servers(world: World, config: ApiServerConfig, names: Iterable[str] = ("kube-apiserver-1",), *, zones: list[str] | None = None) -> dict[str, ApiServer]:
    """Start API server replicas; returns the live registry (name -> server)."""
    registry: dict[str, ApiServer] = {}
    for index, name in enumerate(names):
        zone = zones[index % len(zones)] if zones else None
        world.spawn(name, api_server_main(config, registry), role="kube-apiserver", zone=zone)
    return registry

"""The gallery of deliberately broken components: each a named variant that the checkers
must catch.

Contract. :data:`VARIANTS` maps a name to a :class:`Variant`: the component it breaks, how
(one line), the checker expected to catch it, and the catalogue experiment that exercises
it. :func:`applied` is a context manager that patches the named variants into this
process (and undoes them on exit); an experiment names them in its ``broken`` field (or
``chaoskube run|explore --broken NAME``), and the runner applies them around the run, so
``chaoskube explore`` runs a broken build in every worker and ``chaoskube replay`` runs it
again. Each variant's patch is one function or method replaced by a copy with the bug
(a variant reverting a whole upstream fix also replaces, uncounted, the few other methods
that fix touched: ``Variant.also``).
While applied, each call of a variant's ``target`` is counted (:func:`calls`): a
run that the checkers let pass is worth knowing apart from one that never reached the
broken code (a coverage gap, not an oracle gap); the runner records the counts in the
result's ``metrics["broken_calls"]``.

Guarantees: :func:`applied` restores every patched attribute on exit, in reverse order,
even when the body raises; unknown names raise :class:`KeyError` listing the known ones.
A replacement that is a function, a coroutine function or a static or class method is
counted by a wrapper with its name and signature (``functools.wraps``); one that is a
value (a constant, a flag) is not (:func:`calls` answers None for it).
Non-guarantees: patches are process-global (every World in the process sees them while
applied), so two runs with different variants must not share a process concurrently.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    #: further (target, builder) pairs patched with it, uncounted: a variant reverting a
    #: whole upstream fix replaces each method the fix touched (``target`` is counted)
    also: tuple[tuple[str, Callable[[], Any]], ...] = ()


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


#: Calls of each applied variant's replacement in this process since it was applied
#: (None: a value, not counted). A forked run inherits its boot's count, as an unforked
#: run counts its own boot.
_CALLS: dict[str, int | None] = {}


def calls(names: Sequence[str] | None = None) -> dict[str, int | None]:
    """How often each variant applied now (or each of ``names`` that is) ran its broken
    code, by name (sorted)."""
    return {name: count for name, count in sorted(_CALLS.items()) if names is None or name in names}


def _counted(name: str, replacement: Any) -> Any:
    """``replacement`` wrapped to count its calls in ``_CALLS[name]`` (module docstring)."""
    if isinstance(replacement, (staticmethod, classmethod)):
        return type(replacement)(_counted(name, replacement.__func__))
    if inspect.iscoroutinefunction(replacement):

        @functools.wraps(replacement)
        async def counted_coroutine(*args: Any, **kwargs: Any) -> Any:
            _CALLS[name] = (_CALLS.get(name) or 0) + 1
            return await replacement(*args, **kwargs)

        return counted_coroutine
    if isinstance(replacement, types.FunctionType):

        @functools.wraps(replacement)
        def counted(*args: Any, **kwargs: Any) -> Any:
            _CALLS[name] = (_CALLS.get(name) or 0) + 1
            return replacement(*args, **kwargs)

        return counted
    _CALLS[name] = None
    return replacement


def ran(counts: Mapping[str, int | None] | None) -> bool | None:
    """Whether the broken code of the variants ``counts`` counted (a run's
    ``metrics["broken_calls"]``) ran at all; None when nothing was counted."""
    known = [count for count in (counts or {}).values() if count is not None]
    return any(known) if known else None


def reach(counts: Mapping[str, int | None] | None) -> str:
    """What a run's ``metrics["broken_calls"]`` says, in words: whether the broken code ran
    (a run the checkers let pass had then an oracle gap) or never did (a coverage gap:
    the run did not reach it). Empty when nothing was counted."""
    if ran(counts) is None:
        return ""
    if not ran(counts):
        return "the broken code never ran (0 calls): this run did not reach it"
    known = {name: count for name, count in (counts or {}).items() if count is not None}
    if len(known) == 1:
        (count,) = known.values()
        return f"the broken code ran {count:,} time{'s' if count != 1 else ''}"
    return "the broken code ran: " + ", ".join(f"{name} {count:,} time{'s' if count != 1 else ''}" for name, count in known.items())


@contextlib.contextmanager
def applied(names: Sequence[str]) -> Iterator[None]:
    """Patch the named variants in for the duration of the block, each call of their
    broken code counted (:func:`calls`)."""
    check(names)
    undo: list[tuple[Any, str, Any]] = []
    outer = {name: _CALLS[name] for name in names if name in _CALLS}  # an enclosing application's counts
    try:
        for name in names:
            variant = VARIANTS[name]
            _CALLS[name] = 0
            for target, builder, counted in ((variant.target, variant.replacement, True), *((t, b, False) for t, b in variant.also)):
                owner, attribute = _resolve(target)
                undo.append((owner, attribute, owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute)))
                setattr(owner, attribute, _counted(name, builder()) if counted else builder())
        yield
    finally:
        for owner, attribute, original in reversed(undo):
            setattr(owner, attribute, original)
        for name in names:
            _CALLS.pop(name, None)
        _CALLS.update(outer)


def _grant_any_vote() -> Any:
    """Raft._candidate_log_ok of etcd/raft_broken.py's VoteWithoutLogCheck."""
    from chaoskube.etcd.raft_broken import VoteWithoutLogCheck

    return VoteWithoutLogCheck._candidate_log_ok


# =========================================================================== detection power (issue 13)
# Each variant below is modelled on a public bug report, cited in its builder's docstring;
# docs/checkers.md lists them with the checker that must catch them and the seeds to the
# first catch (`chaoskube explore EXPERIMENT --broken NAME --seeds 1..50 --fail-fast`).


def _monitor_busy_loop() -> Any:
    """NodeLifecycleController.run whose health monitor runs again at once instead of
    every ``--node-monitor-period``: a controller loop with no period, the hot loop of a
    rate limiter whose backoff overflowed to zero (kubernetes/kubernetes#31396, "Fixed
    integer overflow bug in rate limiter": "would previously cause hotlooping behavior
    after a few failures") and of kube-controller-manager spinning at 100 % CPU on an idle
    cluster (kubernetes/kubernetes#126704, #118706). Nothing in the loop waits for time
    to pass, so virtual time stands still: the livelock watchdog must end the run."""
    import trio

    from chaoskube.controllers import nodelifecycle as nlc

    async def run(self: Any) -> None:
        for informer in (self.leases, self.nodes, self.pods):
            await informer.wait_for_sync()
        async with trio.open_nursery() as nursery:
            if self.taint_manager is not None:
                nursery.start_soon(self.taint_manager.run)
            for _ in range(nlc.NODE_UPDATE_WORKER_SIZE):
                nursery.start_soon(nlc._work, self.node_update_queue, self._no_schedule_tainting_pass, False)
            for _ in range(nlc.POD_UPDATE_WORKER_SIZE):
                nursery.start_soon(nlc._work, self.pod_update_queue, self._process_pod, True)
            nursery.start_soon(self._tainting_loop)
            while True:
                await self.monitor_node_health()
                await self.process.sleep(0.0)  # the bug: no --node-monitor-period between passes

    return run



# -- kube-apiserver: storage ----------------------------------------------------------------------
def _cas_without_precondition() -> Any:
    """ApiServer._update that drops the client's resourceVersion precondition (an update's
    ``metadata.resourceVersion``, a patch's), so a stale compare-and-set is applied as a
    GuaranteedUpdate instead of failing with 409: the lost update optimistic concurrency
    exists to prevent (kubernetes/kubernetes#656, "Complete atomic update code for all
    objects and create"; #28749, a pod status patch path that mishandled conflicts)."""
    import msgspec

    from chaoskube.apiserver.server import ApiServer

    original = ApiServer._update

    async def update(self: Any, request: Any, user: Any, info: Any) -> Any:
        body = request.body
        if request.verb == "update" and body is not None and getattr(getattr(body, "metadata", None), "resource_version", ""):
            body = msgspec.structs.replace(body, metadata=msgspec.structs.replace(body.metadata, resource_version=""))
        elif request.verb == "patch" and isinstance(body, dict) and (body.get("metadata") or {}).get("resourceVersion"):
            body = {**body, "metadata": {key: value for key, value in body["metadata"].items() if key != "resourceVersion"}}
        from dataclasses import replace

        return await original(self, replace(request, body=body), user, info)

    return update


def _create_compare_always_true() -> Any:
    """MVCC ``_compare_kv`` for which a ``CREATE == 0`` / ``VERSION == 0`` compare holds
    whatever the key's revision: etcd-io/etcd#13035 ("Etcd Txn compare version==0 always
    succeeds"). The API server's create-if-absent transaction then overwrites an
    existing object instead of answering 409 AlreadyExists."""
    from chaoskube.etcd import mvcc

    original = mvcc._compare_kv

    def compare(compare: Any, kv: Any) -> bool:
        if compare.target in ("CREATE", "VERSION") and compare.result == "=" and compare.operand == 0:
            return True
        return original(compare, kv)

    return compare


def _quorum_get_from_cache() -> Any:
    """ApiServer._get serving a get without resourceVersion from the watch cache, as
    resourceVersion=0: the stale reads of kubernetes/kubernetes#59848 ("stale reads from
    the watch cache"; #60478 "Prevent read anomalies from the watch cache", #97294 "First
    kube-apiserver in the HA setup has out-of-date watch cache")."""
    from dataclasses import replace

    from chaoskube.apiserver.server import ApiServer

    original = ApiServer._get

    async def get(self: Any, request: Any, info: Any) -> Any:
        if request.resource_version == "":
            request = replace(request, resource_version="0")
        return await original(self, request, info)

    return get


def _quorum_list_from_cache() -> Any:
    """ApiServer._list serving a list without resourceVersion from the watch cache (the
    same class of bug as the get: kubernetes/kubernetes#59848; KEP-2340, "Consistent reads
    from cache", exists because a cache-served list may be stale)."""
    from dataclasses import replace

    from chaoskube.apiserver.server import ApiServer

    original = ApiServer._list

    async def list_(self: Any, request: Any, info: Any) -> Any:
        if request.resource_version == "" and request.resource_version_match != "Exact":
            request = replace(request, resource_version="0")
        return await original(self, request, info)

    return list_


# -- kube-apiserver: watch cache ------------------------------------------------------------------
def _watch_replays_start_revision() -> Any:
    """ResourceCache.events_after that includes the event *at* the resourceVersion the
    watch starts from: Kubernetes' watch is exclusive ("changes after N"), etcd's
    ``start_revision`` inclusive, and mixing the two sends the last event again on every
    re-watch (kubernetes/kubernetes#24004, "apiserver returns different starting event for
    resourceVersion with etcd watch cache enabled": "with the cache, watching from
    resourceVersion N, the first delivered event is resourceVersion N")."""
    from chaoskube.apiserver.watchcache import TooOldResourceVersion

    def events_after(self: Any, resource_version: int) -> list[Any]:
        oldest = self.oldest_resource_version
        if resource_version < oldest:
            raise TooOldResourceVersion(resource_version, oldest)
        newer: list[Any] = []
        for event in reversed(self._history):
            if event.resource_version < resource_version:  # the bug: < instead of <=
                break
            newer.append(event)
        newer.reverse()
        return newer

    return events_after


def _watch_filter_skips_entering() -> Any:
    """WatchFilter.convert that sends nothing when an update makes an object start to match
    the watcher's selectors (it should be ADDED), as ``cacheWatcher.convertToWatchEvent``
    did before it compared old and new objects: a filtered watch (a kubelet's pods by
    ``spec.nodeName``) misses the pod bound to it (kubernetes-client/python#2228 documents
    the transitions a filtered watch must carry)."""
    from chaoskube.api.protocol import WatchEvent
    from chaoskube.apiserver.watchcache import with_resource_version

    def convert(self: Any, event: Any, fields: Any = None) -> Any:
        current = event.type != "DELETED" and self.matches(event.object, fields)
        previous = event.prev_object is not None and self.matches(event.prev_object, fields)
        if current and previous:
            return WatchEvent("MODIFIED", event.object, str(event.resource_version))
        if current and event.prev_object is None:
            return WatchEvent("ADDED", event.object, str(event.resource_version))
        if previous and not current:
            return WatchEvent("DELETED", with_resource_version(event.prev_object, event.resource_version), str(event.resource_version))
        return None  # the bug: an object that starts to match is not sent

    return convert


# -- client-go ------------------------------------------------------------------------------------
def _informer_ignores_deletes() -> Any:
    """SharedInformer.apply that keeps an object after its DELETED watch event: the stale
    informer caches of kubernetes/kubernetes#60478's discussion and client-go's
    DeletedFinalStateUnknown handling exist for; handlers still hear of the deletion."""

    def apply(self: Any, event: Any) -> None:
        obj = event.object
        old = self.indexer.get(obj)
        if event.type == "DELETED":
            self._notify_delete(obj)  # the bug: the indexer keeps it
        elif old is None:
            self.indexer.add(obj)
            self._notify_add(obj)
        else:
            self.indexer.update(obj)
            self._notify_update(old, obj)

    return apply


def _renew_past_deadline() -> Any:
    """LeaderElector._renew that keeps retrying past the renew deadline instead of giving
    up leadership: the client keeps acting as leader while another acquires the lease
    (client-go documents that it "does not guarantee that only one client is acting as a
    leader"; kubernetes/kubernetes#67651 discusses leaders outliving their lease)."""

    async def renew(self: Any) -> None:
        config, process = self.config, self.process
        while True:
            while not await self.try_acquire_or_renew():  # the bug: no renew deadline
                await process.sleep(config.retry_period_s)
            await process.sleep(config.retry_period_s)

    return renew


# -- etcd -----------------------------------------------------------------------------------------
def _watch_start_exclusive() -> Any:
    """Store.events_since treating ``start_revision`` as exclusive: a watch resumed at
    "last revision + 1" misses that revision's events -- the lost events of resumed
    watches (python-etcd3#729; etcd-io/etcd#8411, "The rejoined node can not send out the
    events for watchers"; etcd-io/etcd#18089, "Watch dropping an event")."""
    from chaoskube.etcd.mvcc import Store

    original = Store.events_since

    def events_since(self: Any, key: str, range_end: Any, start_revision: int) -> Any:
        events = original(self, key, range_end, start_revision)
        return tuple(event for event in events if event.kv.mod_revision != start_revision)

    return events_since


def _linearizable_read_served_locally() -> Any:
    """EtcdMember._start_read answering a linearizable read from the member's own store,
    without ReadIndex: a partitioned or lagging member serves stale data (Jepsen, "Call me
    maybe: etcd and Consul", 2014: etcd 0.4 reads were not linearizable; etcd-io/etcd#741
    added quorum reads)."""
    from chaoskube.etcd.server import EtcdMember

    def start_read(self: Any, message: Any) -> None:
        self._reply_range(message, message.body.request)

    return start_read


# -- kube-controller-manager ----------------------------------------------------------------------
def _max_unavailable_rounded_up() -> Any:
    """deployment.max_unavailable rounding a percentage up instead of down, so 25 % of 3
    replicas allows one pod down where upstream allows none: the bug fixed by
    kubernetes/kubernetes#21957 (issues #21922 and #21872, "preserve availability when
    maxUnavailability is not 100%"; #37083 on the rounding)."""
    import math

    from chaoskube.controllers import deployment as module

    def max_unavailable(d: Any) -> int:
        if not module._is_rolling_update(d) or module.replicas_of(d) == 0:
            return 0
        rolling = d.spec.strategy.rolling_update
        value = rolling.max_unavailable if rolling is not None and rolling.max_unavailable is not None else "25%"
        replicas = module.replicas_of(d)
        if isinstance(value, str) and value.endswith("%"):
            return min(replicas, math.ceil(int(value[:-1]) * replicas / 100))  # the bug: ceil
        return min(replicas, int(value))

    return max_unavailable


def _keeps_unreachable_taints() -> Any:
    """NodeLifecycleController._no_schedule_tainting_pass that adds condition taints but
    never removes them: a node that comes back Ready keeps
    ``node.kubernetes.io/unreachable:NoSchedule`` (kubernetes/kubernetes#67733: "if the
    node gets recovered, the taint should be removed"; #89012, #113134)."""
    from chaoskube.controllers import nodelifecycle as nlc

    async def pass_(self: Any, name: str) -> None:
        node = self.nodes.indexer.get_by_key(name)
        if node is None:
            return
        to_add, _ = nlc.taint_set_diff(nlc.condition_taints(node), nlc._controller_no_schedule_taints(node))
        if to_add:
            await self._swap_taints(node, to_add, [])

    return pass_


def _never_marks_pods_not_ready() -> Any:
    """NodeLifecycleController._mark_pods_not_ready that does nothing: the pods of an
    unreachable node stay Ready, so their endpoints keep receiving traffic
    (kubernetes/kubernetes#67733: pods on a lost node kept serving; the node controller's
    MarkPodsNotReady exists for this)."""

    async def mark(self: Any, pods: Any, node_name: str) -> bool:
        return True

    return mark


def _endpoint_ready_while_terminating() -> Any:
    """endpointslice.pod_to_endpoint whose ``ready`` ignores ``terminating``: a deleted pod
    stays a ready endpoint until it is gone (kubernetes/kubernetes#116991 and the
    terminating-endpoints bugs it duplicates; KEP-1672 "ready = serving and not
    terminating")."""
    from chaoskube.api.objects import EndpointConditions
    from chaoskube.controllers import endpointslice as module

    original = module.pod_to_endpoint

    def pod_to_endpoint(pod: Any, node: Any, service: Any, address_type: str = "IPv4") -> Any:
        endpoint = original(pod, node, service, address_type)
        conditions = endpoint.conditions
        endpoint.conditions = EndpointConditions(ready=bool(conditions.serving), serving=conditions.serving, terminating=conditions.terminating)
        return endpoint

    return pod_to_endpoint


def _pdb_counts_terminating() -> Any:
    """disruption.count_healthy_pods counting pods being deleted as healthy, so the budget
    allows more evictions than it should (kubernetes/kubernetes#34546: "we approve an
    eviction, decrement the counter, but the pod remains in a state where it appears
    healthy ... we could easily evict every single pod")."""
    from chaoskube.controllers import disruption as module

    def count(pods: Any, disrupted: Any, now: float) -> int:
        return sum(1 for pod in pods if module.is_pod_ready(pod))  # the bug: deleting and disrupted pods count

    return count


def _gc_ignores_orphan() -> Any:
    """GarbageCollector._orphan_dependents that deletes the dependents instead of orphaning
    them: ``propagationPolicy: Orphan`` loses the ReplicaSet and its pods
    (kubernetes/kubernetes#26120, the GC's known issues: "DeleteOptions.OrphanDependents=true
    not orphan all dependents"; microsoft/pai#4117, "Dependent objects are unexpectedly
    deleted")."""
    from chaoskube.controllers.garbagecollector import GarbageCollector

    async def orphan(self: Any, resource: str, owner: Any) -> None:
        from chaoskube.api.protocol import ORPHAN_FINALIZER, DeleteOptions

        for dependent_resource, dependent in await self._dependents_of(owner):
            if dependent.metadata.deletion_timestamp is None:
                await self.client.delete(dependent_resource, dependent.metadata.namespace, dependent.metadata.name, options=DeleteOptions(propagation_policy="Background"))
                self.process.world.record(
                    "gc-delete", resource=dependent_resource, namespace=dependent.metadata.namespace, name=dependent.metadata.name,
                    uid=dependent.metadata.uid, owners=[reference.uid for reference in dependent.metadata.owner_references], controller=self.name, policy="Background",
                )
        await GarbageCollector._remove_finalizer(self, resource, owner, ORPHAN_FINALIZER)

    return orphan


def _gc_foreground_does_not_wait() -> Any:
    """GarbageCollector._delete_dependents that removes the foregroundDeletion finalizer as
    soon as it has asked for the dependents' deletion, without waiting for the blocking
    ones to go: the owner disappears first (kubernetes/kubernetes#87473 on foreground
    deletion telling when the GC is done; the "Use Cascading Deletion" task page)."""
    from chaoskube.controllers.garbagecollector import GarbageCollector

    original = GarbageCollector._delete_dependents

    async def delete_dependents(self: Any, resource: str, owner: Any) -> None:
        from chaoskube.api.protocol import FOREGROUND_FINALIZER
        from chaoskube.controllers.replicaset import ControllerError

        try:
            await original(self, resource, owner)
        except ControllerError:
            await GarbageCollector._remove_finalizer(self, resource, owner, FOREGROUND_FINALIZER)  # the bug: no wait

    return delete_dependents


# -- kubelet and kube-proxy -----------------------------------------------------------------------
def _kill_without_grace() -> Any:
    """kubelet.stop_plan that SIGKILLs at once whatever the grace period: a deleted pod's
    containers get no time to shut down (kubernetes/kubernetes#52154's probers aside, the
    class of bug where terminationGracePeriodSeconds is not honoured, e.g. #112442)."""
    from chaoskube.node.runtime import SIGKILL_EXIT_CODE

    return lambda behaviour, grace_s: (0.0, SIGKILL_EXIT_CODE)


def _proxy_uses_not_ready() -> Any:
    """proxy.usable_endpoints that keeps endpoints whose ``ready`` is false: kube-proxy goes
    on sending traffic to pods the control plane marked not ready (deckhouse#22686: "a pod
    which lost its readiness stays published as ready"; kubernetes/kubernetes#116991)."""
    return lambda endpoints, *, node, local_only: tuple(endpoint for endpoint in endpoints if not local_only or endpoint.node == node)


# -- admission webhooks and eviction --------------------------------------------------------------
def _webhook_call_without_timeout() -> Any:
    """WebhookDispatcher._call that waits for the API server's request timeout (30 s, the
    webhook client's old default) instead of the webhook's ``timeoutSeconds``:
    kubernetes/kubernetes#60914 ("Should support webhook timeout configuration": every
    call used a default 30 s) and #71508 (calls outliving the client's own timeout)."""
    from chaoskube.apiserver import webhooks as module
    from chaoskube.sim.outcomes import Ok

    async def call(self: Any, hook: Any, request: Any, *, mutating: bool) -> Any:
        endpoint = module.resolve_endpoint(hook.webhook)
        timeout = module.timeout_seconds(hook.webhook)
        uid = self._new_uid()
        body = {"path": endpoint.path, "review": module.admission_review(request, uid)}
        started = self.process.now()
        outcome = await self.process.call(endpoint.process, body, port=module.WEBHOOK_PORT, timeout_s=30.0)  # the bug
        latency = self.process.now() - started
        if not isinstance(outcome, Ok):
            return module._Reply(uid, latency, error=module._call_error_reason(outcome, endpoint, timeout))
        try:
            response = module.verify_admission_response(outcome.value, uid, mutating=mutating)
        except module.InvalidWebhookResponse as error:
            return module._Reply(uid, latency, error=f"received invalid webhook response: {error}")
        return module._Reply(uid, latency, response=response)

    return call


def _ignore_policy_fails_closed() -> Any:
    """WebhookDispatcher._verdict that refuses a request for the failed call of an
    Ignore-policy validating webhook, as for Fail: an Ignore webhook that times out blocks
    writes (kubernetes/kubernetes#71508, "Admission controller fails on timeout when
    failurePolicy set to Ignore")."""
    from dataclasses import replace

    from chaoskube.api.protocol import internal_error
    from chaoskube.apiserver import webhooks as module

    def verdict(self: Any, phase: Any, relevant: Any, replies: Any) -> Any:
        refusal = None
        for hook, reply in zip(relevant, replies):
            name = hook.webhook.name
            if reply.response is None:
                if refusal is None:  # the bug: whatever the failurePolicy
                    refusal = phase.refuse(internal_error(f'failed calling webhook "{name}": {reply.error}'), name)
                continue
            self._collect(phase, hook, reply.response)
            if not reply.response.allowed and refusal is None:
                refusal = phase.refuse(module.denial_status(name, reply.response.status), name)
        if refusal is not None:
            return replace(refusal, warnings=tuple(phase.warnings), annotations=tuple(phase.annotations))
        return module.WebhookResult(True, phase.request.object, None, (), "", tuple(phase.warnings), tuple(phase.annotations))

    return verdict


def _spend_without_precondition() -> Any:
    """ApiServer._spend_disruption whose PDB status update carries no resourceVersion, so
    two concurrent evictions both spend the last allowed disruption (the race the
    resourceVersion guard of eviction.go's checkAndDecrement prevents:
    kubernetes/kubernetes#94381, "To protect against race conditions, a ResourceVersion
    constraint is enforced"; #34546)."""
    import msgspec

    from chaoskube.api.protocol import Request, forbidden, timeout, timestamp, too_many_requests
    from chaoskube.apiserver import server as module

    async def spend(self: Any, request: Any, pod: Any, pdb: Any) -> None:
        name = pdb.metadata.name
        for attempt in range(self.config.eviction_attempts):
            if attempt:
                await self.process.sleep(self.config.eviction_retry_s)
                pdb = (await self._stored("poddisruptionbudgets", request.namespace, name)).object
            status = pdb.status
            if status.observed_generation < pdb.metadata.generation:
                self._refused_eviction(request, name, "status not observed")
                raise module._refuse(self._budget_busy(name))
            if status.disruptions_allowed < 0:
                raise module._refuse(forbidden(f'poddisruptionbudget.policy "{name}" is forbidden: pdb disruptions allowed is negative'))
            if status.disruptions_allowed == 0:
                self._refused_eviction(request, name, "no disruption allowed")
                raise module._refuse(too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.", 0, (f"The disruption budget {name} needs {status.desired_healthy} healthy pods and has {status.current_healthy} currently",)))
            status.disruptions_allowed -= 1
            if status.disruptions_allowed == 0:
                module._set_disruption_allowed_condition(pdb, self.process.now())
            if request.dry_run:
                return
            status.disrupted_pods = {**status.disrupted_pods, pod.metadata.name: timestamp(self.process.now())}
            body = msgspec.structs.replace(pdb, metadata=msgspec.structs.replace(pdb.metadata, resource_version=""))  # the bug: no guard
            update = Request(verb="update", resource="poddisruptionbudgets", subresource="status", namespace=request.namespace, name=name, body=body, credentials=self.loopback, id=f"{request.id}/pdb")
            response = await self.handle(update)
            if response.ok:
                return
            if response.code != 409:
                raise module._refuse(response.status)
        raise module._refuse(timeout(f'couldn\'t update PodDisruptionBudget "{name}" due to conflicts', 10))

    return spend


# -- more controllers, kube-proxy, the scheduler, etcd Raft and the kubelet -------------------------
def _endpoint_always_ready() -> Any:
    """endpointslice.pod_to_endpoint that publishes every pod as ready: the EndpointSlice
    never follows a pod's readiness (deckhouse/deckhouse#22686: "a pod which lost its
    readiness stays published as ready ... the endpoints comparison ignores
    conditions.ready")."""
    from chaoskube.api.objects import EndpointConditions
    from chaoskube.controllers import endpointslice as module

    original = module.pod_to_endpoint

    def pod_to_endpoint(pod: Any, node: Any, service: Any, address_type: str = "IPv4") -> Any:
        endpoint = original(pod, node, service, address_type)
        terminating = endpoint.conditions.terminating
        endpoint.conditions = EndpointConditions(ready=not terminating, serving=True, terminating=terminating)
        return endpoint

    return pod_to_endpoint



def _scale_down_ready_first() -> Any:
    """replicaset.get_pods_to_delete with the ranking reversed: a scale-down deletes the
    ready, long-running pods first and keeps the pending and not-ready ones
    (kubernetes/kubernetes#14396: "I hope that the controller-manager will delete the two
    failed pods, but it didn't"; the documented order, kubernetes/website#26993)."""
    import functools

    from chaoskube.controllers import replicaset as module

    def get_pods_to_delete(filtered: Any, related: Any, diff: int, now: Any) -> list[Any]:
        if diff == len(filtered):
            return list(filtered)
        on_node: dict[str, int] = {}
        for pod in related:
            if module.is_pod_active(pod):
                on_node[pod.spec.node_name] = on_node.get(pod.spec.node_name, 0) + 1
        ranked = [(pod, on_node.get(pod.spec.node_name, 0)) for pod in filtered]

        def compare(a: Any, b: Any) -> int:
            if module.pods_ranked_less(a[0], b[0], a[1], b[1], now):
                return 1  # the bug: the order is reversed
            if module.pods_ranked_less(b[0], a[0], b[1], a[1], now):
                return -1
            return 0

        ranked.sort(key=functools.cmp_to_key(compare))
        return [pod for pod, _ in ranked[:diff]]

    return get_pods_to_delete

def _surge_counts_new_rs_only() -> Any:
    """deployment.new_rs_new_replicas measuring the surge against the new ReplicaSet alone,
    not every ReplicaSet of the Deployment: a rollout scales the new ReplicaSet to full size
    while the old one still runs every pod, so the Deployment runs up to twice its replicas
    (kubernetes/kubernetes#28271, "Total replicas number will over max"; the
    "[minUnavailable/maxSurge violated]" rollout bugs #21810 and #19299)."""
    from chaoskube.controllers import deployment as module

    def new_rs_new_replicas(d: Any, all_rss: Any, new_rs: Any) -> int:
        if not module._is_rolling_update(d):
            return module.replicas_of(d)
        ceiling = module.replicas_of(d) + module.max_surge(d)
        current = module.replicas_of(new_rs)  # the bug: the old ReplicaSets are not counted
        if current >= ceiling:
            return module.replicas_of(new_rs)
        return module.replicas_of(new_rs) + min(ceiling - current, module.replicas_of(d) - module.replicas_of(new_rs))

    return new_rs_new_replicas


def _read_index_without_quorum_check() -> Any:
    """Raft._start_read answering a ReadIndex at once with the leader's commit index, without
    the heartbeat round that confirms it still leads: a deposed leader that has not heard of
    its successor serves stale reads (hashicorp/consul#54, "Document potential stale read
    situation", fixed by hashicorp/raft#4 "VerifyLeader"; the Raft paper section 8: "a leader
    must check whether it has been deposed before processing a read-only request")."""

    def start_read(self: Any, m: Any) -> None:
        self._answer_read(m, self._log.committed)

    return start_read


def _toleration_ignores_effect() -> Any:
    """plugins.toleration_tolerates_taint that matches keys and values but not effects: the
    default ``unreachable:NoExecute`` toleration every pod gets (DefaultTolerationSeconds)
    then tolerates ``unreachable:NoSchedule`` too, and replacements of evicted pods land on
    the dead node (kubernetes/kubernetes#63197, "Taints and Tolerations not respected";
    #41068 fixed the scheduler's taint filter ignoring one effect; "Taints and
    Tolerations": "the effect still needs to be matched")."""

    def tolerates(toleration: Any, taint: Any) -> bool:
        if toleration.key and toleration.key != taint.key:
            return False
        operator = toleration.operator or "Equal"
        if operator == "Equal":
            return toleration.value == taint.value
        return operator == "Exists"

    return tolerates


def _proxy_misses_condition_updates() -> Any:
    """proxy.compute_rules that reuses a Service's rules while its EndpointSlices hold the
    same addresses, whatever their conditions: an endpoint that turns not ready keeps
    receiving traffic until it leaves the slice (deckhouse/deckhouse#22686: "the endpoints
    comparison ignores conditions.ready"; kubernetes/kubernetes#28674, "Inconsistent State
    in Kube-Proxy after Missed Updates", rules that "point to non-existing containers")."""
    from chaoskube.node import proxy as module

    original = module.compute_rules

    def addresses(slices: Any) -> list[Any]:
        return [(s.metadata.name, sorted(tuple(e.addresses) for e in s.endpoints)) for s in slices]

    def compute_rules(services: Any, slices: Any, node: str, *, memo: Any = None) -> Any:
        if memo is None:
            return original(services, slices, node)
        previous = dict(memo)
        table = dict(original(services, slices, node, memo=memo))
        for key, (service, mine, _) in list(memo.items()):
            old = previous.get(key)
            if old is not None and old[0] is service and addresses(old[1]) == addresses(mine):
                memo[key] = old  # the bug: the same addresses, so the old rules stay
                for rule in old[2]:
                    table[(key, rule.port_name)] = rule
        return {key: table[key] for key in sorted(table)}

    return compute_rules


def _housekeeping_hot_loop() -> Any:
    """Kubelet._housekeeping that cleans up again at once instead of every
    ``housekeeping`` period (2 s): the kubelet spins at 100 % CPU in a loop that never waits
    (kubernetes/kubernetes#57626, "kubelet occupy high cpu and fall into the dead cycle";
    #27884, "kubelet 1.2.3 stuck at 100% CPU"). Virtual time stands still: the livelock
    watchdog must end the run."""

    async def housekeeping(self: Any) -> None:
        from chaoskube.node.kubelet import PodWorker

        await self.pods.wait_for_sync()
        while True:
            known = {pod.metadata.uid for pod in self.pods.indexer.list()}
            for record in self.runtime.sandboxes():
                if record.uid not in self.workers and record.uid not in known:
                    self.world.record("kubelet", event="orphan", node=self.spec.name, pod=f"{record.namespace}/{record.name}", uid=record.uid)
                    self._spawn(PodWorker(self, None, uid=record.uid, namespace=record.namespace, name=record.name))
            await self.process.sleep(0.0)  # the bug: no housekeeping period

    return housekeeping


def _orphan_finalizer_never_removed() -> Any:
    """GarbageCollector._orphan_dependents that removes the owner references from the
    dependents but never the ``orphan`` finalizer from the owner: a Deployment deleted with
    ``propagationPolicy: Orphan`` stays Terminating for ever (kubernetes/kubernetes#89503,
    "orphan finalizer is not properly processed"; #48261, "Fix removing finalizer for
    garbage collector")."""

    async def orphan_dependents(self: Any, resource: str, owner: Any) -> None:
        from chaoskube.client.client import ApiError
        from chaoskube.controllers.replicaset import owner_references_patch

        for dependent_resource, dependent in await self._dependents_of(owner):
            remaining = [reference for reference in dependent.metadata.owner_references if reference.uid != owner.metadata.uid]
            try:
                await self.client.patch(dependent_resource, dependent.metadata.namespace, dependent.metadata.name, owner_references_patch(dependent, remaining))
            except ApiError as error:
                if error.code == 404:
                    continue
                raise
            self.process.world.record(
                "gc-orphan", resource=dependent_resource, namespace=dependent.metadata.namespace, name=dependent.metadata.name,
                uid=dependent.metadata.uid, owner=owner.metadata.uid, controller=self.name,
            )
        # the bug: no removeFinalizer(orphan)

    return orphan_dependents


def _delete_ignores_default_grace() -> Any:
    """ApiServer._grace_period_s that honours only a grace period the delete gives
    explicitly: a delete without ``gracePeriodSeconds`` (an eviction, a controller's
    scale-down) removes a running pod at once instead of using its
    ``terminationGracePeriodSeconds`` (kubernetes/kubernetes#14266, "Pods are not
    gracefully terminated when their namespace is deleted": "the grace period for all the
    pods are 0s"; #120671 on the field being the delete's default)."""
    from chaoskube.api.objects import Pod

    def grace_period_s(current: Any, options: Any) -> int:
        if not isinstance(current, Pod):
            return 0
        if not current.spec.node_name or current.status.phase in ("Succeeded", "Failed"):
            return 0
        grace = options.grace_period_seconds
        if grace is None:
            return 0  # the bug: terminationGracePeriodSeconds is not the default
        return 1 if grace < 0 else grace

    return staticmethod(grace_period_s)


DETECTION_VARIANTS: tuple[Variant, ...] = (
    # -- etcd
    Variant(
        "etcd-linearizable-read-served-locally", "etcd server", "a linearizable read is answered from the member's own store, without ReadIndex (Jepsen 2014, etcd 0.4; etcd-io/etcd#741)",
        "linearizability", "etcd-leader-isolation", "chaoskube.etcd.server:EtcdMember._start_read", _linearizable_read_served_locally,
    ),
    Variant(
        "etcd-watch-start-exclusive", "etcd MVCC watch", "a watch resumed at a start revision misses that revision's events (python-etcd3#729; etcd-io/etcd#8411, #18089)",
        "api-watch", "etcd-failover-under-kubernetes", "chaoskube.etcd.mvcc:Store.events_since", _watch_start_exclusive,
    ),
    Variant(
        "etcd-create-compare-always-true", "etcd MVCC txn", "a CREATE/VERSION == 0 compare holds for an existing key (etcd-io/etcd#13035): create-if-absent overwrites",
        "api-linearizability", "node-failure", "chaoskube.etcd.mvcc:_compare_kv", _create_compare_always_true,
    ),
    Variant(
        "raft-read-index-without-quorum-check", "etcd Raft", "a leader answers ReadIndex without confirming by a heartbeat round that it still leads: a deposed leader serves stale reads (hashicorp/consul#54, hashicorp/raft#4)",
        "linearizability", "etcd-pause-leader-on-read", "chaoskube.etcd.raft:Raft._start_read", _read_index_without_quorum_check,
    ),
    # -- kube-apiserver
    Variant(
        "apiserver-cas-ignores-resourceversion", "kube-apiserver storage", "an update or patch with a stale resourceVersion is applied instead of answering 409 Conflict: a lost update (kubernetes#656, #28749)",
        "api-linearizability", "node-drain-with-pdb", "chaoskube.apiserver.server:ApiServer._update", _cas_without_precondition,
    ),
    Variant(
        "apiserver-delete-ignores-default-grace", "kube-apiserver storage", "a pod delete without gracePeriodSeconds removes the pod at once instead of using its terminationGracePeriodSeconds (kubernetes#14266, #120671)",
        "graceful-termination", "node-drain-with-pdb", "chaoskube.apiserver.server:ApiServer._grace_period_s", _delete_ignores_default_grace,
    ),
    Variant(
        "apiserver-quorum-get-from-cache", "kube-apiserver watch cache", "a get without resourceVersion is served from the watch cache: stale reads (kubernetes#59848, #60478, #97294)",
        "api-linearizability", "etcd-failover-under-kubernetes", "chaoskube.apiserver.server:ApiServer._get", _quorum_get_from_cache,
    ),
    Variant(
        "apiserver-quorum-list-from-cache", "kube-apiserver watch cache", "a list without resourceVersion is served from the watch cache (kubernetes#59848; KEP-2340)",
        "api-linearizability", "apiserver-crash", "chaoskube.apiserver.server:ApiServer._list", _quorum_list_from_cache,
    ),
    Variant(
        "watchcache-replays-start-revision", "kube-apiserver watch cache", "a watch from resourceVersion N sends the event at N again (kubernetes#24004: the watch cache's first event was N itself)",
        "api-watch", "watch-resume-under-churn", "chaoskube.apiserver.watchcache:ResourceCache.events_after", _watch_replays_start_revision,
    ),
    Variant(
        "watchcache-filter-skips-entering", "kube-apiserver watch cache", "a filtered watch sends nothing when an object starts to match its selectors (a kubelet misses the pod bound to it)",
        "api-watch", "scheduler-leader-failover", "chaoskube.apiserver.watchcache:WatchFilter.convert", _watch_filter_skips_entering,
    ),
    Variant(
        "eviction-spend-without-precondition", "kube-apiserver eviction", "the eviction's PDB status update carries no resourceVersion, so concurrent evictions both spend the last disruption (kubernetes#94381, #34546)",
        "pdb-eviction", "node-drain-with-pdb", "chaoskube.apiserver.server:ApiServer._spend_disruption", _spend_without_precondition,
    ),
    Variant(
        "webhook-call-without-timeout", "kube-apiserver admission", "a webhook call waits 30 s (the old default) instead of its timeoutSeconds (kubernetes#60914, #71508)",
        "admission-timing", "webhook-latency-fail-closed", "chaoskube.apiserver.webhooks:WebhookDispatcher._call", _webhook_call_without_timeout,
    ),
    Variant(
        "webhook-ignore-policy-fails-closed", "kube-apiserver admission", "a failed call of an Ignore-policy webhook refuses the request (kubernetes#71508)",
        "admission-timing", "webhook-latency-fail-open", "chaoskube.apiserver.webhooks:WebhookDispatcher._verdict", _ignore_policy_fails_closed,
    ),
    # -- client-go
    Variant(
        "informer-ignores-deletes", "client-go informer", "an informer keeps an object in its cache after its DELETED event (stale caches: kubernetes#60478)",
        "api-watch", "node-drain-with-pdb", "chaoskube.client.informer:SharedInformer.apply", _informer_ignores_deletes,
    ),
    Variant(
        "leader-election-renews-past-deadline", "client-go leader election", "a leader whose renewals fail keeps acting past its renew deadline (client-go does not fence; kubernetes#67651)",
        "leader-election", "apiserver-crash", "chaoskube.client.leaderelection:LeaderElector._renew", _renew_past_deadline,
    ),
    # -- kube-controller-manager
    Variant(
        "replicaset-scale-down-deletes-ready-first", "kube-controller-manager ReplicaSet", "a scale-down deletes ready pods before pending and not-ready ones (kubernetes#14396; website#26993)",
        "workload-invariants", "scale-down-during-node-outage", "chaoskube.controllers.replicaset:get_pods_to_delete", _scale_down_ready_first,
    ),
    Variant(
        "deployment-max-unavailable-rounded-up", "kube-controller-manager Deployment", "maxUnavailable percentages are rounded up, so a rollout takes one pod too many (kubernetes#21922, #21872, #37083)",
        "workload-invariants", "rolling-update-under-partition", "chaoskube.controllers.deployment:max_unavailable", _max_unavailable_rounded_up,
    ),
    Variant(
        "deployment-surge-counts-new-rs-only", "kube-controller-manager Deployment", "the rollout's surge is measured against the new ReplicaSet alone, so the Deployment runs old and new pods at full size (kubernetes#28271, #21810, #19299)",
        "workload-invariants", "rolling-update-under-partition", "chaoskube.controllers.deployment:new_rs_new_replicas", _surge_counts_new_rs_only,
    ),
    Variant(
        "node-controller-keeps-unreachable-taint", "kube-controller-manager node lifecycle", "a node that comes back Ready keeps node.kubernetes.io/unreachable:NoSchedule (kubernetes#67733, #89012)",
        "differential", "node-failure", "chaoskube.controllers.nodelifecycle:NodeLifecycleController._no_schedule_tainting_pass", _keeps_unreachable_taints,
    ),
    Variant(
        "node-controller-never-marks-pods-not-ready", "kube-controller-manager node lifecycle", "the pods of an unreachable node stay Ready, so their endpoints keep receiving traffic (kubernetes#67733)",
        "service-availability", "node-failure", "chaoskube.controllers.nodelifecycle:NodeLifecycleController._mark_pods_not_ready", _never_marks_pods_not_ready,
    ),
    Variant(
        "endpointslice-terminating-still-ready", "kube-controller-manager EndpointSlice", "a terminating pod's endpoint stays ready until the pod is gone (kubernetes#116991; KEP-1672)",
        "graceful-termination", "node-drain-with-pdb", "chaoskube.controllers.endpointslice:pod_to_endpoint", _endpoint_ready_while_terminating,
    ),
    Variant(
        "endpointslice-ignores-readiness", "kube-controller-manager EndpointSlice", "endpoints are published ready whatever the pod's readiness (deckhouse#22686)",
        "service-availability", "node-failure", "chaoskube.controllers.endpointslice:pod_to_endpoint", _endpoint_always_ready,
    ),
    Variant(
        "disruption-counts-terminating-pods", "kube-controller-manager disruption", "the PDB counts pods being deleted or just evicted as healthy, allowing too many evictions (kubernetes#34546)",
        "pdb-eviction", "node-drain-with-pdb", "chaoskube.controllers.disruption:count_healthy_pods", _pdb_counts_terminating,
    ),
    Variant(
        "gc-deletes-orphaned-dependents", "kube-controller-manager garbage collector", "propagationPolicy Orphan deletes the dependents instead of orphaning them (kubernetes#26120; microsoft/pai#4117)",
        "garbage-collection", "cascading-deletion-under-failover", "chaoskube.controllers.garbagecollector:GarbageCollector._orphan_dependents", _gc_ignores_orphan,
    ),
    Variant(
        "gc-foreground-does-not-wait", "kube-controller-manager garbage collector", "foreground deletion removes the owner's finalizer before its blocking dependents are gone (kubernetes#87473)",
        "garbage-collection", "cascading-deletion-under-failover", "chaoskube.controllers.garbagecollector:GarbageCollector._delete_dependents", _gc_foreground_does_not_wait,
    ),
    Variant(
        "gc-orphan-finalizer-never-removed", "kube-controller-manager garbage collector", "orphaning removes the owner references but never the orphan finalizer: the owner stays Terminating for ever (kubernetes#89503, #48261)",
        "garbage-collection", "cascading-deletion-under-failover", "chaoskube.controllers.garbagecollector:GarbageCollector._orphan_dependents", _orphan_finalizer_never_removed,
    ),
    Variant(
        "node-controller-monitor-busy-loop", "kube-controller-manager node lifecycle",
        "the node health monitor runs again at once instead of every --node-monitor-period: a hot loop in which virtual time stands still (kubernetes#31396, #126704)",
        "livelock", "controller-manager-leader-kill", "chaoskube.controllers.nodelifecycle:NodeLifecycleController.run", _monitor_busy_loop,
    ),
    # -- kube-scheduler
    Variant(
        "scheduler-toleration-ignores-effect", "kube-scheduler", "a toleration tolerates a taint of its key whatever the effect, so pods land on unreachable nodes (kubernetes#63197, #41068)",
        "scheduling", "node-failure", "chaoskube.scheduler.plugins:toleration_tolerates_taint", _toleration_ignores_effect,
    ),
    # -- kubelet and kube-proxy
    Variant(
        "kubelet-kills-without-grace", "kubelet", "a deleted pod's containers are SIGKILLed at once instead of after the grace period (terminationGracePeriodSeconds not honoured)",
        "graceful-termination", "node-drain-with-pdb", "chaoskube.node.kubelet:stop_plan", _kill_without_grace,
    ),
    Variant(
        "kubelet-housekeeping-hot-loop", "kubelet", "the kubelet's pod cleanup runs again at once instead of every 2 s, a loop that never waits (kubernetes#57626, #27884)",
        "livelock", "node-drain-with-pdb", "chaoskube.node.kubelet:Kubelet._housekeeping", _housekeeping_hot_loop,
    ),
    Variant(
        "kube-proxy-routes-not-ready-endpoints", "kube-proxy", "kube-proxy keeps sending traffic to endpoints that are not ready (deckhouse#22686; kubernetes#116991)",
        "service-availability", "node-failure", "chaoskube.node.proxy:usable_endpoints", _proxy_uses_not_ready,
    ),
    Variant(
        "kube-proxy-misses-condition-updates", "kube-proxy", "kube-proxy keeps a Service's rules while its EndpointSlices hold the same addresses, routing to endpoints that turned not ready (deckhouse#22686; kubernetes#28674)",
        "service-availability", "node-failure", "chaoskube.node.proxy:compute_rules", _proxy_misses_condition_updates,
    ),
)
VARIANTS.update((variant.name, variant) for variant in DETECTION_VARIANTS)


# =========================================================================== event-triggered faults (issue 16)
# Raft safety bugs in the vote, commit and read paths whose window is a moment: between a
# leader's append and its followers' acknowledgements, between two candidates' requests in
# one term, between a leader's deposition and its learning of it. The catalogue's
# event-triggered experiments (faults/triggers.py) aim their faults at those moments;
# docs/checkers.md lists the seeds to the first catch.


def _acks_write_on_append() -> Any:
    """EtcdMember._finish that answers a client's put as soon as the leader has persisted
    the entry in its own log, before a majority holds it and it is committed: an
    acknowledged write is lost when the leader is cut off or crashes right after its
    append. Raft section 5.3: the leader returns the result to the client only "when the
    entry has been safely replicated" (committed) and applied; etcd replies from its apply
    loop (server/etcdserver/server.go, ``applyAll`` -> ``w.Trigger``). The same class of
    bug: Jepsen's Redis-Raft analysis (2020, "acknowledged writes lost" before commit,
    https://jepsen.io/analyses/redis-raft-1b3fbf6)."""
    from chaoskube.etcd.requests import PutRequest
    from chaoskube.etcd.server import ClientReply, EtcdMember, Proposal, Role

    finish = EtcdMember._finish

    def early_finish(self: Any, ready: Any) -> None:
        if self.raft.role is Role.LEADER:
            for entry in ready.entries:
                data = entry.data
                if isinstance(data, Proposal) and isinstance(data.request, PutRequest):
                    message = self._proposals.pop(data.id, None)  # the bug: acknowledged on append
                    if message is not None:
                        self._reply(message, ClientReply(ok=True, response=None, member=self.name))
        finish(self, ready)

    return early_finish


def _vote_twice_in_term() -> Any:
    """Raft._handle_vote_request that forgets its own vote within a term: it grants any
    candidate of its term while it knows no leader, even after voting for another (or for
    itself). Raft section 5.2: "each server will vote for at most one candidate in a given
    term, on a first-come-first-served basis"; the same rule is etcd raft's ``canVote``
    (raft.go: ``r.Vote == m.From || (r.Vote == None && r.lead == None)``). Two candidates
    of one term -- the split vote that follows a leader's death -- then both win: two
    leaders in one term (Election Safety)."""
    from chaoskube.etcd.raft import NONE, Message, MsgType

    def handle_vote_request(self: Any, m: Any) -> None:
        can_vote = self._lead == NONE or self._vote == m.from_ or (m.type is MsgType.PRE_VOTE and m.term > self._term)  # the bug: no `self._vote == NONE`
        response_type = MsgType.VOTE_RESP if m.type is MsgType.VOTE else MsgType.PRE_VOTE_RESP
        if can_vote and self._candidate_log_ok(m):
            self._send(Message(type=response_type, to=m.from_, from_=self.id, term=m.term))
            if m.type is MsgType.VOTE:
                self._election_elapsed = 0
                self._vote = m.from_
        else:
            self._send(Message(type=response_type, to=m.from_, from_=self.id, term=self._term, reject=True))

    return handle_vote_request


RAFT_TRIGGER_VARIANTS: tuple[Variant, ...] = (
    Variant(
        "etcd-acks-write-on-append", "etcd server", "the leader acknowledges a put once the entry is in its own log, before a majority holds it (Raft section 5.3; Jepsen, Redis-Raft 2020)",
        "raft-safety", "etcd-leader-isolate-between-append-and-commit", "chaoskube.etcd.server:EtcdMember._finish", _acks_write_on_append,
    ),
    Variant(
        "raft-vote-twice-in-term", "etcd Raft", "a member grants a second candidate of the same term while it knows no leader: two leaders in one term after a split vote (Raft section 5.2; etcd raft.go canVote)",
        "raft-safety", "etcd-leader-kill-between-append-and-commit", "chaoskube.etcd.raft:Raft._handle_vote_request", _vote_twice_in_term,
    ),
)
DETECTION_VARIANTS = DETECTION_VARIANTS + RAFT_TRIGGER_VARIANTS
VARIANTS.update((variant.name, variant) for variant in RAFT_TRIGGER_VARIANTS)


# =========================================================================== the application kinds (issue 35)
# Bugs of the StatefulSet, Job and CronJob controllers (and of what they rely on), each
# modelled on a public report and caught by the kind's own oracle (docs/checkers.md):
# ``statefulset-invariants``, ``job-invariants``, ``cronjob-invariants``.


def _recreate_below_partition_at_update() -> Any:
    """statefulset.versioned_revision that gives every (re)created pod the update revision,
    whatever the partition: a pod below the partition that is deleted comes back updated,
    the canary's protection gone (kubernetes/kubernetes#119685, "pod having ordinal number
    less than partition number is getting updated automatically if pod restart", a 1.27
    regression; #121534, "Statefulset scales out wrong pods with partition"). Upstream
    ``newVersionedStatefulSetPod`` keeps ordinals below ``start + partition`` at the
    current revision; the docs: "even if they are deleted, they will be recreated at the
    previous version"."""

    def versioned_revision(sts: Any, ordinal: int, current_revision: str, update_revision: str) -> str:
        return update_revision  # the bug: the partition is not consulted

    return versioned_revision


def _taint_manager_force_deletes() -> Any:
    """TaintEvictionController._add_condition_and_delete that force-deletes (grace 0) the
    pods of a node tainted NoExecute, as the node controller did before Kubernetes 1.5
    (kubernetes/kubernetes#35145, fixed by PR #35235 "Node controller to not force delete
    pods"; PR #66126 proposed it again and was held for this reason): a pod of a node cut
    off from the control plane leaves the store while its containers still run there, and
    the StatefulSet controller, free to reuse the name, starts a second pod of the same
    identity elsewhere -- the split brain the at-most-one guarantee exists to prevent."""
    from chaoskube.api.objects import Pod
    from chaoskube.api.protocol import DeleteOptions
    from chaoskube.client.client import ApiError
    from chaoskube.controllers.nodelifecycle import with_pod_condition
    from chaoskube.api.objects import PodCondition

    async def add_condition_and_delete(self: Any, namespace: str, name: str) -> bool | None:
        try:
            pod = await self.client.get("pods", namespace, name)
            assert isinstance(pod, Pod)
            condition = PodCondition(type="DisruptionTarget", status="True", reason="DeletionByTaintManager", message="Taint manager: deleting due to NoExecute taint")
            updated = with_pod_condition(pod, condition, self.process.now())
            if updated is not None:
                await self.client.update_status(updated)
            await self.client.delete("pods", namespace, name, options=DeleteOptions(grace_period_seconds=0))  # the bug: a force deletion
        except ApiError as error:
            return None if error.code == 404 and not error.ambiguous else False
        return True

    return add_condition_and_delete


def _backoff_limit_off_by_one() -> Any:
    """job.backoff_limit_exceeded that fails the Job once ``backoffLimit`` pods have failed,
    one retry too early (kubernetes/kubernetes#92245, "Job's backoffLimit not correct": "job
    will eventually fail after it creates 5 failed pods, but it should be 6"; the OnFailure
    twin, #95433). The docs: ``backoffLimit`` is "the number of retries before considering a
    Job as failed"."""

    def backoff_limit_exceeded(failed: int, backoff_limit: int) -> bool:
        return failed >= backoff_limit  # the bug: >= instead of >

    return backoff_limit_exceeded


def _job_without_expectations() -> Any:
    """JobController._may_manage that always manages: the controller creates pods from an
    informer cache that has not yet seen the pods it just created, so a burst of syncs --
    a new leader's start, a Job's own status writes -- creates more than ``parallelism``
    (kubernetes/kubernetes#27997, "Job somehow made 84k pods"; #41675, "started too many
    pods then immediately killed one"; PR #137210, 2026, "This prevents spurious creation of
    duplicate pods for jobs when the controller's cache is stale"). Upstream manages pods
    only with ``satisfiedExpectations``."""

    def may_manage(self: Any, key: str, now: float) -> bool:
        return True

    return may_manage


def _cronjob_trusts_status_active() -> Any:
    """cronjob.reconcile_active that trusts ``status.active`` alone: an unfinished Job the
    status does not list -- because the controller that created it died before writing the
    status, or its status write conflicted -- is not counted as running, so a Forbid
    CronJob starts another beside it (kubernetes/kubernetes#107827, "CronJob not honoring
    concurrencyPolicy: Forbid", the v2 controller of 1.20-1.21; #58748). Upstream's
    ``syncCronJob`` adds every unfinished child Job missing from ``status.active``
    ("Saw a job that the controller did not create or forgot")."""
    from chaoskube.api.objects import ObjectReference
    from chaoskube.api.protocol import parse_timestamp
    from chaoskube.controllers import cronjob as module

    def reconcile_active(status: Any, children: Any) -> list[Any]:
        active: list[ObjectReference] = []
        for reference in status.active:
            job = next((j for j in children if j.metadata.uid == reference.uid), None)
            if job is None or module._finished(job) is not None:
                if job is not None and module._finished(job) == "Complete" and job.status.completion_time:
                    if status.last_successful_time is None or parse_timestamp(job.status.completion_time) > parse_timestamp(status.last_successful_time):
                        status.last_successful_time = job.status.completion_time
                continue
            active.append(reference)
        return active  # the bug: the Jobs the status does not list are not added

    return reconcile_active


def _daemon_pods_without_health_tolerations() -> Any:
    """The DaemonSet controller's daemon_tolerations without the NoExecute tolerations of
    node.kubernetes.io/not-ready and unreachable, as before Kubernetes 1.6 made them
    (kubernetes/kubernetes#41738, "DaemonSets should have infinite toleration for
    Unreachable/NotReady NoExecute Taints", PR #41896): the DefaultTolerationSeconds
    admission plugin gives the pods 300 s, and the taint manager evicts the daemon pods
    of a node down longer than that (the docs: DaemonSet pods "are never evicted due to
    these problems")."""
    from chaoskube.api.objects import Toleration

    def daemon_tolerations(tolerations: Any, host_network: bool) -> list[Any]:
        wanted = [("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                  ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")]  # the bug: no NoExecute
        if host_network:
            wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
        result = [t for t in tolerations if (t.key, t.effect) not in set(wanted)]
        result.extend(Toleration(key=key, operator="Exists", effect=effect) for key, effect in wanted)
        return result

    return daemon_tolerations


def _quota_admits_on_stale_status() -> Any:
    """ApiServer._charge_quota that, when its guarded update of the quota's ``status.used``
    conflicts (another API server charged the quota first), admits the object anyway instead
    of re-reading the quota and checking again: admission judged against a stale status, so
    concurrent creates through different API servers spend the same headroom and the
    namespace ends above ``hard`` (kubernetes/kubernetes#73698, "Exceeded quota": admission
    reading quotas from a lister and an LRU cache; openshift/origin#1990, the 409 on the
    quota increment upstream answered by re-checking up to N times). Upstream's
    ``plugin/pkg/admission/resourcequota/controller.go`` re-reads and re-checks on conflict."""
    from chaoskube.api.objects import parse_quantity
    from chaoskube.api.quota import check_quota, show_quantity
    from chaoskube.apiserver import server as module
    from chaoskube.apiserver.storage import copy_object

    async def charge(self: Any, request: Any, info: Any, obj: Any) -> None:
        namespace = obj.metadata.namespace
        if not namespace:
            return
        quotas = [quota for quota in self.cacher.objects("resourcequotas") if quota.metadata.namespace == namespace]
        if not quotas:
            return
        refusal, charges = check_quota(quotas, obj, info.resource)
        if refusal is not None:
            from chaoskube.apiserver.admission import forbidden_by_admission

            admission = self._admission_request("CREATE", request, module.UserInfo(name=""), info, obj, None, name=obj.metadata.name)
            self.world.record("quota-refused", server=self.name, namespace=namespace, resource=info.resource, name=obj.metadata.name, reason=refusal)
            raise module._refuse(module.forbidden(forbidden_by_admission(admission, refusal)))
        for quota, increment in charges:
            updated = copy_object(quota)
            used = dict(updated.status.used)
            for key, value in increment.items():
                used[key] = show_quantity(parse_quantity(used.get(key, "0")) + value, key)
            updated.status.used = used
            update = module.Request(verb="update", resource="resourcequotas", subresource="status", namespace=namespace, name=quota.metadata.name, body=updated,
                                    credentials=self.loopback, field_manager="kube-apiserver", id=f"{request.id}/quota")
            response = await self.handle(update)
            if response.code == 409:
                return  # the bug: admitted on the stale status, the charge lost
            if not response.ok:
                raise module._refuse(response.status)

    return charge


def _namespace_finalized_while_terminating() -> Any:
    """NamespaceController.sync that counts an object already marked for deletion as gone,
    so a namespace is finalized while its pods are still terminating gracefully and they
    outlive it in the store (kubernetes/kubernetes#39576, "Namespaces are removed from the
    api server prematurely: Pods can still be terminating after the respective namespace
    they are running in is removed"; #36891). Upstream's deleter counts remaining content,
    terminating or not, and finalizes only once nothing is left."""
    from chaoskube.api.objects import deep_copy
    from chaoskube.client.client import ApiError
    from chaoskube.controllers import namespace as module

    async def sync(self: Any, name: str) -> None:
        namespace = self.namespaces.indexer.get_by_key(name)
        if namespace is None or namespace.metadata.deletion_timestamp is None or module.FINALIZER not in namespace.spec.finalizers:
            return
        for resource in self._resources():
            try:
                listed = (await self.client.list(resource, name)).items
            except ApiError as error:
                if error.code == 404:
                    continue
                raise
            for obj in listed:
                if obj.metadata.deletion_timestamp is None:
                    try:
                        await self.client.delete(resource, name, obj.metadata.name)
                    except ApiError as error:
                        if error.code != 404:
                            raise
                # the bug: deleted or terminating, the object no longer counts as remaining
        finalized = deep_copy(namespace)
        finalized.spec.finalizers = [finalizer for finalizer in namespace.spec.finalizers if finalizer != module.FINALIZER]
        try:
            await self.client._put(finalized, "finalize", False)
        except ApiError as error:
            if error.code != 404:
                raise
        self.process.world.record("namespace-deletion", namespace=name, event="finalized", controller=self.name)

    return sync


def _provisions_in_default_zone() -> Any:
    """PersistentVolumeController._provisioning_zone that ignores the node the scheduler
    selected for a WaitForFirstConsumer claim and makes the disk in the provisioner's
    default zone -- the first zone of the nodes it knows -- as a CSI driver that drops the
    claim's accessibility requirements does: kubernetes-sigs/aws-ebs-csi-driver#760 ("EBS
    volume is getting dynamically provisioned in 'us-east-2a' with WaitForFirstConsumer
    policy, even though EC2 instance is in 'us-east-2b' zone, causing mount to fail"),
    pravega/zookeeper-operator#311 (a PV's zone not the selected node's: "volume node
    affinity conflict"). The scheduler has already bound the claim's pod's node by the time
    the disk exists (PreBind waits only for the claim to be Bound), so the pod runs in one
    zone with its disk in another; upstream, external-provisioner passes the selected node's
    topology as the disk's ``accessibility_requirements``."""
    from chaoskube.controllers.persistentvolume import ZONE_LABEL

    def provisioning_zone(self: Any, node: Any) -> str | None:
        zones = sorted({known.metadata.labels[ZONE_LABEL] for known in self.nodes.indexer.list() if ZONE_LABEL in known.metadata.labels})
        return zones[0] if zones else None  # the bug: the selected node's zone is not consulted

    return provisioning_zone


def _prebound_by_name_only() -> Any:
    """persistentvolume.best_match that takes a volume whose ``claimRef`` names the claim's
    namespace and name as pre-bound to it, whatever the uid: a claim deleted and created
    again under the same name -- a StatefulSet member's claim, recreated when the set scales
    up -- is bound to the old claim's Released volume and its data, as before Kubernetes
    1.2 (kubernetes/kubernetes#20196, "New claim with same name as old keeps bound volume",
    fixed by PR #20197, "Verify claim UID when releasing and binding volumes"; PR #24682:
    "Volumes with Retain policy should stay Released forever and never get bound again")."""
    from chaoskube.controllers import persistentvolume as module

    real = module.best_match

    def best_match(claim: Any, volumes: Any, *, delayed: bool = False, node: Any = None) -> Any:
        for volume in volumes:
            reference = volume.spec.claim_ref
            if reference is not None and reference.name == claim.metadata.name and reference.namespace == claim.metadata.namespace:
                return volume  # the bug: the claimRef's uid is not compared
        return real(claim, volumes, delayed=delayed, node=node)

    return best_match


def _bind_without_precondition() -> Any:
    """PersistentVolumeController._bind that writes the volume's ``claimRef`` from its cached
    copy without the resourceVersion precondition (an unconditional update, last write
    wins): two claims created together, matched by two workers against the same Available
    volume before either write reached the cache, are both bound to it --
    openshift/origin#4829 ("PVC binding is racy: It is possible to get two
    PersistentVolumeClaims bound to the same PersistentVolume ... Create a PV, and then two
    PVCs at the same time"), kubernetes/kubernetes PR #16432 ("Fixed race condition in pv
    binder"). Upstream ``bindVolumeToClaim`` updates the cached object, and the API server
    refuses a stale resourceVersion with 409 Conflict, so the loser retries."""
    from chaoskube.api.objects import ObjectReference, deep_copy
    from chaoskube.controllers.persistentvolume import BOUND_BY_CONTROLLER

    async def bind(self: Any, claim: Any, volume: Any) -> None:
        if volume.spec.claim_ref is None or volume.spec.claim_ref.uid != claim.metadata.uid or volume.status.phase != "Bound":
            bound = deep_copy(volume)
            bound.spec.claim_ref = ObjectReference(kind="PersistentVolumeClaim", namespace=claim.metadata.namespace, name=claim.metadata.name, uid=claim.metadata.uid, api_version="v1", resource_version=claim.metadata.resource_version)
            bound.metadata.annotations = {**volume.metadata.annotations, BOUND_BY_CONTROLLER: "yes"}
            bound.metadata.resource_version = ""  # the bug: no precondition, the last write wins
            volume = await self.client.update(bound)
            if volume.status.phase != "Bound":
                status = deep_copy(volume)
                status.status.phase = "Bound"
                volume = await self.client.update_status(status)
        await self._mark_claim_bound(claim, volume)

    return bind


def _custom_patch_without_defaults() -> Any:
    """ApiServer._custom_schema that prunes and validates a custom object but skips the
    schema's defaulting when the write is a PATCH, as the patch handler once applied no
    server-side defaults to the patched object (kubernetes/kubernetes#42764, "Patch does not
    apply server-side defaults to resulting object", root cause #42488, fixed by PR #42489):
    a merge patch that resets a field with ``null`` ("back to the default") stores the
    object without it, where the CRD docs promise "defaulting happens on the object ... in
    the request to the API server" (apiextensions-apiserver
    ``pkg/apiserver/schema/defaulting``)."""
    from chaoskube.api.manifests import to_dict
    from chaoskube.api.objects import CustomObject
    from chaoskube.apiserver import crd as crds
    from chaoskube.apiserver import server as module

    def _custom_schema(self: Any, info: Any, obj: Any, request: Any = None) -> Any:
        if not isinstance(obj, CustomObject):
            return obj, [], ()
        crd = self._crd(info.resource)
        schema = crds.schema_of(crd) if crd is not None else None
        document = to_dict(obj)
        pruned = crds.prune(document, schema, root=True)
        crds.prune_nulls(document, schema)
        if request is None or request.verb != "patch":  # the bug: a patched object is not defaulted
            crds.default(document, schema)
        causes = crds.validate_object(document, schema)
        field_validation = request.field_validation if request is not None else ""
        if pruned and field_validation == "Strict":
            raise module._refuse(module.bad_request(module.unknown_field_message(pruned)))
        if pruned:
            self.world.record("apiserver-warning", server=self.name, resource=info.resource, name=obj.metadata.name, warning=f"unknown field(s) pruned: {', '.join(pruned[:10])}")
        warnings = tuple(f'unknown field "{path}"' for path in pruned) if field_validation == "Warn" else ()
        if document.get("apiVersion") != info.api_version or document.get("kind") != info.kind:
            causes.append(f"apiVersion: Invalid value: {document.get('apiVersion')!r}: must be {info.api_version}")
        content = {key: value for key, value in document.items() if key not in ("apiVersion", "kind", "metadata")}
        return info.type(metadata=obj.metadata, content=content), causes, warnings

    return _custom_schema


def _serves_every_listed_version() -> Any:
    """crd.served_version that asks only whether the CRD lists the version, not whether it
    is served, as the first CRD-versioning handler did: ``if
    !apiextensions.HasCRDVersion(crd, requestInfo.APIVersion)`` -- "this is wrong: we have
    to check whether it is served" (review of kubernetes/kubernetes PR #63830,
    ``customresource_handler.go``; PR #64253 added the integration test that sets
    ``served = false`` and expects 404). A version kept in the CRD with ``served: false`` --
    the versioning docs' way to retire one before removing it -- is then still served."""
    from chaoskube.apiserver import crd as crds

    def served_version(crd: Any, requested: str = "") -> Any:
        if requested:
            return next((version for version in crd.spec.versions if version.name == requested), None)  # the bug: listed, served or not
        storage = crds.serving_version(crd)
        if storage is not None and storage.served:
            return storage
        return next((version for version in crd.spec.versions if version.served), None)

    return served_version


def _pvc_protection_asks_only_its_cache() -> Any:
    """PVCProtectionController._used that asks only the pod informer's cache, never the API
    server: kubernetes/kubernetes#75980 ("pvc_protection_controller queries local cache
    instead of apiserver(s)": a pod created and started on a claim just before the claim's
    deletion, not yet in the controller's cache, does not hold it) and #76703 ("Race
    condition in PVC protection controller can lead to deletion of PVC used by Pod"), fixed
    by PR #80492, which lists the namespace's pods live when the cache finds none
    (``pkg/controller/volume/pvcprotection/pvc_protection_controller.go``, ``askAPIServer``)."""
    from chaoskube.controllers.volumeprotection import POD_PVC_INDEX, pod_uses_claim

    async def _used(self: Any, claim: Any) -> bool:
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        return any(pod_uses_claim(pod, claim) for pod in self.pods.indexer.by_index(POD_PVC_INDEX, key))  # the bug: no live list

    return _used


APP_VARIANTS: tuple[Variant, ...] = (
    Variant(
        "statefulset-recreates-below-partition-at-update-revision", "kube-controller-manager StatefulSet",
        "a pod below a rolling update's partition that is deleted is recreated at the update revision (kubernetes#119685, #121534)",
        "statefulset-invariants", "statefulset-partitioned-rollout-under-node-failure", "chaoskube.controllers.statefulset:versioned_revision", _recreate_below_partition_at_update,
    ),
    Variant(
        "taint-manager-force-deletes-unreachable-pods", "kube-controller-manager node lifecycle",
        "the taint manager force-deletes (grace 0) the pods of an unreachable node, so a StatefulSet starts a second pod of the same identity while the first still runs (kubernetes#35145, PR #35235, PR #66126)",
        "statefulset-invariants", "statefulset-identity-under-partition", "chaoskube.controllers.nodelifecycle:TaintEvictionController._add_condition_and_delete", _taint_manager_force_deletes,
    ),
    Variant(
        "job-backoff-limit-off-by-one", "kube-controller-manager Job",
        "a Job is marked Failed (BackoffLimitExceeded) once backoffLimit pods failed, one retry too early (kubernetes#92245, #95433)",
        "job-invariants", "jobs-across-controller-manager-failover", "chaoskube.controllers.job:backoff_limit_exceeded", _backoff_limit_off_by_one,
    ),
    Variant(
        "job-manages-without-expectations", "kube-controller-manager Job",
        "the Job controller creates pods from a cache that has not seen its own creates: more active pods than parallelism after a failover (kubernetes#27997, #41675, PR #137210)",
        "job-invariants", "jobs-across-controller-manager-failover", "chaoskube.controllers.job:JobController._may_manage", _job_without_expectations,
    ),
    Variant(
        "cronjob-trusts-status-active", "kube-controller-manager CronJob",
        "a Job the CronJob's status does not list (its creator died before writing it) is not counted as running, so Forbid starts a second one (kubernetes#107827, #58748)",
        "cronjob-invariants", "cronjobs-across-controller-manager-failover", "chaoskube.controllers.cronjob:reconcile_active", _cronjob_trusts_status_active,
    ),
    Variant(
        "daemonset-pods-without-health-tolerations", "kube-controller-manager DaemonSet",
        "daemon pods are created without the not-ready / unreachable NoExecute tolerations, so a node down for 5 minutes loses them to the taint manager (kubernetes#41738, PR #41896)",
        "daemonset-invariants", "daemonsets-under-long-node-outage", "chaoskube.controllers.daemonset:daemon_tolerations", _daemon_pods_without_health_tolerations,
    ),
    Variant(
        "namespace-finalized-while-content-terminates", "kube-controller-manager namespace",
        "the namespace controller counts terminating objects as gone and finalizes the namespace while its pods still terminate (kubernetes#39576, #36891)",
        "namespace-invariants", "security-namespace-termination", "chaoskube.controllers.namespace:NamespaceController.sync", _namespace_finalized_while_terminating,
    ),
    Variant(
        "provisioner-ignores-selected-node-zone", "kube-controller-manager persistent volume provisioner",
        "a WaitForFirstConsumer claim's disk is made in the provisioner's default zone, not the selected node's, so its pod runs in another zone than its volume (aws-ebs-csi-driver#760, pravega/zookeeper-operator#311)",
        "volume-invariants", "volumes-under-zone-outage", "chaoskube.controllers.persistentvolume:PersistentVolumeController._provisioning_zone", _provisions_in_default_zone,
    ),
    Variant(
        "pv-binder-rebinds-released-volume-by-name", "kube-controller-manager persistent volume binder",
        "a volume whose claimRef names a claim's namespace and name counts as pre-bound to it whatever the uid, so a claim recreated under an old name gets the old claim's Released volume (kubernetes#20196, PR #20197)",
        "volume-invariants", "volumes-under-zone-outage", "chaoskube.controllers.persistentvolume:best_match", _prebound_by_name_only,
    ),
    Variant(
        "quota-admits-on-stale-status", "kube-apiserver ResourceQuota admission",
        "a conflicting update of the quota's status.used is taken as admitted instead of re-checked, so concurrent creates through two API servers spend the same headroom (kubernetes#73698, openshift/origin#1990)",
        "quota-invariants", "quota-under-concurrent-creates", "chaoskube.apiserver.server:ApiServer._charge_quota", _quota_admits_on_stale_status,
    ),
    Variant(
        "pv-binder-binds-without-precondition", "kube-controller-manager persistent volume binder",
        "the binder writes a volume's claimRef without its resourceVersion, so two claims matched at once to one Available volume are both bound to it (openshift/origin#4829, kubernetes PR #16432)",
        "volume-invariants", "volumes-under-zone-outage", "chaoskube.controllers.persistentvolume:PersistentVolumeController._bind", _bind_without_precondition,
    ),
    Variant(
        "custom-resource-patch-skips-defaulting", "kube-apiserver apiextensions",
        "a PATCH of a custom resource is pruned and validated but not defaulted, so a merge patch resetting a field with null stores the object without its schema default (kubernetes#42764, #42488, PR #42489)",
        "crd-invariants", "crd-operator-under-apiserver-failover", "chaoskube.apiserver.server:ApiServer._custom_schema", _custom_patch_without_defaults,
    ),
    Variant(
        "custom-resource-serves-unserved-version", "kube-apiserver apiextensions",
        "the custom resource handler serves every version its CRD lists, served: false or not, so a retired version still answers (review of kubernetes PR #63830, test of PR #64253)",
        "crd-invariants", "crd-operator-under-apiserver-failover", "chaoskube.apiserver.crd:served_version", _serves_every_listed_version,
    ),
    Variant(
        "pvc-protection-asks-only-its-cache", "kube-controller-manager pvc-protection",
        "the pvc-protection controller looks for pods using a claim being deleted only in its informer's cache, so a claim whose pod the cache has not seen yet is removed under it (kubernetes#75980, #76703, PR #80492)",
        "volume-invariants", "claims-deleted-as-their-members-return", "chaoskube.controllers.volumeprotection:PVCProtectionController._used", _pvc_protection_asks_only_its_cache,
    ),
)
VARIANTS.update((variant.name, variant) for variant in APP_VARIANTS)


# =========================================================================== the control plane's remaining gaps (issue 35, deliverable 4)
# Areas the issue lists where a realistic bug went unnoticed; each variant is modelled on
# the Raft paper or a public bug, cited in its builder's docstring; docs/experiments.md
# ("Issue 35: the control plane's gaps") gives the experiment and the first seed caught,
# or, for one not caught, whether its code ran.


def _commit_previous_term_by_count() -> Any:
    """Raft._maybe_commit of etcd/raft_broken.py's CommitPreviousTermByCount: the leader
    commits the highest index a quorum holds whatever its term. Raft section 5.4.2 and
    Figure 8 (Ongaro & Ousterhout, 2014): an entry of an earlier term held by a majority
    can still be overwritten by a later leader, so only entries of the leader's own term
    are committed by counting replicas (etcd raft ``maybeCommit`` checks the term)."""
    from chaoskube.etcd.raft_broken import CommitPreviousTermByCount

    return CommitPreviousTermByCount._maybe_commit


def _binding_error_keeps_assumed_pod() -> Any:
    """Scheduler._handle_binding_error that requeues the pod without forgetting it in the
    scheduler cache: it stays assumed on the node whose binding failed, so that node's
    room stays taken and the pod itself is skipped as assumed (``skipPodSchedule``) each
    time it comes back: Pending for ever. kubernetes/kubernetes#28883 ("Scheduler cache
    corruption in case of failed bindings", fixed by adding ``ForgetPod``), #26043, and
    #49314 / PR #49661 (ForgetPod failed after a failed bind: "Pod that failed to bind,
    stuck in Pending state forever")."""
    from chaoskube.scheduler.scheduler import CLEAR_NOMINATED_NODE

    async def handle_binding_error(self: Any, state: Any, pinfo: Any, assumed: Any, host: str, status: Any) -> None:
        self._counters["bind_errors"] += 1
        self.framework.run_reserve_plugins_unreserve(state, assumed, host)
        # the bug: no self.cache.forget_pod(assumed)
        pinfo.unschedulable_plugins = frozenset()
        await self._handle_failure(pinfo, status, CLEAR_NOMINATED_NODE, self.queue.scheduling_cycle)

    return handle_binding_error


def _relist_keeps_deleted() -> Any:
    """SharedInformer.replace that adds and updates what a relist returns but never deletes
    what the cache holds and the list does not: an object deleted while the watch was down
    stays in the informer's cache for ever, and no handler hears of its deletion.
    kubernetes/kubernetes#115620 ("client-go/cache: fix missing delete event on replace":
    objects "leaked" on informers without resync); the tombstones of PR #8822."""

    def replace(self: Any, items: tuple[Any, ...], resource_version: str) -> None:
        indexer = self.indexer
        listed = {indexer.key_func(obj): obj for obj in items}
        for key in sorted(listed):
            new, old = listed[key], indexer.get_by_key(key)
            indexer.update(new)
            if old is None:
                self._notify_add(new)
            elif old.metadata.resource_version != new.metadata.resource_version:
                self._notify_update(old, new)
        # the bug: no DeletedFinalStateUnknown for the keys the list no longer has
        self._synced.set()

    return replace


def _absent_owners_by_uid() -> Any:
    """GarbageCollector._is_dangling whose absent-owner cache is keyed by the owner's uid
    alone, as before kubernetes/kubernetes#92743 (``isDangling``: ``absentOwnerCache.Has(
    reference.UID)``, ``Add(reference.UID)``): once a dependent in another namespace (an
    invalid cross-namespace reference, e.g. an object copied with its owner references)
    found the owner absent there, the owner's valid dependents in its own namespace are
    taken for orphans and deleted (kubernetes/kubernetes#65200: "the garbage collector also
    deleted some PVCs in the original namespace"). The variant reverts the whole of #92743
    (``also``): the graph's virtual owner nodes of :func:`_graph_add_before_92743`,
    :func:`_graph_observe_before_92743`, :func:`_owner_known_before_92743` and
    :func:`_sync_virtual_owner_before_92743` -- the uid-keyed cache alone loses nothing,
    as the fixed graph verifies the valid dependents before the copy fills it."""
    from chaoskube.client.client import ApiError

    async def is_dangling(self: Any, reference: Any, namespace: str) -> bool:
        if self.absent_owners.has(reference.uid):  # the bug: the namespace looked in is forgotten
            return True
        resource = self._owner_resource(reference)
        if resource is None:
            return False
        owner_namespace = namespace if self._owner_namespaced(reference) else ""
        try:
            owner = await self.client.get(resource, owner_namespace, reference.name)
        except ApiError as error:
            if error.code != 404:
                raise
            self.absent_owners.add(reference.uid)
            return True
        if owner.metadata.uid != reference.uid:
            self.absent_owners.add(reference.uid)
            return True
        return False

    return is_dangling


#: The work-queue item of a virtual owner node to verify (upstream enqueues the node itself
#: into attemptToDelete): ("virtual", apiVersion, kind, name, uid, namespace).
_VIRTUAL = "virtual"


def _graph_add_before_92743() -> Any:
    """GarbageCollector._graph_add as ``addDependentToOwners`` was before
    kubernetes/kubernetes#92743 (graph_builder.go, v1.19): an owner not in the graph gets a
    virtual node with the reference's coordinates and the dependent's namespace, and that
    node is enqueued to be verified against the API server; a later dependent is added to
    the node whatever namespace or coordinates its reference has (no
    hasPotentiallyInvalidOwnerReference, nothing enqueued)."""
    from chaoskube.controllers.garbagecollector import GraphDependent, Identity, VirtualOwner

    def graph_add(self: Any, resource: str, obj: Any) -> None:
        meta = obj.metadata
        dependent = GraphDependent(resource, meta.namespace, meta.name, meta.uid, tuple(meta.owner_references))
        for reference in meta.owner_references:
            if self._observed(reference.uid):
                continue
            node = self.virtual_owners.get(reference.uid)
            if node is None:
                identity = Identity(reference.api_version, reference.kind, reference.name, reference.uid, meta.namespace)
                self.virtual_owners[reference.uid] = VirtualOwner(identity, dependent)
                self.queue.add((_VIRTUAL, *identity))  # gb.attemptToDelete.Add(ownerNode)
                continue
            node.dependents.append(dependent)  # the bug: whatever its namespace

    return graph_add


def _graph_observe_before_92743() -> Any:
    """GarbageCollector._graph_observe as ``processGraphChanges`` was before
    kubernetes/kubernetes#92743: an owner delivered while a virtual node holds its uid only
    marks that node observed (``existingNode.markObserved()``); the node keeps the virtual
    identity -- the namespace of the dependent that first referenced it -- and nothing is
    enqueued (no ``partitionDependents``, no identity replacement)."""

    def graph_observe(self: Any, obj: Any) -> None:
        return None

    return graph_observe


def _owner_known_before_92743() -> Any:
    """GarbageCollector._owner_known as before kubernetes/kubernetes#92743: a dependent whose
    owner's uid the graph holds is not checked, whatever namespace or name the owner has
    there (``addDependentToOwners`` found the node by uid and added the dependent to it)."""
    from chaoskube.controllers.garbagecollector import UID_INDEX

    def owner_known(self: Any, reference: Any, namespace: str) -> bool:
        resource = self._owner_resource(reference)
        if resource is None or resource not in self.owners:
            return True
        return bool(self.owners[resource].indexer.by_index(UID_INDEX, reference.uid))

    return owner_known


def _sync_virtual_owner_before_92743() -> Any:
    """GarbageCollector.sync that also verifies a virtual owner node as ``attemptToDeleteItem``
    did before kubernetes/kubernetes#92743: a GET of the node's identity (the namespace of the
    dependent that created it, even once the owner was observed elsewhere); 404 or another
    uid -> ``enqueueVirtualDeleteEvent``, whose ``processGraphChanges`` removes the node,
    adds its uid to ``absentOwnerCache`` and enqueues every dependent of that uid. Other
    items go to the real ``sync``."""
    from chaoskube.api.objects import OwnerReference
    from chaoskube.client.client import ApiError
    from chaoskube.controllers.garbagecollector import OWNER_UID_INDEX, GarbageCollector, Identity

    real = GarbageCollector.__dict__["sync"]

    async def sync(self: Any, item: tuple[str, ...]) -> None:
        if item[0] != _VIRTUAL:
            await real(self, item)
            return
        identity = Identity(*item[1:])
        reference = OwnerReference(api_version=identity.api_version, kind=identity.kind, name=identity.name, uid=identity.uid)
        resource = self._owner_resource(reference)
        if resource is None:
            return
        try:
            owner = await self.client.get(resource, identity.namespace if self._owner_namespaced(reference) else "", identity.name)
        except ApiError as error:
            if error.code != 404:
                raise
            owner = None
        if owner is not None and owner.metadata.uid == identity.uid:
            return
        # the virtual delete event: the uid remembered absent, then every dependent enqueued
        self.absent_owners.add(identity.uid)
        for dependent_resource in sorted(self.dependents):
            for dependent in self.dependents[dependent_resource].indexer.by_index(OWNER_UID_INDEX, identity.uid):
                self._enqueue(dependent_resource, dependent)

    return sync


def _consistent_list_from_stale_cache() -> Any:
    """ApiServer._list that answers a consistent list (no ``resourceVersion``) from the
    watch cache as it stands, as a ``resourceVersion=0`` list, without first making sure
    the cache has caught up with etcd's current revision (KEP-2340 "Consistent reads from
    cache": wait for it, else read etcd). A cache behind etcd then answers stale data to
    the one read that promises the latest: the stale reads of kubernetes/kubernetes#59848
    (a pod deleted and listed again), and the consistent read served as a "not older than"
    read of kubernetes/kubernetes#132132 (fixed by PR #132244)."""
    from chaoskube.api.protocol import Response
    from chaoskube.api.selectors import matches as selected
    from chaoskube.apiserver.storage import copy_object, resource_prefix

    async def list_(self: Any, request: Any, info: Any) -> Any:
        labels, fields = self._selectors(request)
        version = request.resource_version
        if request.resource_version_match == "Exact":
            revision = self._revision(version)
            objects, read_at = await self.store.list(resource_prefix(info.resource, request.namespace), revision=revision)
            items = tuple(obj for obj in objects if selected(obj, labels, fields))
            return Response(200, items=items, resource_version=str(revision or read_at), server=self.name)
        if version not in ("", "0"):
            await self._fresh(version)
        # the bug: "" is served like "0", from a cache that may be behind etcd
        cache = self.cacher.cache(info.resource)
        items = tuple(copy_object(obj) for obj in cache.list(request.namespace, labels, fields))
        return Response(200, items=items, resource_version=str(cache.resource_version or self.cacher.resource_version), server=self.name)

    return list_


CONTROL_PLANE_VARIANTS: tuple[Variant, ...] = (
    Variant(
        "raft-commits-previous-term-by-count", "etcd Raft",
        "a leader commits an entry of an earlier term once a majority holds it, so a later leader can overwrite a committed, applied entry (Raft section 5.4.2, Figure 8)",
        "raft-safety", "etcd-large-values-figure-8", "chaoskube.etcd.raft:Raft._maybe_commit", _commit_previous_term_by_count,
    ),
    Variant(
        "scheduler-keeps-pod-assumed-after-failed-bind", "kube-scheduler cache",
        "a pod whose binding failed is requeued but stays assumed in the scheduler cache, so it is skipped for ever and stays Pending (kubernetes#28883, #26043, #49314)",
        "scheduling", "scheduler-bind-during-etcd-leader-kill", "chaoskube.scheduler.scheduler:Scheduler._handle_binding_error", _binding_error_keeps_assumed_pod,
    ),
    Variant(
        "informer-relist-keeps-deleted", "client-go informer",
        "a relist adds and updates what the list returns but never deletes what it no longer has: an object deleted while the watch was down stays cached (kubernetes#115620)",
        "api-watch", "apiserver-cut-off-from-etcd", "chaoskube.client.informer:SharedInformer.replace", _relist_keeps_deleted,
    ),
    Variant(
        "gc-absent-owner-cache-by-uid", "kube-controller-manager garbage collector",
        "an owner found absent from one namespace (an invalid cross-namespace reference) is remembered absent by uid alone, so its valid dependents in its own namespace are deleted (kubernetes#65200, fixed by #92743)",
        "garbage-collection", "cascading-deletion-under-failover", "chaoskube.controllers.garbagecollector:GarbageCollector._is_dangling", _absent_owners_by_uid,
        also=(
            ("chaoskube.controllers.garbagecollector:GarbageCollector._graph_add", _graph_add_before_92743),
            ("chaoskube.controllers.garbagecollector:GarbageCollector._graph_observe", _graph_observe_before_92743),
            ("chaoskube.controllers.garbagecollector:GarbageCollector._owner_known", _owner_known_before_92743),
            ("chaoskube.controllers.garbagecollector:GarbageCollector.sync", _sync_virtual_owner_before_92743),
        ),
    ),
    Variant(
        "apiserver-consistent-list-from-stale-cache", "kube-apiserver watch cache",
        "a consistent list (no resourceVersion) is answered from the watch cache as it stands, not after it caught up with etcd: stale reads where the latest is promised (kubernetes#59848, #132132)",
        "api-linearizability", "apiserver-cut-off-from-etcd", "chaoskube.apiserver.server:ApiServer._list", _consistent_list_from_stale_cache,
    ),
)
VARIANTS.update((variant.name, variant) for variant in CONTROL_PLANE_VARIANTS)


# =========================================================================== the HTTPS front (issue 35)
def _continue_at_latest() -> Any:
    """The front's ``_continue_at`` that reads every continued page at the latest revision
    instead of the token's: the pages of one list mix revisions (the inconsistency
    kubernetes#91503 / KEP-1904 and the consistent-chunking design, kubernetes/community#896,
    rule out; before kubernetes#67284 only a 410 could end such a list)."""
    from dataclasses import replace

    def continue_at(request: Any, revision: int) -> Any:
        return replace(request, resource_version="", resource_version_match="")

    return continue_at


def _delete_from_primitive_list_replaces() -> Any:
    """Strategic merge patch's ``mergeMap`` before kubernetes#110472 (kubernetes#110407):
    ``$deleteFromPrimitiveList/<field>`` on a list without ``patchStrategy: merge`` (a
    container's ``args``) replaces the list with the values it meant to delete."""
    from chaoskube.api import strategic

    real = strategic._merge_map

    def merge_map(original: Any, patch: Any, info: Any) -> Any:
        result = real(original, patch, info)
        for key, value in patch.items() if isinstance(patch, dict) else ():
            if key.startswith(strategic.DELETE_FROM_PRIMITIVE) and isinstance(value, list):
                field = key[len(strategic.DELETE_FROM_PRIMITIVE):]
                if strategic._strategy(strategic.patch_meta(info, field)) != "merge" and isinstance(result, dict) and field in result:
                    result[field] = list(value)  # the bug: the values to delete become the list
        return result

    return merge_map


FRONT_VARIANTS: tuple[Variant, ...] = (
    Variant(
        "front-continue-reads-latest", "kube-apiserver HTTPS front (pagination)",
        "a paginated list's continue pages are read at the latest revision, not the first page's: one list mixes revisions (kubernetes#91503, kubernetes/community#896)",
        "api-pagination", "outside-clients-under-apiserver-restarts", "chaoskube.apiserver.http.front:_continue_at", _continue_at_latest,
    ),
    Variant(
        "strategic-delete-from-primitive-list-replaces", "kube-apiserver strategic merge patch",
        "$deleteFromPrimitiveList on a list without a merge strategy (a container's args) leaves the values to delete instead of removing them (kubernetes#110407, fixed by #110472)",
        "api-patch", "outside-clients-under-apiserver-restarts", "chaoskube.api.strategic:_merge_map", _delete_from_primitive_list_replaces,
    ),
)
VARIANTS.update((variant.name, variant) for variant in FRONT_VARIANTS)

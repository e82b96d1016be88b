"""The gallery's broken components for issue 19: security boundaries, and the control
plane's timing and decision contracts. Each is modelled on a public CVE or bug report
(cited in its description) and caught by the checker it names on the experiment it names.

:mod:`chaoskube.gallery` turns :data:`CONTRACT_VARIANTS` into its ``Variant`` records (this
module stays free of it, so the two never import each other). Each replacement builder is
called when the variant is applied, while the attribute it replaces is still the real one,
so a builder may wrap the real function and change one decision.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["CONTRACT_VARIANTS"]


# =========================================================================== security
def _noderestriction_any_pod() -> Any:
    """NodeRestriction that no longer checks which node a pod is bound to for status
    updates, evictions and deletions (what a kubelet could do before the plugin limited it:
    kubernetes/kubernetes#45929; pods/status in 1.17: PaloAltoNetworks/rbac-police#2)."""
    from chaoskube.apiserver import admission

    real = admission.NodeRestrictionPlugin._pod

    def _pod(self: Any, node: str, request: Any) -> Any:
        if request.subresource in ("status", "eviction") or (request.subresource == "" and request.operation == "DELETE"):
            return admission.AdmissionResult(allowed=True, object=request.object)
        return real(self, node, request)

    return _pod


def _no_forbidden_labels() -> Any:
    return lambda old, new: []


def _owner_references_unchecked() -> Any:
    return lambda new, old: True


def _status_relabels_unchecked() -> Any:
    return lambda new, old: False


def _rolebindings_grant_cluster_scope() -> Any:
    """RBAC that, for a cluster-scoped request, also consults every namespace's
    RoleBindings (CVE-2019-11247: cluster-scoped custom resources reached through a
    namespaced path were authorized by the namespace's roles and role bindings)."""
    from chaoskube.apiserver import auth

    real = auth._rbac

    def _rbac(attributes: Any, roles: Any, cluster_roles: Any, role_bindings: Any, cluster_role_bindings: Any) -> tuple[bool, str]:
        roles, cluster_roles, role_bindings, cluster_role_bindings = list(roles), list(cluster_roles), list(role_bindings), list(cluster_role_bindings)
        allowed, reason = real(attributes, roles, cluster_roles, role_bindings, cluster_role_bindings)
        if allowed or attributes.namespace or not attributes.resource_request:
            return allowed, reason
        for namespace in sorted({binding.metadata.namespace or "default" for binding in role_bindings}):
            scoped = dataclasses.replace(attributes, namespace=namespace)
            granted, why = real(scoped, roles, cluster_roles, role_bindings, cluster_role_bindings)
            if granted:
                return True, why
        return allowed, reason

    return _rbac


def _resource_names_ignored() -> Any:
    return lambda rule, name: True


def _authorizer_decision_cache() -> Any:
    """An API server that remembers every allowed decision for ever, so a removed binding
    keeps granting (stale authorization caches: rancher/rancher#31982, argoproj/argo-cd#7801;
    upstream's webhook authorizer caches allowances only for its TTL)."""
    from chaoskube.apiserver.server import ApiServer

    real = ApiServer._authorize

    def _authorize(self: Any, request: Any, user: Any, info: Any) -> None:
        decisions = self.__dict__.setdefault("_gallery_allowed", set())
        key = (user.name, tuple(user.groups), request.verb, request.resource, request.subresource, request.namespace, request.name)
        if key in decisions:
            return
        real(self, request, user, info)  # raises when denied
        decisions.add(key)

    return _authorize


def _token_uid_ignored() -> Any:
    """Token authentication that drops the bound token's uid before looking the account
    up, so a token outlives its account in any namesake (the comparison bug
    kubernetes/kubernetes#62993 fixed in ``pkg/serviceaccount/claims.go``)."""
    from chaoskube.api.identity import parse_service_account_token, service_account_credentials
    from chaoskube.apiserver.server import ApiServer

    real = ApiServer.authenticate

    def authenticate(self: Any, credentials: Any) -> Any:
        parsed = parse_service_account_token(credentials.token) if credentials.token else None
        if parsed is not None and parsed[2]:
            credentials = service_account_credentials(parsed[0], parsed[1])
        return real(self, credentials)

    return authenticate


def _token_cache_forever() -> Any:
    """Token authentication that caches every identity it authenticated for ever, so a
    deleted account's tokens keep working (stale token caches: kubernetes/kubernetes#132802;
    upstream's webhook token authenticator caches for ``--authentication-token-webhook-cache-ttl``)."""
    from chaoskube.apiserver.server import ApiServer

    real = ApiServer.authenticate

    def authenticate(self: Any, credentials: Any) -> Any:
        cache = self.__dict__.setdefault("_gallery_tokens", {})
        if credentials.token and credentials.token in cache:
            return cache[credentials.token]
        user = real(self, credentials)
        if user is not None and credentials.token:
            cache[credentials.token] = user
        return user

    return authenticate


def _terminating_namespaces_open() -> Any:
    """NamespaceLifecycle that lets creates into a Terminating namespace (openshift/origin
    #11058: the live-lookup expiry check was backwards; kubernetes/kubernetes#37431: creates
    racing a namespace's deletion leak objects into it)."""
    from chaoskube.apiserver import admission

    real = admission.NamespaceLifecyclePlugin.admit

    def admit(self: Any, request: Any) -> Any:
        result = real(self, request)
        if not result.allowed and "being terminated" in result.reason:
            return admission.AdmissionResult(allowed=True, object=request.object)
        return result

    return admit


# =========================================================================== timers
def _never_renewed() -> Any:
    return lambda saved, lease_renew_time: False


def _never_marks_unknown() -> Any:
    """``tryUpdateNodeHealth`` that never posts the Unknown conditions: a powered-off node
    stays Ready (canonical/microk8s#5386: a stalled lease watch left a dead node Ready)."""
    from chaoskube.controllers import nodelifecycle

    real = nodelifecycle.node_health_step

    def node_health_step(*args: Any, **kwargs: Any) -> Any:
        step = real(*args, **kwargs)
        if step.status_update is None:
            return step
        return nodelifecycle.HealthStep(step.health, step.grace_period_s, step.observed_ready, step.current_ready)

    return node_health_step


def _evict_at_once() -> Any:
    return lambda tolerations: 0.0


def _evict_twice_as_late() -> Any:
    from chaoskube.controllers import nodelifecycle

    real = nodelifecycle.min_toleration_time_s

    def min_toleration_time_s(tolerations: Any) -> float:
        seconds = real(tolerations)
        return seconds * 2 if seconds > 0 else seconds

    return min_toleration_time_s


def _kill_after_two_seconds() -> Any:
    """The kubelet's stop plan with a 2 s grace period whatever the pod asks
    (kubernetes/kubernetes#60631: the grace period was replaced by 2 s when stopping containers)."""
    from chaoskube.node import runtime

    real = runtime.stop_plan
    return lambda behaviour, grace_s: real(behaviour, min(grace_s, 2.0))


def _local_lease_duration() -> Any:
    """client-go's expiry judged with the candidate's own, shorter, lease duration instead of
    the holder's ``leaseDurationSeconds`` (kubernetes/kubernetes#47671, fixed by #114872)."""

    def lease_valid(self: Any, now: float, config: Any) -> bool:
        if self.record is None or self.time is None:
            return False
        return self.time + 5.0 > now

    return lease_valid


# =========================================================================== etcd leases
def _promote_forgets_ttl() -> Any:
    """``Lessor.promote`` that sets every expiry to ``now + extend`` only, as if the new
    leader's lessor had no remaining TTL: leases expire right after a failover (before
    etcd-io/etcd#4778 refreshed TTLs on promotion)."""

    def promote(self: Any, now: float, extend_s: float = 0.0) -> None:
        self._primary = True
        for state in self._leases.values():
            state.expiry = now + extend_s

    return promote


def _renew_without_leadership_check() -> Any:
    """The leader renews a keep-alive at once, without confirming it still leads (the
    behaviour etcd-io/etcd#15247 fixed with ``ensureLeadership``)."""
    def _start_renewal(self: Any, message: Any, keep_alive: Any) -> None:
        self._reply(message, self._keep_alive(keep_alive))

    return _start_renewal


def _renew_anywhere() -> Any:
    """``Lessor.renew`` that renews on a follower too, so followers acknowledge
    keep-alives the leader never sees (clients then believe a lease the leader expires is
    alive: etcd-io/etcd#7275, keep-alives without a leader)."""
    from chaoskube.etcd.requests import LeaseNotFoundError

    def renew(self: Any, lease_id: int, now: float) -> int:
        state = self._leases.get(lease_id)
        if state is None:
            raise LeaseNotFoundError()
        if state.expiry is not None and state.expiry <= now:
            raise LeaseNotFoundError()
        state.expiry = now + state.ttl if self._primary else None
        return state.ttl

    return renew


def _never_expires() -> Any:
    return lambda self, now: ()


# =========================================================================== scheduling
def _pdb_violations_uncounted() -> Any:
    """``filterPodsWithPDBViolation`` that finds no violation, so preemption weighs PDBs not
    at all (kubernetes/kubernetes#129137: violations miscounted; #128307)."""
    return lambda pods, pdbs: ([], list(pods))


def _every_lower_pod_a_victim() -> Any:
    """``SelectVictimsOnNode`` without the reprieve: every lower-priority pod of the node is
    a victim, not only those that must go (kubernetes-sigs/scheduler-plugins#838 brought
    its copy back in line with the default scheduler's)."""
    from chaoskube.scheduler import preemption

    real = preemption.DefaultPreemption.select_victims_on_node

    def select_victims_on_node(self: Any, state: Any, pod: Any, node_info: Any, pdbs: Any) -> Any:
        victims, violations, status = real(self, state, pod, node_info.clone(), pdbs)
        if not status.is_success() or not victims:
            return victims, violations, status
        everyone = [info.pod for info in node_info.pods if preemption.pod_priority(info.pod) < preemption.pod_priority(pod)]
        everyone.sort(key=lambda other: preemption.more_important_pod(other, self.framework.handle.now()))
        return everyone, violations, status

    return select_victims_on_node


def _deletions_do_not_requeue() -> Any:
    """The scheduler forgets to move unschedulable pods when an assigned pod is deleted, so
    a pod waits for the periodic flush although its node has room (kubernetes/kubernetes
    #102339, pods not assigned to nodes that could fit them; #87145)."""

    def _delete_assigned(self: Any, pod: Any) -> None:
        self.cache.remove_pod(pod)
        self._wake()

    return _delete_assigned


def _v(name: str, component: str, description: str, caught_by: str, experiment: str, target: str, replacement: Any) -> dict[str, Any]:
    return {"name": name, "component": component, "description": description, "caught_by": caught_by,
            "experiment": experiment, "target": target, "replacement": replacement}


CONTRACT_VARIANTS: list[dict[str, Any]] = [
    _v("noderestriction-any-pod", "kube-apiserver NodeRestriction",
       "a kubelet may update the status of, evict and delete pods bound to other nodes (before NodeRestriction limited it: kubernetes/kubernetes#45929; pods/status from 1.17: PaloAltoNetworks/rbac-police#2)",
       "authorization", "security-node-compromise", "chaoskube.apiserver.admission:NodeRestrictionPlugin._pod", _noderestriction_any_pod),
    _v("noderestriction-self-labels", "kube-apiserver NodeRestriction",
       "a kubelet may set node-restriction.kubernetes.io/ and other reserved labels on its Node, steering workloads to itself (kubernetes/kubernetes#68267, KEP 'bounding self-labeling kubelets')",
       "authorization", "security-node-compromise", "chaoskube.apiserver.admission:_forbidden_labels", _no_forbidden_labels),
    _v("noderestriction-owner-references", "kube-apiserver NodeRestriction",
       "a kubelet may put owner references on its Node, so the garbage collector deletes it and it re-registers with other taints and labels (CVE-2025-5187, kubernetes/kubernetes#133471)",
       "authorization", "security-node-compromise", "chaoskube.apiserver.admission:_same_owner_references", _owner_references_unchecked),
    _v("noderestriction-status-relabels", "kube-apiserver NodeRestriction",
       "a kubelet may change its pods' labels through pods/status, moving them into other Services and selectors (KEP-1314, kubernetes/kubernetes#84260)",
       "authorization", "security-node-compromise", "chaoskube.apiserver.admission:_relabels_through_status", _status_relabels_unchecked),
    _v("rbac-rolebindings-grant-cluster-scope", "kube-apiserver RBAC",
       "a cluster-scoped request is authorized by any namespace's RoleBindings, so a ClusterRole bound in one namespace reaches nodes and namespaces (CVE-2019-11247, kubernetes/kubernetes#80983)",
       "authorization", "security-apiserver-restarts", "chaoskube.apiserver.auth:_rbac", _rolebindings_grant_cluster_scope),
    _v("rbac-ignores-resource-names", "kube-apiserver RBAC",
       "a rule's resourceNames no longer restrict it, so a Role for one Lease grants every Lease of the namespace (the resourceNames misreadings of kubernetes/website#50454 and cozystack/cozystack#1161)",
       "authorization", "security-apiserver-restarts", "chaoskube.apiserver.auth:_resource_name_matches", _resource_names_ignored),
    _v("authorizer-decision-cache", "kube-apiserver authorization",
       "each API server remembers every allowed decision for ever, so a deleted RoleBinding keeps granting long after its caches saw the deletion (stale RBAC caches: rancher/rancher#31982, argoproj/argo-cd#7801)",
       "authorization", "security-etcd-partition", "chaoskube.apiserver.server:ApiServer._authorize", _authorizer_decision_cache),
    _v("token-uid-ignored", "kube-apiserver authentication",
       "a bound service account token authenticates as any account of the same name, also one re-created after the deletion (kubernetes/kubernetes#62993)",
       "authorization", "security-token-revocation", "chaoskube.apiserver.server:ApiServer.authenticate", _token_uid_ignored),
    _v("token-cache-forever", "kube-apiserver authentication",
       "each API server caches the identity of every token it accepted for ever, so a deleted ServiceAccount's tokens keep working (stale token caches: kubernetes/kubernetes#132802)",
       "authorization", "security-token-revocation", "chaoskube.apiserver.server:ApiServer.authenticate", _token_cache_forever),
    _v("namespace-lifecycle-ignores-terminating", "kube-apiserver NamespaceLifecycle",
       "creates are admitted into a Terminating namespace (openshift/origin#11058's backwards expiry check; kubernetes/kubernetes#37431)",
       "authorization", "security-namespace-termination", "chaoskube.apiserver.admission:NamespaceLifecyclePlugin.admit", _terminating_namespaces_open),
    _v("node-lifecycle-ignores-leases", "kube-controller-manager node lifecycle",
       "the node controller no longer counts Lease renewals as heartbeats, only node status updates, so healthy nodes that report status every few minutes go Unknown after the grace period (kubernetes/kubernetes#69241 made lease renewals a heartbeat)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.controllers.nodelifecycle:_renewed", _never_renewed),
    _v("node-lifecycle-never-marks", "kube-controller-manager node lifecycle",
       "the node controller never marks a silent node Unknown, so a powered-off node stays Ready and its pods are never evicted (canonical/microk8s#5386)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.controllers.nodelifecycle:node_health_step", _never_marks_unknown),
    _v("taint-manager-ignores-toleration-seconds", "kube-controller-manager taint eviction",
       "the taint manager deletes pods as soon as their node is tainted NoExecute, ignoring tolerationSeconds (kubernetes/kubernetes#45342, 'Taint based evictions is broken')",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.controllers.nodelifecycle:min_toleration_time_s", _evict_at_once),
    _v("taint-manager-late", "kube-controller-manager taint eviction",
       "the taint manager waits twice the pods' tolerationSeconds before deleting them, so they stay on a dead node long after they should have moved (kubernetes/kubernetes#108268)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.controllers.nodelifecycle:min_toleration_time_s", _evict_twice_as_late),
    _v("zone-eviction-burst", "kube-controller-manager node lifecycle",
       "each zone's eviction limiter allows a burst of 10 nodes instead of 1, so a failing zone's nodes are all tainted NoExecute at once (the early DeletingPodsBurst of kubernetes/kubernetes#13430; the mass evictions of #24200)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.controllers.nodelifecycle:EVICTION_RATE_LIMITER_BURST", lambda: 10),
    _v("kubelet-grace-two-seconds", "kubelet",
       "the kubelet stops a deleted pod's containers with a 2 s grace period whatever terminationGracePeriodSeconds says (kubernetes/kubernetes#60631)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.node.kubelet:stop_plan", _kill_after_two_seconds),
    _v("leader-election-local-lease-duration", "client-go leader election",
       "a candidate judges the holder's lease with its own 5 s duration instead of the record's leaseDurationSeconds, so it takes the lease 5 s after the last renewal (kubernetes/kubernetes#47671, fixed by #114872)",
       "timing-contracts", "timing-contracts-under-failures", "chaoskube.client.leaderelection:Observation.lease_valid", _local_lease_duration),
    _v("lessor-promote-forgets-ttl", "etcd lessor",
       "a new leader's lessor sets every lease to expire one election timeout after its promotion, forgetting the TTL, so leases kept alive until the failover expire right after it (before etcd-io/etcd#4778 refreshed TTLs on promotion)",
       "etcd-leases", "etcd-lease-failover", "chaoskube.etcd.lease:Lessor.promote", _promote_forgets_ttl),
    _v("lease-renew-without-leadership-check", "etcd server",
       "the leader renews a keep-alive without first confirming it still leads, so a deposed leader that has not noticed acknowledges keep-alives the new leader never sees (etcd-io/etcd#15247, fixed by ensureLeadership)",
       "etcd-leases", "etcd-lease-failover", "chaoskube.etcd.server:EtcdMember._start_renewal", _renew_without_leadership_check),
    _v("lessor-renews-on-follower", "etcd lessor",
       "a follower's lessor acknowledges keep-alives instead of answering NotPrimary (etcd-io/etcd#7275: lease keep-alives without a leader)",
       "etcd-leases", "etcd-lease-failover", "chaoskube.etcd.lease:Lessor.renew", _renew_anywhere),
    _v("lessor-never-revokes", "etcd lessor",
       "the leader's lessor never reports an expired lease, so an abandoned lease's keys stay for ever (etcd-io/etcd#9935, #10686: keys not deleted when their lease expires)",
       "etcd-leases", "etcd-lease-failover", "chaoskube.etcd.lease:Lessor.expired", _never_expires),
    _v("preemption-ignores-pdbs", "kube-scheduler DefaultPreemption",
       "preemption counts no PodDisruptionBudget violation, so it may evict PDB-protected pods when other nodes' victims violate none (kubernetes/kubernetes#129137, #128307)",
       "scheduling", "preemption-under-failover", "chaoskube.scheduler.preemption:filter_pods_with_pdb_violation", _pdb_violations_uncounted),
    _v("preemption-evicts-extra-victims", "kube-scheduler DefaultPreemption",
       "preemption evicts every lower-priority pod of the chosen node instead of the fewest that make room (kubernetes-sigs/scheduler-plugins#838)",
       "scheduling", "preemption-under-failover", "chaoskube.scheduler.preemption:DefaultPreemption.select_victims_on_node", _every_lower_pod_a_victim),
    _v("scheduler-ignores-pod-deletions", "kube-scheduler queue",
       "a deleted assigned pod frees its room in the cache but does not move unschedulable pods back to the active queue: they wait for the 5-minute flush (kubernetes/kubernetes#102339, #87145)",
       "scheduling", "preemption-under-failover", "chaoskube.scheduler.scheduler:Scheduler._delete_assigned", _deletions_do_not_requeue),
]

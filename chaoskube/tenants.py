"""Adversarial tenants: identities on each of the API server's security boundaries that
keep trying, throughout a run and under its faults, what their boundary forbids -- beside
what it allows -- and journal every attempt with the identity and the outcome.

The boundaries and their tenants (names are the ``tenant`` field of the journal):

- ``kubelet`` -- the kubelet of one node (client certificate ``system:node:<n>`` in
  ``system:nodes``): the Node authorizer and NodeRestriction
  (https://kubernetes.io/docs/reference/access-authn-authz/node/). Allowed: read its Node,
  its Lease, the pods. Forbidden: the status, eviction and deletion of pods bound to other
  nodes, other Nodes' labels, its own taints, ``node-restriction.kubernetes.io/`` labels
  and owner references (CVE-2025-5187), plain (non-mirror) pods, other nodes' Leases,
  namespaces, cluster role bindings (and, where the API serves them, Secrets).
- ``service-account`` -- ServiceAccount ``tenant-a/app`` with a narrow Role (read pods,
  create Leases, get/update/patch the Lease ``app-lock`` by ``resourceNames``): RBAC's
  namespace and ``resourceNames`` rules. Forbidden: other namespaces, other Leases,
  cluster-scope reads and writes, creating Roles and RoleBindings (escalation).
- ``rolebinding-user`` -- user ``alice`` bound by a RoleBinding in ``tenant-b`` to a broad
  ClusterRole: a ClusterRole granted through a RoleBinding grants nothing outside that
  namespace and nothing at the cluster scope (CVE-2019-11247 is that boundary failing).
  The administrator removes the RoleBinding at ``revoke_after_s`` and restores it at
  ``restore_after_s``: the API servers' caches may honour the removed binding for a
  bounded while, which the ``authorization`` checker reports.
- ``deleted-service-account`` -- ServiceAccount ``tenant-c/ephemeral`` with a bound token
  (it names the account's uid, KEP-1205) and a legacy one: the administrator deletes the
  account at ``revoke_after_s`` and creates one of the same name at ``restore_after_s``.
  After the deletion both tokens must fail; after the re-creation the bound token must
  still fail (the uid differs: kubernetes/kubernetes#62993), the legacy one works again.
- ``terminating-namespace`` -- user ``bob``, allowed (by a ClusterRoleBinding) to create Leases in
  ``tenant-doomed``, which the administrator deletes at ``revoke_after_s``: once it is
  Terminating, NamespaceLifecycle refuses every create in it
  (https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle).

Attempts that would damage the run if a broken boundary let them through (deleting and
evicting other nodes' pods, changing taints and owner references, creating pods, Roles,
RoleBindings, namespaces and ClusterRoleBindings) are sent as server-side dry runs
(``kubectl --dry-run=server``): the API server authenticates, authorizes and admits a
dry run exactly as a real request and stores nothing (KEP-576), so the boundary is tested
and the workload is not wrecked by the bug under test.

Journal: ``tenant-attempt`` {tenant, boundary, action, intent ("allowed"/"forbidden": the
tenant's design, not a verdict), credentials (what was presented), user, groups (who the
tenant believes it is), verb, resource, api_group, subresource, namespace, name,
field_selector, body (create/update object or merge patch, as JSON), dry_run, invoked (t the
request was sent), code, reason, message, server, resource_version (of the object a
successful write answered: the write's own revision)};
``tenant-admin`` {action, target, outcome} for the setup and the administrator's lifecycle
steps. The ``authorization`` checker judges them (``chaoskube.checkers.authorization``).

Contract: :class:`Tenants` is built with the world, the API servers' names, the node
names and a :class:`TenantSpec`; ``await setup(admin)`` creates the policy objects (as the
administrator ``admin``, retrying while the API is unavailable); ``start()`` spawns one
process per tenant (role ``tenant``: no fault targets it) and the administrator's
lifecycle; ``stop()`` ends the attempts. ``attempt(tenant, action)`` makes one attempt now
(the stateful machine's rule). Deterministic: every choice comes from ``world.random``.
Non-guarantees: a tenant whose target does not exist (no pod on another node yet) skips
that action; a namespace's deletion is never finalized here (no namespace controller), so
``tenant-doomed`` stays Terminating.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from chaoskube.api.identity import node_credentials, service_account_credentials, user_credentials
from chaoskube.api.manifests import from_dict, to_dict
from chaoskube.api.objects import KINDS, Object
from chaoskube.api.protocol import Credentials, DeleteOptions, Eviction, Request, Response
from chaoskube.client.client import ApiClient
from chaoskube.sim import Process, World

__all__ = [
    "ALL_TENANTS",
    "BOUNDARIES",
    "TENANT_NAMESPACES",
    "TenantSpec",
    "Tenants",
    "setup_objects",
]

ALL_TENANTS = ("kubelet", "service-account", "rolebinding-user", "deleted-service-account", "terminating-namespace")
BOUNDARIES = {
    "kubelet": "node-authorization",
    "service-account": "rbac-namespace",
    "rolebinding-user": "rbac-cluster-scope",
    "deleted-service-account": "service-account-token",
    "terminating-namespace": "namespace-lifecycle",
}
NS_A, NS_B, NS_C, NS_DOOMED = "tenant-a", "tenant-b", "tenant-c", "tenant-doomed"
TENANT_NAMESPACES = (NS_A, NS_B, NS_C, NS_DOOMED)
PROBE_LABEL = "tenant.chaoskube.io/probe"
RBAC = "rbac.authorization.k8s.io"
COORDINATION = "coordination.k8s.io"
ADMIN_ATTEMPTS = 60  # the administrator retries a lifecycle step this often, 1 s apart
ADMIN_RETRY_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TenantSpec:
    """How the tenants run: each makes one attempt every ``every_s`` (a random phase per
    tenant); the administrator's revocations come ``revoke_after_s`` after ``start()`` and
    the restorations ``restore_after_s`` after it."""

    every_s: float = 4.0
    revoke_after_s: float = 20.0
    restore_after_s: float = 60.0
    tenants: tuple[str, ...] = ALL_TENANTS

    def __post_init__(self) -> None:
        if not (math.isfinite(self.every_s) and 0.1 <= self.every_s <= 600):
            raise ValueError(f"`every_s` must be between 0.1 and 600, got {self.every_s}")
        if not (0 <= self.revoke_after_s < self.restore_after_s <= 3600):
            raise ValueError(f"need 0 <= `revoke_after_s` < `restore_after_s` <= 3600, got {self.revoke_after_s} and {self.restore_after_s}")
        unknown = sorted(set(self.tenants) - set(ALL_TENANTS))
        if unknown:
            raise ValueError(f"unknown tenant {unknown[0]!r}; known: {', '.join(ALL_TENANTS)}")


# =========================================================================== objects
def _obj(data: dict[str, Any]) -> Object:
    return from_dict(data, "tenants")


def _rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        rule["resourceNames"] = names
    return rule


def _binding(namespace: str, name: str, role_kind: str, role: str, subject: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role}, "subjects": [subject]}


ALICE_BINDING = _binding(NS_B, "alice-edit", "ClusterRole", "tenant-editor", {"kind": "User", "apiGroup": RBAC, "name": "alice"})
EPHEMERAL_ACCOUNT = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ephemeral", "namespace": NS_C}}
#: A pod in the doomed namespace whose container takes 20 s to stop on SIGTERM (within its
#: 30 s grace period): the namespace controller deletes it gracefully and, while it
#: terminates, keeps the namespace Terminating with ``NamespaceContentRemaining``
#: (``deletion/namespaced_resources_deleter.go`` requeues after the longest remaining grace
#: period). That is the window in which NamespaceLifecycle admission must refuse creates; a
#: namespace holding only Leases is finalized within a second, before the tenant's next try.
DOOMED_WORKER = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "worker", "namespace": NS_DOOMED, "annotations": {"chaoskube.io/shutdown-s": "20s"}},
    "spec": {"terminationGracePeriodSeconds": 30, "containers": [{"name": "worker", "image": "busybox:1.36", "resources": {"requests": {"cpu": "10m"}}}]},
}


def setup_objects() -> list[Object]:
    """The tenants' namespaces, service accounts, roles, bindings and leases, in order."""
    data: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in TENANT_NAMESPACES]
    data += [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app", "namespace": NS_A}},
        EPHEMERAL_ACCOUNT,
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "app-role", "namespace": NS_A}, "rules": [
            _rule(["get", "list", "watch"], [""], ["pods"]),
            _rule(["create"], [COORDINATION], ["leases"]),
            _rule(["get", "update", "patch"], [COORDINATION], ["leases"], ["app-lock"]),
        ]},
        _binding(NS_A, "app-binding", "Role", "app-role", {"kind": "ServiceAccount", "name": "app"}),
        # A broad ClusterRole meant for RoleBindings only (CVE-2019-11247's setting).
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "tenant-editor"}, "rules": [
            _rule(["get", "list", "watch", "create", "update", "patch", "delete"], ["", COORDINATION, "apps"], ["*"]),
        ]},
        ALICE_BINDING,
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "lister", "namespace": NS_C}, "rules": [_rule(["list"], [""], ["pods"])]},
        _binding(NS_C, "ephemeral-lister", "Role", "lister", {"kind": "ServiceAccount", "name": "ephemeral"}),
        # bob's grant is cluster-wide (a ClusterRoleBinding, as an operator's account often
        # has): the namespace's deletion removes its RoleBindings early, so with a
        # namespaced grant RBAC would refuse bob before NamespaceLifecycle is ever asked.
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "lease-writer"}, "rules": [_rule(["create", "get", "list"], [COORDINATION], ["leases"])]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "bob-writer"},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "lease-writer"}, "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "bob"}]},
        {"apiVersion": f"{COORDINATION}/v1", "kind": "Lease", "metadata": {"name": "app-lock", "namespace": NS_A}, "spec": {"holderIdentity": "app"}},
        {"apiVersion": f"{COORDINATION}/v1", "kind": "Lease", "metadata": {"name": "other-lock", "namespace": NS_A}, "spec": {"holderIdentity": "someone-else"}},
        DOOMED_WORKER,
    ]
    return [_obj(item) for item in data]


def _group_of(resource: str) -> str | None:
    """The API group of a plural resource the API serves, or None when it is not served."""
    for info in KINDS.values():
        if info.resource == resource:
            return info.api_version.rpartition("/")[0]
    return None


# =========================================================================== actions
@dataclass(frozen=True, slots=True)
class Attempt:
    """One request a tenant makes: the API request and what the journal says of it."""

    action: str
    intent: str
    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    field_selector: str = ""
    body: Any = None  # JSON: the object (create/update) or the merge patch
    dry_run: bool = False


Builder = Callable[["TenantState"], Attempt | None]


@dataclass
class TenantState:
    """What a tenant knows: its node (kubelet), the pods it saw, a counter for names."""

    node: str = ""
    other_node: str = ""
    pods: list[tuple[str, str, str]] = field(default_factory=list)  # (namespace, name, node)
    counter: int = 0

    def other_pod(self) -> tuple[str, str] | None:
        """A pod bound to another node (the first by name), or None."""
        found = sorted((ns, name) for ns, name, node in self.pods if node and node != self.node)
        return found[0] if found else None

    def own_pod(self) -> tuple[str, str] | None:
        found = sorted((ns, name) for ns, name, node in self.pods if node == self.node)
        return found[0] if found else None


def _lease(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": f"{COORDINATION}/v1", "kind": "Lease", "metadata": {"name": name, "namespace": namespace}, "spec": {"holderIdentity": "tenant"}}


def _kubelet_actions() -> list[tuple[str, Builder]]:
    def other_pod(action: str, verb: str, subresource: str, body: Any, dry_run: bool) -> Builder:
        def build(state: TenantState) -> Attempt | None:
            pod = state.other_pod()
            if pod is None:
                return None
            return Attempt(action, "forbidden", verb, "pods", pod[0], pod[1], subresource, body=body, dry_run=dry_run)
        return build

    def own_pod_relabel(state: TenantState) -> Attempt | None:
        pod = state.own_pod()
        if pod is None:
            return None
        body = {"metadata": {"labels": {PROBE_LABEL: "relabelled"}}}
        return Attempt("relabel-own-pod-through-status", "forbidden", "patch", "pods", pod[0], pod[1], "status", body=body)

    actions: list[tuple[str, Builder]] = [
        ("get-own-node", lambda s: Attempt("get-own-node", "allowed", "get", "nodes", name=s.node)),
        ("list-pods", lambda s: Attempt("list-pods", "allowed", "list", "pods")),
        ("list-own-pods", lambda s: Attempt("list-own-pods", "allowed", "list", "pods", field_selector=f"spec.nodeName={s.node}")),
        ("get-own-lease", lambda s: Attempt("get-own-lease", "allowed", "get", "leases", "kube-node-lease", s.node)),
        ("patch-other-pod-status", other_pod("patch-other-pod-status", "patch", "status", {"metadata": {"annotations": {PROBE_LABEL: "x"}}}, False)),
        ("delete-other-pod", other_pod("delete-other-pod", "delete", "", None, True)),
        ("evict-other-pod", other_pod("evict-other-pod", "create", "eviction", None, True)),
        ("relabel-own-pod-through-status", own_pod_relabel),
        ("label-other-node", lambda s: Attempt("label-other-node", "forbidden", "patch", "nodes", name=s.other_node, body={"metadata": {"labels": {PROBE_LABEL: "x"}}}) if s.other_node else None),
        ("set-restricted-label", lambda s: Attempt("set-restricted-label", "forbidden", "patch", "nodes", name=s.node, body={"metadata": {"labels": {"node-restriction.kubernetes.io/tenant": "x"}}})),
        ("modify-own-taints", lambda s: Attempt("modify-own-taints", "forbidden", "patch", "nodes", name=s.node, body={"spec": {"taints": [{"key": PROBE_LABEL, "effect": "PreferNoSchedule"}]}}, dry_run=True)),
        ("own-node-by-owner-reference", lambda s: Attempt("own-node-by-owner-reference", "forbidden", "patch", "nodes", name=s.node, body={"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "tenant-gone", "uid": "00000000-0000-4000-8000-000000000000"}]}}, dry_run=True)),
        ("create-plain-pod", lambda s: Attempt("create-plain-pod", "forbidden", "create", "pods", "default", body={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tenant-pod", "namespace": "default"},
            "spec": {"nodeName": s.node, "containers": [{"name": "c", "image": "nginx:1.27"}]}}, dry_run=True)),
        ("patch-other-node-lease", lambda s: Attempt("patch-other-node-lease", "forbidden", "patch", "leases", "kube-node-lease", s.other_node, body={"metadata": {"annotations": {PROBE_LABEL: "x"}}}) if s.other_node else None),
        ("list-namespaces", lambda s: Attempt("list-namespaces", "forbidden", "list", "namespaces")),
        ("bind-cluster-admin", lambda s: Attempt("bind-cluster-admin", "forbidden", "create", "clusterrolebindings", body={
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "tenant-escalation"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "Group", "apiGroup": RBAC, "name": "system:nodes"}]}, dry_run=True)),
    ]
    if _group_of("secrets") is not None:  # hook: when the API serves Secrets (a later kind)
        actions.append(("list-secrets", lambda s: Attempt("list-secrets", "forbidden", "list", "secrets", "default")))
    return actions


def _service_account_actions() -> list[tuple[str, Builder]]:
    def counter_patch(s: TenantState) -> dict[str, Any]:
        s.counter += 1
        return {"metadata": {"annotations": {PROBE_LABEL: str(s.counter)}}}

    return [
        ("list-own-pods", lambda s: Attempt("list-own-pods", "allowed", "list", "pods", NS_A)),
        ("get-own-lease", lambda s: Attempt("get-own-lease", "allowed", "get", "leases", NS_A, "app-lock")),
        ("patch-own-lease", lambda s: Attempt("patch-own-lease", "allowed", "patch", "leases", NS_A, "app-lock", body=counter_patch(s))),
        ("list-other-namespace-pods", lambda s: Attempt("list-other-namespace-pods", "forbidden", "list", "pods", "default")),
        ("get-unnamed-lease", lambda s: Attempt("get-unnamed-lease", "forbidden", "get", "leases", NS_A, "other-lock")),
        ("patch-unnamed-lease", lambda s: Attempt("patch-unnamed-lease", "forbidden", "patch", "leases", NS_A, "other-lock", body=counter_patch(s))),
        ("list-leases-everywhere", lambda s: Attempt("list-leases-everywhere", "forbidden", "list", "leases")),
        ("list-nodes", lambda s: Attempt("list-nodes", "forbidden", "list", "nodes")),
        ("get-scheduler-lease", lambda s: Attempt("get-scheduler-lease", "forbidden", "get", "leases", "kube-system", "kube-scheduler")),
        ("create-namespace", lambda s: Attempt("create-namespace", "forbidden", "create", "namespaces", body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-a-2"}}, dry_run=True)),
        ("create-role", lambda s: Attempt("create-role", "forbidden", "create", "roles", NS_A, body={
            "apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "tenant-everything", "namespace": NS_A}, "rules": [_rule(["*"], ["*"], ["*"])]}, dry_run=True)),
        ("bind-cluster-admin", lambda s: Attempt("bind-cluster-admin", "forbidden", "create", "rolebindings", NS_A, body=_binding(NS_A, "tenant-escalation", "ClusterRole", "cluster-admin", {"kind": "ServiceAccount", "name": "app"}), dry_run=True)),
    ]


def _rolebinding_user_actions() -> list[tuple[str, Builder]]:
    def create_lease(s: TenantState) -> Attempt:
        s.counter += 1
        return Attempt("create-own-lease", "allowed", "create", "leases", NS_B, body=_lease(NS_B, f"alice-{s.counter}"))

    def delete_lease(s: TenantState) -> Attempt | None:
        if not s.counter:
            return None
        return Attempt("delete-own-lease", "allowed", "delete", "leases", NS_B, f"alice-{s.counter}")

    return [
        ("list-own-pods", lambda s: Attempt("list-own-pods", "allowed", "list", "pods", NS_B)),
        ("create-own-lease", create_lease),
        ("list-own-leases", lambda s: Attempt("list-own-leases", "allowed", "list", "leases", NS_B)),
        ("delete-own-lease", delete_lease),
        ("list-other-namespace-pods", lambda s: Attempt("list-other-namespace-pods", "forbidden", "list", "pods", NS_A)),
        ("create-lease-elsewhere", lambda s: Attempt("create-lease-elsewhere", "forbidden", "create", "leases", "default", body=_lease("default", "alice-was-here"), dry_run=True)),
        ("list-pods-everywhere", lambda s: Attempt("list-pods-everywhere", "forbidden", "list", "pods")),
        ("get-node", lambda s: Attempt("get-node", "forbidden", "get", "nodes", name=s.node)),
        ("list-namespaces", lambda s: Attempt("list-namespaces", "forbidden", "list", "namespaces")),
        ("get-scheduler-lease", lambda s: Attempt("get-scheduler-lease", "forbidden", "get", "leases", "kube-system", "kube-scheduler")),
        ("bind-cluster-admin", lambda s: Attempt("bind-cluster-admin", "forbidden", "create", "clusterrolebindings", body={
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "alice-escalation"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "User", "apiGroup": RBAC, "name": "alice"}]}, dry_run=True)),
    ]


def _deleted_service_account_actions() -> list[tuple[str, Builder]]:
    return [
        ("list-own-pods", lambda s: Attempt("list-own-pods", "allowed", "list", "pods", NS_C)),
        ("list-own-pods-legacy-token", lambda s: Attempt("list-own-pods-legacy-token", "allowed", "list", "pods", NS_C)),
        ("list-other-namespace-pods", lambda s: Attempt("list-other-namespace-pods", "forbidden", "list", "pods", "default")),
    ]


def _terminating_namespace_actions() -> list[tuple[str, Builder]]:
    def create_lease(s: TenantState) -> Attempt:
        s.counter += 1
        return Attempt("create-lease", "allowed", "create", "leases", NS_DOOMED, body=_lease(NS_DOOMED, f"bob-{s.counter}"))

    return [
        ("create-lease", create_lease),
        ("list-leases", lambda s: Attempt("list-leases", "allowed", "list", "leases", NS_DOOMED)),
    ]


ACTIONS: dict[str, Callable[[], list[tuple[str, Builder]]]] = {
    "kubelet": _kubelet_actions,
    "service-account": _service_account_actions,
    "rolebinding-user": _rolebinding_user_actions,
    "deleted-service-account": _deleted_service_account_actions,
    "terminating-namespace": _terminating_namespace_actions,
}


# =========================================================================== the tenants
async def _idle(process: Process) -> None:
    await trio.sleep_forever()


class Tenants:
    """The adversarial tenants of one run (module docstring)."""

    def __init__(self, world: World, servers: list[str] | tuple[str, ...], nodes: list[str], spec: TenantSpec | None = None) -> None:
        assert servers, "tenants need an API server"
        assert nodes, "the kubelet tenant needs a node"
        self.world = world
        self.servers = tuple(servers)
        self.spec = spec or TenantSpec()
        ordered = sorted(nodes)
        self.node = ordered[0]
        self.other_node = ordered[1] if len(ordered) > 1 else ""
        self.uids: dict[str, str] = {}  # service account key -> uid of the account the tokens were issued for
        self.states = {name: TenantState(node=self.node, other_node=self.other_node) for name in self.spec.tenants}
        self.actions = {name: ACTIONS[name]() for name in self.spec.tenants}
        self._clients: dict[tuple[str, str], ApiClient] = {}
        self._next: dict[str, int] = {}
        self.running = False
        self._admin: ApiClient | None = None

    # -- credentials -------------------------------------------------------------------
    def credentials(self, tenant: str, action: str = "") -> tuple[Credentials, dict[str, Any], str, list[str]]:
        """(credentials, their journal record, the user and groups the tenant believes)."""
        if tenant == "kubelet":
            return (node_credentials(self.node), {"kind": "certificate", "common_name": f"system:node:{self.node}", "organizations": ["system:nodes"]},
                    f"system:node:{self.node}", ["system:nodes"])
        if tenant == "rolebinding-user":
            return user_credentials("alice", ["tenant-devs"]), {"kind": "certificate", "common_name": "alice", "organizations": ["tenant-devs"]}, "alice", ["tenant-devs"]
        if tenant == "terminating-namespace":
            return user_credentials("bob"), {"kind": "certificate", "common_name": "bob", "organizations": []}, "bob", []
        namespace, name = (NS_A, "app") if tenant == "service-account" else (NS_C, "ephemeral")
        uid = "" if action.endswith("legacy-token") else self.uids.get(f"{namespace}/{name}", "")
        record = {"kind": "service-account-token", "namespace": namespace, "name": name, "uid": uid}
        return (service_account_credentials(namespace, name, uid), record, f"system:serviceaccount:{namespace}:{name}",
                ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"])

    def _client(self, tenant: str, credentials: Credentials, key: str) -> ApiClient:
        client = self._clients.get((tenant, key))
        if client is None:
            process = self.world.process(f"tenant-{tenant}")
            client = ApiClient(process, self.servers, credentials, timeout_s=5.0, attempts=3, name=f"tenant-{tenant}/{key}")
            self._clients[(tenant, key)] = client
        return client

    # -- setup and lifecycle -------------------------------------------------------------
    def spawn_processes(self) -> None:
        """One process per tenant and one for the administrator (role ``tenant``)."""
        for tenant in self.spec.tenants:
            if f"tenant-{tenant}" not in self.world.processes:
                self.world.spawn(f"tenant-{tenant}", _idle, role="tenant")
        if "tenant-admin" not in self.world.processes:
            self.world.spawn("tenant-admin", _idle, role="tenant")

    async def setup(self, admin: ApiClient | None = None) -> list[str]:
        """Create the tenants' objects as the administrator; returns the failures."""
        self.spawn_processes()
        if admin is None:
            from chaoskube.api.identity import admin_credentials

            admin = ApiClient(self.world.process("tenant-admin"), self.servers, admin_credentials(), timeout_s=5.0, attempts=3, name="tenant-admin")
        self._admin = admin
        failures = []
        for obj in setup_objects():
            outcome = await self._admin_write(obj.KIND, f"{obj.metadata.namespace}/{obj.metadata.name}".lstrip("/"), lambda o=obj: admin.request(Request(
                verb="create", resource=o.RESOURCE, namespace=o.metadata.namespace, body=o, credentials=admin.credentials)), "setup", ok_codes=(409,))
            if outcome is None:
                failures.append(f"{obj.KIND} {obj.metadata.namespace}/{obj.metadata.name}")
            elif obj.KIND == "ServiceAccount":
                await self._learn_uid(obj.metadata.namespace, obj.metadata.name, outcome)
        return failures

    async def _learn_uid(self, namespace: str, name: str, response: Response) -> None:
        """The uid the bound tokens of this account name (from the create, else a read)."""
        assert self._admin is not None
        if response.ok and response.object is not None:
            self.uids[f"{namespace}/{name}"] = response.object.metadata.uid
            return
        got = await self._admin.request(Request(verb="get", resource="serviceaccounts", namespace=namespace, name=name, credentials=self._admin.credentials))
        if got.ok and got.object is not None:
            self.uids[f"{namespace}/{name}"] = got.object.metadata.uid

    async def _admin_write(self, action: str, target: str, send: Callable[[], Awaitable[Response]], phase: str, ok_codes: tuple[int, ...] = ()) -> Response | None:
        """Send an administrator's write until it is answered 2xx (or one of ``ok_codes``);
        journal it as ``tenant-admin``. None when it never succeeded."""
        response: Response | None = None
        for _ in range(ADMIN_ATTEMPTS):
            response = await send()
            if response.ok or response.code in ok_codes:
                self.world.record("tenant-admin", phase=phase, action=action, target=target, outcome=response.code)
                return response
            if response.code < 500 and response.code not in (404, 429):
                break
            await self.world.sleep(ADMIN_RETRY_S)
        self.world.record("tenant-admin", phase=phase, action=action, target=target, outcome=response.code if response is not None else None)
        return None

    async def revoke(self) -> None:
        """Delete the ephemeral ServiceAccount, alice's RoleBinding and the doomed namespace."""
        admin = self._admin
        assert admin is not None, "setup first"
        creds = admin.credentials
        if "deleted-service-account" in self.spec.tenants:
            await self._admin_write("delete-serviceaccount", f"{NS_C}/ephemeral", lambda: admin.request(Request(verb="delete", resource="serviceaccounts", namespace=NS_C, name="ephemeral", credentials=creds)), "revoke", ok_codes=(404,))
        if "rolebinding-user" in self.spec.tenants:
            await self._admin_write("delete-rolebinding", f"{NS_B}/alice-edit", lambda: admin.request(Request(verb="delete", resource="rolebindings", namespace=NS_B, name="alice-edit", credentials=creds)), "revoke", ok_codes=(404,))
        if "terminating-namespace" in self.spec.tenants:
            await self._admin_write("delete-namespace", NS_DOOMED, lambda: admin.request(Request(verb="delete", resource="namespaces", name=NS_DOOMED, credentials=creds)), "revoke", ok_codes=(404,))

    async def restore(self) -> None:
        """Create a ServiceAccount of the deleted one's name (a new uid: the bound token
        stays dead) and alice's RoleBinding again."""
        admin = self._admin
        assert admin is not None, "setup first"
        creds = admin.credentials
        if "deleted-service-account" in self.spec.tenants:
            await self._admin_write("create-serviceaccount", f"{NS_C}/ephemeral", lambda: admin.request(Request(verb="create", resource="serviceaccounts", namespace=NS_C, body=_obj(EPHEMERAL_ACCOUNT), credentials=creds)), "restore", ok_codes=(409,))
        if "rolebinding-user" in self.spec.tenants:
            await self._admin_write("create-rolebinding", f"{NS_B}/alice-edit", lambda: admin.request(Request(verb="create", resource="rolebindings", namespace=NS_B, body=_obj(ALICE_BINDING), credentials=creds)), "restore", ok_codes=(409,))

    def start(self) -> None:
        """Start every tenant's attempt loop and the administrator's lifecycle."""
        assert self._admin is not None, "setup first"
        self.running = True
        for tenant in self.spec.tenants:
            self.world.process(f"tenant-{tenant}").start_soon(self._loop, tenant)
        self.world.process("tenant-admin").start_soon(self._lifecycle)

    def stop(self) -> None:
        self.running = False

    async def _lifecycle(self) -> None:
        started = self.world.now
        await self.world.sleep(self.spec.revoke_after_s)
        if self.running:
            await self.revoke()
        await self.world.sleep(max(0.0, started + self.spec.restore_after_s - self.world.now))
        if self.running:
            await self.restore()

    async def _loop(self, tenant: str) -> None:
        rng = self.world.random(f"tenants/{tenant}")
        self._next[tenant] = rng.randrange(len(self.actions[tenant]))
        await self.world.sleep(rng.random() * self.spec.every_s)
        while True:
            if self.running:
                names = [name for name, _ in self.actions[tenant]]
                index = self._next[tenant] % len(names)
                self._next[tenant] = index + 1
                await self.attempt(tenant, names[index])
            await self.world.sleep(self.spec.every_s)

    # -- one attempt ---------------------------------------------------------------------
    async def attempt(self, tenant: str, action: str) -> dict[str, Any] | None:
        """Make one attempt of ``action`` now; returns the journaled event (None when the
        action has no target yet)."""
        builders = dict(self.actions[tenant])
        state = self.states[tenant]
        planned = builders[action](state)
        if planned is None:
            return None
        group = _group_of(planned.resource)
        if group is None:
            return None  # a resource this API does not serve
        credentials, record, user, groups = self.credentials(tenant, action)
        client = self._client(tenant, credentials, "legacy" if action.endswith("legacy-token") else "main")
        request = self._request(planned, credentials)
        invoked = self.world.now
        response = await client.request(request)
        if tenant == "kubelet" and planned.action == "list-pods" and response.ok:
            state.pods = [(pod.metadata.namespace, pod.metadata.name, pod.spec.node_name) for pod in response.items]
        fields = {
            "tenant": tenant, "boundary": BOUNDARIES[tenant], "action": planned.action, "intent": planned.intent,
            "credentials": record, "user": user, "groups": groups,
            "verb": planned.verb, "resource": planned.resource, "api_group": group, "subresource": planned.subresource,
            "namespace": planned.namespace, "name": planned.name, "field_selector": planned.field_selector,
            "body": planned.body, "dry_run": planned.dry_run, "invoked": invoked,
            "code": response.code, "reason": response.status.reason if response.status is not None else "",
            "message": response.status.message if response.status is not None else "",
            "server": response.server,
        }
        if response.ok and response.object is not None and response.object.metadata.resource_version:
            fields["resource_version"] = response.object.metadata.resource_version
        self.world.record("tenant-attempt", **fields)
        return fields

    @staticmethod
    def _request(planned: Attempt, credentials: Credentials) -> Request:
        body: Any = planned.body
        if planned.verb in ("create", "update") and planned.subresource == "" and isinstance(body, dict):
            body = from_dict(body, f"tenant {planned.action}")
        if planned.subresource == "eviction":
            body = Eviction(name=planned.name, namespace=planned.namespace)
        options = DeleteOptions() if planned.verb == "delete" else None
        return Request(
            verb=planned.verb, resource=planned.resource, credentials=credentials, namespace=planned.namespace, name=planned.name,
            subresource=planned.subresource, body=body, field_selector=planned.field_selector, dry_run=planned.dry_run,
            delete_options=options,
        )


def describe_objects() -> list[dict[str, Any]]:
    """The setup objects as JSON (for docs and tests)."""
    return [to_dict(obj) for obj in setup_objects()]

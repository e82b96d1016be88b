"""What every API server makes sure exists when it starts: the system namespaces and the
bootstrap RBAC policy.

- Namespaces: ``default``, ``kube-system``, ``kube-public``, ``kube-node-lease`` (the
  "system namespaces" controller, ``pkg/controlplane/controller/systemnamespaces``).
- RBAC: the subset of ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`` and
  ``controller_policy.go`` the simulated control plane's identities need: ``cluster-admin``
  bound to ``system:masters``; ``system:kube-scheduler`` and
  ``system:kube-controller-manager`` bound to their users; ``system:node`` is *not* bound
  (since 1.8 the Node authorizer grants kubelets their access, as in Kubernetes);
  ``system:basic-user``, ``system:discovery`` and ``system:public-info-viewer`` for every
  authenticated user. Rules are those of Kubernetes 1.30, reduced to the resources modelled
  here; the controller-manager's role stands for the per-controller service accounts it
  uses with ``--use-service-account-credentials``.

Each server creates what is missing (409 AlreadyExists is fine: another replica was first),
as the ``rbac/bootstrap-roles`` post-start hook does.
"""

from __future__ import annotations

from chaoskube.api.identity import AUTHENTICATED_GROUP, KUBE_CONTROLLER_MANAGER_USER, KUBE_SCHEDULER_USER, MASTERS_GROUP
from chaoskube.api.objects import (
    ClusterRole,
    ClusterRoleBinding,
    Namespace,
    Object,
    ObjectMeta,
    PolicyRule,
    RoleRef,
    Subject,
)

__all__ = ["SYSTEM_NAMESPACES", "bootstrap_objects"]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_RBAC = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}


def _rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> PolicyRule:
    return PolicyRule(verbs=verbs, api_groups=groups, resources=resources, resource_names=names or [])


def _cluster_role(name: str, rules: list[PolicyRule]) -> ClusterRole:
    return ClusterRole(metadata=ObjectMeta(name=name, labels=dict(_BOOTSTRAP_LABELS), annotations=dict(_AUTOUPDATE)), rules=rules)


def _binding(name: str, role: str, kind: str, subject: str) -> ClusterRoleBinding:
    return ClusterRoleBinding(
        metadata=ObjectMeta(name=name, labels=dict(_BOOTSTRAP_LABELS), annotations=dict(_AUTOUPDATE)),
        role_ref=RoleRef(api_group=_RBAC, kind="ClusterRole", name=role),
        subjects=[Subject(kind=kind, name=subject, api_group=_RBAC)],
    )


def bootstrap_objects() -> list[Object]:
    """Fresh objects, in the order they are created."""
    namespaces: list[Object] = [Namespace(metadata=ObjectMeta(name=name)) for name in SYSTEM_NAMESPACES]
    roles: list[Object] = [
        _cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), PolicyRule(verbs=["*"], non_resource_urls=["*"])]),
        _cluster_role("system:basic-user", [_rule(["create"], ["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]), _rule(["create"], ["authentication.k8s.io"], ["selfsubjectreviews"])]),
        _cluster_role("system:discovery", [PolicyRule(verbs=["get"], non_resource_urls=["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"])]),
        _cluster_role("system:public-info-viewer", [PolicyRule(verbs=["get"], non_resource_urls=["/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        _cluster_role(
            "system:kube-scheduler",
            [
                _rule(["create", "patch", "update"], ["", "events.k8s.io"], ["events"]),
                _rule(["create"], ["coordination.k8s.io"], ["leases"]),
                _rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-scheduler"]),
                _rule(["delete", "get", "list", "watch"], [""], ["pods"]),
                _rule(["create"], [""], ["pods/binding", "bindings"]),
                _rule(["patch", "update"], [""], ["pods/status"]),
                _rule(_READ, [""], ["nodes", "namespaces", "services", "replicationcontrollers", "persistentvolumeclaims", "persistentvolumes"]),
                # volumebinding: the selected-node annotation on claims (system:volume-scheduler)
                _rule(["patch", "update"], [""], ["persistentvolumeclaims", "persistentvolumes"]),
                _rule(_READ, ["apps"], ["replicasets", "statefulsets"]),
                _rule(_READ, ["policy"], ["poddisruptionbudgets"]),
                _rule(_READ, ["scheduling.k8s.io"], ["priorityclasses"]),
                _rule(_READ, ["storage.k8s.io"], ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"]),
            ],
        ),
        _cluster_role(
            "system:kube-controller-manager",
            [
                _rule(["create", "patch", "update"], ["", "events.k8s.io"], ["events"]),
                _rule(["create"], ["coordination.k8s.io"], ["leases"]),
                _rule(["get", "update"], ["coordination.k8s.io"], ["leases"], ["kube-controller-manager"]),
                # What its controllers do with --use-service-account-credentials, folded in.
                _rule(["*"], [""], [
                    "pods", "pods/status", "pods/eviction", "nodes", "nodes/status", "namespaces", "namespaces/status", "namespaces/finalize",
                    "services", "services/status", "serviceaccounts", "endpoints", "replicationcontrollers", "replicationcontrollers/status",
                    "replicationcontrollers/scale", "persistentvolumes", "persistentvolumes/status", "persistentvolumeclaims",
                    "persistentvolumeclaims/status", "resourcequotas", "resourcequotas/status", "configmaps", "secrets", "limitranges",
                ]),
                _rule(["*"], ["apps"], [
                    "deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status", "replicasets/scale",
                    "statefulsets", "statefulsets/status", "statefulsets/scale", "daemonsets", "daemonsets/status", "controllerrevisions",
                ]),
                _rule(["*"], ["batch"], ["jobs", "jobs/status", "cronjobs", "cronjobs/status"]),
                _rule(["*"], ["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
                _rule(["*"], ["discovery.k8s.io"], ["endpointslices"]),
                _rule(["*"], ["coordination.k8s.io"], ["leases"]),
                _rule(_READ, ["storage.k8s.io"], ["storageclasses"]),
                _rule(_READ, ["scheduling.k8s.io"], ["priorityclasses"]),
                _rule(_READ, [_RBAC], ["roles", "rolebindings", "clusterroles", "clusterrolebindings"]),
                _rule(_READ, ["apiextensions.k8s.io"], ["customresourcedefinitions"]),
                # the garbage collector and the namespace controller act on every resource
                # (system:controller:generic-garbage-collector, namespace-controller)
                _rule(["get", "list", "watch", "patch", "update", "delete", "deletecollection"], ["*"], ["*"]),
            ],
        ),
    ]
    bindings: list[Object] = [
        _binding("cluster-admin", "cluster-admin", "Group", MASTERS_GROUP),
        _binding("system:basic-user", "system:basic-user", "Group", AUTHENTICATED_GROUP),
        _binding("system:discovery", "system:discovery", "Group", AUTHENTICATED_GROUP),
        _binding("system:public-info-viewer", "system:public-info-viewer", "Group", AUTHENTICATED_GROUP),
        _binding("system:kube-scheduler", "system:kube-scheduler", "User", KUBE_SCHEDULER_USER),
        _binding("system:kube-controller-manager", "system:kube-controller-manager", "User", KUBE_CONTROLLER_MANAGER_USER),
    ]
    return namespaces + roles + bindings
